/* sidecar/core/metrics.h — the sidecar's counters and histograms, rendered as Prometheus text exposition
 * 0.0.4 (names stockade_*) by the admin server. The proxy, DNS filter and gateway only call the
 * recording functions below; label sets are bounded (reason/result/qtype names come from fixed enums,
 * rule is an index into the policy), so memory stays bounded whatever the agent does.
 * Single-threaded: called only from the event loop. */
#ifndef SK_SIDECAR_METRICS_H
#define SK_SIDECAR_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strbuf.h"

struct sk_metrics;
struct sk_policy;

/* Returns 0, or -ENOMEM with err filled; *out owned. */
int sk_metrics_new(struct sk_metrics **out, struct sk_err *err);
void sk_metrics_free(struct sk_metrics *m);

/* One proxy decision. decision "allow"|"deny"; reason a short static token ("rule", "no_match", "private",
 * "sni_ip_mismatch", "malformed_hello", ...); rule the deciding rule's label (sk_rule_label: its name:, else
 * its index as text) or NULL ("none"); proto "tls"|"http"|"tcp". */
void sk_metrics_conn(struct sk_metrics *m, const char *decision, const char *reason, const char *rule,
		     const char *proto);
void sk_metrics_conn_active(struct sk_metrics *m, int delta);
void sk_metrics_bytes(struct sk_metrics *m, uint64_t to_upstream, uint64_t to_client);
void sk_metrics_decision_latency(struct sk_metrics *m, double seconds);
/* One DNS query. result "forwarded"|"denied"|"refused_type"|"malformed"|"upstream_error"|"rebinding"|... */
void sk_metrics_dns(struct sk_metrics *m, const char *result, const char *qtype);
/* One reload attempt: counted by result, and its time and result kept (stockade_reload_last_*). */
void sk_metrics_reload(struct sk_metrics *m, bool ok);
/* API gateway request: api name (policy-bounded), HTTP status; the duration goes into that api's
 * histogram. */
void sk_metrics_api(struct sk_metrics *m, const char *api, int status, double seconds);

/* Appends the exposition to out, the process_* families (procstat.h) read from /proc/self at this moment
 * included. policy may be NULL. Returns 0 or -ENOMEM (out's own verdict: common/strbuf.h). */
SK_MUST_USE int sk_metrics_render(const struct sk_metrics *m, const struct sk_policy *policy, struct sk_strbuf *out);

#endif

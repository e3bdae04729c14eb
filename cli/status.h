/* cli/status.h — `stockade-policy status URL`: one sidecar's state from its admin endpoint (/readyz,
 * /metrics, /denials; docs/operating.md), summarised for a person (ready or the unmet reason, the policy in
 * force, reloads, allowed and denied counts, the last denials) or as one JSON object. The sidecar's answers
 * are read as untrusted text: bounded, parsed strictly, a part that does not read is reported as such. */
#ifndef SK_CLI_STATUS_H
#define SK_CLI_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

#define SK_STATUS_BODY_MAX (8u << 20)   /* /metrics of a sidecar with many budgets stays well below */

struct sk_status_metrics {
	bool policy_loaded;
	char hash[80], netns_hash[80], mode[32], source[512];   /* stockade_policy_info's labels */
	double rules;
	double reloads_ok, reloads_failed;
	double reload_last_success, reload_last_ts;   /* -1 when absent */
	double conn_allow, conn_deny, conn_would_deny; /* stockade_connections_total summed by decision */
	double dns_denied, dns_total;                  /* stockade_dns_queries_total: result="denied", all */
	double budget_exhausted;                       /* stockade_budget_exhausted_total, all rules */
};

/* Reads the Prometheus text of /metrics into m (zeroed first). Unknown families are ignored; a sample line
 * that does not read (a bad label set or value) is -EINVAL with err naming its line. */
int sk_status_parse_metrics(const char *text, size_t len, struct sk_status_metrics *m, struct sk_err *err);

/* HTTP GET of base+path over plain HTTP/1.0 (the admin port's protocol), at most SK_STATUS_BODY_MAX bytes
 * of body, timeout_ms for the whole exchange. base is "http://HOST:PORT" (a name, an IPv4 address or an
 * [IPv6] one). Returns the status code (> 0) with *body (owned, NUL-terminated) and *len, or < 0 with err. */
int sk_status_get(const char *base, const char *path, int timeout_ms, char **body, size_t *len,
		  struct sk_err *err);

struct sk_status_opts {
	const char *url;
	size_t limit;            /* how many of the last denials */
	bool json;
	int timeout_ms;
};

/* Asks the three endpoints and prints the summary to out. Returns SK_EXIT_OK when the sidecar is ready,
 * SK_EXIT_FAIL when it answers not ready, SK_EXIT_RUNTIME when an endpoint cannot be reached or read
 * (said on err_out). */
int sk_status_run(const struct sk_status_opts *o, FILE *out, FILE *err_out);

#endif

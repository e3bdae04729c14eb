/* sidecar/proxy/requests_gate.h — request rules on plain HTTP (docs/policy.md "Request rules"): every
 * request head on a connection allowed by a rule with `requests` or `access` is decided on its method and
 * its path as the server will read it (common/http_path.h); a denied one never goes upstream and is
 * answered 403 with a JSON body naming why. Owns: judging one head against its rule, the 403 answer, and
 * which connections such a rule cannot admit at all (not plain HTTP). The proxy owns the connection: it
 * calls these from its HTTP gate and its first decision. Pure: no I/O.
 *
 * Ownership: a denial is owned by the connection that asked (sk_req_denial_free). */
#ifndef SK_SIDECAR_REQUESTS_GATE_H
#define SK_SIDECAR_REQUESTS_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/secret_store.h"
#include "sidecar/proxy/http_head.h"

/* What a denied request leaves for the audit line and the answer. */
struct sk_req_denial {
	char method[16];
	char path[SK_AUDIT_PATH_MAX];  /* the normalised path; a refused path as sent, query cut off */
	const char *detail;            /* the body's reason: "no_request_rule" or a path refusal
					* (sk_path_result_name: "path_encoded_slash", ...) */
	char *answer;                  /* owned: the whole 403 response; NULL when out of memory (the
					* proxy's plain 403 then) */
	size_t answer_len;
};

/* Judges the request head head[0..n) (parsed into h) against rule r, which has request rules.
 * rule_label: the rule's label in audit lines ("3" or its name). Returns NULL when the request may go
 * on, or the audit reason of its denial ("request_denied": no request rule allows method and path;
 * "request_bad_path": the path is refused as read differently by servers), with *out set to an owned
 * denial (NULL when out of memory: deny all the same). */
const char *sk_req_gate_judge(const struct sk_rule *r, const char *rule_label, const uint8_t *head, size_t n,
			      const struct sk_http_head *h, struct sk_req_denial **out);

/* A connection of kind seen (SK_PROTO_TLS, _HTTP, _TCP) allowed by r: NULL when r has no request rules or
 * the connection is plain HTTP (its requests are judged one by one), or TLS on an `inspect: true` rule (the
 * proxy terminates it and judges every request inside); else the audit reason to deny it
 * ("request_unreadable": TLS on a rule that does not inspect, or a stream that is not HTTP). */
const char *sk_req_gate_conn(const struct sk_rule *r, enum sk_proto seen);

/* A plain-HTTP request head head[0..n) that carries a `secrets:` placeholder or value anywhere (plain
 * HTTP is never a swap target, whatever the host): "credential_misuse", else NULL. values: the
 * store's, p->n_secrets entries, or NULL (placeholders only). The denial builds no answer naming the
 * path: nothing of the head reaches a log. */
const char *sk_req_gate_credentials(const struct sk_policy *p, const struct sk_secret_value *values,
				    const uint8_t *head, size_t n);

void sk_req_denial_free(struct sk_req_denial *d);

/* A whole refusal: "HTTP/1.1 <status> <status_text>", the JSON body of a denial ({"error":
 * "stockade_denied","reason":detail,"rule","method","host","path"}, every string escaped), the reason
 * in x-stockade-reason too, and Connection: close when close. Owned (its length in *len); NULL when out
 * of memory. The 403 of a denied request and the inspected connection's 421 and 400 share it. */
char *sk_req_answer(int status, const char *status_text, const char *detail, const char *rule_label,
		    const char *method, const char *host, const char *path, bool close, size_t *len);

#endif

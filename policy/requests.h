/* policy/requests.h — request rules of an egress rule (docs/policy.md "Request rules"): `inspect`,
 * `requests` (a list of {methods, paths}) and the `access` shorthand. Owns: the model hanging off
 * struct sk_rule, its validation from the policy tree (requests_parse.c, one call from the egress-rule
 * validator), and deciding one request (method + normalised path, common/http_path.h) against it.
 *
 * Ownership: a rule's sk_requests is owned by the policy snapshot (sk_requests_free from sk_policy_free). */
#ifndef SK_POLICY_REQUESTS_H
#define SK_POLICY_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"

enum sk_access { SK_ACCESS_NONE = 0, SK_ACCESS_READ_ONLY, SK_ACCESS_READ_WRITE };

/* The methods of the access shorthands, as method-set bits (sk_http_method_bit). */
#define SK_METHODS_READ_ONLY ((1u << 0) | (1u << 1) | (1u << 6))   /* GET, HEAD, OPTIONS */

struct sk_req_rule {
	unsigned methods;      /* bit i: policy/schema.h sk_schema_methods[i] */
	char **paths;          /* path globs (sk_http_glob_check true), owned */
	size_t n_paths;
	struct sk_pos pos;     /* the list item's position (the access key's for a shorthand) */
};

struct sk_requests {
	enum sk_access access; /* NONE: v is the `requests` list as written; else the shorthand's one rule */
	struct sk_req_rule *v; /* first match wins */
	size_t n;
};

/* The bit of method m in a method set, or 0 for a method no rule can name (case-sensitive: "get" is
 * not GET). */
unsigned sk_http_method_bit(const char *m);

/* One request against rq: allow, and which request rule (index into rq->v; -1 when none). path is the
 * normalised path (sk_http_path_normalize). */
struct sk_req_decision {
	bool allow;
	int index;
};
void sk_requests_decide(const struct sk_requests *rq, const char *method, const char *path,
			struct sk_req_decision *d);

/* Request rule i as text, methods then paths ("GET,HEAD /repos/acme/x /user"), for explain and messages;
 * "access read-only" for a shorthand. Truncates to outsz. Returns out. */
char *sk_req_rule_format(const struct sk_requests *rq, size_t i, char *out, size_t outsz);

void sk_requests_free(struct sk_requests *rq);

/* The egress-rule validator's one call (policy/validate.c), for every rule item: checks inspect,
 * requests and access at `rule` (messages under `path`, "egress[3]") and, when r (the rule just added from
 * it; NULL when the item was refused) is given and all is well, hangs the model on r. */
struct sk_load_ctx;
struct sk_node;
void sk_requests_validate(struct sk_load_ctx *c, const struct sk_node *rule, const char *path, struct sk_rule *r);

#endif

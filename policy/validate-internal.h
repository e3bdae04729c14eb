/* policy/validate-internal.h — private to the validator's files (validate.c, validate_<section>.c,
 * tree_get.c) and build.c: the typed reads of tree nodes with their messages (tree_get.c), and each
 * section's entry point, called by the top-level walk (validate.c). Every message is "path: what is
 * wrong, expected what" at the node's line:col; a check keeps going after an error so one run shows
 * them all.
 *
 * Ownership: nodes and paths are borrowed; a value handed back as char * or an array is owned by the
 * caller unless it is said to point into the node. */
#ifndef SK_POLICY_VALIDATE_INTERNAL_H
#define SK_POLICY_VALIDATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/internal.h"
#include "policy/schema.h"

/* Room for a message path ("egress[2].budget.queries"); a truncated path is still a useful message. */
#define PATHSZ 160

#define err_at(c, n, ...) sk_ctx_error((c), (n)->line, (n)->col, __VA_ARGS__)

/* ---- tree_get.c: message paths ---- */
void sk_pathf(char *buf, size_t sz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "base.key" and "base[idx]", without printf, truncated exactly as sk_pathf would truncate them. */
void sk_path_key(char *buf, size_t sz, const char *base, const char *key);
void sk_path_idx(char *buf, size_t sz, const char *base, size_t idx);

/* A message path written only when a message needs it, "base[idx]" (or base itself, with idx SK_NO_IDX):
 * of a long policy's rules, nearly none ever has one (a rule's path and its keys' paths were a tenth of
 * its load). */
#define SK_NO_IDX SIZE_MAX
struct sk_lazy_path {
	const char *base;
	size_t idx;
	bool done;
	char s[PATHSZ];
};

/* Returns the path, building it on first use; points into lp or at its base. */
const char *sk_lazy_path(struct sk_lazy_path *lp);

/* ---- tree_get.c: shape and keys ---- */
/* n is a mapping / a list (of `of`), else an error and false. */
bool sk_want_map(struct sk_load_ctx *c, const struct sk_node *n, const char *path);
bool sk_want_seq(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *of);
/* Every key of map is a string, one of o's keys, present once; with vals (room for o->n_fields), hands
 * back each field's value (the first written) by field index. `where` names the mapping in messages. */
void sk_gather_keys_at(struct sk_load_ctx *c, const struct sk_node *map, struct sk_lazy_path *where,
		       const struct sk_schema_obj *o, const struct sk_node **vals);
void sk_check_keys(struct sk_load_ctx *c, const struct sk_node *map, const char *where,
		   const struct sk_schema_obj *o);
/* The value of a required key, or NULL after "where: missing key 'key', expected ...". Borrowed. */
const struct sk_node *sk_need(struct sk_load_ctx *c, const struct sk_node *map, const char *where,
			      const char *key, const char *expected);

/* ---- tree_get.c: scalars ---- */
/* Unsigned decimal integer in [min, max]; `what` is the expected text. 0 or -EINVAL. */
int sk_get_uint(struct sk_load_ctx *c, const struct sk_node *n, const char *path, unsigned long long min,
		unsigned long long max, const char *what, unsigned long long *out);
/* A string's text (pointing into n), or NULL after the message. */
const char *sk_get_str(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *what);
/* A file path (printable ASCII, no spaces), readable unless SK_LOAD_NO_FILE_CHECKS: an owned copy, or NULL
 * with the error at n (validate_apis.c: the secret and CA files, tls.upstreamCAFile). */
char *sk_get_file(struct sk_load_ctx *c, const struct sk_node *n, const char *path);
int sk_get_bool(struct sk_load_ctx *c, const struct sk_node *n, const char *path, bool *out);
/* The index of s among names[], or -1; quiet. */
int sk_enum_index(const char *s, const char *const *names, size_t n_names);
/* One of names[] (`what` is the noun in "is not a <what>"): its index, or -1 after the message. */
int sk_get_enum(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *what,
		const char *const *names, size_t n_names, const char *expected);
/* [a-z0-9-]{1,63}: api and rule names, which end up in URLs and metric labels. */
bool sk_name_ok(const char *s);

/* ---- tree_get.c: ports ---- */
/* Sorts v[0..n) and drops repeats; returns the new count. */
size_t sk_sort_unique_u16(uint16_t *v, size_t n);
/* The common port (plain 1..65535) without a path or message; false leaves it to sk_get_uint. */
bool sk_port_quiet(const struct sk_node *it, uint16_t *out);
/* A non-empty list of ports, sorted and deduplicated; *out owned. 0 or <0 after the message. */
int sk_get_port_list(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint16_t **out,
		     size_t *n_out);

/* ---- build.c ---- */
/* A host pattern ("name" or "*.suffix") validated and normalised into norm (SK_DOMAIN_MAX + 1 bytes). */
int sk_check_host_name(struct sk_load_ctx *c, const struct sk_node *n, const char *path, char *norm,
		       bool *wildcard);

/* ---- the sections, each filling p from its node; called by sk_validate_policy (validate.c) ---- */
/* validate_egress.c: the egress list, one rule each (validate_rule there). */
void sk_validate_egress(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p);
/* validate_egress.c: once the whole policy is known, the direct and udp cidr rules (which go around the
 * proxy) against the link-local and private classes. */
void sk_check_bypass_rules(struct sk_load_ctx *c, const struct sk_node *egress, const struct sk_policy *p);
/* validate_budgets.c: a budget mapping into *out; 0 or -EINVAL after the messages. */
int sk_get_budget(struct sk_load_ctx *c, const struct sk_node *n, const char *path, struct sk_budget *out);
/* validate_budgets.c: may a rule of this kind carry budget b (bn its node)? false after the message. */
bool sk_rule_budget_ok(struct sk_load_ctx *c, const struct sk_node *bn, const char *path, bool host,
		       bool wildcard, bool direct, int proto, const struct sk_budget *b);
void sk_validate_budgets(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p);
/* validate_budgets.c: budgets.default into every proxied rule without its own, then the cap on budgeted
 * rules; once the whole policy is known. */
void sk_apply_default_budget(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p);
/* validate_dns.c, validate_apis.c, validate_seccomp.c */
void sk_validate_dns(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p);
void sk_validate_apis(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p);
void sk_validate_seccomp(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p);
/* validate_secrets.c: the secrets section; after egress (its hosts must be under inspect rules). */
void sk_validate_secrets(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p);

#endif

/* policy/build.c — building and freeing the model: docs/policy.md's defaults, growing the rule list, the
 * forge import's notes, and freeing a snapshot with everything it owns. The validator and the forge
 * import fill a model through these. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/internal.h"
#include "policy/match.h"

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void sk_policy_free(struct sk_policy *p)
{
	if (!p)
		return;
	if (p->matcher)
		sk_matcher_free(p->matcher);
	free(p->source);
	free(p->exempt_uids);
	for (size_t i = 0; i < p->n_rules; i++) {
		free(p->rules[i].host);
		free(p->rules[i].ports);
		free(p->rules[i].name);
	}
	free(p->rules);
	free_strv(p->dns.upstream, p->dns.n_upstream);
	free(p->dns.allow_types);
	free(p->loopback_ports);
	for (size_t i = 0; i < p->n_apis; i++) {
		struct sk_api *a = &p->apis[i];
		free(a->name);
		free(a->upstream);
		free(a->header_name);
		free(a->value_file);
		free(a->caller_token_file);
		free(a->ca_file);
		free_strv(a->methods, a->n_methods);
		free_strv(a->path_prefixes, a->n_path_prefixes);
	}
	free(p->apis);
	free_strv(p->seccomp.allow, p->seccomp.n_allow);
	free_strv(p->seccomp.deny, p->seccomp.n_deny);
	free(p->seccomp.allow_pos);
	free(p->seccomp.deny_pos);
	free_strv(p->import_notes, p->n_import_notes);
	free(p);
}

/* docs/policy.md defaults. dns.upstream and dns.allowTypes are filled by the validator when absent, so
 * that a present key replaces the default instead of adding to it. */
void sk_policy_set_defaults(struct sk_policy *p)
{
	p->version = 1;
	p->mode = SK_MODE_ENFORCE;
	p->agent_uid = 1000;
	p->sidecar_uid = 1337;
	p->ports = (struct sk_ports){ .proxy = 15001, .dns = 15053, .admin = 15000, .api = 15080 };
	p->dns.deny = SK_DNS_DENY_NXDOMAIN;
	p->dns.max_query_length = 253;
	p->block_private = true;
	p->loopback = SK_LOOPBACK_ALLOW;
	p->tls.ech_grease_allow = false;  /* tls.echGrease: deny */
}

struct sk_rule *sk_policy_add_rule(struct sk_load_ctx *c, struct sk_policy *p)
{
	/* The array only ever grows here, from empty, so its capacity is the power of two at or above
	 * n_rules: it doubles when n_rules reaches one (one realloc per rule was a copy, or an mremap
	 * system call, per rule of a long policy). */
	struct sk_rule *v = p->rules;
	const size_t n = p->n_rules;
	if (n == 0 || (n & (n - 1)) == 0) {
		v = realloc(p->rules, (n ? 2 * n : 1) * sizeof(*v));
		if (!v) {
			sk_ctx_error(c, 1, 1, "out of memory");
			return NULL;
		}
		p->rules = v;
	}
	struct sk_rule *r = &v[p->n_rules++];
	memset(r, 0, sizeof(*r));
	return r;
}

void sk_policy_add_note(struct sk_policy *p, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	char **v = realloc(p->import_notes, (p->n_import_notes + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return;
	}
	p->import_notes = v;
	v[p->n_import_notes++] = s;
}
int sk_policy_dns_defaults(struct sk_policy *p)
{
	static const uint16_t def_types[] = { 1, 5, 28, 64, 65 };  /* A CNAME AAAA SVCB HTTPS, sorted */
	if (!p->dns.upstream) {
		p->dns.upstream = calloc(1, sizeof(char *));
		if (!p->dns.upstream || !(p->dns.upstream[0] = strdup("resolv.conf")))
			return -ENOMEM;
		p->dns.n_upstream = 1;
	}
	if (!p->dns.allow_types) {
		p->dns.allow_types = malloc(sizeof(def_types));
		if (!p->dns.allow_types)
			return -ENOMEM;
		memcpy(p->dns.allow_types, def_types, sizeof(def_types));
		p->dns.n_allow_types = SK_ARRAY_SIZE(def_types);
	}
	return 0;
}

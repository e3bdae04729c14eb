/* policy/build.c — building and freeing the model: docs/policy.md's defaults, growing the rule list, the
 * forge import's notes, a host or cidr rule from its node (the validator's rules and forge's lists),
 * and freeing a snapshot with everything it owns. The validator and the forge import fill a model
 * through these. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include "common/util.h"
#include "policy/addr.h"
#include "policy/domain.h"
#include "policy/internal.h"
#include "policy/match.h"
#include "policy/requests.h"
#include "policy/validate-internal.h"

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
		sk_requests_free(p->rules[i].requests);
	}
	free(p->rules);
	free_strv(p->dns.upstream, p->dns.n_upstream);
	free(p->dns.allow_types);
	free(p->loopback_ports);
	free(p->tls.upstream_ca_file);
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
	for (size_t i = 0; i < p->n_secrets; i++) {
		struct sk_secret *sec = &p->secrets[i];
		free(sec->name);
		free(sec->value_file);
		free(sec->placeholder);
		free_strv(sec->hosts, sec->n_hosts);
		free_strv(sec->paths, sec->n_paths);
		free_strv(sec->in, sec->n_in);
	}
	free(p->secrets);
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

/* Validates and normalises a host pattern into norm (SK_DOMAIN_MAX + 1 bytes). */
int sk_check_host_name(struct sk_load_ctx *c, const struct sk_node *n, const char *path, char *norm,
		       bool *wildcard)
{
	char q[SK_QUOTE_MAX];
	const char *s = sk_get_str(c, n, path, "a DNS name like api.example.com or *.example.com");
	if (!s)
		return -EINVAL;
	struct sk_addr a;
	if (sk_addr_parse(s, &a) == 0) {
		err_at(c, n, "%s: %s is an IP address, expected a name (use cidr: for addresses)", path,
		       sk_quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	const char *why = NULL;
	if (sk_domain_normalize(s, strlen(s), SK_DOMAIN_ALLOW_WILDCARD, norm, wildcard, &why) < 0) {
		err_at(c, n, "%s: invalid name %s: %s, expected a DNS name like api.example.com or *.example.com",
		       path, sk_quote(s, q, sizeof(q)), why ? why : "not a valid name");
		return -EINVAL;
	}
	return 0;
}

int sk_add_host_rule(struct sk_load_ctx *c, struct sk_policy *p, const struct sk_node *n, const char *path,
		     const uint16_t *ports, size_t n_ports)
{
	char norm[SK_DOMAIN_MAX + 1];
	bool wildcard = false;
	if (sk_check_host_name(c, n, path, norm, &wildcard) < 0)
		return -EINVAL;
	struct sk_rule *r = sk_policy_add_rule(c, p);
	if (!r)
		return -ENOMEM;
	r->kind = SK_RULE_HOST;
	r->wildcard = wildcard;
	r->pos = (struct sk_pos){ n->line, n->col };
	r->host = strdup(norm);
	if (n_ports) {
		r->ports = malloc(n_ports * sizeof(*r->ports));
		if (r->ports) {
			memcpy(r->ports, ports, n_ports * sizeof(*r->ports));
			r->n_ports = n_ports;
		}
	}
	if (!r->host || (n_ports && !r->ports)) {
		err_at(c, n, "%s: out of memory", path);
		return -ENOMEM;
	}
	return 0;
}

int sk_parse_cidr_at(struct sk_load_ctx *c, const struct sk_node *n, const char *path, struct sk_cidr *out)
{
	char q[SK_QUOTE_MAX], addr[SK_ADDR_STRLEN + 8];
	static const char expected[] = "a network like 10.0.0.0/8 or fd00::/8";
	const char *s = sk_get_str(c, n, path, expected);
	if (!s)
		return -EINVAL;
	/* One parse for a valid network; only a refused one is taken apart again below, for a message that
	 * says what is wrong with it (every check below is one sk_cidr_parse makes, so a network it accepts
	 * passes them all). */
	if (sk_cidr_parse(s, out, NULL) == 0)
		return 0;
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	struct sk_addr a;
	if (alen >= sizeof(addr) || (memcpy(addr, s, alen), addr[alen] = 0, sk_addr_parse(addr, &a) < 0)) {
		err_at(c, n, "%s: %s is not a valid address/prefix, expected %s", path, sk_quote(s, q, sizeof(q)),
		       expected);
		return -EINVAL;
	}
	const unsigned maxp = a.family == AF_INET ? 32 : 128;
	unsigned prefix = maxp;
	if (slash) {
		const char *d = slash + 1;
		size_t dl = strlen(d);
		bool ok = dl >= 1 && dl <= 3 && !(dl > 1 && d[0] == '0');
		for (size_t i = 0; i < dl && ok; i++)
			ok = d[i] >= '0' && d[i] <= '9';
		if (!ok || (prefix = (unsigned)atoi(d)) > maxp) {
			err_at(c, n, "%s: %s has an invalid prefix length, expected /0../%u", path,
			       sk_quote(s, q, sizeof(q)), maxp);
			return -EINVAL;
		}
	}
	/* Host bits set usually means a typo for a different network: say which network it would be. */
	struct sk_cidr masked = { .net = a, .prefix = (uint8_t)prefix };
	const unsigned nbytes = maxp / 8;
	for (unsigned i = 0; i < nbytes; i++) {
		unsigned bits = prefix > i * 8 ? prefix - i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
		masked.net.bytes[i] &= mask;
	}
	if (memcmp(masked.net.bytes, a.bytes, sizeof(a.bytes)) != 0) {
		char net[SK_ADDR_STRLEN + 4];
		sk_cidr_format(&masked, net);
		err_at(c, n, "%s: %s has host bits set, expected %s", path, sk_quote(s, q, sizeof(q)), net);
		return -EINVAL;
	}
	const char *why = NULL;
	if (sk_cidr_parse(s, out, &why) < 0) {
		err_at(c, n, "%s: %s: %s, expected %s", path, sk_quote(s, q, sizeof(q)), why ? why : "invalid",
		       expected);
		return -EINVAL;
	}
	return 0;
}

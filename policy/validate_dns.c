/* policy/validate_dns.c — the dns section: upstream resolvers, the deny answer, the longest name asked,
 * the record types allowed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/addr.h"
#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

#define qtypes sk_schema_qtypes

static bool upstream_ok(const char *s)
{
	struct sk_addr a;
	char buf[SK_ADDR_STRLEN + 8];
	const char *port = NULL;
	if (!strcmp(s, "resolv.conf"))
		return true;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || (size_t)(e - s - 1) >= sizeof(buf))
			return false;
		memcpy(buf, s + 1, (size_t)(e - s - 1));
		buf[e - s - 1] = 0;
		if (sk_addr_parse(buf, &a) < 0 || !strchr(buf, ':'))
			return false;
		if (e[1] == 0)
			return true;
		if (e[1] != ':')
			return false;
		port = e + 2;
	} else {
		const char *colon = strchr(s, ':');
		if (colon && !strchr(colon + 1, ':')) {
			if ((size_t)(colon - s) >= sizeof(buf))
				return false;
			memcpy(buf, s, (size_t)(colon - s));
			buf[colon - s] = 0;
			port = colon + 1;
		} else if (strlen(s) < sizeof(buf)) {
			memcpy(buf, s, strlen(s) + 1);
		} else {
			return false;
		}
		if (sk_addr_parse(buf, &a) < 0)
			return false;
	}
	if (!port)
		return true;
	size_t pl = strlen(port);
	if (pl < 1 || pl > 5 || port[0] == '0')
		return false;
	for (size_t i = 0; i < pl; i++)
		if (port[i] < '0' || port[i] > '9')
			return false;
	return atoi(port) <= 65535;
}

void sk_validate_dns(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	const char *const *denies = sk_schema_dns_denies;
	char path[PATHSZ], q[SK_QUOTE_MAX];
	if (!sk_want_map(c, n, "dns"))
		return;
	sk_check_keys(c, n, "dns", &sk_schema_dns);
	const struct sk_node *v;
	if ((v = sk_node_get(n, "upstream")) && sk_want_seq(c, v, "dns.upstream", "resolvers")) {
		if (!v->n)
			err_at(c, v, "dns.upstream: empty list, expected resolv.conf or resolver addresses");
		p->dns.upstream = calloc(v->n ? v->n : 1, sizeof(char *));
		if (!p->dns.upstream)
			err_at(c, v, "dns.upstream: out of memory");
		for (size_t i = 0; p->dns.upstream && i < v->n; i++) {
			sk_pathf(path, sizeof(path), "dns.upstream[%zu]", i);
			const char *s = sk_get_str(c, v->items[i], path, "resolv.conf or an IP address");
			if (!s)
				continue;
			if (!upstream_ok(s)) {
				err_at(c, v->items[i],
				       "%s: %s is not a resolver, expected resolv.conf or an IP address with optional "
				       "port (10.0.0.10, 10.0.0.10:53, [fd00::a]:53)", path, sk_quote(s, q, sizeof(q)));
				continue;
			}
			if (!(p->dns.upstream[p->dns.n_upstream] = strdup(s)))
				err_at(c, v->items[i], "%s: out of memory", path);
			else
				p->dns.n_upstream++;
		}
	}
	if ((v = sk_node_get(n, "deny"))) {
		int d = sk_get_enum(c, v, "dns.deny", "deny answer", denies, sk_schema_count(denies), "nxdomain or refused");
		if (d >= 0)
			p->dns.deny = (enum sk_dns_deny)d;
	}
	if ((v = sk_node_get(n, "maxQueryLength"))) {
		unsigned long long m;
		if (sk_get_uint(c, v, "dns.maxQueryLength", 1, 253, "a length 1..253", &m) == 0)
			p->dns.max_query_length = (unsigned)m;
	}
	if ((v = sk_node_get(n, "allowTypes")) && sk_want_seq(c, v, "dns.allowTypes", "record type names")) {
		p->dns.allow_types = calloc(v->n ? v->n : 1, sizeof(uint16_t));
		if (!p->dns.allow_types)
			err_at(c, v, "dns.allowTypes: out of memory");
		for (size_t i = 0; p->dns.allow_types && i < v->n; i++) {
			sk_pathf(path, sizeof(path), "dns.allowTypes[%zu]", i);
			const char *s = sk_get_str(c, v->items[i], path, "a record type name like A or AAAA");
			if (!s)
				continue;
			size_t j = 0;
			while (j < sk_schema_n_qtypes && strcasecmp(qtypes[j].name, s) != 0)
				j++;
			if (j == sk_schema_n_qtypes) {
				err_at(c, v->items[i], "%s: unknown record type %s, expected a type name like A, AAAA, "
						       "CNAME, HTTPS, SVCB, MX, TXT or SRV", path, sk_quote(s, q, sizeof(q)));
				continue;
			}
			p->dns.allow_types[p->dns.n_allow_types++] = qtypes[j].type;
		}
		p->dns.n_allow_types = sk_sort_unique_u16(p->dns.allow_types, p->dns.n_allow_types);
	}
}

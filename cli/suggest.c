/* cli/suggest.c — see suggest.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli/suggest.h"
#include "common/http_path.h"
#include "common/json_str.h"
#include "policy/domain.h"
#include "policy/seccomp/seccomp.h"

static const char WHY_LITERAL[] = "the name seen (SNI or Host) is an IP literal: an address rule, never a host rule";
static const char WHY_NO_NAME[] = "no name was seen (plain TCP): an address rule; a host rule needs TLS or HTTP";
static const char WHY_PRIVATE[] = "a private address: allowed only by a cidr rule that names it";

static const char *str_field(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "1.2.3.4:443" or "[2001:db8::1]:443". */
static int parse_endpoint(const char *s, struct sk_addr *a, uint16_t *port)
{
	char host[SK_ADDR_STRLEN + 1];
	const char *colon;
	size_t hl;
	if (!s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || e[1] != ':')
			return -EINVAL;
		hl = (size_t)(e - s - 1);
		s++;
		colon = e + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535 || sk_addr_parse(host, a) < 0)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

static int add_skip(struct sk_suggest *s, const char *reason_in)
{
	/* The sidecar's reasons are short tokens; a longer (foreign) one is kept and compared cut to the field,
	 * so its repeats add up to one count. */
	char reason[sizeof(s->skips[0].reason)];
	(void)snprintf(reason, sizeof(reason), "%s", reason_in);
	for (size_t i = 0; i < s->n_skips; i++)
		if (!strcmp(s->skips[i].reason, reason)) {
			s->skips[i].count++;
			return 0;
		}
	struct sk_suggest_skip *v = realloc(s->skips, (s->n_skips + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->skips = v;
	memcpy(v[s->n_skips].reason, reason, sizeof(reason));
	v[s->n_skips++].count = 1;
	return 0;
}

static int add_port(struct sk_suggest_rule *r, uint16_t port)
{
	size_t i = 0;
	while (i < r->n_ports && r->ports[i] < port)
		i++;
	if (i < r->n_ports && r->ports[i] == port)
		return 0;
	uint16_t *v = realloc(r->ports, (r->n_ports + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memmove(v + i + 1, v + i, (r->n_ports - i) * sizeof(*v));
	v[i] = port;
	r->ports = v;
	r->n_ports++;
	return 0;
}

/* The rule for (host or addr, proto), created when new. */
static struct sk_suggest_rule *rule_for(struct sk_suggest *s, const char *host, const struct sk_addr *addr,
					const char *proto, const char *why)
{
	if (!host && !addr)
		return NULL;
	for (size_t i = 0; i < s->n_rules; i++) {
		struct sk_suggest_rule *r = &s->rules[i];
		if (strcmp(r->proto, proto) != 0)
			continue;
		/* An address seen both as a literal name and without one keeps the first line's comment. */
		if (host ? r->host && !strcmp(r->host, host) : !r->host && addr && sk_addr_equal(&r->cidr.net, addr))
			return r;
	}
	struct sk_suggest_rule *v = realloc(s->rules, (s->n_rules + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->rules = v;
	struct sk_suggest_rule *r = &v[s->n_rules];
	memset(r, 0, sizeof(*r));
	if (host && !(r->host = strdup(host)))
		return NULL;
	if (!host) {
		r->cidr.net = *addr;
		r->cidr.prefix = addr->family == AF_INET ? 32 : 128;
	}
	(void)snprintf(r->proto, sizeof(r->proto), "%s", proto);
	r->why = why;
	s->n_rules++;
	return r;
}

static int add_dns_only(struct sk_suggest *s, const char *name)
{
	for (size_t i = 0; i < s->n_dns_only; i++)
		if (!strcmp(s->dns_only[i], name))
			return 0;
	char **v = realloc(s->dns_only, (s->n_dns_only + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->dns_only = v;
	if (!(v[s->n_dns_only] = strdup(name)))
		return -ENOMEM;
	s->n_dns_only++;
	return 0;
}

static int cmp_str(const void *a, const void *b);

/* A seccomp-log line: the syscall the profile refused. */
static int take_seccomp(struct sk_suggest *s, const cJSON *o)
{
	const char *name = str_field(o, "syscall"), *action = str_field(o, "action");
	if (!action || !strcmp(action, "allow") || !strcmp(action, "log")) {
		s->not_denials++;
		return 0;
	}
	/* a name as libseccomp prints them; anything else is no syscall a policy could list */
	if (!name || !*name || strlen(name) > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name))
		return add_skip(s, "seccomp_unnamed");
	s->used++;
	for (size_t i = 0; i < s->n_sys; i++)
		if (!strcmp(s->sys[i].name, name)) {
			s->sys[i].count++;
			return 0;
		}
	struct sk_suggest_sys *v = realloc(s->sys, (s->n_sys + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->sys = v;
	v[s->n_sys] = (struct sk_suggest_sys){ .name = strdup(name), .count = 1 };
	if (!v[s->n_sys].name)
		return -ENOMEM;
	s->n_sys++;
	return 0;
}

/* The rule label of a line: "rule" is a name (string) or an index (number). Writes it into buf; NULL when
 * the line names no rule. */
static const char *rule_label(const cJSON *o, char *buf, size_t sz)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "rule");
	if (cJSON_IsString(r) && r->valuestring[0])
		(void)snprintf(buf, sz, "%s", r->valuestring);
	else if (cJSON_IsNumber(r) && r->valuedouble >= 0 && r->valuedouble < 1e9)
		(void)snprintf(buf, sz, "%d", (int)r->valuedouble);
	else
		return NULL;
	return buf;
}

/* A request_denied line: its path joins the (rule, method) entry. */
static int take_request(struct sk_suggest *s, const cJSON *o)
{
	const char *method = str_field(o, "method"), *path = str_field(o, "path"), *name = str_field(o, "name");
	char label[80];
	if (!method || !path || path[0] != '/' || strlen(method) >= sizeof(s->reqs[0].method) ||
	    !rule_label(o, label, sizeof(label)))
		return add_skip(s, "request_denied");
	/* Only a path that is a glob matching just itself: a '*' would widen it, '//' is refused in a glob. */
	if (strchr(path, '*') || !sk_http_glob_check(path, NULL, NULL, 0))
		return add_skip(s, "request_path_not_a_glob");
	struct sk_suggest_req *q = NULL;
	for (size_t i = 0; i < s->n_reqs && !q; i++)
		if (!strcmp(s->reqs[i].rule, label) && !strcmp(s->reqs[i].method, method))
			q = &s->reqs[i];
	if (!q) {
		struct sk_suggest_req *v = realloc(s->reqs, (s->n_reqs + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->reqs = v;
		q = &v[s->n_reqs];
		memset(q, 0, sizeof(*q));
		q->rule = strdup(label);
		q->host = strdup(name ? name : "");
		if (!q->rule || !q->host) {
			free(q->rule);
			free(q->host);
			return -ENOMEM;
		}
		(void)snprintf(q->method, sizeof(q->method), "%s", method);
		s->n_reqs++;
	}
	q->count++;
	s->used++;
	for (size_t i = 0; i < q->n_paths; i++)
		if (!strcmp(q->paths[i], path))
			return 0;
	char **pv = realloc(q->paths, (q->n_paths + 1) * sizeof(*pv));
	if (!pv)
		return -ENOMEM;
	q->paths = pv;
	if (!(pv[q->n_paths] = strdup(path)))
		return -ENOMEM;
	q->n_paths++;
	return 0;
}

static int take(struct sk_suggest *s, const cJSON *o)
{
	const char *event = str_field(o, "event"), *decision = str_field(o, "decision");
	const char *reason = str_field(o, "reason"), *name = str_field(o, "name");
	const char *proto = str_field(o, "proto"), *kind = str_field(o, "kind");
	if (kind && !strcmp(kind, "seccomp"))
		return take_seccomp(s, o);
	if (!event || !decision || (strcmp(decision, "deny") != 0 && strcmp(decision, "would_deny") != 0)) {
		s->not_denials++;
		return 0;
	}
	if (!reason)
		reason = "?";
	char norm[SK_DOMAIN_MAX + 1];
	bool wc = false;
	const char *why = NULL;
	struct sk_addr lit;
	bool name_ok = name && sk_addr_parse(name, &lit) < 0 &&
		       sk_domain_normalize(name, strlen(name), 0, norm, &wc, &why) == 0;
	if (!strcmp(event, "dns")) {
		/* The connection that follows a resolved name carries the port; the name alone is a hint. */
		if (name_ok && !strcmp(reason, "denied"))
			return add_dns_only(s, norm);
		return add_skip(s, reason);
	}
	if (strcmp(event, "conn") != 0 && strcmp(event, "deny") != 0) {
		s->not_denials++;
		return 0;
	}
	if (!strcmp(reason, "request_denied"))
		return take_request(s, o);
	bool private = !strcmp(reason, "private");
	if (strcmp(reason, "no_match") != 0 && !private)
		return add_skip(s, reason);
	struct sk_addr dst;
	uint16_t port;
	if (parse_endpoint(str_field(o, "dst"), &dst, &port) < 0)
		return add_skip(s, "no_destination");
	/* h2c is HTTP as far as rules go (a rule's protocol is tls, http, tcp, udp or any). */
	const char *p = !proto ? "tcp" : !strcmp(proto, "h2c") ? "http" : proto;
	if (strcmp(p, "tls") != 0 && strcmp(p, "http") != 0 && strcmp(p, "tcp") != 0)
		return add_skip(s, "unknown_protocol");
	struct sk_suggest_rule *r;
	if (private)
		r = rule_for(s, NULL, &dst, p, WHY_PRIVATE);
	else if (name_ok)
		r = rule_for(s, norm, NULL, p, NULL);
	else if (name && sk_addr_parse(name, &lit) == 0)
		r = rule_for(s, NULL, &lit, p, WHY_LITERAL);
	else if (!name)
		r = rule_for(s, NULL, &dst, p, WHY_NO_NAME);
	else
		return add_skip(s, "bad_name");
	if (!r || add_port(r, port) < 0)
		return -ENOMEM;
	r->count++;
	s->used++;
	return 0;
}

int sk_suggest_line(struct sk_suggest *s, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	s->lines++;
	cJSON *o = cJSON_ParseWithLength(line, len);
	if (!cJSON_IsObject(o)) {
		/* kubectl logs may interleave the sidecar's stderr: not an audit line, not an error. */
		s->not_json++;
		cJSON_Delete(o);
		return 0;
	}
	int r = take(s, o);
	cJSON_Delete(o);
	return r;
}

int sk_suggest_read(struct sk_suggest *s, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;
	while (r == 0 && (n = getline(&line, &cap, f)) >= 0)
		r = sk_suggest_line(s, line, (size_t)n);
	if (r == 0 && ferror(f))
		r = -EIO;
	free(line);
	return r;
}

static int cmp_rule(const void *a, const void *b)
{
	const struct sk_suggest_rule *x = a, *y = b;
	if (!!x->host != !!y->host)
		return x->host ? -1 : 1;
	int c = x->host ? strcmp(x->host, y->host) : 0;
	if (!c && !x->host) {
		if (x->cidr.net.family != y->cidr.net.family)
			c = x->cidr.net.family == AF_INET ? -1 : 1;
		else
			c = memcmp(x->cidr.net.bytes, y->cidr.net.bytes, sizeof(x->cidr.net.bytes));
	}
	return c ? c : strcmp(x->proto, y->proto);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_req(const void *a, const void *b)
{
	const struct sk_suggest_req *x = a, *y = b;
	int c = strcmp(x->rule, y->rule);
	return c ? c : strcmp(x->method, y->method);
}

static int cmp_sys(const void *a, const void *b)
{
	return strcmp(((const struct sk_suggest_sys *)a)->name, ((const struct sk_suggest_sys *)b)->name);
}

int sk_suggest_finish(struct sk_suggest *s)
{
	if (s->n_sys)
		qsort(s->sys, s->n_sys, sizeof(*s->sys), cmp_sys);
	/* the generator is the judge of what seccomp.allow may hold (what `check` will say of the result) */
	for (size_t i = 0; i < s->n_sys; i++) {
		const char *one[] = { s->sys[i].name };
		struct sk_seccomp_opts opts = { .allow = one, .n_allow = 1 };
		struct sk_scmp_profile *p = NULL;
		struct sk_err err = { 0 };
		int r = sk_seccomp_generate(&opts, &p, &err);
		sk_scmp_profile_free(p);
		if (r == -ENOMEM)
			return r;
		if (r < 0 && !(s->sys[i].refused = strdup(err.msg)))
			return -ENOMEM;
	}
	if (s->n_reqs)
		qsort(s->reqs, s->n_reqs, sizeof(*s->reqs), cmp_req);
	for (size_t i = 0; i < s->n_reqs; i++)
		if (s->reqs[i].n_paths)
			qsort(s->reqs[i].paths, s->reqs[i].n_paths, sizeof(char *), cmp_str);
	if (s->n_rules)
		qsort(s->rules, s->n_rules, sizeof(*s->rules), cmp_rule);
	if (s->n_dns_only)
		qsort(s->dns_only, s->n_dns_only, sizeof(*s->dns_only), cmp_str);
	return 0;
}

/* A DNS-only name no host rule covers (the connection never came, e.g. it was to a port the agent then
 * gave up on). */
static bool covered(const struct sk_suggest *s, const char *name)
{
	for (size_t i = 0; i < s->n_rules; i++)
		if (s->rules[i].host && !strcmp(s->rules[i].host, name))
			return true;
	return false;
}

char *sk_suggest_yaml(const struct sk_suggest *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	/* the writes below leave a failure (out of memory) to f's error indicator, checked once at the end */
	(void)fprintf(f, "# stockade-policy suggest: %u line%s read, %u denial%s turned into %zu rule%s\n", s->lines,
		s->lines == 1 ? "" : "s", s->used, s->used == 1 ? "" : "s", s->n_rules, s->n_rules == 1 ? "" : "s");
	if (s->n_skips) {
		(void)fprintf(f, "# not turned into rules (no egress rule changes these):");
		for (size_t i = 0; i < s->n_skips; i++)
			(void)fprintf(f, "%s %s %u", i ? "," : "", s->skips[i].reason, s->skips[i].count);
		(void)fprintf(f, "\n");
	}
	bool any_dns = false;
	for (size_t i = 0; i < s->n_dns_only; i++) {
		if (covered(s, s->dns_only[i]))
			continue;
		(void)fprintf(f, "%s %s", any_dns ? "," : "# names denied in DNS only (no connection followed):",
			s->dns_only[i]);
		any_dns = true;
	}
	if (any_dns)
		(void)fprintf(f, "\n");
	if (s->n_reqs)
		(void)fprintf(f, "# requests denied by the request rules of existing rules: entries to add to their requests:\n");
	for (size_t i = 0; i < s->n_reqs; i++) {
		const struct sk_suggest_req *q = &s->reqs[i];
		(void)fprintf(f, "#   rule %s (%s): - { methods: [%s], paths: [", q->rule, q->host, q->method);
		for (size_t k = 0; k < q->n_paths; k++) {
			(void)fputs(k ? ", " : "", f);
			(void)sk_json_fputs(f, q->paths[k]);
		}
		(void)fprintf(f, "] }  # %u request%s\n", q->count, q->count == 1 ? "" : "s");
	}
	(void)fprintf(f, "egress:%s\n", s->n_rules ? "" : " []");
	for (size_t i = 0; i < s->n_rules; i++) {
		const struct sk_suggest_rule *r = &s->rules[i];
		if (r->host) {
			(void)fprintf(f, "  - host: %s\n", r->host);
		} else {
			char net[SK_ADDR_STRLEN + 4];
			sk_cidr_format(&r->cidr, net);
			(void)fprintf(f, "  # %s\n  - cidr: \"%s\"\n", r->why ? r->why : "an address rule", net);
		}
		(void)fprintf(f, "    ports: [");
		for (size_t k = 0; k < r->n_ports; k++)
			(void)fprintf(f, "%s%u", k ? ", " : "", r->ports[k]);
		(void)fprintf(f, "]\n    protocol: %s  # %u connection%s\n", r->proto, r->count, r->count == 1 ? "" : "s");
	}
	size_t n_allow = 0;
	for (size_t i = 0; i < s->n_sys; i++) {
		if (s->sys[i].refused)
			(void)fprintf(f, "# seccomp: not suggested, %s (%u refusal%s): %s\n", s->sys[i].name, s->sys[i].count,
				s->sys[i].count == 1 ? "" : "s", s->sys[i].refused);
		else
			n_allow++;
	}
	if (n_allow) {
		(void)fprintf(f, "seccomp:\n  allow:\n");
		for (size_t i = 0; i < s->n_sys; i++)
			if (!s->sys[i].refused)
				(void)fprintf(f, "    - %s  # %u refusal%s\n", s->sys[i].name, s->sys[i].count,
					s->sys[i].count == 1 ? "" : "s");
	}
	bool failed = ferror(f) != 0;
	if (fclose(f) != 0 || failed) {
		free(out);
		return NULL;
	}
	return out;
}

char *sk_suggest_json(const struct sk_suggest *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "lines", s->lines);
	cJSON_AddNumberToObject(o, "used", s->used);
	cJSON *eg = cJSON_AddArrayToObject(o, "egress");
	for (size_t i = 0; eg && i < s->n_rules; i++) {
		const struct sk_suggest_rule *r = &s->rules[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddItemToArray(eg, j);
		if (r->host) {
			cJSON_AddStringToObject(j, "host", r->host);
		} else {
			char net[SK_ADDR_STRLEN + 4];
			sk_cidr_format(&r->cidr, net);
			cJSON_AddStringToObject(j, "cidr", net);
		}
		cJSON *ports = cJSON_AddArrayToObject(j, "ports");
		for (size_t k = 0; ports && k < r->n_ports; k++)
			cJSON_AddItemToArray(ports, cJSON_CreateNumber(r->ports[k]));
		cJSON_AddStringToObject(j, "protocol", r->proto);
		cJSON_AddNumberToObject(j, "connections", r->count);
		if (r->why)
			cJSON_AddStringToObject(j, "comment", r->why);
	}
	cJSON *rq = s->n_reqs ? cJSON_AddArrayToObject(o, "requests") : NULL;
	for (size_t i = 0; rq && i < s->n_reqs; i++) {
		const struct sk_suggest_req *q = &s->reqs[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddItemToArray(rq, j);
		cJSON_AddStringToObject(j, "rule", q->rule);
		cJSON_AddStringToObject(j, "host", q->host);
		cJSON *m = cJSON_AddArrayToObject(j, "methods");
		if (m)
			cJSON_AddItemToArray(m, cJSON_CreateString(q->method));
		cJSON *ps = cJSON_AddArrayToObject(j, "paths");
		for (size_t k = 0; ps && k < q->n_paths; k++)
			cJSON_AddItemToArray(ps, cJSON_CreateString(q->paths[k]));
		cJSON_AddNumberToObject(j, "requests", q->count);
	}
	cJSON *sk = cJSON_AddObjectToObject(o, "skipped");
	for (size_t i = 0; sk && i < s->n_skips; i++)
		cJSON_AddNumberToObject(sk, s->skips[i].reason, s->skips[i].count);
	cJSON *sc = s->n_sys ? cJSON_AddObjectToObject(o, "seccomp") : NULL;
	cJSON *sa = sc ? cJSON_AddArrayToObject(sc, "allow") : NULL;
	cJSON *sr = sc ? cJSON_AddObjectToObject(sc, "refused") : NULL;
	for (size_t i = 0; sa && sr && i < s->n_sys; i++) {
		if (s->sys[i].refused)
			cJSON_AddStringToObject(sr, s->sys[i].name, s->sys[i].refused);
		else
			cJSON_AddItemToArray(sa, cJSON_CreateString(s->sys[i].name));
	}
	cJSON *dn = cJSON_AddArrayToObject(o, "dnsOnly");
	for (size_t i = 0; dn && i < s->n_dns_only; i++)
		if (!covered(s, s->dns_only[i]))
			cJSON_AddItemToArray(dn, cJSON_CreateString(s->dns_only[i]));
	char *text = cJSON_Print(o);
	cJSON_Delete(o);
	return text;
}

void sk_suggest_free(struct sk_suggest *s)
{
	for (size_t i = 0; i < s->n_rules; i++) {
		free(s->rules[i].host);
		free(s->rules[i].ports);
	}
	free(s->rules);
	for (size_t i = 0; i < s->n_reqs; i++) {
		free(s->reqs[i].rule);
		free(s->reqs[i].host);
		for (size_t k = 0; k < s->reqs[i].n_paths; k++)
			free(s->reqs[i].paths[k]);
		free(s->reqs[i].paths);
	}
	free(s->reqs);
	free(s->skips);
	for (size_t i = 0; i < s->n_dns_only; i++)
		free(s->dns_only[i]);
	free(s->dns_only);
	for (size_t i = 0; i < s->n_sys; i++) {
		free(s->sys[i].name);
		free(s->sys[i].refused);
	}
	free(s->sys);
	memset(s, 0, sizeof(*s));
}

/* policy/requests.c — request rules (requests.h): the model, deciding one request, and their validation
 * from the policy tree.
 *
 * What the validator refuses besides shapes, and why (docs/policy.md "Request rules"):
 *  - access and requests together: two answers to one question;
 *  - requests/access on a rule the proxy cannot read requests of: a direct or udp cidr rule (the kernel
 *    decides them), protocol tcp (spliced as a byte stream);
 *  - requests/access on a rule that carries TLS (protocol tls, or any with no ports or port 443) without
 *    inspect: true — the requests are encrypted, so an operator who wrote them would get a rule that
 *    cannot be kept; the sidecar refuses such connections anyway, the validator says so up front;
 *  - inspect on a cidr rule (a certificate needs a name), on tcp/udp rules, or on a direct rule. */
#include "policy/requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http_path.h"
#include "common/util.h"
#include "policy/internal.h"
#include "policy/schema.h"

unsigned sk_http_method_bit(const char *m)
{
	for (size_t i = 0; sk_schema_methods[i]; i++)
		if (strcmp(m, sk_schema_methods[i]) == 0)
			return 1u << i;
	return 0;
}

void sk_requests_decide(const struct sk_requests *rq, const char *method, const char *path,
			struct sk_req_decision *d)
{
	const unsigned bit = sk_http_method_bit(method);
	d->allow = false;
	d->index = -1;
	if (!bit)
		return;
	for (size_t i = 0; i < rq->n; i++) {
		const struct sk_req_rule *r = &rq->v[i];
		if (!(r->methods & bit))
			continue;
		for (size_t k = 0; k < r->n_paths; k++) {
			if (sk_http_glob_match(r->paths[k], path)) {
				d->allow = true;
				d->index = (int)i;
				return;
			}
		}
	}
}

char *sk_req_rule_format(const struct sk_requests *rq, size_t i, char *out, size_t outsz)
{
	if (!outsz)
		return out;
	out[0] = '\0';
	if (rq->access != SK_ACCESS_NONE) {
		(void)snprintf(out, outsz, "access %s", sk_schema_accesses[rq->access - 1]);
		return out;
	}
	if (i >= rq->n)
		return out;
	const struct sk_req_rule *r = &rq->v[i];
	size_t o = 0;
	for (size_t k = 0; sk_schema_methods[k] && o < outsz; k++) {
		if (r->methods & (1u << k)) {
			int w = snprintf(out + o, outsz - o, "%s%s", o ? "," : "", sk_schema_methods[k]);
			o += w > 0 ? (size_t)w : 0;
		}
	}
	for (size_t k = 0; k < r->n_paths && o < outsz; k++) {
		int w = snprintf(out + o, outsz - o, " %s", r->paths[k]);
		o += w > 0 ? (size_t)w : 0;
	}
	return out;
}

static void req_rule_free(struct sk_req_rule *r)
{
	for (size_t k = 0; k < r->n_paths; k++)
		free(r->paths[k]);
	free(r->paths);
}

void sk_requests_free(struct sk_requests *rq)
{
	if (!rq)
		return;
	for (size_t i = 0; i < rq->n; i++)
		req_rule_free(&rq->v[i]);
	free(rq->v);
	free(rq);
}

/* ---- validation ---- */

#define err_at(c, n, ...) sk_ctx_error((c), (n)->line, (n)->col, __VA_ARGS__)
#define RPATH 200

/* "an empty list" where the tree's description would only say "a list". */
static const char *describe(const struct sk_node *n, char *buf, size_t sz)
{
	if (n->kind == SK_NODE_SEQ && n->n == 0)
		return "an empty list";
	return sk_node_describe(n, buf, sz);
}

static bool is_str(const struct sk_node *n)
{
	return n->kind == SK_NODE_SCALAR && n->skind == SK_SCALAR_STR;
}

static const char *methods_expected(char *buf, size_t sz)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; sk_schema_methods[i] && o < sz; i++) {
		int w = snprintf(buf + o, sz - o, "%s%s", i ? ", " : "", sk_schema_methods[i]);
		o += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

static unsigned parse_methods(struct sk_load_ctx *c, const struct sk_node *n, const char *path, bool *bad)
{
	char d[SK_QUOTE_MAX + 16], q[SK_QUOTE_MAX], exp[128];
	if (n->kind != SK_NODE_SEQ || n->n == 0) {
		err_at(c, n, "%s: expected a non-empty list of HTTP methods such as [GET, HEAD], got %s", path,
		       describe(n, d, sizeof(d)));
		*bad = true;
		return 0;
	}
	unsigned set = 0;
	for (size_t i = 0; i < n->n; i++) {
		const struct sk_node *it = n->items[i];
		if (!is_str(it)) {
			err_at(c, it, "%s[%zu]: expected an HTTP method, got %s", path, i,
			       sk_node_describe(it, d, sizeof(d)));
			*bad = true;
			continue;
		}
		unsigned bit = sk_http_method_bit(it->text);
		if (bit) {
			set |= bit;
			continue;
		}
		char up[16];
		size_t k = 0;
		for (; it->text[k] && k + 1 < sizeof(up); k++)
			up[k] = (char)(it->text[k] >= 'a' && it->text[k] <= 'z' ? it->text[k] - 32 : it->text[k]);
		up[k] = '\0';
		if (!it->text[k] && sk_http_method_bit(up))
			err_at(c, it, "%s[%zu]: %s is not a method (methods are case-sensitive), expected %s", path, i,
			       sk_quote(it->text, q, sizeof(q)), up);
		else if (!strcmp(up, "CONNECT"))
			err_at(c, it, "%s[%zu]: CONNECT cannot be allowed (the proxy is transparent and denies every "
				      "tunnel), expected one of %s", path, i, methods_expected(exp, sizeof(exp)));
		else
			err_at(c, it, "%s[%zu]: %s is not a method a request rule can name, expected one of %s", path,
			       i, sk_quote(it->text, q, sizeof(q)), methods_expected(exp, sizeof(exp)));
		*bad = true;
	}
	return set;
}

static char **parse_paths(struct sk_load_ctx *c, const struct sk_node *n, const char *path, size_t *n_out,
			  bool *bad)
{
	char d[SK_QUOTE_MAX + 16], q[SK_QUOTE_MAX], want[SK_QUOTE_MAX], wq[SK_QUOTE_MAX];
	if (n->kind != SK_NODE_SEQ || n->n == 0) {
		err_at(c, n, "%s: expected a non-empty list of path globs such as [\"/repos/acme/**\"], got %s", path,
		       describe(n, d, sizeof(d)));
		*bad = true;
		return NULL;
	}
	char **v = calloc(n->n, sizeof(*v));
	if (!v) {
		err_at(c, n, "%s: out of memory", path);
		*bad = true;
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < n->n; i++) {
		const struct sk_node *it = n->items[i];
		const char *why = NULL;
		if (!is_str(it)) {
			err_at(c, it, "%s[%zu]: expected a path glob such as \"/repos/acme/**\", got %s", path, i,
			       sk_node_describe(it, d, sizeof(d)));
			*bad = true;
		} else if (!sk_http_glob_check(it->text, &why, want, sizeof(want))) {
			if (want[0])
				err_at(c, it, "%s[%zu]: %s is %s, expected %s (the path a request is matched on)", path,
				       i, sk_quote(it->text, q, sizeof(q)), why, sk_quote(want, wq, sizeof(wq)));
			else
				err_at(c, it, "%s[%zu]: %s: %s, expected a path glob such as \"/repos/acme/**\"", path,
				       i, sk_quote(it->text, q, sizeof(q)), why);
			*bad = true;
		} else if (!(v[k++] = strdup(it->text))) {
			err_at(c, it, "%s[%zu]: out of memory", path, i);
			*bad = true;
		}
	}
	*n_out = k;
	return v;
}

static void check_item_keys(struct sk_load_ctx *c, const struct sk_node *m, const char *path, bool *bad)
{
	char q[SK_QUOTE_MAX];
	for (size_t i = 0; i + 1 < m->n; i += 2) {
		const struct sk_node *k = m->items[i];
		if (!is_str(k) || !sk_schema_field(&sk_schema_request, k->text)) {
			err_at(c, k, "%s: unknown key %s, expected one of methods, paths", path,
			       is_str(k) ? sk_quote(k->text, q, sizeof(q)) : "(not a string)");
			*bad = true;
			continue;
		}
		for (size_t j = 0; j < i; j += 2) {
			if (is_str(m->items[j]) && !strcmp(m->items[j]->text, k->text)) {
				err_at(c, k, "%s: duplicate key %s (first at %u:%u), expected each key once", path,
				       sk_quote(k->text, q, sizeof(q)), m->items[j]->line, m->items[j]->col);
				*bad = true;
				break;
			}
		}
	}
}

static struct sk_requests *parse_list(struct sk_load_ctx *c, const struct sk_node *n, const char *base, bool *bad)
{
	char path[RPATH], ipath[RPATH + 24], kpath[RPATH + 48], d[SK_QUOTE_MAX + 16];
	(void)snprintf(path, sizeof(path), "%s.requests", base);
	if (n->kind != SK_NODE_SEQ || n->n == 0) {
		err_at(c, n, "%s: expected a non-empty list of {methods, paths}, got %s (leave the key out to allow "
			     "every request)", path, describe(n, d, sizeof(d)));
		*bad = true;
		return NULL;
	}
	struct sk_requests *rq = calloc(1, sizeof(*rq));
	if (rq)
		rq->v = calloc(n->n, sizeof(*rq->v));
	if (!rq || !rq->v) {
		err_at(c, n, "%s: out of memory", path);
		free(rq);
		*bad = true;
		return NULL;
	}
	for (size_t i = 0; i < n->n; i++) {
		const struct sk_node *it = n->items[i];
		(void)snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (it->kind != SK_NODE_MAP) {
			err_at(c, it, "%s: expected a mapping {methods: [...], paths: [...]}, got %s", ipath,
			       sk_node_describe(it, d, sizeof(d)));
			*bad = true;
			continue;
		}
		check_item_keys(c, it, ipath, bad);
		struct sk_req_rule *r = &rq->v[rq->n++];
		r->pos = (struct sk_pos){ it->line, it->col };
		const struct sk_node *mn = sk_node_get(it, "methods"), *pn = sk_node_get(it, "paths");
		if (!mn) {
			err_at(c, it, "%s: missing key 'methods', expected a list of HTTP methods such as [GET, HEAD]",
			       ipath);
			*bad = true;
		} else {
			(void)snprintf(kpath, sizeof(kpath), "%s.methods", ipath);
			r->methods = parse_methods(c, mn, kpath, bad);
		}
		if (!pn) {
			err_at(c, it, "%s: missing key 'paths', expected a list of path globs such as [\"/**\"]", ipath);
			*bad = true;
		} else {
			(void)snprintf(kpath, sizeof(kpath), "%s.paths", ipath);
			r->paths = parse_paths(c, pn, kpath, &r->n_paths, bad);
		}
	}
	return rq;
}

static struct sk_requests *from_access(struct sk_load_ctx *c, const struct sk_node *an, const char *base,
				       bool *bad)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (!is_str(an)) {
		err_at(c, an, "%s.access: expected read-only or read-write, got %s", base,
		       sk_node_describe(an, d, sizeof(d)));
		*bad = true;
		return NULL;
	}
	enum sk_access a = SK_ACCESS_NONE;
	for (size_t i = 0; sk_schema_accesses[i]; i++)
		if (!strcmp(an->text, sk_schema_accesses[i]))
			a = (enum sk_access)(i + 1);
	if (a == SK_ACCESS_NONE) {
		err_at(c, an, "%s.access: %s is not an access, expected read-only or read-write", base,
		       sk_quote(an->text, q, sizeof(q)));
		*bad = true;
		return NULL;
	}
	struct sk_requests *rq = calloc(1, sizeof(*rq));
	if (rq)
		rq->v = calloc(1, sizeof(*rq->v));
	if (rq && rq->v)
		rq->v[0].paths = calloc(1, sizeof(char *));
	if (!rq || !rq->v || !rq->v[0].paths || !(rq->v[0].paths[0] = strdup("/**"))) {
		err_at(c, an, "%s.access: out of memory", base);
		sk_requests_free(rq);
		*bad = true;
		return NULL;
	}
	rq->access = a;
	rq->n = 1;
	rq->v[0].n_paths = 1;
	rq->v[0].methods = a == SK_ACCESS_READ_ONLY ? SK_METHODS_READ_ONLY : (1u << sk_schema_count(sk_schema_methods)) - 1;
	rq->v[0].pos = (struct sk_pos){ an->line, an->col };
	return rq;
}

static bool has_port(const struct sk_rule *r, uint16_t port)
{
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

void sk_requests_validate(struct sk_load_ctx *c, const struct sk_node *rule, const char *base, struct sk_rule *r)
{
	if (rule->kind != SK_NODE_MAP)
		return;
	const struct sk_node *in = sk_node_get(rule, "inspect"), *rn = sk_node_get(rule, "requests");
	const struct sk_node *an = sk_node_get(rule, "access");
	if (!in && !rn && !an)
		return;
	char d[SK_QUOTE_MAX + 16];
	bool bad = false, inspect = false;
	if (in) {
		if (in->kind == SK_NODE_SCALAR && in->skind == SK_SCALAR_BOOL) {
			inspect = in->text[0] == 't' || in->text[0] == 'T';
		} else {
			err_at(c, in, "%s.inspect: expected true or false, got %s", base, sk_node_describe(in, d, sizeof(d)));
			bad = true;
		}
	}
	struct sk_requests *rq = NULL;
	if (an && rn) {
		err_at(c, an, "%s: has both access and requests, expected one of them (access is a shorthand for a "
			      "requests list)", base);
		bad = true;
		sk_requests_free(parse_list(c, rn, base, &bad));  /* for its messages */
	} else if (rn) {
		rq = parse_list(c, rn, base, &bad);
	} else if (an) {
		rq = from_access(c, an, base, &bad);
	}
	/* The rest needs the rule as the validator read it: a refused rule's own messages come first. */
	if (r && !bad) {
		const struct sk_node *at = an ? an : rn;
		const char *key = an ? "access" : "requests";
		if (inspect && r->kind != SK_RULE_HOST) {
			err_at(c, in, "%s.inspect: needs a host rule (a certificate is issued for a name), expected it "
				      "on a host rule", base);
			bad = true;
		} else if (inspect && (r->direct || r->proto == SK_PROTO_TCP || r->proto == SK_PROTO_UDP)) {
			err_at(c, in, "%s.inspect: a %s rule carries no HTTP to inspect, expected protocol tls, http "
				      "or any", base, r->direct ? "direct" : sk_proto_name(r->proto));
			bad = true;
		}
		if (at && (r->direct || r->proto == SK_PROTO_TCP || r->proto == SK_PROTO_UDP)) {
			err_at(c, at, "%s.%s: a %s rule is relayed as bytes, its requests are never read; expected "
				      "protocol http or any (or tls with inspect: true)", base, key,
			       r->direct ? "direct" : sk_proto_name(r->proto));
			bad = true;
		} else if (at && !inspect &&
			   (r->proto == SK_PROTO_TLS || (r->proto == SK_PROTO_ANY && (!r->n_ports || has_port(r, 443))))) {
			char ports[64];
			if (!r->n_ports)
				(void)snprintf(ports, sizeof(ports), "any port");
			else
				(void)snprintf(ports, sizeof(ports), "port 443");
			err_at(c, at, "%s.%s: the rule allows TLS (%s), whose requests the sidecar can only see by "
				      "terminating it; expected inspect: true, or protocol: http for plain HTTP only", base,
			       key, r->proto == SK_PROTO_TLS ? "protocol tls" : ports);
			bad = true;
		}
	}
	if (bad || !r) {
		sk_requests_free(rq);
		return;
	}
	r->inspect = inspect;
	r->requests = rq;
}

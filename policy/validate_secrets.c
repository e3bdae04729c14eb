/* policy/validate_secrets.c — the secrets section: credentials the agent never holds. Each
 * entry's name, value file, placeholder (long, distinctive, unique: the sidecar finds it by scanning
 * bytes, so one placeholder inside another, or a short common word, would make that scan ambiguous),
 * hosts (exact names, each decided by an inspect: true rule: the swap happens only where the sidecar
 * reads the request), path globs and header names. Runs after egress, whose rules it checks hosts against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/http_path.h"
#include "common/util.h"
#include "policy/domain.h"
#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

#define PLACEHOLDER_PREFIX "stockade-secret-"

static bool placeholder_chars(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* Header names as HTTP/2 carries them (lower case), so one spelling serves both versions. */
static bool lower_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* Case-insensitive strstr: the scan for misuse folds case (DNS names arrive lower-cased). */
static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return true;
	return false;
}

/* The rule that decides a host name: the first host rule matching it (cidr rules never match a name). */
static const struct sk_rule *rule_for_name(const struct sk_policy *p, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (r->kind != SK_RULE_HOST || !r->host)
			continue;
		if (!r->wildcard && !strcmp(r->host, name))
			return r;
		size_t sl = strlen(r->host);
		if (r->wildcard && nl > sl + 1 && name[nl - sl - 1] == '.' && !strcmp(name + nl - sl, r->host))
			return r;
	}
	return NULL;
}

/* A list of strings, each checked by `one` (which reports and returns NULL, or an owned copy). */
static char **str_list(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *of,
		       size_t *n_out, char *(*one)(struct sk_load_ctx *, const struct sk_node *, const char *,
						   const struct sk_policy *),
		       const struct sk_policy *p)
{
	*n_out = 0;
	if (!sk_want_seq(c, n, path, of))
		return NULL;
	if (!n->n) {
		err_at(c, n, "%s: empty list, expected at least one of %s (or leave the key out)", path, of);
		return NULL;
	}
	char **v = calloc(n->n, sizeof(*v));
	if (!v) {
		err_at(c, n, "%s: out of memory", path);
		return NULL;
	}
	for (size_t i = 0; i < n->n; i++) {
		char ip[PATHSZ];
		sk_path_idx(ip, sizeof(ip), path, i);
		char *s = one(c, n->items[i], ip, p);
		if (!s)
			continue;
		bool dup = false;
		for (size_t j = 0; j < *n_out && !dup; j++)
			dup = v[j] && !strcmp(v[j], s);
		if (dup)
			free(s);
		else
			v[(*n_out)++] = s;
	}
	return v;
}

static char *one_host(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const struct sk_policy *p)
{
	char norm[SK_DOMAIN_MAX + 1], q[SK_QUOTE_MAX];
	bool wc = false;
	if (sk_check_host_name(c, n, path, norm, &wc) < 0)
		return NULL;
	if (wc) {
		err_at(c, n, "%s: %s is a wildcard, expected an exact host name (a secret names each host it may "
			     "go to)", path, sk_quote(n->text, q, sizeof(q)));
		return NULL;
	}
	const struct sk_rule *r = rule_for_name(p, norm);
	if (!r || !r->inspect) {
		err_at(c, n, "%s: %s is %s, expected a host an `inspect: true` egress rule allows (the value is "
			     "swapped only into requests the sidecar reads)", path, sk_quote(norm, q, sizeof(q)),
		       r ? "decided by a rule without inspect: true" : "not allowed by any egress rule");
		return NULL;
	}
	char *s = strdup(norm);
	if (!s)
		err_at(c, n, "%s: out of memory", path);
	return s;
}

static char *one_path(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const struct sk_policy *p)
{
	(void)p;
	char q[SK_QUOTE_MAX], want[SK_QUOTE_MAX], wq[SK_QUOTE_MAX];
	const char *s = sk_get_str(c, n, path, "a path glob such as \"/repos/acme/**\"");
	const char *why = NULL;
	if (!s)
		return NULL;
	if (!sk_http_glob_check(s, &why, want, sizeof(want))) {
		if (want[0])
			err_at(c, n, "%s: %s is %s, expected %s (the path a request is matched on)", path,
			       sk_quote(s, q, sizeof(q)), why, sk_quote(want, wq, sizeof(wq)));
		else
			err_at(c, n, "%s: %s: %s, expected a path glob such as \"/repos/acme/**\"", path,
			       sk_quote(s, q, sizeof(q)), why);
		return NULL;
	}
	char *d = strdup(s);
	if (!d)
		err_at(c, n, "%s: out of memory", path);
	return d;
}

static char *one_header(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const struct sk_policy *p)
{
	(void)p;
	char q[SK_QUOTE_MAX];
	const char *s = sk_get_str(c, n, path, "a lower-case header name");
	if (!s)
		return NULL;
	if (!lower_token(s) || strlen(s) > 64) {
		err_at(c, n, "%s: %s is not a lower-case header name, expected a token like authorization or "
			     "x-api-key", path, sk_quote(s, q, sizeof(q)));
		return NULL;
	}
	/* The request line's parts and the routing headers are never a place for a credential. */
	if (!strcmp(s, "host") || s[0] == ':' || !strcmp(s, "content-length") || !strcmp(s, "transfer-encoding")) {
		err_at(c, n, "%s: %s decides where or how the request goes, expected a credential header like "
			     "authorization", path, sk_quote(s, q, sizeof(q)));
		return NULL;
	}
	char *d = strdup(s);
	if (!d)
		err_at(c, n, "%s: out of memory", path);
	return d;
}

static void validate_secret(struct sk_load_ctx *c, const struct sk_node *n, size_t idx, struct sk_policy *p)
{
	char path[PATHSZ], kp[PATHSZ], q[SK_QUOTE_MAX], q2[SK_QUOTE_MAX];
	sk_pathf(path, sizeof(path), "secrets[%zu]", idx);
	if (!sk_want_map(c, n, path))
		return;
	sk_check_keys(c, n, path, &sk_schema_secret);
	struct sk_secret *s = &p->secrets[p->n_secrets++];  /* freed with p even when invalid */
	s->pos = (struct sk_pos){ n->line, n->col };
	const struct sk_node *v;

	if ((v = sk_need(c, n, path, "name", "name: [a-z0-9-]{1,63}"))) {
		sk_path_key(kp, sizeof(kp), path, "name");
		const char *t = sk_get_str(c, v, kp, "a name [a-z0-9-]{1,63}");
		if (t && !sk_name_ok(t)) {
			err_at(c, v, "%s: %s is not a valid secret name, expected [a-z0-9-]{1,63}", kp,
			       sk_quote(t, q, sizeof(q)));
		} else if (t) {
			bool ok = true;
			for (size_t j = 0; j + 1 < p->n_secrets && ok; j++)
				if (p->secrets[j].name && !strcmp(p->secrets[j].name, t)) {
					err_at(c, v, "%s: %s is already the name of secrets[%zu], expected unique names",
					       kp, sk_quote(t, q, sizeof(q)), j);
					ok = false;
				}
			if (ok && !(s->name = strdup(t)))
				err_at(c, v, "%s: out of memory", kp);
		}
	}
	if ((v = sk_need(c, n, path, "valueFile", "the path of the secret value"))) {
		sk_path_key(kp, sizeof(kp), path, "valueFile");
		s->value_file = sk_get_file(c, v, kp);
	}
	const struct sk_node *pn = sk_node_get(n, "placeholder");
	sk_path_key(kp, sizeof(kp), path, "placeholder");
	if (pn) {
		const char *t = sk_get_str(c, pn, kp, "a placeholder");
		size_t l = t ? strlen(t) : 0;
		if (t && (l < SK_SECRET_PLACEHOLDER_MIN || l > SK_SECRET_PLACEHOLDER_MAX || !placeholder_chars(t)))
			err_at(c, pn, "%s: %s is not a usable placeholder, expected %d to %d characters of "
				      "[A-Za-z0-9._-] (long enough that no ordinary request carries it by chance)",
			       kp, sk_quote(t, q, sizeof(q)), SK_SECRET_PLACEHOLDER_MIN, SK_SECRET_PLACEHOLDER_MAX);
		else if (t && !(s->placeholder = strdup(t)))
			err_at(c, pn, "%s: out of memory", kp);
	} else if (s->name && asprintf(&s->placeholder, PLACEHOLDER_PREFIX "%s", s->name) < 0) {
		s->placeholder = NULL;
		err_at(c, n, "%s: out of memory", kp);
	}
	if (s->placeholder) {
		const struct sk_node *at = pn ? pn : n;
		for (size_t j = 0; j + 1 < p->n_secrets; j++) {
			const char *o = p->secrets[j].placeholder;
			if (!o)
				continue;
			/* Case folds because the scan folds it (DNS names arrive lower-cased); one inside the other
			 * would make a swap of the outer one also a sighting of the inner one. */
			if (contains_ci(o, s->placeholder) || contains_ci(s->placeholder, o)) {
				err_at(c, at, "%s: %s %s the placeholder of secrets[%zu] (%s), expected a placeholder "
					      "that neither contains nor is contained in another, ignoring case",
				       kp, sk_quote(s->placeholder, q, sizeof(q)),
				       strcasecmp(o, s->placeholder) ? "overlaps" : "is already", j,
				       sk_quote(o, q2, sizeof(q2)));
				free(s->placeholder);
				s->placeholder = NULL;
				break;
			}
		}
	}
	if ((v = sk_need(c, n, path, "hosts", "hosts: [api.example.com]"))) {
		sk_path_key(kp, sizeof(kp), path, "hosts");
		s->hosts = str_list(c, v, kp, "host names", &s->n_hosts, one_host, p);
	}
	if ((v = sk_node_get(n, "paths"))) {
		sk_path_key(kp, sizeof(kp), path, "paths");
		s->paths = str_list(c, v, kp, "path globs", &s->n_paths, one_path, p);
		if (!s->paths)  /* a list lost to an error must not leave the secret valid on every path */
			s->n_paths = 0;
	}
	if ((v = sk_node_get(n, "in"))) {
		sk_path_key(kp, sizeof(kp), path, "in");
		s->in = str_list(c, v, kp, "header names", &s->n_in, one_header, p);
	} else if ((s->in = calloc(1, sizeof(*s->in))) && (s->in[0] = strdup("authorization"))) {
		s->n_in = 1;
	} else {
		err_at(c, n, "%s: out of memory", path);
	}
}

void sk_validate_secrets(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!sk_want_seq(c, n, "secrets", "secrets"))
		return;
	if (!n->n)
		return;
	p->secrets = calloc(n->n, sizeof(*p->secrets));
	if (!p->secrets) {
		err_at(c, n, "secrets: out of memory");
		return;
	}
	for (size_t i = 0; i < n->n; i++)
		validate_secret(c, n->items[i], i, p);
}

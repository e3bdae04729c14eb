/* policy/validate_apis.c — the apis section (the API gateway): each api's name, https upstream, secret
 * header and its files, rate limit, methods and path prefixes. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/addr.h"
#include "policy/domain.h"
#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

static bool printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* https://host[:port][/path] → normalised (scheme and host lower case, no trailing slash) in *out.
 * Returns NULL on success or a static reason. */
static const char *normalize_upstream(const char *s, char **out)
{
	if (!printable_ascii(s))
		return "contains spaces, control bytes or non-ASCII";
	if (strncasecmp(s, "https://", 8) != 0)
		return "is not an https:// URL";
	if (strchr(s, '#'))
		return "has a fragment";
	if (strchr(s, '?'))
		return "has a query";
	const char *auth = s + 8, *path = auth + strcspn(auth, "/");
	size_t alen = (size_t)(path - auth);
	if (memchr(auth, '@', alen))
		return "contains userinfo (user@), which would put credentials in the URL";
	if (!alen)
		return "has no host";
	char host[SK_DOMAIN_MAX + 2];
	const char *port = NULL;
	size_t hlen;
	if (auth[0] == '[') {
		const char *e = memchr(auth, ']', alen);
		if (!e)
			return "has an unterminated [IPv6] host";
		hlen = (size_t)(e - auth - 1);
		if (hlen >= sizeof(host))
			return "has an invalid host";
		memcpy(host, auth + 1, hlen);
		host[hlen] = 0;
		struct sk_addr a;
		if (sk_addr_parse(host, &a) < 0 || !strchr(host, ':'))
			return "has an invalid [IPv6] host";
		if (e + 1 < path) {
			if (e[1] != ':')
				return "has garbage after the host";
			port = e + 2;
		}
	} else {
		const char *colon = memchr(auth, ':', alen);
		hlen = colon ? (size_t)(colon - auth) : alen;
		if (hlen == 0 || hlen >= sizeof(host))
			return "has an invalid host";
		memcpy(host, auth, hlen);
		host[hlen] = 0;
		struct sk_addr a;
		char norm[SK_DOMAIN_MAX + 1];
		bool wc = false;
		const char *why = NULL;
		if (sk_addr_parse(host, &a) < 0 && sk_domain_normalize(host, hlen, 0, norm, &wc, &why) < 0)
			return "has an invalid host name";
		if (colon)
			port = colon + 1;
	}
	if (port) {
		size_t pl = (size_t)(path - port);
		bool ok = pl >= 1 && pl <= 5 && port[0] != '0';
		for (size_t i = 0; i < pl && ok; i++)
			ok = port[i] >= '0' && port[i] <= '9';
		if (!ok || atoi(port) > 65535)
			return "has an invalid port";
	}
	size_t plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		plen--;
	if (asprintf(out, "https://%.*s%.*s", (int)alen, auth, (int)plen, path) < 0) {
		*out = NULL;
		return "out of memory";
	}
	/* Host names are case-insensitive; the path is not. */
	for (char *p = *out + 8; *p && *p != '/'; p++)
		*p = (char)tolower((unsigned char)*p);
	return NULL;
}

static bool http_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* A path the sidecar will open: must be readable now (unless the caller checks policies off-node). */
char *sk_get_file(struct sk_load_ctx *c, const struct sk_node *n, const char *path)
{
	char q[SK_QUOTE_MAX];
	const char *s = sk_get_str(c, n, path, "a file path");
	if (!s)
		return NULL;
	if (!*s || !printable_ascii(s)) {
		err_at(c, n, "%s: %s is not a usable path, expected a file path without spaces or control bytes",
		       path, sk_quote(s, q, sizeof(q)));
		return NULL;
	}
	if (!(c->flags & SK_LOAD_NO_FILE_CHECKS)) {
		sk_autoclose int fd = open(s, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		struct stat st;
		int e = fd < 0 ? errno : fstat(fd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
		if (e) {
			err_at(c, n, "%s: cannot read %s: %s, expected a readable file", path, sk_quote(s, q, sizeof(q)),
			       strerror(e));
			return NULL;
		}
	}
	return strdup(s);
}

static int get_number(struct sk_load_ctx *c, const struct sk_node *n, const char *path, double *out)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_SCALAR && n->skind == SK_SCALAR_NUM) {
		char *end = NULL;
		double v = strtod(n->text, &end);
		if (end && !*end && isfinite(v) && v >= 0 && v <= 1e9) {
			*out = v;
			return 0;
		}
	}
	err_at(c, n, "%s: expected a number 0..1000000000, got %s", path, sk_node_describe(n, d, sizeof(d)));
	return -EINVAL;
}

static void validate_api(struct sk_load_ctx *c, const struct sk_node *n, size_t idx, struct sk_policy *p)
{
	char path[PATHSZ], kp[PATHSZ], q[SK_QUOTE_MAX];
	sk_pathf(path, sizeof(path), "apis[%zu]", idx);
	if (!sk_want_map(c, n, path))
		return;
	sk_check_keys(c, n, path, &sk_schema_api);
	struct sk_api *a = &p->apis[p->n_apis++];  /* freed with p even when invalid */
	a->pos = (struct sk_pos){ n->line, n->col };
	const struct sk_node *v;

	if ((v = sk_need(c, n, path, "name", "name: [a-z0-9-]{1,63}"))) {
		sk_path_key(kp, sizeof(kp), path, "name");
		const char *s = sk_get_str(c, v, kp, "a name [a-z0-9-]{1,63}");
		if (s) {
			bool ok = sk_name_ok(s);
			if (!ok) {
				err_at(c, v, "%s: %s is not a valid api name, expected [a-z0-9-]{1,63}", kp,
				       sk_quote(s, q, sizeof(q)));
			} else {
				for (size_t j = 0; j + 1 < p->n_apis; j++)
					if (p->apis[j].name && !strcmp(p->apis[j].name, s)) {
						err_at(c, v, "%s: %s is already the name of apis[%zu], expected unique "
							     "names", kp, sk_quote(s, q, sizeof(q)), j);
						ok = false;
						break;
					}
				if (ok)
					a->name = strdup(s);
			}
		}
	}
	if ((v = sk_need(c, n, path, "upstream", "upstream: https://host"))) {
		sk_path_key(kp, sizeof(kp), path, "upstream");
		const char *s = sk_get_str(c, v, kp, "an https:// URL");
		const char *why = s ? normalize_upstream(s, &a->upstream) : NULL;
		if (why)
			err_at(c, v, "%s: %s %s, expected https://host[:port][/path] without credentials, query or "
				     "fragment", kp, sk_quote(s, q, sizeof(q)), why);
	}
	if ((v = sk_need(c, n, path, "header", "header: {name: ..., valueFile: ...}"))) {
		sk_path_key(kp, sizeof(kp), path, "header");
		if (sk_want_map(c, v, kp)) {
			sk_check_keys(c, v, kp, &sk_schema_api_header);
			const struct sk_node *hn = sk_need(c, v, kp, "name", "an HTTP header name");
			const struct sk_node *hf = sk_need(c, v, kp, "valueFile", "the path of the secret value");
			char hp[PATHSZ];
			sk_path_key(hp, sizeof(hp), kp, "name");
			const char *s = hn ? sk_get_str(c, hn, hp, "an HTTP header name") : NULL;
			if (s && !http_token(s))
				err_at(c, hn, "%s: %s is not a header name, expected an HTTP token like x-api-key", hp,
				       sk_quote(s, q, sizeof(q)));
			else if (s)
				a->header_name = strdup(s);
			sk_path_key(hp, sizeof(hp), kp, "valueFile");
			if (hf)
				a->value_file = sk_get_file(c, hf, hp);
		}
	}
	if ((v = sk_node_get(n, "callerToken"))) {
		sk_path_key(kp, sizeof(kp), path, "callerToken");
		a->caller_token_file = sk_get_file(c, v, kp);
	}
	if ((v = sk_node_get(n, "caFile"))) {
		sk_path_key(kp, sizeof(kp), path, "caFile");
		a->ca_file = sk_get_file(c, v, kp);
	}
	if ((v = sk_node_get(n, "rateLimit"))) {
		sk_path_key(kp, sizeof(kp), path, "rateLimit");
		if (sk_want_map(c, v, kp)) {
			sk_check_keys(c, v, kp, &sk_schema_api_rate);
			const struct sk_node *r = sk_node_get(v, "rps"), *b = sk_node_get(v, "burst");
			char rp[PATHSZ];
			sk_path_key(rp, sizeof(rp), kp, "rps");
			if (r)
				get_number(c, r, rp, &a->rate);
			sk_path_key(rp, sizeof(rp), kp, "burst");
			if (b)
				get_number(c, b, rp, &a->burst);
		}
	}
	if ((v = sk_node_get(n, "methods"))) {
		sk_path_key(kp, sizeof(kp), path, "methods");
		/* a list lost to a failed allocation would leave the api open to every method: fail the load */
		if (sk_want_seq(c, v, kp, "HTTP methods") &&
		    !(a->methods = calloc(v->n ? v->n : 1, sizeof(char *)))) {
			err_at(c, v, "%s: out of memory", kp);
		} else if (a->methods) {
			for (size_t i = 0; i < v->n; i++) {
				char ip[PATHSZ];
				sk_path_idx(ip, sizeof(ip), kp, i);
				const char *s = sk_get_str(c, v->items[i], ip, "an HTTP method like GET");
				if (!s)
					continue;
				size_t l = strlen(s);
				bool ok = l >= 1 && l <= 32;
				for (size_t j = 0; j < l && ok; j++)
					ok = isalpha((unsigned char)s[j]);
				if (!ok) {
					err_at(c, v->items[i], "%s: %s is not an HTTP method, expected a name like GET "
							       "or POST", ip, sk_quote(s, q, sizeof(q)));
					continue;
				}
				char *m = strdup(s);
				for (char *x = m; x && *x; x++)
					*x = (char)toupper((unsigned char)*x);
				bool dup = false;
				for (size_t j = 0; m && j < a->n_methods && !dup; j++)
					dup = a->methods[j] && !strcmp(a->methods[j], m);
				if (!m)
					err_at(c, v->items[i], "%s: out of memory", ip);
				else if (dup)
					free(m);
				else
					a->methods[a->n_methods++] = m;
			}
		}
	}
	if ((v = sk_node_get(n, "pathPrefixes"))) {
		sk_path_key(kp, sizeof(kp), path, "pathPrefixes");
		if (sk_want_seq(c, v, kp, "paths") && !(a->path_prefixes = calloc(v->n ? v->n : 1, sizeof(char *)))) {
			err_at(c, v, "%s: out of memory", kp);
		} else if (a->path_prefixes) {
			for (size_t i = 0; i < v->n; i++) {
				char ip[PATHSZ];
				sk_path_idx(ip, sizeof(ip), kp, i);
				const char *s = sk_get_str(c, v->items[i], ip, "a path starting with /");
				if (!s)
					continue;
				/* A prefix with ".." could be escaped from by the request path it is meant to fence. */
				if (s[0] != '/' || !printable_ascii(s) || strpbrk(s, "?#") || strstr(s, "/../") ||
				    (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/.."))) {
					err_at(c, v->items[i], "%s: %s is not a path prefix, expected a path starting with / "
							       "without spaces, '..' segments, query or fragment",
					       ip, sk_quote(s, q, sizeof(q)));
					continue;
				}
				if (!(a->path_prefixes[a->n_path_prefixes] = strdup(s)))
					err_at(c, v->items[i], "%s: out of memory", ip);
				else
					a->n_path_prefixes++;
			}
		}
	}
}

void sk_validate_apis(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!sk_want_seq(c, n, "apis", "api gateways"))
		return;
	if (!n->n)
		return;
	p->apis = calloc(n->n, sizeof(*p->apis));
	if (!p->apis) {
		err_at(c, n, "apis: out of memory");
		return;
	}
	for (size_t i = 0; i < n->n; i++)
		validate_api(c, n->items[i], i, p);
}

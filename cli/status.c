/* cli/status.c — `stockade-policy status`: a sidecar's admin endpoint summarised. See status.h. */
#include "cli/status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/strbuf.h"
#include "common/util.h"

/* ---- /metrics ---- */

#define LABELS_MAX 16
#define LABEL_VALUE_MAX 512

struct label {
	char name[64];
	char value[LABEL_VALUE_MAX];
};

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* One sample line: name, labels, value. false when it does not read. */
static bool parse_sample(const char *s, const char *end, char *name, size_t name_cap, struct label *lb,
			 size_t *n_lb, double *value)
{
	size_t n = 0;
	*n_lb = 0;
	while (s < end && name_char(*s, n == 0)) {
		if (n + 1 >= name_cap)
			return false;
		name[n++] = *s++;
	}
	name[n] = '\0';
	if (n == 0)
		return false;
	if (s < end && *s == '{') {
		s++;
		while (s < end && *s != '}') {
			if (*n_lb == LABELS_MAX)
				return false;
			struct label *l = &lb[(*n_lb)++];
			size_t k = 0;
			while (s < end && name_char(*s, k == 0)) {
				if (k + 1 >= sizeof(l->name))
					return false;
				l->name[k++] = *s++;
			}
			l->name[k] = '\0';
			if (k == 0 || end - s < 2 || s[0] != '=' || s[1] != '"')
				return false;
			s += 2;
			k = 0;
			while (s < end && *s != '"') {
				char c = *s++;
				if (c == '\\') {
					if (s == end)
						return false;
					c = *s++;
					if (c == 'n')
						c = '\n';
					else if (c != '\\' && c != '"')
						return false;
				}
				if (k + 1 >= sizeof(l->value))
					return false;
				l->value[k++] = c;
			}
			l->value[k] = '\0';
			if (s == end)
				return false;
			s++;   /* the closing quote */
			if (s < end && *s == ',')
				s++;
		}
		if (s == end)
			return false;
		s++;   /* '}' */
	}
	if (s == end || *s != ' ')
		return false;
	while (s < end && *s == ' ')
		s++;
	char num[64];
	size_t k = 0;
	while (s < end && *s != ' ' && k + 1 < sizeof(num))
		num[k++] = *s++;
	num[k] = '\0';
	if (k == 0 || (s < end && *s != ' '))
		return false;
	char *e = NULL;
	*value = strtod(num, &e);
	return e && *e == '\0';
}

static const char *label(const struct label *lb, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(lb[i].name, name))
			return lb[i].value;
	return NULL;
}

/* a label longer than the field is cut: the summary shows it, nothing compares it */
static void copy_label(char *dst, size_t cap, const char *v)
{
	size_t n = v ? strnlen(v, cap - 1) : 0;
	if (n)
		memcpy(dst, v, n);
	dst[n] = '\0';
}

int sk_status_parse_metrics(const char *text, size_t len, struct sk_status_metrics *m, struct sk_err *err)
{
	memset(m, 0, sizeof(*m));
	m->reload_last_success = m->reload_last_ts = -1;
	const char *s = text, *end = text + len;
	unsigned line = 0;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		line++;
		if (le > s && *s != '#') {
			char name[128];
			struct label lb[LABELS_MAX];
			size_t n_lb = 0;
			double v = 0;
			if (!parse_sample(s, le, name, sizeof(name), lb, &n_lb, &v))
				return sk_err_set(err, EINVAL, "/metrics line %u: not a sample", line);
			if (!strcmp(name, "stockade_policy_loaded")) {
				m->policy_loaded = v == 1;
			} else if (!strcmp(name, "stockade_policy_info")) {
				copy_label(m->hash, sizeof(m->hash), label(lb, n_lb, "hash"));
				copy_label(m->netns_hash, sizeof(m->netns_hash), label(lb, n_lb, "netns_hash"));
				copy_label(m->mode, sizeof(m->mode), label(lb, n_lb, "mode"));
				copy_label(m->source, sizeof(m->source), label(lb, n_lb, "source"));
			} else if (!strcmp(name, "stockade_policy_rules")) {
				m->rules = v;
			} else if (!strcmp(name, "stockade_policy_reloads_total")) {
				const char *r = label(lb, n_lb, "result");
				if (r && !strcmp(r, "ok"))
					m->reloads_ok = v;
				else if (r && !strcmp(r, "failed"))
					m->reloads_failed = v;
			} else if (!strcmp(name, "stockade_reload_last_success")) {
				m->reload_last_success = v;
			} else if (!strcmp(name, "stockade_reload_last_timestamp_seconds")) {
				m->reload_last_ts = v;
			} else if (!strcmp(name, "stockade_connections_total")) {
				const char *d = label(lb, n_lb, "decision");
				if (d && !strcmp(d, "allow"))
					m->conn_allow += v;
				else if (d && !strcmp(d, "deny"))
					m->conn_deny += v;
				else if (d && !strcmp(d, "would_deny"))
					m->conn_would_deny += v;
			} else if (!strcmp(name, "stockade_dns_queries_total")) {
				const char *r = label(lb, n_lb, "result");
				m->dns_total += v;
				if (r && !strcmp(r, "denied"))
					m->dns_denied += v;
			} else if (!strcmp(name, "stockade_budget_exhausted_total")) {
				m->budget_exhausted += v;
			}
		}
		s = le + (nl != NULL);
	}
	return 0;
}

/* ---- HTTP ---- */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for ev on fd until the deadline. 0, or -ETIMEDOUT / -errno. */
static int wait_fd(int fd, short ev, long long deadline)
{
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = fd, .events = ev };
		int r = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* "http://HOST[:PORT][/]" → host (brackets removed) and port (default 15000, the admin port). */
static int split_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap, struct sk_err *err)
{
	if (strncmp(url, "http://", 7) != 0)
		return sk_err_set(err, EINVAL, "%s: expected http://HOST:PORT (the admin port is plain HTTP)", url);
	const char *h = url + 7, *he, *p;
	if (*h == '[') {
		he = strchr(h, ']');
		if (!he)
			return sk_err_set(err, EINVAL, "%s: unclosed '['", url);
		p = he + 1;
		h++;
	} else {
		he = h + strcspn(h, ":/");
		p = he;
	}
	size_t hl = (size_t)(he - h);
	if (hl == 0 || hl >= host_cap)
		return sk_err_set(err, EINVAL, "%s: no host", url);
	memcpy(host, h, hl);
	host[hl] = '\0';
	const char *pe = p;
	if (*p == ':') {
		p++;
		pe = p + strspn(p, "0123456789");
		if (pe == p || (size_t)(pe - p) >= port_cap || pe - p > 5)
			return sk_err_set(err, EINVAL, "%s: bad port", url);
		memcpy(port, p, (size_t)(pe - p));
		port[pe - p] = '\0';
	} else {
		(void)snprintf(port, port_cap, "15000");
	}
	if (*pe && strcmp(pe, "/") != 0)
		return sk_err_set(err, EINVAL, "%s: give the admin port's base URL, without a path", url);
	return 0;
}

static int connect_to(const char *host, const char *port, long long deadline, struct sk_err *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	int r = getaddrinfo(host, port, &hints, &res);
	if (r != 0)
		return sk_err_set(err, EHOSTUNREACH, "resolve %s: %s", host, gai_strerror(r));
	int fd = -1, last = ECONNREFUSED;
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		int e = errno, so = 0;
		socklen_t sl = sizeof(so);
		if (e == EINPROGRESS && (e = -wait_fd(fd, POLLOUT, deadline)) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so == 0)
			break;
		last = e ? e : so;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return sk_err_sys(err, last, "connect %s:%s", host, port);
	return fd;
}

int sk_status_get(const char *base, const char *path, int timeout_ms, char **body, size_t *len,
		  struct sk_err *err)
{
	char host[256], port[8];
	*body = NULL;
	*len = 0;
	int r = split_url(base, host, sizeof(host), port, sizeof(port), err);
	if (r < 0)
		return r;
	long long deadline = now_ms() + timeout_ms;
	sk_autoclose int fd = connect_to(host, port, deadline, err);
	if (fd < 0)
		return fd;
	struct sk_strbuf req = { 0 };
	bool v6 = strchr(host, ':') != NULL;
	(void)sk_strbuf_printf(&req, "GET %s HTTP/1.0\r\nHost: %s%s%s:%s\r\nUser-Agent: stockade-policy\r\n\r\n", path,
			       v6 ? "[" : "", host, v6 ? "]" : "", port);
	if (sk_strbuf_ok(&req) < 0) {
		sk_strbuf_free(&req);
		return sk_err_sys(err, ENOMEM, "GET %s", path);
	}
	for (size_t off = 0; off < req.len;) {
		ssize_t n = send(fd, req.p + off, req.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN && (r = wait_fd(fd, POLLOUT, deadline)) == 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = r < 0 ? -r : errno;
			sk_strbuf_free(&req);
			return sk_err_sys(err, e, "GET %s%s: send", base, path);
		}
		off += (size_t)n;
	}
	sk_strbuf_free(&req);
	/* the admin server answers one request and closes: read to the end */
	struct sk_strbuf in = { 0 };
	char buf[16384];
	for (;;) {
		if ((r = wait_fd(fd, POLLIN, deadline)) < 0) {
			sk_strbuf_free(&in);
			return sk_err_sys(err, -r, "GET %s%s", base, path);
		}
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			int e = errno;
			sk_strbuf_free(&in);
			return sk_err_sys(err, e, "GET %s%s: receive", base, path);
		}
		if (n == 0)
			break;
		if (in.len + (size_t)n > SK_STATUS_BODY_MAX + 16384) {
			sk_strbuf_free(&in);
			return sk_err_set(err, EFBIG, "GET %s%s: answer larger than %u bytes", base, path,
					  SK_STATUS_BODY_MAX);
		}
		(void)sk_strbuf_put(&in, buf, (size_t)n);
	}
	if (sk_strbuf_ok(&in) < 0) {
		sk_strbuf_free(&in);
		return sk_err_sys(err, ENOMEM, "GET %s%s", base, path);
	}
	/* "HTTP/1.x NNN ...", the head, a blank line, the body */
	const char *p = in.p ? in.p : "";
	int status = 0;
	if (in.len < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' || sscanf(p + 9, "%3d", &status) != 1 ||
	    status < 100 || status > 599) {
		sk_strbuf_free(&in);
		return sk_err_set(err, EPROTO, "GET %s%s: not an HTTP answer", base, path);
	}
	const char *sep = memmem(p, in.len, "\r\n\r\n", 4);
	size_t skip = 4;
	if (!sep) {
		sep = memmem(p, in.len, "\n\n", 2);
		skip = 2;
	}
	if (!sep) {
		sk_strbuf_free(&in);
		return sk_err_set(err, EPROTO, "GET %s%s: the answer's head does not end", base, path);
	}
	size_t off = (size_t)(sep - p) + skip;
	*len = in.len - off;
	*body = malloc(*len + 1);
	if (!*body) {
		sk_strbuf_free(&in);
		return sk_err_sys(err, ENOMEM, "GET %s%s", base, path);
	}
	memcpy(*body, p + off, *len);
	(*body)[*len] = '\0';
	sk_strbuf_free(&in);
	return status;
}

/* ---- the summary ---- */

/* Text from the sidecar (reasons, host names the agent chose) printed to a terminal: anything but printable
 * ASCII becomes '?', so no escape sequence reaches it. */
static void put_safe(FILE *f, const char *s)
{
	for (; s && *s; s++)
		(void)fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?', f);
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void print_denial(FILE *f, const cJSON *d)
{
	/* the audit line's fields (docs/audit.schema.json): name is the host or the DNS question, dst the
	 * address and port the agent connected to */
	const char *name = jstr(d, "name"), *dst = jstr(d, "dst"), *what = jstr(d, "decision");
	(void)fputs("    ", f);
	put_safe(f, jstr(d, "ts") ? jstr(d, "ts") : "-");
	(void)fputc(' ', f);
	put_safe(f, jstr(d, "event") ? jstr(d, "event") : "-");
	if (what) {
		(void)fputc('/', f);
		put_safe(f, what);
	}
	(void)fputc(' ', f);
	put_safe(f, name ? name : dst ? dst : "-");
	if (name && dst) {
		(void)fputs(" -> ", f);
		put_safe(f, dst);
	}
	const char *qtype = jstr(d, "qtype"), *proto = jstr(d, "proto"), *reason = jstr(d, "reason");
	if (qtype || proto) {
		(void)fputc(' ', f);
		put_safe(f, qtype ? qtype : proto);
	}
	if (reason) {
		(void)fputs(" (", f);
		put_safe(f, reason);
		(void)fputc(')', f);
	}
	(void)fputc('\n', f);
}

static void print_text(FILE *f, const char *url, bool ready, const char *reason, const struct sk_status_metrics *m,
		       const cJSON *denials, size_t limit)
{
	(void)fputs("sidecar   ", f);
	put_safe(f, url);
	(void)fputs(ready ? "\nready     yes\n" : "\nready     NO: ", f);
	if (!ready) {
		put_safe(f, reason ? reason : "(no reason given)");
		(void)fputc('\n', f);
	}
	if (m->policy_loaded) {
		(void)fputs("policy    hash ", f);
		put_safe(f, m->hash);
		(void)fputs(", netns ", f);
		put_safe(f, m->netns_hash);
		(void)fputs(", mode ", f);
		put_safe(f, m->mode);
		(void)fprintf(f, ", %.0f rules, from ", m->rules);
		put_safe(f, m->source);
		(void)fputc('\n', f);
	} else {
		(void)fputs("policy    none in force\n", f);
	}
	(void)fprintf(f, "reloads   %.0f applied, %.0f rejected", m->reloads_ok, m->reloads_failed);
	if (m->reload_last_ts > 0) {
		char ts[32];
		time_t t = (time_t)m->reload_last_ts;
		struct tm tm;
		if (gmtime_r(&t, &tm) && strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm))
			(void)fprintf(f, "; last attempt %s %s", ts, m->reload_last_success == 1 ? "applied" : "REJECTED");
	}
	(void)fprintf(f, "\nconns     %.0f allowed, %.0f denied", m->conn_allow, m->conn_deny);
	if (m->conn_would_deny > 0)
		(void)fprintf(f, ", %.0f would be denied (mode audit)", m->conn_would_deny);
	(void)fprintf(f, "\ndns       %.0f queries, %.0f denied\n", m->dns_total, m->dns_denied);
	if (m->budget_exhausted > 0)
		(void)fprintf(f, "budgets   exhausted %.0f times\n", m->budget_exhausted);
	int n = cJSON_GetArraySize(denials);
	(void)fprintf(f, "denials   %s%d (newest last, at most %zu)\n", n ? "last " : "", n, limit);
	for (const cJSON *d = denials ? denials->child : NULL; d; d = d->next)
		print_denial(f, d);
}

static int print_json(FILE *f, const char *url, bool ready, const char *reason, const struct sk_status_metrics *m,
		      cJSON *denials)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	bool ok = cJSON_AddStringToObject(o, "url", url) && cJSON_AddBoolToObject(o, "ready", ready);
	if (ok && reason)
		ok = cJSON_AddStringToObject(o, "reason", reason) != NULL;
	cJSON *pol = ok ? cJSON_AddObjectToObject(o, "policy") : NULL;
	ok = pol && cJSON_AddBoolToObject(pol, "loaded", m->policy_loaded);
	if (ok && m->policy_loaded)
		ok = cJSON_AddStringToObject(pol, "hash", m->hash) && cJSON_AddStringToObject(pol, "netns_hash", m->netns_hash) &&
		     cJSON_AddStringToObject(pol, "mode", m->mode) && cJSON_AddStringToObject(pol, "source", m->source) &&
		     cJSON_AddNumberToObject(pol, "rules", m->rules);
	cJSON *rl = ok ? cJSON_AddObjectToObject(o, "reloads") : NULL;
	ok = rl && cJSON_AddNumberToObject(rl, "applied", m->reloads_ok) &&
	     cJSON_AddNumberToObject(rl, "rejected", m->reloads_failed);
	if (ok && m->reload_last_ts > 0)
		ok = cJSON_AddNumberToObject(rl, "last_timestamp", m->reload_last_ts) &&
		     cJSON_AddBoolToObject(rl, "last_applied", m->reload_last_success == 1);
	cJSON *c = ok ? cJSON_AddObjectToObject(o, "connections") : NULL;
	ok = c && cJSON_AddNumberToObject(c, "allowed", m->conn_allow) && cJSON_AddNumberToObject(c, "denied", m->conn_deny) &&
	     cJSON_AddNumberToObject(c, "would_deny", m->conn_would_deny);
	cJSON *dn = ok ? cJSON_AddObjectToObject(o, "dns") : NULL;
	ok = dn && cJSON_AddNumberToObject(dn, "queries", m->dns_total) && cJSON_AddNumberToObject(dn, "denied", m->dns_denied) &&
	     cJSON_AddNumberToObject(o, "budgets_exhausted", m->budget_exhausted);
	cJSON *dup = ok ? cJSON_Duplicate(denials, true) : NULL;
	ok = dup && cJSON_AddItemToObject(o, "denials", dup);
	if (!ok)
		cJSON_Delete(dup);
	char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!text)
		return -ENOMEM;
	(void)fprintf(f, "%s\n", text);
	free(text);
	return 0;
}

int sk_status_run(const struct sk_status_opts *o, FILE *out, FILE *err_out)
{
	struct sk_err err = { 0 };
	char *body = NULL, path[64];
	size_t len = 0;
	int ex = SK_EXIT_RUNTIME;
	cJSON *ready_doc = NULL, *denials = NULL;
	struct sk_status_metrics m;

	int st = sk_status_get(o->url, "/readyz", o->timeout_ms, &body, &len, &err);
	if (st < 0)
		goto fail;
	ready_doc = cJSON_ParseWithLength(body, len);
	const cJSON *rj = cJSON_GetObjectItemCaseSensitive(ready_doc, "ready");
	/* 200 is ready and 503 is not, and the body must say the same: anything else is no sidecar's answer */
	if ((st != 200 && st != 503) || !cJSON_IsBool(rj) || cJSON_IsTrue(rj) != (st == 200)) {
		sk_err_set(&err, EPROTO, "GET %s/readyz: status %d with a body that is not the sidecar's", o->url, st);
		goto fail;
	}
	bool ready = cJSON_IsTrue(rj);
	const char *reason = jstr(ready_doc, "reason");
	free(body);
	body = NULL;

	if ((st = sk_status_get(o->url, "/metrics", o->timeout_ms, &body, &len, &err)) < 0)
		goto fail;
	if (st != 200) {
		sk_err_set(&err, EPROTO, "GET %s/metrics: status %d", o->url, st);
		goto fail;
	}
	if (sk_status_parse_metrics(body, len, &m, &err) < 0) {
		sk_err_prefix(&err, "%s", o->url);
		goto fail;
	}
	free(body);
	body = NULL;

	(void)snprintf(path, sizeof(path), "/denials?limit=%zu", o->limit);
	if ((st = sk_status_get(o->url, path, o->timeout_ms, &body, &len, &err)) < 0)
		goto fail;
	denials = st == 200 ? cJSON_ParseWithLength(body, len) : NULL;
	if (!cJSON_IsArray(denials)) {
		sk_err_set(&err, EPROTO, "GET %s%s: status %d, not a JSON array", o->url, path, st);
		goto fail;
	}
	if (o->json) {
		if (print_json(out, o->url, ready, reason, &m, denials) < 0) {
			sk_err_sys(&err, ENOMEM, "status");
			goto fail;
		}
	} else {
		print_text(out, o->url, ready, reason, &m, denials, o->limit);
	}
	ex = ready ? SK_EXIT_OK : SK_EXIT_FAIL;
	goto out;
fail:
	(void)fprintf(err_out, "stockade-policy status: %s\n", err.msg);
out:
	free(body);
	cJSON_Delete(ready_doc);
	cJSON_Delete(denials);
	return ex;
}

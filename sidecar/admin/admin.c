/* sidecar/admin/admin.c — see admin.h. */
#include "sidecar/admin/admin.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "sidecar/core/budget.h"
#include "sidecar/core/denials.h"
#include "common/http1.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/net.h"

/* ---- request head parsing (pure) ---- */

/* Long enough to tell "a method we do not serve" (405 after parsing) from "too long to be one" (E2BIG). */
#define ADMIN_METHOD_SCAN 64

int sk_admin_parse_head(const char *buf, size_t len, struct sk_admin_request *req)
{
	const uint8_t *p = (const uint8_t *)buf;
	struct sk_http1_request_line rl;

	/* The request line is judged as soon as it is visibly wrong, before the head completes. */
	switch (sk_http1_request_line(p, len, ADMIN_METHOD_SCAN, &rl)) {
	case SK_HTTP1_OK: break;
	case SK_HTTP1_NEED_MORE: return 0;
	default: return -EINVAL;
	}
	if (rl.method_len >= sizeof(req->method) || rl.target_len >= sizeof(req->target))
		return -E2BIG;
	if (rl.target[0] != '/')
		return -EINVAL;   /* origin-form only: the admin server is nobody's proxy */
	size_t pos = rl.len;
	for (;;) {
		struct sk_http1_field f;
		switch (sk_http1_field_line(p + pos, len - pos, &f)) {
		case SK_HTTP1_OK: break;
		case SK_HTTP1_NEED_MORE: return 0;
		default: return -EINVAL;
		}
		pos += f.len;
		if (f.end)
			break;
	}
	memcpy(req->method, buf, rl.method_len);
	req->method[rl.method_len] = '\0';
	memcpy(req->target, rl.target, rl.target_len);
	req->target[rl.target_len] = '\0';
	return (int)pos;
}

/* ---- routing (pure) ---- */

static int set_body(struct sk_admin_response *r, int status, const char *reason, const char *ctype,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int set_body(struct sk_admin_response *r, int status, const char *reason, const char *ctype,
		    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *b = NULL;
	int n = vasprintf(&b, fmt, ap);
	va_end(ap);
	memset(r, 0, sizeof(*r));
	r->status = status;
	r->reason = reason;
	r->content_type = ctype;
	if (n < 0)
		return -ENOMEM;
	r->body = b;
	r->body_len = (size_t)n;
	return 0;
}

void sk_admin_error_response(int status, struct sk_admin_response *resp)
{
	static const struct {
		int status;
		const char *reason, *text;
	} canned[] = {
		{ 400, "Bad Request", "malformed request\n" },
		{ 404, "Not Found", "no such endpoint; try /healthz /readyz /metrics /denials /ca.pem\n" },
		{ 405, "Method Not Allowed", "the admin port is read-only: GET or HEAD\n" },
		{ 408, "Request Timeout", "request not received in time\n" },
		{ 414, "URI Too Long", "request target too long\n" },
		{ 431, "Request Header Fields Too Large", "request head over 8 KiB\n" },
		{ 503, "Service Unavailable", "too many admin connections\n" },
	};
	size_t i = 0;
	while (i < SK_ARRAY_SIZE(canned) - 1 && canned[i].status != status)
		i++;
	if (set_body(resp, canned[i].status, canned[i].reason, "text/plain; charset=utf-8", "%s", canned[i].text) < 0)
		resp->body = NULL;
	resp->allow_header = status == 405;
}

/* Parses the query of /denials: only `limit=N` (0..capacity, default 256) is understood; other keys are
 * ignored so probes with cache-busting parameters work. Returns false on a malformed limit. */
static bool parse_limit(const char *query, size_t *limit)
{
	*limit = SK_ADMIN_DENIALS_DEFAULT;
	while (query && *query) {
		const char *amp = strchr(query, '&');
		size_t n = amp ? (size_t)(amp - query) : strlen(query);
		if (n > 6 && strncmp(query, "limit=", 6) == 0) {
			size_t v = 0;
			for (size_t i = 6; i < n; i++) {
				if (query[i] < '0' || query[i] > '9' || i > 12)
					return false;
				v = v * 10 + (size_t)(query[i] - '0');
			}
			*limit = v;
		} else if (n == 6 && strncmp(query, "limit=", 6) == 0) {
			return false;
		}
		query = amp ? amp + 1 : NULL;
	}
	return true;
}

int sk_admin_handle(const struct sk_admin_view *v, const char *method, const char *target,
		    struct sk_admin_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		sk_admin_error_response(405, resp);
		return resp->body ? 0 : -ENOMEM;
	}
	char path[sizeof(((struct sk_admin_request *)0)->target)];
	(void)snprintf(path, sizeof(path), "%s", target);
	char *q = strchr(path, '?');
	if (q)
		*q++ = '\0';

	if (strcmp(path, "/healthz") == 0) {
		uint64_t age = 0;
		if (v->health && sk_health_alive(v->health, v->now_ms, &age))
			return set_body(resp, 200, "OK", "text/plain; charset=utf-8", "ok\n");
		return set_body(resp, 503, "Service Unavailable", "text/plain; charset=utf-8",
				"event loop heartbeat stale: last beat %llu ms ago\n", (unsigned long long)age);
	}
	if (strcmp(path, "/readyz") == 0) {
		struct sk_ready_input in = v->ready;
		in.policy = v->policy;
		char *json = NULL;
		size_t len = 0;
		bool ready = sk_ready_check(&in, &json, &len);
		if (!json)
			return -ENOMEM;
		resp->status = ready ? 200 : 503;
		resp->reason = ready ? "OK" : "Service Unavailable";
		resp->content_type = "application/json";
		resp->body = json;
		resp->body_len = len;
		return 0;
	}
	if (strcmp(path, "/metrics") == 0) {
		struct sk_strbuf b = { 0 };
		if (sk_metrics_render(v->metrics, v->policy, &b) < 0 ||
		    (v->budgets && sk_budget_render(v->budgets, v->now_ms, &b) < 0)) {
			sk_strbuf_free(&b);
			return -ENOMEM;
		}
		if (!(resp->body = sk_strbuf_steal(&b, &resp->body_len)))
			return -ENOMEM;
		resp->status = 200;
		resp->reason = "OK";
		resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
		return 0;
	}
	if (strcmp(path, "/denials") == 0) {
		size_t limit;
		if (!parse_limit(q, &limit))
			return set_body(resp, 400, "Bad Request", "text/plain; charset=utf-8",
					"limit must be a non-negative integer\n");
		if (sk_denials_render(v->denials, limit, &resp->body, &resp->body_len) < 0)
			return -ENOMEM;
		resp->status = 200;
		resp->reason = "OK";
		resp->content_type = "application/json";
		return 0;
	}
	/* the CA certificate only, never its key: public by nature, the agent's trust store takes it from here */
	if (strcmp(path, "/ca.pem") == 0 && v->ca_pem) {
		if (!(resp->body = malloc(v->ca_pem_len ? v->ca_pem_len : 1)))
			return -ENOMEM;
		memcpy(resp->body, v->ca_pem, v->ca_pem_len);
		resp->body_len = v->ca_pem_len;
		resp->status = 200;
		resp->reason = "OK";
		resp->content_type = "application/x-pem-file";
		return 0;
	}
	sk_admin_error_response(404, resp);
	return resp->body ? 0 : -ENOMEM;
}

int sk_admin_serialize(const struct sk_admin_response *resp, bool head_only, char **out, size_t *len)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
			 resp->status, resp->reason, resp->content_type, resp->body_len,
			 resp->allow_header ? "Allow: GET, HEAD\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	size_t blen = head_only || !resp->body ? 0 : resp->body_len;
	char *b = malloc((size_t)n + blen + 1);
	if (!b)
		return -ENOMEM;
	memcpy(b, head, (size_t)n);
	if (blen)
		memcpy(b + n, resp->body, blen);
	b[(size_t)n + blen] = '\0';
	*out = b;
	*len = (size_t)n + blen;
	return 0;
}

/* ---- socket side ---- */

struct admin_conn {
	struct sk_admin *srv;
	struct sk_io io;
	struct sk_timer deadline;
	struct admin_conn *prev, *next;
	size_t in_len;
	char *out;        /* response being written; NULL while reading */
	size_t out_len, out_off;
	char in[SK_ADMIN_HEAD_MAX];
};

struct sk_admin {
	struct sk_loop *loop;
	struct sk_listener ls;          /* net.h: backs off when out of descriptors */
	sk_admin_gather_fn gather;
	void *ctx;
	struct admin_conn *conns;
	size_t n_conns;
};

static void conn_close(struct admin_conn *c)
{
	struct sk_admin *a = c->srv;
	sk_loop_del(a->loop, &c->io);
	sk_timer_cancel(a->loop, &c->deadline);
	close(c->io.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	a->n_conns--;
	free(c->out);
	free(c);
}

/* Writes what it can; closes the connection when everything is out or on an error. */
static void conn_flush(struct admin_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->io.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (sk_loop_mod(c->srv->loop, &c->io, EPOLLOUT, NULL) < 0)
				conn_close(c);
			return;
		}
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	shutdown(c->io.fd, SHUT_WR);
	conn_close(c);
}

static void conn_respond(struct admin_conn *c, struct sk_admin_response *resp, bool head_only)
{
	int r = sk_admin_serialize(resp, head_only, &c->out, &c->out_len);
	free(resp->body);
	resp->body = NULL;
	if (r < 0) {
		conn_close(c);
		return;
	}
	c->out_off = 0;
	conn_flush(c);
}

static void conn_error(struct admin_conn *c, int status)
{
	struct sk_admin_response resp;
	sk_admin_error_response(status, &resp);
	conn_respond(c, &resp, false);
}

static void conn_request(struct admin_conn *c, const struct sk_admin_request *req)
{
	struct sk_admin *a = c->srv;
	struct sk_admin_view v;
	memset(&v, 0, sizeof(v));
	a->gather(a->ctx, &v);
	struct sk_admin_response resp;
	if (sk_admin_handle(&v, req->method, req->target, &resp) < 0) {
		free(resp.body);
		conn_close(c);
		return;
	}
	conn_respond(c, &resp, strcmp(req->method, "HEAD") == 0);
}

static void conn_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct admin_conn *c = io->ctx;
	if (c->out) {
		if (events & (EPOLLERR | EPOLLHUP))
			conn_close(c);
		else
			conn_flush(c);
		return;
	}
	for (;;) {
		if (c->in_len == sizeof(c->in)) {
			conn_error(c, 431);
			return;
		}
		ssize_t n = recv(c->io.fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {  /* peer gave up or reset: nobody to answer */
			conn_close(c);
			return;
		}
		c->in_len += (size_t)n;
		struct sk_admin_request req;
		int r = sk_admin_parse_head(c->in, c->in_len, &req);
		if (r > 0) {
			conn_request(c, &req);
			return;
		}
		if (r == -E2BIG) {
			conn_error(c, 414);
			return;
		}
		if (r < 0) {
			conn_error(c, 400);
			return;
		}
	}
}

static void conn_deadline(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct admin_conn *c = t->ctx;
	if (c->out) {  /* a reader too slow to take the response: drop it */
		conn_close(c);
		return;
	}
	/* Slowloris on the probe port: answer 408 best-effort (one non-blocking send) and close. */
	static const char msg[] = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	(void)!send(c->io.fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	conn_close(c);
}

static void admin_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *peer)
{
	(void)peer;
	struct sk_admin *a = ls->ctx;
	struct sk_loop *l = a->loop;
	if (a->n_conns >= SK_ADMIN_MAX_CONNS) {
		static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
					   "Connection: close\r\n\r\n";
		(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return;
	}
	struct admin_conn *c = malloc(sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = a;
	c->in_len = 0;
	c->out = NULL;
	c->out_len = c->out_off = 0;
	c->prev = NULL;
	c->next = a->conns;
	sk_io_init(&c->io, fd, conn_io, c);
	sk_timer_init(&c->deadline, conn_deadline, c);
	if (sk_loop_add(l, &c->io, EPOLLIN | EPOLLRDHUP, NULL) < 0 ||
	    sk_timer_arm(l, &c->deadline, SK_ADMIN_DEADLINE_MS) < 0) {
		sk_loop_del(l, &c->io);
		close(fd);
		free(c);
		return;
	}
	if (a->conns)
		a->conns->prev = c;
	a->conns = c;
	a->n_conns++;
}

int sk_admin_start(struct sk_loop *l, const struct sockaddr *addr, socklen_t addrlen, sk_admin_gather_fn gather,
		   void *ctx, struct sk_admin **out, struct sk_err *err)
{
	struct sockaddr_storage ss;
	if (addrlen > sizeof(ss) || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return sk_err_set(err, EAFNOSUPPORT, "admin: address family %d", addr->sa_family);
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, addr, addrlen);
	struct sk_addr at;
	uint16_t port = 0;
	sk_addr_from_sockaddr(&ss, &at, &port);
	struct sk_admin *a = calloc(1, sizeof(*a));
	if (!a)
		return sk_err_sys(err, ENOMEM, "admin: allocate");
	a->loop = l;
	a->gather = gather;
	a->ctx = ctx;
	/* On "::" the listener is dual-stack: one socket serves the kubelet's probe whichever family the
	 * pod IP has (net.h). */
	int r = sk_listener_open(&a->ls, l, &at, port, 64, "admin", admin_accept, a, err);
	if (r < 0) {
		free(a);
		return r;
	}
	*out = a;
	return 0;
}

void sk_admin_free(struct sk_admin *a)
{
	if (!a)
		return;
	for (struct admin_conn *c = a->conns, *next; c; c = next) {
		next = c->next;
		conn_close(c);
	}
	sk_listener_close(&a->ls);
	free(a);
}

int sk_admin_fd(const struct sk_admin *a)
{
	return sk_listener_ok(&a->ls) ? a->ls.io.fd : -1;
}

/* injector/server.c — see server.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/err.h"
#include "common/log.h"
#include "injector/http.h"
#include "injector/review.h"
#include "injector/server.h"
#include "injector/tls.h"

struct server {
	const struct sk_server_cfg *cfg;
	pthread_mutex_t lock;   /* guards the queue and stopping */
	pthread_cond_t cond;
	int *queue;             /* accepted fds waiting for a worker, a ring of cfg->max_queue */
	size_t qhead, qlen;
	bool stopping;
};

struct conn {
	struct server *srv;
	int fd;
	SSL *ssl;
	char *buf;
	size_t len, cap;
	uint64_t deadline;      /* CLOCK_MONOTONIC ms */
	char peer[64];
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- addresses ---- */

int sk_server_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, struct sk_err *err)
{
	char host[64] = "";
	const char *port_s = s;
	size_t n = strlen(s);
	if (n == 0 || n > 80)
		return sk_err_set(err, EINVAL, "listen address '%.80s': expected PORT, HOST:PORT or [V6]:PORT", s);
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
			return sk_err_set(err, EINVAL, "listen address '%s': expected [V6]:PORT", s);
		memcpy(host, s + 1, (size_t)(close - s - 1));
		port_s = close + 2;
	} else if (strchr(s, ':')) {
		const char *colon = strchr(s, ':');
		if (strchr(colon + 1, ':') || (size_t)(colon - s) >= sizeof(host))
			return sk_err_set(err, EINVAL, "listen address '%s': IPv6 needs brackets, e.g. [::1]:8443", s);
		memcpy(host, s, (size_t)(colon - s));
		port_s = colon + 1;
	}
	char *end = NULL;
	unsigned long port = strtoul(port_s, &end, 10);
	if (port_s[0] < '0' || port_s[0] > '9' || *end || port == 0 || port > 65535)
		return sk_err_set(err, EINVAL, "listen address '%s': port must be 1..65535", s);
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	if (!host[0] || inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		if (!host[0])
			s6->sin6_addr = in6addr_any;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
	} else if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof(*s4);
	} else {
		return sk_err_set(err, EINVAL, "listen address '%s': '%s' is not a numeric address", s, host);
	}
	return 0;
}

static void peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
			port = ntohs(a->sin6_port);
		} else if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
			port = ntohs(a->sin_port);
		}
	}
	(void)snprintf(buf, len, "%s:%u", host, port);
}

/* ---- one connection ---- */

enum { IO_OK = 0, IO_TIMEOUT = -ETIMEDOUT, IO_EOF = -ECONNRESET, IO_BROKEN = -EPROTO };

/* After an SSL call returned ret <= 0: waits for what it wants until the deadline. IO_OK to call again. */
static int io_wait(struct conn *c, int ret)
{
	int e = SSL_get_error(c->ssl, ret);
	short ev;
	if (e == SSL_ERROR_WANT_READ)
		ev = POLLIN;
	else if (e == SSL_ERROR_WANT_WRITE)
		ev = POLLOUT;
	else {
		ERR_clear_error();
		return e == SSL_ERROR_ZERO_RETURN ? IO_EOF : IO_BROKEN;
	}
	for (;;) {
		uint64_t now = now_ms();
		if (now >= c->deadline)
			return IO_TIMEOUT;
		struct pollfd p = { .fd = c->fd, .events = ev };
		int n = poll(&p, 1, (int)(c->deadline - now));
		if (n > 0)
			return IO_OK;
		if (n < 0 && errno != EINTR)
			return IO_BROKEN;
	}
}

static int handshake(struct conn *c)
{
	for (;;) {
		int ret = SSL_accept(c->ssl);
		if (ret == 1)
			return IO_OK;
		int r = io_wait(c, ret);
		if (r < 0)
			return r;
	}
}

/* Reads what is there (at least one byte) into buf, growing it to hold `want` bytes in all. */
static int read_more(struct conn *c, size_t want)
{
	if (want > c->cap) {
		char *nb = realloc(c->buf, want);
		if (!nb)
			return -ENOMEM;
		c->buf = nb;
		c->cap = want;
	}
	for (;;) {
		int ret = SSL_read(c->ssl, c->buf + c->len, (int)(c->cap - c->len));
		if (ret > 0) {
			c->len += (size_t)ret;
			return IO_OK;
		}
		int r = io_wait(c, ret);
		if (r < 0)
			return r;
	}
}

static int write_all(struct conn *c, const char *data, size_t n)
{
	while (n) {
		int ret = SSL_write(c->ssl, data, (int)(n > 1u << 30 ? 1u << 30 : n));
		if (ret > 0) {
			data += ret;
			n -= (size_t)ret;
			continue;
		}
		int r = io_wait(c, ret);
		if (r < 0)
			return r;
	}
	return IO_OK;
}

static int respond(struct conn *c, int status, const char *ctype, const char *body, size_t blen, bool keep,
		   bool head_only)
{
	char head[256];
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Cache-Control: no-store\r\nConnection: %s\r\n\r\n", status, sk_http_reason(status), ctype,
			 blen, keep ? "keep-alive" : "close");
	int r = write_all(c, head, (size_t)n);
	if (r == IO_OK && blen && !head_only)
		r = write_all(c, body, blen);
	return r;
}

static int respond_text(struct conn *c, int status, const char *text, bool keep, bool head_only)
{
	return respond(c, status, "text/plain; charset=utf-8", text, strlen(text), keep, head_only);
}

/* One request whose head and body are in buf. Returns the write's result. */
static int dispatch(struct conn *c, const struct sk_http_req *req, const char *body, bool keep)
{
	const struct sk_server_cfg *cfg = c->srv->cfg;
	bool get = req->method == SK_HTTP_GET || req->method == SK_HTTP_HEAD;
	bool head_only = req->method == SK_HTTP_HEAD;
	if (!strcmp(req->path, "/healthz")) {
		if (!get)
			return respond_text(c, 405, "GET /healthz\n", keep, false);
		return respond_text(c, 200, "ok\n", keep, head_only);
	}
	if (!strcmp(req->path, "/readyz")) {
		if (!get)
			return respond_text(c, 405, "GET /readyz\n", keep, false);
		if (!sk_tls_valid_now(cfg->tls))
			return respond_text(c, 503, "the serving certificate is expired or not yet valid\n", keep,
					    head_only);
		return respond_text(c, 200, "ok\n", keep, head_only);
	}
	bool policy = !strcmp(req->path, "/validate-policy");
	/* /mutate/pod-security/LEVEL: the webhook registered for namespaces enforcing that Pod Security level */
	const char *ps = !strcmp(req->path, "/mutate/pod-security/baseline")     ? "baseline"
			 : !strcmp(req->path, "/mutate/pod-security/restricted") ? "restricted"
										  : NULL;
	if (!policy && !ps && strcmp(req->path, "/mutate"))
		return respond_text(c, 404, "not found (POST /mutate, POST /mutate/pod-security/{baseline,restricted}, "
				    "POST /validate-policy, GET /healthz, GET /readyz)\n", keep, head_only);
	if (req->method != SK_HTTP_POST)
		return respond_text(c, 405, policy ? "POST /validate-policy with an AdmissionReview\n" :
				    "POST /mutate with an AdmissionReview\n", keep, head_only);
	if (!req->json)
		return respond_text(c, 415, "Content-Type: application/json expected\n", keep, false);

	struct sk_review_out out;
	struct sk_err err = { 0 };
	int r = policy ? sk_review_handle_policy(body, req->content_length, cfg->review, &out, &err) :
			 sk_review_handle_pod_security(body, req->content_length, cfg->review, ps, &out, &err);
	if (r < 0) {
		int status = r == -EINVAL ? 400 : r == -EFBIG ? 413 : 500;
		sk_log(SK_LOG_WARN, "%s: POST %s: %d: %s", c->peer, req->path, status, err.msg);
		char msg[SK_ERR_MSG_MAX + 2];
		(void)snprintf(msg, sizeof(msg), "%s\n", err.msg);
		return respond_text(c, status, msg, keep && status != 500, false);
	}
	const char *what = policy ? "policy" : "pod";
	if (out.verdict == SK_REVIEW_REFUSED)
		sk_log(SK_LOG_INFO, "admission %s: %s %s/%s refused: %s", out.uid, what, out.ns, out.pod, out.reason);
	else
		sk_log(out.verdict == SK_REVIEW_SKIPPED ? SK_LOG_DEBUG : SK_LOG_INFO, "admission %s: %s %s/%s %s",
		       out.uid, what, out.ns, out.pod,
		       policy && out.verdict == SK_REVIEW_UNCHANGED ? "valid" : sk_review_verdict_name(out.verdict));
	r = respond(c, 200, "application/json", out.body, out.body_len, keep, false);
	sk_review_out_free(&out);
	return r;
}

/* True when another connection waits for a worker or the server stops: a kept-alive one then yields. */
static bool wanted_elsewhere(struct server *srv)
{
	pthread_mutex_lock(&srv->lock);
	bool w = srv->qlen > 0 || srv->stopping;
	pthread_mutex_unlock(&srv->lock);
	return w;
}

static void serve(struct conn *c)
{
	const struct sk_server_cfg *cfg = c->srv->cfg;
	c->deadline = now_ms() + cfg->request_timeout_ms;
	int r = handshake(c);
	if (r < 0) {
		sk_log(SK_LOG_DEBUG, "%s: TLS handshake: %s", c->peer, r == IO_TIMEOUT ? "timed out" : "failed");
		return;
	}
	for (uint32_t nreq = 0; nreq < cfg->max_requests; nreq++) {
		if (nreq > 0 && c->len == 0) {
			/* between requests: wait for the next one's first byte, then its own deadline */
			if (cfg->idle_timeout_ms == 0 || wanted_elsewhere(c->srv))
				return;
			c->deadline = now_ms() + cfg->idle_timeout_ms;
			if (read_more(c, SK_HTTP_MAX_HEAD) < 0)
				return;
		}
		c->deadline = now_ms() + cfg->request_timeout_ms;
		struct sk_http_req req;
		int h;
		while ((h = sk_http_parse(c->buf, c->len, &req)) == 0) {
			if ((r = read_more(c, c->len < SK_HTTP_MAX_HEAD ? SK_HTTP_MAX_HEAD : c->len + 1)) < 0) {
				if (r == IO_TIMEOUT && c->len)
					(void)respond_text(c, 408, "request head too slow\n", false, false);
				return;
			}
		}
		if (h < 0) {
			sk_log(SK_LOG_DEBUG, "%s: bad request head: %d", c->peer, -h);
			(void)respond_text(c, -h, "malformed request\n", false, false);
			return;
		}
		if (req.content_length > cfg->review->max_body) {
			char msg[96];
			(void)snprintf(msg, sizeof(msg), "body of %zu bytes, more than the %zu allowed\n", req.content_length,
				 cfg->review->max_body);
			sk_log(SK_LOG_WARN, "%s: %s %s: 413: %.*s", c->peer, req.method == SK_HTTP_POST ? "POST" : "?",
			       req.path, (int)strlen(msg) - 1, msg);
			(void)respond_text(c, 413, msg, false, false);
			return;
		}
		size_t total = req.head_len + req.content_length;
		while (c->len < total) {
			if ((r = read_more(c, total)) < 0) {
				if (r == IO_TIMEOUT)
					(void)respond_text(c, 408, "request body too slow\n", false, false);
				return;
			}
		}
		bool keep = req.keep_alive && nreq + 1 < cfg->max_requests && cfg->idle_timeout_ms > 0;
		if (dispatch(c, &req, c->buf + req.head_len, keep) < 0 || !keep)
			return;
		/* a pipelined next request stays in the buffer */
		memmove(c->buf, c->buf + total, c->len - total);
		c->len -= total;
	}
}

static void serve_fd(struct server *srv, int fd)
{
	struct conn c = { .srv = srv, .fd = fd };
	peer_name(fd, c.peer, sizeof(c.peer));
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	SSL_CTX *ctx = sk_tls_ctx(srv->cfg->tls);
	c.ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	if (c.ssl && SSL_set_fd(c.ssl, fd) == 1) {
		serve(&c);
		/* one close_notify, not waited for: the peer may already be gone */
		if (SSL_is_init_finished(c.ssl))
			(void)SSL_shutdown(c.ssl);
	} else {
		sk_log(SK_LOG_ERROR, "%s: TLS: out of memory", c.peer);
	}
	ERR_clear_error();
	SSL_free(c.ssl);
	free(c.buf);
	close(fd);
}

static void *worker(void *arg)
{
	struct server *srv = arg;
	for (;;) {
		pthread_mutex_lock(&srv->lock);
		while (!srv->qlen && !srv->stopping)
			pthread_cond_wait(&srv->cond, &srv->lock);
		if (!srv->qlen) {
			pthread_mutex_unlock(&srv->lock);
			return NULL;
		}
		int fd = srv->queue[srv->qhead];
		srv->qhead = (srv->qhead + 1) % srv->cfg->max_queue;
		srv->qlen--;
		pthread_mutex_unlock(&srv->lock);
		serve_fd(srv, fd);
	}
}

/* ---- accepting ---- */

static int open_listener(const struct sk_server_cfg *cfg, struct sk_err *err)
{
	int fd = socket(cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sk_err_sys(err, errno, "listen: socket");
	int one = 1, zero = 0;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cfg->addr.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  /* dual stack on [::] */
	if (bind(fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		close(fd);
		return sk_err_sys(err, e, "listen: bind");
	}
	return fd;
}

static void accept_all(struct server *srv, int lfd, uint64_t *backoff_until)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
				return;
			/* out of descriptors or memory: stop polling the listener for a moment rather than spin */
			sk_log(SK_LOG_WARN, "accept: %s", strerror(errno));
			*backoff_until = now_ms() + 100;
			return;
		}
		pthread_mutex_lock(&srv->lock);
		bool full = srv->qlen == srv->cfg->max_queue;
		if (!full) {
			srv->queue[(srv->qhead + srv->qlen) % srv->cfg->max_queue] = fd;
			srv->qlen++;
			pthread_cond_signal(&srv->cond);
		}
		pthread_mutex_unlock(&srv->lock);
		if (full) {
			/* every worker busy and the queue full: refusing now is better than a late answer */
			sk_log(SK_LOG_WARN, "accept: %u connections waiting already; closing a new one",
			       srv->cfg->max_queue);
			close(fd);
		}
	}
}

int sk_server_run(const struct sk_server_cfg *cfg, int stop_fd, struct sk_err *err)
{
	struct server srv = { .cfg = cfg };
	pthread_t *threads = calloc(cfg->threads, sizeof(*threads));
	srv.queue = calloc(cfg->max_queue, sizeof(*srv.queue));
	int lfd = -1, r = 0;
	uint32_t started = 0;
	if (!threads || !srv.queue) {
		r = sk_err_set(err, ENOMEM, "server: out of memory");
		goto out;
	}
	if ((lfd = open_listener(cfg, err)) < 0) {
		r = lfd;
		goto out;
	}
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	for (; started < cfg->threads; started++) {
		int e = pthread_create(&threads[started], NULL, worker, &srv);
		if (e) {
			r = sk_err_sys(err, e, "server: start worker %u", started);
			break;
		}
	}
	if (r == 0) {
		char desc[384];
		sk_tls_describe(cfg->tls, desc, sizeof(desc));
		sk_log(SK_LOG_INFO, "serving HTTPS with %u threads; certificate %s", cfg->threads, desc);
	}
	uint64_t next_reload = now_ms() + cfg->reload_ms, backoff_until = 0;
	while (r == 0) {
		uint64_t now = now_ms();
		struct pollfd p[2] = { { .fd = stop_fd, .events = POLLIN },
				       { .fd = now < backoff_until ? -1 : lfd, .events = POLLIN } };
		int wait = now >= next_reload ? 0 : (int)(next_reload - now);
		if (now < backoff_until && (int)(backoff_until - now) < wait)
			wait = (int)(backoff_until - now);
		int n = poll(p, 2, wait);
		if (n < 0 && errno != EINTR) {
			r = sk_err_sys(err, errno, "server: poll");
			break;
		}
		if (n > 0 && p[0].revents)
			break;
		if (now_ms() >= next_reload) {
			struct sk_err e = { 0 };
			int rr = sk_tls_maybe_reload(cfg->tls, &e);
			if (rr > 0) {
				char desc[384];
				sk_tls_describe(cfg->tls, desc, sizeof(desc));
				sk_log(SK_LOG_INFO, "serving certificate reloaded: %s", desc);
			} else if (rr < 0) {
				sk_log(SK_LOG_WARN, "serving certificate changed but does not load (still serving the "
				       "previous one): %s", e.msg);
			}
			next_reload = now_ms() + cfg->reload_ms;
		}
		if (n > 0 && p[1].revents)
			accept_all(&srv, lfd, &backoff_until);
	}
	/* stop: no new connections; workers finish what they hold and what is queued, each within its deadlines */
	close(lfd);
	lfd = -1;
	pthread_mutex_lock(&srv.lock);
	srv.stopping = true;
	pthread_cond_broadcast(&srv.cond);
	pthread_mutex_unlock(&srv.lock);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	pthread_cond_destroy(&srv.cond);
	pthread_mutex_destroy(&srv.lock);
out:
	if (lfd >= 0)
		close(lfd);
	free(threads);
	free(srv.queue);
	return r;
}

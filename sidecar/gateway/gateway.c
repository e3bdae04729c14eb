/* sidecar/gateway/gateway.c — the credential-injecting API gateway; see gateway.h. Owns the agent side: listeners,
 * the connection state machine, judging a request head (routing, guard, rate limit, secret) and the
 * gateway's own answers, the audit line and metrics sample per request. The upstream side is gw_curl.c.
 *
 * Agent connection states (one struct gw_conn per accepted connection):
 *   HEAD    → FORWARD  a complete, allowed request: an easy handle joins the multi
 *   HEAD    → LOCAL    the gateway answers itself (4xx/5xx): written, then LINGER
 *   HEAD    → (freed)  EOF / head timeout with nothing read
 *   FORWARD → FLUSH    curl reports the transfer done: the rest of the response is written
 *   FORWARD → LOCAL    the transfer failed before any response byte was sent (502/504/400)
 *   FORWARD → (freed)  the agent went away, or the transfer failed after the response began
 *   FLUSH   → HEAD     everything written, keep-alive (pipelined bytes are parsed at once)
 *   FLUSH   → (freed)  everything written, close
 *   LOCAL   → LINGER   answer written: write side shut, the unread request is drained for a moment so the
 *                      agent reads the answer instead of a reset
 *   LINGER  → (freed)  EOF, 1 MiB drained, or the linger timer
 *
 * Re-entrancy rule: curl calls read/write/header callbacks from inside curl_multi_socket_action and
 * curl_easy_pause; those callbacks only move bytes and set flags. Connections are freed, and handles
 * removed from the multi, only from loop callbacks after curl has returned. */
#include "sidecar/gateway/gateway.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "policy/policy.h"
#include "sidecar/core/audit.h"
#include "sidecar/gateway/conn.h"
#include "sidecar/gateway/curl.h"
#include "sidecar/gateway/guard.h"
#include "sidecar/gateway/http.h"
#include "sidecar/gateway/ratelimit.h"
#include "sidecar/core/secret_store.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/net.h"

static struct gw_api_state *api_state(struct sk_gateway *g, const char *name)
{
	for (struct gw_api_state *s = g->apis; s; s = s->next)
		if (!strcmp(s->name, name))
			return s;
	struct gw_api_state *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	(void)snprintf(s->name, sizeof(s->name), "%s", name);   /* fits: api names are [a-z0-9-]{1,63} (validate.c) */
	s->next = g->apis;
	g->apis = s;
	return s;
}

static const struct sk_api *find_api(const struct sk_policy *p, const char *name)
{
	for (size_t i = 0; p && i < p->n_apis; i++)
		if (p->apis[i].name && !strcmp(p->apis[i].name, name))
			return &p->apis[i];
	return NULL;
}


/* One audit line per request, through audit.c (its length caps, escaping, counters and batching, so the
 * gateway's lines keep their order against the proxy's): event "api" with api, method, path (query
 * values dropped) and status in place of the connection fields. Never a header value or a body. */
void gw_req_end(struct gw_conn *c, int status, const char *reason)
{
	if (c->audited)
		return;
	c->audited = true;
	struct sk_gateway *g = c->gw;
	uint64_t dur = sk_monotonic_ms() - c->t0_ms;
	const struct sk_audit_rec r = {
		.event = "api", .rule = -1, .api = c->api, .method = c->method, .path = c->path, .status = status,
		.decision = c->forwarded ? "allow" : "deny", .reason = reason ? reason : "ok",
		.bytes_in = c->bytes_in, .bytes_out = c->bytes_out, .duration_ms = dur,
	};
	sk_audit_emit(&g->sc->audit, &r);
	if (g->sc->metrics) {
		/* The label is a policy name or "unknown": an agent cannot grow the series set. */
		const char *label = find_api(g->sc->policy, c->api) ? c->api : "unknown";
		sk_metrics_api(g->sc->metrics, label, status, (double)dur / 1000.0);
	}
}

/* ---- agent connection plumbing -------------------------------------------------------------------------- */

static void conn_io(struct sk_loop *l, struct sk_io *io, uint32_t events);
static void conn_timer(struct sk_loop *l, struct sk_timer *t);
static int process_head(struct gw_conn *c);

void gw_set_interest(struct gw_conn *c)
{
	uint32_t ev = 0;
	size_t pending = c->out.len - c->out_off;
	if (c->st == GW_HEAD || c->st == GW_LINGER)
		ev |= EPOLLIN;
	if (c->st == GW_FORWARD && !c->body_done && !c->client_eof && c->in_len < GW_IN_CAP)
		ev |= EPOLLIN;
	if (pending)
		ev |= EPOLLOUT;
	if (ev != c->events) {
		c->events = ev;
		(void)sk_loop_mod(c->gw->sc->loop, &c->io, ev, NULL);
	}
}

void gw_conn_free(struct gw_conn *c)
{
	struct sk_gateway *g = c->gw;
	gw_detach_easy(c);
	sk_timer_cancel(g->sc->loop, &c->timer);
	sk_loop_del(g->sc->loop, &c->io);
	close(c->io.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->n_conns--;
	free(c->in);
	sk_strbuf_free(&c->out);
	free(c);
}

/* Writes queued bytes. Returns 0 (all or some written, or would block) or -1 when the agent is gone. */
int gw_flush_out(struct gw_conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t w = send(c->io.fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			c->client_err = true;
			return -1;
		}
		c->out_off += (size_t)w;
		c->bytes_in += (uint64_t)w;
	}
	if (c->out_off == c->out.len) {
		c->out.len = c->out_off = 0;
	} else if (c->out_off > GW_OUT_LOW) {
		memmove(c->out.p, c->out.p + c->out_off, c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	return 0;
}

/* The gateway's own answer: JSON error body, Connection: close; then LOCAL → LINGER. */
void gw_respond_local(struct gw_conn *c, int status, const char *msg, const char *reason, uint32_t retry_after)
{
	gw_detach_easy(c);
	c->out.len = c->out_off = 0;
	sk_gw_error_response(&c->out, status, msg, retry_after, strcmp(c->method, "HEAD") == 0);
	c->st = GW_LOCAL;
	c->keep_alive = false;
	gw_req_end(c, status, reason);
	(void)sk_timer_arm(c->gw->sc->loop, &c->timer, GW_LINGER_MS + c->gw->lim.head_timeout_ms);
	if (gw_flush_out(c) < 0) {
		gw_conn_free(c);
		return;
	}
	if (c->out.len == c->out_off) {
		/* Answer written: stop sending and drain what the agent still sends, so it reads our answer
		 * rather than a reset caused by unread bytes. */
		shutdown(c->io.fd, SHUT_WR);
		c->st = GW_LINGER;
		c->in_off = c->in_len = 0;
		(void)sk_timer_arm(c->gw->sc->loop, &c->timer, GW_LINGER_MS);
	}
	gw_set_interest(c);
}

/* After a response is complete and flushed: keep-alive → next request, else close. */
void gw_request_finished(struct gw_conn *c)
{
	gw_req_end(c, c->status, "ok");
	bool reuse = c->keep_alive && c->body_done && !c->client_eof && !c->resp_close && !c->client_err &&
		     !c->gw->draining;
	gw_detach_easy(c);
	if (!reuse) {
		gw_conn_free(c);
		return;
	}
	c->st = GW_HEAD;
	c->audited = c->forwarded = false;
	c->status = 0;
	c->head_sent = c->in_1xx = c->resp_chunked = c->resp_no_body = c->resp_close = false;
	c->send_paused = c->recv_paused = false;
	c->bytes_in = c->bytes_out = 0;
	c->fail_status = 0;
	c->fail_reason = NULL;
	c->fail_msg = NULL;
	c->method[0] = c->api[0] = c->path[0] = 0;
	(void)sk_timer_arm(c->gw->sc->loop, &c->timer, c->gw->lim.head_timeout_ms);
	gw_set_interest(c);
	if (c->in_len > c->in_off)
		(void)process_head(c);   /* a pipelined request is already here */
}

/* Judges a complete request head and either answers it or starts the transfer. Returns 1 when the head
 * is still incomplete (c untouched), 0 otherwise (c may have been freed). */
static int process_head(struct gw_conn *c)
{
	struct sk_gateway *g = c->gw;
	struct sk_gw_req req;
	enum sk_gw_head_verdict v = sk_gw_parse_head((const char *)c->in + c->in_off, c->in_len - c->in_off, &req);
	if (v == SK_GW_HEAD_NEED_MORE) {
		if (c->in_off && c->in_len == GW_IN_CAP) {
			memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		return 1;
	}
	c->t0_ms = sk_monotonic_ms();
	c->audited = false;
	if (req.method[0])
		(void)snprintf(c->method, sizeof(c->method), "%s", req.method);
	const struct sk_gw_answer *ans = sk_gw_head_answer(v);
	if (ans) {
		gw_respond_local(c, ans->status, ans->msg, ans->reason, 0);
		return 0;
	}
	const char *rest;
	size_t rest_len;
	int rr = sk_gw_route(req.target, req.target_len, c->api, &rest, &rest_len);
	if (rr == 0)
		sk_gw_audit_path(rest, rest_len, c->path, sizeof(c->path));
	else
		(void)snprintf(c->path, sizeof(c->path), "-");
	c->keep_alive = req.keep_alive;
	if (rr == -EINVAL) {
		c->api[0] = 0;
		gw_respond_local(c, 400, "request target must be /<api>/<path>", "bad_target", 0);
		return 0;
	}
	const struct sk_api *api = rr == 0 ? find_api(g->sc->policy, c->api) : NULL;
	if (!api) {
		if (rr != 0)
			c->api[0] = 0;
		gw_respond_local(c, 404, "unknown api", "unknown_api", 0);
		return 0;
	}
	/* rest borrows the agent's buffer, which has no NUL: memchr, never strcspn. */
	const char *qm = memchr(rest, '?', rest_len);
	size_t plen = qm ? (size_t)(qm - rest) : rest_len;
	if (sk_gw_check_path(rest, plen) < 0) {
		gw_respond_local(c, 400, "path not allowed (dot segments, ';', encoded '.', '/', '\\' or '%', "
			      "non-shortest UTF-8, control bytes or bad escapes)", "bad_path", 0);
		return 0;
	}
	struct gw_api_state *as = api_state(g, api->name);
	if (!as) {
		gw_respond_local(c, 500, "out of memory", "internal_error", 0);
		return 0;
	}
	/* TRACE would echo the injected key back; CONNECT would turn the gateway into a tunnel. */
	if (!strcmp(req.method, "TRACE") || !strcmp(req.method, "CONNECT")) {
		gw_respond_local(c, 405, "method not supported by the gateway", "method", 0);
		return 0;
	}
	bool drop_auth = false;
	if (api->caller_token_file) {
		const char *want = NULL, *got = NULL;
		size_t wl = 0, gl = 0;
		bool via_auth = false;
		struct sk_err err = { 0 };
		if (sk_secret_file_get(&as->token, api->caller_token_file, &want, &wl, &err) < 0) {
			sk_log(SK_LOG_ERROR, "gateway: api %s: caller token: %s", api->name, err.msg);
			gw_respond_local(c, 502, "caller token unavailable", "token_unreadable", 0);
			return 0;
		}
		if (!sk_gw_find_token(&req, &got, &gl, &via_auth) || !sk_gw_token_eq(got, gl, want, wl)) {
			gw_respond_local(c, 401, "missing or wrong caller token", "bad_token", 0);
			return 0;
		}
		drop_auth = via_auth;
	}
	if (!sk_gw_method_allowed(api, req.method)) {
		gw_respond_local(c, 403, "method not allowed for this api", "method", 0);
		return 0;
	}
	if (!sk_gw_path_allowed(api, rest, plen)) {
		gw_respond_local(c, 403, "path not allowed for this api", "path_prefix", 0);
		return 0;
	}
	uint32_t retry = 0;
	if (!sk_gw_bucket_take(&as->bucket, api->rate, api->burst, sk_monotonic_ms(), &retry)) {
		gw_respond_local(c, 429, "rate limit", "rate_limit", retry);
		return 0;
	}
	const char *secret = NULL;
	size_t slen = 0;
	struct sk_err err = { 0 };
	if (sk_secret_file_get(&as->secret, api->value_file, &secret, &slen, &err) < 0) {
		sk_log(SK_LOG_ERROR, "gateway: api %s: secret: %s", api->name, err.msg);
		gw_respond_local(c, 502, "api secret unavailable", "secret_unreadable", 0);
		return 0;
	}
	if (req.expect_continue && (req.chunked || req.content_length > 0))
		(void)sk_strbuf_put(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	/* The head is consumed; body bytes (if any) stay in c->in for read_cb. */
	c->in_off += req.head_len;
	if (gw_start_transfer(c, &req, api, rest, rest_len, secret, slen, drop_auth) < 0)
		return 0;
	if (c->out.len > c->out_off) {
		(void)gw_flush_out(c);   /* the 100 Continue; a failure shows as client_err in the next round */
		gw_set_interest(c);
	}
	return 0;
}

static void conn_read(struct gw_conn *c)
{
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	if (c->in_len == GW_IN_CAP && c->in_off) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	while (c->in_len < GW_IN_CAP) {
		ssize_t r = recv(c->io.fd, c->in + c->in_len, GW_IN_CAP - c->in_len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r < 0) {
			c->client_err = true;
			return;
		}
		if (r == 0) {
			c->client_eof = true;
			return;
		}
		c->in_len += (size_t)r;
	}
}

static void conn_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct gw_conn *c = io->ctx;
	struct sk_gateway *g = c->gw;
	if (events & (EPOLLERR | EPOLLHUP))
		c->client_err = true;
	if (!c->client_err && (events & EPOLLOUT)) {
		(void)gw_flush_out(c);
		if (!c->client_err && c->out.len == c->out_off) {
			if (c->st == GW_FLUSH) {
				gw_request_finished(c);
				return;
			}
			if (c->st == GW_LOCAL) {
				shutdown(c->io.fd, SHUT_WR);
				c->st = GW_LINGER;
				c->in_off = c->in_len = 0;
				(void)sk_timer_arm(g->sc->loop, &c->timer, GW_LINGER_MS);
			}
		}
	}
	if (!c->client_err && (events & EPOLLIN)) {
		if (c->st == GW_LINGER) {
			char sink[4096];
			ssize_t r;
			while ((r = recv(c->io.fd, sink, sizeof(sink), 0)) > 0)
				c->lingered += (size_t)r;
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) || c->lingered > GW_LINGER_DRAIN)
				gw_conn_free(c);
			return;
		}
		conn_read(c);
	}
	if (c->client_err) {
		if (c->st == GW_FORWARD || c->st == GW_FLUSH)
			gw_req_end(c, c->status ? c->status : 499, "client_gone");
		gw_conn_free(c);
		return;
	}
	switch (c->st) {
	case GW_HEAD:
		if (c->in_len > c->in_off && process_head(c) == 0)
			return;
		if (c->client_eof) {
			gw_conn_free(c);   /* nothing (or half a head) and gone: no request to answer or audit */
			return;
		}
		gw_set_interest(c);
		return;
	case GW_FORWARD: {
		bool unpause = false;
		if (c->send_paused && (c->in_len > c->in_off || c->client_eof)) {
			c->send_paused = false;
			unpause = true;
		}
		if (c->recv_paused && c->out.len - c->out_off < GW_OUT_LOW) {
			c->recv_paused = false;
			unpause = true;
		}
		if (unpause) {
			int bits = (c->send_paused ? CURLPAUSE_SEND : 0) | (c->recv_paused ? CURLPAUSE_RECV : 0);
			g->curl.easy_pause(c->easy, bits);
			if (c->client_err) {
				gw_req_end(c, c->status ? c->status : 499, "client_gone");
				gw_conn_free(c);
				return;
			}
		}
		gw_set_interest(c);
		gw_check_multi(g);   /* may free c */
		return;
	}
	default:
		gw_set_interest(c);
		return;
	}
}

static void conn_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct gw_conn *c = t->ctx;
	if (c->st == GW_HEAD && c->in_len > c->in_off) {
		gw_respond_local(c, 408, "request head not received in time", "head_timeout", 0);
		return;
	}
	gw_conn_free(c);   /* idle keep-alive, or a LOCAL/LINGER agent that does not read */
}

/* ---- listeners and life cycle --------------------------------------------------------------------------- */

static void gw_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *peer)
{
	(void)peer;
	struct sk_gateway *g = ls->ctx;
	struct sk_loop *l = g->sc->loop;
	if (g->n_conns >= g->lim.max_conns) {
		close(fd);
		return;
	}
	struct gw_conn *c = calloc(1, sizeof(*c));
	uint8_t *in = malloc(GW_IN_CAP);
	if (!c || !in) {
		free(c);
		free(in);
		close(fd);
		return;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->gw = g;
	c->in = in;
	c->st = GW_HEAD;
	c->events = EPOLLIN;
	c->t0_ms = sk_monotonic_ms();
	sk_io_init(&c->io, fd, conn_io, c);
	sk_timer_init(&c->timer, conn_timer, c);
	if (sk_loop_add(l, &c->io, EPOLLIN, NULL) < 0) {
		free(in);
		free(c);
		close(fd);
		return;
	}
	(void)sk_timer_arm(l, &c->timer, g->lim.head_timeout_ms);
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	g->n_conns++;
}

static int listen_on(struct sk_gateway *g, struct sk_listener *ls, int family, uint16_t port, struct sk_err *err)
{
	/* Loopback only: the agent shares the pod's loopback; nothing outside the pod may use the keys. */
	struct sk_addr a = sk_net_loopback(family);
	return sk_listener_open(ls, g->sc->loop, &a, port, 1024, "gateway", gw_accept, g, err);
}

int sk_gateway_start(struct sk_sidecar *sc, struct sk_gateway **out, struct sk_err *err)
{
	struct sk_gateway *g = calloc(1, sizeof(*g));
	if (!g)
		return sk_err_set(err, ENOMEM, "gateway: allocate");
	g->sc = sc;
	g->l4.io.fd = g->l6.io.fd = -1;
	sk_timer_init(&g->curl_timer, gw_curl_timer_fired, g);
	g->lim = sc->api_limits;
	int rc;
	uint16_t port = sc->policy->ports.api;
	if ((rc = listen_on(g, &g->l4, AF_INET, port, err)) < 0)
		goto fail;
	if ((rc = listen_on(g, &g->l6, AF_INET6, port, err)) < 0)
		goto fail;
	*out = g;
	return 0;
fail:
	sk_gateway_free(g);
	return rc;
}

void sk_gateway_stop_accepting(struct sk_gateway *g)
{
	if (!g)
		return;
	sk_listener_close(&g->l4);
	sk_listener_close(&g->l6);
	g->draining = true;
	/* Idle keep-alive connections (waiting for a head, nothing of one read) hold no work: their timer is
	 * brought forward to the next loop turn, where conn_timer closes them, so that what sk_gateway_active
	 * counts from then on is requests in flight. A half-read head may still become a request and is left
	 * to finish (or time out). */
	for (struct gw_conn *c = g->conns; c; c = c->next)
		if (c->st == GW_HEAD && c->in_len == c->in_off)
			(void)sk_timer_arm(g->sc->loop, &c->timer, 0);
}

size_t sk_gateway_active(const struct sk_gateway *g)
{
	return g ? g->n_conns : 0;
}

void sk_gateway_free(struct sk_gateway *g)
{
	if (!g)
		return;
	sk_gateway_stop_accepting(g);
	for (struct gw_conn *c = g->conns, *next; c; c = next) {
		next = c->next;
		if (c->st == GW_FORWARD || c->st == GW_FLUSH)
			gw_req_end(c, c->status ? c->status : 499, "shutdown");
		gw_conn_free(c);
	}
	gw_curl_close(g);
	while (g->apis) {
		struct gw_api_state *s = g->apis;
		g->apis = s->next;
		sk_secret_file_clear(&s->secret);
		sk_secret_file_clear(&s->token);
		free(s);
	}
	free(g);
}

/* The API gateway's entry in the sidecar's server list (core/server.h); main.c registers it. */
static void server_stop(void *s) { sk_gateway_stop_accepting(s); }
static size_t server_active(const void *s) { return sk_gateway_active(s); }
static void server_free(void *s) { sk_gateway_free(s); }
const struct sk_server_ops sk_server_api = { "api", server_stop, server_active, server_free };

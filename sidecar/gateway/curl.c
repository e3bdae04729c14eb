/* sidecar/gateway/curl.c — the upstream transfer on libcurl's multi; see gw_curl.h. */
#include "sidecar/gateway/curl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "policy/policy.h"
#include "sidecar/gateway/guard.h"
#include "sidecar/core/secret_store.h"

void gw_detach_easy(struct gw_conn *c)
{
	if (c->easy) {
		c->gw->curl.multi_remove_handle(c->gw->multi, c->easy);
		c->gw->curl.easy_cleanup(c->easy);
		c->easy = NULL;
	}
	for (struct curl_slist *s = c->hdrs; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));   /* one of them is the secret */
	if (c->hdrs)
		c->gw->curl.slist_free_all(c->hdrs);
	c->hdrs = NULL;
	size_t sl = c->redact.slen;
	sk_secret_redact_free(&c->redact);
	sk_secret_wipe_free(c->secret_copy, sl);
	c->secret_copy = NULL;
	sk_strbuf_free(&c->rhead);
}

/* ---- curl callbacks (flags and bytes only; see the re-entrancy rule at the top) -------------------------- */

/* Moves request body bytes from the agent buffer into curl's buffer. */
static size_t body_take(struct gw_conn *c, char *dst, size_t cap)
{
	size_t avail = c->in_len - c->in_off, made = 0;
	if (c->body_chunked) {
		size_t used = 0;
		int rc = sk_gw_chunked_decode(&c->chunk, c->in + c->in_off, avail, &used, (uint8_t *)dst, cap, &made);
		c->in_off += used;
		if (rc < 0) {
			c->fail_status = 400;
			c->fail_reason = "bad_chunked_body";
			return 0;
		}
		if (rc == 1)
			c->body_done = true;
	} else {
		size_t n = avail < cap ? avail : cap;
		if ((int64_t)n > c->body_left)
			n = (size_t)c->body_left;
		memcpy(dst, c->in + c->in_off, n);
		c->in_off += n;
		c->body_left -= (int64_t)n;
		made = n;
		if (c->body_left == 0)
			c->body_done = true;
	}
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	return made;
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct gw_conn *c = ud;
	if (c->client_err)
		return CURL_READFUNC_ABORT;
	if (c->body_done)
		return 0;
	size_t made = body_take(c, buf, size * nitems);
	if (c->fail_status)
		return CURL_READFUNC_ABORT;
	c->bytes_out += made;
	if (made || c->body_done)
		return made;
	if (c->client_eof) {
		c->fail_status = 400;
		c->fail_reason = "body_truncated";
		return CURL_READFUNC_ABORT;
	}
	/* Nothing from the agent yet: park the upload until its socket is readable again. */
	c->send_paused = true;
	gw_set_interest(c);
	return CURL_READFUNC_PAUSE;
}

/* Queues response body bytes for the agent (redacted, chunk-framed when chunked). */
static int queue_body(struct gw_conn *c, const uint8_t *d, size_t n, bool final)
{
	uint8_t tmp[16384 + SK_SECRET_MAX];   /* room for a chunk + what the redactor holds (< the secret) */
	while (n > 0 || final) {
		size_t take = n > 16384 ? 16384 : n;
		bool last = final && take == n;
		size_t m = sk_secret_redact_run(&c->redact, d, take, last, tmp);
		d += take;
		n -= take;
		if (m && !c->resp_no_body) {
			if (c->resp_chunked && sk_strbuf_printf(&c->out, "%zx\r\n", m) < 0)
				return -1;
			if (sk_strbuf_put(&c->out, tmp, m) < 0 || (c->resp_chunked && sk_strbuf_put(&c->out, "\r\n", 2) < 0))
				return -1;
		}
		if (last)
			break;
	}
	return 0;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct gw_conn *c = ud;
	size_t n = size * nmemb;
	if (c->client_err)
		return 0;
	if (c->out.len - c->out_off >= GW_OUT_HIGH) {
		/* The agent is not reading: stop reading from the upstream (curl keeps these bytes and
		 * hands them again when unpaused). */
		c->recv_paused = true;
		gw_set_interest(c);
		return CURL_WRITEFUNC_PAUSE;
	}
	if (queue_body(c, (const uint8_t *)ptr, n, false) < 0) {
		c->client_err = true;
		return 0;
	}
	if (gw_flush_out(c) < 0)
		return 0;
	gw_set_interest(c);
	return n;
}

/* Builds the agent's response head from the upstream's, once its blank line arrives. */
static int emit_response_head(struct gw_conn *c)
{
	/* A body the redaction cannot search (compressed, partial) is not relayed: nothing of it has reached
	 * the agent yet, so the transfer is aborted and answered as a failed one (502). */
	const struct sk_gw_answer *refuse = sk_gw_response_refusal(c->rhead.p, c->rhead.len, c->status,
								   strcmp(c->method, "HEAD") == 0);
	if (refuse) {
		c->fail_status = refuse->status;
		c->fail_msg = refuse->msg;
		c->fail_reason = refuse->reason;
		sk_strbuf_free(&c->rhead);
		return -1;
	}
	struct sk_gw_resp_framing f;
	size_t head_start = sk_gw_response_head(&c->out, c->rhead.p, c->rhead.len, c->status,
						strcmp(c->method, "HEAD") == 0, c->keep_alive, c->gw->draining, &f);
	c->resp_no_body = f.no_body;
	c->resp_chunked = f.chunked;
	c->resp_close = f.close;
	/* A reflected key in a response header is masked too (same length, so nothing else shifts). A fresh
	 * matcher state over the body's table: the head is judged on its own. */
	if (c->redact.secret && c->redact.slen && c->out.p) {
		struct sk_secret_redact r = c->redact;
		r.n_hold = r.masked = 0;
		size_t n = c->out.len - head_start;
		uint8_t *tmp = malloc(n + 1);
		if (!tmp) {
			/* Never send a head that was not searched for the key: drop it and end the request. */
			c->out.len = head_start;
			c->client_err = true;
			sk_strbuf_free(&c->rhead);
			return -1;
		}
		size_t m = sk_secret_redact_run(&r, (const uint8_t *)c->out.p + head_start, n, true, tmp);
		memcpy(c->out.p + head_start, tmp, m);
		free(tmp);
	}
	c->head_sent = true;
	sk_strbuf_free(&c->rhead);
	return 0;
}

static size_t header_cb(char *ptr, size_t size, size_t nitems, void *ud)
{
	struct gw_conn *c = ud;
	size_t n = size * nitems;
	if (c->client_err)
		return 0;
	if (c->head_sent)
		return n;   /* trailers: dropped */
	if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		/* A status line: "HTTP/1.1 200 OK" or "HTTP/2 200". A 1xx head is followed by the real one. */
		const char *sp = memchr(ptr, ' ', n);
		int st = 0;
		for (const char *d = sp ? sp + 1 : NULL; d && d < ptr + n && *d >= '0' && *d <= '9'; d++)
			st = st * 10 + (*d - '0');
		c->status = st;
		c->in_1xx = st >= 100 && st < 200;
		c->rhead.len = 0;
		return n;
	}
	if (n <= 2 && (ptr[0] == '\r' || ptr[0] == '\n')) {
		if (c->in_1xx) {
			c->in_1xx = false;
			c->rhead.len = 0;
			return n;
		}
		if (emit_response_head(c) < 0 || gw_flush_out(c) < 0)
			return 0;
		gw_set_interest(c);
		return n;
	}
	if (c->in_1xx)
		return n;
	if (c->rhead.len + n > 256 * 1024 || sk_strbuf_put(&c->rhead, ptr, n) < 0)
		return 0;   /* → CURLE_WRITE_ERROR → 502 */
	return n;
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp);
static int timer_cb(CURLM *m, long timeout_ms, void *userp);

static void sock_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct gw_sock *gs = io->ctx;
	struct sk_gateway *g = gs->gw;
	int mask = 0, running = 0;
	if (events & EPOLLIN)
		mask |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		mask |= CURL_CSELECT_ERR;
	/* gs may be freed inside this call (CURL_POLL_REMOVE); not touched after. */
	g->curl.multi_socket_action(g->multi, io->fd, mask, &running);
	gw_check_multi(g);
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	(void)e;
	struct sk_gateway *g = userp;
	struct gw_sock *gs = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (gs) {
			sk_loop_del(g->sc->loop, &gs->io);
			g->curl.multi_assign(g->multi, s, NULL);
			free(gs);
		}
		return 0;
	}
	uint32_t ev = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (!gs) {
		gs = calloc(1, sizeof(*gs));
		if (!gs)
			return -1;
		gs->gw = g;
		sk_io_init(&gs->io, s, sock_io, gs);
		if (sk_loop_add(g->sc->loop, &gs->io, ev, NULL) < 0) {
			free(gs);
			return -1;
		}
		g->curl.multi_assign(g->multi, s, gs);
		return 0;
	}
	(void)sk_loop_mod(g->sc->loop, &gs->io, ev, NULL);
	return 0;
}

void gw_curl_timer_fired(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct sk_gateway *g = t->ctx;
	int running = 0;
	g->curl.multi_socket_action(g->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	gw_check_multi(g);
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	(void)m;
	struct sk_gateway *g = userp;
	if (timeout_ms < 0)
		sk_timer_cancel(g->sc->loop, &g->curl_timer);
	else if (sk_timer_arm(g->sc->loop, &g->curl_timer, (uint64_t)timeout_ms) < 0)
		return -1;
	return 0;
}

/* Maps a failed transfer to the agent's answer when no response byte was sent yet. */
static void transfer_failed(struct gw_conn *c, CURLcode rc)
{
	if (c->fail_status) {
		gw_respond_local(c, c->fail_status, c->fail_msg ? c->fail_msg :
			      c->fail_status == 400 ? "bad request body" : "gateway error", c->fail_reason, 0);
		return;
	}
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		gw_respond_local(c, 504, "upstream timed out", "upstream_timeout", 0);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		gw_respond_local(c, 502, "upstream name did not resolve", "upstream_resolve", 0);
		break;
	case CURLE_COULDNT_CONNECT:
		gw_respond_local(c, 502, "upstream connection failed", "upstream_connect", 0);
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
		gw_respond_local(c, 502, "upstream TLS failed", "upstream_tls", 0);
		break;
	default:
		gw_respond_local(c, 502, c->gw->curl.easy_strerror(rc), "upstream_error", 0);
		break;
	}
}

static void transfer_done(struct gw_conn *c, CURLcode rc)
{
	if (c->client_err) {
		gw_req_end(c, c->status ? c->status : 499, "client_gone");
		gw_conn_free(c);
		return;
	}
	if (rc == CURLE_OK && !c->head_sent) {
		/* HEAD-like endings where curl saw no blank line callback (should not happen); be safe. */
		if (c->status == 0) {
			transfer_failed(c, CURLE_RECV_ERROR);
			return;
		}
		if (emit_response_head(c) < 0) {
			if (c->fail_status) {
				transfer_failed(c, rc);   /* refused: answered, head not sent */
				return;
			}
			gw_req_end(c, 500, "internal_error");
			gw_conn_free(c);
			return;
		}
	}
	if (rc != CURLE_OK) {
		if (!c->head_sent) {
			transfer_failed(c, rc);
			return;
		}
		/* The agent already has part of a response: cut the connection so it cannot take a truncated
		 * body for a whole one (no final chunk, or fewer bytes than Content-Length). */
		gw_req_end(c, c->status, rc == CURLE_OPERATION_TIMEDOUT ? "upstream_timeout" : "upstream_aborted");
		gw_conn_free(c);
		return;
	}
	if (queue_body(c, NULL, 0, true) < 0 ||
	    (c->resp_chunked && sk_strbuf_put(&c->out, "0\r\n\r\n", 5) < 0)) {
		gw_req_end(c, c->status, "internal_error");
		gw_conn_free(c);
		return;
	}
	gw_detach_easy(c);
	c->st = GW_FLUSH;
	if (gw_flush_out(c) < 0) {
		gw_req_end(c, c->status, "client_gone");
		gw_conn_free(c);
		return;
	}
	if (c->out.len == c->out_off) {
		gw_request_finished(c);
		return;
	}
	gw_set_interest(c);
}

void gw_check_multi(struct sk_gateway *g)
{
	CURLMsg *msg;
	int left;
	while ((msg = g->curl.multi_info_read(g->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct gw_conn *c = NULL;
		CURL *e = msg->easy_handle;
		CURLcode rc = msg->data.result;
		char *priv = NULL;
		g->curl.easy_getinfo(e, CURLINFO_PRIVATE, &priv);
		c = (struct gw_conn *)priv;
		if (c)
			transfer_done(c, rc);
	}
}

/* ---- starting a transfer -------------------------------------------------------------------------------- */

struct hdr_acc {
	const struct sk_curl *curl;
	struct curl_slist *list;
	int err;
};

static int add_hdr(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct hdr_acc *a = arg;
	char *line = NULL;
	/* "Name;" is curl's spelling of a header with an empty value ("Name:" would remove it). */
	int n = vlen ? asprintf(&line, "%.*s: %.*s", (int)nlen, name, (int)vlen, value)
		     : asprintf(&line, "%.*s;", (int)nlen, name);
	if (n < 0)
		return a->err = -ENOMEM;
	struct curl_slist *s = a->curl->slist_append(a->list, line);
	free(line);
	if (!s)
		return a->err = -ENOMEM;
	a->list = s;
	return 0;
}

/* libcurl (and the TLS library under it) is loaded and set up on the first forwarded request, not at
 * start: a sidecar whose policy has no `apis`, or that never forwards, never maps it (several MiB of
 * RSS). Single-threaded, so the non-thread-safe curl_global_init is safe here. A libcurl that cannot be
 * loaded is logged and fails only this request (502); the next one tries again. */
static int gw_curl_ready(struct sk_gateway *g)
{
	if (g->multi)
		return 0;
	struct sk_err err = { 0 };
	int rc = sk_curl_load(&g->curl, SK_CURL_SONAME, &err);
	if (rc < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		return rc;
	}
	if (!g->curl_inited) {
		if (g->curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -EIO;
		g->curl_inited = true;
	}
	if (!(g->multi = g->curl.multi_init()))
		return -ENOMEM;
	g->curl.multi_setopt(g->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	g->curl.multi_setopt(g->multi, CURLMOPT_SOCKETDATA, g);
	g->curl.multi_setopt(g->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	g->curl.multi_setopt(g->multi, CURLMOPT_TIMERDATA, g);
	return 0;
}

/* Returns 0 with the transfer started, or < 0 when the agent was answered locally (c may be freed). */
int gw_start_transfer(struct gw_conn *c, const struct sk_gw_req *req, const struct sk_api *api,
			   const char *rest, size_t rest_len, const char *secret, size_t slen, bool drop_auth)
{
	struct sk_gateway *g = c->gw;
	/* First, since even the header list is built with libcurl's functions. */
	if (gw_curl_ready(g) < 0) {
		gw_respond_local(c, 502, "cannot initialise the HTTP client", "curl_setup", 0);
		return -EIO;
	}
	struct hdr_acc acc = { .curl = &g->curl };
	if (sk_gw_filter_request_headers(req, api->header_name, drop_auth, add_hdr, &acc) < 0)
		goto oom;
	/* Headers curl would add on its own that the agent did not ask for. */
	if (!(acc.list = g->curl.slist_append(acc.list, "Expect:")))
		goto oom;
	bool has_accept = false;
	for (size_t i = 0; i < req->n_h; i++)
		has_accept |= sk_gw_name_is(req->h[i].name, req->h[i].name_len, "accept");
	if (!has_accept && !(acc.list = g->curl.slist_append(acc.list, "Accept:")))
		goto oom;
	/* The agent's Accept-Encoding was dropped (gw_http): an echo in a compressed body would pass the key
	 * redaction unrecognised, so the upstream is asked for the identity coding. Not CURLOPT_ACCEPT_ENCODING:
	 * that would have libcurl decode a coding the upstream sends anyway, and the image's libcurl has no
	 * decoders; such a response is refused instead (sk_gw_response_refusal). */
	if (!(acc.list = g->curl.slist_append(acc.list, "Accept-Encoding: identity")))
		goto oom;
	char *sline = NULL;
	if (asprintf(&sline, "%s: %.*s", api->header_name, (int)slen, secret) < 0)
		goto oom;
	struct curl_slist *s = g->curl.slist_append(acc.list, sline);
	sk_secret_wipe_free(sline, strlen(sline));
	if (!s)
		goto oom;
	acc.list = s;
	c->hdrs = acc.list;
	acc.list = NULL;
	/* Whatever its length, the key is masked if the upstream echoes it: no redactor, no transfer. */
	if (!(c->secret_copy = malloc(slen + 1)))
		goto oom;
	memcpy(c->secret_copy, secret, slen);
	c->secret_copy[slen] = 0;
	if (sk_secret_redact_init(&c->redact, c->secret_copy, slen) < 0)
		goto oom;

	char *url = NULL;
	if (asprintf(&url, "%s%.*s", api->upstream, (int)rest_len, rest) < 0)
		goto oom;
	CURL *e = g->curl.easy_init();
	if (!e) {
		free(url);
		goto oom;
	}
	c->easy = e;
	CURLcode rc = CURLE_OK;
#define SETOPT(o, v) do { if (rc == CURLE_OK) rc = g->curl.easy_setopt(e, o, v); } while (0)
	SETOPT(CURLOPT_URL, url);
	SETOPT(CURLOPT_PRIVATE, c);
	SETOPT(CURLOPT_HTTPHEADER, c->hdrs);
	/* Only https, never a redirect, never a proxy from the environment (it would see the key), never
	 * .netrc or cookies: the upstream in the policy is the only place the key goes. */
	SETOPT(CURLOPT_PROTOCOLS_STR, "https");
	SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "https");
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_PROXY, "");
	SETOPT(CURLOPT_NOPROXY, "*");
	SETOPT(CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	/* TLS verification is not configurable: a gateway that skipped it would hand keys to anyone on path. */
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (api->ca_file)
		SETOPT(CURLOPT_CAINFO, api->ca_file);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)g->lim.connect_timeout_ms);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)g->lim.total_timeout_ms);
	SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
	SETOPT(CURLOPT_LOW_SPEED_TIME, (long)((g->lim.idle_timeout_ms + 999) / 1000));
	SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(CURLOPT_HEADERDATA, c);
	SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(CURLOPT_WRITEDATA, c);
	SETOPT(CURLOPT_HTTP_TRANSFER_DECODING, 1L);
	SETOPT(CURLOPT_TCP_NODELAY, 1L);
	bool has_body = req->chunked || req->content_length >= 0;
	if (!strcmp(req->method, "HEAD")) {
		SETOPT(CURLOPT_NOBODY, 1L);
	} else {
		if (has_body) {
			SETOPT(CURLOPT_UPLOAD, 1L);
			SETOPT(CURLOPT_READFUNCTION, read_cb);
			SETOPT(CURLOPT_READDATA, c);
			SETOPT(CURLOPT_INFILESIZE_LARGE, (curl_off_t)(req->chunked ? -1 : req->content_length));
		}
		if (strcmp(req->method, "GET") != 0 || has_body)
			SETOPT(CURLOPT_CUSTOMREQUEST, req->method);
	}
#undef SETOPT
	free(url);
	if (rc != CURLE_OK) {
		gw_respond_local(c, 502, g->curl.easy_strerror(rc), "curl_setup", 0);
		return -EIO;
	}
	c->body_chunked = req->chunked;
	c->body_left = req->chunked ? 0 : req->content_length > 0 ? req->content_length : 0;
	c->body_done = !has_body || (!req->chunked && req->content_length == 0);
	memset(&c->chunk, 0, sizeof(c->chunk));
	c->st = GW_FORWARD;
	sk_timer_cancel(g->sc->loop, &c->timer);
	if (g->curl.multi_add_handle(g->multi, e) != CURLM_OK) {
		gw_respond_local(c, 502, "cannot start the upstream transfer", "curl_setup", 0);
		return -EIO;
	}
	c->forwarded = true;
	gw_set_interest(c);
	return 0;
oom:
	if (acc.list)
		g->curl.slist_free_all(acc.list);
	gw_respond_local(c, 500, "out of memory", "internal_error", 0);
	return -ENOMEM;
}

void gw_curl_close(struct sk_gateway *g)
{
	if (g->multi)
		g->curl.multi_cleanup(g->multi);
	g->multi = NULL;
	sk_timer_cancel(g->sc->loop, &g->curl_timer);
	if (g->curl_inited)
		g->curl.global_cleanup();
	g->curl_inited = false;
}

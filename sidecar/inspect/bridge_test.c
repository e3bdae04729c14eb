/* sidecar/inspect/bridge_test.c — the TLS bridge between a real OpenSSL client (trusting the pod CA) and a
 * real OpenSSL server (with a certificate from a test upstream CA), over socket pairs, the bridge driven
 * like the sidecar's loop would: poll on the interest it returns. Bytes arrive intact both ways (up to
 * 1 MiB each way), the plaintext filter (filter.h) sees every byte both ways and can stop the stream,
 * rewrite it, answer the sender and end the connection, the agent's bytes the caller already read are
 * its handshake's first, an upstream certificate for
 * another name fails the bridge with upstream_cert_invalid and the agent with an alert (nothing passes
 * through), an agent not trusting the CA fails closed, a hello naming another host is refused, ALPN is
 * what both ends can speak. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/x509v3.h>

#include "sidecar/inspect/bridge.h"
#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/filter.h"
#include "sidecar/inspect/leaf.h"
#include "sidecar/inspect/test_tls.h"
#include "sidecar/inspect/upstream.h"

static const unsigned char srv_alpn[] = "\x0c\x02h2\x08http/1.1";

struct fixture {
	struct sk_ca *pod_ca;
	struct sk_leaf_cache *leaves;
	struct sk_upstream *upstream;
	struct sk_bridge_env *env;
	struct test_ca up_ca, srv, wrong_srv, stranger_ca;
	char bundle[64];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sk_err err = { 0 };
	if (!f || sk_ca_generate("bridge-test", &f->pod_ca, &err) < 0 ||
	    sk_leaf_cache_new(f->pod_ca, 0, &f->leaves, &err) < 0)
		return -1;
	f->up_ca = test_ca_new("upstream CA");
	f->srv = test_server_cert(&f->up_ca, "*.up.test");
	f->wrong_srv = test_server_cert(&f->up_ca, "elsewhere.test");
	f->stranger_ca = test_ca_new("not the pod CA");
	test_write_pem(f->up_ca.cert, f->bundle);
	struct sk_upstream_opts o = { .ca_file = f->bundle };
	if (sk_upstream_new(&o, &f->upstream, &err) < 0 || sk_bridge_env_new(f->leaves, f->upstream, &f->env, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	sk_bridge_env_free(f->env);
	sk_upstream_free(f->upstream);
	sk_leaf_cache_free(f->leaves);
	sk_ca_free(f->pod_ca);
	test_ca_free(&f->up_ca);
	test_ca_free(&f->srv);
	test_ca_free(&f->wrong_srv);
	test_ca_free(&f->stranger_ca);
	(void)unlink(f->bundle);
	free(f);
	return 0;
}

/* A filter recording what it saw; a byte sequence that makes it fail the stream, one that it answers
 * itself (to_sender, then close_after), and an upper-casing rewrite of the agent's bytes. */
struct hook {
	struct sk_pt_filter f;   /* first: the bridge's handle */
	unsigned char *seen;
	size_t len, cap;
	const char *stop_at;
	const char *answer_at;   /* answered with "HTTP/1.1 403 ..." and close_after; never goes on */
	const char *fail_at;     /* answered likewise, but as a FAIL with a reason of its own */
	bool upcase;             /* EMIT the agent's bytes upper-cased */
	unsigned calls;
	size_t from_server;      /* server bytes seen */
	unsigned closed_client, closed_server;
};

static const char hook_answer[] = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";

static enum sk_pt_verdict hook_client(struct sk_pt_filter *f, const uint8_t *buf, size_t len, struct sk_pt_out *out)
{
	struct hook *h = (struct hook *)f;
	h->calls++;
	assert_true(len > 0 && len <= SK_BRIDGE_BUF);
	if (h->stop_at && memmem(buf, len, h->stop_at, strlen(h->stop_at)))
		return SK_PT_FAIL;
	if (h->fail_at && memmem(buf, len, h->fail_at, strlen(h->fail_at))) {
		assert_int_equal(sk_strbuf_puts(&out->to_sender, hook_answer), 0);
		out->reason = "test_refused";
		return SK_PT_FAIL;
	}
	if (h->answer_at && memmem(buf, len, h->answer_at, strlen(h->answer_at))) {
		assert_int_equal(sk_strbuf_puts(&out->to_sender, hook_answer), 0);
		out->close_after = true;
		return SK_PT_EMIT;
	}
	if (h->len + len > h->cap) {
		h->cap = (h->len + len) * 2;
		h->seen = realloc(h->seen, h->cap);
		assert_non_null(h->seen);
	}
	memcpy(h->seen + h->len, buf, len);
	h->len += len;
	if (h->upcase) {
		for (size_t i = 0; i < len; i++) {
			char ch = (char)(buf[i] >= 'a' && buf[i] <= 'z' ? buf[i] - 32 : buf[i]);
			assert_int_equal(sk_strbuf_put(&out->to_peer, &ch, 1), 0);
		}
		return SK_PT_EMIT;
	}
	return SK_PT_PASS;
}

static enum sk_pt_verdict hook_server(struct sk_pt_filter *f, const uint8_t *buf, size_t len, struct sk_pt_out *out)
{
	(void)buf;
	(void)out;
	struct hook *h = (struct hook *)f;
	h->from_server += len;
	return SK_PT_PASS;
}

static enum sk_pt_verdict hook_closed(struct sk_pt_filter *f, bool client_side, struct sk_pt_out *out)
{
	(void)out;
	struct hook *h = (struct hook *)f;
	if (client_side)
		h->closed_client++;
	else
		h->closed_server++;
	return SK_PT_PASS;
}

static const struct sk_pt_filter_ops hook_ops = {
	.name = "test", .from_client = hook_client, .from_server = hook_server, .closed = hook_closed,
};

/* One bridged connection: the agent's client, the real server, the bridge between. */
struct run {
	int cpair[2], upair[2];
	struct test_peer client, server;
	struct sk_bridge *bridge;
	unsigned steps;
	int rc;                      /* the bridge's last step: 1 running, 0 done, < 0 failed */
	struct sk_err err;
	struct hook hook;
	SSL_CTX *client_ctx, *server_ctx;
};

struct run_opts {
	X509 *client_trusts;         /* NULL: the pod CA */
	const char *client_sni;      /* NULL: "api.up.test" */
	const char *bridge_sni;      /* what the proxy judged; NULL: "api.up.test" */
	const unsigned char *client_alpn;   /* wire format with the length byte first; NULL: none */
	bool bridge_unaware;         /* do not tell the bridge the agent's offer */
	const struct test_ca *server;       /* NULL: the *.up.test certificate */
	const char *stop_at;
	const char *answer_at;
	const char *fail_at;
	bool upcase;
	bool prefix;                 /* the test reads the agent's hello off the socket: the bridge gets it
	                              * as bytes already read */
};

static void run_start(struct fixture *f, struct run *r, const struct run_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->rc = 1;
	test_pair(r->cpair);
	test_pair(r->upair);
	r->client_ctx = test_client_ctx(o->client_trusts ? o->client_trusts : sk_ca_cert(f->pod_ca));
	if (o->client_alpn)
		assert_int_equal(SSL_CTX_set_alpn_protos(r->client_ctx, o->client_alpn + 1, o->client_alpn[0]), 0);
	r->server_ctx = test_server_ctx(o->server ? o->server : &f->srv, NULL, srv_alpn, 0);
	const char *sni = o->client_sni ? o->client_sni : "api.up.test";
	test_peer_init(&r->client, r->client_ctx, r->cpair[1], false, sni);
	test_peer_init(&r->server, r->server_ctx, r->upair[1], true, NULL);
	r->hook.f.ops = &hook_ops;
	r->hook.stop_at = o->stop_at;
	r->hook.answer_at = o->answer_at;
	r->hook.fail_at = o->fail_at;
	r->hook.upcase = o->upcase;
	struct sk_bridge_cfg cfg = { .sni = o->bridge_sni ? o->bridge_sni : "api.up.test", .filter = &r->hook.f };
	unsigned char hello[4096];
	if (o->prefix) {
		/* as the proxy's peek does: the hello is read, not peeked */
		test_peer_pump(&r->client);
		struct pollfd p = { .fd = r->cpair[0], .events = POLLIN };
		assert_int_equal(poll(&p, 1, 2000), 1);
		ssize_t n = recv(r->cpair[0], hello, sizeof(hello), 0);
		assert_true(n > 5);
		cfg.client_prefix = hello;
		cfg.client_prefix_len = (size_t)n;
	}
	cfg.client_alpn_known = !o->bridge_unaware;
	if (o->client_alpn) {
		cfg.client_alpn = o->client_alpn + 1;
		cfg.client_alpn_len = o->client_alpn[0];
	}
	assert_int_equal(sk_bridge_new(f->env, &cfg, r->cpair[0], r->upair[0], &r->bridge, &r->err), 0);
}

static bool peer_settled(const struct test_peer *p)
{
	return p->failed || (p->eof && p->tx_off == p->tx_len);
}

/* Drives all three until the bridge ended and both peers settled, or 20 s passed. */
static void run_drive(struct run *r)
{
	struct sk_bridge_want w = { 0 };
	int fd = -1;
	uint32_t ev = 0;
	time_t end = time(NULL) + 20;
	while (time(NULL) < end) {
		test_peer_pump(&r->client);
		test_peer_pump(&r->server);
		if (r->rc > 0) {
			struct sk_bridge_stats before = sk_bridge_stats(r->bridge);
			r->rc = sk_bridge_step(r->bridge, fd, ev, &w, &r->err);
			struct sk_bridge_stats after = sk_bridge_stats(r->bridge);
			if (r->rc > 0)
				assert_true(w.client || w.upstream);   /* a running bridge always waits for something */
			/* one step moves a bounded amount each way, so other connections get their turn */
			assert_true(after.to_upstream - before.to_upstream <= (uint64_t)SK_BRIDGE_STEP_READS * SK_BRIDGE_BUF);
			assert_true(after.to_client - before.to_client <= (uint64_t)SK_BRIDGE_STEP_READS * SK_BRIDGE_BUF);
			r->steps++;
		}
		if (r->rc <= 0) {
			w.client = w.upstream = 0;
			/* a failed bridge: the sidecar closes both its fds */
			if (r->rc < 0 && r->cpair[0] >= 0) {
				close(r->cpair[0]);
				close(r->upair[0]);
				r->cpair[0] = r->upair[0] = -1;
			}
		}
		if (r->rc <= 0 && (peer_settled(&r->client) || r->rc < 0) && (peer_settled(&r->server) || r->rc < 0)) {
			/* after a failure, let the peers read what is left (alerts, EOF) */
			for (int i = 0; i < 10; i++) {
				test_peer_pump(&r->client);
				test_peer_pump(&r->server);
			}
			return;
		}
		struct pollfd p[4] = {
			{ .fd = r->cpair[0], .events = (short)((w.client & EPOLLIN ? POLLIN : 0) | (w.client & EPOLLOUT ? POLLOUT : 0)) },
			{ .fd = r->upair[0], .events = (short)((w.upstream & EPOLLIN ? POLLIN : 0) | (w.upstream & EPOLLOUT ? POLLOUT : 0)) },
			{ .fd = r->cpair[1], .events = (short)(POLLIN | (r->client.tx_off < r->client.tx_len ? POLLOUT : 0)) },
			{ .fd = r->upair[1], .events = (short)(POLLIN | (r->server.tx_off < r->server.tx_len ? POLLOUT : 0)) },
		};
		(void)poll(p, 4, 10);
		fd = p[0].revents ? r->cpair[0] : p[1].revents ? r->upair[0] : -1;
		ev = (uint32_t)(p[0].revents | p[1].revents);
	}
	fail_msg("bridge run did not settle (rc %d, client %d/%d, server %d/%d)", r->rc, r->client.hs_done,
		 r->client.eof, r->server.hs_done, r->server.eof);
}

static void run_end(struct run *r)
{
	sk_bridge_free(r->bridge);
	SSL_free(r->client.ssl);
	SSL_free(r->server.ssl);
	SSL_CTX_free(r->client_ctx);
	SSL_CTX_free(r->server_ctx);
	for (int i = 0; i < 2; i++) {
		if (r->cpair[i] >= 0)
			close(r->cpair[i]);
		if (r->upair[i] >= 0)
			close(r->upair[i]);
	}
	free(r->hook.seen);
	free(r->client.rx);
	free(r->server.rx);
}

static void exchange(struct fixture *f, const struct run_opts *o, size_t up_len, size_t down_len)
{
	unsigned char *up = malloc(up_len), *down = malloc(down_len);
	assert_non_null(up);
	assert_non_null(down);
	for (size_t i = 0; i < up_len; i++)
		up[i] = (unsigned char)(i * 7 + i / 251);
	for (size_t i = 0; i < down_len; i++)
		down[i] = (unsigned char)(i * 13 + i / 241 + 1);
	struct run r;
	run_start(f, &r, o);
	r.client.tx = up;
	r.client.tx_len = up_len;
	r.client.close_after_tx = true;
	r.client.rx = malloc(down_len + 1);
	r.client.rx_cap = down_len + 1;
	r.server.tx = down;
	r.server.tx_len = down_len;
	r.server.close_after_tx = true;
	r.server.rx = malloc(up_len + 1);
	r.server.rx_cap = up_len + 1;
	run_drive(&r);
	if (r.rc != 0)
		fail_msg("bridge: rc %d: %s", r.rc, r.err.msg);
	assert_false(r.client.failed);
	assert_false(r.server.failed);
	assert_true(r.client.eof);   /* the server's close_notify reached the agent as close_notify */
	assert_true(r.server.eof);
	assert_int_equal(r.server.rx_len, up_len);
	assert_memory_equal(r.server.rx, up, up_len);
	assert_int_equal(r.client.rx_len, down_len);
	assert_memory_equal(r.client.rx, down, down_len);
	/* the filter saw exactly what went up, in order, and all that came down, and both ends */
	assert_int_equal(r.hook.len, up_len);
	assert_memory_equal(r.hook.seen, up, up_len);
	assert_int_equal(r.hook.from_server, down_len);
	assert_int_equal(r.hook.closed_client, 1);
	assert_int_equal(r.hook.closed_server, 1);
	struct sk_bridge_stats s = sk_bridge_stats(r.bridge);
	assert_int_equal(s.to_upstream, up_len);
	assert_int_equal(s.to_client, down_len);
	assert_null(sk_bridge_reason(r.bridge));
	run_end(&r);
	free(up);
	free(down);
}

static void test_request_and_response_pass_intact(void **state)
{
	static const unsigned char both[] = "\x0c\x02h2\x08http/1.1";
	struct run_opts o = { .client_alpn = both };
	exchange(*state, &o, 100, 300);
}

static void test_a_mebibyte_each_way(void **state)
{
	struct run_opts o = { 0 };
	exchange(*state, &o, 1 << 20, 1 << 20);
}

static void test_client_sees_a_leaf_for_its_sni_from_the_pod_ca(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { 0 };
	run_start(f, &r, &o);
	r.client.close_after_tx = true;
	r.server.close_after_tx = true;
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	X509 *peer = SSL_get1_peer_certificate(r.client.ssl);
	assert_non_null(peer);
	assert_int_equal(X509_check_host(peer, "api.up.test", 0, 0, NULL), 1);
	assert_int_equal(X509_check_issued(sk_ca_cert(f->pod_ca), peer), X509_V_OK);
	X509_free(peer);
	run_end(&r);
}

static void test_upstream_cert_for_another_name_fails_closed(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .server = &f->wrong_srv };
	run_start(f, &r, &o);
	static const unsigned char req[] = "GET /secret HTTP/1.1\r\nHost: api.up.test\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	run_drive(&r);
	assert_int_equal(r.rc, -EPROTO);
	assert_string_equal(sk_bridge_reason(r.bridge), "upstream_cert_invalid");
	assert_string_equal(r.err.msg, "upstream_cert_invalid: hostname mismatch");
	/* the agent: a handshake_failure alert, no handshake, nothing of its request anywhere */
	assert_true(r.client.failed);
	assert_false(r.client.hs_done);
	assert_int_equal(r.client.fail_reason, SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE);
	assert_int_equal(r.server.rx_len, 0);
	assert_int_equal(r.hook.calls, 0);
	/* a later step says the same */
	struct sk_bridge_want w;
	struct sk_err err = { 0 };
	assert_int_equal(sk_bridge_step(r.bridge, -1, 0, &w, &err), -EPROTO);
	assert_string_equal(err.msg, "upstream_cert_invalid: hostname mismatch");
	assert_int_equal(w.client | w.upstream, 0);
	run_end(&r);
}

static void test_client_not_trusting_the_ca_fails_closed(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .client_trusts = f->stranger_ca.cert };
	run_start(f, &r, &o);
	static const unsigned char req[] = "GET / HTTP/1.1\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	run_drive(&r);
	assert_true(r.rc < 0);
	assert_string_equal(sk_bridge_reason(r.bridge), "client_tls");
	assert_non_null(strstr(r.err.msg, "client_tls: "));
	assert_true(r.client.failed);
	assert_int_equal(r.client.verify, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
	assert_int_equal(r.server.rx_len, 0);
	assert_int_equal(r.hook.calls, 0);
	run_end(&r);
}

static void test_prefix_read_by_the_caller_starts_the_handshake(void **state)
{
	struct run_opts o = { .prefix = true };
	exchange(*state, &o, 5000, 7000);
}

static void test_filter_answers_the_agent_and_closes(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .answer_at = "POST" };
	run_start(f, &r, &o);
	static const unsigned char req[] = "POST /repo HTTP/1.1\r\nHost: api.up.test\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	r.client.rx = malloc(256);
	r.client.rx_cap = 256;
	r.server.rx = malloc(256);
	r.server.rx_cap = 256;
	run_drive(&r);
	if (r.rc != 0)
		fail_msg("bridge: rc %d: %s", r.rc, r.err.msg);
	/* the agent got the answer and a clean end; the server nothing but a close_notify */
	assert_int_equal(r.client.rx_len, sizeof(hook_answer) - 1);
	assert_memory_equal(r.client.rx, hook_answer, sizeof(hook_answer) - 1);
	assert_true(r.client.eof);
	assert_false(r.client.failed);
	assert_int_equal(r.server.rx_len, 0);
	assert_true(r.server.eof);
	assert_int_equal(sk_bridge_stats(r.bridge).to_client, sizeof(hook_answer) - 1);
	assert_int_equal(sk_bridge_stats(r.bridge).to_upstream, 0);
	run_end(&r);
}

static void test_filter_failure_answers_first(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .fail_at = "TRACE" };
	run_start(f, &r, &o);
	static const unsigned char req[] = "TRACE / HTTP/1.1\r\nHost: api.up.test\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	r.client.rx = malloc(256);
	r.client.rx_cap = 256;
	r.server.rx = malloc(256);
	r.server.rx_cap = 256;
	run_drive(&r);
	/* the bridge fails with the filter's reason, after the agent got the answer */
	assert_int_equal(r.rc, -EPERM);
	assert_string_equal(sk_bridge_reason(r.bridge), "test_refused");
	assert_string_equal(r.err.msg, "test_refused: the plaintext filter stopped the connection");
	assert_int_equal(r.client.rx_len, sizeof(hook_answer) - 1);
	assert_memory_equal(r.client.rx, hook_answer, sizeof(hook_answer) - 1);
	assert_int_equal(r.server.rx_len, 0);
	run_end(&r);
}

static void test_filter_rewrites_what_goes_on(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .upcase = true };
	run_start(f, &r, &o);
	static const unsigned char req[] = "get /x http/1.1\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	r.client.close_after_tx = r.server.close_after_tx = true;
	r.server.rx = malloc(64);
	r.server.rx_cap = 64;
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.server.rx_len, sizeof(req) - 1);
	assert_memory_equal(r.server.rx, "GET /X HTTP/1.1\r\n\r\n", sizeof(req) - 1);
	run_end(&r);
}

static void test_hook_stops_the_request_before_it_goes_on(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .stop_at = "DELETE" };
	run_start(f, &r, &o);
	static const unsigned char req[] = "DELETE /repo HTTP/1.1\r\nHost: api.up.test\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	run_drive(&r);
	assert_int_equal(r.rc, -EPERM);
	assert_string_equal(sk_bridge_reason(r.bridge), "client_data_refused");
	assert_int_equal(r.hook.calls, 1);
	assert_int_equal(r.server.rx_len, 0);
	run_end(&r);
}

static void test_hello_naming_another_host_is_refused(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { .client_sni = "web.up.test" };   /* the bridge was set up for api.up.test */
	run_start(f, &r, &o);
	run_drive(&r);
	assert_true(r.rc < 0);
	assert_string_equal(sk_bridge_reason(r.bridge), "client_sni_mismatch");
	assert_non_null(strstr(r.err.msg, "'web.up.test'"));
	assert_true(r.client.failed);
	assert_int_equal(r.client.fail_reason, SSL_R_TLSV1_UNRECOGNIZED_NAME);
	run_end(&r);
}

static void test_alpn_is_what_both_ends_speak(void **state)
{
	struct fixture *f = *state;
	static const unsigned char h1[] = "\x09\x08http/1.1", both[] = "\x0c\x02h2\x08http/1.1";
	/* the agent offers both: the server's choice, h2, on both sides */
	struct run r;
	struct run_opts o = { .client_alpn = both };
	run_start(f, &r, &o);
	r.client.close_after_tx = r.server.close_after_tx = true;
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(sk_bridge_alpn(r.bridge), "h2");
	const unsigned char *sel = NULL;
	unsigned len = 0;
	SSL_get0_alpn_selected(r.client.ssl, &sel, &len);
	assert_int_equal(len, 2);
	assert_memory_equal(sel, "h2", 2);
	run_end(&r);
	/* the agent offers http/1.1 only and the bridge is told: the server is offered http/1.1 only */
	o.client_alpn = h1;
	run_start(f, &r, &o);
	r.client.close_after_tx = r.server.close_after_tx = true;
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(sk_bridge_alpn(r.bridge), "http/1.1");
	run_end(&r);
	/* not told: the server picks h2, which the agent did not offer: refused, not a garbled stream */
	o.bridge_unaware = true;
	run_start(f, &r, &o);
	run_drive(&r);
	assert_true(r.rc < 0);
	assert_string_equal(sk_bridge_reason(r.bridge), "alpn_mismatch");
	assert_true(r.client.failed);
	run_end(&r);
	/* an agent without ALPN, and the bridge told so: the server is offered none and chooses none */
	o = (struct run_opts){ 0 };
	run_start(f, &r, &o);
	r.client.close_after_tx = r.server.close_after_tx = true;
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(sk_bridge_alpn(r.bridge), "");
	run_end(&r);
}

static bool big_sndbuf(int fd, int want)
{
	int got = 0;
	socklen_t len = sizeof(got);
	return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want)) == 0 &&
	       getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) == 0 && got >= want;
}

static void test_one_step_yields_after_its_share(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { 0 };
	run_start(f, &r, &o);
	/* room for 2 MiB queued on the server's side and passed on to the agent's in one go */
	enum { BIG = 2 << 20 };
	if (!big_sndbuf(r.upair[1], BIG) || !big_sndbuf(r.cpair[0], BIG)) {
		run_end(&r);
		skip();   /* net.core.wmem_max below 2 MiB: the server cannot queue enough for the test */
	}
	struct sk_bridge_want w;
	for (int i = 0; i < 2000 && !(r.client.hs_done && r.server.hs_done); i++) {
		test_peer_pump(&r.client);
		test_peer_pump(&r.server);
		assert_int_equal(sk_bridge_step(r.bridge, -1, 0, &w, &r.err), 1);
	}
	assert_true(r.client.hs_done && r.server.hs_done);
	unsigned char *big = calloc(1, BIG);
	assert_non_null(big);
	r.server.tx = big;
	r.server.tx_len = BIG;
	for (int i = 0; i < 100 && r.server.tx_off < r.server.tx_len; i++)
		test_peer_pump(&r.server);
	assert_int_equal(r.server.tx_off, BIG);
	struct sk_bridge_stats before = sk_bridge_stats(r.bridge);
	assert_int_equal(sk_bridge_step(r.bridge, -1, 0, &w, &r.err), 1);
	struct sk_bridge_stats after = sk_bridge_stats(r.bridge);
	/* exactly its share, then EPOLLOUT on the agent's fd to be called again at once */
	assert_int_equal(after.to_client - before.to_client, SK_BRIDGE_STEP_READS * SK_BRIDGE_BUF);
	assert_true(w.client & EPOLLOUT);
	struct pollfd p = { .fd = r.cpair[0], .events = POLLOUT };
	assert_int_equal(poll(&p, 1, 0), 1);
	/* and the rest follows */
	r.client.rx = malloc(BIG);
	r.client.rx_cap = BIG;
	r.client.close_after_tx = r.server.close_after_tx = true;
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.client.rx_len, BIG);
	assert_int_equal(sk_bridge_stats(r.bridge).to_client, BIG);
	free(big);
	run_end(&r);
}

static void test_agent_talking_to_an_address(void **state)
{
	struct fixture *f = *state;
	struct test_ca ip_srv = test_server_cert(&f->up_ca, "192.0.2.10");
	struct run r;
	struct run_opts o = { .client_sni = "192.0.2.10", .bridge_sni = "192.0.2.10", .server = &ip_srv };
	run_start(f, &r, &o);
	static const unsigned char req[] = "GET / HTTP/1.1\r\n\r\n";
	r.client.tx = req;
	r.client.tx_len = sizeof(req) - 1;
	r.client.close_after_tx = r.server.close_after_tx = true;
	r.server.rx = malloc(64);
	r.server.rx_cap = 64;
	run_drive(&r);
	if (r.rc != 0)
		fail_msg("bridge: %s", r.err.msg);
	assert_int_equal(r.server.rx_len, sizeof(req) - 1);
	/* the agent verified the leaf as the address (an IP SAN); neither hop carried an SNI */
	assert_false(r.client.failed);
	assert_null(SSL_get_servername(r.server.ssl, TLSEXT_NAMETYPE_host_name));
	X509 *peer = SSL_get1_peer_certificate(r.client.ssl);
	assert_int_equal(X509_check_ip_asc(peer, "192.0.2.10", 0), 1);
	X509_free(peer);
	run_end(&r);
	test_ca_free(&ip_srv);
}

static void test_server_bare_close_reaches_the_agent_as_truncation(void **state)
{
	struct fixture *f = *state;
	struct run r;
	struct run_opts o = { 0 };
	run_start(f, &r, &o);
	static const unsigned char resp[] = "HTTP/1.1 200 OK\r\n\r\npartial";
	r.server.tx = resp;
	r.server.tx_len = sizeof(resp) - 1;
	r.client.rx = malloc(64);
	r.client.rx_cap = 64;
	r.client.close_after_tx = true;
	/* drive until the response is through, then the server's TCP goes away without close_notify */
	time_t end = time(NULL) + 10;
	struct sk_bridge_want w;
	while (r.client.rx_len < sizeof(resp) - 1 && time(NULL) < end) {
		test_peer_pump(&r.server);
		test_peer_pump(&r.client);
		r.rc = sk_bridge_step(r.bridge, -1, 0, &w, &r.err);
		assert_true(r.rc > 0 || r.rc == 0);
		(void)poll(NULL, 0, 1);
	}
	assert_int_equal(r.client.rx_len, sizeof(resp) - 1);
	assert_int_equal(shutdown(r.upair[1], SHUT_WR), 0);
	r.server.eof = true;   /* the server is done: it reads nothing more */
	run_drive(&r);
	assert_int_equal(r.rc, 0);
	/* not a clean end: the agent can tell the response was cut */
	assert_true(r.client.failed);
	assert_false(r.client.eof);
	assert_int_equal(r.client.fail_reason, SSL_R_UNEXPECTED_EOF_WHILE_READING);
	run_end(&r);
}

int main(void)
{
	/* as stockade-sidecar does (main.c): a write to a closed peer is an EPIPE, not a death */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_and_response_pass_intact),
		cmocka_unit_test(test_a_mebibyte_each_way),
		cmocka_unit_test(test_client_sees_a_leaf_for_its_sni_from_the_pod_ca),
		cmocka_unit_test(test_upstream_cert_for_another_name_fails_closed),
		cmocka_unit_test(test_client_not_trusting_the_ca_fails_closed),
		cmocka_unit_test(test_hook_stops_the_request_before_it_goes_on),
		cmocka_unit_test(test_prefix_read_by_the_caller_starts_the_handshake),
		cmocka_unit_test(test_filter_answers_the_agent_and_closes),
		cmocka_unit_test(test_filter_rewrites_what_goes_on),
		cmocka_unit_test(test_filter_failure_answers_first),
		cmocka_unit_test(test_hello_naming_another_host_is_refused),
		cmocka_unit_test(test_alpn_is_what_both_ends_speak),
		cmocka_unit_test(test_one_step_yields_after_its_share),
		cmocka_unit_test(test_agent_talking_to_an_address),
		cmocka_unit_test(test_server_bare_close_reaches_the_agent_as_truncation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* sidecar/inspect/upstream_test.c — the upstream TLS context against real OpenSSL servers over socket
 * pairs: a trusted chain for the right name connects with ALPN, a wrong name or an unknown issuer is
 * upstream_cert_invalid (never a connection), TLS below 1.2 is refused, sessions resume per host and the
 * session cache stays within its cap, bundle files are checked at creation. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/inspect/test_tls.h"
#include "sidecar/inspect/upstream.h"

struct fixture {
	struct test_ca ca, srv, other_ca, other_srv;
	char bundle[64];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	f->ca = test_ca_new("upstream test CA");
	f->srv = test_server_cert(&f->ca, "*.up.test");
	f->other_ca = test_ca_new("somebody else");
	f->other_srv = test_server_cert(&f->other_ca, "*.up.test");
	test_write_pem(f->ca.cert, f->bundle);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	test_ca_free(&f->ca);
	test_ca_free(&f->srv);
	test_ca_free(&f->other_ca);
	test_ca_free(&f->other_srv);
	(void)unlink(f->bundle);
	free(f);
	return 0;
}

static struct sk_upstream *upstream(struct fixture *f, const char *alpn, size_t cap)
{
	struct sk_upstream *u = NULL;
	struct sk_err err = { 0 };
	struct sk_upstream_opts o = { .ca_file = f->bundle, .alpn = alpn, .session_cap = cap };
	if (sk_upstream_new(&o, &u, &err) < 0)
		fail_msg("sk_upstream_new: %s", err.msg);
	return u;
}

struct outcome {
	int rc;               /* 0 connected, else sk_upstream_failure's */
	char msg[SK_ERR_MSG_MAX];
	char alpn[32];
	bool reused;
	bool server_failed;
	bool server_saw_sni;
};

/* Connects u to host against a server of ctx; after the handshake the server sends one byte, which the
 * client reads (a TLS 1.3 ticket arrives behind the handshake). */
static struct outcome connect_to(struct sk_upstream *u, SSL_CTX *server_ctx, const char *host)
{
	struct outcome o = { 0 };
	int sv[2];
	test_pair(sv);
	struct test_peer srv;
	test_peer_init(&srv, server_ctx, sv[1], true, NULL);
	static const unsigned char hello[] = "!";
	srv.tx = hello;
	srv.tx_len = 1;
	struct sk_err err = { 0 };
	SSL *ssl = sk_upstream_ssl(u, host, sv[0], NULL, 0, &err);
	assert_non_null(ssl);
	bool done = false, got = false;
	for (int i = 0; i < 2000 && !(done && got) && o.rc == 0; i++) {
		test_peer_pump(&srv);
		if (!done) {
			int r = SSL_connect(ssl);
			if (r == 1) {
				done = true;
			} else {
				int e = SSL_get_error(ssl, r);
				if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
					o.rc = sk_upstream_failure(ssl, e, &err);
			}
		}
		if (done && !got) {
			unsigned char b;
			size_t n = 0;
			if (SSL_read_ex(ssl, &b, 1, &n) == 1)
				got = true;
			else
				ERR_clear_error();
		}
		struct pollfd p = { .fd = sv[0], .events = POLLIN };
		(void)poll(&p, 1, 5);
	}
	/* let the server read what the client sent last (an alert on failure) */
	for (int i = 0; i < 5; i++)
		test_peer_pump(&srv);
	if (o.rc == 0) {
		assert_true(done && got);
		const unsigned char *a = NULL;
		unsigned alen = 0;
		SSL_get0_alpn_selected(ssl, &a, &alen);
		(void)snprintf(o.alpn, sizeof(o.alpn), "%.*s", (int)alen, a ? (const char *)a : "");
		o.reused = SSL_session_reused(ssl) == 1;
	}
	(void)snprintf(o.msg, sizeof(o.msg), "%s", err.msg);
	o.server_failed = srv.failed;
	o.server_saw_sni = SSL_get_servername(srv.ssl, TLSEXT_NAMETYPE_host_name) != NULL;
	/* a clean close: OpenSSL drops the session of a TLS 1.2 connection freed without close_notify */
	if (o.rc == 0) {
		(void)SSL_shutdown(ssl);
		(void)SSL_shutdown(srv.ssl);
		ERR_clear_error();
	}
	SSL_free(ssl);
	SSL_free(srv.ssl);
	close(sv[0]);
	close(sv[1]);
	return o;
}

static const unsigned char srv_h2_h1[] = "\x0c\x02h2\x08http/1.1";
static const unsigned char srv_h1[] = "\x09\x08http/1.1";

static void test_trusted_server_connects_with_alpn(void **state)
{
	struct fixture *f = *state;
	struct sk_upstream *u = upstream(f, NULL, 0);
	SSL_CTX *both = test_server_ctx(&f->srv, NULL, srv_h2_h1, 0), *h1 = test_server_ctx(&f->srv, NULL, srv_h1, 0);
	struct outcome o = connect_to(u, both, "api.up.test");
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.alpn, "h2");
	o = connect_to(u, h1, "web.up.test");
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.alpn, "http/1.1");
	SSL_CTX_free(both);
	SSL_CTX_free(h1);
	sk_upstream_free(u);
	/* a configured list: http/1.1 only is offered, so an h2 server picks http/1.1 */
	u = upstream(f, "http/1.1", 0);
	both = test_server_ctx(&f->srv, NULL, srv_h2_h1, 0);
	o = connect_to(u, both, "api.up.test");
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.alpn, "http/1.1");
	SSL_CTX_free(both);
	sk_upstream_free(u);
}

static void test_wrong_name_is_upstream_cert_invalid(void **state)
{
	struct fixture *f = *state;
	struct sk_upstream *u = upstream(f, NULL, 0);
	SSL_CTX *ctx = test_server_ctx(&f->srv, NULL, NULL, 0);
	struct outcome o = connect_to(u, ctx, "api.elsewhere.test");
	assert_int_equal(o.rc, -EPROTO);
	assert_string_equal(o.msg, "upstream_cert_invalid: hostname mismatch");
	assert_true(o.server_failed);   /* the server got an alert, not a connection */
	assert_int_equal(sk_upstream_sessions(u), 0);
	SSL_CTX_free(ctx);
	sk_upstream_free(u);
}

static void test_unknown_issuer_is_upstream_cert_invalid(void **state)
{
	struct fixture *f = *state;
	struct sk_upstream *u = upstream(f, NULL, 0);
	SSL_CTX *ctx = test_server_ctx(&f->other_srv, NULL, NULL, 0);
	struct outcome o = connect_to(u, ctx, "api.up.test");
	assert_int_equal(o.rc, -EPROTO);
	assert_non_null(strstr(o.msg, "upstream_cert_invalid: unable to get local issuer certificate"));
	/* the server sending its CA along does not make the CA trusted */
	SSL_CTX_free(ctx);
	ctx = test_server_ctx(&f->other_srv, f->other_ca.cert, NULL, 0);
	o = connect_to(u, ctx, "api.up.test");
	assert_int_equal(o.rc, -EPROTO);
	assert_non_null(strstr(o.msg, "upstream_cert_invalid: "));
	SSL_CTX_free(ctx);
	sk_upstream_free(u);
}

static void test_tls_below_1_2_is_refused(void **state)
{
	struct fixture *f = *state;
	struct sk_upstream *u = upstream(f, NULL, 0);
	SSL_CTX *ctx = test_server_ctx(&f->srv, NULL, NULL, TLS1_1_VERSION);
	struct outcome o = connect_to(u, ctx, "api.up.test");
	assert_int_equal(o.rc, -EPROTO);
	assert_non_null(strstr(o.msg, "upstream_tls: "));
	SSL_CTX_free(ctx);
	sk_upstream_free(u);
}

static void test_sessions_resume_per_host(void **state)
{
	struct fixture *f = *state;
	int versions[] = { TLS1_2_VERSION, TLS1_3_VERSION };
	for (size_t v = 0; v < 2; v++) {
		struct sk_upstream *u = upstream(f, NULL, 0);
		SSL_CTX *ctx = test_server_ctx(&f->srv, NULL, NULL, 0);
		SSL_CTX_set_max_proto_version(ctx, versions[v]);
		SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"t", 1);
		struct outcome o = connect_to(u, ctx, "api.up.test");
		assert_int_equal(o.rc, 0);
		assert_false(o.reused);
		assert_int_equal(sk_upstream_sessions(u), 1);
		o = connect_to(u, ctx, "api.up.test");
		assert_int_equal(o.rc, 0);
		if (!o.reused)
			fail_msg("version %x: second connection not resumed", (unsigned)versions[v]);
		/* another host of the same server: its own full handshake */
		o = connect_to(u, ctx, "web.up.test");
		assert_int_equal(o.rc, 0);
		assert_false(o.reused);
		SSL_CTX_free(ctx);
		sk_upstream_free(u);
	}
}

static void test_session_cache_is_bounded(void **state)
{
	struct fixture *f = *state;
	struct sk_upstream *u = upstream(f, NULL, 2);
	SSL_CTX *ctx = test_server_ctx(&f->srv, NULL, NULL, 0);
	const char *hosts[] = { "a.up.test", "b.up.test", "c.up.test", "d.up.test" };
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(connect_to(u, ctx, hosts[i]).rc, 0);
	assert_int_equal(sk_upstream_sessions(u), 2);
	SSL_CTX_free(ctx);
	sk_upstream_free(u);
}

static void test_ip_literal_is_checked_as_an_address_without_sni(void **state)
{
	struct fixture *f = *state;
	struct test_ca ip_srv = test_server_cert(&f->ca, "192.0.2.10");
	struct sk_upstream *u = upstream(f, NULL, 0);
	SSL_CTX *ctx = test_server_ctx(&ip_srv, NULL, NULL, 0);
	struct outcome o = connect_to(u, ctx, "192.0.2.10");
	assert_int_equal(o.rc, 0);
	assert_false(o.server_saw_sni);   /* RFC 6066: no address in server_name */
	assert_int_equal(sk_upstream_sessions(u), 0);
	o = connect_to(u, ctx, "192.0.2.11");
	assert_int_equal(o.rc, -EPROTO);
	assert_string_equal(o.msg, "upstream_cert_invalid: IP address mismatch");
	/* the DNS name certificate does not pass for an address either */
	SSL_CTX_free(ctx);
	ctx = test_server_ctx(&f->srv, NULL, NULL, 0);
	o = connect_to(u, ctx, "192.0.2.10");
	assert_int_equal(o.rc, -EPROTO);
	assert_string_equal(o.msg, "upstream_cert_invalid: IP address mismatch");
	o = connect_to(u, ctx, "api.up.test");
	assert_int_equal(o.rc, 0);
	assert_true(o.server_saw_sni);
	SSL_CTX_free(ctx);
	sk_upstream_free(u);
	test_ca_free(&ip_srv);
}

static void test_bundle_files_are_checked(void **state)
{
	(void)state;
	struct sk_upstream *u = NULL;
	struct sk_err err = { 0 };
	struct sk_upstream_opts o = { .ca_file = "/nonexistent/ca.pem" };
	assert_int_equal(sk_upstream_new(&o, &u, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "upstream CA bundle '/nonexistent/ca.pem'"));
	char empty[] = "/tmp/sk_inspect_empty.XXXXXX";
	int fd = mkstemp(empty);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a certificate\n", 18), 18);
	close(fd);
	o.ca_file = empty;
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_upstream_new(&o, &u, &err), -EINVAL);
	assert_non_null(strstr(err.msg, empty));
	(void)unlink(empty);
	/* the system bundle loads (whatever it holds) */
	assert_int_equal(sk_upstream_new(NULL, &u, &err), 0);
	size_t len = 0;
	const unsigned char *a = sk_upstream_alpn(u, &len);
	assert_int_equal(len, 12);
	assert_memory_equal(a, "\x02h2\x08http/1.1", 12);
	sk_upstream_free(u);
}

static void test_alpn_wire(void **state)
{
	(void)state;
	unsigned char w[32];
	assert_int_equal(sk_alpn_wire("h2,http/1.1", w, sizeof(w)), 12);
	assert_int_equal(sk_alpn_wire("", w, sizeof(w)), 0);
	assert_int_equal(sk_alpn_wire("h2,", w, sizeof(w)), -EINVAL);
	assert_int_equal(sk_alpn_wire(",h2", w, sizeof(w)), -EINVAL);
	assert_int_equal(sk_alpn_wire("h2,,x", w, sizeof(w)), -EINVAL);
	assert_int_equal(sk_alpn_wire("http/1.1,http/1.1,http/1.1,http/1.1", w, sizeof(w)), -ENOSPC);
	struct sk_upstream *u = NULL;
	struct sk_err err = { 0 };
	struct sk_upstream_opts o = { .alpn = "h2,," };
	assert_int_equal(sk_upstream_new(&o, &u, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ALPN"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_trusted_server_connects_with_alpn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_name_is_upstream_cert_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_issuer_is_upstream_cert_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tls_below_1_2_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions_resume_per_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_cache_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ip_literal_is_checked_as_an_address_without_sni, setup, teardown),
		cmocka_unit_test(test_bundle_files_are_checked),
		cmocka_unit_test(test_alpn_wire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/inspect/test_tls.h — for the inspection room's tests only (header-only, so it is no library
 * module): throwaway CAs and server certificates, plain OpenSSL client and server contexts, and a
 * non-blocking peer (handshake, send a buffer, receive into one) that a test pumps in its poll loop next to
 * the code under test. */
#ifndef SK_SIDECAR_INSPECT_TEST_TLS_H
#define SK_SIDECAR_INSPECT_TEST_TLS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "sidecar/inspect/ossl.h"

struct test_ca {
	X509 *cert;
	EVP_PKEY *key;
};

static inline struct test_ca test_ca_new(const char *cn)
{
	struct sk_err err = { 0 };
	struct test_ca ca = { 0 };
	ca.key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	struct sk_cert_spec spec = { .subject_cn = cn, .not_before = -60, .not_after = 86400, .ca = true };
	if (ca.key)
		ca.cert = sk_cert_build(&spec, ca.key, NULL, ca.key, &err);
	if (!ca.cert)
		abort();
	return ca;
}

/* A server certificate for name (a DNS name, or an IPv4 literal: an IP SAN) signed by ca, with a fresh key. */
static inline struct test_ca test_server_cert(const struct test_ca *ca, const char *name)
{
	struct sk_err err = { 0 };
	struct test_ca s = { 0 };
	unsigned char ip[4];
	bool is_ip = inet_pton(AF_INET, name, ip) == 1;
	s.key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	struct sk_cert_spec spec = { .subject_cn = NULL, .not_before = -60, .not_after = 86400,
				     .san_dns = is_ip ? NULL : name, .san_ip = is_ip ? ip : NULL,
				     .san_ip_len = is_ip ? 4 : 0 };
	if (s.key)
		s.cert = sk_cert_build(&spec, s.key, ca->cert, ca->key, &err);
	if (!s.cert)
		abort();
	return s;
}

static inline void test_ca_free(struct test_ca *ca)
{
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
}

/* Writes cert as PEM into a new temporary file; its path into path (64 bytes). */
static inline void test_write_pem(X509 *cert, char *path)
{
	strcpy(path, "/tmp/sk_inspect_ca.XXXXXX");
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f || PEM_write_X509(f, cert) != 1 || fclose(f) != 0)
		abort();
}

/* An ALPN server callback choosing the first of the server's list (arg: wire format) the client offers. */
static inline int test_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
				   const unsigned char *in, unsigned inlen, void *arg)
{
	(void)ssl;
	const unsigned char *srv = arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, srv + 1, srv[0], in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	return SSL_TLSEXT_ERR_OK;
}

/* A server context presenting s; alpn_wire (static, wire format with a leading total length byte, or
 * NULL): the protocols it accepts. max_version 0: any. */
static inline SSL_CTX *test_server_ctx(const struct test_ca *s, X509 *chain, const unsigned char *alpn_wire,
				       int max_version)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || SSL_CTX_use_certificate(ctx, s->cert) != 1 || SSL_CTX_use_PrivateKey(ctx, s->key) != 1)
		abort();
	if (chain && SSL_CTX_add1_chain_cert(ctx, chain) != 1)
		abort();
	if (max_version) {
		SSL_CTX_set_security_level(ctx, 0);
		SSL_CTX_set_min_proto_version(ctx, 0);
		SSL_CTX_set_max_proto_version(ctx, max_version);
	}
	if (alpn_wire)
		SSL_CTX_set_alpn_select_cb(ctx, test_alpn_select, (void *)alpn_wire);
	return ctx;
}

/* A client context trusting trust only, checking the name it is given per SSL. */
static inline SSL_CTX *test_client_ctx(X509 *trust)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), trust) != 1)
		abort();
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
}

static inline void test_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		abort();
}

/* A connected non-blocking stream pair. */
static inline void test_pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		abort();
	test_nonblock(sv[0]);
	test_nonblock(sv[1]);
}

/* A TLS endpoint of a test: handshakes, sends tx, receives into rx until the peer closes. */
struct test_peer {
	SSL *ssl;
	bool server;
	bool hs_done, failed, eof, shut_sent;
	unsigned long fail_reason;   /* ERR_GET_REASON of the failure */
	long verify;                 /* SSL_get_verify_result after a failure */
	const unsigned char *tx;
	size_t tx_len, tx_off;
	bool close_after_tx;         /* send close_notify once tx is out */
	unsigned char *rx;
	size_t rx_cap, rx_len;
};

static inline void test_peer_init(struct test_peer *p, SSL_CTX *ctx, int fd, bool server, const char *host)
{
	memset(p, 0, sizeof(*p));
	p->ssl = SSL_new(ctx);
	p->server = server;
	if (!p->ssl || SSL_set_fd(p->ssl, fd) != 1)
		abort();
	if (server) {
		SSL_set_accept_state(p->ssl);
	} else {
		SSL_set_connect_state(p->ssl);
		/* an address is checked against IP SANs and, as RFC 6066 says, not sent as SNI */
		unsigned char ip[16];
		bool is_ip = host && (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1);
		if (host && ((!is_ip && SSL_set_tlsext_host_name(p->ssl, host) != 1) || SSL_set1_host(p->ssl, host) != 1))
			abort();
	}
}

static inline void test_peer_fail(struct test_peer *p)
{
	p->failed = true;
	p->fail_reason = ERR_GET_REASON(ERR_peek_error());
	p->verify = SSL_get_verify_result(p->ssl);
	ERR_clear_error();
}

/* One round of everything the peer can do without blocking. */
static inline void test_peer_pump(struct test_peer *p)
{
	if (p->failed)
		return;
	if (!p->hs_done) {
		int r = SSL_do_handshake(p->ssl);
		if (r != 1) {
			int e = SSL_get_error(p->ssl, r);
			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				test_peer_fail(p);
			return;
		}
		p->hs_done = true;
	}
	while (p->tx_off < p->tx_len) {
		size_t n = 0;
		size_t chunk = p->tx_len - p->tx_off > 65536 ? 65536 : p->tx_len - p->tx_off;
		if (SSL_write_ex(p->ssl, p->tx + p->tx_off, chunk, &n) != 1) {
			int e = SSL_get_error(p->ssl, 0);
			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				test_peer_fail(p);
			break;
		}
		p->tx_off += n;
	}
	if (p->tx_off == p->tx_len && p->close_after_tx && !p->shut_sent) {
		if (SSL_shutdown(p->ssl) >= 0)
			p->shut_sent = true;
		ERR_clear_error();
	}
	while (!p->eof && !p->failed) {
		unsigned char sink[16384];
		unsigned char *dst = p->rx_len < p->rx_cap ? p->rx + p->rx_len : sink;
		size_t room = p->rx_len < p->rx_cap ? p->rx_cap - p->rx_len : sizeof(sink);
		size_t n = 0;
		if (SSL_read_ex(p->ssl, dst, room, &n) != 1) {
			int e = SSL_get_error(p->ssl, 0);
			if (e == SSL_ERROR_ZERO_RETURN)
				p->eof = true;
			else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				test_peer_fail(p);
			break;
		}
		if (dst != sink)
			p->rx_len += n;
	}
}

#endif

/* sidecar/inspect/upstream.c — see upstream.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "sidecar/inspect/lru.h"
#include "sidecar/inspect/ossl.h"
#include "sidecar/inspect/upstream.h"

struct sk_upstream {
	SSL_CTX *ctx;
	struct sk_lru *sessions;    /* host → SSL_SESSION (one reference each) */
	unsigned char alpn[256];
	size_t alpn_len;
};

int sk_alpn_wire(const char *list, unsigned char *out, size_t cap)
{
	size_t n = 0;
	const char *p = list;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0 || len > 255)
			return -EINVAL;
		if (n + 1 + len > cap)
			return -ENOSPC;
		out[n++] = (unsigned char)len;
		for (size_t i = 0; i < len; i++)   /* a length-prefixed field, no terminator */
			out[n++] = (unsigned char)p[i];
		p += len + (comma ? 1 : 0);
		if (comma && !*p)
			return -EINVAL;   /* a trailing comma: an empty protocol */
	}
	return (int)n;
}

static void session_free(void *s)
{
	SSL_SESSION_free(s);
}

/* Sessions are keyed by the connection's SNI: sk_upstream_ssl sets it and the name the chain is verified
 * for from the same string. A connection to an IP literal sends no SNI, so its session is not kept (a full
 * handshake each time). */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct sk_upstream *u = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	const char *host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	if (!u || !host || !SSL_SESSION_is_resumable(sess))
		return 0;
	/* 1: our reference goes to the table, which releases it on eviction, or at once when the insert
	 * fails for memory (the session is then simply not kept) */
	if (sk_lru_put(u->sessions, host, sess) < 0)
		ERR_clear_error();
	return 1;
}

int sk_upstream_new(const struct sk_upstream_opts *opts, struct sk_upstream **out, struct sk_err *err)
{
	static const struct sk_upstream_opts none = { 0 };
	char why[256];
	if (!opts)
		opts = &none;
	struct sk_upstream *u = calloc(1, sizeof(*u));
	if (!u)
		return sk_err_set(err, ENOMEM, "upstream TLS: out of memory");
	int r = sk_alpn_wire(opts->alpn ? opts->alpn : SK_UPSTREAM_ALPN_DEFAULT, u->alpn, sizeof(u->alpn));
	if (r < 0) {
		r = sk_err_set(err, -r, "upstream TLS: ALPN list '%s': an empty or over-long protocol", opts->alpn);
		goto fail;
	}
	u->alpn_len = (size_t)r;
	if (sk_lru_new(opts->session_cap ? opts->session_cap : SK_UPSTREAM_SESSION_CAP, session_free, &u->sessions,
		       err) < 0) {
		r = sk_err_prefix(err, "upstream TLS sessions");
		goto fail;
	}
	if (!(u->ctx = SSL_CTX_new(TLS_client_method()))) {
		r = sk_err_set(err, ENOMEM, "upstream TLS context: %s", sk_ossl_reason(why, sizeof(why)));
		goto fail;
	}
	SSL_CTX_set_app_data(u->ctx, u);
	SSL_CTX_set_min_proto_version(u->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(u->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(u->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_verify(u->ctx, SSL_VERIFY_PEER, NULL);
	if (opts->ca_file) {
		if (SSL_CTX_load_verify_file(u->ctx, opts->ca_file) != 1) {
			r = sk_err_set(err, EINVAL, "upstream CA bundle '%s': %s", opts->ca_file,
				       sk_ossl_reason(why, sizeof(why)));
			goto fail;
		}
	} else if (SSL_CTX_set_default_verify_paths(u->ctx) != 1) {
		r = sk_err_set(err, EINVAL, "upstream CA bundle (system default paths): %s",
			       sk_ossl_reason(why, sizeof(why)));
		goto fail;
	}
	/* the cache is ours, keyed by host: OpenSSL's internal store is for servers */
	SSL_CTX_set_session_cache_mode(u->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(u->ctx, new_session);
	*out = u;
	return 0;
fail:
	sk_upstream_free(u);
	return r;
}

void sk_upstream_free(struct sk_upstream *u)
{
	if (!u)
		return;
	SSL_CTX_free(u->ctx);
	sk_lru_free(u->sessions);
	free(u);
}

const unsigned char *sk_upstream_alpn(const struct sk_upstream *u, size_t *len)
{
	*len = u->alpn_len;
	return u->alpn;
}

size_t sk_upstream_sessions(const struct sk_upstream *u)
{
	return sk_lru_len(u->sessions);
}

static bool is_ip_literal(const char *host)
{
	unsigned char a[16];
	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* The cached session for host, if it can still be resumed; a TLS 1.3 ticket leaves the cache. */
static void offer_session(struct sk_upstream *u, SSL *ssl, const char *host)
{
	SSL_SESSION *s = sk_lru_get(u->sessions, host);
	if (!s)
		return;
	if (!SSL_SESSION_is_resumable(s) || (time_t)(SSL_SESSION_get_time(s) + SSL_SESSION_get_timeout(s)) <= time(NULL)) {
		sk_lru_del(u->sessions, host);
		return;
	}
	if (SSL_set_session(ssl, s) != 1) {
		ERR_clear_error();
		return;
	}
	if (SSL_SESSION_get_protocol_version(s) >= TLS1_3_VERSION)
		sk_lru_del(u->sessions, host);   /* ssl holds its own reference */
}

SSL *sk_upstream_ssl(struct sk_upstream *u, const char *host, int fd, const unsigned char *alpn_wire,
		     size_t alpn_wire_len, struct sk_err *err)
{
	char why[256];
	SSL *ssl = SSL_new(u->ctx);
	if (!ssl) {
		sk_err_set(err, ENOMEM, "upstream TLS for '%s': %s", host, sk_ossl_reason(why, sizeof(why)));
		return NULL;
	}
	bool ip = is_ip_literal(host);
	const unsigned char *alpn = alpn_wire ? alpn_wire : u->alpn;
	size_t alpn_len = alpn_wire ? alpn_wire_len : u->alpn_len;
	/* SSL_set1_host takes an IP literal as an address to match against IP SANs (OpenSSL 3) */
	if (SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, host) != 1 ||
	    (!ip && SSL_set_tlsext_host_name(ssl, host) != 1) ||
	    (alpn_len && SSL_set_alpn_protos(ssl, alpn, (unsigned)alpn_len) != 0)) {
		sk_err_set(err, EINVAL, "upstream TLS for '%s': %s", host, sk_ossl_reason(why, sizeof(why)));
		SSL_free(ssl);
		return NULL;
	}
	if (!ip)
		offer_session(u, ssl, host);
	return ssl;
}

int sk_upstream_failure(SSL *ssl, int ssl_error, struct sk_err *err)
{
	char why[256];
	long v = SSL_get_verify_result(ssl);
	if (v != X509_V_OK) {
		ERR_clear_error();
		return sk_err_set(err, EPROTO, "upstream_cert_invalid: %s", X509_verify_cert_error_string(v));
	}
	if (ssl_error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
		int e = errno;
		return sk_err_set(err, EPROTO, "upstream_tls: %s during the handshake",
				  e ? strerror(e) : "connection closed");
	}
	return sk_err_set(err, EPROTO, "upstream_tls: %s", sk_ossl_reason(why, sizeof(why)));
}

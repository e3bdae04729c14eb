/* sidecar/inspect/upstream.h — the TLS client side of inspection: the context for the sidecar's connections
 * to the real servers when it terminates the agent's TLS.
 *
 * Every connection verifies the server's chain against one trust bundle (the system's default paths, or a
 * PEM bundle file: the policy's tls.upstreamCAFile) and its name against the agent's SNI (DNS name, or IP
 * address for an IP literal, which then gets no SNI as RFC 6066 says). TLS 1.2 at least, no
 * renegotiation. ALPN offers a configured list (h2,http/1.1 by default). A failed verification is an error
 * of its own, "upstream_cert_invalid: <X509 verify error>": the caller fails the connection and never falls
 * back to passing the bytes through.
 *
 * What it owns: the SSL_CTX and a bounded session cache keyed by host (SK_UPSTREAM_SESSION_CAP, least
 * recently used evicted), so a second connection to a host resumes instead of a full handshake. A TLS 1.3
 * ticket is taken out of the cache when offered (single use: RFC 8446 C.4, and the server sends fresh ones);
 * a TLS 1.2 session stays until it expires. A session resumes only for the host it was verified for.
 * Single-threaded. */
#ifndef SK_SIDECAR_INSPECT_UPSTREAM_H
#define SK_SIDECAR_INSPECT_UPSTREAM_H

#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

struct ssl_st;
struct ssl_ctx_st;
struct sk_upstream;

#define SK_UPSTREAM_SESSION_CAP 256
#define SK_UPSTREAM_ALPN_DEFAULT "h2,http/1.1"

struct sk_upstream_opts {
	const char *ca_file;    /* PEM trust bundle; NULL: the system's default verify paths */
	const char *alpn;       /* protocols to offer, comma-separated; NULL: SK_UPSTREAM_ALPN_DEFAULT, "": none */
	size_t session_cap;     /* 0: SK_UPSTREAM_SESSION_CAP */
};

/* opts may be NULL (all defaults). Errors name the bundle file. *out owned. */
SK_MUST_USE int sk_upstream_new(const struct sk_upstream_opts *opts, struct sk_upstream **out,
				struct sk_err *err);
void sk_upstream_free(struct sk_upstream *u);

/* A client SSL (owned, SSL_free it) on the connected fd for host (the agent's SNI, or the original
 * destination's address as text): SNI, host check and a cached session set; drive it with SSL_connect.
 * alpn_wire: the protocols to offer instead of the configured ones, in ALPN wire format (NULL: the
 * configured ones). NULL with err on failure. */
struct ssl_st *sk_upstream_ssl(struct sk_upstream *u, const char *host, int fd, const unsigned char *alpn_wire,
			       size_t alpn_wire_len, struct sk_err *err);

/* Describes why SSL_connect failed (ssl_error: SSL_get_error's answer) in err: "upstream_cert_invalid:
 * <reason>" when the server's certificate did not verify, "upstream_tls: <reason>" otherwise. Empties
 * the thread's OpenSSL error queue. Returns -EPROTO. */
int sk_upstream_failure(struct ssl_st *ssl, int ssl_error, struct sk_err *err);

/* The configured ALPN list in wire format (borrowed; *len 0 when none). */
const unsigned char *sk_upstream_alpn(const struct sk_upstream *u, size_t *len);
/* Sessions cached now. */
size_t sk_upstream_sessions(const struct sk_upstream *u);

/* "h2,http/1.1" → wire format into out (cap bytes). Returns its length, or -EINVAL for an empty or
 * over-255-byte protocol, -ENOSPC when out is too small. */
int sk_alpn_wire(const char *list, unsigned char *out, size_t cap);

#endif

/* injector/tls.h — stockade-injector's serving certificate: an OpenSSL server context (TLS 1.2 and 1.3
 * only, ECDHE with AEAD ciphers on 1.2, no renegotiation) built from a certificate chain file and a key
 * file, and rebuilt when either file changes, so a rotated certificate (a Secret updated by the chart or
 * cert-manager, which the kubelet swaps in atomically) is served without a restart.
 *
 * What it owns: the current context (connections take a reference, so a swap never pulls it from under a
 * handshake) and the files' identity (device, inode, size, mtime) it was built from. A change that does not
 * load (a key that does not match the certificate yet, half of a non-atomic copy) keeps the old context
 * and is reported once; the next change is tried again. Thread-safe. */
#ifndef SK_INJECTOR_TLS_H
#define SK_INJECTOR_TLS_H

#include <stdbool.h>

struct sk_err;
struct ssl_ctx_st;
struct sk_tls;

/* Loads both files; 0 or -errno with err naming the file and OpenSSL's reason. *out is owned. */
int sk_tls_open(const char *cert_path, const char *key_path, struct sk_tls **out, struct sk_err *err);
void sk_tls_free(struct sk_tls *t);

/* A new reference to the current context (release with SSL_CTX_free). */
struct ssl_ctx_st *sk_tls_ctx(struct sk_tls *t);

/* Stats both files; when either changed, builds a new context. 1 = reloaded, 0 = unchanged (or a failed
 * change already reported), <0 = this change failed to load (err says why; the old context stays). */
int sk_tls_maybe_reload(struct sk_tls *t, struct sk_err *err);

/* The serving certificate's notAfter is still ahead (for /readyz). */
bool sk_tls_valid_now(struct sk_tls *t);

/* The current certificate's subject and notAfter, for log lines ("CN=x, until Nov 25 17:00:00 2026 GMT"). */
void sk_tls_describe(struct sk_tls *t, char *buf, unsigned len);

#endif

/* sidecar/inspect/ca.h — the TLS-inspection CA of one pod: the certificate authority that signs the leaf
 * certificates the sidecar presents to the agent when it terminates TLS (docs/architecture.md "TLS
 * inspection (library)").
 *
 * Two ways to get one:
 *   - generated at sidecar start: an ECDSA P-256 key and a self-signed CA certificate (CA:TRUE and
 *     keyCertSign|cRLSign, both critical, a subject key identifier, a random 128-bit serial, valid from an
 *     hour ago for SK_CA_VALID_DAYS, subject "stockade pod CA <hostname>"). The private key lives in this
 *     process's memory only: never written to a file, a volume or the environment, so it dies with the pod
 *     and one pod's CA is worth nothing against another pod;
 *   - loaded from an operator's certificate and key PEM files (a Secret mounted into the sidecar alone),
 *     checked to be a CA that may sign certificates and to match the key.
 *
 * What it owns: the key, the certificate and its PEM text (what the admin port serves at /ca.pem, for the
 * agent's trust store). Immutable after creation. */
#ifndef SK_SIDECAR_INSPECT_CA_H
#define SK_SIDECAR_INSPECT_CA_H

#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

struct x509_st;
struct evp_pkey_st;
struct sk_ca;

#define SK_CA_VALID_DAYS 30   /* a generated CA outlives any pod worth inspecting; a bound all the same */

/* Generates a key and a self-signed CA for `hostname` (NULL: gethostname()). *out owned. */
SK_MUST_USE int sk_ca_generate(const char *hostname, struct sk_ca **out, struct sk_err *err);
/* Loads an operator's CA: the certificate (the first PEM certificate of cert_path) must have
 * basicConstraints CA:TRUE, keyCertSign if it has a keyUsage, be valid now, and match the key of key_path.
 * Errors name the file. *out owned. */
SK_MUST_USE int sk_ca_load(const char *cert_path, const char *key_path, struct sk_ca **out, struct sk_err *err);
void sk_ca_free(struct sk_ca *ca);

/* The CA certificate and key (borrowed, alive as long as ca). */
struct x509_st *sk_ca_cert(const struct sk_ca *ca);
struct evp_pkey_st *sk_ca_key(const struct sk_ca *ca);
/* The certificate as PEM text (borrowed, NUL-terminated), its length in *len if len is not NULL. */
const char *sk_ca_pem(const struct sk_ca *ca, size_t *len);

/* Makes this process non-dumpable (prctl PR_SET_DUMPABLE 0): /proc/PID/mem, environ and maps become
 * root-owned, so another UID in the pod (the agent) cannot read the CA key out of the sidecar's memory,
 * and no core file is written. 0 or -errno. */
SK_MUST_USE int sk_process_harden(struct sk_err *err);

#endif

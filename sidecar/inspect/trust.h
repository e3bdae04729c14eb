/* sidecar/inspect/trust.h — the agent's trust files for the inspection CA, written by the
 * sidecar at start into a directory the agent mounts read-only, so the runtimes in the agent trust the pod's
 * CA through the environment or the system paths, with no per-tool setting:
 *   - ca.pem: the pod's CA certificate alone;
 *   - bundle.pem: the system bundle (the sidecar image's, or a configured file) followed by ours: what
 *     OpenSSL, curl, Python, Node, git... read (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS...);
 *   - truststore.p12: a PKCS#12 trust store with every certificate of bundle.pem, each bag carrying the JDK's
 *     trusted-usage attribute (OID 2.16.840.1.113894.746875.1.1, OpenSSL 3.2's NID_oracle_jdk_trustedkeyusage,
 *     value anyExtendedKeyUsage: what `openssl pkcs12 -export -nokeys -jdktrust anyExtendedKeyUsage` writes),
 *     so Java reads them as trusted certificate entries. Its password is SK_TRUST_P12_PASSWORD, public: the
 *     store holds public certificates only, and PKCS#12 wants a password for its MAC.
 * Each file is replaced atomically (common/atomic_file.h), mode 0644. The CA's private key never comes here.
 * What it owns: nothing past a call. */
#ifndef SK_SIDECAR_INSPECT_TRUST_H
#define SK_SIDECAR_INSPECT_TRUST_H
#include <stddef.h>
#include "common/err.h"
#include "common/util.h"

#define SK_TRUST_SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"   /* Debian's, Alpine's, the sidecar image's */
#define SK_TRUST_P12_PASSWORD "changeit"   /* the JDK's own cacerts password: public by design */
#define SK_TRUST_BUNDLE_MAX (8u << 20)     /* a system bundle is ~200 KB; a bound all the same */

/* Writes ca.pem, bundle.pem and truststore.p12 into dir from the CA certificate's PEM (ca_pem, ca_len
 * bytes). system_bundle: the PEM bundle to put before ours; NULL means SK_TRUST_SYSTEM_BUNDLE, and then a
 * missing file gives a bundle of ours alone (an image without one); a file named explicitly must be
 * readable. 0, or < 0 with err naming the file and the step. */
SK_MUST_USE int sk_trust_write(const char *dir, const char *system_bundle, const char *ca_pem, size_t ca_len,
			       struct sk_err *err);
#endif

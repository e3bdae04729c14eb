/* sidecar/inspect/ossl.h — what the inspection room's modules share of OpenSSL (not for other rooms):
 * OpenSSL's queued error as text, and one certificate builder for the CA and its leaves, so both get the
 * same serial, validity and extension handling. */
#ifndef SK_SIDECAR_INSPECT_OSSL_H
#define SK_SIDECAR_INSPECT_OSSL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "common/err.h"

/* OpenSSL's first queued error as text in buf; the thread's queue is emptied. Returns buf. */
const char *sk_ossl_reason(char *buf, size_t len);

struct sk_cert_spec {
	const char *subject_cn;   /* NULL: no CN (a leaf for a name over 64 bytes) */
	const char *org;          /* NULL: no O */
	time_t now;               /* 0: time(NULL) */
	long not_before;          /* seconds from now (negative: backdated) */
	long not_after;           /* seconds from now */
	bool ca;                  /* CA:TRUE, keyCertSign|cRLSign; else CA:FALSE, digitalSignature, serverAuth */
	const char *san_dns;      /* leaf: subjectAltName DNS name, or */
	const unsigned char *san_ip;  /* leaf: subjectAltName IP (4 or 16 bytes, san_ip_len) */
	size_t san_ip_len;
};

/* A certificate for pub, signed with issuer_key (SHA-256) under issuer's name (issuer NULL: self-signed).
 * A certificate never outlives its issuer: notAfter is clamped to the issuer's. Returns owned or NULL. */
X509 *sk_cert_build(const struct sk_cert_spec *spec, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *issuer_key,
		    struct sk_err *err);

#endif

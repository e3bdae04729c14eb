/* sidecar/inspect/trust.c — the agent's trust files (trust.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include "common/atomic_file.h"
#include "common/read_file.h"
#include "common/strbuf.h"
#include "sidecar/inspect/ossl.h"
#include "sidecar/inspect/trust.h"

#define JDK_TRUSTED_USAGE_OID "2.16.840.1.113894.746875.1.1"   /* OpenSSL 3.0's headers lack the NID */

static int write_one(const char *dir, const char *name, const void *data, size_t len, struct sk_err *err)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return sk_err_set(err, ENAMETOOLONG, "trust: %s/%s: path too long", dir, name);
	return sk_atomic_write(path, data, len, 0644, err);
}

/* The PKCS#12 trust store of every certificate in pem (DER into *out, owned, *out_len bytes); other PEM
 * blocks (a CRL, a key) are skipped. The certificates travel unencrypted: they are public, and Java reads
 * plain cert bags as well as encrypted ones; the MAC (HMAC-SHA1, which every JDK reads, under the public
 * password) is there for readers that insist on one. */
static int build_p12(const char *pem, size_t len, unsigned char **out, int *out_len, struct sk_err *err)
{
	char why[256];
	int rc, nc = 0;
	BIO *in = BIO_new_mem_buf(pem, (int)len);
	STACK_OF(X509_INFO) *infos = in ? PEM_X509_INFO_read_bio(in, NULL, NULL, NULL) : NULL;
	STACK_OF(PKCS12_SAFEBAG) *bags = sk_PKCS12_SAFEBAG_new_null();
	STACK_OF(PKCS7) *safes = sk_PKCS7_new_null();
	ASN1_OBJECT *any = OBJ_nid2obj(NID_anyExtendedKeyUsage);
	PKCS12 *p12 = NULL;
	if (!infos || !bags || !safes || !any) {
		rc = sk_err_set(err, EINVAL, "trust: truststore.p12: reading the bundle: %s",
				sk_ossl_reason(why, sizeof(why)));
		goto out;
	}
	for (int i = 0; i < sk_X509_INFO_num(infos); i++) {
		X509 *x = sk_X509_INFO_value(infos, i)->x509;
		if (!x)
			continue;
		char alias[32];
		(void)snprintf(alias, sizeof(alias), "stockade-trust-%d", nc);   /* fits: 15 + at most 11 */
		PKCS12_SAFEBAG *bag = PKCS12_SAFEBAG_create_cert(x);
		if (!bag || !sk_PKCS12_SAFEBAG_push(bags, bag)) {
			PKCS12_SAFEBAG_free(bag);
			rc = sk_err_set(err, ENOMEM, "trust: truststore.p12: certificate %d: out of memory", nc);
			goto out;
		}
		/* len -1: bytes is the ASN1_OBJECT itself (X509_ATTRIBUTE_set1_data) */
		if (!PKCS12_add1_attr_by_txt(bag, JDK_TRUSTED_USAGE_OID, V_ASN1_OBJECT, (const unsigned char *)any, -1) ||
		    !PKCS12_add_friendlyname_utf8(bag, alias, -1)) {
			rc = sk_err_set(err, ENOMEM, "trust: truststore.p12: certificate %d's attributes: %s", nc,
					sk_ossl_reason(why, sizeof(why)));
			goto out;
		}
		nc++;
	}
	if (nc == 0) {
		rc = sk_err_set(err, EINVAL, "trust: truststore.p12: the bundle holds no certificate");
		goto out;
	}
	PKCS7 *p7 = PKCS12_pack_p7data(bags);
	if (!p7 || !sk_PKCS7_push(safes, p7)) {
		PKCS7_free(p7);
		rc = sk_err_set(err, ENOMEM, "trust: truststore.p12: packing: %s", sk_ossl_reason(why, sizeof(why)));
		goto out;
	}
	p12 = PKCS12_add_safes(safes, 0);
	if (!p12 || !PKCS12_set_mac(p12, SK_TRUST_P12_PASSWORD, -1, NULL, 0, PKCS12_DEFAULT_ITER, NULL)) {
		rc = sk_err_set(err, ENOMEM, "trust: truststore.p12: MAC: %s", sk_ossl_reason(why, sizeof(why)));
		goto out;
	}
	*out = NULL;
	*out_len = i2d_PKCS12(p12, out);
	if (*out_len <= 0) {
		rc = sk_err_set(err, ENOMEM, "trust: truststore.p12: encoding: %s", sk_ossl_reason(why, sizeof(why)));
		goto out;
	}
	rc = 0;
out:
	PKCS12_free(p12);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	BIO_free(in);
	return rc;
}

int sk_trust_write(const char *dir, const char *system_bundle, const char *ca_pem, size_t ca_len,
		   struct sk_err *err)
{
	const char *sys = system_bundle ? system_bundle : SK_TRUST_SYSTEM_BUNDLE;
	struct sk_err rerr = { 0 };
	size_t slen = 0;
	sk_autofree char *sysb = sk_read_file(sys, SK_TRUST_BUNDLE_MAX, &slen, &rerr);
	if (!sysb) {
		if (system_bundle || rerr.code != ENOENT)
			return sk_err_set(err, rerr.code ? rerr.code : EIO, "trust: system bundle: %s", rerr.msg);
		slen = 0;   /* the default bundle absent: ours alone */
	}
	int rc = write_one(dir, "ca.pem", ca_pem, ca_len, err);
	if (rc < 0)
		return rc;
	struct sk_strbuf b = { 0 };
	if (slen) {
		(void)sk_strbuf_put(&b, sysb, slen);   /* an allocation failure sticks: checked once below */
		if (sysb[slen - 1] != '\n')
			(void)sk_strbuf_put(&b, "\n", 1);
	}
	(void)sk_strbuf_put(&b, ca_pem, ca_len);
	if (sk_strbuf_ok(&b) < 0) {
		sk_strbuf_free(&b);
		return sk_err_set(err, ENOMEM, "trust: bundle.pem: out of memory");
	}
	rc = write_one(dir, "bundle.pem", b.p, b.len, err);
	unsigned char *der = NULL;
	int der_len = 0;
	if (rc == 0)
		rc = build_p12(b.p, b.len, &der, &der_len, err);
	sk_strbuf_free(&b);
	if (rc == 0)
		rc = write_one(dir, "truststore.p12", der, (size_t)der_len, err);
	OPENSSL_free(der);
	return rc;
}

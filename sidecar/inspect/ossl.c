/* sidecar/inspect/ossl.c — see ossl.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "sidecar/inspect/ossl.h"

const char *sk_ossl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();
	if (!e)
		(void)snprintf(buf, len, "unknown error");
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	return buf;
}

/* A 127-bit positive random serial: unique per certificate without a counter to keep (RFC 5280 caps it at
 * 20 bytes, CA/B at least 64 bits of randomness). */
static int set_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	int ok = bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 && !BN_is_zero(bn) &&
		 BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	int ok = e && X509_add_ext(x, e, -1) == 1;
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

/* subjectAltName built as GENERAL_NAMEs, never from a config string: a name is one DNS entry whatever
 * bytes it holds (a comma in a string form would start a second entry). */
static int add_san(X509 *x, const struct sk_cert_spec *s)
{
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_STRING *v = s->san_dns ? (ASN1_STRING *)ASN1_IA5STRING_new() : (ASN1_STRING *)ASN1_OCTET_STRING_new();
	int ok = 0;
	if (!names || !gn || !v)
		goto out;
	if (s->san_dns) {
		if (ASN1_STRING_set(v, s->san_dns, (int)strlen(s->san_dns)) != 1)
			goto out;
		GENERAL_NAME_set0_value(gn, GEN_DNS, v);
	} else {
		if (ASN1_STRING_set(v, s->san_ip, (int)s->san_ip_len) != 1)
			goto out;
		GENERAL_NAME_set0_value(gn, GEN_IPADD, v);
	}
	v = NULL;
	if (sk_GENERAL_NAME_push(names, gn) <= 0)
		goto out;
	gn = NULL;
	ok = X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, 0) == 1;
out:
	ASN1_STRING_free(v);
	GENERAL_NAME_free(gn);
	GENERAL_NAMES_free(names);
	return ok ? 0 : -1;
}

X509 *sk_cert_build(const struct sk_cert_spec *s, EVP_PKEY *pub, X509 *issuer, EVP_PKEY *issuer_key,
		    struct sk_err *err)
{
	char why[256];
	const char *step = "new";
	time_t now = s->now ? s->now : time(NULL);
	X509 *x = X509_new();
	X509_NAME *name = NULL;
	if (!x)
		goto fail;
	step = "fields";
	if (X509_set_version(x, X509_VERSION_3) != 1 || set_serial(x) < 0 ||
	    !X509_time_adj_ex(X509_getm_notBefore(x), 0, s->not_before, &now) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), 0, s->not_after, &now) || X509_set_pubkey(x, pub) != 1)
		goto fail;
	if (issuer && ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(issuer)) > 0 &&
	    X509_set1_notAfter(x, X509_get0_notAfter(issuer)) != 1)
		goto fail;
	step = "subject";
	if (!(name = X509_NAME_new()))
		goto fail;
	if (s->org && X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
						 (const unsigned char *)s->org, -1, -1, 0) != 1)
		goto fail;
	if (s->subject_cn && X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
							(const unsigned char *)s->subject_cn, -1, -1, 0) != 1)
		goto fail;
	if (X509_set_subject_name(x, name) != 1 ||
	    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) != 1)
		goto fail;
	step = "extensions";
	if (s->ca) {
		if (add_ext(x, issuer, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
		    add_ext(x, issuer, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
		    add_ext(x, issuer, NID_subject_key_identifier, "hash") < 0)
			goto fail;
	} else {
		if (add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
		    add_ext(x, issuer, NID_key_usage, "critical,digitalSignature") < 0 ||
		    add_ext(x, issuer, NID_ext_key_usage, "serverAuth") < 0 ||
		    (issuer && add_ext(x, issuer, NID_authority_key_identifier, "keyid:always") < 0) ||
		    ((s->san_dns || s->san_ip) && add_san(x, s) < 0))
			goto fail;
	}
	step = "sign";
	if (X509_sign(x, issuer_key, EVP_sha256()) <= 0)
		goto fail;
	X509_NAME_free(name);
	return x;
fail:
	sk_err_set(err, EIO, "certificate %s: %s", step, sk_ossl_reason(why, sizeof(why)));
	X509_NAME_free(name);
	X509_free(x);
	return NULL;
}

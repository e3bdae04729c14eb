/* sidecar/inspect/ca.c — see ca.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/ossl.h"

struct sk_ca {
	X509 *cert;
	EVP_PKEY *key;
	char *pem;
	size_t pem_len;
};

void sk_ca_free(struct sk_ca *ca)
{
	if (!ca)
		return;
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);   /* OpenSSL clears the key material as it frees it */
	free(ca->pem);
	free(ca);
}

X509 *sk_ca_cert(const struct sk_ca *ca)
{
	return ca->cert;
}

EVP_PKEY *sk_ca_key(const struct sk_ca *ca)
{
	return ca->key;
}

const char *sk_ca_pem(const struct sk_ca *ca, size_t *len)
{
	if (len)
		*len = ca->pem_len;
	return ca->pem;
}

static int fill_pem(struct sk_ca *ca, struct sk_err *err)
{
	char why[256];
	BIO *b = BIO_new(BIO_s_mem());
	if (!b || PEM_write_bio_X509(b, ca->cert) != 1) {
		BIO_free(b);
		return sk_err_set(err, ENOMEM, "CA certificate PEM: %s", sk_ossl_reason(why, sizeof(why)));
	}
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	if (n <= 0 || !(ca->pem = malloc((size_t)n + 1))) {
		BIO_free(b);
		return sk_err_set(err, ENOMEM, "CA certificate PEM: out of memory");
	}
	memcpy(ca->pem, data, (size_t)n);
	ca->pem[n] = '\0';
	ca->pem_len = (size_t)n;
	BIO_free(b);
	return 0;
}

int sk_ca_generate(const char *hostname, struct sk_ca **out, struct sk_err *err)
{
	char why[256], host[256] = "";
	if (!hostname) {
		if (gethostname(host, sizeof(host) - 1) < 0)
			(void)snprintf(host, sizeof(host), "unknown");
		hostname = host;
	}
	struct sk_ca *ca = calloc(1, sizeof(*ca));
	if (!ca)
		return sk_err_set(err, ENOMEM, "inspect CA: out of memory");
	int r;
	/* P-256: every TLS client verifies it, and a keygen costs well under a millisecond */
	if (!(ca->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"))) {
		r = sk_err_set(err, EIO, "inspect CA: key generation: %s", sk_ossl_reason(why, sizeof(why)));
		goto fail;
	}
	char cn[300];
	(void)snprintf(cn, sizeof(cn), "stockade pod CA %.200s", hostname);
	struct sk_cert_spec spec = {
		.subject_cn = cn,
		.org = "stockade",
		.not_before = -3600,
		.not_after = (long)SK_CA_VALID_DAYS * 86400,
		.ca = true,
	};
	if (!(ca->cert = sk_cert_build(&spec, ca->key, NULL, ca->key, err))) {
		r = sk_err_prefix(err, "inspect CA");
		goto fail;
	}
	if ((r = fill_pem(ca, err)) < 0)
		goto fail;
	*out = ca;
	return 0;
fail:
	sk_ca_free(ca);
	return r;
}

static int read_cert(const char *path, X509 **out, struct sk_err *err)
{
	char why[256];
	sk_autofclose FILE *f = fopen(path, "re");
	if (!f)
		return sk_err_sys(err, errno, "inspect CA certificate '%s'", path);
	if (!(*out = PEM_read_X509(f, NULL, NULL, NULL)))
		return sk_err_set(err, EINVAL, "inspect CA certificate '%s': no PEM certificate: %s", path,
				  sk_ossl_reason(why, sizeof(why)));
	return 0;
}

static int read_key(const char *path, EVP_PKEY **out, struct sk_err *err)
{
	char why[256];
	sk_autofclose FILE *f = fopen(path, "re");
	if (!f)
		return sk_err_sys(err, errno, "inspect CA key '%s'", path);
	/* an empty passphrase and no prompt: an encrypted key is refused, never asked for on a terminal */
	if (!(*out = PEM_read_PrivateKey(f, NULL, NULL, (void *)"")))
		return sk_err_set(err, EINVAL, "inspect CA key '%s': no unencrypted PEM private key: %s", path,
				  sk_ossl_reason(why, sizeof(why)));
	return 0;
}

int sk_ca_load(const char *cert_path, const char *key_path, struct sk_ca **out, struct sk_err *err)
{
	struct sk_ca *ca = calloc(1, sizeof(*ca));
	if (!ca)
		return sk_err_set(err, ENOMEM, "inspect CA: out of memory");
	int r;
	if ((r = read_cert(cert_path, &ca->cert, err)) < 0 || (r = read_key(key_path, &ca->key, err)) < 0)
		goto fail;
	/* X509_check_ca: 1 for a v3 CA with CA:TRUE (and keyCertSign if keyUsage is present) */
	if (X509_check_ca(ca->cert) != 1) {
		r = sk_err_set(err, EINVAL, "inspect CA certificate '%s': not a CA (basicConstraints CA:TRUE and "
			       "keyUsage keyCertSign required)", cert_path);
		goto fail;
	}
	if ((X509_get_extension_flags(ca->cert) & EXFLAG_KUSAGE) &&
	    !(X509_get_key_usage(ca->cert) & KU_KEY_CERT_SIGN)) {
		r = sk_err_set(err, EINVAL, "inspect CA certificate '%s': keyUsage lacks keyCertSign", cert_path);
		goto fail;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(ca->cert)) <= 0 ||
	    X509_cmp_current_time(X509_get0_notBefore(ca->cert)) >= 0) {
		r = sk_err_set(err, EINVAL, "inspect CA certificate '%s': not valid now", cert_path);
		goto fail;
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		ERR_clear_error();
		r = sk_err_set(err, EINVAL, "inspect CA key '%s' does not match certificate '%s'", key_path,
			       cert_path);
		goto fail;
	}
	if ((r = fill_pem(ca, err)) < 0)
		goto fail;
	*out = ca;
	return 0;
fail:
	sk_ca_free(ca);
	return r;
}

int sk_process_harden(struct sk_err *err)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return sk_err_sys(err, errno, "prctl PR_SET_DUMPABLE 0");
	return 0;
}

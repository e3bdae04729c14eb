/* sidecar/inspect/ca_test.c — the inspection CA: what a generated CA carries, an operator's CA loaded and
 * refused (not a CA, a key of another certificate, a missing file: each error naming the file), the PEM
 * served at /ca.pem, and the process hardening. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/ossl.h"

static struct sk_ca *generate(const char *host)
{
	struct sk_ca *ca = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_ca_generate(host, &ca, &err), 0);
	assert_non_null(ca);
	return ca;
}

static bool ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);
	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1;
}

static void test_generated_ca_is_a_bounded_p256_ca(void **state)
{
	(void)state;
	struct sk_ca *ca = generate("agent-7f9c");
	X509 *x = sk_ca_cert(ca);
	assert_int_equal(X509_check_ca(x), 1);
	assert_true(ext_critical(x, NID_basic_constraints));
	assert_true(ext_critical(x, NID_key_usage));
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(x));
	/* self-signed with its own key, and the key is P-256 */
	assert_int_equal(X509_verify(x, sk_ca_key(ca)), 1);
	assert_int_equal(X509_check_private_key(x, sk_ca_key(ca)), 1);
	char group[32] = "";
	assert_int_equal(EVP_PKEY_get_group_name(sk_ca_key(ca), group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
	char subj[256];
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, subj, sizeof(subj));
	assert_string_equal(subj, "stockade pod CA agent-7f9c");
	/* valid now, backdated at most an hour, for SK_CA_VALID_DAYS at most */
	int days = 0, secs = 0;
	assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
	assert_true(days * 86400 + secs <= SK_CA_VALID_DAYS * 86400 + 3600);
	assert_true(days >= SK_CA_VALID_DAYS);
	assert_true(X509_cmp_current_time(X509_get0_notBefore(x)) < 0);
	assert_true(X509_cmp_current_time(X509_get0_notAfter(x)) > 0);
	/* two CAs: two keys, two serials */
	struct sk_ca *other = generate("agent-7f9c");
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(x), X509_get0_serialNumber(sk_ca_cert(other))),
			     0);
	assert_int_not_equal(EVP_PKEY_eq(sk_ca_key(ca), sk_ca_key(other)), 1);
	sk_ca_free(other);
	sk_ca_free(ca);
}

static void test_pem_reads_back_as_the_certificate(void **state)
{
	(void)state;
	struct sk_ca *ca = generate(NULL);
	size_t len = 0;
	const char *pem = sk_ca_pem(ca, &len);
	assert_int_equal(strlen(pem), len);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	assert_null(strstr(pem, "PRIVATE KEY"));
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *back = PEM_read_bio_X509(b, NULL, NULL, NULL);
	assert_non_null(back);
	assert_int_equal(X509_cmp(back, sk_ca_cert(ca)), 0);
	X509_free(back);
	BIO_free(b);
	sk_ca_free(ca);
}

/* ---- an operator's CA ---- */

struct files {
	char dir[64], cert[96], key[96];
};

static void write_pair(struct files *f, X509 *cert, EVP_PKEY *key)
{
	strcpy(f->dir, "/tmp/sk_ca_test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	(void)snprintf(f->cert, sizeof(f->cert), "%s/tls.crt", f->dir);
	(void)snprintf(f->key, sizeof(f->key), "%s/tls.key", f->dir);
	FILE *c = fopen(f->cert, "w"), *k = fopen(f->key, "w");
	assert_non_null(c);
	assert_non_null(k);
	assert_int_equal(PEM_write_X509(c, cert), 1);
	assert_int_equal(PEM_write_PrivateKey(k, key, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(c), 0);
	assert_int_equal(fclose(k), 0);
}

static void remove_pair(struct files *f)
{
	(void)unlink(f->cert);
	(void)unlink(f->key);
	(void)rmdir(f->dir);
}

static void test_load_operator_ca(void **state)
{
	(void)state;
	struct sk_ca *gen = generate("operator");
	struct files f;
	write_pair(&f, sk_ca_cert(gen), sk_ca_key(gen));
	struct sk_ca *ca = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_ca_load(f.cert, f.key, &ca, &err), 0);
	assert_int_equal(X509_cmp(sk_ca_cert(ca), sk_ca_cert(gen)), 0);
	assert_int_equal(EVP_PKEY_eq(sk_ca_key(ca), sk_ca_key(gen)), 1);
	assert_string_equal(sk_ca_pem(ca, NULL), sk_ca_pem(gen, NULL));
	sk_ca_free(ca);
	remove_pair(&f);
	sk_ca_free(gen);
}

static void test_load_refuses_a_key_of_another_certificate(void **state)
{
	(void)state;
	struct sk_ca *a = generate("a"), *b = generate("b");
	struct files f;
	write_pair(&f, sk_ca_cert(a), sk_ca_key(b));
	struct sk_ca *ca = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_ca_load(f.cert, f.key, &ca, &err), -EINVAL);
	assert_null(ca);
	assert_non_null(strstr(err.msg, "does not match"));
	assert_non_null(strstr(err.msg, f.key));
	assert_non_null(strstr(err.msg, f.cert));
	remove_pair(&f);
	sk_ca_free(a);
	sk_ca_free(b);
}

static void test_load_refuses_a_certificate_that_is_not_a_ca(void **state)
{
	(void)state;
	struct sk_ca *issuer = generate("issuer");
	struct sk_err err = { 0 };
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	assert_non_null(key);
	struct sk_cert_spec spec = { .subject_cn = "leaf", .not_before = -60, .not_after = 3600,
				     .san_dns = "leaf.example" };
	X509 *leaf = sk_cert_build(&spec, key, sk_ca_cert(issuer), sk_ca_key(issuer), &err);
	assert_non_null(leaf);
	struct files f;
	write_pair(&f, leaf, key);
	struct sk_ca *ca = NULL;
	assert_int_equal(sk_ca_load(f.cert, f.key, &ca, &err), -EINVAL);
	assert_null(ca);
	assert_non_null(strstr(err.msg, "not a CA"));
	assert_non_null(strstr(err.msg, f.cert));
	remove_pair(&f);
	X509_free(leaf);
	EVP_PKEY_free(key);
	sk_ca_free(issuer);
}

static void test_load_names_the_missing_or_unreadable_file(void **state)
{
	(void)state;
	struct sk_ca *gen = generate("x");
	struct files f;
	write_pair(&f, sk_ca_cert(gen), sk_ca_key(gen));
	struct sk_ca *ca = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_ca_load("/nonexistent/tls.crt", f.key, &ca, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/tls.crt"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_ca_load(f.cert, "/nonexistent/tls.key", &ca, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/tls.key"));
	/* the key file given as the certificate: no certificate in it */
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_ca_load(f.key, f.key, &ca, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no PEM certificate"));
	/* the certificate given as the key */
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_ca_load(f.cert, f.cert, &ca, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "private key"));
	assert_null(ca);
	remove_pair(&f);
	sk_ca_free(gen);
}

/* ---- hardening ---- */

static void test_harden_makes_the_process_non_dumpable(void **state)
{
	(void)state;
	/* in a child: the test runner itself stays dumpable (sanitizer reports, core files) */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sk_err err = { 0 };
		int before = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
		int r = sk_process_harden(&err);
		int after = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
		_exit(before == 1 && r == 0 && after == 0 ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated_ca_is_a_bounded_p256_ca),
		cmocka_unit_test(test_pem_reads_back_as_the_certificate),
		cmocka_unit_test(test_load_operator_ca),
		cmocka_unit_test(test_load_refuses_a_key_of_another_certificate),
		cmocka_unit_test(test_load_refuses_a_certificate_that_is_not_a_ca),
		cmocka_unit_test(test_load_names_the_missing_or_unreadable_file),
		cmocka_unit_test(test_harden_makes_the_process_non_dumpable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

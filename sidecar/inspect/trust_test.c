/* sidecar/inspect/trust_test.c — the agent's trust files: ca.pem is ours, bundle.pem the system bundle then
 * ours, truststore.p12 parses under the public password with every certificate carrying the JDK's
 * trusted-usage attribute (anyExtendedKeyUsage), each file replaced atomically with mode 0644; a missing
 * default bundle gives ours alone, a missing named one is an error naming it. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include "common/read_file.h"
#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/trust.h"

struct fx {
	char dir[64];
	struct sk_ca *ca, *other;   /* ours, and one standing for the system bundle */
	char sys[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sk_err err = { 0 };
	assert_non_null(f);
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/sk-trust-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(sk_ca_generate("pod-a", &f->ca, &err), 0);
	assert_int_equal(sk_ca_generate("system-root", &f->other, &err), 0);
	(void)snprintf(f->sys, sizeof(f->sys), "%s/system.crt", f->dir);
	FILE *s = fopen(f->sys, "w");
	assert_non_null(s);
	size_t n;
	const char *pem = sk_ca_pem(f->other, &n);
	/* no final newline: the bundle must still put ours on a line of its own */
	assert_int_equal(fwrite(pem, 1, n - 1, s), n - 1);
	assert_int_equal(fclose(s), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	const char *names[] = { "ca.pem", "bundle.pem", "truststore.p12", "system.crt" };
	char p[128];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		(void)snprintf(p, sizeof(p), "%s/%s", f->dir, names[i]);
		(void)unlink(p);   /* some cases write none */
	}
	(void)rmdir(f->dir);
	sk_ca_free(f->ca);
	sk_ca_free(f->other);
	free(f);
	return 0;
}

static char *slurp(const struct fx *f, const char *name, size_t *len)
{
	char p[128];
	struct sk_err err = { 0 };
	struct stat st;
	(void)snprintf(p, sizeof(p), "%s/%s", f->dir, name);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	char *d = sk_read_file(p, 1u << 24, len, &err);
	assert_non_null(d);
	return d;
}

static bool has_jdk_trust(PKCS12_SAFEBAG *bag)
{
	ASN1_OBJECT *oid = OBJ_txt2obj("2.16.840.1.113894.746875.1.1", 1);
	const STACK_OF(X509_ATTRIBUTE) *attrs = PKCS12_SAFEBAG_get0_attrs(bag);
	bool ok = false;
	int i = X509at_get_attr_by_OBJ(attrs, oid, -1);
	if (i >= 0) {
		X509_ATTRIBUTE *a = X509at_get_attr(attrs, i);
		ASN1_TYPE *t = X509_ATTRIBUTE_get0_type(a, 0);
		ok = t && t->type == V_ASN1_OBJECT && OBJ_obj2nid(t->value.object) == NID_anyExtendedKeyUsage;
	}
	ASN1_OBJECT_free(oid);
	return ok;
}

static void test_files(void **state)
{
	struct fx *f = *state;
	struct sk_err err = { 0 };
	size_t ours_len, sys_len, len;
	const char *ours = sk_ca_pem(f->ca, &ours_len);
	const char *sys = sk_ca_pem(f->other, &sys_len);
	assert_int_equal(sk_trust_write(f->dir, f->sys, ours, ours_len, &err), 0);

	char *ca = slurp(f, "ca.pem", &len);
	assert_int_equal(len, ours_len);
	assert_memory_equal(ca, ours, len);
	free(ca);

	char *b = slurp(f, "bundle.pem", &len);
	assert_int_equal(len, sys_len + ours_len);   /* the system's (its newline restored), then ours */
	assert_memory_equal(b, sys, sys_len);
	assert_memory_equal(b + sys_len, ours, ours_len);
	free(b);

	char *der = slurp(f, "truststore.p12", &len);
	const unsigned char *q = (const unsigned char *)der;
	PKCS12 *p12 = d2i_PKCS12(NULL, &q, (long)len);
	assert_non_null(p12);
	assert_int_equal(PKCS12_verify_mac(p12, "changeit", -1), 1);
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	STACK_OF(X509) *cas = NULL;
	assert_int_equal(PKCS12_parse(p12, SK_TRUST_P12_PASSWORD, &key, &cert, &cas), 1);
	assert_null(key);   /* a trust store: no key */
	assert_null(cert);
	assert_int_equal(sk_X509_num(cas), 2);
	int found = 0;
	for (int i = 0; i < sk_X509_num(cas); i++) {
		found |= X509_cmp(sk_X509_value(cas, i), sk_ca_cert(f->ca)) == 0 ? 1 : 0;
		found |= X509_cmp(sk_X509_value(cas, i), sk_ca_cert(f->other)) == 0 ? 2 : 0;
	}
	assert_int_equal(found, 3);
	sk_X509_pop_free(cas, X509_free);

	/* every bag, read as Java reads them, says trusted for any use */
	STACK_OF(PKCS7) *safes = PKCS12_unpack_authsafes(p12);
	assert_non_null(safes);
	int bags_seen = 0;
	for (int i = 0; i < sk_PKCS7_num(safes); i++) {
		STACK_OF(PKCS12_SAFEBAG) *bags = PKCS12_unpack_p7data(sk_PKCS7_value(safes, i));
		assert_non_null(bags);
		for (int j = 0; j < sk_PKCS12_SAFEBAG_num(bags); j++) {
			PKCS12_SAFEBAG *bag = sk_PKCS12_SAFEBAG_value(bags, j);
			assert_int_equal(PKCS12_SAFEBAG_get_nid(bag), NID_certBag);
			assert_true(has_jdk_trust(bag));
			bags_seen++;
		}
		sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	}
	assert_int_equal(bags_seen, 2);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	PKCS12_free(p12);
	free(der);
}

/* a second write replaces every file whole (a rename: the old inode stays intact for a reader holding it) */
static void test_atomic_replace(void **state)
{
	struct fx *f = *state;
	struct sk_err err = { 0 };
	size_t n, len;
	const char *pem = sk_ca_pem(f->ca, &n);
	assert_int_equal(sk_trust_write(f->dir, f->sys, pem, n, &err), 0);
	char p[128];
	(void)snprintf(p, sizeof(p), "%s/bundle.pem", f->dir);
	FILE *held = fopen(p, "r");
	assert_non_null(held);
	struct stat before, after;
	assert_int_equal(fstat(fileno(held), &before), 0);

	const char *other = sk_ca_pem(f->other, &n);
	assert_int_equal(sk_trust_write(f->dir, f->sys, other, n, &err), 0);
	assert_int_equal(stat(p, &after), 0);
	assert_true(before.st_ino != after.st_ino);
	char *ca = slurp(f, "ca.pem", &len);
	assert_int_equal(len, n);
	assert_memory_equal(ca, other, n);
	free(ca);
	/* the reader's file is the old one, whole */
	char buf[64];
	assert_true(fread(buf, 1, sizeof(buf), held) > 0);
	assert_int_equal(fclose(held), 0);
	/* no temporary file left beside them (system.crt and the three) */
	DIR *d = opendir(f->dir);
	assert_non_null(d);
	int entries = 0;
	for (struct dirent *e; (e = readdir(d));)
		entries += e->d_name[0] != '.';
	assert_int_equal(closedir(d), 0);
	assert_int_equal(entries, 4);
}

static void test_bundles(void **state)
{
	struct fx *f = *state;
	struct sk_err err = { 0 };
	size_t n;
	const char *pem = sk_ca_pem(f->ca, &n);
	char missing[128];
	(void)snprintf(missing, sizeof(missing), "%s/nope.crt", f->dir);
	assert_int_equal(sk_trust_write(f->dir, missing, pem, n, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nope.crt"));

	/* a bundle with no certificate at all (an empty system file, ours not a certificate): refused, naming
	 * the store */
	memset(&err, 0, sizeof(err));
	FILE *e = fopen(f->sys, "w");
	assert_non_null(e);
	assert_int_equal(fclose(e), 0);
	assert_int_equal(sk_trust_write(f->dir, f->sys, "not a pem\n", 10, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "truststore.p12"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bundles, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/inspect/leaf_test.c — leaf certificates: a leaf verifies against the CA for its name (and only
 * for it), IP literals get an IP SAN, a cached leaf costs no signature, the cap evicts the least recently
 * used name, a leaf near its end is minted again, names that are not host names are refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/x509v3.h>

#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/leaf.h"

struct fixture {
	struct sk_ca *ca;
	struct sk_leaf_cache *cache;
};

static int setup_cap(void **state, size_t cap)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sk_err err = { 0 };
	if (!f || sk_ca_generate("leaf-test", &f->ca, &err) < 0 || sk_leaf_cache_new(f->ca, cap, &f->cache, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_cap(state, 0);
}

static int setup_cap3(void **state)
{
	return setup_cap(state, 3);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	sk_leaf_cache_free(f->cache);
	sk_ca_free(f->ca);
	free(f);
	return 0;
}

static X509 *get(struct fixture *f, const char *name, time_t now)
{
	X509 *x = NULL;
	struct sk_err err = { 0 };
	if (sk_leaf_get(f->cache, name, now, &x, &err) < 0)
		fail_msg("leaf for %s: %s", name, err.msg);
	return x;
}

/* X509_verify_cert against the CA alone, the name checked as a TLS client would (host or IP), at `at`. */
static int verify(struct fixture *f, X509 *leaf, const char *host, const char *ip, time_t at)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_add_cert(store, sk_ca_cert(f->ca)), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);
	assert_int_equal(X509_VERIFY_PARAM_set_purpose(p, X509_PURPOSE_SSL_SERVER), 1);
	if (host)
		assert_int_equal(X509_VERIFY_PARAM_set1_host(p, host, 0), 1);
	if (ip)
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(p, ip), 1);
	X509_VERIFY_PARAM_set_time(p, at);
	int ok = X509_verify_cert(ctx);
	int e = X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok == 1 ? 0 : e;
}

static void test_leaf_verifies_for_its_name_only(void **state)
{
	struct fixture *f = *state;
	time_t now = time(NULL);
	X509 *x = get(f, "api.example.com", now);
	assert_int_equal(verify(f, x, "api.example.com", NULL, now), 0);
	assert_int_equal(verify(f, x, "other.example.com", NULL, now), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(X509_check_host(x, "api.example.com", 0, 0, NULL), 1);
	/* a server certificate, not a CA, with the leaf key */
	assert_int_equal(X509_check_ca(x), 0);
	assert_int_equal(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 1);
	assert_true(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
	assert_int_equal(X509_check_private_key(x, sk_leaf_key(f->cache)), 1);
	/* backdated an hour, 24 h long */
	int days = 0, secs = 0;
	assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
	assert_int_equal(days * 86400 + secs, SK_LEAF_LIFETIME_S + SK_LEAF_BACKDATE_S);
	assert_int_equal(verify(f, x, "api.example.com", NULL, now - SK_LEAF_BACKDATE_S + 5), 0);
	assert_int_equal(verify(f, x, "api.example.com", NULL, now + SK_LEAF_LIFETIME_S + 5),
			 X509_V_ERR_CERT_HAS_EXPIRED);
	X509_free(x);
}

static void test_ip_literal_gets_an_ip_san(void **state)
{
	struct fixture *f = *state;
	time_t now = time(NULL);
	X509 *v4 = get(f, "203.0.113.7", now), *v6 = get(f, "2001:db8::7", now);
	assert_int_equal(verify(f, v4, NULL, "203.0.113.7", now), 0);
	assert_int_equal(verify(f, v4, NULL, "203.0.113.8", now), X509_V_ERR_IP_ADDRESS_MISMATCH);
	assert_int_equal(verify(f, v6, NULL, "2001:db8::7", now), 0);
	/* an IP SAN, not a DNS one holding the address's text */
	assert_int_equal(X509_check_host(v4, "203.0.113.7", 0, 0, NULL), 0);
	X509_free(v4);
	X509_free(v6);
}

static void test_cache_hit_costs_no_signature(void **state)
{
	struct fixture *f = *state;
	time_t now = time(NULL);
	X509 *a = get(f, "api.example.com", now);
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 1);
	X509 *b = get(f, "api.example.com", now + 60);
	X509 *c = get(f, "API.Example.COM", now + 120);   /* names are case-insensitive */
	assert_ptr_equal(a, b);
	assert_ptr_equal(a, c);
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 1);
	assert_int_equal(sk_leaf_stats(f->cache).hits, 2);
	X509 *d = get(f, "b.example.com", now);
	assert_ptr_not_equal(a, d);
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 2);
	X509_free(a);
	X509_free(b);
	X509_free(c);
	X509_free(d);
}

static void test_cap_evicts_least_recently_used(void **state)
{
	struct fixture *f = *state;   /* cap 3 */
	time_t now = time(NULL);
	const char *names[] = { "a.test", "b.test", "c.test", "a.test", "d.test" };
	X509 *x[5];
	for (size_t i = 0; i < 5; i++)
		x[i] = get(f, names[i], now);
	/* a was used again before d came: b was the least recently used */
	struct sk_leaf_stats s = sk_leaf_stats(f->cache);
	assert_int_equal(s.signed_, 4);
	assert_int_equal(s.evictions, 1);
	X509 *a = get(f, "a.test", now), *c = get(f, "c.test", now);
	assert_ptr_equal(a, x[0]);
	assert_ptr_equal(c, x[2]);
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 4);
	/* b is minted again; the evicted leaf handed out earlier stays valid (its own reference) */
	X509 *b = get(f, "b.test", now);
	assert_ptr_not_equal(b, x[1]);
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 5);
	assert_int_equal(verify(f, x[1], "b.test", NULL, now), 0);
	for (size_t i = 0; i < 5; i++)
		X509_free(x[i]);
	X509_free(a);
	X509_free(b);
	X509_free(c);
}

static void test_leaf_near_its_end_is_minted_again(void **state)
{
	struct fixture *f = *state;
	time_t now = time(NULL);
	X509 *a = get(f, "api.example.com", now);
	/* one second before the renewal point: still the cached leaf */
	X509 *b = get(f, "api.example.com", now + SK_LEAF_LIFETIME_S - SK_LEAF_RENEW_S - 1);
	assert_ptr_equal(a, b);
	time_t later = now + SK_LEAF_LIFETIME_S - SK_LEAF_RENEW_S;
	X509 *c = get(f, "api.example.com", later);
	assert_ptr_not_equal(a, c);
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 2);
	assert_int_equal(verify(f, c, "api.example.com", NULL, later + SK_LEAF_RENEW_S + 60), 0);
	assert_true(ASN1_TIME_compare(X509_get0_notAfter(c), X509_get0_notAfter(a)) > 0);
	X509_free(a);
	X509_free(b);
	X509_free(c);
}

static void test_leaf_never_outlives_the_ca(void **state)
{
	struct fixture *f = *state;
	/* two hours before the CA ends: the leaf ends with the CA, and is renewed an hour later */
	int days = 0, secs = 0;
	assert_int_equal(ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(sk_ca_cert(f->ca))), 1);
	time_t ca_end = time(NULL) + (time_t)days * 86400 + secs;
	time_t at = ca_end - 7200;
	X509 *a = get(f, "late.example.com", at);
	assert_int_equal(ASN1_TIME_compare(X509_get0_notAfter(a), X509_get0_notAfter(sk_ca_cert(f->ca))), 0);
	X509 *b = get(f, "late.example.com", at + 3599);
	assert_ptr_equal(a, b);
	X509 *c = get(f, "late.example.com", at + 3601);
	assert_ptr_not_equal(a, c);
	X509_free(a);
	X509_free(b);
	X509_free(c);
}

static void test_names_that_are_not_host_names_are_refused(void **state)
{
	struct fixture *f = *state;
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	const char *bad[] = { "", "a,DNS:evil.test", "two words", "a..b", ".lead", "trail.", "nul\x01", "é.test",
			      "a/b", longname, "*", "x.*.test" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(bad); i++) {
		X509 *x = NULL;
		struct sk_err err = { 0 };
		if (sk_leaf_get(f->cache, bad[i], 0, &x, &err) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_null(x);
	}
	assert_int_equal(sk_leaf_stats(f->cache).signed_, 0);
	/* a wildcard and an underscore are names real clients send */
	X509 *w = get(f, "*.svc.test", 0), *u = get(f, "_dmarc.test", 0);
	assert_int_equal(X509_check_host(w, "a.svc.test", 0, 0, NULL), 1);
	X509_free(w);
	X509_free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_leaf_verifies_for_its_name_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ip_literal_gets_an_ip_san, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_hit_costs_no_signature, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_evicts_least_recently_used, setup_cap3, teardown),
		cmocka_unit_test_setup_teardown(test_leaf_near_its_end_is_minted_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leaf_never_outlives_the_ca, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_that_are_not_host_names_are_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/dns/bind_test.c — cmocka suite for the binding table: TTL clamping and expiry, LRU eviction
 * under the size bound, per-address name cap, mapped-address folding, name listing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "sidecar/dns/bind.h"

static struct sk_addr A(const char *s)
{
	struct sk_addr a;
	assert_int_equal(sk_addr_parse(s, &a), 0);
	return a;
}

static struct sk_addr v4(uint32_t n)
{
	struct sk_addr a = { .family = AF_INET };
	a.bytes[0] = (uint8_t)(n >> 24);
	a.bytes[1] = (uint8_t)(n >> 16);
	a.bytes[2] = (uint8_t)(n >> 8);
	a.bytes[3] = (uint8_t)n;
	return a;
}

static void test_bind_and_lookup(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(100, &t, NULL), 0);
	struct sk_addr a = A("140.82.112.5"), b = A("2606:50c0:8000::154");
	assert_int_equal(sk_bind_add(t, &a, "api.github.com", 60, 1000), 0);
	assert_int_equal(sk_bind_add(t, &b, "api.github.com", 60, 1000), 0);
	assert_true(sk_bind_has(t, &a, "api.github.com", 1000));
	assert_true(sk_bind_has(t, &b, "api.github.com", 1000));
	assert_false(sk_bind_has(t, &a, "github.com", 1000));
	struct sk_addr c = A("140.82.112.6");
	assert_false(sk_bind_has(t, &c, "api.github.com", 1000));
	assert_int_equal(sk_bind_count(t), 2);
	/* rebinding the same pair does not add a second entry */
	assert_int_equal(sk_bind_add(t, &a, "api.github.com", 60, 2000), 0);
	assert_int_equal(sk_bind_count(t), 2);
	sk_bind_free(t);
}

static void test_ttl_clamped_to_floor_and_ceiling(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(100, &t, NULL), 0);
	struct sk_addr a = A("198.18.1.1"), b = A("198.18.1.2"), c = A("198.18.1.3");
	uint64_t now = 5000000;
	assert_int_equal(sk_bind_add(t, &a, "zero.example", 0, now), 0);
	assert_int_equal(sk_bind_add(t, &b, "day.example", 86400, now), 0);
	assert_int_equal(sk_bind_add(t, &c, "mid.example", 300, now), 0);
	/* TTL 0 still binds for the 30 s floor */
	assert_true(sk_bind_has(t, &a, "zero.example", now + 29999));
	assert_false(sk_bind_has(t, &a, "zero.example", now + 30000));
	/* a day is cut to an hour */
	assert_true(sk_bind_has(t, &b, "day.example", now + 3599999));
	assert_false(sk_bind_has(t, &b, "day.example", now + 3600000));
	assert_true(sk_bind_has(t, &c, "mid.example", now + 299999));
	assert_false(sk_bind_has(t, &c, "mid.example", now + 300000));
	/* expired pairs were dropped when touched */
	assert_int_equal(sk_bind_count(t), 0);
	sk_bind_free(t);
}

static void test_rebind_extends_never_shortens(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(10, &t, NULL), 0);
	struct sk_addr a = A("198.18.1.1");
	assert_int_equal(sk_bind_add(t, &a, "x.example", 600, 0), 0);
	assert_int_equal(sk_bind_add(t, &a, "x.example", 30, 1000), 0);
	assert_true(sk_bind_has(t, &a, "x.example", 500000));
	assert_int_equal(sk_bind_add(t, &a, "x.example", 3600, 500000), 0);
	assert_true(sk_bind_has(t, &a, "x.example", 500000 + 3599000));
	sk_bind_free(t);
}

static void test_lru_eviction_keeps_bound(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(1000, &t, NULL), 0);
	for (uint32_t i = 0; i < 5000; i++) {
		struct sk_addr a = v4(0xc6120000u + i);
		assert_int_equal(sk_bind_add(t, &a, "bulk.example", 600, 1000), 0);
		assert_true(sk_bind_count(t) <= 1000);
		if (i == 10) {
			/* keep address 3 in use: it must survive the eviction of its neighbours */
			struct sk_addr keep = v4(0xc6120003u);
			assert_true(sk_bind_has(t, &keep, "bulk.example", 1000));
		}
		if (i > 10 && i % 500 == 0) {
			struct sk_addr keep = v4(0xc6120003u);
			assert_true(sk_bind_has(t, &keep, "bulk.example", 1000));
		}
	}
	assert_int_equal(sk_bind_count(t), 1000);
	struct sk_addr old = v4(0xc6120000u), keep = v4(0xc6120003u), recent = v4(0xc6120000u + 4999);
	assert_false(sk_bind_has(t, &old, "bulk.example", 1000));
	assert_true(sk_bind_has(t, &keep, "bulk.example", 1000));
	assert_true(sk_bind_has(t, &recent, "bulk.example", 1000));
	/* the oldest surviving ordinary entry is 4999 - 998 = 4001; 4000 went */
	struct sk_addr edge_in = v4(0xc6120000u + 4001), edge_out = v4(0xc6120000u + 4000);
	assert_true(sk_bind_has(t, &edge_in, "bulk.example", 1000));
	assert_false(sk_bind_has(t, &edge_out, "bulk.example", 1000));
	sk_bind_free(t);
}

static void test_names_per_address_capped(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(1000, &t, NULL), 0);
	struct sk_addr cdn = A("151.101.1.1");
	char name[64];
	for (int i = 0; i < SK_BIND_NAMES_PER_ADDR + 4; i++) {
		(void)snprintf(name, sizeof(name), "site%d.example", i);
		assert_int_equal(sk_bind_add(t, &cdn, name, 600, 0), 0);
	}
	assert_int_equal(sk_bind_count(t), SK_BIND_NAMES_PER_ADDR);
	assert_false(sk_bind_has(t, &cdn, "site0.example", 1));
	assert_false(sk_bind_has(t, &cdn, "site3.example", 1));
	assert_true(sk_bind_has(t, &cdn, "site4.example", 1));
	(void)snprintf(name, sizeof(name), "site%d.example", SK_BIND_NAMES_PER_ADDR + 3);
	assert_true(sk_bind_has(t, &cdn, name, 1));
	sk_bind_free(t);
}

/* Names of one address expire each at its own time, whatever order they were bound or refreshed in (a
 * refresh raises the earliest expiry the address keeps; a lookup before it must still drop nothing, and
 * after each name's own expiry that name only), and the per-address cap drops the least recently bound
 * name after refreshes reordered the list. */
static void test_names_expire_each_at_its_time(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(1000, &t, NULL), 0);
	struct sk_addr a = A("198.18.7.7");
	assert_int_equal(sk_bind_add(t, &a, "short.example", 30, 0), 0);    /* expires at 30 s */
	assert_int_equal(sk_bind_add(t, &a, "long.example", 300, 0), 0);    /* 300 s */
	assert_int_equal(sk_bind_add(t, &a, "mid.example", 100, 0), 0);     /* 100 s */
	assert_int_equal(sk_bind_add(t, &a, "short.example", 200, 10000), 0); /* now 210 s */
	assert_true(sk_bind_has(t, &a, "short.example", 31000));
	assert_true(sk_bind_has(t, &a, "mid.example", 99999));
	assert_false(sk_bind_has(t, &a, "mid.example", 100000));
	assert_int_equal(sk_bind_count(t), 2);
	assert_true(sk_bind_has(t, &a, "short.example", 209999));
	assert_false(sk_bind_has(t, &a, "short.example", 210000));
	assert_true(sk_bind_has(t, &a, "long.example", 299999));
	assert_false(sk_bind_has(t, &a, "long.example", 300000));
	assert_int_equal(sk_bind_count(t), 0);

	/* The cap after a refresh moved the oldest name to the front: the next oldest goes. */
	char name[64];
	for (int i = 0; i < SK_BIND_NAMES_PER_ADDR; i++) {
		(void)snprintf(name, sizeof(name), "n%d.example", i);
		assert_int_equal(sk_bind_add(t, &a, name, 600, 400000), 0);
	}
	assert_int_equal(sk_bind_add(t, &a, "n0.example", 600, 400000), 0);
	assert_int_equal(sk_bind_add(t, &a, "new.example", 600, 400000), 0);
	assert_int_equal(sk_bind_count(t), SK_BIND_NAMES_PER_ADDR);
	assert_true(sk_bind_has(t, &a, "n0.example", 400000));
	assert_false(sk_bind_has(t, &a, "n1.example", 400000));
	assert_true(sk_bind_has(t, &a, "n2.example", 400000));
	assert_true(sk_bind_has(t, &a, "new.example", 400000));
	sk_bind_free(t);
}

static void test_mapped_address_folds_to_v4(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(10, &t, NULL), 0);
	struct sk_addr v4a = A("93.184.216.34"), mapped = A("::ffff:93.184.216.34"), nat64 = A("64:ff9b::5db8:d822");
	assert_int_equal(sk_bind_add(t, &mapped, "example.com", 60, 0), 0);
	assert_true(sk_bind_has(t, &v4a, "example.com", 0));
	assert_true(sk_bind_has(t, &mapped, "example.com", 0));
	/* NAT64 is a different address on the wire: it does not inherit the binding */
	assert_false(sk_bind_has(t, &nat64, "example.com", 0));
	sk_bind_free(t);
}

struct collected {
	char names[8][64];
	int n;
	int stop_after;
};

static bool collect(const char *name, uint64_t expires_ms, void *arg)
{
	struct collected *c = arg;
	assert_true(expires_ms > 0);
	(void)snprintf(c->names[c->n++], sizeof(c->names[0]), "%s", name);
	return c->n < c->stop_after;
}

static void test_names_listing(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(10, &t, NULL), 0);
	struct sk_addr a = A("198.18.1.7"), none = A("198.18.1.8");
	assert_int_equal(sk_bind_add(t, &a, "old.example", 30, 0), 0);
	assert_int_equal(sk_bind_add(t, &a, "ssh.example", 600, 1000), 0);
	struct collected c = { .stop_after = 8 };
	assert_int_equal(sk_bind_names(t, &a, 2000, collect, &c), 2);
	assert_string_equal(c.names[0], "ssh.example");
	assert_string_equal(c.names[1], "old.example");
	/* after old.example expires only ssh.example is listed */
	memset(&c, 0, sizeof(c));
	c.stop_after = 8;
	assert_int_equal(sk_bind_names(t, &a, 31000, collect, &c), 1);
	assert_string_equal(c.names[0], "ssh.example");
	/* the callback can stop the walk */
	assert_int_equal(sk_bind_add(t, &a, "new.example", 600, 31000), 0);
	memset(&c, 0, sizeof(c));
	c.stop_after = 1;
	assert_int_equal(sk_bind_names(t, &a, 31000, collect, &c), 1);
	assert_string_equal(c.names[0], "new.example");
	memset(&c, 0, sizeof(c));
	c.stop_after = 8;
	assert_int_equal(sk_bind_names(t, &none, 31000, collect, &c), 0);
	sk_bind_free(t);
}

static void test_sweep_drops_expired(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(1000, &t, NULL), 0);
	for (uint32_t i = 0; i < 100; i++) {
		struct sk_addr a = v4(0xc6120100u + i);
		assert_int_equal(sk_bind_add(t, &a, "s.example", i < 50 ? 30 : 600, 0), 0);
	}
	assert_int_equal(sk_bind_sweep(t, 31000, 10), 10);
	assert_int_equal(sk_bind_count(t), 90);
	assert_int_equal(sk_bind_sweep(t, 31000, 1000), 40);
	assert_int_equal(sk_bind_count(t), 50);
	sk_bind_free(t);
}

static void test_rejects_bad_input(void **state)
{
	(void)state;
	struct sk_bind_table *t;
	assert_int_equal(sk_bind_new(0, &t, NULL), -22);
	assert_null(t);
	assert_int_equal(sk_bind_new(4, &t, NULL), 0);
	struct sk_addr a = A("198.18.1.1"), bad = { .family = 0 };
	assert_int_equal(sk_bind_add(t, &a, "", 60, 0), -22);
	assert_int_equal(sk_bind_add(t, &bad, "x.example", 60, 0), -22);
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(sk_bind_add(t, &a, longname, 60, 0), -22);
	assert_int_equal(sk_bind_count(t), 0);
	sk_bind_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind_and_lookup),
		cmocka_unit_test(test_names_expire_each_at_its_time),
		cmocka_unit_test(test_ttl_clamped_to_floor_and_ceiling),
		cmocka_unit_test(test_rebind_extends_never_shortens),
		cmocka_unit_test(test_lru_eviction_keeps_bound),
		cmocka_unit_test(test_names_per_address_capped),
		cmocka_unit_test(test_mapped_address_folds_to_v4),
		cmocka_unit_test(test_names_listing),
		cmocka_unit_test(test_sweep_drops_expired),
		cmocka_unit_test(test_rejects_bad_input),
	};
	return cmocka_run_group_tests_name("dns_bind", tests, NULL, NULL);
}

/* init/nft_expr_test.c — the ruleset as libnftnl objects, without a kernel: every object of a ruleset
 * builds, the set key layout matches the register layout the rules load, and a rule built twice is the
 * same rule (the read-back comparison rebuilds it and relies on that). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <errno.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "init/nft_expr.h"
#include "init/ruleset.h"
#include "policy/addr.h"
#include "policy/policy.h"

/* the default policy plus one direct v4 and one direct v6 CIDR rule, so every set has elements */
static struct sk_ruleset *build_rs(void)
{
	static struct sk_rule rules[2];
	static uint16_t ports[2][1] = { { 443 }, { 53 } };
	struct sk_policy p = { .version = 1, .agent_uid = 1000, .sidecar_uid = 1337, .block_private = true,
			       .loopback = SK_LOOPBACK_ALLOW, .rules = rules, .n_rules = 2 };
	p.ports = (struct sk_ports){ .proxy = 15001, .dns = 15053, .admin = 15000, .api = 15080 };
	const char *cidrs[2] = { "192.0.2.0/24", "2001:db8::/64" };
	for (size_t i = 0; i < 2; i++) {
		const char *why = NULL;
		memset(&rules[i], 0, sizeof(rules[i]));
		rules[i].kind = SK_RULE_CIDR;
		if (sk_cidr_parse(cidrs[i], &rules[i].cidr, &why) != 0)
			fail_msg("cidr %s: %s", cidrs[i], why ? why : "?");
		rules[i].proto = i == 0 ? SK_PROTO_TCP : SK_PROTO_UDP;
		rules[i].direct = true;
		rules[i].ports = ports[i];
		rules[i].n_ports = 1;
	}
	struct sk_ruleset *rs = NULL;
	struct sk_err err = { 0 };
	if (sk_ruleset_build(&p, &rs, &err) < 0)
		fail_msg("ruleset: %s", err.msg);
	return rs;
}

static void test_every_object_builds(void **state)
{
	(void)state;
	struct sk_ruleset *rs = build_rs();
	struct nftnl_table *t = sk_nft_build_table();
	assert_non_null(t);
	assert_string_equal(nftnl_table_get_str(t, NFTNL_TABLE_NAME), SK_RS_TABLE);
	nftnl_table_free(t);
	for (int i = 0; i < SK_RS_N_COUNTERS; i++) {
		struct nftnl_obj *o = sk_nft_build_counter(i);
		assert_non_null(o);
		assert_string_equal(nftnl_obj_get_str(o, NFTNL_OBJ_NAME), sk_rs_counter_name(i));
		nftnl_obj_free(o);
	}
	for (size_t c = 0; c < SK_RS_N_CHAINS; c++) {
		struct nftnl_chain *ch = sk_nft_build_chain(&rs->chains[c]);
		assert_non_null(ch);
		assert_int_equal(nftnl_chain_get_s32(ch, NFTNL_CHAIN_PRIO), rs->chains[c].priority);
		nftnl_chain_free(ch);
	}
	size_t direct_elems = 0;
	for (size_t i = 0; i < SK_RS_N_SETS; i++) {
		const struct sk_rs_set *s = &rs->sets[i];
		struct nftnl_set *ns = sk_nft_build_set(s);
		assert_non_null(ns);
		assert_int_equal(nftnl_set_get_u32(ns, NFTNL_SET_KEY_LEN), sk_nft_set_key_len(s));
		nftnl_set_free(ns);
		struct nftnl_set *es = sk_nft_build_elems(s, 0, s->n_elems);
		assert_non_null(es);
		nftnl_set_free(es);
		if (sk_nft_set_is_direct(s))
			direct_elems += s->n_elems;
	}
	assert_true(direct_elems >= 2);
	for (size_t i = 0; i < rs->n_rules; i++) {
		struct nftnl_rule *r = sk_nft_build_rule(rs, &rs->rules[i]);
		assert_non_null(r);
		nftnl_rule_free(r);
	}
	sk_ruleset_free(rs);
}

/* address, then the protocol and the port each padded to a 32-bit register, as the rule loads them */
static void test_direct_key_is_register_layout(void **state)
{
	(void)state;
	struct sk_ruleset *rs = build_rs();
	const struct sk_rs_set *s = &rs->sets[SK_RS_SET_DIRECT4];
	assert_true(s->n_elems > 0);
	const struct sk_rs_elem *e = &s->elems[0];
	uint8_t lo[SK_NFT_KEY_MAX], hi[SK_NFT_KEY_MAX];
	assert_int_equal(sk_nft_elem_key(s, e, false, lo), 12);
	assert_int_equal(sk_nft_elem_key(s, e, true, hi), 12);
	assert_int_equal(sk_nft_set_key_len(s), 12);
	assert_memory_equal(lo, e->addr_lo, 4);
	assert_memory_equal(hi, e->addr_hi, 4);
	assert_int_equal(lo[4], e->proto);
	assert_int_equal(lo[5] | lo[6] | lo[7], 0);
	uint16_t port;
	memcpy(&port, lo + 8, 2);
	assert_int_equal(ntohs(port), e->port_lo);
	memcpy(&port, hi + 8, 2);
	assert_int_equal(ntohs(port), e->port_hi);
	assert_int_equal(lo[12] | lo[23], 0);  /* zero-padded to SK_NFT_KEY_MAX */
	assert_int_equal(sk_nft_set_key_len(&rs->sets[SK_RS_SET_DIRECT6]), 24);
	sk_ruleset_free(rs);
}

static void test_rule_rebuild_is_identical(void **state)
{
	(void)state;
	struct sk_ruleset *rs = build_rs();
	for (size_t i = 0; i < rs->n_rules; i++) {
		struct nftnl_rule *a = sk_nft_build_rule(rs, &rs->rules[i]), *b = sk_nft_build_rule(rs, &rs->rules[i]);
		assert_non_null(a);
		assert_non_null(b);
		char sa[4096], sb[4096];
		nftnl_rule_snprintf(sa, sizeof(sa), a, NFTNL_OUTPUT_DEFAULT, 0);
		nftnl_rule_snprintf(sb, sizeof(sb), b, NFTNL_OUTPUT_DEFAULT, 0);
		assert_string_equal(sa, sb);
		assert_non_null(strstr(sa, rs->chains[rs->rules[i].chain].name));
		nftnl_rule_free(a);
		nftnl_rule_free(b);
	}
	sk_ruleset_free(rs);
}

static const struct sk_rs_rule *rule_named(const struct sk_ruleset *rs, const char *name)
{
	for (size_t i = 0; i < rs->n_rules; i++)
		if (!strcmp(rs->rules[i].name, name))
			return &rs->rules[i];
	fail_msg("no rule %s", name);
	return NULL;
}

/* The expressions of a rule as libnftnl prints them (the read-back comparison's view), one per line. */
static void rule_exprs(const struct nftnl_rule *r, char *out, size_t len)
{
	struct nftnl_expr_iter *it = nftnl_expr_iter_create(r);
	assert_non_null(it);
	out[0] = '\0';
	for (struct nftnl_expr *e = nftnl_expr_iter_next(it); e; e = nftnl_expr_iter_next(it)) {
		char b[256];
		nftnl_expr_snprintf(b, sizeof(b), e, NFTNL_OUTPUT_DEFAULT, 0);
		size_t used = strlen(out);
		(void)snprintf(out + used, len - used, "%s %s\n", nftnl_expr_get_str(e, NFTNL_EXPR_NAME), b);
	}
	nftnl_expr_iter_destroy(it);
}

/* Found in review: the spoofed-source rule is encoded exactly as nft encodes `meta skuid != 1337 meta
 * skuid != @exempt_uids fib saddr type != local counter name "spoofed_source_drop" drop` (nft
 * --debug=netlink: an inverted lookup, fib of the source's address type, cmp != RTN_LOCAL), and a table
 * whose rule lacks any part of it prints differently, so the read-back comparison refuses it. */
static void test_spoofed_source_encoding(void **state)
{
	(void)state;
	struct sk_ruleset *rs = build_rs();
	struct sk_rs_rule r = *rule_named(rs, "spoofed-source");
	struct nftnl_rule *nr = sk_nft_build_rule(rs, &r);
	assert_non_null(nr);
	char want[2048], got[2048];
	rule_exprs(nr, want, sizeof(want));
	nftnl_rule_free(nr);
	assert_string_equal(want, "meta load skuid => reg 1 \n"
				  "cmp neq reg 1 0x00000539 \n"
				  "meta load skuid => reg 1 \n"
				  "lookup reg 1 set exempt_uids 0x1 \n"
				  "fib saddr type => reg 1 \n"
				  "cmp neq reg 1 0x00000002 \n"
				  "objref type 1 name spoofed_source_drop \n"
				  "immediate reg 0 drop \n");

	/* each alteration an operator (or a stale init) could leave in the kernel */
	struct sk_rs_rule alt[4] = { r, r, r, r };
	alt[0].n_m = 2;                                  /* the fib test missing */
	alt[1].m[1].kind = SK_RS_M_SKUID_SET;            /* lookup not inverted */
	alt[2].m[2].kind = SK_RS_M_OIF_LO;               /* another test in the fib's place */
	alt[3].m[0].val = 1000;                          /* the agent exempted instead of the sidecar */
	for (size_t i = 0; i < SK_ARRAY_SIZE(alt); i++) {
		nr = sk_nft_build_rule(rs, &alt[i]);
		assert_non_null(nr);
		rule_exprs(nr, got, sizeof(got));
		nftnl_rule_free(nr);
		if (!strcmp(got, want))
			fail_msg("alteration %zu prints as the rule itself", i);
	}
	sk_ruleset_free(rs);
}

/* a ruleset whose direct4 set has many elements (several ports, ranges that do not merge) */
static struct sk_ruleset *build_rs_many(size_t n)
{
	struct sk_rule *rules = calloc(n, sizeof(*rules));
	uint16_t *ports = calloc(n, sizeof(*ports));
	assert_non_null(rules);
	assert_non_null(ports);
	struct sk_policy p = { .version = 1, .agent_uid = 1000, .sidecar_uid = 1337, .block_private = true,
			       .loopback = SK_LOOPBACK_ALLOW, .rules = rules, .n_rules = n };
	p.ports = (struct sk_ports){ .proxy = 15001, .dns = 15053, .admin = 15000, .api = 15080 };
	for (size_t i = 0; i < n; i++) {
		char c[32];
		const char *why = NULL;
		(void)snprintf(c, sizeof(c), "10.%zu.%zu.0/24", i / 256, (i * 2) % 256);
		rules[i].kind = SK_RULE_CIDR;
		if (sk_cidr_parse(c, &rules[i].cidr, &why) != 0)
			fail_msg("cidr %s: %s", c, why ? why : "?");
		rules[i].proto = i % 3 ? SK_PROTO_TCP : SK_PROTO_UDP;
		rules[i].direct = true;
		ports[i] = (uint16_t)(1000 + i % 7);
		rules[i].ports = &ports[i];
		rules[i].n_ports = 1;
	}
	struct sk_ruleset *rs = NULL;
	struct sk_err err = { 0 };
	if (sk_ruleset_build(&p, &rs, &err) < 0)
		fail_msg("ruleset: %s", err.msg);
	free(rules);
	free(ports);
	return rs;
}

static struct nlmsghdr *elems_msg(char *buf, const struct sk_rs_set *s, size_t from, size_t to)
{
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWSETELEM, SK_NFT_FAMILY, NLM_F_CREATE, 7);
	sk_nft_put_elems(nlh, s, from, to);
	return nlh;
}

/* the direct encoder writes libnftnl's very bytes, for every set and for a long slice of a large one */
static void test_put_elems_is_libnftnl_payload(void **state)
{
	(void)state;
	struct sk_ruleset *rs[2] = { build_rs(), build_rs_many(600) };
	static char a[1 << 17], b[1 << 17];
	size_t checked = 0;
	for (size_t r = 0; r < 2; r++) {
		for (size_t i = 0; i < SK_RS_N_SETS; i++) {
			const struct sk_rs_set *s = &rs[r]->sets[i];
			size_t to = s->n_elems < 256 ? s->n_elems : 256;
			struct nlmsghdr *na = nftnl_nlmsg_build_hdr(a, NFT_MSG_NEWSETELEM, SK_NFT_FAMILY, NLM_F_CREATE, 7);
			struct nftnl_set *es = sk_nft_build_elems(s, 0, to);
			assert_non_null(es);
			nftnl_set_elems_nlmsg_build_payload(na, es);
			nftnl_set_free(es);
			struct nlmsghdr *nb = elems_msg(b, s, 0, to);
			assert_int_equal(na->nlmsg_len, nb->nlmsg_len);
			assert_memory_equal(a, b, na->nlmsg_len);
			checked += to;
		}
	}
	assert_true(checked > 256);
	sk_ruleset_free(rs[0]);
	sk_ruleset_free(rs[1]);
}

/* what the encoder writes, the reader reads back key for key; anything else is refused or counted */
static void test_parse_elems_reads_back_keys(void **state)
{
	(void)state;
	struct sk_ruleset *rs = build_rs_many(300);
	static char buf[1 << 17];
	const struct sk_rs_set *s = &rs->sets[SK_RS_SET_DIRECT4];
	assert_true(s->n_elems >= 200);
	struct nlmsghdr *nlh = elems_msg(buf, s, 0, s->n_elems);
	struct sk_nft_key *keys = calloc(s->n_elems, sizeof(*keys));
	assert_non_null(keys);
	size_t n = 0, odd = 0;
	assert_int_equal(sk_nft_parse_elems(nlh, s, keys, s->n_elems, &n, &odd), 0);
	assert_int_equal(n, s->n_elems);
	assert_int_equal(odd, 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t lo[SK_NFT_KEY_MAX], hi[SK_NFT_KEY_MAX];
		sk_nft_elem_key(s, &s->elems[i], false, lo);
		sk_nft_elem_key(s, &s->elems[i], true, hi);
		assert_memory_equal(keys[i].k, lo, SK_NFT_KEY_MAX);
		assert_memory_equal(keys[i].k + SK_NFT_KEY_MAX, hi, SK_NFT_KEY_MAX);
	}
	/* past cap: still counted, not stored */
	n = odd = 0;
	assert_int_equal(sk_nft_parse_elems(nlh, s, keys, 10, &n, &odd), 0);
	assert_int_equal(n, s->n_elems);
	/* the same bytes read as another set: refused (its name), or as a set of another key shape */
	const struct sk_rs_set *v6 = &rs->sets[SK_RS_SET_DIRECT6];
	n = odd = 0;
	assert_int_equal(sk_nft_parse_elems(nlh, v6, keys, s->n_elems, &n, &odd), -EBADMSG);
	struct sk_rs_set renamed = *v6;
	renamed.name = s->name;
	n = odd = 0;
	assert_int_equal(sk_nft_parse_elems(nlh, &renamed, keys, s->n_elems, &n, &odd), 0);
	assert_int_equal(n, 0);
	assert_int_equal(odd, s->n_elems);
	/* a plain set's elements have no range end: a direct one's are of another shape there */
	struct sk_rs_set plain = rs->sets[SK_RS_SET_EXEMPT];
	plain.name = s->name;
	n = odd = 0;
	assert_int_equal(sk_nft_parse_elems(nlh, &plain, keys, s->n_elems, &n, &odd), 0);
	assert_int_equal(odd, s->n_elems);
	/* cut short inside an attribute: not a well-formed list */
	nlh->nlmsg_len -= 6;
	n = odd = 0;
	assert_int_equal(sk_nft_parse_elems(nlh, s, keys, s->n_elems, &n, &odd), -EBADMSG);
	free(keys);
	sk_ruleset_free(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_object_builds),
		cmocka_unit_test(test_direct_key_is_register_layout),
		cmocka_unit_test(test_rule_rebuild_is_identical),
		cmocka_unit_test(test_spoofed_source_encoding),
		cmocka_unit_test(test_put_elems_is_libnftnl_payload),
		cmocka_unit_test(test_parse_elems_reads_back_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

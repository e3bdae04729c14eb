/* cli/suggest_test.c — grouping of audit lines into suggested rules: ports merged per (host, protocol),
 * IP-literal names become cidr rules, private destinations cidr rules, reasons no rule changes are
 * skipped (metadata never suggested), and the YAML printed is a policy the real loader accepts whose
 * matcher allows every line that was turned into a rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/suggest.h"
#include "policy/match.h"
#include "policy/policy.h"

#define LINE(ev, dst, name, proto, dec, reason)                                                                  \
	"{\"ts\":\"2026-11-24T10:00:00.000Z\",\"event\":\"" ev "\",\"src\":\"10.0.0.5:40000\",\"dst\":\"" dst     \
	"\",\"name\":" name ",\"proto\":" proto ",\"rule\":null,\"decision\":\"" dec "\",\"reason\":\"" reason    \
	"\",\"bytes_in\":0,\"bytes_out\":0,\"duration_ms\":1}"

static const char *const lines[] = {
	LINE("conn", "140.82.112.6:443", "\"api.github.com\"", "\"tls\"", "would_deny", "no_match"),
	LINE("conn", "140.82.112.6:8443", "\"API.GitHub.com\"", "\"tls\"", "would_deny", "no_match"),
	LINE("conn", "140.82.112.7:443", "\"api.github.com\"", "\"tls\"", "would_deny", "no_match"),
	LINE("conn", "140.82.112.6:80", "\"api.github.com\"", "\"http\"", "would_deny", "no_match"),
	LINE("deny", "151.101.0.223:443", "\"pypi.org\"", "\"tls\"", "deny", "no_match"),
	LINE("conn", "203.0.113.9:443", "\"203.0.113.9\"", "\"http\"", "would_deny", "no_match"),
	LINE("conn", "[2001:db8::7]:5432", "null", "\"tcp\"", "would_deny", "no_match"),
	LINE("conn", "10.1.2.3:5432", "null", "\"tcp\"", "would_deny", "private"),
	LINE("conn", "169.254.169.254:80", "\"metadata\"", "\"http\"", "would_deny", "link_local"),
	LINE("conn", "1.2.3.4:443", "\"x.example\"", "\"tls\"", "would_deny", "sni_ip_mismatch"),
	LINE("conn", "140.82.112.6:443", "\"api.github.com\"", "\"tls\"", "allow", "rule"),
	"{\"ts\":\"t\",\"event\":\"dns\",\"src\":\"10.0.0.5:5000\",\"dst\":null,\"name\":\"only-dns.example\","
	"\"proto\":\"udp\",\"rule\":null,\"decision\":\"would_deny\",\"reason\":\"denied\",\"bytes_in\":0,"
	"\"bytes_out\":0,\"duration_ms\":0}",
	"stockade-sidecar: info: listening on 15001",
	"",
};

static void feed(struct sk_suggest *s)
{
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(sk_suggest_line(s, lines[i], strlen(lines[i])), 0);
	sk_suggest_finish(s);
}

static void test_grouping(void **state)
{
	(void)state;
	struct sk_suggest s = { 0 };
	feed(&s);
	assert_int_equal(s.lines, 13);   /* the blank line is not counted */
	assert_int_equal(s.not_json, 1);
	assert_int_equal(s.used, 8);
	assert_int_equal(s.n_rules, 6);
	/* host rules first, by name, then protocol */
	assert_string_equal(s.rules[0].host, "api.github.com");
	assert_string_equal(s.rules[0].proto, "http");
	assert_int_equal(s.rules[0].n_ports, 1);
	assert_int_equal(s.rules[0].ports[0], 80);
	assert_string_equal(s.rules[1].host, "api.github.com");
	assert_string_equal(s.rules[1].proto, "tls");
	assert_int_equal(s.rules[1].n_ports, 2);      /* 443 twice (two addresses) and 8443, merged */
	assert_int_equal(s.rules[1].ports[0], 443);
	assert_int_equal(s.rules[1].ports[1], 8443);
	assert_int_equal(s.rules[1].count, 3);
	assert_string_equal(s.rules[2].host, "pypi.org");
	/* cidr rules: the literal name, the private address, the nameless IPv6 one */
	assert_null(s.rules[3].host);
	assert_null(s.rules[4].host);
	assert_null(s.rules[5].host);
	char net[64];
	sk_cidr_format(&s.rules[3].cidr, net);
	assert_string_equal(net, "10.1.2.3/32");
	assert_non_null(strstr(s.rules[3].why, "private"));
	sk_cidr_format(&s.rules[4].cidr, net);
	assert_string_equal(net, "203.0.113.9/32");
	assert_non_null(strstr(s.rules[4].why, "IP literal"));
	sk_cidr_format(&s.rules[5].cidr, net);
	assert_string_equal(net, "2001:db8::7/128");
	/* skipped: link_local and sni_ip_mismatch, one each; the DNS-only name is listed */
	assert_int_equal(s.n_skips, 2);
	assert_int_equal(s.n_dns_only, 1);
	assert_string_equal(s.dns_only[0], "only-dns.example");
	sk_suggest_free(&s);
}

/* A reason longer than the field (not the sidecar's, which are short tokens) is counted under its cut
 * form: its repeats make one entry, not one each. */
static void test_a_long_reason_counts_as_one(void **state)
{
	(void)state;
	struct sk_suggest s = { 0 };
#define LONG_REASON "a_reason_from_somewhere_else_far_longer_than_the_field_holds"
	static const char l[] = LINE("conn", "198.51.100.1:443", "\"x.example\"", "\"tls\"", "deny", LONG_REASON);
	static const char m[] = LINE("conn", "198.51.100.2:443", "\"y.example\"", "\"tls\"", "deny", LONG_REASON "_2");
	for (int i = 0; i < 3; i++)
		assert_int_equal(sk_suggest_line(&s, l, strlen(l)), 0);
	assert_int_equal(sk_suggest_line(&s, m, strlen(m)), 0);
	sk_suggest_finish(&s);
	assert_int_equal(s.n_skips, 1);
	assert_int_equal(s.skips[0].count, 4);
	assert_int_equal(strlen(s.skips[0].reason), sizeof(s.skips[0].reason) - 1);
	assert_int_equal(strncmp(s.skips[0].reason, LONG_REASON, sizeof(s.skips[0].reason) - 1), 0);
#undef LONG_REASON
	sk_suggest_free(&s);
}

static void test_never_a_host_rule_for_an_address(void **state)
{
	(void)state;
	struct sk_suggest s = { 0 };
	static const char l4[] = LINE("conn", "198.51.100.1:443", "\"198.51.100.1\"", "\"tls\"", "would_deny", "no_match");
	static const char l6[] = LINE("conn", "[2001:db8::1]:80", "\"2001:db8::1\"", "\"http\"", "would_deny", "no_match");
	assert_int_equal(sk_suggest_line(&s, l4, strlen(l4)), 0);
	assert_int_equal(sk_suggest_line(&s, l6, strlen(l6)), 0);
	sk_suggest_finish(&s);
	assert_int_equal(s.n_rules, 2);
	for (size_t i = 0; i < s.n_rules; i++)
		assert_null(s.rules[i].host);
	char *y = sk_suggest_yaml(&s);
	assert_non_null(y);
	assert_null(strstr(y, "host:"));
	assert_non_null(strstr(y, "  - cidr: \"198.51.100.1/32\"\n"));
	assert_non_null(strstr(y, "  - cidr: \"2001:db8::1/128\"\n"));
	free(y);
	sk_suggest_free(&s);
}

/* The suggestion, given a version line, loads as a policy; its matcher allows every connection line
 * that was turned into a rule. */
static void test_yaml_is_a_policy_that_allows_the_lines(void **state)
{
	(void)state;
	struct sk_suggest s = { 0 };
	feed(&s);
	char *y = sk_suggest_yaml(&s);
	assert_non_null(y);
	char *doc = NULL;
	assert_true(asprintf(&doc, "version: 1\nblockPrivate: true\n%s", y) > 0);
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex("suggested", doc, strlen(doc), -1, 0, &p, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(p->n_rules, 6);
	static const struct {
		const char *host, *addr;
		uint16_t port;
		enum sk_proto proto;
	} want[] = {
		{ "api.github.com", NULL, 443, SK_PROTO_TLS }, { "api.github.com", NULL, 8443, SK_PROTO_TLS },
		{ "api.github.com", NULL, 80, SK_PROTO_HTTP },  { "pypi.org", NULL, 443, SK_PROTO_TLS },
		{ NULL, "203.0.113.9", 443, SK_PROTO_HTTP },   { NULL, "2001:db8::7", 5432, SK_PROTO_TCP },
		{ NULL, "10.1.2.3", 5432, SK_PROTO_TCP },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct sk_addr a;
		struct sk_query q = { .host = want[i].host, .port = want[i].port, .proto = want[i].proto };
		if (want[i].addr) {
			assert_int_equal(sk_addr_parse(want[i].addr, &a), 0);
			q.dst = &a;
		}
		struct sk_decision dec;
		sk_match(p, &q, &dec);
		assert_true(dec.allow);
		assert_int_equal(dec.reason, SK_REASON_RULE);
	}
	/* ... and nothing it was not asked for: another port of the same host stays denied. */
	struct sk_query q = { .host = "api.github.com", .port = 22, .proto = SK_PROTO_TCP };
	struct sk_decision dec;
	sk_match(p, &q, &dec);
	assert_false(dec.allow);
	sk_policy_free(p);
	sk_diags_free(&d);
	free(doc);
	free(y);
	sk_suggest_free(&s);
}

static void test_yaml_exact_small(void **state)
{
	(void)state;
	struct sk_suggest s = { 0 };
	static const char a[] = LINE("conn", "1.1.1.1:443", "\"b.example\"", "\"tls\"", "would_deny", "no_match");
	static const char b[] = LINE("conn", "1.1.1.1:443", "\"a.example\"", "\"h2c\"", "would_deny", "no_match");
	assert_int_equal(sk_suggest_line(&s, a, strlen(a)), 0);
	assert_int_equal(sk_suggest_line(&s, b, strlen(b)), 0);
	sk_suggest_finish(&s);
	char *y = sk_suggest_yaml(&s);
	assert_string_equal(y, "# stockade-policy suggest: 2 lines read, 2 denials turned into 2 rules\n"
			       "egress:\n"
			       "  - host: a.example\n"
			       "    ports: [443]\n"
			       "    protocol: http  # 1 connection\n"
			       "  - host: b.example\n"
			       "    ports: [443]\n"
			       "    protocol: tls  # 1 connection\n");
	free(y);
	sk_suggest_free(&s);
}

#define REQ(rule, method, path) \
	"{\"v\":1,\"ts\":\"t\",\"event\":\"deny\",\"policy\":null,\"src\":\"10.0.0.5:40000\",\"dst\":\"1.2.3.4:80\"," \
	"\"name\":\"api.example.com\",\"proto\":\"http\",\"rule\":" rule ",\"decision\":\"deny\"," \
	"\"reason\":\"request_denied\",\"method\":\"" method "\",\"path\":\"" path "\",\"bytes_in\":0," \
	"\"bytes_out\":0,\"duration_ms\":1}"

/* request_denied lines become entries to add to their rule's requests, one per (rule, method). */
static void test_request_denied_lines_become_requests_entries(void **state)
{
	(void)state;
	static const char *const req_lines[] = {
		REQ("\"github\"", "POST", "/repos/acme/app/issues"),
		REQ("\"github\"", "POST", "/repos/acme/app/comments"),
		REQ("\"github\"", "POST", "/repos/acme/app/issues"),
		REQ("\"github\"", "DELETE", "/repos/acme/app"),
		REQ("1", "GET", "/simple/"),
		REQ("\"github\"", "GET", "/a//b"),      /* not a glob: skipped */
		REQ("\"github\"", "GET", "/a/*"),       /* would widen: skipped */
		"{\"event\":\"deny\",\"decision\":\"deny\",\"reason\":\"request_denied\",\"rule\":\"github\"}",
		"{\"event\":\"deny\",\"decision\":\"deny\",\"reason\":\"request_bad_path\",\"rule\":\"github\","
		"\"method\":\"GET\",\"path\":\"/a%2Fb\"}",
	};
	struct sk_suggest s = { 0 };
	for (size_t i = 0; i < sizeof(req_lines) / sizeof(req_lines[0]); i++)
		assert_int_equal(sk_suggest_line(&s, req_lines[i], strlen(req_lines[i])), 0);
	sk_suggest_finish(&s);
	assert_int_equal(s.n_rules, 0);
	assert_int_equal(s.n_reqs, 3);
	assert_string_equal(s.reqs[0].rule, "1");
	assert_string_equal(s.reqs[1].rule, "github");
	assert_string_equal(s.reqs[1].method, "DELETE");
	assert_string_equal(s.reqs[2].method, "POST");
	assert_int_equal(s.reqs[2].count, 3);
	assert_int_equal(s.reqs[2].n_paths, 2);
	assert_string_equal(s.reqs[2].paths[0], "/repos/acme/app/comments");
	assert_string_equal(s.reqs[2].paths[1], "/repos/acme/app/issues");
	char *y = sk_suggest_yaml(&s);
	assert_non_null(y);
	assert_non_null(strstr(y, "#   rule github (api.example.com): - { methods: [POST], paths: "
				  "[\"/repos/acme/app/comments\", \"/repos/acme/app/issues\"] }  # 3 requests\n"));
	assert_non_null(strstr(y, "#   rule 1 (api.example.com): - { methods: [GET], paths: [\"/simple/\"] }  # 1 request\n"));
	assert_non_null(strstr(y, "request_path_not_a_glob 2"));
	assert_non_null(strstr(y, "request_bad_path 1"));
	assert_non_null(strstr(y, "request_denied 1"));
	free(y);
	char *j = sk_suggest_json(&s);
	assert_non_null(j);
	assert_non_null(strstr(j, "\"requests\""));
	free(j);
	sk_suggest_free(&s);
}

/* seccomp-log lines: allowable names become seccomp.allow (sorted, counted), the generator's refusals a
 * comment with its reason, an unnamed syscall a skip; the YAML loads as a policy whose profile allows them. */
static void test_seccomp_lines(void **state)
{
	(void)state;
	static const char *const scmp[] = {
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":\"fanotify_mark\",\"action\":\"errno\"}",
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":\"mount\",\"action\":\"errno\"}",
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":\"fanotify_mark\",\"action\":\"errno\"}",
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":\"migrate_pages\",\"action\":\"kill_process\"}",
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":null,\"action\":\"errno\"}",
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":\"x\\\"y\",\"action\":\"errno\"}",
		"{\"kind\":\"seccomp\",\"comm\":\"a\",\"syscall\":\"getpid\",\"action\":\"log\"}",
	};
	struct sk_suggest s = { 0 };
	for (size_t i = 0; i < sizeof(scmp) / sizeof(scmp[0]); i++)
		assert_int_equal(sk_suggest_line(&s, scmp[i], strlen(scmp[i])), 0);
	assert_int_equal(sk_suggest_finish(&s), 0);
	assert_int_equal(s.used, 4);
	char *y = sk_suggest_yaml(&s);
	assert_non_null(y);
	assert_non_null(strstr(y, "# not turned into rules (no egress rule changes these): seccomp_unnamed 2\n"));
	assert_non_null(strstr(y, "# seccomp: not suggested, mount (1 refusal): seccomp: allow mount: never allowed"));
	assert_non_null(strstr(y, "seccomp:\n  allow:\n    - fanotify_mark  # 2 refusals\n    - migrate_pages  # 1 refusal\n"));
	char *doc = NULL;
	assert_true(asprintf(&doc, "version: 1\n%s", y) > 0);
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex("suggested", doc, strlen(doc), -1, 0, &p, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(p->seccomp.n_allow, 2);
	assert_string_equal(p->seccomp.allow[1], "migrate_pages");
	sk_policy_free(p);
	sk_diags_free(&d);
	free(doc);
	free(y);
	char *j = sk_suggest_json(&s);
	assert_non_null(strstr(j, "\"allow\":\t[\"fanotify_mark\", \"migrate_pages\"]"));
	free(j);
	sk_suggest_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grouping),
		cmocka_unit_test(test_a_long_reason_counts_as_one),
		cmocka_unit_test(test_never_a_host_rule_for_an_address),
		cmocka_unit_test(test_yaml_is_a_policy_that_allows_the_lines),
		cmocka_unit_test(test_yaml_exact_small),
		cmocka_unit_test(test_request_denied_lines_become_requests_entries),
		cmocka_unit_test(test_seccomp_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

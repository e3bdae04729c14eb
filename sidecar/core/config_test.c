/* sidecar/core/config_test.c — flags, environment, precedence, and the errors a bad value produces; the table
 * test (every setting: its default, its bounds, out of range, junk, negative, empty, overflow, flag over
 * variable); --help and docs/operating.md generated from / checked against the table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "sidecar/core/config.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_defaults_and_required_policy(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *argv[] = { "sidecar", "--policy", "/p.yaml" };
	assert_int_equal(sk_config_parse(ARGC(argv), argv, NULL, &c, &err), 0);
	assert_string_equal(c.policy_path, "/p.yaml");
	assert_string_equal(c.marker_path, SK_DEFAULT_MARKER);
	assert_int_equal(c.log_level, SK_LOG_INFO);
	assert_int_equal(c.log_format, SK_LOG_TEXT);
	assert_null(c.admin_addr);
	assert_int_equal(c.drain_seconds, 10);
	sk_config_free(&c);

	char *none[] = { "sidecar" };
	assert_int_equal(sk_config_parse(1, none, NULL, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "--policy FILE (or STOCKADE_POLICY) is required");
}

static void test_env_then_flags_win(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *env[] = { "PATH=/bin", "STOCKADE_POLICY=/env.yaml", "STOCKADE_MARKER=/m", "STOCKADE_LOG_LEVEL=debug",
			"STOCKADE_ADMIN_ADDR=127.0.0.1:9000", "STOCKADE_DRAIN_SECONDS=3", "STOCKADE_POLICYX=/no", NULL };
	char *argv[] = { "sidecar", "--log-level=warn", "--admin-addr", "[::1]:9100" };
	assert_int_equal(sk_config_parse(ARGC(argv), argv, env, &c, &err), 0);
	assert_string_equal(c.policy_path, "/env.yaml");
	assert_string_equal(c.marker_path, "/m");
	assert_int_equal(c.log_level, SK_LOG_WARN);
	assert_string_equal(c.admin_addr, "[::1]:9100");
	assert_int_equal(c.drain_seconds, 3);
	sk_config_free(&c);
}

static void test_empty_env_is_unset(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *env[] = { "STOCKADE_LOG_LEVEL=", "STOCKADE_POLICY=/p", NULL };
	char *argv[] = { "sidecar" };
	assert_int_equal(sk_config_parse(1, argv, env, &c, &err), 0);
	assert_int_equal(c.log_level, SK_LOG_INFO);
	sk_config_free(&c);
}

static void expect_error(char **argv, int argc, char **env, const char *msg)
{
	struct sk_config c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_config_parse(argc, argv, env, &c, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	assert_null(c.policy_path);  /* freed on error */
}

static void test_bad_values_named(void **state)
{
	(void)state;
	char *a1[] = { "s", "--policy", "/p", "--log-level", "loud" };
	expect_error(a1, ARGC(a1), NULL, "--log-level: 'loud' is not one of error, warn, info, debug");
	char *a2[] = { "s", "--policy" };
	expect_error(a2, ARGC(a2), NULL, "--policy: missing value");
	char *a3[] = { "s", "--polic", "/p" };
	expect_error(a3, ARGC(a3), NULL, "unknown flag '--polic' (see --help)");
	char *a4[] = { "s", "/p" };
	expect_error(a4, ARGC(a4), NULL, "unexpected argument '/p' (see --help)");
	char *e5[] = { "STOCKADE_DRAIN_SECONDS=-1", NULL };
	char *a5[] = { "s", "--policy", "/p" };
	expect_error(a5, ARGC(a5), e5, "STOCKADE_DRAIN_SECONDS: '-1' is not an integer in 0..3600");
	char *a6[] = { "s", "--policy", "/p", "--admin-addr", "1.2.3.4:70000" };
	expect_error(a6, ARGC(a6), NULL, "--admin-addr: admin address '1.2.3.4:70000': port must be 1..65535");
	char *a7[] = { "s", "--policy=/p", "--test-block-file", "/b" };  /* test hooks: environment only */
	expect_error(a7, ARGC(a7), NULL, "unknown flag '--test-block-file' (see --help)");
	char *a8[] = { "s", "--policy=" };
	expect_error(a8, ARGC(a8), NULL, "--policy: empty value (expected a path)");
	char *a9[] = { "s", "--policy=/p", "--peek-timeout-ms", "5s" };
	expect_error(a9, ARGC(a9), NULL, "--peek-timeout-ms: '5s' is not an integer in 1..600000");
	char *e10[] = { "STOCKADE_API_MAX_CONNS=0", NULL };
	expect_error(a5, ARGC(a5), e10, "STOCKADE_API_MAX_CONNS: '0' is not an integer in 1..100000");
	char *e11[] = { "STOCKADE_DNS_PROBE_MS=1s", NULL };  /* was silently the default before config.c owned it */
	expect_error(a5, ARGC(a5), e11, "STOCKADE_DNS_PROBE_MS: '1s' is not an integer in 0..3600000");
	char *e12[] = { "STOCKADE_DNS_STRICT_CHAIN=2", NULL };
	expect_error(a5, ARGC(a5), e12,
		     "STOCKADE_DNS_STRICT_CHAIN: '2' is not true or false (also 1/0, yes/no, on/off)");
}

static void test_help_version_need_no_policy(void **state)
{
	(void)state;
	struct sk_config c;
	struct sk_err err = { 0 };
	char *argv[] = { "s", "--version" };
	assert_int_equal(sk_config_parse(2, argv, NULL, &c, &err), 0);
	assert_true(c.version);
	sk_config_free(&c);
	char *argv2[] = { "s", "--help" };
	assert_int_equal(sk_config_parse(2, argv2, NULL, &c, &err), 0);
	assert_true(c.help);
	sk_config_free(&c);
}

static void test_admin_sockaddr_forms(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	socklen_t len;
	struct sk_err err = { 0 };
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	char txt[INET6_ADDRSTRLEN];

	assert_int_equal(sk_config_admin_sockaddr("15000", 1, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 15000);
	assert_memory_equal(&s6->sin6_addr, &in6addr_any, sizeof(in6addr_any));

	assert_int_equal(sk_config_admin_sockaddr("0.0.0.0", 15000, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(s4->sin_port), 15000);
	assert_int_equal(len, sizeof(struct sockaddr_in));

	assert_int_equal(sk_config_admin_sockaddr("[::1]:99", 1, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	inet_ntop(AF_INET6, &s6->sin6_addr, txt, sizeof(txt));
	assert_string_equal(txt, "::1");
	assert_int_equal(ntohs(s6->sin6_port), 99);

	assert_int_equal(sk_config_admin_sockaddr(":8080", 1, &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 8080);

	assert_int_equal(sk_config_admin_sockaddr("::1", 1, &ss, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "admin address '::1': IPv6 needs brackets, e.g. [::1]:15000");
	assert_int_equal(sk_config_admin_sockaddr("localhost:1", 1, &ss, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "admin address 'localhost:1': 'localhost' is not a numeric IP address");
	assert_int_equal(sk_config_admin_sockaddr("[::1]x", 1, &ss, &len, &err), -EINVAL);
	assert_int_equal(sk_config_admin_sockaddr("1.2.3.4:", 1, &ss, &len, &err), -EINVAL);
	assert_int_equal(sk_config_admin_sockaddr("0", 1, &ss, &len, &err), -EINVAL);
}

/* ---- the table test: every setting, from the environment and as a flag ---- */

static uint64_t get_uint(const struct sk_config *c, const struct sk_setting *s)
{
	const char *f = (const char *)c + s->off;
	if (s->size == sizeof(uint64_t)) {
		uint64_t v;
		memcpy(&v, f, sizeof(v));
		return v;
	}
	uint32_t v;
	memcpy(&v, f, sizeof(v));
	return v;
}

static const char *get_str(const struct sk_config *c, const struct sk_setting *s)
{
	const char *v;
	memcpy(&v, (const char *)c + s->off, sizeof(v));
	return v;
}

static bool get_bool(const struct sk_config *c, const struct sk_setting *s)
{
	bool v;
	memcpy(&v, (const char *)c + s->off, sizeof(v));
	return v;
}

/* A row's kind as something to switch on (kinds are pointers, common/settings.h); a kind this test does not
 * know fails it, so a new kind comes with its checks. */
enum kind { K_UINT, K_BOOL, K_PATH, K_ADDR, K_LEVEL, K_LOGFMT };
static enum kind kind(const struct sk_setting *s)
{
	static const struct {
		const struct sk_setting_kind *k;
		enum kind e;
	} map[] = { { SK_SET_UINT, K_UINT }, { SK_SET_BOOL, K_BOOL }, { SK_SET_PATH, K_PATH },
		    { SK_SET_ADDR, K_ADDR }, { SK_SET_LEVEL, K_LEVEL }, { SK_SET_LOGFMT, K_LOGFMT } };
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (s->type == map[i].k)
			return map[i].e;
	fail_msg("%s: a kind config_test does not know", s->env);
	return K_PATH;
}

/* Parses with `value` for s from the environment (as_flag false) or as --flag=value; *c filled on 0. */
static int parse_with(const struct sk_setting *s, const char *value, bool as_flag, struct sk_config *c,
		      struct sk_err *err)
{
	char kv[256], flag[256];
	/* The variable comes first: for STOCKADE_POLICY itself it is the one read (the first match). */
	char *env[] = { kv, "STOCKADE_POLICY=/p", NULL };
	char *argv[] = { "s", "--policy=/p", flag };
	(void)snprintf(kv, sizeof(kv), "%s=%s", s->env, value);
	(void)snprintf(flag, sizeof(flag), "--%s=%s", s->flag ? s->flag : "", value);
	if (as_flag)
		return sk_config_parse(3, argv, NULL, c, err);
	return sk_config_parse(1, argv, env, c, err);
}

static void expect_ok(const struct sk_setting *s, const char *value, bool as_flag, struct sk_config *c)
{
	struct sk_err err = { 0 };
	int r = parse_with(s, value, as_flag, c, &err);
	if (r != 0)
		fail_msg("%s%s '%s': refused: %s", as_flag ? "--" : "", as_flag ? s->flag : s->env, value, err.msg);
}

static void expect_refused(const struct sk_setting *s, const char *value, bool as_flag)
{
	struct sk_config c;
	struct sk_err err = { 0 };
	int r = parse_with(s, value, as_flag, &c, &err);
	if (r != -EINVAL)
		fail_msg("%s%s '%s': accepted (r=%d)", as_flag ? "--" : "", as_flag ? s->flag : s->env, value, r);
	char name[128];
	(void)snprintf(name, sizeof(name), "%s%s: ", as_flag ? "--" : "", as_flag ? s->flag : s->env);
	if (strncmp(err.msg, name, strlen(name)) != 0)
		fail_msg("error for '%s' does not start with the setting's name: %s", value, err.msg);
	assert_null(c.policy_path);   /* freed on error */
}

static void check_uint(const struct sk_setting *s, bool as_flag)
{
	struct sk_config c;
	char buf[64];
	const uint64_t probes[] = { s->min, s->max };
	for (size_t i = 0; i < 2; i++) {
		(void)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)probes[i]);
		expect_ok(s, buf, as_flag, &c);
		assert_int_equal(get_uint(&c, s), probes[i]);
		sk_config_free(&c);
	}
	if (s->min > 0) {
		(void)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)s->min - 1);
		expect_refused(s, buf, as_flag);
	}
	(void)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)s->max + 1);
	expect_refused(s, buf, as_flag);
	static const char *const junk[] = { "junk", "12x", "5s", "0x10", " 5", "+5", "-1", "-0", "1.5",
					    "18446744073709551616", "99999999999999999999999999", "4294967296" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		expect_refused(s, junk[i], as_flag);
}

static void check_setting(const struct sk_setting *s, bool as_flag)
{
	struct sk_config c;
	switch (kind(s)) {
	case K_UINT:
		check_uint(s, as_flag);
		break;
	case K_BOOL: {
		static const char *const t[] = { "true", "1", "yes", "on" }, *const f[] = { "false", "0", "no", "off" };
		for (size_t i = 0; i < 4; i++) {
			expect_ok(s, t[i], as_flag, &c);
			assert_true(get_bool(&c, s));
			sk_config_free(&c);
			expect_ok(s, f[i], as_flag, &c);
			assert_false(get_bool(&c, s));
			sk_config_free(&c);
		}
		expect_refused(s, "2", as_flag);
		expect_refused(s, "TRUEISH", as_flag);
		expect_refused(s, "-1", as_flag);
		break;
	}
	case K_LEVEL: {
		static const char *const names[] = { "error", "warn", "info", "debug" };
		for (size_t i = 0; i < 4; i++) {
			expect_ok(s, names[i], as_flag, &c);
			assert_int_equal(c.log_level, (int)i);
			sk_config_free(&c);
		}
		expect_refused(s, "loud", as_flag);
		expect_refused(s, "-1", as_flag);
		expect_refused(s, "3", as_flag);
		break;
	}
	case K_LOGFMT:
		expect_ok(s, "json", as_flag, &c);
		assert_int_equal(c.log_format, SK_LOG_JSON);
		sk_config_free(&c);
		expect_ok(s, "text", as_flag, &c);
		assert_int_equal(c.log_format, SK_LOG_TEXT);
		sk_config_free(&c);
		expect_refused(s, "JSON", as_flag);
		expect_refused(s, "logfmt", as_flag);
		break;
	case K_ADDR:
		expect_ok(s, "127.0.0.1:9000", as_flag, &c);
		assert_string_equal(get_str(&c, s), "127.0.0.1:9000");
		sk_config_free(&c);
		expect_refused(s, "localhost:9000", as_flag);
		expect_refused(s, "-1", as_flag);
		expect_refused(s, "1.2.3.4:99999999999999999999", as_flag);
		break;
	case K_PATH:
		expect_ok(s, "/some/where", as_flag, &c);
		assert_string_equal(get_str(&c, s), "/some/where");
		sk_config_free(&c);
		break;
	}
	/* Its default is a valid value, and what an unset setting holds. */
	if (s->def) {
		struct sk_config d;
		sk_config_defaults(&d);
		expect_ok(s, s->def, as_flag, &c);
		if (s->type == SK_SET_PATH || s->type == SK_SET_ADDR)
			assert_string_equal(get_str(&c, s), get_str(&d, s));
		else
			assert_memory_equal((const char *)&c + s->off, (const char *)&d + s->off, s->size);
		sk_config_free(&c);
	}
}

static void test_table_every_setting(void **state)
{
	(void)state;
	size_t n;
	const struct sk_setting *t = sk_config_settings(&n);
	assert_true(n >= 20);
	size_t strings = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sk_setting *s = &t[i];
		/* the table's own invariants */
		assert_non_null(s->env);
		assert_int_equal(strncmp(s->env, "STOCKADE_", 9), 0);
		assert_true(s->test_only == (s->flag == NULL));
		assert_non_null(s->help);
		assert_null(strchr(s->help, '|'));   /* the markdown table */
		assert_null(strchr(s->help, '\n'));
		for (size_t j = 0; j < i; j++) {
			assert_string_not_equal(s->env, t[j].env);
			if (s->flag && t[j].flag)
				assert_string_not_equal(s->flag, t[j].flag);
		}
		if (s->type == SK_SET_UINT) {
			assert_true(s->min <= s->max);
			assert_true(s->size == sizeof(uint32_t) || s->size == sizeof(uint64_t));
			if (s->size == sizeof(uint32_t))
				assert_true(s->max <= INT32_MAX);   /* fits an int field as well */
		}
		if (s->type == SK_SET_PATH || s->type == SK_SET_ADDR)
			strings++;
		/* every value check, from the environment and (when it has one) as a flag */
		check_setting(s, false);
		if (s->flag)
			check_setting(s, true);
		/* an empty variable is unset (the default stays); an empty flag value is an error */
		if (s->off != offsetof(struct sk_config, policy_path)) {  /* (an empty policy: "required") */
			struct sk_config c, d;
			expect_ok(s, "", false, &c);
			sk_config_defaults(&d);
			assert_memory_equal((const char *)&c + s->off, (const char *)&d + s->off, s->size);
			sk_config_free(&c);
		}
		if (s->flag)
			expect_refused(s, "", true);
	}
	assert_true(strings <= SK_CONFIG_MAX_STRINGS);
}

/* A flag wins over its variable, whichever comes first in the table. */
static void test_table_flags_win(void **state)
{
	(void)state;
	size_t n;
	const struct sk_setting *t = sk_config_settings(&n);
	for (size_t i = 0; i < n; i++) {
		const struct sk_setting *s = &t[i];
		if (!s->flag || s->type == SK_SET_LEVEL || s->type == SK_SET_LOGFMT)
			continue;
		char env_v[64], flag_v[64], kv[160], fl[160];
		switch (kind(s)) {
		case K_UINT:
			(void)snprintf(env_v, sizeof(env_v), "%llu", (unsigned long long)s->min);
			(void)snprintf(flag_v, sizeof(flag_v), "%llu", (unsigned long long)s->max);
			break;
		case K_BOOL:
			(void)snprintf(env_v, sizeof(env_v), "false");
			(void)snprintf(flag_v, sizeof(flag_v), "true");
			break;
		case K_ADDR:
			(void)snprintf(env_v, sizeof(env_v), "127.0.0.1:1");
			(void)snprintf(flag_v, sizeof(flag_v), "127.0.0.1:2");
			break;
		default:
			(void)snprintf(env_v, sizeof(env_v), "/from/env");
			(void)snprintf(flag_v, sizeof(flag_v), "/from/flag");
			break;
		}
		(void)snprintf(kv, sizeof(kv), "%s=%s", s->env, env_v);
		(void)snprintf(fl, sizeof(fl), "--%s=%s", s->flag, flag_v);
		char *env[] = { kv, NULL };
		char *argv[] = { "s", fl, "--policy=/p" };
		struct sk_config c;
		struct sk_err err = { 0 };
		assert_int_equal(sk_config_parse(3, argv, env, &c, &err), 0);
		switch (kind(s)) {
		case K_UINT: assert_int_equal(get_uint(&c, s), s->max); break;
		case K_BOOL: assert_true(get_bool(&c, s)); break;
		default:
			if (s->off != offsetof(struct sk_config, policy_path))
				assert_string_equal(get_str(&c, s), flag_v);
			else
				assert_string_equal(c.policy_path, "/p");  /* the later --policy wins */
			break;
		}
		sk_config_free(&c);
	}
	/* A bare boolean flag is true and does not take the next argument. */
	char *argv[] = { "s", "--dns-strict-chain", "--policy", "/p" };
	struct sk_config c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_config_parse(4, argv, NULL, &c, &err), 0);
	assert_true(c.dns.strict_chain);
	assert_string_equal(c.policy_path, "/p");
	sk_config_free(&c);
}

static void test_group_defaults(void **state)
{
	(void)state;
	struct sk_proxy_limits p;
	sk_proxy_limits_default(&p);
	assert_int_equal(p.peek_cap, 16384);
	assert_int_equal(p.peek_timeout_ms, 5000);
	assert_int_equal(p.connect_timeout_ms, 10000);
	assert_int_equal(p.idle_timeout_ms, 3600000);
	assert_int_equal(p.max_conns, 16384);
	assert_int_equal(p.max_per_src, 8192);
	assert_int_equal(p.pipe_size, 65536);
	struct sk_gateway_limits g;
	sk_gateway_limits_default(&g);
	assert_int_equal(g.connect_timeout_ms, 10000);
	assert_int_equal(g.idle_timeout_ms, 300000);
	assert_int_equal(g.total_timeout_ms, 3600000);
	assert_int_equal(g.head_timeout_ms, 30000);
	assert_int_equal(g.max_conns, 512);
	struct sk_dns_settings d;
	sk_dns_settings_default(&d);
	assert_string_equal(d.resolv_conf, "/etc/resolv.conf");
	assert_int_equal(d.bindings, 100000);
	assert_int_equal(d.probe_ms, 5000);
	assert_int_equal(d.upstream_sockets, 1024);
	assert_false(d.strict_chain);

	/* values from the environment land in their groups */
	char *env[] = { "STOCKADE_PEEK_TIMEOUT_MS=250", "STOCKADE_MAX_CONNS=10", "STOCKADE_API_IDLE_TIMEOUT_MS=2000",
			"STOCKADE_DNS_UPSTREAM_SOCKETS=2", "STOCKADE_RESOLV_CONF=/r", "STOCKADE_DNS_STRICT_CHAIN=1",
			"STOCKADE_POLICY=/p", NULL };
	char *argv[] = { "s", "--api-connect-timeout-ms", "500" };
	struct sk_config c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_config_parse(ARGC(argv), argv, env, &c, &err), 0);
	assert_int_equal(c.proxy.peek_timeout_ms, 250);
	assert_int_equal(c.proxy.max_conns, 10);
	assert_int_equal(c.proxy.peek_cap, 16384);
	assert_int_equal(c.api.idle_timeout_ms, 2000);
	assert_int_equal(c.api.connect_timeout_ms, 500);
	assert_int_equal(c.dns.upstream_sockets, 2);
	assert_string_equal(c.dns.resolv_conf, "/r");
	assert_true(c.dns.strict_chain);
	sk_config_free(&c);
}

static char *capture(void (*fn)(FILE *, const char *), void (*fn_md)(FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	if (fn)
		fn(f, "stockade-sidecar");
	else
		fn_md(f);
	assert_int_equal(fclose(f), 0);   /* flushes the stream into buf */
	return buf;
}

static void test_help_lists_every_setting(void **state)
{
	(void)state;
	char *help = capture(sk_config_usage, NULL);
	size_t n;
	const struct sk_setting *t = sk_config_settings(&n);
	for (size_t i = 0; i < n; i++) {
		char want[160];
		if (t[i].flag) {
			(void)snprintf(want, sizeof(want), "--%s ", t[i].flag);
			assert_non_null(strstr(help, want));
			(void)snprintf(want, sizeof(want), "env %s\n", t[i].env);
			assert_non_null(strstr(help, want));
			if (t[i].type == SK_SET_UINT) {
				(void)snprintf(want, sizeof(want), "in %llu..%llu; default %s)", (unsigned long long)t[i].min,
					 (unsigned long long)t[i].max, t[i].def ? t[i].def : "unset");
				assert_non_null(strstr(help, want));
			}
		} else {
			assert_non_null(strstr(help, t[i].env));
		}
	}
	free(help);
}

/* docs/operating.md's settings table is what --help-settings-md prints (regenerate with
 * scripts/gen-settings-doc). The suites run from the repository root. */
static void test_operating_md_matches_table(void **state)
{
	(void)state;
	static const char begin[] = "<!-- settings-table:begin -->\n", end[] = "<!-- settings-table:end -->";
	FILE *f = fopen("docs/operating.md", "r");
	if (!f)
		skip();   /* not run from the repository root */
	char *doc = NULL;
	size_t cap = 0;
	ssize_t got = getdelim(&doc, &cap, '\0', f);
	(void)fclose(f);
	assert_true(got > 0);
	char *b = strstr(doc, begin), *e = b ? strstr(b, end) : NULL;
	if (!b || !e) {
		free(doc);
		fail_msg("docs/operating.md: no <!-- settings-table:begin --> ... %s section", end);
		return;
	}
	b += strlen(begin);
	*e = '\0';
	char *md = capture(NULL, sk_config_settings_md);
	if (strcmp(b, md) != 0)
		fail_msg("docs/operating.md's settings table differs from the config table; run scripts/gen-settings-doc");
	free(md);
	free(doc);
}

/* The chart's sidecar.settings accepts exactly the flags the chart does not set itself (values.schema.json,
 * propertyNames): a setting added to the table must be added there too. */
static void test_chart_schema_lists_the_flags(void **state)
{
	(void)state;
	static const char *const chart_owned[] = { "policy", "marker", "admin-addr", "log-level", "drain-seconds" };
	FILE *f = fopen("helm/stockade/values.schema.json", "r");
	if (!f)
		skip();   /* not run from the repository root */
	char *text = NULL;
	size_t cap = 0;
	ssize_t got = getdelim(&text, &cap, '\0', f);
	(void)fclose(f);
	assert_true(got > 0);
	cJSON *root = cJSON_Parse(text);
	free(text);
	assert_non_null(root);
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(root, "properties");
	const cJSON *sidecar = cJSON_GetObjectItemCaseSensitive(props, "sidecar");
	const cJSON *settings = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sidecar, "properties"),
								 "settings");
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(settings, "propertyNames");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(names, "enum");
	if (!cJSON_IsArray(e)) {
		cJSON_Delete(root);
		fail_msg("values.schema.json: no sidecar.settings.propertyNames.enum");
		return;
	}
	size_t n, want = 0;
	const struct sk_setting *t = sk_config_settings(&n);
	for (size_t i = 0; i < n; i++) {
		bool owned = !t[i].flag;
		for (size_t k = 0; k < sizeof(chart_owned) / sizeof(chart_owned[0]) && !owned; k++)
			owned = strcmp(t[i].flag, chart_owned[k]) == 0;
		if (owned)
			continue;
		want++;
		bool found = false;
		const cJSON *it;
		cJSON_ArrayForEach(it, e)
			found |= cJSON_IsString(it) && strcmp(it->valuestring, t[i].flag) == 0;
		if (!found) {
			cJSON_Delete(root);
			fail_msg("helm/stockade/values.schema.json: sidecar.settings does not list '%s'", t[i].flag);
			return;
		}
	}
	assert_int_equal((size_t)cJSON_GetArraySize(e), want);  /* and nothing the sidecar does not have */
	cJSON_Delete(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_required_policy),
		cmocka_unit_test(test_env_then_flags_win),
		cmocka_unit_test(test_empty_env_is_unset),
		cmocka_unit_test(test_bad_values_named),
		cmocka_unit_test(test_help_version_need_no_policy),
		cmocka_unit_test(test_admin_sockaddr_forms),
		cmocka_unit_test(test_table_every_setting),
		cmocka_unit_test(test_table_flags_win),
		cmocka_unit_test(test_group_defaults),
		cmocka_unit_test(test_help_lists_every_setting),
		cmocka_unit_test(test_operating_md_matches_table),
		cmocka_unit_test(test_chart_schema_lists_the_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

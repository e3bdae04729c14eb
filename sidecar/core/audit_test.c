/* sidecar/core/audit_test.c — audit lines are valid JSON with exact fields, whatever bytes the agent sends. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/core/audit.h"
#include "sidecar/core/denials.h"

/* A policy content hash, as every line carries it. */
#define H "0123456789abcdef"

static struct sk_audit_rec sample(const struct sk_addr *src, const struct sk_addr *dst)
{
	struct sk_audit_rec r = {
		.event = "deny", .src = src, .src_port = 40000, .dst = dst, .dst_port = 443,
		.name = "allowed.example", .proto = "tls", .rule = -1, .decision = "deny",
		.reason = "no_match", .bytes_in = 0, .bytes_out = 517, .duration_ms = 3,
	};
	return r;
}

static void test_audit_exact_fields_and_rfc3339_ms(void **state)
{
	(void)state;
	struct sk_addr src, dst;
	assert_int_equal(sk_addr_parse("198.18.0.2", &src), 0);
	assert_int_equal(sk_addr_parse("2001:db8:19::5", &dst), 0);
	struct sk_audit_rec r = sample(&src, &dst);
	r.rule = 7;
	r.binding = "unchecked";
	struct timespec wall = { .tv_sec = 1700000000, .tv_nsec = 123456789 };
	char buf[SK_AUDIT_LINE_MAX];
	size_t n = sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_null(strchr(buf, '\n'));
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "ts")->valuestring, "2023-11-14T22:13:20.123Z");
	assert_string_equal(cJSON_GetObjectItem(j, "event")->valuestring, "deny");
	assert_string_equal(cJSON_GetObjectItem(j, "src")->valuestring, "198.18.0.2:40000");
	assert_string_equal(cJSON_GetObjectItem(j, "dst")->valuestring, "[2001:db8:19::5]:443");
	assert_string_equal(cJSON_GetObjectItem(j, "name")->valuestring, "allowed.example");
	assert_string_equal(cJSON_GetObjectItem(j, "proto")->valuestring, "tls");
	assert_int_equal(cJSON_GetObjectItem(j, "rule")->valueint, 7);
	assert_string_equal(cJSON_GetObjectItem(j, "decision")->valuestring, "deny");
	assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, "no_match");
	assert_string_equal(cJSON_GetObjectItem(j, "binding")->valuestring, "unchecked");
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_in")->valueint, 0);
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, 517);
	assert_int_equal(cJSON_GetObjectItem(j, "duration_ms")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItem(j, "v")->valueint, SK_AUDIT_VERSION);
	assert_string_equal(cJSON_GetObjectItem(j, "policy")->valuestring, H);
	assert_int_equal(cJSON_GetArraySize(j), 15);
	cJSON_Delete(j);
}

static void test_audit_nulls_when_unknown(void **state)
{
	(void)state;
	struct sk_audit_rec r = sample(NULL, NULL);
	r.name = NULL;
	r.proto = NULL;
	struct timespec wall = { 0, 0 };
	char buf[SK_AUDIT_LINE_MAX];
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "src")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "dst")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "name")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "rule")));
	assert_null(cJSON_GetObjectItem(j, "binding"));
	assert_string_equal(cJSON_GetObjectItem(j, "ts")->valuestring, "1970-01-01T00:00:00.000Z");
	cJSON_Delete(j);
}

/* A hostile name with quotes, backslashes, newlines, NUL-adjacent control bytes and high bytes must
 * neither break the line nor inject a field. */
static void test_audit_escapes_hostile_strings(void **state)
{
	(void)state;
	const char evil[] = "a\"b\\c\nd\re\tf\x01g\x7f\xff\xc3\xa9\",\"decision\":\"allow";
	struct sk_audit_rec r = sample(NULL, NULL);
	r.name = evil;
	r.reason = "x\"}\n{\"event\":\"forged";
	struct timespec wall = { 0, 0 };
	char buf[SK_AUDIT_LINE_MAX];
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_null(strchr(buf, '\n'));
	assert_null(strchr(buf, '\r'));
	for (const char *p = buf; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "decision")->valuestring, "deny");
	/* Round trip: every ASCII byte comes back as itself, high bytes as U+00XX. */
	const char *name = cJSON_GetObjectItem(j, "name")->valuestring;
	assert_memory_equal(name, "a\"b\\c\nd\re\tf\x01g\x7f", 13);
	assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, "x\"}\n{\"event\":\"forged");
	cJSON_Delete(j);
}

static void test_audit_long_name_stays_in_line(void **state)
{
	(void)state;
	char name[2000];
	memset(name, '"', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	struct sk_audit_rec r = sample(NULL, NULL);
	r.name = name;
	struct timespec wall = { 0, 0 };
	char buf[SK_AUDIT_LINE_MAX];
	size_t n = sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_true(n < sizeof(buf));
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_int_equal(strlen(cJSON_GetObjectItem(j, "name")->valuestring), 300);
	cJSON_Delete(j);
}

/* Proxy lines, byte for byte: v, ts, event and policy first (every line has them), then the connection's
 * fields; the gateway's (api, method, path, status) are left out when the record leaves them unset. */
static void test_audit_proxy_line_bytes_unchanged(void **state)
{
	(void)state;
	struct sk_addr src, dst;
	assert_int_equal(sk_addr_parse("198.18.0.2", &src), 0);
	assert_int_equal(sk_addr_parse("2001:db8:19::5", &dst), 0);
	struct timespec wall = { .tv_sec = 1700000000, .tv_nsec = 123456789 };
	char buf[SK_AUDIT_LINE_MAX];
	struct sk_audit_rec r = sample(&src, &dst);
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_string_equal(buf, "{\"v\":1,\"ts\":\"2023-11-14T22:13:20.123Z\",\"event\":\"deny\",\"policy\":\"" H "\",\"src\":\"198.18.0.2:40000\","
			    "\"dst\":\"[2001:db8:19::5]:443\",\"name\":\"allowed.example\",\"proto\":\"tls\",\"rule\":null,"
			    "\"decision\":\"deny\",\"reason\":\"no_match\",\"bytes_in\":0,\"bytes_out\":517,\"duration_ms\":3}");
	r.event = "conn";
	r.rule = 2;
	r.decision = "allow";
	r.reason = "rule";
	r.binding = "ok";
	r.late = true;
	r.request = 3;
	r.bytes_in = 1234;
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_string_equal(buf, "{\"v\":1,\"ts\":\"2023-11-14T22:13:20.123Z\",\"event\":\"conn\",\"policy\":\"" H "\",\"src\":\"198.18.0.2:40000\","
			    "\"dst\":\"[2001:db8:19::5]:443\",\"name\":\"allowed.example\",\"proto\":\"tls\",\"rule\":2,"
			    "\"decision\":\"allow\",\"reason\":\"rule\",\"binding\":\"ok\",\"late\":true,\"request\":3,"
			    "\"bytes_in\":1234,\"bytes_out\":517,\"duration_ms\":3}");
	/* A named rule is written by its name, escaped like every string. */
	r.rule_name = "github-api";
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_non_null(strstr(buf, ",\"proto\":\"tls\",\"rule\":\"github-api\",\"decision\":\"allow\","));
}

/* The gateway's line (event "api"): its fields in place of the connection ones, in the order it always
 * wrote them, a deny pushed into the denials ring like the proxy's. */
static void test_audit_api_line_exact_bytes(void **state)
{
	(void)state;
	struct timespec wall = { .tv_sec = 1700000000, .tv_nsec = 5000000 };
	char buf[SK_AUDIT_LINE_MAX];
	struct sk_audit_rec r = {
		.event = "api", .rule = -1, .api = "llm", .method = "POST", .path = "/v1/x?a=&b", .status = 429,
		.decision = "deny", .reason = "rate_limit", .bytes_in = 40, .bytes_out = 0, .duration_ms = 1,
	};
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	assert_string_equal(buf, "{\"v\":1,\"ts\":\"2023-11-14T22:13:20.005Z\",\"event\":\"api\",\"policy\":\"" H "\",\"api\":\"llm\",\"method\":\"POST\","
			    "\"path\":\"/v1/x?a=&b\",\"status\":429,\"decision\":\"deny\",\"reason\":\"rate_limit\","
			    "\"bytes_in\":40,\"bytes_out\":0,\"duration_ms\":1}");
	/* No api named, no method parsed; a hostile path is escaped, and kept up to SK_AUDIT_PATH_MAX bytes. */
	char path[SK_AUDIT_PATH_MAX + 100];
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	memcpy(path, "/\"\\\n\xff", 5);
	r.api = "";
	r.method = NULL;
	r.path = path;
	sk_audit_format(&r, H, &wall, buf, sizeof(buf));
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "api")->valuestring, "");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "method")));
	const char *p = cJSON_GetObjectItem(j, "path")->valuestring;
	assert_memory_equal(p, "/\"\\\n", 4);
	assert_int_equal(strlen(p) - 1, SK_AUDIT_PATH_MAX);   /* U+00FF is two bytes once decoded */
	assert_null(cJSON_GetObjectItem(j, "src"));
	assert_null(cJSON_GetObjectItem(j, "rule"));
	assert_int_equal(cJSON_GetArraySize(j), 13);
	cJSON_Delete(j);
}

/* The one escaper other JSON writers use: ASCII out whatever comes in, cut like audit strings, and
 * snprintf-like about the room it needs. */
static void test_audit_json_str(void **state)
{
	(void)state;
	char out[SK_AUDIT_JSON_STR_MAX];
	size_t n = sk_audit_json_str(out, sizeof(out), "a\"b\\c\x01\x7f\xc3\xa9");
	assert_string_equal(out, "\"a\\\"b\\\\c\\u0001\\u007f\\u00c3\\u00a9\"");
	assert_int_equal(n, strlen(out));
	char small[4];
	assert_int_equal(sk_audit_json_str(small, sizeof(small), "abcdef"), 8);
	assert_string_equal(small, "\"ab");
	char big[SK_AUDIT_STR_MAX * 2];
	memset(big, 0x01, sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(sk_audit_json_str(out, sizeof(out), big), SK_AUDIT_STR_MAX * 6 + 2);
	assert_int_equal(strlen(out), SK_AUDIT_STR_MAX * 6 + 2);
}

static void test_audit_emit_writes_one_line_and_pushes_denials(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct sk_denials *d;
	assert_int_equal(sk_denials_new(8, &d, NULL), 0);
	struct sk_audit a;
	sk_audit_init(&a, p[1], d);
	struct sk_audit_rec r = sample(NULL, NULL);
	sk_audit_emit(&a, &r);
	r.decision = "allow";
	r.event = "conn";
	sk_audit_emit(&a, &r);
	r.decision = "would_deny";
	sk_audit_emit(&a, &r);
	close(p[1]);
	char buf[8192];
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	int lines = 0;
	for (char *s = buf, *nl; (nl = strchr(s, '\n')); s = nl + 1) {
		*nl = '\0';
		cJSON *j = cJSON_Parse(s);
		assert_non_null(j);
		cJSON_Delete(j);
		lines++;
	}
	assert_int_equal(lines, 3);
	assert_int_equal(a.lines, 3);
	char *out;
	size_t len;
	assert_int_equal(sk_denials_render(d, 10, &out, &len), 0);
	cJSON *arr = cJSON_Parse(out);
	assert_non_null(arr);
	assert_int_equal(cJSON_GetArraySize(arr), 2);   /* the deny and the would_deny, not the allow */
	cJSON_Delete(arr);
	free(out);
	sk_denials_free(d);
	close(p[0]);
}

/* A reload line: the policy in force after it, the one before, what asked, how it ended; nothing of a
 * connection, and never a denial (a rejected reload is not an agent's deny). */
static void test_audit_reload_line_exact_bytes(void **state)
{
	(void)state;
	struct timespec wall = { .tv_sec = 1700000000, .tv_nsec = 5000000 };
	char buf[SK_AUDIT_LINE_MAX];
	const struct sk_audit_reload rl = { .previous = "fedcba9876543210", .trigger = "sighup", .result = "failed" };
	struct sk_audit_rec r = { .event = "reload", .rule = -1, .reason = "netns_changed", .reload = &rl };
	sk_audit_format(&r, "fedcba9876543210", &wall, buf, sizeof(buf));
	assert_string_equal(buf, "{\"v\":1,\"ts\":\"2023-11-14T22:13:20.005Z\",\"event\":\"reload\","
			    "\"policy\":\"fedcba9876543210\",\"previous\":\"fedcba9876543210\",\"trigger\":\"sighup\","
			    "\"result\":\"failed\",\"reason\":\"netns_changed\"}");

	int p[2];
	assert_int_equal(pipe(p), 0);
	struct sk_denials *d;
	assert_int_equal(sk_denials_new(8, &d, NULL), 0);
	struct sk_audit a;
	sk_audit_init(&a, p[1], d);
	sk_audit_emit(&a, &r);
	char *out;
	size_t len;
	assert_int_equal(sk_denials_render(d, 10, &out, &len), 0);
	assert_memory_equal(out, "[]", 2);
	free(out);
	sk_denials_free(d);
	close(p[0]);
	close(p[1]);
}

/* No policy set yet (only before main loads one): policy is null, not a made-up hash; once set, every
 * line names it. A line cut by a tiny buffer keeps v, ts, event and policy. */
static void test_audit_policy_field_and_cut_line(void **state)
{
	(void)state;
	struct timespec wall = { 0, 0 };
	char buf[SK_AUDIT_LINE_MAX];
	struct sk_audit_rec r = sample(NULL, NULL);
	sk_audit_format(&r, NULL, &wall, buf, sizeof(buf));
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "policy")));
	cJSON_Delete(j);

	struct sk_audit a;
	sk_audit_init(&a, -1, NULL);
	assert_string_equal(a.policy, "");
	sk_audit_set_policy(&a, H);
	assert_string_equal(a.policy, H);

	char small[120];
	size_t n = sk_audit_format(&r, H, &wall, small, sizeof(small));
	assert_int_equal(n, strlen(small));
	assert_string_equal(small, "{\"v\":1,\"ts\":\"1970-01-01T00:00:00.000Z\",\"event\":\"audit_line_cut\","
			    "\"policy\":\"" H "\"}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_audit_exact_fields_and_rfc3339_ms),
		cmocka_unit_test(test_audit_nulls_when_unknown),
		cmocka_unit_test(test_audit_escapes_hostile_strings),
		cmocka_unit_test(test_audit_long_name_stays_in_line),
		cmocka_unit_test(test_audit_proxy_line_bytes_unchanged),
		cmocka_unit_test(test_audit_api_line_exact_bytes),
		cmocka_unit_test(test_audit_json_str),
		cmocka_unit_test(test_audit_emit_writes_one_line_and_pushes_denials),
		cmocka_unit_test(test_audit_reload_line_exact_bytes),
		cmocka_unit_test(test_audit_policy_field_and_cut_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* cli/installer_test.c — the cluster mode's pieces on canned API answers: which ConfigMaps become which
 * profiles (the generator's own output under the hashed name), which are skipped and why (naming the
 * ConfigMap and the policy's line:col), what is not a ConfigMapList, paging, the grace period before a file
 * is deleted, and which API server URLs may carry the token. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "cli/installer.h"
#include "policy/seccomp/seccomp.h"
#include "policy/seccomp/name.h"

struct skips {
	char src[8][128];
	char why[8][512];
	int n;
};

static void on_skip(void *ctx, const char *source, const char *why)
{
	struct skips *s = ctx;
	assert_true(s->n < 8);
	/* a cut message fails the test's strstr checks, never passes one */
	(void)snprintf(s->src[s->n], sizeof(s->src[0]), "%s", source);
	(void)snprintf(s->why[s->n], sizeof(s->why[0]), "%s", why);
	s->n++;
}

/* The generator's profile for a deny list, as `stockade-policy seccomp --deny ...` writes it. */
static char *reference(const char *const *deny, size_t n)
{
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	struct sk_seccomp_opts o = { .deny = deny, .n_deny = n };
	assert_int_equal(sk_seccomp_generate(&o, &p, &err), 0);
	char *t = sk_cli_profile_json(p, &err);
	sk_scmp_profile_free(p);
	assert_non_null(t);
	return t;
}

#define CM(ns, name, data) \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\",\"labels\":{\"stockade.dev/seccomp-profile\":\"true\"}}," \
	"\"data\":" data "}"

static const char list_page[] =
	"{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\",\"continue\":\"tok-2\"},"
	"\"items\":["
	CM("team-a", "a-stockade-seccomp", "{\"profile\":\"stockade-4696b6ca6e2d4b5e.json\",\"policy.yaml\":\"version: 1\\nseccomp: {}\\n\"}") ","
	CM("team-b", "b-stockade-seccomp", "{\"profile\":\"stockade-b22f410551713c70.json\",\"policy.yaml\":\"version: 1\\nseccomp: {\\\"allow\\\":[],\\\"deny\\\":[\\\"ptrace\\\",\\\"getrandom\\\"]}\\n\"}") ","
	/* the same section as team-b, in another order, without a declared name: one file serves both */
	CM("team-c", "c", "{\"policy.yaml\":\"version: 1\\nseccomp:\\n  deny: [getrandom, ptrace]\\n\"}") ","
	/* a flow sequence never closed: the parser reports it where the input ends, line 3 */
	CM("team-d", "broken", "{\"policy.yaml\":\"version: 1\\nseccomp: [\\n\"}") ","
	/* a name the generator refuses to allow */
	CM("team-e", "ptrace", "{\"policy.yaml\":\"version: 1\\nseccomp:\\n  allow: [ptrace]\\n\"}") ","
	/* declares a name its section does not hash to */
	CM("team-f", "liar", "{\"profile\":\"stockade-0000000000000000.json\",\"policy.yaml\":\"version: 1\\n\"}") ","
	CM("team-g", "empty", "{\"profile\":\"stockade-4696b6ca6e2d4b5e.json\"}") ","
	"{\"metadata\":{\"namespace\":\"team-h\",\"name\":\"nodata\"}}"
	"]}";

static void test_parse_list(void **state)
{
	(void)state;
	struct sk_inst_set set = { 0 };
	struct skips sk = { 0 };
	struct sk_err err = { 0 };
	char *cont = NULL;
	assert_int_equal(sk_inst_parse_list(list_page, strlen(list_page), &set, &cont, on_skip, &sk, &err), 0);
	assert_string_equal(cont, "tok-2");
	free(cont);

	assert_int_equal(set.n, 2);
	assert_string_equal(set.v[0].name, "stockade-4696b6ca6e2d4b5e.json");
	assert_string_equal(set.v[0].source, "team-a/a-stockade-seccomp");
	assert_string_equal(set.v[1].name, "stockade-b22f410551713c70.json");
	assert_string_equal(set.v[1].source, "team-b/b-stockade-seccomp");
	char *ref0 = reference(NULL, 0);
	static const char *const d[] = { "ptrace", "getrandom" };
	char *ref1 = reference(d, 2);
	assert_string_equal(set.v[0].text, ref0);
	assert_string_equal(set.v[1].text, ref1);
	free(ref0);
	free(ref1);

	assert_int_equal(sk.n, 5);
	assert_string_equal(sk.src[0], "team-d/broken");
	assert_non_null(strstr(sk.why[0], "team-d/broken:policy.yaml:3:1: YAML syntax error"));
	assert_string_equal(sk.src[1], "team-e/ptrace");
	assert_non_null(strstr(sk.why[1], "team-e/ptrace:policy.yaml:3:11: seccomp.allow[0]: 'ptrace' never allowed"));
	assert_non_null(strstr(sk.why[1], "ptrace"));
	assert_string_equal(sk.src[2], "team-f/liar");
	assert_non_null(strstr(sk.why[2], "data.profile is 'stockade-0000000000000000.json' but"));
	assert_non_null(strstr(sk.why[2], "hashes to 'stockade-4696b6ca6e2d4b5e.json'"));
	assert_string_equal(sk.src[3], "team-g/empty");
	assert_non_null(strstr(sk.why[3], "no data.policy.yaml"));
	assert_string_equal(sk.src[4], "team-h/nodata");
	sk_inst_set_free(&set);
}

/* What is not a ConfigMapList must fail the round (nothing may be deleted on its strength); an empty one
 * is fine and has no continue token. */
static void test_not_a_list(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"configmaps is forbidden\",\"code\":403}",
		"<html>proxy error</html>",
		"",
		"{\"kind\":\"ConfigMapList\",\"items\":{}}",
		"{\"kind\":\"PodList\",\"items\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sk_inst_set set = { 0 };
		struct skips sk = { 0 };
		struct sk_err err = { 0 };
		char *cont = NULL;
		assert_int_equal(sk_inst_parse_list(bad[i], strlen(bad[i]), &set, &cont, on_skip, &sk, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "not a ConfigMapList"));
		assert_null(cont);
		assert_int_equal(set.n, 0);
	}
	static const char *const empty[] = {
		"{\"kind\":\"ConfigMapList\",\"metadata\":{\"continue\":\"\"},\"items\":[]}",
		"{\"kind\":\"ConfigMapList\",\"items\":null}",
	};
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		struct sk_inst_set set = { 0 };
		struct skips sk = { 0 };
		struct sk_err err = { 0 };
		char *cont = NULL;
		assert_int_equal(sk_inst_parse_list(empty[i], strlen(empty[i]), &set, &cont, on_skip, &sk, &err), 0);
		assert_null(cont);
		assert_int_equal(set.n + (size_t)sk.n, 0);
	}
}

/* Pages add up; a profile already served by an earlier page is not added twice. */
static void test_second_page(void **state)
{
	(void)state;
	static const char page2[] =
		"{\"kind\":\"ConfigMapList\",\"metadata\":{},\"items\":["
		CM("team-z", "z", "{\"policy.yaml\":\"version: 1\\n\"}") ","
		CM("team-y", "y", "{\"policy.yaml\":\"version: 1\\nseccomp: {deny: [uname]}\\n\"}") "]}";
	struct sk_inst_set set = { 0 };
	struct skips sk = { 0 };
	struct sk_err err = { 0 };
	char *cont = NULL;
	assert_int_equal(sk_inst_parse_list(list_page, strlen(list_page), &set, &cont, on_skip, &sk, &err), 0);
	free(cont);
	size_t before = set.n;
	int rc = sk_inst_parse_list(page2, strlen(page2), &set, &cont, on_skip, &sk, &err);
	assert_int_equal(rc, 0);
	assert_null(cont);
	/* team-z repeats team-a's default profile: not added again; team-y's is new */
	assert_int_equal(set.n, before + 1);
	assert_string_equal(set.v[before].source, "team-y/y");
	assert_int_equal(sk.n, 5);
	sk_inst_set_free(&set);
}

static void add_needed(struct sk_inst_set *set, const char *name)
{
	set->v = realloc(set->v, (set->n + 1) * sizeof(*set->v));
	assert_non_null(set->v);
	memset(&set->v[set->n], 0, sizeof(set->v[0]));
	assert_true((size_t)snprintf(set->v[set->n].name, sizeof(set->v[0].name), "%s", name) < sizeof(set->v[0].name));
	set->n++;
}

static void free_due(char **due, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(due[i]);
	free(due);
}

/* A file no ConfigMap asks for is deleted only after grace seconds of continuous absence; one asked for
 * again starts over; files that are not hash-named (stockade-agent.json of 0.1, anything else) never. */
static void test_grace(void **state)
{
	(void)state;
	const char *A = "stockade-aaaaaaaaaaaaaaaa.json", *B = "stockade-bbbbbbbbbbbbbbbb.json";
	const char *files[] = { A, B, "stockade-agent.json", "other.json", "stockade-aaaaaaaaaaaaaaaa.json.tmp1" };
	struct sk_inst_set set = { 0 };
	struct sk_inst_gc gc = { 0 };
	char **due;
	size_t n_due;
	add_needed(&set, A);

	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 1000, 600, &due, &n_due), 0);
	assert_int_equal(n_due, 0);
	assert_int_equal(gc.n, 1);  /* B is counted from t=1000 */
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 1599, 600, &due, &n_due), 0);
	assert_int_equal(n_due, 0);
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 1600, 600, &due, &n_due), 0);
	assert_int_equal(n_due, 1);
	assert_string_equal(due[0], B);
	free_due(due, n_due);
	assert_int_equal(gc.n, 0);

	/* B comes back (written again), then goes: the count starts anew; A needed again meanwhile */
	set.n = 0;
	add_needed(&set, B);
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 2000, 600, &due, &n_due), 0);
	assert_int_equal(n_due, 0);  /* A absent from t=2000 */
	set.n = 0;
	add_needed(&set, A);
	add_needed(&set, B);
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 2500, 600, &due, &n_due), 0);
	assert_int_equal(gc.n, 0);  /* needed again: forgotten */
	set.n = 0;
	add_needed(&set, B);
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 2700, 600, &due, &n_due), 0);
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 3299, 600, &due, &n_due), 0);
	assert_int_equal(n_due, 0);  /* 599 s since it went away again, not since t=2000 */
	assert_int_equal(sk_inst_gc_due(&gc, files, 5, &set, 3300, 600, &due, &n_due), 0);
	assert_int_equal(n_due, 1);
	assert_string_equal(due[0], A);
	free_due(due, n_due);

	/* grace 0 deletes at once; a file gone from the directory is forgotten */
	set.n = 0;
	assert_int_equal(sk_inst_gc_due(&gc, files, 2, &set, 4000, 0, &due, &n_due), 0);
	assert_int_equal(n_due, 2);
	free_due(due, n_due);
	assert_int_equal(sk_inst_gc_due(&gc, files + 2, 3, &set, 4001, 0, &due, &n_due), 0);
	assert_int_equal(n_due, 0);
	assert_int_equal(gc.n, 0);
	free(set.v);
	sk_inst_gc_free(&gc);
}

/* The default profile is in every round's set, first, under the built-in name, as the generator makes it
 * for a policy without a seccomp section; a ConfigMap with the same section adds no second copy; so the
 * grace period never deletes it, whatever the ConfigMaps say. */
static void test_default_profile(void **state)
{
	(void)state;
	struct sk_inst_set set = { 0 };
	struct sk_inst_gc gc = { 0 };
	struct skips sk = { 0 };
	struct sk_err err = { 0 };
	char *cont = NULL, **due;
	size_t n_due;
	assert_int_equal(sk_inst_add_default(&set, &err), 0);
	assert_int_equal(set.n, 1);
	assert_string_equal(set.v[0].name, SK_SCMP_DEFAULT_NAME);
	assert_string_equal(set.v[0].source, SK_INST_DEFAULT_SOURCE);
	char *ref = reference(NULL, 0);
	assert_string_equal(set.v[0].text, ref);
	free(ref);
	assert_int_equal(sk_inst_add_default(&set, &err), 0);
	assert_int_equal(set.n, 1);
	/* team-a's ConfigMap declares the default section: still one entry, the built-in one */
	assert_int_equal(sk_inst_parse_list(list_page, strlen(list_page), &set, &cont, on_skip, &sk, &err), 0);
	free(cont);
	assert_int_equal(set.n, 2);
	assert_string_equal(set.v[0].source, SK_INST_DEFAULT_SOURCE);
	assert_string_equal(set.v[1].name, "stockade-b22f410551713c70.json");
	sk_inst_set_free(&set);

	/* --log-denials: the same name, the text with the flag */
	set.log_denials = true;
	assert_int_equal(sk_inst_add_default(&set, &err), 0);
	assert_string_equal(set.v[0].name, SK_SCMP_DEFAULT_NAME);
	assert_non_null(strstr(set.v[0].text, "\"flags\":\t[\"SECCOMP_FILTER_FLAG_LOG\"]"));
	sk_inst_set_free(&set);
	set.log_denials = false;

	/* an empty cluster: the default is still needed, another hash-named file is not */
	const char *files[] = { SK_SCMP_DEFAULT_NAME, "stockade-aaaaaaaaaaaaaaaa.json" };
	assert_int_equal(sk_inst_add_default(&set, &err), 0);
	assert_int_equal(sk_inst_gc_due(&gc, files, 2, &set, 1000, 0, &due, &n_due), 0);
	assert_int_equal(n_due, 1);
	assert_string_equal(due[0], "stockade-aaaaaaaaaaaaaaaa.json");
	free_due(due, n_due);
	sk_inst_set_free(&set);
	sk_inst_gc_free(&gc);
}

static void test_server_ok(void **state)
{
	(void)state;
	assert_true(sk_inst_server_ok("https://10.96.0.1:443"));
	assert_true(sk_inst_server_ok("https://[fd00::1]:6443"));
	assert_true(sk_inst_server_ok("http://127.0.0.1:8080"));
	assert_true(sk_inst_server_ok("http://[::1]:8080"));
	assert_true(sk_inst_server_ok("http://localhost"));
	assert_false(sk_inst_server_ok("http://10.96.0.1:443"));
	assert_false(sk_inst_server_ok("http://127.0.0.1.evil.example:80"));
	assert_false(sk_inst_server_ok("http://localhost.evil.example"));
	assert_false(sk_inst_server_ok("https://"));
	assert_false(sk_inst_server_ok("ftp://127.0.0.1"));
	assert_false(sk_inst_server_ok("10.96.0.1:443"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_list),
		cmocka_unit_test(test_not_a_list),
		cmocka_unit_test(test_second_page),
		cmocka_unit_test(test_grace),
		cmocka_unit_test(test_default_profile),
		cmocka_unit_test(test_server_ok),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* injector/config_test.c — the settings: table defaults equal inject's, the flag wins over the variable,
 * an empty variable is unset, malformed values name the flag or variable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/err.h"
#include "injector/config.h"
#include "policy/seccomp/name.h"

static void test_defaults_are_injects(void **state)
{
	(void)state;
	char *argv[] = { "stockade-injector", "--tls-cert", "c.pem", "--tls-key=k.pem", NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(4, argv, NULL, &cfg, &err), 0);
	struct sk_inject_opts d;
	sk_inject_opts_default(&d);
	assert_string_equal(cfg.inject.init_image, d.init_image);
	assert_string_equal(cfg.inject.seccomp_profile, d.seccomp_profile);
	assert_int_equal(cfg.inject.agent_uid, d.agent_uid);
	assert_int_equal(cfg.inject.admin_port, d.admin_port);
	assert_true(cfg.inject.native);
	assert_true(cfg.inject.hold_until_ready);
	assert_string_equal(cfg.tls_key, "k.pem");
	assert_string_equal(cfg.listen, "8443");
	assert_int_equal(cfg.threads, 4);
	assert_int_equal(cfg.n_exclude, 1);
	assert_string_equal(cfg.exclude[0], "kube-system");
	sk_injector_config_free(&cfg);
}

static void test_flag_wins_over_environment(void **state)
{
	(void)state;
	char *argv[] = { "x", "--agent-uid", "2000", "--classic-sidecar", "--no-seccomp", NULL };
	char *envp[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_AGENT_UID=3000", "STOCKADE_THREADS=",
			 "STOCKADE_EXCLUDE_NAMESPACES=kube-system,stockade-system", "STOCKADE_ADMIN_PORT=15001", NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(5, argv, envp, &cfg, &err), 0);
	assert_int_equal(cfg.inject.agent_uid, 2000);
	assert_int_equal(cfg.inject.admin_port, 15001);
	assert_int_equal(cfg.threads, 4);
	assert_false(cfg.inject.native);
	assert_null(cfg.inject.seccomp_profile);
	assert_int_equal(cfg.n_exclude, 2);
	assert_string_equal(cfg.exclude[1], "stockade-system");
	sk_injector_config_free(&cfg);
}

static void expect_error(char **argv, int argc, char **envp, const char *msg)
{
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(argc, argv, envp, &cfg, &err), -EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' lacks '%s'", err.msg, msg);
}

static void test_bad_values_name_their_source(void **state)
{
	(void)state;
	char *env[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", NULL };
	char *a1[] = { "x", "--threads", "0", NULL };
	expect_error(a1, 3, env, "--threads: '0' is not an integer in 1..256");
	char *a2[] = { "x", "--pull-policy=Sometimes", NULL };
	expect_error(a2, 2, env, "--pull-policy: 'Sometimes' is not Always, IfNotPresent or Never");
	char *a3[] = { "x", "--exclude-namespaces", "kube-system,,x", NULL };
	expect_error(a3, 3, env, "--exclude-namespaces: 'kube-system,,x': expected");
	char *a4[] = { "x", "--init-image", "a b", NULL };
	expect_error(a4, 3, env, "--init-image: 'a b': expected printable ASCII");
	char *a5[] = { "x", NULL };
	expect_error(a5, 1, NULL, "--tls-cert FILE and --tls-key FILE");
	char *e6[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_SIDECAR_UID=1000", NULL };
	expect_error(a5, 1, e6, "must differ");
	char *a7[] = { "x", "--frobnicate", NULL };
	expect_error(a7, 2, env, "unknown flag '--frobnicate'");
	char *e8[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_LOG_LEVEL=loud", NULL };
	expect_error(a5, 1, e8, "STOCKADE_LOG_LEVEL: 'loud'");
	/* a profile the installer would never serve (0.1's name, a path) is refused at startup */
	char *a9[] = { "x", "--seccomp-profile", "stockade-agent.json", NULL };
	expect_error(a9, 3, env, "--seccomp-profile: 'stockade-agent.json': expected stockade-<16 hex>.json");
	char *e10[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_SECCOMP_PROFILE=../stockade-0123456789abcdef.json",
			NULL };
	expect_error(a5, 1, e10, "STOCKADE_SECCOMP_PROFILE: '../stockade-0123456789abcdef.json': expected");
}

/* The default profile is the one every installer serves: the computed name of a policy without a seccomp
 * section; another installer-shaped name is taken as given. */
static void test_seccomp_profile(void **state)
{
	(void)state;
	char *env[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", NULL };
	char *a1[] = { "x", NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	char def[SK_SCMP_NAME_SIZE];
	assert_int_equal(sk_seccomp_profile_name(NULL, 0, NULL, 0, def, &err), 0);
	assert_int_equal(sk_injector_config_parse(1, a1, env, &cfg, &err), 0);
	assert_string_equal(cfg.inject.seccomp_profile, def);
	sk_injector_config_free(&cfg);
	char *a2[] = { "x", "--seccomp-profile=stockade-0123456789abcdef.json", NULL };
	assert_int_equal(sk_injector_config_parse(2, a2, env, &cfg, &err), 0);
	assert_string_equal(cfg.inject.seccomp_profile, "stockade-0123456789abcdef.json");
	sk_injector_config_free(&cfg);
}

/* inject's --sidecar-setting, --api-secret and --sidecar-first: the settings sorted by name, as inject sorts
 * its repeated flags, the secrets in the given order; malformed items named. */
static void test_sidecar_extras(void **state)
{
	(void)state;
	char *argv[] = { "x", "--sidecar-settings", "peek-timeout-ms=2000  dns-upstream-sockets=64", "--sidecar-first",
			 NULL };
	char *envp[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_API_SECRETS=gh=gh-token pypi=pypi-token",
			 NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(4, argv, envp, &cfg, &err), 0);
	assert_int_equal(cfg.inject.n_settings, 2);
	/* sorted by name, as inject and the chart order them */
	assert_string_equal(cfg.inject.settings[0], "--dns-upstream-sockets=64");
	assert_string_equal(cfg.inject.settings[1], "--peek-timeout-ms=2000");
	assert_int_equal(cfg.inject.n_secrets, 2);
	assert_string_equal(cfg.inject.secrets[0].name, "gh");
	assert_string_equal(cfg.inject.secrets[0].secret_name, "gh-token");
	assert_string_equal(cfg.inject.secrets[1].name, "pypi");
	assert_string_equal(cfg.inject.secrets[1].secret_name, "pypi-token");
	assert_true(cfg.inject.sidecar_first);
	sk_injector_config_free(&cfg);

	char *none[] = { "x", NULL };
	assert_int_equal(sk_injector_config_parse(1, none, envp + 0, &cfg, &err), 0);
	assert_false(cfg.inject.sidecar_first);
	assert_int_equal(cfg.inject.n_settings, 0);
	sk_injector_config_free(&cfg);

	char *env[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", NULL };
	char *a1[] = { "x", "--sidecar-settings", "peek-timeout-ms", NULL };
	expect_error(a1, 3, env, "--sidecar-settings: 'peek-timeout-ms': expected at most 64 space-separated NAME=VALUE");
	char *a2[] = { "x", "--sidecar-settings", "Peek=1", NULL };
	expect_error(a2, 3, env, "--sidecar-settings: 'Peek=1': expected");
	char *a3[] = { "x", "--api-secrets", "gh=Bad_Secret", NULL };
	expect_error(a3, 3, env, "--api-secrets: 'gh=Bad_Secret': expected at most 64 space-separated NAME=SECRET");
	char *a4[] = { "x", "--api-secrets", "gh=", NULL };
	expect_error(a4, 3, env, "--api-secrets: 'gh=': expected");
}

/* inject's --secret-env and --no-trust: the placeholders in the given order (inject sorts them into the pod),
 * the trust files on unless turned off; a malformed list, a bad variable name or placeholder, a name given
 * twice refused at start, named. */
static void test_secret_env_and_trust(void **state)
{
	(void)state;
	char *argv[] = { "x", "--secret-env", "GITHUB_TOKEN=stockade-secret-github  NPM_TOKEN=stockade-secret-npmjs1", NULL };
	char *env[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(3, argv, env, &cfg, &err), 0);
	assert_int_equal(cfg.inject.n_secret_env, 2);
	assert_string_equal(cfg.inject.secret_env[0].name, "GITHUB_TOKEN");
	assert_string_equal(cfg.inject.secret_env[0].value, "stockade-secret-github");
	assert_string_equal(cfg.inject.secret_env[1].name, "NPM_TOKEN");
	assert_string_equal(cfg.inject.secret_env[1].value, "stockade-secret-npmjs1");
	assert_true(cfg.inject.trust);
	sk_injector_config_free(&cfg);

	char *off[] = { "x", NULL };
	char *env_off[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_NO_TRUST=true", NULL };
	assert_int_equal(sk_injector_config_parse(1, off, env_off, &cfg, &err), 0);
	assert_false(cfg.inject.trust);
	assert_int_equal(cfg.inject.n_secret_env, 0);
	sk_injector_config_free(&cfg);

	char *a1[] = { "x", "--secret-env", "GITHUB_TOKEN", NULL };
	expect_error(a1, 3, env, "--secret-env: 'GITHUB_TOKEN': expected at most 64 space-separated NAME=PLACEHOLDER");
	char *a2[] = { "x", "--secret-env", "GITHUB_TOKEN=", NULL };
	expect_error(a2, 3, env, "--secret-env: 'GITHUB_TOKEN=': expected");
	char *a3[] = { "x", "--secret-env", "GIT-HUB=stockade-secret-github", NULL };
	expect_error(a3, 3, env, "NAME a variable name");
	char *a4[] = { "x", "--secret-env", "T=short", NULL };
	expect_error(a4, 3, env, "the placeholder must be 16 to 128 characters");
	char *a5[] = { "x", "--secret-env", "T=stockade-secret-github T=stockade-secret-github", NULL };
	expect_error(a5, 3, env, "given twice");
}

/* inject's --init-in-sidecar, by flag or variable; with a classic sidecar or the sidecar first the injector
 * does not start (it would refuse every pod), saying why as inject does. */
static void test_init_in_sidecar(void **state)
{
	(void)state;
	char *env[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_INIT_IN_SIDECAR=true", NULL };
	char *a0[] = { "x", NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(1, a0, env, &cfg, &err), 0);
	assert_true(cfg.inject.init_in_sidecar);
	assert_true(cfg.inject.native);
	sk_injector_config_free(&cfg);
	char *tls_only[] = { env[0], env[1], NULL };
	char *a1[] = { "x", "--init-in-sidecar", NULL };
	assert_int_equal(sk_injector_config_parse(2, a1, tls_only, &cfg, &err), 0);
	assert_true(cfg.inject.init_in_sidecar);
	sk_injector_config_free(&cfg);
	assert_int_equal(sk_injector_config_parse(1, a0, tls_only, &cfg, &err), 0);
	assert_false(cfg.inject.init_in_sidecar);
	sk_injector_config_free(&cfg);

	static const char why[] = "--init-in-sidecar needs the native sidecar (not --classic-sidecar, not "
				  "--sidecar-first): a classic sidecar's failed postStart hook does not stop the kubelet "
				  "from starting the agent, so the agent could run with no rules (fail open)";
	char *a2[] = { "x", "--sidecar-first", NULL };
	expect_error(a2, 2, env, why);
	char *a3[] = { "x", "--classic-sidecar", NULL };
	expect_error(a3, 2, env, why);
	char *a4[] = { "x", "--classic-sidecar", "--init-in-sidecar=false", NULL };
	assert_int_equal(sk_injector_config_parse(3, a4, env, &cfg, &err), 0);
	assert_false(cfg.inject.init_in_sidecar);
	sk_injector_config_free(&cfg);
}

/* inject's --cni, by flag or variable; refused with --init-in-sidecar, saying why as inject does. */
static void test_cni(void **state)
{
	(void)state;
	char *env[] = { "STOCKADE_TLS_CERT=c", "STOCKADE_TLS_KEY=k", "STOCKADE_CNI=true", NULL };
	char *a0[] = { "x", NULL };
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	assert_int_equal(sk_injector_config_parse(1, a0, env, &cfg, &err), 0);
	assert_true(cfg.inject.cni);
	assert_null(cfg.inject.netns_policy);   /* the plugin reads the pod's policy ConfigMap */
	sk_injector_config_free(&cfg);
	char *tls_only[] = { env[0], env[1], NULL };
	assert_int_equal(sk_injector_config_parse(1, a0, tls_only, &cfg, &err), 0);
	assert_false(cfg.inject.cni);
	sk_injector_config_free(&cfg);
	char *a1[] = { "x", "--cni", NULL };
	assert_int_equal(sk_injector_config_parse(2, a1, tls_only, &cfg, &err), 0);
	assert_true(cfg.inject.cni);
	sk_injector_config_free(&cfg);
	char *a2[] = { "x", "--init-in-sidecar", NULL };
	expect_error(a2, 2, env, "--cni and --init-in-sidecar: in CNI mode the node's plugin programs the netns");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_injects),
		cmocka_unit_test(test_flag_wins_over_environment),
		cmocka_unit_test(test_bad_values_name_their_source),
		cmocka_unit_test(test_seccomp_profile),
		cmocka_unit_test(test_sidecar_extras),
		cmocka_unit_test(test_secret_env_and_trust),
		cmocka_unit_test(test_init_in_sidecar),
		cmocka_unit_test(test_cni),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

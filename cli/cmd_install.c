/* cli/cmd_install.c — `stockade-policy seccomp-install`: the seccomp installer DaemonSet's
 * process. Keeps DIR/NAME equal to the profile generated from the policy (re-read each round, so a
 * ConfigMap edit reaches the nodes), writing only when the content differs, atomically (temp file +
 * fsync + rename) so the kubelet never reads half a profile. Runs as uid 0 with no capability: enough
 * for the root-owned kubelet directory it mounts, nothing more. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/json_str.h"
#include "common/util.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "policy/seccomp.h"

static volatile sig_atomic_t install_stop;

static void on_term(int sig)
{
	(void)sig;
	install_stop = 1;
}

/* Generates the profile text (owned, ends with a newline) from the policy at path. */
static char *render_profile(const char *policy_path, struct sk_err *err)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *pol = NULL;
	struct sk_scmp_profile *prof = NULL;
	char *text = NULL;

	/* The API secrets a policy names are mounted into the sidecar only, never into the installer:
	 * their files are not this process's business, the seccomp section is. */
	if (sk_policy_load_file_ex(policy_path, -1, SK_LOAD_NO_FILE_CHECKS, &pol, &diags) < 0 ||
	    sk_cli_check_seccomp(pol, &diags) < 0) {
		if (diags.n > 0)
			sk_err_set(err, EINVAL, "%s:%u:%u: %s", diags.v[0].file, diags.v[0].line, diags.v[0].col,
				   diags.v[0].msg);
		else
			sk_err_set(err, EINVAL, "%s: cannot load policy", policy_path);
		goto out;
	}
	struct sk_seccomp_opts opts = {
		.allow = (const char *const *)pol->seccomp.allow, .n_allow = pol->seccomp.n_allow,
		.deny = (const char *const *)pol->seccomp.deny, .n_deny = pol->seccomp.n_deny,
	};
	if (sk_seccomp_generate(&opts, &prof, err) < 0)
		goto out;
	text = sk_cli_profile_json(prof, err);
out:
	sk_scmp_profile_free(prof);
	sk_policy_free(pol);
	sk_diags_free(&diags);
	return text;
}

/* 1 when path already holds exactly want, 0 otherwise (missing, different, unreadable). */
static int file_equals(const char *path, const char *want)
{
	sk_autofclose FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t len = strlen(want), got = 0;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (got + n > len || memcmp(buf, want + got, n) != 0)
			return 0;
		got += n;
	}
	return got == len;
}

static void log_line(const char *event, const char *path, const char *msg)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	(void)strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);   /* 20 bytes */
	/* Paths and error texts may hold quotes, control bytes or non-UTF-8 bytes: one escaper for all. */
	printf("{\"ts\":\"%s\",\"event\":\"%s\",\"path\":", ts, event);
	sk_json_fputs(stdout, path);
	if (msg) {
		printf(",\"error\":");
		sk_json_fputs(stdout, msg);
	}
	printf("}\n");
	/* the installer's job is the profile: a log line lost to a full or closed stdout must not stop it */
	(void)fflush(stdout);
}

int sk_cmd_seccomp_install(int argc, char **argv)
{
	const char *policy = NULL, *dir = NULL, *name = "stockade-agent.json";
	long interval = 300;
	int once = 0;
	static const char *const opt_names[] = { "--policy", "--dir", "--name", "--interval" };
	const char *interval_s = NULL;
	const char **slot[] = { &policy, &dir, &name, &interval_s };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int m = 0;
		for (size_t k = 0; k < SK_ARRAY_SIZE(opt_names) && !m; k++)
			m = sk_cli_opt(argc, argv, &i, opt_names[k], NULL, slot[k]);
		if (m < 0)
			return SK_EXIT_USAGE;
		if (m)
			continue;
		if (!strcmp(a, "--once"))
			once = 1;
		else
			return sk_cli_usage_error(argv[0], "unknown argument '%s'", a);
	}
	if (interval_s) {
		char *end;
		errno = 0;
		interval = strtol(interval_s, &end, 10);
		if (errno || *end || interval < 1 || interval > 86400) {
			(void)fprintf(stderr, "stockade-policy seccomp-install: --interval: expected 1..86400 seconds\n");
			return SK_EXIT_USAGE;
		}
	}
	if (!policy || !dir) {
		(void)fprintf(stderr, "stockade-policy seccomp-install: --policy and --dir are required\n");
		return SK_EXIT_USAGE;
	}
	/* A flat file name only: some runtimes mis-parse nested Localhost paths, and no "..". */
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		(void)fprintf(stderr, "stockade-policy seccomp-install: --name must be a plain file name\n");
		return SK_EXIT_USAGE;
	}
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	char path[4096];
	/* Refused up front so file_equals and the write never see a truncated name. */
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		(void)fprintf(stderr, "stockade-policy seccomp-install: --dir/--name: path too long\n");
		return SK_EXIT_USAGE;
	}
	int failures = 0, last_ex = SK_EXIT_OK;
	while (!install_stop) {
		struct sk_err err = { 0 };
		char *text = render_profile(policy, &err);
		/* One failure path for both steps: a bad policy and a failed write are reported alike (and
		 * told apart by --once's exit code). */
		int rc = text ? 0 : -EINVAL;
		last_ex = text ? SK_EXIT_RUNTIME : SK_EXIT_POLICY;
		if (text && !file_equals(path, text)) {
			rc = sk_cli_write_atomic(path, text, &err);
			if (rc == 0)
				log_line("seccomp_installed", path, NULL);
		}
		free(text);
		if (rc < 0) {
			log_line("seccomp_install_failed", path, err.msg);
			failures++;
		} else {
			failures = 0;
		}
		if (once)
			return failures ? last_ex : SK_EXIT_OK;
		for (long s = 0; s < interval && !install_stop; s++)
			sleep(1);
	}
	return SK_EXIT_OK;
}

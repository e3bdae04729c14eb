/* cli/cmd_seccomp.c — `stockade-policy seccomp` (generate / diff the agent's seccomp profile) and
 * `stockade-policy exec --seccomp FILE -- CMD` (run one command under a profile, as runc would). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/util.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"
#include "policy/seccomp/seccomp.h"
#include "policy/seccomp/apply.h"
#include "policy/seccomp/name.h"

static void seccomp_usage(FILE *out)
{
	sk_cli_usage("seccomp", out);
}

struct strv {
	const char **v;
	size_t n;
};

/* Appends each comma-separated item of s (borrowed: points into argv or the policy). */
static int strv_add_list(struct strv *sv, char *s)
{
	for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char **nv = realloc(sv->v, (sv->n + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		sv->v = nv;
		sv->v[sv->n++] = tok;
	}
	return 0;
}

static int strv_add(struct strv *sv, const char *s)
{
	const char **nv = realloc(sv->v, (sv->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	sv->v = nv;
	sv->v[sv->n++] = s;
	return 0;
}

static int count_allowed(const struct sk_scmp_profile *p, size_t *cond)
{
	int n = 0;
	*cond = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(p->rules[j].name, p->rules[i].name);
		if (seen)
			continue;
		char *d = sk_scmp_profile_describe(p, p->rules[i].name);
		if (d && !strncmp(d, "allow", 5)) {
			n++;
			if (strstr(d, " when "))
				(*cond)++;
		}
		free(d);
	}
	return n;
}

static int cmd_diff(const char *a_path, const char *b_path)
{
	struct sk_err err = { 0 };
	struct sk_scmp_profile *a = NULL, *b = NULL;
	int rc = SK_EXIT_RUNTIME;
	if (sk_scmp_profile_load_file(a_path, &a, &err) < 0 || sk_scmp_profile_load_file(b_path, &b, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy seccomp: %s\n", err.msg);
		rc = SK_EXIT_USAGE;
		goto out;
	}
	size_t n = 0, ca, cb;
	char *text = sk_scmp_profile_diff(a, b, &n, &err);
	if (!text) {
		(void)fprintf(stderr, "stockade-policy seccomp: %s\n", err.msg);
		goto out;
	}
	int na = count_allowed(a, &ca), nb = count_allowed(b, &cb);
	printf("# A = %s\n# B = %s\n%s", a_path, b_path, text);
	printf("# A allows %d syscalls (%zu conditionally), B allows %d (%zu conditionally); %zu differences\n", na,
	       ca, nb, cb, n);
	free(text);
	rc = n ? SK_EXIT_FAIL : SK_EXIT_OK;
out:
	sk_scmp_profile_free(a);
	sk_scmp_profile_free(b);
	return rc;
}

static int cmd_describe(int argc, char **argv)
{
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	if (sk_scmp_profile_load_file(argv[0], &p, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy seccomp: %s\n", err.msg);
		return SK_EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		char *d = sk_scmp_profile_describe(p, argv[i]);
		printf("%s: %s\n", argv[i], d ? d : "?");
		free(d);
	}
	sk_scmp_profile_free(p);
	return SK_EXIT_OK;
}

int sk_cmd_seccomp(int argc, char **argv)
{
	struct strv allow = { 0 }, deny = { 0 };
	const char *policy_path = NULL, *out_path = NULL, *arch_list = NULL;
	struct sk_policy *pol = NULL;
	struct sk_scmp_profile *prof = NULL;
	struct sk_err err = { 0 };
	char *json = NULL;
	int rc = SK_EXIT_USAGE;
	bool print_name = false, log_denials = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		bool has_val = i + 1 < argc;
		int m;
		if ((m = sk_cli_opt(argc, argv, &i, "--policy", NULL, &v)) != 0) {
			if (m < 0)
				goto usage;
			policy_path = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--allow", NULL, &v)) != 0) {
			if (m < 0)
				goto usage;
			if (strv_add_list(&allow, (char *)v) < 0)
				goto oom;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--deny", NULL, &v)) != 0) {
			if (m < 0)
				goto usage;
			if (strv_add_list(&deny, (char *)v) < 0)
				goto oom;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--arch", NULL, &v)) != 0) {
			if (m < 0)
				goto usage;
			arch_list = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--output", "-o", &v)) != 0) {
			if (m < 0)
				goto usage;
			out_path = v;
		} else if (!strcmp(a, "--print-name")) {
			print_name = true;
		} else if (!strcmp(a, "--log-denials")) {
			log_denials = true;
		} else if (!strcmp(a, "--diff")) {
			if (i + 2 >= argc || argc != i + 3) {
				seccomp_usage(stderr);
				goto out;
			}
			rc = cmd_diff(argv[i + 1], argv[i + 2]);
			goto out;
		} else if (!strcmp(a, "--describe") && has_val) {
			rc = cmd_describe(argc - i - 1, argv + i + 1);
			goto out;
		} else {
			(void)fprintf(stderr, "stockade-policy seccomp: unknown or incomplete argument '%s'\n", a);
			seccomp_usage(stderr);
			goto out;
		}
	}

	if (policy_path) {
		struct sk_diags diags = { 0 };
		/* API secret files are the sidecar's: the profile does not depend on them (see profile.h). */
		if (sk_policy_load_file_ex(policy_path, -1, SK_LOAD_NO_FILE_CHECKS, &pol, &diags) < 0 ||
		    sk_seccomp_check_policy(pol, &diags) < 0) {
			/* The policy's own names are reported at their file:line:col, as `check` does. */
			sk_diags_print(&diags, stderr);
			sk_diags_free(&diags);
			rc = SK_EXIT_POLICY;
			goto out;
		}
		sk_diags_free(&diags);
		for (size_t i = 0; i < pol->seccomp.n_allow; i++)
			if (strv_add(&allow, pol->seccomp.allow[i]) < 0)
				goto oom;
		for (size_t i = 0; i < pol->seccomp.n_deny; i++)
			if (strv_add(&deny, pol->seccomp.deny[i]) < 0)
				goto oom;
	}

	uint32_t arches[4];
	size_t n_arches = 0;
	if (arch_list && sk_seccomp_parse_arches(arch_list, arches, SK_ARRAY_SIZE(arches), &n_arches, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy %s\n", err.msg);
		goto out;
	}
	struct sk_seccomp_opts opts = {
		.allow = allow.v, .n_allow = allow.n, .deny = deny.v, .n_deny = deny.n,
		.arches = arches, .n_arches = n_arches, .log_denials = log_denials,
	};
	if (sk_seccomp_generate(&opts, &prof, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy %s%s%s\n", policy_path ? policy_path : "", policy_path ? ": " : "",
			err.msg);
		rc = policy_path ? SK_EXIT_POLICY : SK_EXIT_USAGE;
		goto out;
	}
	if (print_name) {
		/* The name is of the profile for both default architectures, the only one the installer writes. */
		if (arch_list) {
			(void)fprintf(stderr, "stockade-policy seccomp: --print-name names the default (x86_64 + aarch64) "
				"profile: leave out --arch\n");
			goto out;
		}
		char name[SK_SCMP_NAME_SIZE];
		if (sk_seccomp_profile_name(allow.v, allow.n, deny.v, deny.n, name, &err) < 0)
			goto oom;
		printf("%s\n", name);
		rc = SK_EXIT_OK;
		goto out;
	}
	json = sk_cli_profile_json(prof, &err);
	if (!json) {
		(void)fprintf(stderr, "stockade-policy %s\n", err.msg);
		rc = SK_EXIT_RUNTIME;
		goto out;
	}
	if (out_path) {
		if (sk_cli_write_atomic(out_path, json, &err) < 0) {
			(void)fprintf(stderr, "stockade-policy seccomp: %s\n", err.msg);
			rc = SK_EXIT_RUNTIME;
			goto out;
		}
	} else if (fputs(json, stdout) < 0 || fflush(stdout) != 0) {
		/* a profile that did not arrive (a full disk, a closed pipe) must not exit 0 */
		(void)fprintf(stderr, "stockade-policy seccomp: write stdout failed\n");
		rc = SK_EXIT_RUNTIME;
		goto out;
	}
	rc = SK_EXIT_OK;
	goto out;
usage:
	seccomp_usage(stderr);
	rc = SK_EXIT_USAGE;
	goto out;
oom:
	fprintf(stderr, "stockade-policy seccomp: out of memory\n");
	rc = SK_EXIT_RUNTIME;
out:
	free(json);
	sk_scmp_profile_free(prof);
	sk_policy_free(pol);
	free(allow.v);
	free(deny.v);
	return rc;
}

/* A harness that leaves SIGPIPE ignored changes pipelines under it (`yes | head` never ends), and a blocked
 * mask is inherited through exec: start CMD with every signal at its default, as a fresh container is. */
static void reset_signals(void)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++) {
		struct sigaction sa;
		if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &sa) < 0)
			continue;
		if (sa.sa_handler == SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			sa.sa_flags = 0;
			sigemptyset(&sa.sa_mask);
			sigaction(s, &sa, NULL);
		}
	}
}

int sk_cmd_exec(int argc, char **argv)
{
	const char *profile_path = NULL;
	int i = 1;
	for (; i < argc; i++) {
		const char *v = NULL;
		int m = sk_cli_opt(argc, argv, &i, "--seccomp", NULL, &v);
		if (m < 0)
			return SK_EXIT_USAGE;
		if (m > 0) {
			profile_path = v;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (argv[i][0] == '-') {
			(void)fprintf(stderr, "stockade-policy exec: unknown argument '%s'\n", argv[i]);
			return SK_EXIT_USAGE;
		} else {
			break;
		}
	}
	if (!profile_path || i >= argc) {
		sk_cli_usage("exec", stderr);
		return SK_EXIT_USAGE;
	}
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	if (sk_scmp_profile_load_file(profile_path, &p, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy exec: %s\n", err.msg);
		return SK_EXIT_USAGE;
	}
	reset_signals();
	int r = sk_seccomp_apply(p, &err);
	sk_scmp_profile_free(p);
	if (r < 0) {
		(void)fprintf(stderr, "stockade-policy exec: %s\n", err.msg);
		return SK_EXIT_RUNTIME;
	}
	execvp(argv[i], argv + i);
	int e = errno;
	(void)fprintf(stderr, "stockade-policy exec: %s: %s\n", argv[i], strerror(e));
	return e == ENOENT ? 127 : 126;
}

/* cli/cmd_install.c — `stockade-policy seccomp-install`: the seccomp installer DaemonSet's process
 * (helm/stockade-system, one per cluster). Two sources of profiles:
 *   --from-cluster  every ConfigMap labelled stockade.dev/seccomp-profile=true, listed through the Kubernetes
 *                   API with the pod's ServiceAccount token (cli/installer.h); each profile is written as
 *                   DIR/stockade-<hash>.json, and a hash-named file no ConfigMap asks for any more is deleted
 *                   once it has been unneeded for --grace seconds (a running pod's container may restart);
 *   --policy F      one policy file (re-read each round), written as DIR/NAME (default: its hashed name).
 * A file is written only when its content differs, atomically (temp file + fsync + rename) so the kubelet
 * never reads half a profile. Runs as uid 0 with no capability: enough for the root-owned kubelet
 * directory it mounts, nothing more. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/json_str.h"
#include "common/read_file.h"
#include "common/util.h"
#include "cli/cli.h"
#include "cli/installer.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"
#include "policy/seccomp/seccomp.h"
#include "policy/seccomp/name.h"
#include "common/curl_dl.h"

static volatile sig_atomic_t install_stop;

static void on_term(int sig)
{
	(void)sig;
	install_stop = 1;
}

/* Generates the profile text (owned, ends with a newline) from the policy at path, and its hashed name. */
static char *render_profile(const char *policy_path, bool log_denials, char name[SK_SCMP_NAME_SIZE],
			    struct sk_err *err)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *pol = NULL;
	struct sk_scmp_profile *prof = NULL;
	char *text = NULL;

	/* The API secrets a policy names are mounted into the sidecar only, never into the installer:
	 * their files are not this process's business, the seccomp section is. */
	if (sk_policy_load_file_ex(policy_path, -1, SK_LOAD_NO_FILE_CHECKS, &pol, &diags) < 0 ||
	    sk_seccomp_check_policy(pol, &diags) < 0) {
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
		.log_denials = log_denials,
	};
	if (sk_seccomp_generate(&opts, &prof, err) < 0 ||
	    sk_seccomp_profile_name(opts.allow, opts.n_allow, opts.deny, opts.n_deny, name, err) < 0)
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

/* One JSON line: ts, event, path, and configmap / error when given. */
static void log_line2(const char *event, const char *path, const char *configmap, const char *msg)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	(void)strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);   /* 20 bytes */
	/* Paths and error texts may hold quotes, control bytes or non-UTF-8 bytes: one escaper for all. */
	printf("{\"ts\":\"%s\",\"event\":\"%s\"", ts, event);
	if (path) {
		printf(",\"path\":");
		sk_json_fputs(stdout, path);
	}
	if (configmap) {
		printf(",\"configmap\":");
		sk_json_fputs(stdout, configmap);
	}
	if (msg) {
		printf(",\"error\":");
		sk_json_fputs(stdout, msg);
	}
	printf("}\n");
	/* the installer's job is the profile: a log line lost to a full or closed stdout must not stop it */
	(void)fflush(stdout);
}

static void log_line(const char *event, const char *path, const char *msg)
{
	log_line2(event, path, NULL, msg);
}

static void on_skip(void *ctx, const char *source, const char *why)
{
	int *skipped = ctx;
	(*skipped)++;
	log_line2("seccomp_profile_skipped", NULL, source, why);
}

/* Writes text to dir/name unless it is already there. 0 or < 0 (logged). */
static int install_one(const char *dir, const char *name, const char *text, const char *source)
{
	char path[4096];
	struct sk_err err = { 0 };
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		log_line2("seccomp_install_failed", dir, source, "path too long");
		return -ENAMETOOLONG;
	}
	if (file_equals(path, text))
		return 0;
	if (sk_cli_write_atomic(path, text, &err) < 0) {
		log_line2("seccomp_install_failed", path, source, err.msg);
		return -EIO;
	}
	log_line2("seccomp_installed", path, source, NULL);
	return 0;
}

/* Deletes the hash-named files of dir that no ConfigMap has asked for during grace seconds. */
static int collect(const char *dir, struct sk_inst_gc *gc, const struct sk_inst_set *set, long grace)
{
	DIR *d = opendir(dir);
	if (!d) {
		log_line("seccomp_install_failed", dir, strerror(errno));
		return -EIO;
	}
	char **files = NULL, **due = NULL;
	size_t n_files = 0, n_due = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!sk_seccomp_is_profile_name(e->d_name))
			continue;
		char **nf = realloc(files, (n_files + 1) * sizeof(*nf));
		char *s = strdup(e->d_name);
		if (!nf || !s) {
			free(s);
			if (nf)
				files = nf;
			rc = -ENOMEM;
			goto out;
		}
		files = nf;
		files[n_files++] = s;
	}
	if ((rc = sk_inst_gc_due(gc, (const char *const *)files, n_files, set, time(NULL), grace, &due, &n_due)) < 0)
		goto out;
	for (size_t i = 0; i < n_due; i++) {
		char path[4096];
		/* a cut path would name another file: delete nothing then */
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, due[i]) >= sizeof(path)) {
			log_line("seccomp_remove_failed", dir, "path too long");
			rc = -EIO;
		} else if (unlink(path) < 0 && errno != ENOENT) {
			log_line("seccomp_remove_failed", path, strerror(errno));
			rc = -EIO;
		} else {
			log_line("seccomp_removed", path, NULL);
		}
	}
out:
	if (rc == -ENOMEM)
		log_line("seccomp_install_failed", dir, "out of memory");
	for (size_t i = 0; i < n_files; i++)
		free(files[i]);
	for (size_t i = 0; i < n_due; i++)
		free(due[i]);
	free(files);
	free(due);
	closedir(d);
	return rc;
}

/* One round of the cluster mode. SK_EXIT_OK, SK_EXIT_POLICY (a ConfigMap was skipped) or SK_EXIT_RUNTIME
 * (the listing or a write failed). */
static int cluster_round(const struct sk_inst_api *api, const char *dir, struct sk_inst_gc *gc, long grace,
			 bool log_denials)
{
	struct sk_inst_set set = { .log_denials = log_denials };
	struct sk_err err = { 0 };
	int skipped = 0, ex = SK_EXIT_OK;
	if (sk_inst_add_default(&set, &err) < 0) {
		log_line2("seccomp_install_failed", dir, SK_INST_DEFAULT_SOURCE, err.msg);
		sk_inst_set_free(&set);
		return SK_EXIT_RUNTIME;
	}
	if (sk_inst_list(api, &set, on_skip, &skipped, &err) < 0) {
		/* Fail closed on deletion: an incomplete list says nothing about what is unneeded. What was
		 * listed is still written (a profile a new pod waits for). */
		log_line("seccomp_list_failed", api->server, err.msg);
		ex = SK_EXIT_RUNTIME;
	}
	for (size_t i = 0; i < set.n; i++)
		if (install_one(dir, set.v[i].name, set.v[i].text, set.v[i].source) < 0)
			ex = SK_EXIT_RUNTIME;
	if (ex == SK_EXIT_OK && collect(dir, gc, &set, grace) < 0)
		ex = SK_EXIT_RUNTIME;
	if (ex == SK_EXIT_OK && skipped)
		ex = SK_EXIT_POLICY;
	sk_inst_set_free(&set);
	return ex;
}

/* The flag asks the kernel to log what the filter refuses, but it logs only the actions listed in
 * actions_logged (errno is there by default; an administrator may have removed it). Said once at start,
 * as a log line: the profiles are still right, only the record of a refusal would be missing. */
#define ACTIONS_LOGGED "/proc/sys/kernel/seccomp/actions_logged"
static void check_actions_logged(void)
{
	struct sk_err err = { 0 };
	size_t len = 0;
	sk_autofree char *buf = sk_read_file(ACTIONS_LOGGED, 4096, &len, &err);
	if (!buf) {
		log_line("seccomp_log_unavailable", ACTIONS_LOGGED, "unreadable: the kernel may not log seccomp actions");
		return;
	}
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		if (!strcmp(t, "errno"))
			return;
	log_line("seccomp_log_unavailable", ACTIONS_LOGGED, "errno is not listed: refused syscalls will not be "
		 "logged (docs/operating.md#seccomp-refusals)");
}

/* The API server of the pod's cluster: KUBERNETES_SERVICE_HOST/PORT, an IPv6 address in brackets. */
static int default_server(char *out, size_t outsz)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host)
		return -1;
	bool v6 = strchr(host, ':') != NULL;
	int n = snprintf(out, outsz, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "",
			 port && *port ? port : "443");
	return n > 0 && (size_t)n < outsz ? 0 : -1;
}

static int parse_seconds(const char *flag, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		(void)fprintf(stderr, "stockade-policy seccomp-install: %s: expected %ld..%ld seconds\n", flag, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

int sk_cmd_seccomp_install(int argc, char **argv)
{
	const char *policy = NULL, *dir = NULL, *name_opt = NULL, *interval_s = NULL, *grace_s = NULL;
	struct sk_inst_api api = {
		.server = NULL, .token_file = SA_DIR "/token", .ca_file = SA_DIR "/ca.crt",
		.selector = "stockade.dev/seccomp-profile=true",
	};
	long interval = 300, grace = 86400;
	int once = 0, cluster = 0;
	bool log_denials = false;
	static const char *const opt_names[] = { "--policy", "--dir", "--name", "--interval", "--grace",
						 "--api-server", "--token-file", "--ca-file", "--selector" };
	const char **slot[] = { &policy, &dir, &name_opt, &interval_s, &grace_s,
				&api.server, &api.token_file, &api.ca_file, &api.selector };
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
		else if (!strcmp(a, "--from-cluster"))
			cluster = 1;
		else if (!strcmp(a, "--log-denials"))
			log_denials = true;
		else
			return sk_cli_usage_error(argv[0], "unknown argument '%s'", a);
	}
	if ((interval_s && parse_seconds("--interval", interval_s, 1, 86400, &interval) < 0) ||
	    (grace_s && parse_seconds("--grace", grace_s, 0, 365L * 86400, &grace) < 0))
		return SK_EXIT_USAGE;
	if (!dir || cluster == !!policy)
		return sk_cli_usage_error(argv[0], "--dir and one of --policy or --from-cluster are required");
	if (cluster && name_opt)
		return sk_cli_usage_error(argv[0], "--name is for --policy: in the cluster mode each profile is "
					  "named after its content hash");
	if (!cluster && (grace_s || api.server || strcmp(api.selector, "stockade.dev/seccomp-profile=true")))
		return sk_cli_usage_error(argv[0], "--grace, --api-server and --selector are for --from-cluster");
	/* A flat file name only: some runtimes mis-parse nested Localhost paths, and no "..". */
	if (name_opt && (!*name_opt || strchr(name_opt, '/') || !strcmp(name_opt, ".") || !strcmp(name_opt, ".."))) {
		(void)fprintf(stderr, "stockade-policy seccomp-install: --name must be a plain file name\n");
		return SK_EXIT_USAGE;
	}
	char server[512];
	if (cluster && !api.server) {
		if (default_server(server, sizeof(server)) < 0)
			return sk_cli_usage_error(argv[0], "--from-cluster outside a pod: KUBERNETES_SERVICE_HOST is "
						  "not set, give --api-server");
		api.server = server;
	}
	if (cluster && !sk_inst_server_ok(api.server))
		return sk_cli_usage_error(argv[0], "--api-server '%s': expected https://HOST[:PORT] (http:// only to "
					  "a loopback address: the token must not cross a network in clear)", api.server);
	if (cluster && !*api.ca_file)
		api.ca_file = NULL;
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* libcurl is loaded here, not linked: only this mode needs it (the installer image carries the
	 * HTTPS-only build, scripts/build-curl). Single-threaded, before any handle: global_init is safe. */
	struct sk_curl cu = { 0 };
	if (cluster) {
		struct sk_err err = { 0 };
		if (sk_curl_load(&cu, SK_CURL_SONAME, &err) < 0 || cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			(void)fprintf(stderr, "stockade-policy seccomp-install: %s\n", err.msg[0] ? err.msg :
				"libcurl initialisation failed");
			return SK_EXIT_RUNTIME;
		}
		api.curl = &cu;
	}

	if (log_denials)
		check_actions_logged();
	struct sk_inst_gc gc = { 0 };
	int failures = 0, last_ex = SK_EXIT_OK;
	while (!install_stop) {
		if (cluster) {
			last_ex = cluster_round(&api, dir, &gc, grace, log_denials);
			failures = last_ex == SK_EXIT_OK ? 0 : failures + 1;
		} else {
			struct sk_err err = { 0 };
			char hashed[SK_SCMP_NAME_SIZE] = "", path[4096];
			char *text = render_profile(policy, log_denials, hashed, &err);
			/* Without a profile there is no hashed name: the failure is logged against --dir (or
			 * DIR/NAME), and the last good file stays. */
			const char *name = name_opt ? name_opt : hashed;
			if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, *name ? "/" : "", name) >= sizeof(path)) {
				(void)fprintf(stderr, "stockade-policy seccomp-install: --dir/--name: path too long\n");
				free(text);
				return SK_EXIT_USAGE;
			}
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
		}
		if (once)
			break;
		for (long s = 0; s < interval && !install_stop; s++)
			sleep(1);
	}
	sk_inst_gc_free(&gc);
	if (cluster)
		cu.global_cleanup();
	return once && failures ? last_ex : SK_EXIT_OK;
}

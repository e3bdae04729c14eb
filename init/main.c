/* init/main.c — stockade-init: programs the pod's network namespace from the policy (docs/architecture.md#the-init-stockade-init), in
 * one atomic nftables transaction, verifies what the kernel holds, then writes the readiness marker.
 * Exit codes: enum sk_exit (0 ok, 1 check failed or namespace refused, 2 usage, 3 policy, 4 netlink,
 * 5 other). Any failure exits non-zero so the pod does not start. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/handoff.h"
#include "init/guard.h"
#include "common/marker.h"
#include "common/settings.h"
#include "common/util.h"
#include "init/nft.h"
#include "init/ruleset.h"
#include "policy/policy.h"
#include "policy/seccomp/name.h"

/* fprintf's result: --help checks it (a --help into a closed pipe is an error, not a success) */
static int usage(FILE *out)
{
	return fprintf(out,
		"usage: stockade-init --policy FILE [--seccomp-profile NAME] [--marker PATH] [--force]\n"
		"                     [--exec-as UID:GID -- PROGRAM [ARG...]]\n"
		"       stockade-init --policy FILE --dry-run\n"
		"       stockade-init --policy FILE --check\n"
		"\n"
		"Loads table inet stockade into the current network namespace in one atomic batch, reads it\n"
		"back and verifies it.\n"
		"  --policy FILE  the stockade policy (YAML, JSON or forge egress_allowlist.json)\n"
		"  --seccomp-profile NAME\n"
		"                 the agent containers' Localhost profile: refuse (exit 3) when it is a stockade\n"
		"                 profile name but not this policy's seccomp section's\n"
		"  --dry-run      print the ruleset as an nft script and change nothing\n"
		"  --check        verify the live table against the policy: exit 0 if it matches, 1 if not\n"
		"  --marker PATH  after success write PATH (hash=<netns hash>, time, counts) for the sidecar\n"
		"  --force        program the namespace even if it looks like a node's own\n"
		"  --exec-as UID:GID -- PROGRAM [ARG...]\n"
		"                 after success become UID:GID for good (no groups, no capabilities,\n"
		"                 no_new_privs; checked) and exec PROGRAM; never runs it on a failure\n"
		"  --help, --version\n");
}

/* The marker's netns hash of a long policy, computed on a second thread while this one waits in the kernel
 * for the batch (half a megabyte of text hashed a byte at a time for 10 000 rules; the policy is immutable
 * once loaded, so reading it from two threads is safe). A short policy hashes in microseconds, less than
 * starting a thread costs. */
#define HASH_THREAD_MIN_RULES 1000

struct hash_job {
	const struct sk_policy *p;  /* borrows */
	char hash[17];
	pthread_t thread;
	bool running;
};

static void *hash_job_run(void *arg)
{
	struct hash_job *j = arg;
	sk_policy_netns_hash(j->p, j->hash);
	return NULL;
}

static void hash_job_start(struct hash_job *j, const struct sk_policy *p)
{
	j->p = p;
	j->running = p->n_rules >= HASH_THREAD_MIN_RULES && pthread_create(&j->thread, NULL, hash_job_run, j) == 0;
}

/* Copies the hash out: joins the thread, or hashes here when none was started (or it could not be). */
static void hash_job_finish(struct hash_job *j, char out[17])
{
	if (j->running) {
		(void)pthread_join(j->thread, NULL);  /* fails only for a thread not joinable: this one is */
		j->running = false;
	} else {
		sk_policy_netns_hash(j->p, j->hash);
	}
	memcpy(out, j->hash, 17);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The settings, rows of common/settings.h's table: flags only (no STOCKADE_* variables: the pod spec
 * gives the init its arguments), and `-- PROGRAM [ARG...]` after them for --exec-as. */
struct init_cfg {
	const char *policy, *marker, *profile, *exec_as;
	bool dry_run, check, force, help, version;
	int rest;                  /* argv index of PROGRAM (argc: none) */
	char *owned[4];
};

#define F(field) offsetof(struct init_cfg, field), sizeof(((struct init_cfg *)0)->field)
/* help texts are usage()'s, written as one page */
static const struct sk_setting settings[] = {
	{ "policy", NULL, SK_SET_PATH, 0, 0, NULL, NULL, F(policy), false },
	{ "seccomp-profile", NULL, SK_SET_PATH, 0, 0, NULL, NULL, F(profile), false },
	{ "marker", NULL, SK_SET_PATH, 0, 0, NULL, NULL, F(marker), false },
	{ "exec-as", NULL, SK_SET_PATH, 0, 0, NULL, NULL, F(exec_as), false },
	{ "dry-run", NULL, SK_SET_BOOL, 0, 0, NULL, NULL, F(dry_run), false },
	{ "check", NULL, SK_SET_BOOL, 0, 0, NULL, NULL, F(check), false },
	{ "force", NULL, SK_SET_BOOL, 0, 0, NULL, NULL, F(force), false },
};
#undef F

static const struct sk_settings_switch switches[] = {
	{ "--help", offsetof(struct init_cfg, help) },
	{ "-h", offsetof(struct init_cfg, help) },
	{ "--version", offsetof(struct init_cfg, version) },
};

static const struct sk_settings table = {
	.rows = settings, .n = SK_ARRAY_SIZE(settings), .switches = switches, .n_switches = SK_ARRAY_SIZE(switches),
	.owned_off = offsetof(struct init_cfg, owned), .max_strings = SK_ARRAY_SIZE(((struct init_cfg *)0)->owned),
	.terse_empty = false, .positional = true, .rest_off = offsetof(struct init_cfg, rest),
};

/* Frees the settings' copies at return: every path out of main after the parse. */
static void init_cfg_free(struct init_cfg *cfg) { sk_settings_free(&table, cfg); }

int main(int argc, char **argv)
{
	__attribute__((cleanup(init_cfg_free))) struct init_cfg cfg = { 0 };
	struct sk_err serr = { 0 };
	if (sk_settings_parse(&table, argc, argv, NULL, &cfg, &serr) < 0) {
		(void)fprintf(stderr, "stockade-init: %s\n", serr.msg);
		(void)usage(stderr);
		return SK_EXIT_USAGE;
	}
	if (cfg.help) {
		if (usage(stdout) < 0 || fflush(stdout) != 0) {
			(void)fprintf(stderr, "stockade-init: --help: write stdout: %s\n", strerror(errno));
			return SK_EXIT_RUNTIME;
		}
		return SK_EXIT_OK;
	}
	if (cfg.version) {
		printf("stockade-init %s\n", SK_VERSION);
		return SK_EXIT_OK;
	}
	const char *policy_path = cfg.policy, *marker_path = cfg.marker, *profile = cfg.profile;
	const char *exec_as = cfg.exec_as;
	const bool dry_run = cfg.dry_run, check = cfg.check, force = cfg.force;
	const int rest = cfg.rest;   /* argv index of PROGRAM */
	uid_t exec_uid = 0;
	gid_t exec_gid = 0;
	if (exec_as) {
		struct sk_err perr = { 0 };
		if (sk_handoff_parse(exec_as, &exec_uid, &exec_gid, &perr) < 0 || dry_run || check ||
		    rest >= argc || strcmp(argv[rest - 1], "--") != 0) {
			(void)fprintf(stderr, "stockade-init: %s%s\n", perr.msg[0] ? "--exec-as " : "", perr.msg[0] ? perr.msg
				: dry_run || check ? "--exec-as goes with loading the table, not --dry-run or --check"
						   : "--exec-as UID:GID needs -- PROGRAM [ARG...] after the options");
			(void)usage(stderr);
			return SK_EXIT_USAGE;
		}
	}
	if ((!exec_as && rest < argc) || !policy_path || (dry_run && check)) {
		if (!exec_as && rest < argc)
			(void)fprintf(stderr, "stockade-init: unexpected argument '%s'\n", argv[rest]);
		else if (!policy_path)
			(void)fprintf(stderr, "stockade-init: --policy FILE is required\n");
		else
			(void)fprintf(stderr, "stockade-init: --dry-run and --check exclude each other\n");
		(void)usage(stderr);
		return SK_EXIT_USAGE;
	}

	struct sk_err err = { 0 };
	struct sk_diags diags = { 0 };
	struct sk_policy *pol = NULL;
	struct sk_ruleset *rs = NULL;
	struct sk_nft *nft = NULL;
	struct hash_job hj = { 0 };
	int ex = SK_EXIT_OK;
	double t0 = now_ms();

	if (sk_ruleset_load(policy_path, &pol, &rs, &diags, &err) < 0) {
		sk_diags_print(&diags, stderr);
		(void)fprintf(stderr, "stockade-init: %s\n", err.msg);
		ex = SK_EXIT_POLICY;
		goto out;
	}
	/* Before anything is programmed: a pod whose agent profile is not its policy's must not start (the
	 * installer names each profile by its section, so a mismatch is a pod wrapped for another policy). */
	if (profile && sk_seccomp_check_profile(pol, profile, &err) < 0) {
		(void)fprintf(stderr, "stockade-init: %s: %s\n", policy_path, err.msg);
		ex = SK_EXIT_POLICY;
		goto out;
	}

	if (dry_run) {
		if (sk_ruleset_print(rs, stdout, &err) < 0 || fflush(stdout) != 0) {
			(void)fprintf(stderr, "stockade-init: %s\n", err.msg[0] ? err.msg : "write stdout failed");
			ex = SK_EXIT_RUNTIME;
		}
		goto out;
	}

	if (check) {
		/* read-only, so no guard: checking a node's table harms nothing */
		if (sk_nft_verify(NULL, rs, &err) < 0) {
			(void)fprintf(stderr, "stockade-init: check failed: %s\n", err.msg);
			ex = SK_EXIT_FAIL;
		} else {
			printf("stockade-init: table %s %s matches %s\n", SK_RS_FAMILY_NAME, SK_RS_TABLE, policy_path);
		}
		goto out;
	}

	if (!force) {
		struct sk_netns_facts facts;
		char why[1024];
		if (sk_guard_probe(&facts, &err) < 0) {
			(void)fprintf(stderr, "stockade-init: %s (refusing to program a namespace it cannot inspect; "
					"--force overrides)\n", err.msg);
			ex = SK_EXIT_FAIL;
			goto out;
		}
		if (sk_guard_judge(&facts, why, sizeof(why)) > 0) {
			(void)fprintf(stderr,
				"stockade-init: refusing: this network namespace looks like a node's, and the ruleset "
				"would cut off every UID but the sidecar's: %s. Run it in the pod's namespace, or pass "
				"--force if this really is the pod's.\n", why);
			ex = SK_EXIT_FAIL;
			goto out;
		}
	}

	struct sk_nft_stats st = { 0 };
	double t_load = now_ms();
	hash_job_start(&hj, pol);
	if (sk_nft_open(&nft, &err) < 0) {
		(void)fprintf(stderr, "stockade-init: %s\n", err.msg);
		ex = SK_EXIT_NETLINK;
		goto out;
	}
	if (sk_nft_apply(nft, rs, &st, &err) < 0) {
		(void)fprintf(stderr, "stockade-init: %s\n", err.msg);
		ex = SK_EXIT_NETLINK;
		goto out;
	}
	double t_apply = now_ms();
	if (sk_nft_verify(nft, rs, &err) < 0) {
		(void)fprintf(stderr, "stockade-init: verification after commit failed: %s\n", err.msg);
		ex = SK_EXIT_NETLINK;
		goto out;
	}

	double t_verify = now_ms();
	struct sk_marker m = { .time = (int64_t)time(NULL) };
	hash_job_finish(&hj, m.hash);
	m.rules = (unsigned)rs->n_rules;
	m.sets = SK_RS_N_SETS;
	m.elements = (unsigned)sk_ruleset_n_elems(rs);
	(void)snprintf(m.version, sizeof(m.version), "%s", SK_VERSION);
	if (marker_path && sk_marker_write(marker_path, &m, &err) < 0) {
		(void)fprintf(stderr, "stockade-init: %s\n", err.msg);
		ex = SK_EXIT_RUNTIME;
		goto out;
	}
	(void)fprintf(stderr,
		"stockade-init: loaded and verified table %s %s: %u rules, %u set elements, %zu messages "
		"(%zu bytes) in %.1f ms (policy+build %.1f, batch %.1f, verify %.1f); netns hash %s\n",
		SK_RS_FAMILY_NAME, SK_RS_TABLE, m.rules, m.elements, st.messages, st.batch_bytes, now_ms() - t0,
		t_load - t0, t_apply - t_load, t_verify - t_apply, m.hash);
out:
	if (hj.running)
		(void)pthread_join(hj.thread, NULL);  /* it reads pol, freed below */
	sk_ruleset_free(rs);
	sk_policy_free(pol);
	sk_diags_free(&diags);
	sk_nft_close(nft);   /* last: whatever runs before it runs inside the kernel's wait (nft.h) */
	/* Only after a verified load and the marker: the program (the sidecar) must never run in a pod
	 * without its rules, nor with root or NET_ADMIN left (sk_handoff_exec checks both before the exec). */
	if (ex == SK_EXIT_OK && exec_as) {
		if (sk_handoff_exec(exec_uid, exec_gid, argv + rest, &err) < 0)
			(void)fprintf(stderr, "stockade-init: --exec-as %s: %s (not run)\n", exec_as, err.msg);
		ex = SK_EXIT_RUNTIME;   /* here only when the exec did not happen */
	}
	return ex;
}

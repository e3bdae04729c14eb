/* cli/cmd_seccomp_log.c — `stockade-policy seccomp-log`: the kernel's seccomp refusals as NDJSON, one line
 * each (cli/seccomp_log.h); the optional stockade-system DaemonSet runs it with --follow on every node. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/util.h"
#include "cli/cli.h"
#include "cli/seccomp_log.h"

static volatile sig_atomic_t log_stop;

static void on_term(int sig)
{
	(void)sig;
	log_stop = 1;
}

int sk_cmd_seccomp_log(int argc, char **argv)
{
	struct sk_scmp_log_opts o = { .source = "kmsg", .proc = "/proc", .stop = &log_stop };
	static const char *const opt_names[] = { "--source", "--proc", "--node" };
	const char **slot[] = { &o.source, &o.proc, &o.node };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int m = 0;
		for (size_t k = 0; k < SK_ARRAY_SIZE(opt_names) && !m; k++)
			m = sk_cli_opt(argc, argv, &i, opt_names[k], NULL, slot[k]);
		if (m < 0)
			return SK_EXIT_USAGE;
		if (m)
			continue;
		if (!strcmp(a, "--follow") || !strcmp(a, "-f"))
			o.follow = true;
		else if (!strcmp(a, "--from-end"))
			o.from_end = true;
		else if (!strcmp(a, "--pods-only"))
			o.pods_only = true;
		else
			return sk_cli_usage_error(argv[0], "unknown argument '%s'", a);
	}
	if (!*o.source || !*o.proc)
		return sk_cli_usage_error(argv[0], "--source and --proc must not be empty");
	/* no SA_RESTART: a blocked kmsg read returns EINTR, and the loop sees the flag */
	struct sigaction sa = { .sa_handler = on_term };
	if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0) {
		(void)fprintf(stderr, "stockade-policy seccomp-log: cannot install the signal handlers\n");
		return SK_EXIT_RUNTIME;
	}
	struct sk_err err = { 0 };
	struct sk_scmp_log_stats st;
	if (sk_scmp_log_run(&o, stdout, &st, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy %s\n", err.msg);
		return SK_EXIT_RUNTIME;
	}
	if (st.lost)
		(void)fprintf(stderr, "stockade-policy seccomp-log: %lu kernel log records were overwritten before "
			      "they could be read\n", st.lost);
	return SK_EXIT_OK;
}

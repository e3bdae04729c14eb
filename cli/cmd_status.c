/* cli/cmd_status.c — `stockade-policy status URL`: one sidecar's state from its admin port (cli/status.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/util.h"
#include "cli/cli.h"
#include "cli/status.h"

static int parse_num(const char *flag, const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		(void)fprintf(stderr, "stockade-policy status: %s: expected %ld..%ld\n", flag, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int sk_cmd_status(int argc, char **argv)
{
	const char *fmt = NULL, *limit_s = NULL, *timeout_s = NULL, *url = NULL;
	static const char *const opt_names[] = { "--output", "--limit", "--timeout" };
	static const char *const aliases[] = { "-o", "-n", NULL };
	const char **slot[] = { &fmt, &limit_s, &timeout_s };
	for (int i = 1; i < argc; i++) {
		int m = 0;
		for (size_t k = 0; k < SK_ARRAY_SIZE(opt_names) && !m; k++)
			m = sk_cli_opt(argc, argv, &i, opt_names[k], aliases[k], slot[k]);
		if (m < 0)
			return SK_EXIT_USAGE;
		if (m)
			continue;
		if (argv[i][0] == '-' || url)
			return sk_cli_usage_error(argv[0], "unknown or extra argument '%s'", argv[i]);
		url = argv[i];
	}
	if (!url)
		return sk_cli_usage_error(argv[0], "the sidecar's admin URL is required (http://HOST:15000)");
	enum sk_cli_fmt f = SK_CLI_TEXT;
	long limit = 10, timeout = 5;
	if ((fmt && sk_cli_format(argv[0], fmt, SK_CLI_FMT(SK_CLI_TEXT) | SK_CLI_FMT(SK_CLI_JSON), &f) < 0) ||
	    (limit_s && parse_num("--limit", limit_s, 0, 4096, &limit) < 0) ||
	    (timeout_s && parse_num("--timeout", timeout_s, 1, 300, &timeout) < 0))
		return SK_EXIT_USAGE;
	struct sk_status_opts o = { .url = url, .limit = (size_t)limit, .json = f == SK_CLI_JSON,
				    .timeout_ms = (int)timeout * 1000 };
	return sk_status_run(&o, stdout, stderr);
}

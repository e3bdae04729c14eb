/* cli/cmd_suggest.c — `stockade-policy suggest [-o yaml|json] [FILE...]`: audit lines in, egress rules out
 * (cli/suggest.h says which lines count and how they are grouped). No FILE, or "-", reads stdin. Exit 0,
 * 2 on bad usage or an unreadable input, 5 on out of memory or a failed write. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "cli/cli.h"
#include "cli/suggest.h"

int sk_cmd_suggest(int argc, char **argv)
{
	enum sk_cli_fmt fmt = SK_CLI_YAML;
	struct sk_suggest s = { 0 };
	int n_files = 0, rc = SK_EXIT_OK;
	bool opts_done = false;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int m = opts_done ? 0 : sk_cli_opt(argc, argv, &i, "--output", "-o", &v);
		if (m < 0 || (m > 0 && sk_cli_format(argv[0], v, SK_CLI_FMT(SK_CLI_YAML) | SK_CLI_FMT(SK_CLI_JSON), &fmt) < 0))
			return SK_EXIT_USAGE;
		if (!m && !opts_done && !strcmp(argv[i], "--"))
			opts_done = true;
		else if (!m && !opts_done && argv[i][0] == '-' && argv[i][1])
			return sk_cli_usage_error(argv[0], "unknown option '%s'", argv[i]);
	}
	opts_done = false;
	for (int i = 1; i < argc && rc == SK_EXIT_OK; i++) {
		const char *a = argv[i];
		if (!opts_done && (!strcmp(a, "-o") || !strcmp(a, "--output"))) {
			i++;
			continue;
		}
		if (!opts_done && !strcmp(a, "--")) {
			opts_done = true;
			continue;
		}
		if (!opts_done && !strncmp(a, "--output=", 9))
			continue;
		n_files++;
		FILE *f = strcmp(a, "-") ? fopen(a, "re") : stdin;
		if (!f) {
			(void)fprintf(stderr, "stockade-policy suggest: %s: %s\n", a, strerror(errno));
			rc = SK_EXIT_USAGE;
			break;
		}
		int r = sk_suggest_read(&s, f);
		if (f != stdin)
			(void)fclose(f);
		if (r < 0) {
			(void)fprintf(stderr, "stockade-policy suggest: %s: %s\n", a, strerror(-r));
			rc = r == -ENOMEM ? SK_EXIT_RUNTIME : SK_EXIT_USAGE;
		}
	}
	if (rc == SK_EXIT_OK && n_files == 0) {
		int r = sk_suggest_read(&s, stdin);
		if (r < 0) {
			(void)fprintf(stderr, "stockade-policy suggest: <stdin>: %s\n", strerror(-r));
			rc = r == -ENOMEM ? SK_EXIT_RUNTIME : SK_EXIT_USAGE;
		}
	}
	if (rc == SK_EXIT_OK) {
		char *text = NULL;
		if (sk_suggest_finish(&s) == 0)
			text = fmt == SK_CLI_JSON ? sk_suggest_json(&s) : sk_suggest_yaml(&s);
		if (!text || fputs(text, stdout) < 0 || (fmt == SK_CLI_JSON && putchar('\n') < 0) || fflush(stdout)) {
			(void)fprintf(stderr, "stockade-policy suggest: %s\n", text ? "write stdout failed" : "out of memory");
			rc = SK_EXIT_RUNTIME;
		}
		free(text);
	}
	sk_suggest_free(&s);
	return rc;
}

/* cli/args.c — the conventions every stockade-policy subcommand shares (docs/cli.md): `--name VALUE` and
 * `--name=VALUE` alike, `-h`/`--help`, `-o text|json`, one way to load a policy (`-` is stdin) and one exit
 * code for a policy that does not load. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "cli/cli.h"
#include "policy/policy.h"

bool sk_cli_is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help");
}

int sk_cli_opt(int argc, char **argv, int *i, const char *name, const char *alias, const char **val)
{
	const char *a = argv[*i];
	const char *names[2] = { name, alias };
	for (size_t k = 0; k < 2; k++) {
		const char *n = names[k];
		if (!n)
			continue;
		size_t l = strlen(n);
		if (strncmp(a, n, l) != 0)
			continue;
		if (a[l] == '=' && n[1] == '-') {  /* --name=VALUE; a short option takes its value apart */
			*val = a + l + 1;
			return 1;
		}
		if (a[l])
			continue;
		if (*i + 1 >= argc) {
			(void)fprintf(stderr, "stockade-policy %s: %s: missing value\n", argv[0], n);
			return -1;
		}
		*val = argv[++*i];
		return 1;
	}
	return 0;
}

int sk_cli_format(const char *cmd, const char *s, unsigned allowed, enum sk_cli_fmt *out)
{
	static const char *const names[] = { "text", "json", "yaml" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]) && (allowed & (1u << i))) {
			*out = (enum sk_cli_fmt)i;
			return 0;
		}
	char list[64] = "";
	for (size_t i = 0, o = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (allowed & (1u << i))
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? " or " : "", names[i]);
	(void)fprintf(stderr, "stockade-policy %s: -o %s: unknown output format, expected %s\n", cmd, s, list);
	return -1;
}

int sk_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	(void)fprintf(stderr, "stockade-policy %s: ", cmd);
	va_start(ap, fmt);
	(void)vfprintf(stderr, fmt, ap);
	va_end(ap);
	(void)fputc('\n', stderr);
	sk_cli_usage(cmd, stderr);
	return SK_EXIT_USAGE;
}

int sk_cli_load_policy(const char *path, unsigned flags, struct sk_policy **out)
{
	struct sk_diags diags = { 0 };
	int r = sk_policy_load_file_ex(path, -1, flags, out, &diags);
	sk_diags_print(&diags, stderr);
	sk_diags_free(&diags);
	return r < 0 ? SK_EXIT_POLICY : SK_EXIT_OK;
}

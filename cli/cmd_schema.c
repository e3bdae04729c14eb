/* cli/cmd_schema.c — `stockade-policy schema`: prints the JSON Schema of the policy (policy/schema.h,
 * generated from the validator's key tables). */
#include <stdio.h>
#include <stdlib.h>

#include "common/err.h"
#include "cli/cli.h"
#include "policy/schema.h"

int sk_cmd_schema(int argc, char **argv)
{
	enum sk_cli_fmt fmt = SK_CLI_JSON;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int m = sk_cli_opt(argc, argv, &i, "--output", "-o", &v);
		if (m < 0 || (m > 0 && sk_cli_format(argv[0], v, SK_CLI_FMT(SK_CLI_JSON), &fmt) < 0))
			return SK_EXIT_USAGE;
		if (!m)
			return sk_cli_usage_error(argv[0], "unexpected argument '%s'", argv[i]);
	}
	char *s = sk_policy_schema_json();
	if (!s) {
		(void)fprintf(stderr, "stockade-policy schema: out of memory\n");
		return SK_EXIT_RUNTIME;
	}
	int r = printf("%s\n", s) < 0 || fflush(stdout) != 0 ? SK_EXIT_RUNTIME : SK_EXIT_OK;
	free(s);
	if (r != SK_EXIT_OK)
		(void)fprintf(stderr, "stockade-policy schema: write stdout failed\n");
	return r;
}

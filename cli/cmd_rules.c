/* cli/cmd_rules.c — `stockade-policy rules FILE`: prints the nft script stockade-init would load
 * (the same builder and printer as `stockade-init --dry-run`, init/ruleset.h). Exit 0, 2 usage,
 * 3 invalid policy. */
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "init/ruleset.h"
#include "cli/cli.h"
#include "policy/policy.h"

int sk_cmd_rules(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: stockade-policy rules FILE\n");
		return SK_EXIT_USAGE;
	}
	struct sk_err err = { 0 };
	struct sk_diags diags = { 0 };
	struct sk_ruleset *rs = NULL;
	int ex = SK_EXIT_OK;
	if (sk_ruleset_load(argv[1], NULL, &rs, &diags, &err) < 0) {
		sk_diags_print(&diags, stderr);
		fprintf(stderr, "stockade-policy rules: %s\n", err.msg);
		ex = SK_EXIT_POLICY;
	} else if (sk_ruleset_print(rs, stdout, &err) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "stockade-policy rules: %s\n", err.msg[0] ? err.msg : "write stdout failed");
		ex = SK_EXIT_RUNTIME;
	}
	sk_ruleset_free(rs);
	sk_diags_free(&diags);
	return ex;
}

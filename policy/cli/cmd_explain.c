/* policy/cli/cmd_explain.c — placeholder until its owner lands it. */
#include <stdio.h>

#include "common/err.h"
#include "policy/cli/cli.h"

int sk_cmd_explain(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "stockade-policy: %s: not implemented yet\n", argv[0]);
	return SK_EXIT_USAGE;
}

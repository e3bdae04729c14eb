/* cli/main.c — stockade-policy: validate a policy, explain a decision, print the compiled nft
 * ruleset, generate and apply the agent's seccomp profile. */
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "cli/cli.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} commands[] = {
	{ "check", sk_cmd_check, "check FILE...                     validate policies (exit 0 valid, 1 invalid)" },
	{ "explain", sk_cmd_explain, "explain FILE HOST PORT [--proto P] print the decision as JSON (exit 0 allow, 1 deny)" },
	{ "rules", sk_cmd_rules, "rules FILE                        print the nft ruleset stockade-init would load" },
	{ "seccomp", sk_cmd_seccomp, "seccomp [--policy F] [--allow S]... [--deny S]... [--arch L] [-o F] | --diff A B" },
	{ "seccomp-install", sk_cmd_seccomp_install,
	  "seccomp-install --policy=F --dir=D [--name=N] [--interval=S] [--once]  keep a node's profile current" },
	{ "inject", sk_cmd_inject, "inject -f FILE|- [--policy F] [--check]     wrap workloads' pods in stockade (see inject --help)" },
	{ "exec", sk_cmd_exec, "exec --seccomp FILE -- CMD [ARG]...  run CMD under a seccomp profile" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: stockade-policy COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %s\n", commands[i].usage);
	fprintf(out, "  --version                         print the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return SK_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return SK_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("stockade-policy %s\n", SK_VERSION);
		return SK_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "stockade-policy: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return SK_EXIT_USAGE;
}

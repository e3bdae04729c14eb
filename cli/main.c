/* cli/main.c — stockade-policy: validate a policy, explain a decision, print the compiled nft
 * ruleset, generate and apply the agent's seccomp profile, print the kernel's seccomp refusals, print the
 * policy's JSON Schema, suggest rules from audit lines, summarise a running sidecar. Conventions shared by every subcommand (docs/cli.md): `-h`/`--help` prints its usage
 * on stdout and exits 0 (answered here, before the subcommand runs); exit codes are enum sk_exit. */
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "cli/cli.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const char *usage;  /* after "usage: stockade-policy " */
} commands[] = {
	{ "check", sk_cmd_check, "validate policies (exit 0 valid, 3 invalid)",
	  "check [--no-file-checks] [--guardrails G] [-o text|json] FILE...   (FILE - is stdin; --policy F is FILE)\n"
	  "  Loads each policy and checks its seccomp section against the profile generator. Prints\n"
	  "  \"FILE: ok (N rules, mode M)\" per valid file, every error as FILE:LINE:COL on stderr (text) or\n"
	  "  one JSON array of {file, valid, rules, mode, errors:[{line, col, message}]} (json).\n" },
	{ "explain", sk_cmd_explain, "print the decision for one connection (exit 0 allow, 1 deny)",
	  "explain [--no-file-checks] [-o json|text] [--proto tls|http|tcp|udp] [--method M --path P]\n"
	  "        (FILE | --policy F) HOST PORT\n"
	  "  Runs the sidecar's matcher on HOST:PORT; json (the default) prints one object: decision, rule,\n"
	  "  reason, host, port, proto, rule_text, rule_at, mode. Under a rule with request rules, --method\n"
	  "  and --path decide one request (method, path, request_rule, request_rule_text, request_rule_at,\n"
	  "  or request_reason).\n" },
	{ "rules", sk_cmd_rules, "print the nft ruleset stockade-init would load",
	  "rules [-o text|json] (FILE | --policy F)\n"
	  "  text: the nft script (the same as stockade-init --dry-run); json: chains, sets, rules.\n" },
	{ "seccomp", sk_cmd_seccomp, "generate, diff or describe the agent's seccomp profile",
	  "seccomp [--policy F] [--allow S[,..]]... [--deny S[,..]]... [--arch x86_64,aarch64] [--log-denials]\n"
	  "                               [-o FILE | --print-name]\n"
	  "       stockade-policy seccomp --diff A.json B.json   (exit 0 same, 1 different)\n"
	  "       stockade-policy seccomp --describe FILE SYSCALL...\n"
	  "  The profile is JSON; -o/--output names the file it is written to (atomically), default stdout.\n"
	  "  --print-name prints its Localhost file name instead, stockade-<16 hex>.json: the content hash of the\n"
	  "  seccomp section, as the chart, inject and the installer name it. --log-denials adds \"flags\":\n"
	  "  [\"SECCOMP_FILTER_FLAG_LOG\"]: the kernel logs each refusal (stockade-policy seccomp-log reads them);\n"
	  "  runc 1.1 refuses any profile with flags (runc >= 1.2 and crun take it; the name stays the same).\n" },
	{ "seccomp-install", sk_cmd_seccomp_install, "keep a node's seccomp profiles current (the DaemonSet)",
	  "seccomp-install --from-cluster --dir D [--interval S] [--grace S] [--selector L] [--api-server URL]\n"
	  "                [--token-file F] [--ca-file F] [--log-denials] [--once]\n"
	  "       stockade-policy seccomp-install --policy F --dir D [--name N] [--interval S] [--log-denials] [--once]\n"
	  "  --from-cluster: lists the ConfigMaps labelled L (default stockade.dev/seccomp-profile=true) through\n"
	  "  the Kubernetes API with the pod's ServiceAccount token, and writes D/stockade-<hash>.json for each\n"
	  "  good one (a bad one is skipped, logged with its namespace/name); a hash-named file no ConfigMap\n"
	  "  asks for is deleted after S seconds (--grace, default 86400). --policy: D/N (default the policy's\n"
	  "  hashed name) from one file. Every S seconds (--interval, default 300). --once: one round, exit 0,\n"
	  "  3 (a policy or ConfigMap refused) or 5 (listing or write failed). --log-denials: the profiles\n"
	  "  carry SECCOMP_FILTER_FLAG_LOG (as seccomp --log-denials).\n" },
	{ "seccomp-log", sk_cmd_seccomp_log, "print the kernel's seccomp refusals as NDJSON (the DaemonSet)",
	  "seccomp-log [--source kmsg|FILE] [--follow] [--from-end] [--pods-only] [--proc DIR] [--node NAME]\n"
	  "  Reads the kernel's seccomp audit records (type=1326; a profile logs its refusals with\n"
	  "  SECCOMP_FILTER_FLAG_LOG) from /dev/kmsg (kmsg, the default: needs CAP_SYSLOG) or a text file\n"
	  "  (auditd's /var/log/audit/audit.log, saved dmesg output), and prints one JSON line per record:\n"
	  "  stamp, pid, uid, comm, exe, arch, syscall (named by libseccomp), syscall_nr, action, code, and the\n"
	  "  pod_uid and container_id from DIR/PID/cgroup (default /proc) while the process runs. --follow:\n"
	  "  wait for more (a file is polled and reopened when rotated) until SIGTERM. --from-end: skip what\n"
	  "  the source holds now. --pods-only: only processes in a pod. Exit 0, or 5 (source unreadable).\n" },
	{ "status", sk_cmd_status, "summarise one sidecar from its admin port (exit 0 ready, 1 not ready)",
	  "status [-o text|json] [--limit N] [--timeout S] URL   (URL: http://HOST[:PORT], port 15000 by default)\n"
	  "  Reads the sidecar's /readyz, /metrics and /denials (kubectl port-forward POD 15000) and prints: ready\n"
	  "  or the unmet reason, the policy in force (hash, netns hash, mode, rules, source), reloads applied\n"
	  "  and rejected with the last attempt, connections allowed and denied, DNS queries and denials, and\n"
	  "  the last N denials (default 10). Exit 0 ready, 1 not ready, 5 unreachable or not a sidecar's answer.\n" },
	/* inject prints its own usage (usage NULL: --help goes to the subcommand). */
	{ "inject", sk_cmd_inject, "wrap workloads' pods in stockade (kubectl-style manifests in, out)", NULL },
	{ "exec", sk_cmd_exec, "run a command under a seccomp profile",
	  "exec --seccomp FILE -- CMD [ARG]...\n" },
	{ "schema", sk_cmd_schema, "print the policy's JSON Schema (draft 2020-12)",
	  "schema [-o json]\n"
	  "  Generated from the validator's own key tables; docs/policy.schema.json is its output.\n" },
	{ "suggest", sk_cmd_suggest, "turn audit-mode NDJSON into the egress rules that would allow it",
	  "suggest [-o yaml|json] [FILE...]   (no FILE or - reads stdin)\n"
	  "  Reads the sidecar's audit lines (kubectl logs POD -c stockade-sidecar), keeps the denied and\n"
	  "  would_deny ones, and prints one egress rule per host (or address) and protocol, ports merged.\n"
	  "  Lines of `stockade-policy seccomp-log` become seccomp.allow entries (those the generator refuses\n"
	  "  are named in a comment).\n" },
};

void sk_cli_usage(const char *cmd, FILE *out)
{
	/* a failed write sticks to out: main checks stdout (stdout_done), stderr has no one to tell */
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (cmd && !strcmp(cmd, commands[i].name)) {
			if (commands[i].usage)
				(void)fprintf(out, "usage: stockade-policy %s", commands[i].usage);
			else
				(void)fprintf(out, "usage: stockade-policy %s --help   (its options)\n", cmd);
			return;
		}
	(void)fprintf(out, "usage: stockade-policy COMMAND [ARGS]   (stockade-policy COMMAND --help for each)\n\n"
		     "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		(void)fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
	(void)fprintf(out, "  %-16s %s\n\nexit codes: 0 ok, 1 a check said no (deny, differs, invalid profile), 2 usage,\n"
		     "3 the policy is invalid or unreadable, 5 run-time failure (docs/cli.md)\n",
		"--version", "print the release version");
}

/* Commands and the usage print to stdout and leave a failed write to its error indicator; checked here
 * once: output that did not arrive (a full disk, a closed pipe) is not a success. */
static int stdout_done(int ex)
{
	if ((fflush(stdout) == 0 && !ferror(stdout)) || (ex != SK_EXIT_OK && ex != SK_EXIT_FAIL))
		return ex;   /* (a command that failed otherwise has said why) */
	(void)fprintf(stderr, "stockade-policy: write stdout failed\n");
	return ex == SK_EXIT_OK ? SK_EXIT_RUNTIME : ex;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		sk_cli_usage(NULL, stderr);
		return SK_EXIT_USAGE;
	}
	if (sk_cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		sk_cli_usage(argc > 2 ? argv[2] : NULL, stdout);
		return stdout_done(SK_EXIT_OK);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("stockade-policy %s\n", SK_VERSION);
		return stdout_done(SK_EXIT_OK);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		/* --help anywhere before "--" (exec's command may take its own --help). */
		for (int a = 2; commands[i].usage && a < argc && strcmp(argv[a], "--") != 0; a++)
			if (sk_cli_is_help(argv[a])) {
				sk_cli_usage(commands[i].name, stdout);
				return stdout_done(SK_EXIT_OK);
			}
		return stdout_done(commands[i].run(argc - 1, argv + 1));
	}
	(void)fprintf(stderr, "stockade-policy: unknown command '%s'\n", argv[1]);
	sk_cli_usage(NULL, stderr);
	return SK_EXIT_USAGE;
}

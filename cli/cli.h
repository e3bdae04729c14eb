/* cli/cli.h — subcommands of stockade-policy. Each returns an enum sk_exit code (common/err.h: 0 ok,
 * 1 a check said no, 2 usage, 3 the policy does not load, 5 run-time failure; docs/cli.md); argv[0] is the
 * subcommand name. main() answers `-h`/`--help` for every subcommand before it runs. Only these functions
 * (and main) print to the terminal. */
#ifndef SK_POLICY_CLI_H
#define SK_POLICY_CLI_H

#include <stdbool.h>
#include <stdio.h>

int sk_cmd_check(int argc, char **argv);    /* cmd_check.c   */
int sk_cmd_explain(int argc, char **argv);  /* cmd_explain.c */
int sk_cmd_rules(int argc, char **argv);    /* cmd_rules.c   */
int sk_cmd_seccomp(int argc, char **argv);  /* cmd_seccomp.c */
int sk_cmd_exec(int argc, char **argv);     /* cmd_seccomp.c */
int sk_cmd_seccomp_install(int argc, char **argv); /* cmd_install.c */
int sk_cmd_seccomp_log(int argc, char **argv); /* cmd_seccomp_log.c */
int sk_cmd_status(int argc, char **argv);   /* cmd_status.c  */
int sk_cmd_inject(int argc, char **argv);   /* cmd_inject.c  */
int sk_cmd_schema(int argc, char **argv);   /* cmd_schema.c  */
int sk_cmd_suggest(int argc, char **argv);  /* cmd_suggest.c */

struct sk_err;
struct sk_policy;
struct sk_scmp_profile;
/* profile.c: the profile as file text (JSON + newline; owned), and a write through a unique temporary
 * file + fsync + rename, so a reader never sees half a profile. */
char *sk_cli_profile_json(const struct sk_scmp_profile *p, struct sk_err *err);
int sk_cli_write_atomic(const char *path, const char *text, struct sk_err *err);

/* main.c: the usage text of subcommand cmd (all of them when cmd is NULL). */
void sk_cli_usage(const char *cmd, FILE *out);

/* args.c */
enum sk_cli_fmt { SK_CLI_TEXT = 0, SK_CLI_JSON, SK_CLI_YAML };
#define SK_CLI_FMT(f) (1u << (f))
bool sk_cli_is_help(const char *a);
/* argv[*i] is option `name` (or `alias`, e.g. "-o"): "--name VALUE" or "--name=VALUE" (long names only),
 * "-o VALUE". Returns 1 with *val set (advancing *i past a separate value), 0 when it is another argument,
 * -1 when the value is missing (reported). */
int sk_cli_opt(int argc, char **argv, int *i, const char *name, const char *alias, const char **val);
/* s among the formats in `allowed` (SK_CLI_FMT bits). 0, or -1 after reporting. */
int sk_cli_format(const char *cmd, const char *s, unsigned allowed, enum sk_cli_fmt *out);
/* Prints "stockade-policy CMD: <message>" and the usage of CMD on stderr; returns SK_EXIT_USAGE. */
int sk_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Loads the policy at path ("-": stdin) printing every diagnostic on stderr. SK_EXIT_OK or SK_EXIT_POLICY. */
int sk_cli_load_policy(const char *path, unsigned flags, struct sk_policy **out);

#endif

/* cli/cli.h — subcommands of stockade-policy. Each returns an enum sk_exit code; argv[0] is the
 * subcommand name. Only these functions (and main) print to the terminal. */
#ifndef SK_POLICY_CLI_H
#define SK_POLICY_CLI_H

int sk_cmd_check(int argc, char **argv);    /* cmd_check.c   */
int sk_cmd_explain(int argc, char **argv);  /* cmd_explain.c */
int sk_cmd_rules(int argc, char **argv);    /* cmd_rules.c   */
int sk_cmd_seccomp(int argc, char **argv);  /* cmd_seccomp.c */
int sk_cmd_exec(int argc, char **argv);     /* cmd_seccomp.c */
int sk_cmd_seccomp_install(int argc, char **argv); /* cmd_install.c */
int sk_cmd_inject(int argc, char **argv);   /* cmd_inject.c  */

struct sk_err;
struct sk_scmp_profile;
/* profile.c: the profile as file text (JSON + newline; owned), and a write through a unique temporary
 * file + fsync + rename, so a reader never sees half a profile. */
char *sk_cli_profile_json(const struct sk_scmp_profile *p, struct sk_err *err);
int sk_cli_write_atomic(const char *path, const char *text, struct sk_err *err);

#endif

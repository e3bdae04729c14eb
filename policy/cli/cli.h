/* policy/cli/cli.h — subcommands of stockade-policy. Each returns an enum sk_exit code; argv[0] is the
 * subcommand name. Only these functions (and main) print to the terminal. */
#ifndef SK_POLICY_CLI_H
#define SK_POLICY_CLI_H

int sk_cmd_check(int argc, char **argv);    /* cmd_check.c   */
int sk_cmd_explain(int argc, char **argv);  /* cmd_explain.c */
int sk_cmd_rules(int argc, char **argv);    /* cmd_rules.c   */
int sk_cmd_seccomp(int argc, char **argv);  /* cmd_seccomp.c */
int sk_cmd_exec(int argc, char **argv);     /* cmd_seccomp.c */
int sk_cmd_seccomp_install(int argc, char **argv); /* cmd_install.c */

#endif

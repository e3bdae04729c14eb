/* common/err.h — the one error contract of stockade (see docs/HACKING.md).
 *
 * A function that can fail takes `struct sk_err *err`, returns < 0 (a negative errno) or NULL, and fills
 * `err` with the errno and a message naming the step and the object, e.g.
 *   "nft batch: add rule redirect-tcp: Operation not permitted".
 * On success it leaves `err` untouched. Only main() turns an error into an exit code (enum sk_exit). */
#ifndef SK_COMMON_ERR_H
#define SK_COMMON_ERR_H

#include <stddef.h>

#define SK_ERR_MSG_MAX 512

struct sk_err {
	int code;                  /* positive errno value, 0 when unset */
	char msg[SK_ERR_MSG_MAX];  /* human-readable, no trailing newline */
};

/* Exit codes used by main() of every binary and every stockade-policy subcommand, each meaning the same
 * thing everywhere (docs/cli.md). An invalid policy is 3 whoever reads it, never 1 or 2. */
enum sk_exit {
	SK_EXIT_OK = 0,
	SK_EXIT_FAIL = 1,      /* a check said no: explain denies, seccomp --diff differs, init --check found a
	                        * changed ruleset or refused a node-like namespace */
	SK_EXIT_USAGE = 2,     /* bad flags or values, or a non-policy input (profile, audit lines) unreadable */
	SK_EXIT_POLICY = 3,    /* the policy is invalid or cannot be read */
	SK_EXIT_NETLINK = 4,   /* the kernel refused something */
	SK_EXIT_RUNTIME = 5,   /* any other run-time failure */
};

/* Fills err (if non-NULL) and returns -code (code is a positive errno; 0 is mapped to EINVAL). */
int sk_err_set(struct sk_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like sk_err_set, appending ": strerror(code)". */
int sk_err_sys(struct sk_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends "prefix: " to an already filled err; returns -err->code. */
int sk_err_prefix(struct sk_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

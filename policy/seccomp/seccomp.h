/* policy/seccomp/seccomp.h — the agent's seccomp profile (docs/architecture.md#the-agents-seccomp-profile). Owns: the profile model (an OCI /
 * Kubernetes Localhost seccomp profile held as flat rules), the generator (default allowlist, the
 * never-allowed list, argument filters, per-architecture name resolution with libseccomp), JSON in and out
 * (cJSON), and the profile diff. Loading a profile into the kernel lives in seccomp_apply.h.
 *
 * Ownership: every sk_scmp_profile returned here is owned by the caller; free it with
 * sk_scmp_profile_free(). Strings returned as `char *` are owned by the caller (free()). */
#ifndef SK_POLICY_SECCOMP_H
#define SK_POLICY_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Actions of the OCI runtime spec (SCMP_ACT_*). */
enum sk_scmp_action {
	SK_SCMP_ALLOW = 0,
	SK_SCMP_ERRNO,
	SK_SCMP_KILL,           /* the spec's SCMP_ACT_KILL = kill the thread */
	SK_SCMP_KILL_THREAD,
	SK_SCMP_KILL_PROCESS,
	SK_SCMP_TRAP,
	SK_SCMP_TRACE,
	SK_SCMP_LOG,
	SK_SCMP_NOTIFY,
};

/* Comparison operators (SCMP_CMP_*); same order as libseccomp's enum scmp_compare minus one. */
enum sk_scmp_op {
	SK_CMP_NE = 0,
	SK_CMP_LT,
	SK_CMP_LE,
	SK_CMP_EQ,
	SK_CMP_GE,
	SK_CMP_GT,
	SK_CMP_MASKED_EQ,       /* (arg & value) == value_two */
};

struct sk_scmp_arg {
	unsigned index;         /* 0..5 */
	uint64_t value;         /* for MASKED_EQ: the mask */
	uint64_t value_two;     /* for MASKED_EQ: the datum; otherwise 0 */
	enum sk_scmp_op op;
};

/* One rule: one syscall name, one action, conditions ANDed (at most one per argument index, which is what
 * runc/crun need to AND them). Several rules for one name are ORed. */
struct sk_scmp_rule {
	char *name;
	enum sk_scmp_action action;
	int errno_ret;          /* ERRNO/TRACE: return code; -1 = unset (runtime default EPERM) */
	struct sk_scmp_arg *args;
	size_t n_args;
};

struct sk_scmp_profile {
	enum sk_scmp_action default_action;
	int default_errno;      /* -1 = unset */
	bool log_denials;       /* SECCOMP_FILTER_FLAG_LOG ("flags" in the OCI JSON): the kernel logs every action
	                         * but allow that is in /proc/sys/kernel/seccomp/actions_logged (errno, kill…),
	                         * so a refused syscall leaves an audit line (type=1326) on the node, not only
	                         * an EPERM the agent alone sees */
	uint32_t *arches;       /* SCMP_ARCH_* tokens, in file order */
	size_t n_arches;
	struct sk_scmp_rule *rules;
	size_t n_rules;
};

/* Generator input. Every pointer is borrowed. */
struct sk_seccomp_opts {
	const char *const *allow;  /* extra unconditional allows; never-allowed and conditioned names refused */
	size_t n_allow;
	const char *const *deny;   /* removed from the profile (all of a name's rules) */
	size_t n_deny;
	const uint32_t *arches;    /* SCMP_ARCH_* tokens; n_arches == 0 means x86_64 + aarch64 */
	size_t n_arches;
	bool log_denials;          /* the profile's log_denials: off by default, as runc 1.1 refuses to start
	                            * a container whose profile has any "flags" (docs/operating.md) */
};

/* Builds the agent profile. Names of opts->allow/deny must resolve on at least one selected architecture
 * (else -EINVAL naming the syscall); built-in names missing on every selected architecture are dropped. */
int sk_seccomp_generate(const struct sk_seccomp_opts *opts, struct sk_scmp_profile **out, struct sk_err *err);

/* Parses "x86_64,aarch64" (also "amd64", "arm64", and the SCMP_ARCH_* spellings) into tokens. Only the
 * architectures the generator supports (x86_64, aarch64) are accepted. */
int sk_seccomp_parse_arches(const char *list, uint32_t *out, size_t cap, size_t *n, struct sk_err *err);

/* JSON (OCI runtime-spec "linux.seccomp" / Kubernetes Localhost profile). Returns owned, NUL-terminated. */
char *sk_scmp_profile_to_json(const struct sk_scmp_profile *p, struct sk_err *err);
/* Parses a profile: OCI (`architectures`) or Docker (`archMap`, reduced to the native entry and its
 * sub-architectures, as dockerd does). `name` is only for messages. */
int sk_scmp_profile_parse(const char *name, const char *buf, size_t len, struct sk_scmp_profile **out,
			  struct sk_err *err);
int sk_scmp_profile_load_file(const char *path, struct sk_scmp_profile **out, struct sk_err *err);
void sk_scmp_profile_free(struct sk_scmp_profile *p);

/* Lists what each profile allows that the other does not, one line each:
 *   "only A: NAME [when COND]" / "only B: NAME ..." / "differs: NAME: A when ..., B when ...".
 * *n_diff counts the lines. Returns owned text ("" when equal) or NULL with err filled. */
char *sk_scmp_profile_diff(const struct sk_scmp_profile *a, const struct sk_scmp_profile *b, size_t *n_diff,
			   struct sk_err *err);

/* How a profile treats NAME, as one line: "deny" (default action), "allow", "allow when arg0 ...",
 * "errno 38", ... Returns owned. */
char *sk_scmp_profile_describe(const struct sk_scmp_profile *p, const char *name);

/* Built-in tables (static storage, NULL-terminated). */
const char *const *sk_seccomp_default_allow(void);
const char *const *sk_seccomp_never_allowed(void);
bool sk_seccomp_is_never_allowed(const char *name);

const char *sk_scmp_action_name(enum sk_scmp_action a);  /* "SCMP_ACT_ALLOW", ... */
const char *sk_scmp_op_name(enum sk_scmp_op op);         /* "SCMP_CMP_EQ", ... */

#endif

/* policy/seccomp/internal.h — private to the seccomp profile modules (seccomp.c: tables, model and
 * generator; seccomp_json.c: the JSON form; seccomp_diff.c: describe and diff). Nothing else includes it;
 * the API is seccomp.h. */
#ifndef SK_POLICY_SECCOMP_INTERNAL_H
#define SK_POLICY_SECCOMP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "policy/seccomp/seccomp.h"

/* Names of the OCI spelling ("SCMP_ACT_ALLOW", "SCMP_CMP_EQ"); -EINVAL when unknown. */
int sk_scmp_action_from_name(const char *s, enum sk_scmp_action *out);
int sk_scmp_op_from_name(const char *s, enum sk_scmp_op *out);

/* Append to p (copies name and args); -ENOMEM with err filled. An architecture already listed is kept once. */
int sk_scmp_profile_add_rule(struct sk_scmp_profile *p, const char *name, enum sk_scmp_action action,
			     int errno_ret, const struct sk_scmp_arg *args, size_t n_args, struct sk_err *err);
int sk_scmp_profile_add_arch(struct sk_scmp_profile *p, uint32_t arch, struct sk_err *err);

/* OCI spelling of any libseccomp architecture token ("SCMP_ARCH_X86_64"). */
void sk_scmp_arch_to_oci(uint32_t token, char *buf, size_t len);
/* Accepts "SCMP_ARCH_X86_64" (OCI) and "x86_64"/"amd64" style names. 0 when unknown. */
uint32_t sk_scmp_arch_from_name(const char *s);

/* The generator's setsockopt rules (without the multicast membership options), appended to p; describe
 * regenerates them to recognise the cover. */
int sk_seccomp_add_setsockopt(struct sk_scmp_profile *p, struct sk_err *err);
/* The multicast membership options refused at level IPPROTO_IP (v6 false) or IPPROTO_IPV6. Static storage. */
const uint32_t *sk_seccomp_mcast_opts(bool v6, size_t *n);

static inline bool sk_scmp_same_action(const struct sk_scmp_rule *a, const struct sk_scmp_rule *b)
{
	return a->action == b->action && a->errno_ret == b->errno_ret;
}

#endif

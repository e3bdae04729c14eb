/* policy/seccomp/check.h — a policy's seccomp section checked against the profile generator (check.c). */
#ifndef SK_POLICY_SECCOMP_CHECK_H
#define SK_POLICY_SECCOMP_CHECK_H

struct sk_policy;
struct sk_diags;

/* 0 when the generator accepts the section; else -1 with one diagnostic per refused name (or one for the
 * section as a whole) added to diags at the policy's positions. */
int sk_seccomp_check_policy(const struct sk_policy *p, struct sk_diags *diags);

#endif

/* policy/seccomp/apply.h — turns a parsed seccomp profile into a libseccomp filter with the semantics runc
 * gives the same JSON (docs/architecture.md#the-agents-seccomp-profile), so `stockade-policy exec` tests a workload under the exact profile a
 * pod gets. Owns: the profile → libseccomp translation and loading it into the calling thread.
 *
 * runc semantics reproduced: the native architecture is always in the filter, `architectures` are added to
 * it; a rule whose action equals the default action is skipped; a name the local libseccomp cannot resolve is
 * skipped; conditions of one rule are ANDed unless two of them name the same argument, in which case each
 * condition becomes its own rule (ORed); the binary-tree optimisation is on above 32 entries; the filter's
 * bad-architecture action is libseccomp's default (kill the thread), so i386 (int 0x80) and x32 entry kill
 * the caller. Not reproduced: runc's -ENOSYS stub for syscall numbers above the highest one the profile
 * names (those get the default action here). */
#ifndef SK_POLICY_SECCOMP_APPLY_H
#define SK_POLICY_SECCOMP_APPLY_H

#include "common/err.h"
#include "policy/seccomp/seccomp.h"

/* Builds the filter. *ctx_out is an owned scmp_filter_ctx (release with seccomp_release()); void * keeps
 * <seccomp.h> out of this header. */
int sk_seccomp_build(const struct sk_scmp_profile *p, void **ctx_out, struct sk_err *err);

/* Sets NO_NEW_PRIVS and loads the profile into the calling thread (and what it execs). Irreversible. */
int sk_seccomp_apply(const struct sk_scmp_profile *p, struct sk_err *err);

#endif

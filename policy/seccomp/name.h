/* policy/seccomp/name.h — the file name of a policy's seccomp profile: "stockade-" + the first 16 hex
 * digits of the SHA-256 of the canonical seccomp section + ".json". Owns the canonical form, which the
 * per-workload chart (helm/stockade `stockade.seccompProfileName`) builds the same way with sortAlpha/uniq/
 * join/sha256sum, so a pod spec, `stockade-policy inject` and the installer agree on one name per profile:
 *
 *     "stockade-seccomp/1\nallow=" + join(",", sorted unique allow) + "\ndeny=" + join(",", sorted unique deny) + "\n"
 *
 * The generator ignores order and repeats, so equal names mean equal profiles from one installer (there is
 * one per cluster); the "/1" is the generator's revision: a release whose generator makes a different
 * profile for the same section bumps it, and every name changes with it. */
#ifndef SK_POLICY_SECCOMP_NAME_H
#define SK_POLICY_SECCOMP_NAME_H

#include <stddef.h>

#include "common/err.h"

#define SK_SCMP_NAME_PREFIX "stockade-"
#define SK_SCMP_NAME_HEX 16
#define SK_SCMP_NAME_SIZE (sizeof(SK_SCMP_NAME_PREFIX) - 1 + SK_SCMP_NAME_HEX + sizeof(".json"))
/* The name of a policy without a seccomp section (seccomp_name_test.c checks it is the computed one). */
#define SK_SCMP_DEFAULT_NAME "stockade-4696b6ca6e2d4b5e.json"

/* The canonical text of a seccomp section (returns owned; NULL with err set on ENOMEM). */
char *sk_seccomp_canonical(const char *const *allow, size_t n_allow, const char *const *deny, size_t n_deny,
			   struct sk_err *err);
/* Writes the profile name into out. 0, or -ENOMEM. */
int sk_seccomp_profile_name(const char *const *allow, size_t n_allow, const char *const *deny, size_t n_deny,
			    char out[SK_SCMP_NAME_SIZE], struct sk_err *err);
/* 1 when name has the shape of a profile name (the installer deletes only files of this shape). */
int sk_seccomp_is_profile_name(const char *name);

struct sk_policy;
/* Whether a pod whose agent runs under the Localhost profile `profile` enforces `pol`'s seccomp section
 * (stockade-init's --seccomp-profile, before it programs anything): 0 when profile is that section's name,
 * or not of the installer's shape (a profile of the operator's own, which no name can be checked against);
 * -EINVAL with err naming both when it is another section's (the pod would run weaker or other than its
 * policy says); -ENOMEM. */
int sk_seccomp_check_profile(const struct sk_policy *pol, const char *profile, struct sk_err *err);

#endif

/* common/handoff.h — giving up root for good before running untrusted-input code: `stockade-init --exec-as`
 * (the native sidecar's entry when the chart's init.inSidecar applies the rules in the sidecar container)
 * and `stockade-sidecar wait-ready` started as root by that container's postStart hook. Owns the order of
 * the drop (bounding set while CAP_SETPCAP is still there, ambient, groups, gid, uid, inheritable,
 * no_new_privs) and the check that proves it took before anything else runs. No state. */
#ifndef SK_COMMON_HANDOFF_H
#define SK_COMMON_HANDOFF_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/util.h"

/* Parses "UID:GID", two decimal ids below 2^32-1 (that value is the kernel's "unchanged"). UID 0 is
 * refused: handing off to root keeps every privilege the hand-off exists to lose. The message starts with
 * the quoted value; the caller prefixes its flag. */
SK_MUST_USE int sk_handoff_parse(const char *s, uid_t *uid, gid_t *gid, struct sk_err *err);

/* Drops the calling process to uid:gid for good: empties the capability bounding set if CAP_SETPCAP is
 * effective (without it the set stays: the uid change and no_new_privs keep it from ever being used),
 * clears the ambient set, sets no supplementary groups, real/effective/saved gid and uid, an empty
 * inheritable set, and no_new_privs; then sk_handoff_check. *bounding_dropped (may be NULL) says whether
 * the bounding set was emptied. On failure the process may be half dropped: the caller must not go on to
 * run anything (sk_handoff_exec does not). */
SK_MUST_USE int sk_handoff_drop(uid_t uid, gid_t gid, bool *bounding_dropped, struct sk_err *err);

/* Checks the calling process: real, effective, saved and filesystem uid all uid (gid likewise), no
 * supplementary group, no capability effective, permitted, inheritable or ambient, no_new_privs set, and
 * when want_empty_bounding an empty bounding set. Names the first thing that is not so. */
SK_MUST_USE int sk_handoff_check(uid_t uid, gid_t gid, bool want_empty_bounding, struct sk_err *err);

/* sk_handoff_drop, then execvp(argv[0], argv). Returns only on failure, err filled; argv[0] has not run
 * (a failed drop or check stops before the exec). */
SK_MUST_USE int sk_handoff_exec(uid_t uid, gid_t gid, char *const argv[], struct sk_err *err);

#endif

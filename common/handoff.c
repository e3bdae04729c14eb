/* common/handoff.c — see handoff.h.
 *
 * Why this order: the bounding set can only be emptied while CAP_SETPCAP is effective, so first; the uid
 * change clears the effective, permitted and ambient sets (PR_SET_KEEPCAPS is turned off first so the
 * kernel's fix-up applies) but leaves the inheritable set, so it is emptied after; no_new_privs last, so
 * that nothing the exec'd program runs can regain a privilege through a set-uid bit or file capabilities.
 * Then the result is read back: a kernel or a securebits setting that behaves differently is caught
 * before the untrusted-input code runs, not assumed away. Raw capget/capset: no libcap in the images. */
#include "common/handoff.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int sk_handoff_parse(const char *s, uid_t *uid, gid_t *gid, struct sk_err *err)
{
	unsigned long v[2];
	const char *p = s;
	for (int i = 0; i < 2; i++) {
		char *end = NULL;
		if (*p < '0' || *p > '9')
			return sk_err_set(err, EINVAL, "\"%s\": expected UID:GID (two decimal ids)", s);
		errno = 0;
		v[i] = strtoul(p, &end, 10);
		if (errno || v[i] >= UINT32_MAX || *end != (i == 0 ? ':' : '\0'))
			return sk_err_set(err, EINVAL, "\"%s\": expected UID:GID (two decimal ids below "
					  "4294967295)", s);
		p = end + 1;
	}
	if (v[0] == 0)
		return sk_err_set(err, EINVAL, "\"%s\": refusing uid 0 (the hand-off exists to leave root)", s);
	*uid = (uid_t)v[0];
	*gid = (gid_t)v[1];
	return 0;
}

static int caps_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	return syscall(SYS_capget, &h, d) == 0 ? 0 : -errno;
}

static int caps_clear(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	return syscall(SYS_capset, &h, d) == 0 ? 0 : -errno;
}

/* The number of capabilities this kernel knows: PR_CAPBSET_READ answers EINVAL past the last one. */
static int caps_known(void)
{
	int n = 0;
	while (n < 64 && prctl(PR_CAPBSET_READ, (unsigned long)n, 0, 0, 0) >= 0)
		n++;
	return n;
}

int sk_handoff_drop(uid_t uid, gid_t gid, bool *bounding_dropped, struct sk_err *err)
{
	struct __user_cap_data_struct d[2];
	int rc, n = caps_known();
	if (uid == 0)
		return sk_err_set(err, EINVAL, "hand-off: refusing uid 0");
	if ((rc = caps_get(d)) < 0)
		return sk_err_sys(err, -rc, "hand-off: capget");
	bool setpcap = (d[CAP_TO_INDEX(CAP_SETPCAP)].effective & CAP_TO_MASK(CAP_SETPCAP)) != 0;
	if (setpcap) {
		/* Empty the bounding set while that is still possible: a later exec of a file with
		 * capabilities could otherwise get any capability still in it (no_new_privs stops that too;
		 * this is the second lock). */
		for (int c = 0; c < n; c++)
			if (prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0)
				return sk_err_sys(err, errno, "hand-off: drop capability %d from the bounding set", c);
	}
	if (bounding_dropped)
		*bounding_dropped = setpcap;
	/* EINVAL: a kernel without ambient capabilities (< 4.3) has none to clear. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return sk_err_sys(err, errno, "hand-off: clear the ambient capabilities");
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return sk_err_sys(err, errno, "hand-off: PR_SET_KEEPCAPS 0");
	if (setgroups(0, NULL) < 0)
		return sk_err_sys(err, errno, "hand-off: setgroups (none)");
	if (setresgid(gid, gid, gid) < 0)
		return sk_err_sys(err, errno, "hand-off: setresgid %u", (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return sk_err_sys(err, errno, "hand-off: setresuid %u", (unsigned)uid);
	if ((rc = caps_clear()) < 0)
		return sk_err_sys(err, -rc, "hand-off: capset (empty inheritable set)");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sk_err_sys(err, errno, "hand-off: PR_SET_NO_NEW_PRIVS");
	return sk_handoff_check(uid, gid, setpcap, err);
}

int sk_handoff_check(uid_t uid, gid_t gid, bool want_empty_bounding, struct sk_err *err)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;
	struct __user_cap_data_struct d[2];
	int rc;
	if (getresuid(&r, &e, &s) < 0)
		return sk_err_sys(err, errno, "hand-off check: getresuid");
	if (r != uid || e != uid || s != uid)
		return sk_err_set(err, EPERM, "hand-off check: uids are %u/%u/%u (real/effective/saved), not %u",
				  (unsigned)r, (unsigned)e, (unsigned)s, (unsigned)uid);
	/* setfsuid answers the previous value; asking for the current one changes nothing */
	if ((uid_t)setfsuid(uid) != uid)
		return sk_err_set(err, EPERM, "hand-off check: filesystem uid is not %u", (unsigned)uid);
	if (getresgid(&rg, &eg, &sg) < 0)
		return sk_err_sys(err, errno, "hand-off check: getresgid");
	if (rg != gid || eg != gid || sg != gid)
		return sk_err_set(err, EPERM, "hand-off check: gids are %u/%u/%u (real/effective/saved), not %u",
				  (unsigned)rg, (unsigned)eg, (unsigned)sg, (unsigned)gid);
	if ((gid_t)setfsgid(gid) != gid)
		return sk_err_set(err, EPERM, "hand-off check: filesystem gid is not %u", (unsigned)gid);
	int ng = getgroups(0, NULL);
	if (ng != 0)
		return ng < 0 ? sk_err_sys(err, errno, "hand-off check: getgroups")
			      : sk_err_set(err, EPERM, "hand-off check: %d supplementary groups left", ng);
	if ((rc = caps_get(d)) < 0)
		return sk_err_sys(err, -rc, "hand-off check: capget");
	if (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted || d[0].inheritable ||
	    d[1].inheritable)
		return sk_err_set(err, EPERM, "hand-off check: capabilities left: effective %08x%08x, permitted "
				  "%08x%08x, inheritable %08x%08x", d[1].effective, d[0].effective, d[1].permitted,
				  d[0].permitted, d[1].inheritable, d[0].inheritable);
	int n = caps_known();
	bool ambient = true;
	for (int c = 0; c < n; c++) {
		int a = ambient ? prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, (unsigned long)c, 0, 0) : 0;
		if (a < 0 && errno == EINVAL && c == 0) {
			ambient = false;   /* no ambient capabilities on this kernel (< 4.3) */
			a = 0;
		}
		if (a != 0)
			return a < 0 ? sk_err_sys(err, errno, "hand-off check: read ambient capability %d", c)
				     : sk_err_set(err, EPERM, "hand-off check: ambient capability %d left", c);
		if (want_empty_bounding && prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0) != 0)
			return sk_err_set(err, EPERM, "hand-off check: capability %d left in the bounding set", c);
	}
	int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	if (nnp != 1)
		return nnp < 0 ? sk_err_sys(err, errno, "hand-off check: PR_GET_NO_NEW_PRIVS")
			       : sk_err_set(err, EPERM, "hand-off check: no_new_privs is not set");
	return 0;
}

int sk_handoff_exec(uid_t uid, gid_t gid, char *const argv[], struct sk_err *err)
{
	if (!argv || !argv[0] || !argv[0][0])
		return sk_err_set(err, EINVAL, "hand-off: no program to run");
	int rc = sk_handoff_drop(uid, gid, NULL, err);
	if (rc < 0)
		return rc;
	/* Whatever was buffered for the old image goes out before it is replaced. */
	(void)fflush(NULL);   /* a lost diagnostic line is not a reason to stop: the exec is what matters */
	execvp(argv[0], argv);
	return sk_err_sys(err, errno, "hand-off: exec %s (as %u:%u)", argv[0], (unsigned)uid, (unsigned)gid);
}

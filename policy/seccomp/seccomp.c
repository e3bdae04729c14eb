/* policy/seccomp/seccomp.c — see seccomp.h. The built-in tables (default allowlist, never-allowed list), action and
 * operator names, the profile model, architecture names and the generator. The JSON form lives in
 * seccomp_json.c, describe and diff in seccomp_diff.c; what they share is in seccomp_internal.h. */
#include "policy/seccomp/seccomp.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include <linux/netlink.h>

#include "common/util.h"
#include "policy/seccomp/internal.h"


/* What real agent workloads (python, node, git, gcc/make, curl, pip, npm, bash/coreutils, tar/gzip) call,
 * checked against the workload corpus in e2e/seccomp.test.sh. Names missing on an architecture (open on
 * aarch64) are dropped for that architecture by the runtime. clone, clone3, socket, setsockopt, ioctl and
 * personality are not here: they get argument filters below. */
static const char *const default_allow[] = {
	/* files and directories */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
	"open", "openat", "openat2", "creat", "close", "close_range", "lseek", "dup", "dup2", "dup3",
	"stat", "lstat", "fstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
	"symlinkat", "unlink", "unlinkat", "mknod", "mknodat", "chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat", "umask", "truncate", "ftruncate", "fallocate", "fsync",
	"fdatasync", "sync", "syncfs", "sync_file_range", "flock", "fcntl", "utime", "utimes", "futimesat",
	"utimensat", "fadvise64", "readahead", "copy_file_range", "sendfile", "splice", "tee", "vmsplice",
	"getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr", "listxattr",
	"llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr", "cachestat",
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	/* descriptors, polling, events */
	"pipe", "pipe2", "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd",
	"signalfd4", "timerfd_create", "timerfd_settime", "timerfd_gettime", "memfd_create",
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
	/* sockets (socket itself is filtered by family/type below) */
	"socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername",
	"sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "getsockopt",
	/* memory */
	"brk", "mmap", "munmap", "mprotect", "mremap", "msync", "mincore", "madvise", "mlock", "mlock2",
	"munlock", "mlockall", "munlockall", "remap_file_pages", "membarrier", "pkey_alloc", "pkey_free",
	"pkey_mprotect", "get_mempolicy", "set_mempolicy", "mbind", "map_shadow_stack",
	/* processes and threads; vfork, wait4, exit and exit_group must stay or shells and compilers hang */
	"execve", "execveat", "fork", "vfork", "exit", "exit_group", "wait4", "waitid", "kill", "tkill",
	"tgkill", "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
	"set_tid_address", "arch_prctl", "prctl", "futex", "futex_waitv", "futex_wake", "futex_wait",
	"futex_requeue", "get_robust_list", "set_robust_list", "rseq", "pidfd_open", "pidfd_send_signal",
	"process_mrelease", "seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
	"sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
	"sched_getscheduler", "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "sched_getattr", "sched_setattr", "getcpu", "getpriority", "setpriority",
	"ioprio_get", "ioprio_set", "getrlimit", "setrlimit", "prlimit64", "getrusage", "times", "sysinfo",
	"uname", "capget", "capset",
	/* credentials (changing them still needs capabilities the agent does not have) */
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid", "setgid",
	"setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
	/* signals */
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
	"rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack", "restart_syscall", "pause",
	/* time (reading it; setting it is never allowed) */
	"time", "gettimeofday", "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "alarm",
	"getitimer", "setitimer", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete",
	/* System V and POSIX IPC (multiprocessing, postgres-style tools) */
	"msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl", "shmget", "shmat",
	"shmdt", "shmctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
	"mq_getsetattr",
	/* getrandom: python, node and openssl seed from it */
	"getrandom",
	NULL,
};

/* Never allowed, whatever the policy says (docs/architecture.md#the-agents-seccomp-profile). Names absent
 * on every architecture we generate for (vm86 is i386-only) are harmless here: they can never be allowed
 * either. */
static const char *const never_allowed[] = {
	"mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns", "ptrace",
	"process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "settimeofday", "clock_settime",
	"adjtimex", "clock_adjtime", "syslog", "lookup_dcookie", "vm86", "vm86old",
	/* the new mount API and other ways around the list above */
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr", "pidfd_getfd",
	"kcmp", "process_madvise", "iopl", "ioperm", "create_module", "get_kernel_syms", "query_module",
	"nfsservctl", "uselib", "_sysctl", "sethostname", "setdomainname", "vhangup", "fanotify_init",
	"modify_ldt", "stime",
	NULL,
};

/* Names that only exist here with argument filters; allowing them outright would undo the filter. */
static const char *const conditioned[] = { "clone", "clone3", "socket", "setsockopt", "ioctl", "personality", NULL };

#define SK_CLONE_NS_FLAGS                                                                                  \
	((uint64_t)(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | \
		    CLONE_NEWCGROUP))
#define SK_TIOCSTI 0x5412u
#define SK_SOCK_TYPE_MASK 0xfu

const char *const *sk_seccomp_default_allow(void) { return default_allow; }
const char *const *sk_seccomp_never_allowed(void) { return never_allowed; }

static bool in_list(const char *const *list, const char *name)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

bool sk_seccomp_is_never_allowed(const char *name) { return in_list(never_allowed, name); }

static const struct {
	enum sk_scmp_action a;
	const char *name;
} action_names[] = {
	{ SK_SCMP_ALLOW, "SCMP_ACT_ALLOW" },
	{ SK_SCMP_ERRNO, "SCMP_ACT_ERRNO" },
	{ SK_SCMP_KILL, "SCMP_ACT_KILL" },
	{ SK_SCMP_KILL_THREAD, "SCMP_ACT_KILL_THREAD" },
	{ SK_SCMP_KILL_PROCESS, "SCMP_ACT_KILL_PROCESS" },
	{ SK_SCMP_TRAP, "SCMP_ACT_TRAP" },
	{ SK_SCMP_TRACE, "SCMP_ACT_TRACE" },
	{ SK_SCMP_LOG, "SCMP_ACT_LOG" },
	{ SK_SCMP_NOTIFY, "SCMP_ACT_NOTIFY" },
};

static const char *const op_names[] = {
	[SK_CMP_NE] = "SCMP_CMP_NE", [SK_CMP_LT] = "SCMP_CMP_LT", [SK_CMP_LE] = "SCMP_CMP_LE",
	[SK_CMP_EQ] = "SCMP_CMP_EQ", [SK_CMP_GE] = "SCMP_CMP_GE", [SK_CMP_GT] = "SCMP_CMP_GT",
	[SK_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
};

const char *sk_scmp_action_name(enum sk_scmp_action a)
{
	for (size_t i = 0; i < SK_ARRAY_SIZE(action_names); i++)
		if (action_names[i].a == a)
			return action_names[i].name;
	return "SCMP_ACT_INVALID";
}

const char *sk_scmp_op_name(enum sk_scmp_op op)
{
	return (unsigned)op < SK_ARRAY_SIZE(op_names) ? op_names[op] : "SCMP_CMP_INVALID";
}

int sk_scmp_action_from_name(const char *s, enum sk_scmp_action *out)
{
	for (size_t i = 0; i < SK_ARRAY_SIZE(action_names); i++)
		if (!strcmp(action_names[i].name, s)) {
			*out = action_names[i].a;
			return 0;
		}
	return -EINVAL;
}

int sk_scmp_op_from_name(const char *s, enum sk_scmp_op *out)
{
	for (size_t i = 0; i < SK_ARRAY_SIZE(op_names); i++)
		if (!strcmp(op_names[i], s)) {
			*out = (enum sk_scmp_op)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- the model ---- */

void sk_scmp_profile_free(struct sk_scmp_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_rules; i++) {
		free(p->rules[i].name);
		free(p->rules[i].args);
	}
	free(p->rules);
	free(p->arches);
	free(p);
}

int sk_scmp_profile_add_rule(struct sk_scmp_profile *p, const char *name, enum sk_scmp_action action,
			    int errno_ret, const struct sk_scmp_arg *args, size_t n_args, struct sk_err *err)
{
	struct sk_scmp_rule *v = realloc(p->rules, (p->n_rules + 1) * sizeof(*v));
	if (!v)
		return sk_err_sys(err, ENOMEM, "seccomp: add rule %s", name);
	p->rules = v;
	struct sk_scmp_rule *r = &v[p->n_rules];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	if (n_args) {
		r->args = calloc(n_args, sizeof(*r->args));
		if (r->args)
			memcpy(r->args, args, n_args * sizeof(*args));
	}
	if (!r->name || (n_args && !r->args)) {
		free(r->name);
		free(r->args);
		return sk_err_sys(err, ENOMEM, "seccomp: add rule %s", name);
	}
	r->action = action;
	r->errno_ret = errno_ret;
	r->n_args = n_args;
	p->n_rules++;
	return 0;
}

int sk_scmp_profile_add_arch(struct sk_scmp_profile *p, uint32_t arch, struct sk_err *err)
{
	for (size_t i = 0; i < p->n_arches; i++)
		if (p->arches[i] == arch)
			return 0;
	uint32_t *v = realloc(p->arches, (p->n_arches + 1) * sizeof(*v));
	if (!v)
		return sk_err_sys(err, ENOMEM, "seccomp: add architecture");
	p->arches = v;
	v[p->n_arches++] = arch;
	return 0;
}

/* ---- architectures ---- */

static const struct {
	uint32_t token;
	const char *scmp;    /* OCI spelling */
	const char *names[3];
} arch_table[] = {
	{ SCMP_ARCH_X86_64, "SCMP_ARCH_X86_64", { "x86_64", "amd64", NULL } },
	{ SCMP_ARCH_AARCH64, "SCMP_ARCH_AARCH64", { "aarch64", "arm64", NULL } },
};

int sk_seccomp_parse_arches(const char *list, uint32_t *out, size_t cap, size_t *n, struct sk_err *err)
{
	*n = 0;
	const char *s = list;
	while (*s) {
		size_t len = strcspn(s, ",");
		bool found = false;
		for (size_t i = 0; i < SK_ARRAY_SIZE(arch_table) && !found; i++) {
			bool hit = strlen(arch_table[i].scmp) == len && !strncmp(s, arch_table[i].scmp, len);
			for (size_t j = 0; !hit && arch_table[i].names[j]; j++)
				hit = strlen(arch_table[i].names[j]) == len && !strncmp(s, arch_table[i].names[j], len);
			if (!hit)
				continue;
			found = true;
			bool dup = false;
			for (size_t k = 0; k < *n; k++)
				dup |= out[k] == arch_table[i].token;
			if (dup)
				continue;
			if (*n >= cap)
				return sk_err_set(err, EINVAL, "seccomp: --arch: too many architectures");
			out[(*n)++] = arch_table[i].token;
		}
		if (!found)
			return sk_err_set(err, EINVAL, "seccomp: --arch: unsupported architecture '%.*s' (x86_64, aarch64)",
					  (int)len, s);
		s += len;
		if (*s == ',')
			s++;
	}
	if (*n == 0)
		return sk_err_set(err, EINVAL, "seccomp: --arch: empty list");
	return 0;
}

/* OCI spelling of any libseccomp architecture: "SCMP_ARCH_" + upper-cased libseccomp name. */
void sk_scmp_arch_to_oci(uint32_t token, char *buf, size_t len)
{
	for (size_t i = 0; i < SK_ARRAY_SIZE(arch_table); i++)
		if (arch_table[i].token == token) {
			(void)snprintf(buf, len, "%s", arch_table[i].scmp);
			return;
		}
	static const struct {
		uint32_t t;
		const char *n;
	} others[] = {
		{ SCMP_ARCH_X86, "X86" },     { SCMP_ARCH_X32, "X32" },     { SCMP_ARCH_ARM, "ARM" },
		{ SCMP_ARCH_PPC64LE, "PPC64LE" }, { SCMP_ARCH_S390X, "S390X" }, { SCMP_ARCH_RISCV64, "RISCV64" },
		{ SCMP_ARCH_PPC64, "PPC64" }, { SCMP_ARCH_S390, "S390" },   { SCMP_ARCH_PPC, "PPC" },
		{ SCMP_ARCH_MIPS, "MIPS" },   { SCMP_ARCH_MIPS64, "MIPS64" }, { SCMP_ARCH_MIPSEL, "MIPSEL" },
		{ SCMP_ARCH_MIPSEL64, "MIPSEL64" }, { SCMP_ARCH_MIPS64N32, "MIPS64N32" },
		{ SCMP_ARCH_MIPSEL64N32, "MIPSEL64N32" },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(others); i++)
		if (others[i].t == token) {
			(void)snprintf(buf, len, "SCMP_ARCH_%s", others[i].n);
			return;
		}
	(void)snprintf(buf, len, "SCMP_ARCH_0x%" PRIx32, token);
}

/* Accepts "SCMP_ARCH_X86_64" (OCI) and "x86_64"/"amd64" style names. 0 when unknown. */
uint32_t sk_scmp_arch_from_name(const char *s)
{
	char low[64];
	const char *p = strncmp(s, "SCMP_ARCH_", 10) ? s : s + 10;
	size_t i = 0;
	for (; p[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)p[i]);
	low[i] = '\0';
	if (!strcmp(low, "amd64"))
		return SCMP_ARCH_X86_64;
	if (!strcmp(low, "arm64"))
		return SCMP_ARCH_AARCH64;
	if (!strcmp(low, "native"))
		return seccomp_arch_native();
	return seccomp_arch_resolve_name(low);
}

static bool resolves_on_any(const char *name, const uint32_t *arches, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (seccomp_syscall_resolve_name_arch(arches[i], name) >= 0)
			return true;
	return false;
}

/* ---- the generator ---- */

static bool in_argv(const char *const *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

static int add_allow(struct sk_scmp_profile *p, const char *name, const struct sk_seccomp_opts *o,
		     struct sk_err *err)
{
	if (in_argv(o->deny, o->n_deny, name) || !resolves_on_any(name, p->arches, p->n_arches))
		return 0;
	for (size_t i = 0; i < p->n_rules; i++)
		if (!strcmp(p->rules[i].name, name))
			return 0;
	return sk_scmp_profile_add_rule(p, name, SK_SCMP_ALLOW, -1, NULL, 0, err);
}

/* setsockopt options that make the kernel send IGMP/MLD reports naming an agent-chosen group (14 chosen
 * bytes per IPv6 group, 3 per IPv4 one) out of the pod with no socket UID on them (a channel no egress
 * rule sees), at level IPPROTO_IP (also reached through AF_INET6 sockets) and IPPROTO_IPV6. The leaves and source-filter
 * changes are refused too: membership is per socket, so with the joins refused there is nothing for them
 * to act on (the kernel answers EADDRNOTAVAIL), and should a join ever get through another way, each of
 * them is itself a report naming the group. IPv4 then is the one range 35..48, cheaper to filter.
 * IPV6_JOIN_ANYCAST also joins the anycast address's solicited-node group. */
static const uint32_t mcast_ip_opts[] = {
	IP_ADD_MEMBERSHIP, IP_DROP_MEMBERSHIP, IP_UNBLOCK_SOURCE, IP_BLOCK_SOURCE, IP_ADD_SOURCE_MEMBERSHIP,
	IP_DROP_SOURCE_MEMBERSHIP, IP_MSFILTER, MCAST_JOIN_GROUP, MCAST_BLOCK_SOURCE, MCAST_UNBLOCK_SOURCE,
	MCAST_LEAVE_GROUP, MCAST_JOIN_SOURCE_GROUP, MCAST_LEAVE_SOURCE_GROUP, MCAST_MSFILTER,
};
static const uint32_t mcast_ip6_opts[] = {
	IPV6_ADD_MEMBERSHIP, IPV6_DROP_MEMBERSHIP, IPV6_JOIN_ANYCAST, IPV6_LEAVE_ANYCAST, MCAST_JOIN_GROUP,
	MCAST_BLOCK_SOURCE, MCAST_UNBLOCK_SOURCE, MCAST_LEAVE_GROUP, MCAST_JOIN_SOURCE_GROUP,
	MCAST_LEAVE_SOURCE_GROUP, MCAST_MSFILTER,
};
static const uint32_t mcast_levels[] = { IPPROTO_IP, IPPROTO_IPV6 };

const uint32_t *sk_seccomp_mcast_opts(bool v6, size_t *n)
{
	*n = v6 ? SK_ARRAY_SIZE(mcast_ip6_opts) : SK_ARRAY_SIZE(mcast_ip_opts);
	return v6 ? mcast_ip6_opts : mcast_ip_opts;
}

static bool any_matches(const uint32_t *v, size_t n, uint32_t mask, uint32_t val)
{
	for (size_t i = 0; i < n; i++)
		if ((v[i] & mask) == val)
			return true;
	return false;
}

/* Adds ALLOW rules for `name` that together match "low 32 bits of arg idx are not in forbid" (restricted to
 * values in need when need is non-NULL; need and forbid disjoint), each rule ANDed with *with when given.
 * The kernel reads int arguments as 32 bits, so only MASKED_EQ on the low 32 bits is used: a 64-bit EQ/NE
 * would let a value padded with high garbage through. The rules are the maximal prefix blocks of the 32-bit
 * space (bits fixed from the top) that hold no forbidden value: a few dozen for small sets. */
static int add_low32_cover(struct sk_scmp_profile *p, const char *name, unsigned idx, const uint32_t *forbid,
			   size_t n_forbid, const uint32_t *need, size_t n_need, const struct sk_scmp_arg *with,
			   unsigned bit, uint32_t mask, uint32_t val, struct sk_err *err)
{
	if (need && !any_matches(need, n_need, mask, val))
		return 0;
	if (!any_matches(forbid, n_forbid, mask, val)) {
		struct sk_scmp_arg a[2];
		size_t n = 0;
		if (with)
			a[n++] = *with;
		a[n++] = (struct sk_scmp_arg){ idx, mask, val, SK_CMP_MASKED_EQ };
		return sk_scmp_profile_add_rule(p, name, SK_SCMP_ALLOW, -1, a, n, err);
	}
	if (bit == 0)
		return 0; /* a single value, forbidden */
	uint32_t b = (uint32_t)1 << (bit - 1);
	int r = add_low32_cover(p, name, idx, forbid, n_forbid, need, n_need, with, bit - 1, mask | b, val, err);
	if (r == 0)
		r = add_low32_cover(p, name, idx, forbid, n_forbid, need, n_need, with, bit - 1, mask | b, val | b,
				    err);
	return r;
}

/* setsockopt(fd, level, optname, ...) without the multicast membership options: allowed when
 *   (1) the level is neither IPPROTO_IP nor IPPROTO_IPV6, or
 *   (2) the option is in neither list (whatever the level), or
 *   (3) the level is IPPROTO_IP and the option only in the IPv6 list, or the level IPPROTO_IPV6 and the
 *       option only in the IPv4 list.
 * Everything else gets the default action (EPERM). Only ALLOW rules: libseccomp (and so runc and crun)
 * lets an unconditional rule swallow conditional ones of another action for the same syscall, so
 * "allow setsockopt" plus "errno when ..." would not deny anything. */
int sk_seccomp_add_setsockopt(struct sk_scmp_profile *p, struct sk_err *err)
{
	uint32_t both[SK_ARRAY_SIZE(mcast_ip_opts) + SK_ARRAY_SIZE(mcast_ip6_opts)];
	size_t n_both = 0;
	for (size_t i = 0; i < SK_ARRAY_SIZE(mcast_ip_opts); i++)
		both[n_both++] = mcast_ip_opts[i];
	for (size_t i = 0; i < SK_ARRAY_SIZE(mcast_ip6_opts); i++)
		if (!any_matches(mcast_ip_opts, SK_ARRAY_SIZE(mcast_ip_opts), 0xffffffffu, mcast_ip6_opts[i]))
			both[n_both++] = mcast_ip6_opts[i];
	int r = add_low32_cover(p, "setsockopt", 1, mcast_levels, SK_ARRAY_SIZE(mcast_levels), NULL, 0, NULL, 32,
				0, 0, err);
	if (r == 0)
		r = add_low32_cover(p, "setsockopt", 2, both, n_both, NULL, 0, NULL, 32, 0, 0, err);
	for (size_t l = 0; l < SK_ARRAY_SIZE(mcast_levels) && r == 0; l++) {
		bool v4 = mcast_levels[l] == IPPROTO_IP;
		const uint32_t *own = v4 ? mcast_ip_opts : mcast_ip6_opts, *other = v4 ? mcast_ip6_opts : mcast_ip_opts;
		size_t n_own = v4 ? SK_ARRAY_SIZE(mcast_ip_opts) : SK_ARRAY_SIZE(mcast_ip6_opts);
		size_t n_other = v4 ? SK_ARRAY_SIZE(mcast_ip6_opts) : SK_ARRAY_SIZE(mcast_ip_opts);
		uint32_t need[SK_ARRAY_SIZE(both)];
		size_t n_need = 0;
		for (size_t i = 0; i < n_other; i++)
			if (!any_matches(own, n_own, 0xffffffffu, other[i]))
				need[n_need++] = other[i];
		if (n_need == 0)
			continue;
		struct sk_scmp_arg lv = { 1, 0xffffffffu, mcast_levels[l], SK_CMP_MASKED_EQ };
		r = add_low32_cover(p, "setsockopt", 2, own, n_own, need, n_need, &lv, 32, 0, 0, err);
	}
	return r;
}

static int add_conditioned(struct sk_scmp_profile *p, const struct sk_seccomp_opts *o, struct sk_err *err)
{
	int r = 0;
	/* clone: the namespace flags are what turns a fork into a container escape kit; with all of them
	 * masked to zero, clone can only make ordinary threads and processes. */
	if (!in_argv(o->deny, o->n_deny, "clone")) {
		struct sk_scmp_arg a = { 0, SK_CLONE_NS_FLAGS, 0, SK_CMP_MASKED_EQ };
		if ((r = sk_scmp_profile_add_rule(p, "clone", SK_SCMP_ALLOW, -1, &a, 1, err)) < 0)
			return r;
	}
	/* clone3 passes its flags in memory, out of seccomp's reach, so it is refused whole; ENOSYS (not
	 * EPERM) makes glibc fall back to clone, which is filtered above. */
	if (!in_argv(o->deny, o->n_deny, "clone3") &&
	    (r = sk_scmp_profile_add_rule(p, "clone3", SK_SCMP_ERRNO, ENOSYS, NULL, 0, err)) < 0)
		return r;

	/* socket: by family and type. The type's low 4 bits are the socket type; the rest are
	 * SOCK_NONBLOCK/SOCK_CLOEXEC, which are fine. EQ on the family compares all 64 bits, so a family
	 * padded with high garbage does not match (the kernel would truncate it to an int). */
	if (!in_argv(o->deny, o->n_deny, "socket")) {
		static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
		static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };
		for (size_t f = 0; f < SK_ARRAY_SIZE(fams); f++)
			for (size_t t = 0; t < SK_ARRAY_SIZE(types); t++) {
				struct sk_scmp_arg a[2] = {
					{ 0, (uint64_t)fams[f], 0, SK_CMP_EQ },
					{ 1, SK_SOCK_TYPE_MASK, (uint64_t)types[t], SK_CMP_MASKED_EQ },
				};
				if ((r = sk_scmp_profile_add_rule(p, "socket", SK_SCMP_ALLOW, -1, a, 2, err)) < 0)
					return r;
			}
		/* AF_NETLINK only for NETLINK_ROUTE (any type: glibc's getaddrinfo/getifaddrs use SOCK_RAW). */
		struct sk_scmp_arg nl[2] = {
			{ 0, AF_NETLINK, 0, SK_CMP_EQ },
			{ 2, NETLINK_ROUTE, 0, SK_CMP_EQ },
		};
		if ((r = sk_scmp_profile_add_rule(p, "socket", SK_SCMP_ALLOW, -1, nl, 2, err)) < 0)
			return r;
	}

	/* setsockopt: everything but the multicast/anycast membership options (see sk_seccomp_add_setsockopt) */
	if (!in_argv(o->deny, o->n_deny, "setsockopt") && (r = sk_seccomp_add_setsockopt(p, err)) < 0)
		return r;

	/* personality: only the default persona and the query (0xffffffff); anything else would turn off
	 * ASLR (ADDR_NO_RANDOMIZE) or change the syscall ABI persona. EQ on 64 bits: no high-bit games. */
	if (!in_argv(o->deny, o->n_deny, "personality")) {
		static const uint64_t ok[] = { PER_LINUX, 0xffffffffu };
		for (size_t i = 0; i < SK_ARRAY_SIZE(ok); i++) {
			struct sk_scmp_arg a = { 0, ok[i], 0, SK_CMP_EQ };
			if ((r = sk_scmp_profile_add_rule(p, "personality", SK_SCMP_ALLOW, -1, &a, 1, err)) < 0)
				return r;
		}
	}

	/* ioctl without TIOCSTI (pushing input into the controlling terminal). The kernel reads cmd as a
	 * 32-bit int, so a plain 64-bit NE would let 0x100005412 through. "cmd's low 32 bits differ from
	 * TIOCSTI" is the OR, over each bit i < 32, of "bit i of cmd differs from bit i of TIOCSTI": one
	 * MASKED_EQ rule per bit (32 is the least such a cover can use). One condition per rule, so every
	 * runtime ORs them the same way. */
	if (!in_argv(o->deny, o->n_deny, "ioctl")) {
		for (unsigned bit = 0; bit < 32; bit++) {
			uint64_t m = (uint64_t)1 << bit;
			struct sk_scmp_arg a = { 1, m, ~(uint64_t)SK_TIOCSTI & m, SK_CMP_MASKED_EQ };
			if ((r = sk_scmp_profile_add_rule(p, "ioctl", SK_SCMP_ALLOW, -1, &a, 1, err)) < 0)
				return r;
		}
	}
	return 0;
}

static int check_user_name(const char *what, const char *name, const uint32_t *arches, size_t n,
			   struct sk_err *err)
{
	if (!*name)
		return sk_err_set(err, EINVAL, "seccomp: %s: empty syscall name", what);
	if (!resolves_on_any(name, arches, n)) {
		static const uint32_t all[] = { SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64, SCMP_ARCH_X86, SCMP_ARCH_ARM,
						SCMP_ARCH_X32, SCMP_ARCH_RISCV64, SCMP_ARCH_PPC64LE, SCMP_ARCH_S390X };
		bool known = resolves_on_any(name, all, SK_ARRAY_SIZE(all));
		return sk_err_set(err, EINVAL, "seccomp: %s %s: %s", what, name,
				  known ? "not a syscall on any selected architecture" : "unknown syscall");
	}
	return 0;
}

int sk_seccomp_generate(const struct sk_seccomp_opts *o, struct sk_scmp_profile **out, struct sk_err *err)
{
	static const uint32_t def_arches[] = { SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64 };
	static const struct sk_seccomp_opts none;
	int r;
	*out = NULL;
	if (!o)
		o = &none;
	const uint32_t *arches = o->n_arches ? o->arches : def_arches;
	size_t n_arches = o->n_arches ? o->n_arches : SK_ARRAY_SIZE(def_arches);

	for (size_t i = 0; i < o->n_allow; i++) {
		if ((r = check_user_name("allow", o->allow[i], arches, n_arches, err)) < 0)
			return r;
		if (sk_seccomp_is_never_allowed(o->allow[i]))
			return sk_err_set(err, EPERM, "seccomp: allow %s: never allowed for the agent (docs/architecture.md, seccomp)",
					  o->allow[i]);
		if (in_list(conditioned, o->allow[i]))
			return sk_err_set(err, EPERM,
					  "seccomp: allow %s: only allowed with stockade's argument filter, not outright",
					  o->allow[i]);
		if (in_argv(o->deny, o->n_deny, o->allow[i]))
			return sk_err_set(err, EINVAL, "seccomp: %s is both allowed and denied", o->allow[i]);
	}
	for (size_t i = 0; i < o->n_deny; i++)
		if ((r = check_user_name("deny", o->deny[i], arches, n_arches, err)) < 0)
			return r;

	struct sk_scmp_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return sk_err_sys(err, ENOMEM, "seccomp: generate");
	p->default_action = SK_SCMP_ERRNO;
	p->default_errno = EPERM;
	p->log_denials = o->log_denials;
	for (size_t i = 0; i < n_arches; i++)
		if ((r = sk_scmp_profile_add_arch(p, arches[i], err)) < 0)
			goto fail;
	for (size_t i = 0; default_allow[i]; i++)
		if ((r = add_allow(p, default_allow[i], o, err)) < 0)
			goto fail;
	for (size_t i = 0; i < o->n_allow; i++)
		if ((r = add_allow(p, o->allow[i], o, err)) < 0)
			goto fail;
	if ((r = add_conditioned(p, o, err)) < 0)
		goto fail;
	*out = p;
	return 0;
fail:
	sk_scmp_profile_free(p);
	return r;
}


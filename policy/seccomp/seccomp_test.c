/* policy/seccomp/seccomp_test.c — cmocka suite for the seccomp generator, its JSON, the diff and the libseccomp
 * translation (a forked child loads the generated profile and tries forbidden calls). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/seccomp/seccomp.h"
#include "policy/seccomp/apply.h"

static struct sk_scmp_profile *gen(const char *const *allow, size_t na, const char *const *deny, size_t nd)
{
	struct sk_seccomp_opts o = { .allow = allow, .n_allow = na, .deny = deny, .n_deny = nd };
	struct sk_scmp_profile *p = NULL;
	struct sk_err err = { 0 };
	int r = sk_seccomp_generate(&o, &p, &err);
	if (r < 0)
		fail_msg("generate: %s", err.msg);
	return p;
}

static bool arg_matches(const struct sk_scmp_arg *a, const uint64_t *args)
{
	uint64_t v = args[a->index];
	switch (a->op) {
	case SK_CMP_NE: return v != a->value;
	case SK_CMP_LT: return v < a->value;
	case SK_CMP_LE: return v <= a->value;
	case SK_CMP_EQ: return v == a->value;
	case SK_CMP_GE: return v >= a->value;
	case SK_CMP_GT: return v > a->value;
	case SK_CMP_MASKED_EQ: return (v & a->value) == a->value_two;
	}
	return false;
}

/* Reference evaluation of the profile for one call: true when some ALLOW rule matches. */
static bool allows(const struct sk_scmp_profile *p, const char *name, uint64_t a0, uint64_t a1, uint64_t a2)
{
	uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_scmp_rule *r = &p->rules[i];
		if (strcmp(r->name, name) != 0 || r->action != SK_SCMP_ALLOW)
			continue;
		bool all = true;
		for (size_t j = 0; j < r->n_args && all; j++)
			all = arg_matches(&r->args[j], args);
		if (all)
			return true;
	}
	return false;
}

static size_t count_rules(const struct sk_scmp_profile *p, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_rules; i++)
		n += !strcmp(p->rules[i].name, name);
	return n;
}

static void test_default_denies_with_eperm(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	assert_int_equal(p->default_action, SK_SCMP_ERRNO);
	assert_int_equal(p->default_errno, EPERM);
	assert_int_equal(p->n_arches, 2);
	assert_int_equal(p->arches[0], SCMP_ARCH_X86_64);
	assert_int_equal(p->arches[1], SCMP_ARCH_AARCH64);
	sk_scmp_profile_free(p);
}

static void test_every_forbidden_syscall_absent(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	const char *const *never = sk_seccomp_never_allowed();
	for (size_t i = 0; never[i]; i++)
		for (size_t j = 0; j < p->n_rules; j++)
			if (!strcmp(p->rules[j].name, never[i]))
				fail_msg("never-allowed %s has a rule", never[i]);
	/* the issue's list, spelled out so the table cannot silently shrink */
	static const char *const issue[] = { "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
		"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "keyctl", "add_key",
		"request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at",
		"name_to_handle_at", "swapon", "swapoff", "reboot", "acct", "quotactl", "settimeofday",
		"clock_settime", "adjtimex", "syslog", "lookup_dcookie", "vm86", NULL };
	for (size_t i = 0; issue[i]; i++) {
		assert_true(sk_seccomp_is_never_allowed(issue[i]));
		assert_int_equal(count_rules(p, issue[i]), 0);
	}
	sk_scmp_profile_free(p);
}

static void test_conditioned_syscalls_always_have_args(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	static const char *const cond[] = { "clone", "socket", "setsockopt", "ioctl", "personality" };
	for (size_t c = 0; c < SK_ARRAY_SIZE(cond); c++) {
		assert_true(count_rules(p, cond[c]) > 0);
		for (size_t i = 0; i < p->n_rules; i++)
			if (!strcmp(p->rules[i].name, cond[c]))
				assert_true(p->rules[i].n_args > 0);
	}
	sk_scmp_profile_free(p);
}

static void test_workload_essentials_allowed(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	static const char *const need[] = { "link", "getrandom", "vfork", "socketpair", "eventfd2",
		"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "rseq", "wait4", "exit", "exit_group",
		"execve", "futex", "mmap", "openat", "read", "write" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(need); i++)
		if (!allows(p, need[i], 0, 0, 0))
			fail_msg("%s not allowed", need[i]);
	sk_scmp_profile_free(p);
}

static void test_clone_without_namespace_flags(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
				CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	assert_true(allows(p, "clone", thread, 0, 0));
	assert_true(allows(p, "clone", SIGCHLD, 0, 0));
	static const uint64_t ns[] = { CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUTS,
				       CLONE_NEWIPC, CLONE_NEWCGROUP };
	for (size_t i = 0; i < SK_ARRAY_SIZE(ns); i++)
		assert_false(allows(p, "clone", SIGCHLD | ns[i], 0, 0));
	sk_scmp_profile_free(p);
}

static void test_clone3_fails_with_enosys(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	assert_int_equal(count_rules(p, "clone3"), 1);
	for (size_t i = 0; i < p->n_rules; i++)
		if (!strcmp(p->rules[i].name, "clone3")) {
			assert_int_equal(p->rules[i].action, SK_SCMP_ERRNO);
			assert_int_equal(p->rules[i].errno_ret, ENOSYS);
			assert_int_equal(p->rules[i].n_args, 0);
		}
	sk_scmp_profile_free(p);
}

static void test_socket_by_family_and_type(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	assert_true(allows(p, "socket", AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	assert_true(allows(p, "socket", AF_INET6, SOCK_DGRAM, 0));
	assert_true(allows(p, "socket", AF_UNIX, SOCK_SEQPACKET, 0));
	assert_true(allows(p, "socket", AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
	assert_false(allows(p, "socket", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT));
	assert_false(allows(p, "socket", AF_PACKET, SOCK_RAW, 0x300));
	assert_false(allows(p, "socket", AF_PACKET, SOCK_DGRAM, 0x300));
	assert_false(allows(p, "socket", AF_INET, SOCK_RAW, IPPROTO_ICMP));
	assert_false(allows(p, "socket", AF_INET6, SOCK_RAW, 58));
	assert_false(allows(p, "socket", AF_INET, SOCK_PACKET, 0));
	/* high garbage in the family does not alias AF_INET */
	assert_false(allows(p, "socket", 0x100000000ull | AF_INET, SOCK_STREAM, 0));
	sk_scmp_profile_free(p);
}

static void test_ioctl_without_tiocsti_in_32_bits(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	assert_true(allows(p, "ioctl", 0, TCGETS, 0));
	assert_true(allows(p, "ioctl", 0, TIOCGWINSZ, 0));
	assert_true(allows(p, "ioctl", 0, FIONREAD, 0));
	assert_true(allows(p, "ioctl", 0, 0x5413, 0));
	assert_false(allows(p, "ioctl", 0, TIOCSTI, 0));
	assert_false(allows(p, "ioctl", 0, 0x100005412ull, 0));
	assert_false(allows(p, "ioctl", 0, 0xffffffff00005412ull, 0));
	sk_scmp_profile_free(p);
}

static void test_personality_default_only(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	assert_true(allows(p, "personality", PER_LINUX, 0, 0));
	assert_true(allows(p, "personality", 0xffffffff, 0, 0));
	assert_false(allows(p, "personality", ADDR_NO_RANDOMIZE, 0, 0));
	assert_false(allows(p, "personality", PER_LINUX32, 0, 0));
	assert_false(allows(p, "personality", 0x100000000ull, 0, 0));
	sk_scmp_profile_free(p);
}

/* The multicast membership options that make the kernel send IGMP/MLD reports naming an
 * agent-chosen group, by level. */
static bool is_mcast_membership(uint32_t level, uint32_t opt)
{
	if (level == IPPROTO_IP)
		return opt >= IP_ADD_MEMBERSHIP && opt <= MCAST_MSFILTER;
	if (level == IPPROTO_IPV6)
		return opt == IPV6_ADD_MEMBERSHIP || opt == IPV6_DROP_MEMBERSHIP || opt == IPV6_JOIN_ANYCAST ||
		       opt == IPV6_LEAVE_ANYCAST || (opt >= MCAST_JOIN_GROUP && opt <= MCAST_MSFILTER);
	return false;
}

static void test_setsockopt_without_multicast_membership(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	/* the issue's list, by name */
	static const struct {
		uint64_t level, opt;
	} denied[] = {
		{ IPPROTO_IP, IP_ADD_MEMBERSHIP }, { IPPROTO_IP, IP_DROP_MEMBERSHIP },
		{ IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP }, { IPPROTO_IP, IP_BLOCK_SOURCE },
		{ IPPROTO_IP, IP_UNBLOCK_SOURCE }, { IPPROTO_IP, IP_MSFILTER }, { IPPROTO_IP, MCAST_JOIN_GROUP },
		{ IPPROTO_IP, MCAST_JOIN_SOURCE_GROUP }, { IPPROTO_IP, MCAST_MSFILTER },
		{ IPPROTO_IPV6, IPV6_JOIN_GROUP }, { IPPROTO_IPV6, IPV6_LEAVE_GROUP }, { IPPROTO_IPV6, IPV6_JOIN_ANYCAST },
		{ IPPROTO_IPV6, MCAST_JOIN_GROUP }, { IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP },
		{ IPPROTO_IPV6, MCAST_MSFILTER },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(denied); i++) {
		uint64_t l = denied[i].level, o = denied[i].opt;
		if (allows(p, "setsockopt", 3, l, o))
			fail_msg("setsockopt(level %" PRIu64 ", %" PRIu64 ") allowed", l, o);
		/* the kernel reads level and optname as int: high garbage must not hide them */
		assert_false(allows(p, "setsockopt", 3, l | 0x100000000ull, o));
		assert_false(allows(p, "setsockopt", 3, l, o | 0xffffffff00000000ull));
		assert_false(allows(p, "setsockopt", 3, l | 0x8000000000000000ull, o | 0x200000000ull));
	}
	static const struct {
		uint64_t level, opt;
	} allowed[] = {
		{ SOL_SOCKET, SO_REUSEADDR }, { SOL_SOCKET, SO_KEEPALIVE }, { SOL_SOCKET, SO_RCVBUF },
		{ IPPROTO_TCP, TCP_NODELAY }, { IPPROTO_TCP, TCP_KEEPIDLE }, { IPPROTO_IP, IP_TTL },
		{ IPPROTO_IP, IP_TOS }, { IPPROTO_IP, IP_RECVERR }, { IPPROTO_IP, IP_MTU_DISCOVER },
		{ IPPROTO_IP, IP_MULTICAST_TTL }, { IPPROTO_IP, IP_MULTICAST_LOOP }, { IPPROTO_IP, IP_PKTINFO },
		{ IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT }, { IPPROTO_IPV6, IPV6_V6ONLY },
		{ IPPROTO_IPV6, IPV6_RECVPKTINFO }, { IPPROTO_IPV6, IPV6_UNICAST_HOPS }, { IPPROTO_IPV6, IPV6_TCLASS },
		{ IPPROTO_IPV6, IPV6_RECVERR }, { IPPROTO_IPV6, IPV6_MULTICAST_HOPS },
		/* the same numbers at the other level are other options */
		{ IPPROTO_IPV6, IP_ADD_MEMBERSHIP }, { IPPROTO_IPV6, IP_MSFILTER }, { IPPROTO_IP, IPV6_JOIN_GROUP },
		{ IPPROTO_IP, IPV6_JOIN_ANYCAST }, { SOL_SOCKET, MCAST_JOIN_GROUP }, { IPPROTO_UDP, IP_ADD_MEMBERSHIP },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(allowed); i++)
		if (!allows(p, "setsockopt", 3, allowed[i].level, allowed[i].opt))
			fail_msg("setsockopt(level %" PRIu64 ", %" PRIu64 ") refused", allowed[i].level, allowed[i].opt);
	/* exhaustively over small levels and options, and with high bits set on either */
	static const uint64_t hi[] = { 0, 0x100000000ull, 0xffffffff00000000ull };
	for (uint32_t l = 0; l < 300; l++)
		for (uint32_t o = 0; o < 140; o++)
			for (size_t h = 0; h < SK_ARRAY_SIZE(hi); h++) {
				bool want = !is_mcast_membership(l, o);
				if (allows(p, "setsockopt", 3, l | hi[h], o) != want ||
				    allows(p, "setsockopt", 3, l, o | hi[h]) != want)
					fail_msg("setsockopt(level %u, %u, high %#" PRIx64 "): want %s", l, o, hi[h],
						 want ? "allow" : "deny");
			}
	/* large values: levels like SOL_TLS (282), SOL_ALG (279) and big option numbers stay allowed */
	static const uint64_t big[] = { 255, 263, 270, 279, 282, 0x7fffffff, 0x80000000, 0xffffffff,
					0xffffffffffffffffull };
	for (size_t i = 0; i < SK_ARRAY_SIZE(big); i++) {
		assert_true(allows(p, "setsockopt", 3, big[i], IP_ADD_MEMBERSHIP));
		assert_true(allows(p, "setsockopt", 3, IPPROTO_IP, big[i]));
		assert_true(allows(p, "setsockopt", 3, IPPROTO_IPV6, big[i]));
	}
	/* only ALLOW rules, all conditional: libseccomp lets an unconditional rule swallow the others */
	for (size_t i = 0; i < p->n_rules; i++)
		if (!strcmp(p->rules[i].name, "setsockopt")) {
			assert_int_equal(p->rules[i].action, SK_SCMP_ALLOW);
			assert_true(p->rules[i].n_args >= 1 && p->rules[i].n_args <= 2);
			for (size_t j = 0; j < p->rules[i].n_args; j++) {
				assert_int_equal(p->rules[i].args[j].op, SK_CMP_MASKED_EQ);
				assert_true(p->rules[i].args[j].value <= 0xffffffffu);
			}
		}
	/* and it cannot be allowed outright */
	struct sk_seccomp_opts o = { .allow = (const char *const[]){ "setsockopt" }, .n_allow = 1 };
	struct sk_scmp_profile *q = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_seccomp_generate(&o, &q, &err), -EPERM);
	assert_null(q);
	/* describe says what the cover means */
	char *d = sk_scmp_profile_describe(p, "setsockopt");
	assert_string_equal(d, "allow when !(arg1 & 0xffffffff == 0 && arg2 & 0xffffffff in {35-48}) && "
			       "!(arg1 & 0xffffffff == 41 && arg2 & 0xffffffff in {20-21,27-28,42-48}); else errno 1");
	free(d);
	sk_scmp_profile_free(p);
}

static bool rules_equal(const struct sk_scmp_rule *a, const struct sk_scmp_rule *b)
{
	if (strcmp(a->name, b->name) != 0 || a->action != b->action || a->errno_ret != b->errno_ret ||
	    a->n_args != b->n_args)
		return false;
	for (size_t i = 0; i < a->n_args; i++)
		if (a->args[i].index != b->args[i].index || a->args[i].op != b->args[i].op ||
		    a->args[i].value != b->args[i].value || a->args[i].value_two != b->args[i].value_two)
			return false;
	return true;
}

static void test_json_round_trip(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0), *q = NULL;
	char *json = sk_scmp_profile_to_json(p, &err);
	assert_non_null(json);
	assert_int_equal(sk_scmp_profile_parse("gen", json, strlen(json), &q, &err), 0);
	assert_int_equal(q->default_action, p->default_action);
	assert_int_equal(q->default_errno, p->default_errno);
	assert_int_equal(q->n_arches, p->n_arches);
	assert_memory_equal(q->arches, p->arches, p->n_arches * sizeof(*p->arches));
	assert_int_equal(q->n_rules, p->n_rules);
	/* same set: every rule of one has an equal rule in the other */
	for (size_t i = 0; i < p->n_rules; i++) {
		bool found = false;
		for (size_t j = 0; j < q->n_rules && !found; j++)
			found = rules_equal(&p->rules[i], &q->rules[j]);
		if (!found)
			fail_msg("rule %zu (%s) lost in the round trip", i, p->rules[i].name);
	}
	char *json2 = sk_scmp_profile_to_json(q, &err);
	assert_string_equal(json, json2);
	free(json);
	free(json2);
	sk_scmp_profile_free(p);
	sk_scmp_profile_free(q);
}

static void test_unknown_and_refused_names(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	const char *bad[] = { "no_such_syscall" };
	struct sk_seccomp_opts o = { .allow = bad, .n_allow = 1 };
	assert_int_equal(sk_seccomp_generate(&o, &p, &err), -EINVAL);
	assert_null(p);
	assert_string_equal(err.msg, "seccomp: allow no_such_syscall: unknown syscall");

	memset(&err, 0, sizeof(err));
	struct sk_seccomp_opts od = { .deny = bad, .n_deny = 1 };
	assert_int_equal(sk_seccomp_generate(&od, &p, &err), -EINVAL);
	assert_string_equal(err.msg, "seccomp: deny no_such_syscall: unknown syscall");

	const char *mnt[] = { "mount" };
	struct sk_seccomp_opts om = { .allow = mnt, .n_allow = 1 };
	assert_int_equal(sk_seccomp_generate(&om, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "never allowed"));

	const char *cl[] = { "clone" };
	struct sk_seccomp_opts oc = { .allow = cl, .n_allow = 1 };
	assert_int_equal(sk_seccomp_generate(&oc, &p, &err), -EPERM);
	assert_non_null(strstr(err.msg, "argument filter"));

	/* known on x86_64 but not on aarch64 */
	const char *op[] = { "open" };
	const uint32_t a64[] = { SCMP_ARCH_AARCH64 };
	struct sk_seccomp_opts oa = { .allow = op, .n_allow = 1, .arches = a64, .n_arches = 1 };
	assert_int_equal(sk_seccomp_generate(&oa, &p, &err), -EINVAL);
	assert_string_equal(err.msg, "seccomp: allow open: not a syscall on any selected architecture");
	assert_null(p);
}

static void test_aarch64_only_drops_x86_names(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	const uint32_t a64[] = { SCMP_ARCH_AARCH64 };
	struct sk_seccomp_opts o = { .arches = a64, .n_arches = 1 };
	assert_int_equal(sk_seccomp_generate(&o, &p, &err), 0);
	assert_int_equal(p->n_arches, 1);
	assert_int_equal(count_rules(p, "open"), 0);
	assert_int_equal(count_rules(p, "arch_prctl"), 0);
	assert_int_equal(count_rules(p, "openat"), 1);
	for (size_t i = 0; i < p->n_rules; i++)
		assert_true(seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, p->rules[i].name) >= 0);
	sk_scmp_profile_free(p);
}

static void test_allow_and_deny_extras(void **state)
{
	(void)state;
	const char *allow[] = { "fanotify_mark" };
	const char *deny[] = { "socketpair", "socket" };
	struct sk_scmp_profile *p = gen(allow, 1, deny, 2);
	assert_true(allows(p, "fanotify_mark", 0, 0, 0));
	assert_int_equal(count_rules(p, "socketpair"), 0);
	assert_int_equal(count_rules(p, "socket"), 0);
	sk_scmp_profile_free(p);

	struct sk_err err = { 0 };
	const char *both[] = { "fanotify_mark" };
	struct sk_seccomp_opts o = { .allow = both, .n_allow = 1, .deny = both, .n_deny = 1 };
	assert_int_equal(sk_seccomp_generate(&o, &p, &err), -EINVAL);
}

static void test_parse_docker_archmap_and_includes(void **state)
{
	(void)state;
	static const char doc[] =
		"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
		"\"archMap\":[{\"architecture\":\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"]},"
		"{\"architecture\":\"SCMP_ARCH_AARCH64\",\"subArchitectures\":[\"SCMP_ARCH_ARM\"]}],"
		"\"syscalls\":[{\"names\":[\"read\",\"write\"],\"action\":\"SCMP_ACT_ALLOW\"},"
		"{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}},"
		"{\"names\":[\"personality\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":8,\"op\":\"SCMP_CMP_EQ\"}]}]}";
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	assert_int_equal(sk_scmp_profile_parse("docker", doc, sizeof(doc) - 1, &p, &err), 0);
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		assert_int_equal(p->n_arches, 3);
		assert_int_equal(p->arches[1], SCMP_ARCH_X86);
	}
	assert_int_equal(count_rules(p, "mount"), 0);  /* needs a capability the agent lacks */
	assert_true(allows(p, "personality", 8, 0, 0));
	assert_true(allows(p, "read", 0, 0, 0));
	sk_scmp_profile_free(p);
}

static void test_parse_errors_name_the_place(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	static const char *const cases[][2] = {
		{ "{", "x: invalid JSON" },
		{ "{\"defaultAction\":\"SCMP_ACT_NOPE\"}", "x: unknown action \"SCMP_ACT_NOPE\"" },
		{ "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\","
		  "\"args\":[{\"index\":7,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
		  "x: syscalls[0].args[0]: index 7 out of range 0..5" },
		{ "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_VAX\"]}",
		  "x: unknown architecture SCMP_ARCH_VAX" },
		{ "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"action\":\"SCMP_ACT_ALLOW\"}]}",
		  "x: syscalls[0]: needs \"names\" (array) or \"name\"" },
		{ "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"flags\":[\"SECCOMP_FILTER_FLAG_LOGG\"]}", "x: \"flags\": expected" },
		{ "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"flags\":\"SECCOMP_FILTER_FLAG_LOG\"}",
		  "x: \"flags\" must be an array of strings" },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(cases); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(sk_scmp_profile_parse("x", cases[i][0], strlen(cases[i][0]), &p, &err), -EINVAL);
		assert_null(p);
		if (strncmp(err.msg, cases[i][1], strlen(cases[i][1])) != 0)
			fail_msg("case %zu: got '%s'", i, err.msg);
	}
}

/* SECCOMP_FILTER_FLAG_LOG: read from a profile, written back, off in what the generator makes (runc 1.1
 * refuses to start a container whose profile has "flags"); the runtimes' other flags are accepted. */
static void test_log_flag_round_trip(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	struct sk_scmp_profile *p = NULL;
	static const char with[] = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\","
				   "\"SECCOMP_FILTER_FLAG_LOG\"],\"syscalls\":[]}";
	assert_int_equal(sk_scmp_profile_parse("x", with, sizeof(with) - 1, &p, &err), 0);
	assert_true(p->log_denials);
	char *json = sk_scmp_profile_to_json(p, &err);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"flags\":\t[\"SECCOMP_FILTER_FLAG_LOG\"]"));
	free(json);
	sk_scmp_profile_free(p);
	static const char spec_only[] = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"]}";
	assert_int_equal(sk_scmp_profile_parse("x", spec_only, sizeof(spec_only) - 1, &p, &err), 0);
	assert_false(p->log_denials);
	sk_scmp_profile_free(p);
	p = gen(NULL, 0, NULL, 0);
	assert_false(p->log_denials);
	json = sk_scmp_profile_to_json(p, &err);
	assert_non_null(json);
	assert_null(strstr(json, "\"flags\""));
	free(json);
	sk_scmp_profile_free(p);
	/* asked for (stockade-policy seccomp --log-denials): the same rules, plus the flag */
	struct sk_seccomp_opts o = { .log_denials = true };
	struct sk_scmp_profile *q = gen(NULL, 0, NULL, 0);
	assert_int_equal(sk_seccomp_generate(&o, &p, &err), 0);
	assert_true(p->log_denials);
	assert_int_equal(p->n_rules, q->n_rules);
	json = sk_scmp_profile_to_json(p, &err);
	assert_non_null(strstr(json, "\"flags\":\t[\"SECCOMP_FILTER_FLAG_LOG\"]"));
	free(json);
	size_t n_diff = 1;
	char *d = sk_scmp_profile_diff(p, q, &n_diff, &err);
	assert_non_null(d);
	assert_int_equal(n_diff, 0);
	free(d);
	sk_scmp_profile_free(q);
	sk_scmp_profile_free(p);
}

static void test_diff_lists_both_sides(void **state)
{
	(void)state;
	const char *deny[] = { "link", "personality" };
	const char *allow[] = { "fanotify_mark" };
	struct sk_scmp_profile *a = gen(NULL, 0, NULL, 0), *b = gen(allow, 1, deny, 2);
	struct sk_err err = { 0 };
	size_t n = 0;
	char *d = sk_scmp_profile_diff(a, b, &n, &err);
	assert_non_null(d);
	assert_int_equal(n, 3);
	assert_non_null(strstr(d, "only A: link: allow\n"));
	assert_non_null(strstr(d, "only A: personality: allow when (arg0 == 0) || (arg0 == 0xffffffff); else errno 1\n"));
	assert_non_null(strstr(d, "only B: fanotify_mark: allow\n"));
	free(d);
	d = sk_scmp_profile_diff(a, a, &n, &err);
	assert_string_equal(d, "");
	assert_int_equal(n, 0);
	free(d);
	sk_scmp_profile_free(a);
	sk_scmp_profile_free(b);
}

/* The real filter: a child loads the generated profile and reports, bit by bit, which checks failed. */
static int child_checks(void)
{
	int bad = 0, fd;
	if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM)
		bad |= 1 << 0;
	if (syscall(SYS_clone3, NULL, 0) == 0 || errno != ENOSYS)
		bad |= 1 << 1;
	if (socket(AF_PACKET, SOCK_RAW, 0) >= 0 || errno != EPERM)
		bad |= 1 << 2;
	if (socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) >= 0 || errno != EPERM)
		bad |= 1 << 3;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		bad |= 1 << 4;
	else
		close(fd);
	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) < 0)
		bad |= 1 << 5;
	else
		close(fd);
	if (syscall(SYS_ioctl, 0, 0x100005412ul, "x") == 0 || errno != EPERM)
		bad |= 1 << 6;
	if (personality(ADDR_NO_RANDOMIZE) != -1 || errno != EPERM)
		bad |= 1 << 7;
	if (personality(0xffffffff) == -1)
		bad |= 1 << 8;
	if (syscall(SYS_bpf, 0, NULL, 0) == 0 || errno != EPERM)
		bad |= 1 << 9;
	if (getppid() <= 0)
		bad |= 1 << 10;
	/* multicast joins refused, other options kept */
	int u4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), u6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int t4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, ttl = 7;
	struct ip_mreqn mr = { .imr_multiaddr.s_addr = htonl(0xef534543) /* 239.83.69.67 */ };
	struct ipv6_mreq m6 = { .ipv6mr_multiaddr = { .s6_addr = { 0xff, 0x0e, 'S', 'E', 'C', 'R', 'E', 'T', '-',
								   'E', 'X', 'F', 'I', 'L', '!', '!' } } };
	if (setsockopt(u4, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) == 0 || errno != EPERM)
		bad |= 1 << 11;
	if (setsockopt(u6, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m6, sizeof(m6)) == 0 || errno != EPERM)
		bad |= 1 << 12;
	if (syscall(SYS_setsockopt, u4, 0x100000000ul | IPPROTO_IP, 0xff00000000ul | IP_ADD_MEMBERSHIP, &mr,
		    sizeof(mr)) == 0 || errno != EPERM)
		bad |= 1 << 13;
	if (setsockopt(u6, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) == 0 || errno != EPERM)
		bad |= 1 << 14;
	if (setsockopt(t4, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    setsockopt(t4, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
	    setsockopt(u4, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) != 0 ||
	    setsockopt(u6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0)
		bad |= 1 << 15;
	close(u4);
	close(u6);
	close(t4);
	return bad;
}

static void test_loaded_filter_blocks_and_allows(void **state)
{
	(void)state;
	/* the profile as a pod gets it: through its JSON */
	struct sk_scmp_profile *g = gen(NULL, 0, NULL, 0), *p = NULL;
	struct sk_err jerr = { 0 };
	char *json = sk_scmp_profile_to_json(g, &jerr);
	assert_non_null(json);
	assert_int_equal(sk_scmp_profile_parse("gen", json, strlen(json), &p, &jerr), 0);
	free(json);
	sk_scmp_profile_free(g);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sk_err err = { 0 };
		close(fds[0]);
		if (sk_seccomp_apply(p, &err) < 0)
			_exit(255);
		int bad = child_checks();
		/* the whole mask through a pipe: an exit status keeps only 8 bits */
		_exit(write(fds[1], &bad, sizeof(bad)) == sizeof(bad) ? 0 : 254);
	}
	close(fds[1]);
	int st = 0, bad = -1;
	assert_int_equal(read(fds[0], &bad, sizeof(bad)), sizeof(bad));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	if (bad)
		fail_msg("checks failed under the filter: mask %#x", bad);
	sk_scmp_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_denies_with_eperm),
		cmocka_unit_test(test_every_forbidden_syscall_absent),
		cmocka_unit_test(test_conditioned_syscalls_always_have_args),
		cmocka_unit_test(test_workload_essentials_allowed),
		cmocka_unit_test(test_clone_without_namespace_flags),
		cmocka_unit_test(test_clone3_fails_with_enosys),
		cmocka_unit_test(test_socket_by_family_and_type),
		cmocka_unit_test(test_ioctl_without_tiocsti_in_32_bits),
		cmocka_unit_test(test_personality_default_only),
		cmocka_unit_test(test_setsockopt_without_multicast_membership),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_unknown_and_refused_names),
		cmocka_unit_test(test_aarch64_only_drops_x86_names),
		cmocka_unit_test(test_allow_and_deny_extras),
		cmocka_unit_test(test_parse_docker_archmap_and_includes),
		cmocka_unit_test(test_parse_errors_name_the_place),
		cmocka_unit_test(test_log_flag_round_trip),
		cmocka_unit_test(test_diff_lists_both_sides),
		cmocka_unit_test(test_loaded_filter_blocks_and_allows),
	};
	return cmocka_run_group_tests_name("seccomp", tests, NULL, NULL);
}

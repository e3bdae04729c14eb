/* policy/seccomp_test.c — cmocka suite for the seccomp generator, its JSON, the diff and the libseccomp
 * translation (a forked child loads the generated profile and tries forbidden calls). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/seccomp.h"
#include "policy/seccomp_apply.h"

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
	static const char *const cond[] = { "clone", "socket", "ioctl", "personality" };
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
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(cases); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(sk_scmp_profile_parse("x", cases[i][0], strlen(cases[i][0]), &p, &err), -EINVAL);
		assert_null(p);
		if (strncmp(err.msg, cases[i][1], strlen(cases[i][1])) != 0)
			fail_msg("case %zu: got '%s'", i, err.msg);
	}
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
	return bad;
}

static void test_loaded_filter_blocks_and_allows(void **state)
{
	(void)state;
	struct sk_scmp_profile *p = gen(NULL, 0, NULL, 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sk_err err = { 0 };
		if (sk_seccomp_apply(p, &err) < 0)
			_exit(255);
		_exit(child_checks());
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st))
		fail_msg("checks failed under the filter: mask %#x", WEXITSTATUS(st));
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
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_unknown_and_refused_names),
		cmocka_unit_test(test_aarch64_only_drops_x86_names),
		cmocka_unit_test(test_allow_and_deny_extras),
		cmocka_unit_test(test_parse_docker_archmap_and_includes),
		cmocka_unit_test(test_parse_errors_name_the_place),
		cmocka_unit_test(test_diff_lists_both_sides),
		cmocka_unit_test(test_loaded_filter_blocks_and_allows),
	};
	return cmocka_run_group_tests_name("seccomp", tests, NULL, NULL);
}

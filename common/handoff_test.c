/* common/handoff_test.c — the privilege hand-off, run for real: the suite runs as root (make test), each
 * case forks and drops in the child (the drop is for good), and the child reports through its exit code
 * and a pipe. Proves the ids, groups, capability sets and no_new_privs after a hand-off, and that every
 * failure path returns before the program runs. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/handoff.h"

/* Runs fn in a child; the child writes its message (if any) into the pipe and exits with fn's result.
 * Returns the child's exit status; msg gets what it wrote. */
static int in_child(int (*fn)(int fd, void *arg), void *arg, char *msg, size_t msg_len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(fn(p[1], arg));   /* _exit: no atexit handlers (sanitizers' leak check) in the dropped child */
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < msg_len && (r = read(p[0], msg + got, msg_len - 1 - got)) > 0)
		got += (size_t)r;
	msg[got] = '\0';
	close(p[0]);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* The value of "Key:" in /proc/self/status, whitespace trimmed. */
static int status_field(const char *key, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[512];
	size_t kl = strlen(key);
	int rc = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			const char *v = line + kl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			(void)snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
			rc = 0;
			break;
		}
	}
	(void)fclose(f);
	return rc;
}

static int child_drop(int fd, void *arg)
{
	(void)arg;
	struct sk_err err = { 0 };
	bool bounding = false;
	if (sk_handoff_drop(1337, 1337, &bounding, &err) < 0) {
		say(fd, "drop: %s", err.msg);
		return 1;
	}
	/* Read back independently of the module: what /proc shows the node's operator. */
	static const struct { const char *key, *want; } f[] = {
		{ "Uid", "1337\t1337\t1337\t1337" }, { "Gid", "1337\t1337\t1337\t1337" }, { "Groups", "" },
		{ "CapInh", "0000000000000000" },   { "CapPrm", "0000000000000000" },   { "CapEff", "0000000000000000" },
		{ "CapBnd", "0000000000000000" },   { "CapAmb", "0000000000000000" },   { "NoNewPrivs", "1" },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		char v[256];
		if (status_field(f[i].key, v, sizeof(v)) < 0 || strcmp(v, f[i].want) != 0) {
			say(fd, "%s: \"%s\", want \"%s\"", f[i].key, v, f[i].want);
			return 2;
		}
	}
	if (!bounding) {
		say(fd, "root with CAP_SETPCAP: the bounding set should have been emptied");
		return 3;
	}
	/* and no way back */
	if (setresuid(0, 0, 0) == 0 || setgroups(0, NULL) == 0) {
		say(fd, "regained root");
		return 4;
	}
	if (sk_handoff_check(1337, 1337, true, &err) < 0) {
		say(fd, "check after drop: %s", err.msg);
		return 5;
	}
	return 0;
}

static void test_drop_to_1337_leaves_nothing(void **state)
{
	(void)state;
	char msg[1024];
	int rc = in_child(child_drop, NULL, msg, sizeof(msg));
	if (rc != 0)
		fail_msg("child %d: %s", rc, msg);
}

/* Without CAP_SETPCAP (a container given NET_ADMIN, SETUID, SETGID only) the bounding set stays, and
 * the hand-off still leaves no effective, permitted, inheritable or ambient capability. */
static int child_drop_without_setpcap(int fd, void *arg)
{
	(void)arg;
	if (prctl(PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0) < 0) {
		say(fd, "setup: drop CAP_SETPCAP from the bounding set: %s", strerror(errno));
		return 10;
	}
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0) {
		say(fd, "setup: capget: %s", strerror(errno));
		return 10;
	}
	d[0].effective &= ~CAP_TO_MASK(CAP_SETPCAP);
	d[0].permitted &= ~CAP_TO_MASK(CAP_SETPCAP);
	if (syscall(SYS_capset, &h, d) < 0) {
		say(fd, "setup: capset: %s", strerror(errno));
		return 10;
	}
	struct sk_err err = { 0 };
	bool bounding = true;
	if (sk_handoff_drop(1337, 1337, &bounding, &err) < 0) {
		say(fd, "drop: %s", err.msg);
		return 1;
	}
	char eff[64], prm[64], bnd[64];
	if (status_field("CapEff", eff, sizeof(eff)) < 0 || status_field("CapPrm", prm, sizeof(prm)) < 0 ||
	    status_field("CapBnd", bnd, sizeof(bnd)) < 0) {
		say(fd, "read /proc/self/status");
		return 2;
	}
	if (bounding || strcmp(eff, "0000000000000000") || strcmp(prm, "0000000000000000") ||
	    !strcmp(bnd, "0000000000000000")) {
		say(fd, "bounding_dropped %d, CapEff %s, CapPrm %s, CapBnd %s", bounding, eff, prm, bnd);
		return 3;
	}
	return 0;
}

static void test_drop_without_setpcap_keeps_bounding_set_only(void **state)
{
	(void)state;
	char msg[1024];
	int rc = in_child(child_drop_without_setpcap, NULL, msg, sizeof(msg));
	if (rc != 0)
		fail_msg("child %d: %s", rc, msg);
}

struct exec_case {
	const char *marker;   /* the program creates this file if it runs */
	uid_t first_uid;      /* 0: stay root before the hand-off; else drop to it first */
	uid_t uid;
	const char *prog;
	const char *want;     /* in the error message */
};

static int child_exec(int fd, void *arg)
{
	const struct exec_case *c = arg;
	struct sk_err err = { 0 };
	if (c->first_uid && sk_handoff_drop(c->first_uid, c->first_uid, NULL, &err) < 0) {
		say(fd, "setup: drop: %s", err.msg);
		return 10;
	}
	char script[512];
	(void)snprintf(script, sizeof(script), "echo ran > %s", c->marker);
	char *const argv[] = { (char *)c->prog, (char *)"-c", script, NULL };
	int rc = sk_handoff_exec(c->uid, c->uid, argv, &err);
	say(fd, "%s", err.msg);
	return rc < 0 ? 0 : 1;
}

static void run_exec_case(const struct exec_case *c)
{
	char msg[1024];
	(void)unlink(c->marker);
	int rc = in_child(child_exec, (void *)c, msg, sizeof(msg));
	if (rc != 0)
		fail_msg("child %d: %s", rc, msg);
	if (!strstr(msg, c->want))
		fail_msg("error \"%s\" does not say \"%s\"", msg, c->want);
	struct stat st;
	assert_int_equal(stat(c->marker, &st), -1);   /* the program never ran */
}

/* A process that is no longer root cannot hand off to another uid: setgroups fails, nothing runs. */
static void test_failed_drop_does_not_exec(void **state)
{
	(void)state;
	struct exec_case c = { "/tmp/sk-handoff-test-ran-1", 1337, 1338, "/bin/sh", "hand-off: setgroups (none): " };
	run_exec_case(&c);
}

static void test_uid_0_refused_before_anything(void **state)
{
	(void)state;
	struct exec_case c = { "/tmp/sk-handoff-test-ran-2", 0, 0, "/bin/sh", "refusing uid 0" };
	run_exec_case(&c);
}

/* The exec itself failing after a good drop: an error, and the process left is unprivileged. */
static void test_missing_program_is_an_error(void **state)
{
	(void)state;
	struct exec_case c = { "/tmp/sk-handoff-test-ran-3", 0, 1337, "/nonexistent/sh",
			       "hand-off: exec /nonexistent/sh (as 1337:1337): No such file or directory" };
	run_exec_case(&c);
}

/* A successful hand-off runs the program as the target, with what /proc then shows. */
static void test_exec_runs_program_unprivileged(void **state)
{
	(void)state;
	char dir[] = "/tmp/sk-handoff-XXXXXX", out[64];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	(void)snprintf(out, sizeof(out), "%s/status", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char script[256];
		(void)snprintf(script, sizeof(script),
			"grep -E '^(Uid|Gid|CapEff|CapPrm|CapInh|CapAmb|NoNewPrivs):' /proc/self/status > %s", out);
		char *const argv[] = { (char *)"sh", (char *)"-c", script, NULL };
		struct sk_err err = { 0 };
		if (sk_handoff_exec(1337, 1337, argv, &err) < 0)
			(void)fprintf(stderr, "%s\n", err.msg);
		_exit(99);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char buf[1024] = { 0 };
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, "Uid:\t1337\t1337\t1337\t1337\nGid:\t1337\t1337\t1337\t1337\n"
				 "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
				 "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\n");
	(void)unlink(out);
	(void)rmdir(dir);
}

/* Root itself fails the check: it names what is left. */
static void test_check_names_what_is_left(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	assert_int_equal(sk_handoff_check(0, 0, false, &err), -EPERM);
	assert_non_null(strstr(err.msg, "hand-off check: "));
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_handoff_check(1337, 1337, false, &err), -EPERM);
	assert_non_null(strstr(err.msg, "uids are 0/0/0 (real/effective/saved), not 1337"));
}

static void test_parse(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	uid_t u = 0;
	gid_t g = 0;
	assert_int_equal(sk_handoff_parse("1337:1338", &u, &g, &err), 0);
	assert_int_equal(u, 1337);
	assert_int_equal(g, 1338);
	assert_int_equal(sk_handoff_parse("1:0", &u, &g, &err), 0);   /* gid 0 is the admin's choice */
	assert_int_equal(g, 0);
	static const char *const bad[] = { "", "1337", "1337:", ":1337", "a:1", "1:b", "1:2:3", "-1:1", "1: 2",
					   "4294967295:1", "1:4294967295", "99999999999:1", " 1:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		if (sk_handoff_parse(bad[i], &u, &g, &err) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i]);
		assert_non_null(strstr(err.msg, "expected UID:GID"));
	}
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_handoff_parse("0:1337", &u, &g, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "refusing uid 0"));
}

int main(void)
{
	if (geteuid() != 0) {
		(void)fprintf(stderr, "handoff_test: needs root (the hand-off is exercised for real)\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_check_names_what_is_left),
		cmocka_unit_test(test_drop_to_1337_leaves_nothing),
		cmocka_unit_test(test_drop_without_setpcap_keeps_bounding_set_only),
		cmocka_unit_test(test_failed_drop_does_not_exec),
		cmocka_unit_test(test_uid_0_refused_before_anything),
		cmocka_unit_test(test_missing_program_is_an_error),
		cmocka_unit_test(test_exec_runs_program_unprivileged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

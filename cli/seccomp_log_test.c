/* cli/seccomp_log_test.c — the seccomp-log reader over a file source and a fake /proc: a refusal of a
 * process still in its pod's cgroup carries pod_uid and container_id; a PID reused by a process started
 * after the record gets none; --pods-only keeps only pod lines; other lines are skipped, an unreadable
 * seccomp record is counted and never printed; a last line without its newline is read; --from-end skips
 * what the file held; a missing source fails naming it; --follow across a split line and a rotation. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/seccomp_log.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	assert_true(snprintf(path, sizeof(path), "%s/%s", dir, rel) < (int)sizeof(path));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void mk(const char *rel)
{
	char path[256];
	assert_true(snprintf(path, sizeof(path), "%s/%s", dir, rel) < (int)sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
}

/* pid 42: in a pod, started at btime 1000 + 500 ticks / HZ, well before the records (stamp 2000000000);
 * pid 43: in a pod, started after the records (its PID was reused); pid 44: a host process */
static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/sk-scmplog-XXXXXX");
	assert_non_null(mkdtemp(dir));
	mk("proc");
	mk("proc/42");
	mk("proc/43");
	mk("proc/44");
	put("proc/stat", "cpu  1 2 3\nbtime 1000\nprocesses 9\n");
	static const char cg[] = "0::/kubepods.slice/kubepods-besteffort.slice/"
				 "kubepods-besteffort-pod3a0b1c2d_4e5f_6789_abcd_ef0123456789.slice/"
				 "cri-containerd-abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope\n";
	put("proc/42/cgroup", cg);
	put("proc/43/cgroup", cg);
	put("proc/44/cgroup", "0::/system.slice/ssh.service\n");
	/* comm ") x (" tries to shift the fields; starttime is field 22 counted from the last ')' */
	put("proc/42/stat", "42 (a) x () S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 1000 10\n");
	put("proc/43/stat", "43 (b) S 1 43 43 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 999999999999 1000 10\n");
	put("proc/44/stat", "44 (c) S 1 44 44 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 1000 10\n");
	return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
	return 0;
}

#define REC(pid, comm) "audit: type=1326 audit(2000000000.5:7): pid=" #pid " uid=1000 comm=\"" comm \
	"\" exe=\"/bin/x\" sig=0 arch=c000003e syscall=272 compat=0 ip=0x1 code=0x50000"

static char *run(const char *log, bool pods_only, bool from_end, struct sk_scmp_log_stats *st, int *rc)
{
	put("log", log);
	char src[128], proc[128];
	assert_true(snprintf(src, sizeof(src), "%s/log", dir) < (int)sizeof(src));
	assert_true(snprintf(proc, sizeof(proc), "%s/proc", dir) < (int)sizeof(proc));
	struct sk_scmp_log_opts o = { .source = src, .proc = proc, .node = "node-1", .pods_only = pods_only,
				      .from_end = from_end };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	struct sk_err err = { 0 };
	*rc = sk_scmp_log_run(&o, out, st, &err);
	assert_int_equal(fclose(out), 0);
	return text;
}

static void test_pods_and_reuse(void **state)
{
	(void)state;
	struct sk_scmp_log_stats st;
	int rc;
	char *out = run("6,1,2,-;eth0: link up\n" REC(42, "agent") "\n" REC(43, "reused") "\n" REC(44, "sshd") "\n"
			REC(45, "gone") "\n" "audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" syscall=1 code=0x0\n"
			REC(42, "last"), false, false, &st, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(st.printed, 5);
	assert_int_equal(st.bad, 1);
	char *l1 = out, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1, *l4 = strchr(l3, '\n') + 1;
	char *l5 = strchr(l4, '\n') + 1;
	assert_true(!strncmp(l1, "{\"kind\":\"seccomp\",\"stamp\":\"2000000000.5:7\",\"pid\":42,\"uid\":1000,\"comm\":\"agent\","
			     "\"exe\":\"/bin/x\",\"arch\":\"x86_64\",\"syscall\":\"unshare\",\"syscall_nr\":272,"
			     "\"compat\":false,\"action\":\"errno\",\"code\":\"0x50000\",\"sig\":0,"
			     "\"pod_uid\":\"3a0b1c2d-4e5f-6789-abcd-ef0123456789\",\"container_id\":"
			     "\"abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789\",\"node\":\"node-1\"}\n",
			     (size_t)(l2 - l1)));
	assert_non_null(strstr(l2, "\"comm\":\"reused\""));
	assert_null(memmem(l2, (size_t)(l3 - l2), "pod_uid", 7));
	assert_null(memmem(l3, (size_t)(l4 - l3), "pod_uid", 7));
	assert_null(memmem(l4, (size_t)(l5 - l4), "pod_uid", 7));
	assert_non_null(strstr(l5, "\"comm\":\"last\""));
	assert_non_null(strstr(l5, "\"pod_uid\":\"3a0b1c2d-4e5f-6789-abcd-ef0123456789\""));
	free(out);

	out = run(REC(42, "agent") "\n" REC(43, "reused") "\n" REC(44, "sshd") "\n", true, false, &st, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(st.printed, 1);
	assert_non_null(strstr(out, "\"comm\":\"agent\""));
	assert_null(strstr(out, "sshd"));
	free(out);
}

static void test_from_end_and_errors(void **state)
{
	(void)state;
	struct sk_scmp_log_stats st;
	int rc;
	char *out = run(REC(42, "old") "\n", false, true, &st, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(st.printed, 0);
	assert_string_equal(out, "");
	free(out);

	struct sk_scmp_log_opts o = { .source = "/nonexistent/audit.log", .proc = "/proc" };
	struct sk_err err = { 0 };
	FILE *f = fopen("/dev/null", "w");
	assert_int_equal(sk_scmp_log_run(&o, f, &st, &err), -ENOENT);
	assert_string_equal(err.msg, "seccomp-log: open /nonexistent/audit.log: No such file or directory");
	o.source = dir;
	assert_int_equal(sk_scmp_log_run(&o, f, &st, &err), -EISDIR);
	assert_int_equal(fclose(f), 0);
}

struct follower {
	struct sk_scmp_log_opts o;
	FILE *out;
	struct sk_scmp_log_stats st;
	int rc;
};

static void *follow(void *arg)
{
	struct follower *f = arg;
	struct sk_err err = { 0 };
	f->rc = sk_scmp_log_run(&f->o, f->out, &f->st, &err);
	return NULL;
}

static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* waits until the follower has printed n lines (at most 5 s) */
static void wait_printed(const struct follower *f, unsigned long n)
{
	for (int i = 0; i < 500 && __atomic_load_n(&f->st.printed, __ATOMIC_SEQ_CST) < n; i++) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* --follow on a file: --from-end skips what is there, a line appended is read, a line written in two
 * pieces is read once whole, and after auditd's rotation (the file renamed, a new one at the path) the new
 * file is read from its start; SIGTERM's flag stops it. */
static void test_follow_rotation(void **state)
{
	(void)state;
	static volatile sig_atomic_t stop;
	char src[128], proc[128], old[140];
	assert_true(snprintf(src, sizeof(src), "%s/audit.log", dir) < (int)sizeof(src));
	assert_true(snprintf(old, sizeof(old), "%s.1", src) < (int)sizeof(old));
	assert_true(snprintf(proc, sizeof(proc), "%s/proc", dir) < (int)sizeof(proc));
	put("audit.log", REC(44, "before") "\n");
	char *text = NULL;
	size_t len = 0;
	struct follower f = { .o = { .source = src, .proc = proc, .follow = true, .from_end = true, .stop = &stop } };
	f.out = open_memstream(&text, &len);
	assert_non_null(f.out);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, follow, &f), 0);
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);   /* opened and at the end */
	append(src, REC(44, "one") "\n");
	wait_printed(&f, 1);
	append(src, "type=SECCOMP msg=audit(2000000000.5:8): pid=44 comm=\"tw");
	nanosleep(&ts, NULL);   /* half a line stays pending */
	append(src, "o\" arch=c000003e syscall=1 code=0x50000\n");
	wait_printed(&f, 2);
	assert_int_equal(rename(src, old), 0);
	put("audit.log", REC(44, "three") "\n");
	wait_printed(&f, 3);
	stop = 1;
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(fclose(f.out), 0);
	assert_int_equal(f.rc, 0);
	assert_int_equal(f.st.printed, 3);
	assert_null(strstr(text, "before"));
	char *a = strstr(text, "\"comm\":\"one\""), *b = strstr(text, "\"comm\":\"two\""), *c = strstr(text, "\"comm\":\"three\"");
	assert_true(a && b && c && a < b && b < c);
	free(text);
	assert_int_equal(remove(old), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pods_and_reuse),
		cmocka_unit_test(test_from_end_and_errors),
		cmocka_unit_test(test_follow_rotation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

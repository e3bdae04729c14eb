/* common/marker_test.c — the marker format both the init (writer) and the sidecar (reader) rely on, and
 * the atomic replacement under it. */
#include <dirent.h>
#include <errno.h>
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

#include "common/atomic_file.h"
#include "common/marker.h"

static void test_marker_roundtrip(void **state)
{
	(void)state;
	char dir[] = "/tmp/sk-marker-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/ready", dir);
	struct sk_marker m = { .hash = "0123456789abcdef", .time = 1700000000, .rules = 21, .sets = 5,
			       .elements = 7, .version = "v-test" };
	struct sk_err err = { 0 };
	assert_int_equal(sk_marker_write(path, &m, &err), 0);

	char buf[256] = { 0 };
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	(void)fclose(fp);
	buf[n] = '\0';
	assert_string_equal(buf, "hash=0123456789abcdef\ntime=1700000000\nrules=21\nsets=5\nelements=7\nversion=v-test\n");

	struct sk_marker r;
	assert_int_equal(sk_marker_read(path, &r, &err), 0);
	assert_string_equal(r.hash, m.hash);
	assert_int_equal(r.time, m.time);
	assert_int_equal(r.rules, 21);
	assert_int_equal(r.elements, 7);
	assert_string_equal(r.version, "v-test");

	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_true(fputs("time=1\nhash=0123456789abcdef\n", fp) >= 0);
	assert_int_equal(fclose(fp), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_marker_read(path, &r, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "first line is not hash=<16 hex digits>"));

	struct sk_marker bad = m;
	(void)snprintf(bad.hash, sizeof(bad.hash), "XYZ");
	assert_int_equal(sk_marker_write(path, &bad, &err), -EINVAL);
	unlink(path);
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_marker_read(path, &r, &err), -ENOENT);
	rmdir(dir);
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
}

/* What the sidecar's readiness gets from markers that are not the init's: never a hash. */
static void test_marker_read_refuses_what_the_init_did_not_write(void **state)
{
	(void)state;
	char dir[] = "/tmp/sk-marker-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/ready", dir);
	static const char *const bad[] = {
		"",                                     /* empty */
		"hash=0123456789abcde\n",               /* 15 digits */
		"hash=0123456789abcdef0\n",             /* 17 digits */
		"hash=0123456789ABCDEF\n",              /* upper case */
		"hashx=0123456789abcdef\n",
		" hash=0123456789abcdef\n",
		"\nhash=0123456789abcdef\n",            /* not first */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_text(path, bad[i]);
		struct sk_marker r;
		struct sk_err err = { 0 };
		assert_int_equal(sk_marker_read(path, &r, &err), -EINVAL);
		assert_string_equal(r.hash, "");
	}
	/* unknown keys and a missing trailing newline are fine */
	write_text(path, "hash=0123456789abcdef\nfuture=1\nrules=3");
	struct sk_marker r;
	struct sk_err err = { 0 };
	assert_int_equal(sk_marker_read(path, &r, &err), 0);
	assert_string_equal(r.hash, "0123456789abcdef");
	assert_int_equal(r.rules, 3);
	unlink(path);
	rmdir(dir);
}

static int entries_in(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	for (const struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void test_atomic_write_replaces_whole_and_leaves_no_temporary(void **state)
{
	(void)state;
	char dir[] = "/tmp/sk-atomic-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/profile.json", dir);
	write_text(path, "old");
	struct sk_err err = { 0 };
	assert_int_equal(sk_atomic_write(path, "new contents", 12, 0640, &err), 0);
	char buf[32] = { 0 };
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	assert_int_equal(fread(buf, 1, sizeof(buf) - 1, fp), 12);
	(void)fclose(fp);
	assert_string_equal(buf, "new contents");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	/* one file in the directory: no temporary left */
	assert_int_equal(entries_in(dir), 1);

	/* a target that cannot be replaced (a directory): fails naming the step, old state kept, no temporary */
	char sub[80];
	(void)snprintf(sub, sizeof(sub), "%s/adir", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	memset(&err, 0, sizeof(err));
	assert_true(sk_atomic_write(sub, "x", 1, 0644, &err) < 0);
	assert_non_null(strstr(err.msg, "rename"));
	assert_int_equal(entries_in(dir), 2);
	/* a directory that does not exist: fails at create */
	char nodir[96];
	(void)snprintf(nodir, sizeof(nodir), "%s/missing/f", dir);
	memset(&err, 0, sizeof(err));
	assert_int_equal(sk_atomic_write(nodir, "x", 1, 0644, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "create"));
	rmdir(sub);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marker_roundtrip),
		cmocka_unit_test(test_marker_read_refuses_what_the_init_did_not_write),
		cmocka_unit_test(test_atomic_write_replaces_whole_and_leaves_no_temporary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

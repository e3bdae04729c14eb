/* common/read_file_test.c — a file read whole and NUL-terminated (empty, bigger than one read, exactly at
 * the cap), one byte over the cap refused with EFBIG, a directory with EISDIR, a missing file naming the
 * path and errno, standard input as "-". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/read_file.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	(void)snprintf(dir, sizeof(dir), "/tmp/sk-read-file-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	static const char *const made[] = { "f", "big", "in" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		char path[128];
		(void)snprintf(path, sizeof(path), "%s/%s", dir, made[i]);
		(void)unlink(path);   /* a test that failed early made fewer */
	}
	return rmdir(dir);
}

/* Writes n bytes of a repeating pattern to dir/name; returns the path (static). */
static const char *make(const char *name, size_t n)
{
	static char path[128];
	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(fputc('a' + (int)(i % 26), f), EOF);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_reads_whole(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 65535, 65536, 65537, 200000 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		const char *p = make("f", sizes[k]);
		struct sk_err err = { 0 };
		size_t len = 99;
		char *s = sk_read_file(p, 200000, &len, &err);
		assert_non_null(s);
		assert_int_equal(len, sizes[k]);
		assert_int_equal(s[len], 0);
		for (size_t i = 0; i < len; i++)
			if (s[i] != 'a' + (int)(i % 26))
				fail_msg("size %zu: byte %zu differs", sizes[k], i);
		assert_int_equal(err.code, 0);
		free(s);
	}
}

static void test_over_the_cap(void **state)
{
	(void)state;
	static const size_t caps[] = { 0, 10, 65536, 100000 };
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		const char *p = make("big", caps[k] + 1);
		struct sk_err err = { 0 };
		size_t len = 0;
		assert_null(sk_read_file(p, caps[k], &len, &err));
		assert_int_equal(err.code, EFBIG);
		char want[256];
		(void)snprintf(want, sizeof(want), "%s: larger than %zu bytes", p, caps[k]);
		assert_string_equal(err.msg, want);
	}
}

static void test_directory_and_missing(void **state)
{
	(void)state;
	struct sk_err err = { 0 };
	size_t len;
	assert_null(sk_read_file(dir, 100, &len, &err));
	assert_int_equal(err.code, EISDIR);
	char path[128], want[256];
	(void)snprintf(path, sizeof(path), "%s/none", dir);
	assert_null(sk_read_file(path, 100, &len, &err));
	assert_int_equal(err.code, ENOENT);
	(void)snprintf(want, sizeof(want), "read %s: No such file or directory", path);
	assert_string_equal(err.msg, want);
}

static void test_stdin(void **state)
{
	(void)state;
	const char *p = make("in", 70000);
	int saved = dup(STDIN_FILENO);
	assert_true(saved >= 0);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, STDIN_FILENO), STDIN_FILENO);
	close(fd);
	struct sk_err err = { 0 };
	size_t len = 0;
	char *s = sk_read_file("-", 70000, &len, &err);
	assert_non_null(s);
	assert_int_equal(len, 70000);
	free(s);
	/* stdin stays open (only a copy was closed): at its end now */
	char c;
	assert_int_equal(read(STDIN_FILENO, &c, 1), 0);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_whole),
		cmocka_unit_test(test_over_the_cap),
		cmocka_unit_test(test_directory_and_missing),
		cmocka_unit_test(test_stdin),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

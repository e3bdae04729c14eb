/* sidecar/core/procstat_test.c — the /proc/self/stat parser on fixed lines (a command name with spaces and
 * parentheses, a short line), and the live reading of this very process. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/core/procstat.h"

/* pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
 * priority nice threads itrealvalue starttime vsize rss ... */
static const char line[] = "4242 (stockade) sidecar) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 "
			   "250 150 7 3 20 0 1 0 12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 "
			   "0 0 0\n";

static void test_parse_stat_counts_fields_after_the_last_paren(void **state)
{
	(void)state;
	struct sk_procstat ps = { 0 };
	struct sk_err err = { 0 };
	assert_int_equal(sk_procstat_parse_stat(line, 100, 4096, 1700000000, &ps, &err), 0);
	assert_true(ps.cpu_seconds > 3.999 && ps.cpu_seconds < 4.001);        /* (250 + 150) / 100: not cutime */
	assert_int_equal(ps.virtual_bytes, 104857600);
	assert_int_equal(ps.resident_bytes, 2560ULL * 4096);
	assert_true(ps.start_time_seconds > 1700000123.449 && ps.start_time_seconds < 1700000123.451);
}

static void test_parse_stat_rejects_short_or_garbled_lines(void **state)
{
	(void)state;
	struct sk_procstat ps = { 0 };
	struct sk_err err = { 0 };
	assert_int_equal(sk_procstat_parse_stat("4242 stockade S 1 2 3", 100, 4096, 0, &ps, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no ')'"));
	err = (struct sk_err){ 0 };
	assert_int_equal(sk_procstat_parse_stat("1 (x) S 1 2 3 4 5\n", 100, 4096, 0, &ps, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "expected at least 24"));
	err = (struct sk_err){ 0 };
	assert_int_equal(sk_procstat_parse_stat("1 (x) S 1 2 3 4 5 6 7 8 9 10 zz 12\n", 100, 4096, 0, &ps, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "field 14 is not a number"));
}

static void test_parse_btime(void **state)
{
	(void)state;
	uint64_t b = 0;
	struct sk_err err = { 0 };
	assert_int_equal(sk_procstat_parse_btime("cpu  1 2 3\nintr 5\nbtime 1699999000\nprocesses 9\n", &b, &err), 0);
	assert_int_equal(b, 1699999000);
	assert_int_equal(sk_procstat_parse_btime("cpu 1\nxbtime 5\n", &b, &err), -EINVAL);
}

/* This test process, read live: figures a scrape can trust (started within the last day and not in the
 * future, some memory, the fds cmocka and the runtime hold, the limit above them). */
static void test_read_self(void **state)
{
	(void)state;
	struct sk_procstat ps = { 0 };
	struct sk_err err = { 0 };
	assert_int_equal(sk_procstat_read(&ps, &err), 0);
	double now = (double)time(NULL);
	assert_true(ps.start_time_seconds <= now + 1 && ps.start_time_seconds > now - 86400);
	assert_true(ps.resident_bytes > 0 && ps.virtual_bytes >= ps.resident_bytes);
	assert_true(ps.cpu_seconds >= 0);
	assert_true(ps.open_fds >= 3);
	assert_true(ps.max_fds >= ps.open_fds);
	/* One more open fd is seen as one more. */
	uint64_t before = ps.open_fds;
	int fd = dup(0);
	assert_true(fd >= 0);
	assert_int_equal(sk_procstat_read(&ps, &err), 0);
	assert_int_equal(ps.open_fds, before + 1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stat_counts_fields_after_the_last_paren),
		cmocka_unit_test(test_parse_stat_rejects_short_or_garbled_lines),
		cmocka_unit_test(test_parse_btime),
		cmocka_unit_test(test_read_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

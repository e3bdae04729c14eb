/* sidecar/core/procstat.c — see procstat.h. */
#include "sidecar/core/procstat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/util.h"

/* Field numbers of proc_pid_stat(5), counting pid as 1. */
enum { F_UTIME = 14, F_STIME = 15, F_STARTTIME = 22, F_VSIZE = 23, F_RSS = 24 };

int sk_procstat_parse_stat(const char *text, long clk_tck, long page, uint64_t boot_time, struct sk_procstat *out,
			   struct sk_err *err)
{
	const char *p = strrchr(text, ')');
	if (!p || clk_tck <= 0 || page <= 0)
		return sk_err_set(err, EINVAL, "/proc/self/stat: no ')' after the command name");
	p++;
	unsigned long long v[F_RSS + 1] = { 0 };
	/* After the comm: field 3 (state) is a letter, the rest numbers. */
	int field = 3;
	while (*p && field <= F_RSS) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (field == 3) {
			p++;
		} else {
			char *end;
			errno = 0;
			long long n = strtoll(p, &end, 10);
			if (end == p || errno)
				return sk_err_set(err, EINVAL, "/proc/self/stat: field %d is not a number", field);
			v[field] = (unsigned long long)(n < 0 ? 0 : n);
			p = end;
		}
		field++;
	}
	if (field <= F_RSS)
		return sk_err_set(err, EINVAL, "/proc/self/stat: %d fields, expected at least %d", field - 1, F_RSS);
	out->cpu_seconds = (double)(v[F_UTIME] + v[F_STIME]) / (double)clk_tck;
	out->virtual_bytes = v[F_VSIZE];
	out->resident_bytes = v[F_RSS] * (unsigned long long)page;
	out->start_time_seconds = (double)boot_time + (double)v[F_STARTTIME] / (double)clk_tck;
	return 0;
}

int sk_procstat_parse_btime(const char *text, uint64_t *out, struct sk_err *err)
{
	const char *l = text;
	while (l && *l) {
		unsigned long long b;
		if (strncmp(l, "btime ", 6) == 0 && sscanf(l + 6, "%llu", &b) == 1) {
			*out = b;
			return 0;
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return sk_err_set(err, EINVAL, "/proc/stat: no btime line");
}

/* The whole (small) file into buf, NUL-terminated. */
static int slurp(const char *path, char *buf, size_t cap, struct sk_err *err)
{
	buf[0] = '\0';
	sk_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sk_err_sys(err, errno, "open %s", path);
	size_t n = 0;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sk_err_sys(err, errno, "read %s", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return 0;
}

static int count_fds(uint64_t *out, struct sk_err *err)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return sk_err_sys(err, errno, "open /proc/self/fd");
	uint64_t n = 0;
	const struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	/* The directory stream's own fd was counted: it is not the process's. */
	*out = n > 0 ? n - 1 : 0;
	return 0;
}

/* /proc/stat's btime, line by line: the file has a line per CPU and an interrupt line that can be tens of
 * KiB on a large machine, all before btime. */
static int read_btime(uint64_t *out, struct sk_err *err)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return sk_err_sys(err, errno, "open /proc/stat");
	char *line = NULL;
	size_t cap = 0;
	int r = -EINVAL;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "btime ", 6) == 0) {
			r = sk_procstat_parse_btime(line, out, err);
			break;
		}
	}
	free(line);
	(void)fclose(f);
	return r == 0 ? 0 : sk_err_set(err, EINVAL, "/proc/stat: no btime line");
}

int sk_procstat_read(struct sk_procstat *out, struct sk_err *err)
{
	char stat[1024];
	uint64_t btime = 0;
	int r;
	if ((r = slurp("/proc/self/stat", stat, sizeof(stat), err)) < 0 || (r = read_btime(&btime, err)) < 0 ||
	    (r = sk_procstat_parse_stat(stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), btime, out, err)) < 0 ||
	    (r = count_fds(&out->open_fds, err)) < 0)
		return r;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return sk_err_sys(err, errno, "getrlimit RLIMIT_NOFILE");
	out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	return 0;
}

/* cli/seccomp_log.c — the seccomp refusal reader of `stockade-policy seccomp-log`. See seccomp_log.h. */
#include "cli/seccomp_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/read_file.h"
#include "common/json_str.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "policy/seccomp/record.h"

/* /dev/kmsg hands one record per read and refuses a buffer smaller than the record (EINVAL); the kernel's
 * records are at most 1 KiB of text plus the dictionary lines, so this is ample. A file's line longer than
 * this is no seccomp record (its exe is at most 8 KiB of hex) and is skipped. */
#define REC_MAX 16384

static bool stopped(const struct sk_scmp_log_opts *o)
{
	return o->stop && *o->stop;
}

/* Whether /proc/PID is the process the record names: it must have started no later than the record (one
 * second of slack: btime is whole seconds). A later start means the PID was reused after the refused
 * process exited, and its pod is someone else's. */
static bool started_by(const char *proc, uint32_t pid, const char *stamp)
{
	char path[4096];
	struct sk_err e = { 0 };
	size_t len = 0;
	if (snprintf(path, sizeof(path), "%s/stat", proc) >= (int)sizeof(path))
		return false;
	sk_autofree char *st = sk_read_file(path, 1u << 20, &len, &e);
	const char *bt = st ? strstr(st, "\nbtime ") : NULL;
	if (!bt)
		return false;
	long long btime = strtoll(bt + 7, NULL, 10);
	if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", proc, pid) >= (int)sizeof(path))
		return false;
	sk_autofree char *ps = sk_read_file(path, 4096, &len, &e);
	/* field 22 (starttime, clock ticks after boot) counting from the last ')': comm may hold anything */
	const char *p = ps ? strrchr(ps, ')') : NULL;
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	char *end = NULL;
	unsigned long long ticks = strtoull(p + 1, &end, 10);
	long hz = sysconf(_SC_CLK_TCK);
	if (end == p + 1 || hz <= 0)
		return false;
	long long rec = strtoll(stamp, NULL, 10);
	return btime > 0 && btime + (long long)(ticks / (unsigned long long)hz) <= rec + 1;
}

static bool find_pod(const struct sk_scmp_log_opts *o, const struct sk_scmp_record *r, struct sk_scmp_pod *pod)
{
	char path[4096];
	struct sk_err e = { 0 };
	size_t len = 0;
	memset(pod, 0, sizeof(*pod));
	if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/cgroup", o->proc, r->pid) >= (int)sizeof(path))
		return false;
	sk_autofree char *cg = sk_read_file(path, 64u << 10, &len, &e);   /* gone: the process exited */
	if (!cg || !sk_scmp_cgroup_pod(cg, len, pod))
		return false;
	if (started_by(o->proc, r->pid, r->stamp))
		return true;
	memset(pod, 0, sizeof(*pod));
	return false;
}

static int handle(const struct sk_scmp_log_opts *o, const char *line, size_t len, FILE *out,
		  struct sk_scmp_log_stats *st, struct sk_err *err)
{
	struct sk_scmp_record r;
	struct sk_scmp_pod pod;
	switch (sk_scmp_record_parse(line, len, &r)) {
	case SK_SCMP_REC_OTHER:
		return 0;
	case SK_SCMP_REC_BAD:
		st->bad++;
		(void)fprintf(stderr, "stockade-policy seccomp-log: skipped an unreadable seccomp record (%lu so far)\n",
			      st->bad);
		return 0;
	case SK_SCMP_REC_OK:
		break;
	}
	bool found = find_pod(o, &r, &pod);
	if (o->pods_only && !found)
		return 0;
	struct sk_strbuf b = { 0 };
	(void)sk_scmp_record_json(&r, found ? &pod : NULL, &b);
	if (o->node && b.len >= 2) {
		b.len -= 2;   /* "}\n" */
		(void)sk_strbuf_puts(&b, ",\"node\":");
		(void)sk_json_str_buf(&b, o->node);
		(void)sk_strbuf_puts(&b, "}\n");
	}
	if (sk_strbuf_ok(&b) < 0) {
		sk_strbuf_free(&b);
		return sk_err_sys(err, ENOMEM, "seccomp-log: format");
	}
	bool whole = fwrite(b.p, 1, b.len, out) == b.len;
	sk_strbuf_free(&b);
	/* one line at a time: a reader following the log sees each refusal as it happens */
	if (!whole || fflush(out) != 0)
		return sk_err_set(err, EIO, "seccomp-log: write output failed");
	st->printed++;
	return 0;
}

static int run_kmsg(const struct sk_scmp_log_opts *o, int fd, const char *path, FILE *out,
		    struct sk_scmp_log_stats *st, struct sk_err *err)
{
	char buf[REC_MAX];
	while (!stopped(o)) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EPIPE) {   /* records overwritten before we read them */
			st->lost++;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && !o->follow)
			return 0;
		if (n < 0)
			return sk_err_sys(err, errno, "seccomp-log: read %s", path);
		if (n == 0)
			return 0;
		int r = handle(o, buf, (size_t)n, out, st, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static void nap(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 250 * 1000 * 1000 };
	(void)nanosleep(&ts, NULL);   /* EINTR: the caller checks stop */
}

static int run_file(const struct sk_scmp_log_opts *o, int *fdp, const char *path, FILE *out,
		    struct sk_scmp_log_stats *st, struct sk_err *err)
{
	char buf[REC_MAX];
	size_t have = 0;
	bool skipping = false;   /* in a line too long to be a record */
	off_t pos = lseek(*fdp, 0, SEEK_CUR);
	while (!stopped(o)) {
		ssize_t n = read(*fdp, buf + have, REC_MAX - have);
		if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
			if (!o->follow && errno == EAGAIN)
				break;
			continue;
		}
		if (n < 0)
			return sk_err_sys(err, errno, "seccomp-log: read %s", path);
		if (n == 0) {
			if (!o->follow)
				break;
			/* rotated (another file at the path) or truncated: start the new one from its beginning */
			struct stat now, cur;
			if (stat(path, &now) == 0 && fstat(*fdp, &cur) == 0 &&
			    (now.st_ino != cur.st_ino || now.st_dev != cur.st_dev || now.st_size < pos)) {
				int nfd = open(path, O_RDONLY | O_CLOEXEC);
				if (nfd >= 0) {
					close(*fdp);
					*fdp = nfd;
					pos = 0;
					have = 0;
					skipping = false;
					continue;
				}
			}
			nap();
			continue;
		}
		pos += n;
		have += (size_t)n;
		size_t start = 0;
		for (;;) {
			char *nl = memchr(buf + start, '\n', have - start);
			if (!nl)
				break;
			size_t l = (size_t)(nl - (buf + start));
			if (!skipping) {
				int r = handle(o, buf + start, l, out, st, err);
				if (r < 0)
					return r;
			}
			skipping = false;
			start += l + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == REC_MAX) {
			skipping = true;
			have = 0;
		}
	}
	/* a last line without its newline, when the file ends here */
	if (have && !skipping && !stopped(o))
		return handle(o, buf, have, out, st, err);
	return 0;
}

int sk_scmp_log_run(const struct sk_scmp_log_opts *o, FILE *out, struct sk_scmp_log_stats *st,
		    struct sk_err *err)
{
	const char *path = !strcmp(o->source, "kmsg") ? "/dev/kmsg" : o->source;
	memset(st, 0, sizeof(*st));
	/* not following: a kmsg read that would wait means "no more records" */
	sk_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | (o->follow ? 0 : O_NONBLOCK));
	if (fd < 0)
		return sk_err_sys(err, errno, "seccomp-log: open %s", path);
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return sk_err_sys(err, errno, "seccomp-log: stat %s", path);
	if (S_ISDIR(sb.st_mode))
		return sk_err_sys(err, EISDIR, "seccomp-log: %s", path);
	if (o->from_end && lseek(fd, 0, SEEK_END) < 0)
		return sk_err_sys(err, errno, "seccomp-log: seek to the end of %s", path);
	if (S_ISCHR(sb.st_mode))
		return run_kmsg(o, fd, path, out, st, err);
	return run_file(o, &fd, path, out, st, err);
}

/* init/marker.c — marker file write/read. See marker.h. */
#include "init/marker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static bool valid_hash(const char *h)
{
	size_t n = 0;
	for (; h[n]; n++)
		if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
			return false;
	return n == 16;
}

int sk_marker_write(const char *path, const struct sk_marker *m, struct sk_err *err)
{
	if (!valid_hash(m->hash))
		return sk_err_set(err, EINVAL, "marker %s: invalid hash '%s'", path, m->hash);
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return sk_err_set(err, ENAMETOOLONG, "marker %s: path too long", path);

	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return sk_err_sys(err, errno, "marker %s: create %s", path, tmp);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return sk_err_sys(err, e, "marker %s: fdopen", path);
	}
	fprintf(f, "hash=%s\ntime=%" PRId64 "\nrules=%u\nsets=%u\nelements=%u\nversion=%s\n", m->hash, m->time,
		m->rules, m->sets, m->elements, m->version);
	/* the sidecar must never read a half-written marker: flush, sync, then rename into place */
	int rc = 0;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return sk_err_sys(err, -rc, "marker %s: write", path);
	}
	return 0;
}

int sk_marker_read(const char *path, struct sk_marker *m, struct sk_err *err)
{
	memset(m, 0, sizeof(*m));
	sk_autofclose FILE *f = fopen(path, "re");
	if (!f)
		return sk_err_sys(err, errno, "marker %s: open", path);
	char line[256];
	bool have_hash = false;
	for (unsigned lineno = 1; fgets(line, sizeof(line), f); lineno++) {
		line[strcspn(line, "\n")] = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		if (!strcmp(k, "hash")) {
			if (lineno != 1 || !valid_hash(v))
				return sk_err_set(err, EINVAL, "marker %s: line %u: malformed hash", path, lineno);
			memcpy(m->hash, v, 17);
			have_hash = true;
		} else if (!strcmp(k, "time")) {
			m->time = strtoll(v, NULL, 10);
		} else if (!strcmp(k, "rules")) {
			m->rules = (unsigned)strtoul(v, NULL, 10);
		} else if (!strcmp(k, "sets")) {
			m->sets = (unsigned)strtoul(v, NULL, 10);
		} else if (!strcmp(k, "elements")) {
			m->elements = (unsigned)strtoul(v, NULL, 10);
		} else if (!strcmp(k, "version")) {
			snprintf(m->version, sizeof(m->version), "%s", v);
		}
	}
	if (ferror(f))
		return sk_err_sys(err, EIO, "marker %s: read", path);
	if (!have_hash)
		return sk_err_set(err, EINVAL, "marker %s: no hash line first", path);
	return 0;
}

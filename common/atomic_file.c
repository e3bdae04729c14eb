/* common/atomic_file.c — see atomic_file.h. */
#include "common/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sk_atomic_write(const char *path, const void *data, size_t len, mode_t mode, struct sk_err *err)
{
	size_t tmp_len = strlen(path) + sizeof(".tmpXXXXXX");
	char *tmp = malloc(tmp_len);
	int fd = -1, r = 0;
	if (!tmp)
		return sk_err_sys(err, ENOMEM, "write %s", path);
	(void)snprintf(tmp, tmp_len,   /* sized above */ "%s.tmpXXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = sk_err_sys(err, errno, "write %s: create %s", path, tmp);
		goto out;
	}
	const char *p = data;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = sk_err_sys(err, errno, "write %s", tmp);
			goto out_unlink;
		}
		off += (size_t)w;
	}
	/* mkostemp creates 0600; the readers (kubelet, the sidecar's UID) need the mode asked for */
	if (fchmod(fd, mode) < 0) {
		r = sk_err_sys(err, errno, "write %s: chmod", tmp);
		goto out_unlink;
	}
	if (fsync(fd) < 0) {
		r = sk_err_sys(err, errno, "write %s: fsync", tmp);
		goto out_unlink;
	}
	if (rename(tmp, path) < 0) {
		r = sk_err_sys(err, errno, "write %s: rename from %s", path, tmp);
		goto out_unlink;
	}
	goto out;
out_unlink:
	unlink(tmp);
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	return r;
}

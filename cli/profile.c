/* cli/profile.c — what `seccomp -o` and `seccomp-install` share: the profile's file text and the
 * atomic write that puts it where a kubelet or runtime reads it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "cli/cli.h"
#include "policy/seccomp.h"

char *sk_cli_profile_json(const struct sk_scmp_profile *p, struct sk_err *err)
{
	char *json = sk_scmp_profile_to_json(p, err);
	if (!json)
		return NULL;
	size_t len = strlen(json);
	char *text = realloc(json, len + 2);
	if (!text) {
		free(json);
		sk_err_set(err, ENOMEM, "render profile");
		return NULL;
	}
	memcpy(text + len, "\n", 2);
	return text;
}

/* Writes text to path through a temporary file and rename, so a kubelet never reads half a profile. */
int sk_cli_write_atomic(const char *path, const char *text, struct sk_err *err)
{
	size_t len = strlen(path) + 16;
	char *tmp = malloc(len);
	int fd = -1, r = 0;
	if (!tmp)
		return sk_err_sys(err, ENOMEM, "write %s", path);
	snprintf(tmp, len, "%s.tmpXXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		r = sk_err_sys(err, errno, "create %s", tmp);
		goto out;
	}
	size_t n = strlen(text), off = 0;
	while (off < n) {
		ssize_t w = write(fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = sk_err_sys(err, errno, "write %s", tmp);
			unlink(tmp);
			goto out;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0 || rename(tmp, path) < 0) {
		r = sk_err_sys(err, errno, "write %s", path);
		unlink(tmp);
	}
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	return r;
}


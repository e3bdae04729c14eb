/* common/read_file.c — see read_file.h. */
#include "common/read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strbuf.h"

char *sk_read_file(const char *path, size_t max, size_t *len, struct sk_err *err)
{
	const bool is_stdin = !strcmp(path, "-");
	/* stdin is dup'ed so the cleanup closes only our copy */
	sk_autoclose int fd = is_stdin ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		sk_err_sys(err, errno, "read %s", path);
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		sk_err_sys(err, EISDIR, "read %s", path);
		return NULL;
	}
	struct sk_strbuf b = { 0 };
	char chunk[65536];
	for (;;) {
		/* one byte past the cap is enough to know it is over: never read much more than max */
		size_t want = max - b.len + 1 < sizeof(chunk) ? max - b.len + 1 : sizeof(chunk);
		ssize_t r = read(fd, chunk, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			sk_err_sys(err, errno, "read %s", path);
			goto fail;
		}
		if (r == 0)
			break;
		if ((size_t)r > max - b.len) {
			sk_err_set(err, EFBIG, "%s: larger than %zu bytes", path, max);
			goto fail;
		}
		if (sk_strbuf_put(&b, chunk, (size_t)r) < 0) {
			sk_err_sys(err, ENOMEM, "read %s", path);
			goto fail;
		}
	}
	char *out = sk_strbuf_steal(&b, len);
	if (!out)
		sk_err_sys(err, ENOMEM, "read %s", path);
	return out;
fail:
	sk_strbuf_free(&b);
	return NULL;
}

/* common/read_file.h — the one "read a whole file, with a cap" (policy files, manifests to wrap, seccomp
 * profiles): a file bigger than the caller's cap is refused, not truncated, and not read further. */
#ifndef SK_COMMON_READ_FILE_H
#define SK_COMMON_READ_FILE_H

#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

/* Reads the whole of path ("-": standard input, read to its end and left open) into an owned buffer with
 * a NUL after its *len bytes. Returns NULL with err filled when it cannot be opened or read ("read PATH:
 * <strerror>"), is a directory (EISDIR), or holds more than max bytes ("PATH: larger than N bytes",
 * EFBIG); err->code is the errno. */
SK_MUST_USE char *sk_read_file(const char *path, size_t max, size_t *len, struct sk_err *err);

#endif

/* common/atomic_file.h — the one way stockade replaces a file another process reads (the init's marker
 * for the sidecar's readiness, a seccomp profile for the kubelet): a temporary file in the same
 * directory, written whole, synced, then renamed over the target, so a reader sees the old file or the
 * new one and never a part. */
#ifndef SK_COMMON_ATOMIC_FILE_H
#define SK_COMMON_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/util.h"

/* Replaces path with len bytes of data, file mode `mode`. 0, or < 0 with err naming the step; on
 * failure the target is untouched and no temporary file is left behind. */
SK_MUST_USE int sk_atomic_write(const char *path, const void *data, size_t len, mode_t mode, struct sk_err *err);

#endif

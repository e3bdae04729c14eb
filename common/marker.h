/* common/marker.h — the marker file stockade-init writes after a verified load and the sidecar's
 * readiness reads (both sides use this module, so the format has one owner). Format: key=value lines,
 * "hash=<16 hex>" FIRST (the netns hash of the policy the kernel holds), then time, counts and version.
 * Readers ignore unknown keys. */
#ifndef SK_COMMON_MARKER_H
#define SK_COMMON_MARKER_H

#include <stdint.h>

#include "common/err.h"
#include "common/util.h"

struct sk_marker {
	char hash[17];         /* sk_policy_netns_hash, 16 lower-case hex digits */
	int64_t time;          /* unix seconds of the load */
	unsigned rules;        /* rules in the table */
	unsigned sets;         /* sets in the table */
	unsigned elements;     /* set elements in the table */
	char version[64];      /* stockade-init version */
};

/* Writes m to path atomically (temporary file in the same directory, then rename). */
SK_MUST_USE int sk_marker_write(const char *path, const struct sk_marker *m, struct sk_err *err);
/* Reads path into m. -ENOENT if missing; -EINVAL if the hash line is missing or malformed. */
SK_MUST_USE int sk_marker_read(const char *path, struct sk_marker *m, struct sk_err *err);

#endif

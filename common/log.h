/* common/log.h — the programs' diagnostic lines on stderr ("<prog>: <message>\n"), filtered by a level.
 * The level and the program name are set once by main before anything logs (sk_log_init) and never
 * change afterwards: the one process-wide setting besides the policy snapshot. Audit lines are not log
 * lines (they go to stdout, sidecar/audit.h) and are never filtered. */
#ifndef SK_COMMON_LOG_H
#define SK_COMMON_LOG_H

#include <stdbool.h>

enum sk_log_level { SK_LOG_ERROR = 0, SK_LOG_WARN, SK_LOG_INFO, SK_LOG_DEBUG };

/* prog: the prefix (borrowed; a string literal); level: the most verbose level written. Before any call
 * the prefix is "stockade" and the level info. */
void sk_log_init(const char *prog, enum sk_log_level level);
/* Writes "<prog>: <fmt...>\n" to stderr when level is at most the configured one. One write(2) a line
 * (lines from one process do not interleave); a line longer than 4 KiB is cut. */
void sk_log(enum sk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool sk_log_enabled(enum sk_log_level level);
/* "error", "warn", "info", "debug"; "?" for anything else. */
const char *sk_log_level_name(enum sk_log_level level);
/* Parses one of those names; false when it is none. */
bool sk_log_level_parse(const char *name, enum sk_log_level *out);

#endif

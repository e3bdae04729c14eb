/* common/log.h — the programs' diagnostic lines on stderr ("<prog>: <message>\n"), filtered by a level;
 * or, when asked (sk_log_set_format), one JSON object a line for log collectors:
 * {"ts":"<RFC 3339 UTC, ms>","level":"info","prog":"<prog>","msg":"<message>"}.
 * The level, format and program name are set once by main before anything logs (sk_log_init) and never
 * change afterwards: the one process-wide setting besides the policy snapshot. Audit lines are not log
 * lines (they go to stdout, sidecar/core/audit.h) and are never filtered. */
#ifndef SK_COMMON_LOG_H
#define SK_COMMON_LOG_H

#include <stdbool.h>

enum sk_log_level { SK_LOG_ERROR = 0, SK_LOG_WARN, SK_LOG_INFO, SK_LOG_DEBUG };
enum sk_log_format { SK_LOG_TEXT = 0, SK_LOG_JSON };

/* prog: the prefix (borrowed; a string literal); level: the most verbose level written. Before any call
 * the prefix is "stockade" and the level info. */
void sk_log_init(const char *prog, enum sk_log_level level);
/* Writes "<prog>: <fmt...>\n" (or the JSON object) to stderr when level is at most the configured one.
 * One write(2) a line (lines from one process do not interleave); a message longer than 4 KiB is cut. In
 * JSON every byte of the message that is a quote, a backslash, a control byte or >= 0x7f is escaped
 * (\u00XX for the last two), so each line is valid JSON and ASCII whatever the message holds. */
void sk_log(enum sk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool sk_log_enabled(enum sk_log_level level);
/* Text (the default) or JSON lines; set once by main, right after sk_log_init. */
void sk_log_set_format(enum sk_log_format format);
enum sk_log_format sk_log_get_format(void);
/* "text" or "json"; false when it is neither. */
bool sk_log_format_parse(const char *name, enum sk_log_format *out);
/* "error", "warn", "info", "debug"; "?" for anything else. */
const char *sk_log_level_name(enum sk_log_level level);
/* Parses one of those names; false when it is none. */
bool sk_log_level_parse(const char *name, enum sk_log_level *out);

#endif

/* common/log.c — see log.h. */
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json_str.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* Set once by main (sk_log_init) before the loop starts; read-only afterwards. */
static const char *log_prog = "stockade";
static enum sk_log_level log_level = SK_LOG_INFO;
static enum sk_log_format log_format = SK_LOG_TEXT;

void sk_log_init(const char *prog, enum sk_log_level level)
{
	log_prog = prog ? prog : "stockade";
	log_level = level;
}

void sk_log_set_format(enum sk_log_format format)
{
	log_format = format;
}

enum sk_log_format sk_log_get_format(void)
{
	return log_format;
}

bool sk_log_format_parse(const char *name, enum sk_log_format *out)
{
	if (strcmp(name, "text") == 0)
		*out = SK_LOG_TEXT;
	else if (strcmp(name, "json") == 0)
		*out = SK_LOG_JSON;
	else
		return false;
	return true;
}

bool sk_log_enabled(enum sk_log_level level)
{
	return level <= log_level;
}

const char *sk_log_level_name(enum sk_log_level level)
{
	return (unsigned)level < sizeof(level_names) / sizeof(level_names[0]) ? level_names[level] : "?";
}

bool sk_log_level_parse(const char *name, enum sk_log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum sk_log_level)i;
			return true;
		}
	}
	return false;
}

static void write_line(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(STDERR_FILENO, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;   /* nowhere to report a failing stderr */
		p += w;
		len -= (size_t)w;
	}
}

/* Appends s JSON-escaped to out (cap bytes, of which at least 3 stay free for `"}\n`); stops before an
 * escape that would not fit, so a cut message is still a valid string. Returns the new length. */
static size_t put_json(char *out, size_t len, size_t cap, const char *s)
{
	for (; *s; s++) {
		char e[6];
		/* control bytes and non-ASCII as \u00XX: the line stays valid JSON and ASCII even when a
		 * message carries a path or a name that is not UTF-8 */
		size_t n = sk_json_escape_byte((unsigned char)*s, e);
		if (len + n + 3 > cap)
			break;
		memcpy(out + len, e, n);
		len += n;
	}
	return len;
}

/* Appends the literal s (the caller has kept room for it) without its NUL. */
static size_t put_raw(char *out, size_t len, const char *s)
{
	while (*s)
		out[len++] = *s++;
	return len;
}

static void log_json(enum sk_log_level level, const char *msg)
{
	char line[4096 * 2];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line),
			 "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"level\":\"%s\",\"prog\":\"", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000L),
			 sk_log_level_name(level));
	if (n < 0 || (size_t)n >= sizeof(line) / 2)
		return;
	size_t len = put_json(line, (size_t)n, sizeof(line) / 2, log_prog);
	len = put_raw(line, len, "\",\"msg\":\"");
	len = put_json(line, len, sizeof(line), msg);   /* leaves room for the 3 bytes below */
	len = put_raw(line, len, "\"}\n");
	write_line(line, len);
}

void sk_log(enum sk_log_level level, const char *fmt, ...)
{
	if (!sk_log_enabled(level))
		return;
	char buf[4096];
	int n = log_format == SK_LOG_JSON ? 0 : snprintf(buf, sizeof(buf), "%s: ", log_prog);
	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	if (log_format == SK_LOG_JSON) {
		log_json(level, buf);   /* vsnprintf cut it to the buffer, NUL-terminated */
		return;
	}
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;   /* cut: keep room for the newline */
	buf[len++] = '\n';
	write_line(buf, len);
}

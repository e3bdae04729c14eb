/* common/log.c — see log.h. */
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* Set once by main (sk_log_init) before the loop starts; read-only afterwards. */
static const char *log_prog = "stockade";
static enum sk_log_level log_level = SK_LOG_INFO;

void sk_log_init(const char *prog, enum sk_log_level level)
{
	log_prog = prog ? prog : "stockade";
	log_level = level;
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

void sk_log(enum sk_log_level level, const char *fmt, ...)
{
	if (!sk_log_enabled(level))
		return;
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "%s: ", log_prog);
	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;   /* cut: keep room for the newline */
	buf[len++] = '\n';
	const char *p = buf;
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

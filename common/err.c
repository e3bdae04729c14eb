/* common/err.c — see err.h. */
#include "common/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 4, 0)))
static int sk_err_vset(struct sk_err *err, int code, const char *suffix, const char *fmt, va_list ap)
{
	if (code <= 0)
		code = EINVAL;
	if (err) {
		int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		if (suffix && n >= 0 && (size_t)n < sizeof(err->msg))
			/* a cut suffix keeps the start, which names the step (as in sk_err_prefix) */
			(void)snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", suffix);
		err->code = code;
	}
	return -code;
}

int sk_err_set(struct sk_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = sk_err_vset(err, code, NULL, fmt, ap);
	va_end(ap);
	return r;
}

int sk_err_sys(struct sk_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = sk_err_vset(err, code, strerror(code > 0 ? code : EINVAL), fmt, ap);
	va_end(ap);
	return r;
}

int sk_err_prefix(struct sk_err *err, const char *fmt, ...)
{
	if (!err)
		return -EINVAL;
	char prefix[SK_ERR_MSG_MAX], old[SK_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(prefix, sizeof(prefix), fmt, ap);   /* truncation: see below */
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* Truncation keeps the start of the message, which names the step: acceptable by design. */
	size_t plen = strnlen(prefix, sizeof(err->msg) - 1);
	memcpy(err->msg, prefix, plen);
	size_t at = plen;
	if (at + 2 < sizeof(err->msg)) {
		err->msg[at++] = ':';
		err->msg[at++] = ' ';
	}
	size_t olen = strnlen(old, sizeof(old));
	if (olen > sizeof(err->msg) - 1 - at)
		olen = sizeof(err->msg) - 1 - at;
	memcpy(err->msg + at, old, olen);
	err->msg[at + olen] = '\0';
	if (err->code <= 0)
		err->code = EINVAL;
	return -err->code;
}

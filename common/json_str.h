/* common/json_str.h — one JSON string escaper for the lines stockade's tools print (the seccomp
 * installer's log, `stockade-policy suggest`, the sidecar's /readyz body). Same rule as the sidecar's audit lines (sidecar/core/audit.h):
 * '"' and '\\' are backslash-escaped, control bytes and every byte >= 0x7f become \u00XX, so the output is
 * valid JSON and plain ASCII whatever bytes a path or an error text holds. */
#ifndef SK_COMMON_JSON_STR_H
#define SK_COMMON_JSON_STR_H

#include <stddef.h>
#include <stdio.h>

#include "common/strbuf.h"

/* The escape of byte c into e (no NUL); returns its length (1, 2 or 6). The one rule above, for writers
 * with a buffer discipline of their own (the audit line's caps, the log line's cut before an escape that
 * would not fit); inline, as they run it on every byte of a line. */
static inline size_t sk_json_escape_byte(unsigned char c, char e[6])
{
	static const char hex[] = "0123456789abcdef";
	if (c == '"' || c == '\\') {
		e[0] = '\\';
		e[1] = (char)c;
		return 2;
	}
	if (c < 0x20 || c >= 0x7f) {
		e[0] = '\\';
		e[1] = 'u';
		e[2] = '0';
		e[3] = '0';
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		return 6;
	}
	e[0] = (char)c;
	return 1;
}

/* Room sk_json_str needs for a string of n bytes: every byte as \u00XX, two quotes, a NUL. */
#define SK_JSON_STR_SIZE(n) ((n) * 6 + 3)

/* Writes s as a quoted JSON string into buf (NUL-terminated, cut at cap - 1 bytes). Returns the length
 * the whole string needs without the NUL (>= cap means it was cut). */
size_t sk_json_str(char *buf, size_t cap, const char *s);
/* The same, written to f. Returns 0 or -EIO. */
int sk_json_fputs(FILE *f, const char *s);
/* The same, appended to b (never cut). Returns 0 or -ENOMEM (common/strbuf.h: the failure sticks to b). */
int sk_json_str_buf(struct sk_strbuf *b, const char *s);

#endif

/* common/json_str.h — one JSON string escaper for the lines stockade's tools print (the seccomp
 * installer's log, `stockade-policy suggest`, the sidecar's /readyz body). Same rule as the sidecar's audit lines (sidecar/audit.h):
 * '"' and '\\' are backslash-escaped, control bytes and every byte >= 0x7f become \u00XX, so the output is
 * valid JSON and plain ASCII whatever bytes a path or an error text holds. */
#ifndef SK_COMMON_JSON_STR_H
#define SK_COMMON_JSON_STR_H

#include <stddef.h>
#include <stdio.h>

#include "common/strbuf.h"

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

/* common/json_str.c — see json_str.h. */
#include <errno.h>
#include <string.h>

#include "common/json_str.h"

static void put(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
	for (size_t k = 0; k < n; k++, (*len)++)
		if (*len + 1 < cap)
			buf[*len] = s[k];
}

size_t sk_json_str(char *buf, size_t cap, const char *s)
{
	size_t len = 0;
	char e[6];
	put(buf, cap, &len, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		put(buf, cap, &len, e, sk_json_escape_byte(*p, e));
	put(buf, cap, &len, "\"", 1);
	if (cap)
		buf[len < cap ? len : cap - 1] = 0;
	return len;
}

int sk_json_fputs(FILE *f, const char *s)
{
	char e[6];
	if (fputc('"', f) == EOF)
		return -EIO;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		size_t n = sk_json_escape_byte(*p, e);
		if (fwrite(e, 1, n, f) != n)
			return -EIO;
	}
	return fputc('"', f) == EOF ? -EIO : 0;
}

int sk_json_str_buf(struct sk_strbuf *b, const char *s)
{
	char e[6];
	(void)sk_strbuf_put(b, "\"", 1);   /* a failure sticks to b: checked once, below */
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		(void)sk_strbuf_put(b, e, sk_json_escape_byte(*p, e));
	(void)sk_strbuf_put(b, "\"", 1);
	return sk_strbuf_ok(b);
}

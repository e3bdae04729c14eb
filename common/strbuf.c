/* common/strbuf.c — see strbuf.h. */
#include "common/strbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL after them. */
static int reserve(struct sk_strbuf *b, size_t n)
{
	if (b->oom)
		return -ENOMEM;
	if (n >= SIZE_MAX / 2 - b->len) {
		b->oom = true;
		return -ENOMEM;
	}
	size_t need = b->len + n + 1;
	if (need <= b->cap && b->p)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return -ENOMEM;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int sk_strbuf_put(struct sk_strbuf *b, const void *d, size_t n)
{
	int rc = reserve(b, n);
	if (rc < 0)
		return rc;
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int sk_strbuf_puts(struct sk_strbuf *b, const char *s)
{
	return sk_strbuf_put(b, s, strlen(s));
}

int sk_strbuf_vprintf(struct sk_strbuf *b, const char *fmt, va_list ap)
{
	if (b->oom)
		return -ENOMEM;
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);   /* measured first: one growth, then one write */
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	int rc = reserve(b, (size_t)n);
	if (rc < 0)
		return rc;
	(void)vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);   /* fits: measured above */
	b->len += (size_t)n;
	return 0;
}

int sk_strbuf_printf(struct sk_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = sk_strbuf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void sk_strbuf_reset(struct sk_strbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->p)
		b->p[0] = '\0';
}

char *sk_strbuf_steal(struct sk_strbuf *b, size_t *len)
{
	if (b->oom || (!b->p && sk_strbuf_put(b, "", 0) < 0)) {
		sk_strbuf_free(b);
		return NULL;
	}
	if (len)
		*len = b->len;
	char *p = b->p;
	*b = (struct sk_strbuf){ 0 };
	return p;
}

void sk_strbuf_free(struct sk_strbuf *b)
{
	free(b->p);
	*b = (struct sk_strbuf){ 0 };
}

/* common/strbuf.h — the one growable text/byte buffer (metrics and /readyz bodies, the gateway's output,
 * manifests and seccomp descriptions written out). Zero-initialised is empty. Once anything was appended,
 * p[len] is a NUL (not counted in len), so text can be handed on as a C string; bytes may include NULs.
 *
 * A failed allocation is sticky: the buffer is marked `oom`, keeps what it had, and every later append
 * does nothing and fails too. So a writer of many pieces may ignore each append's result and check once,
 * at the end (sk_strbuf_ok); one that must stop at the first failure checks each result. */
#ifndef SK_COMMON_STRBUF_H
#define SK_COMMON_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/util.h"

struct sk_strbuf {
	char *p;                   /* owned; NULL until the first append */
	size_t len, cap;
	bool oom;                  /* an allocation failed: appends are refused from then on */
};

/* Appends n bytes. 0, or -ENOMEM (buffer marked oom, nothing appended). */
int sk_strbuf_put(struct sk_strbuf *b, const void *d, size_t n);
int sk_strbuf_puts(struct sk_strbuf *b, const char *s);
/* Appends formatted text of any length. 0, -ENOMEM, or -EINVAL for a bad format (nothing appended). */
int sk_strbuf_printf(struct sk_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sk_strbuf_vprintf(struct sk_strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* 0 when every append so far succeeded, else -ENOMEM. */
SK_MUST_USE static inline int sk_strbuf_ok(const struct sk_strbuf *b) { return b->oom ? -ENOMEM : 0; }

/* Empties the buffer (keeps its allocation) and clears oom. */
void sk_strbuf_reset(struct sk_strbuf *b);
/* Returns the contents as an owned NUL-terminated string (never NULL when ok: "" for an empty buffer)
 * and leaves b empty; NULL (and b freed) when the buffer is oom or the empty string cannot be had. */
SK_MUST_USE char *sk_strbuf_steal(struct sk_strbuf *b, size_t *len);
void sk_strbuf_free(struct sk_strbuf *b);

#endif

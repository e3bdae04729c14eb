/* policy/diag.c — the bottom of the policy loaders: the diagnostics list ("file:line:col: message", every
 * one a load found), a load's error counter with its cap, and the quoting every message uses for text
 * taken from the file. Calls nothing of the policy library above it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/diag.h"
#include "policy/internal.h"

void sk_diags_add(struct sk_diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		msg = NULL;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct sk_diag *v = realloc(d->v, cap * sizeof(*v));
		if (!v) {
			free(msg);
			return;  /* out of memory: the load still fails, it just says less */
		}
		d->v = v;
		d->cap = cap;
	}
	struct sk_diag *g = &d->v[d->n++];
	g->file = strdup(file ? file : "<buffer>");
	g->line = line;
	g->col = col;
	g->msg = msg;
}

void sk_diags_free(struct sk_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].msg);
	}
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
}

void sk_diags_print(const struct sk_diags *d, void *stdio_file)
{
	FILE *f = stdio_file;
	/* every caller prints to stderr or a log, after the failure these describe: nothing left to report a
	 * failed write to */
	for (size_t i = 0; i < d->n; i++) {
		const struct sk_diag *g = &d->v[i];
		const char *file = g->file ? g->file : "<buffer>", *msg = g->msg ? g->msg : "out of memory";
		if (g->line)
			(void)fprintf(f, "%s:%u:%u: %s\n", file, g->line, g->col, msg);
		else
			(void)fprintf(f, "%s: %s\n", file, msg);
	}
}

/* Sorts the diagnostics one load added by position, so they read top to bottom like the file.
 * Ties keep insertion order. */
void sk_diags_sort_from(struct sk_diags *d, size_t from)
{
	size_t n = d->n - from;
	if (n < 2)
		return;
	struct sk_diag *v = d->v + from;
	/* Insertion sort: stable, and a policy has few errors (fuzzers included, it stays cheap enough). */
	for (size_t i = 1; i < n; i++) {
		struct sk_diag t = v[i];
		size_t j = i;
		while (j > 0 && (v[j - 1].line > t.line || (v[j - 1].line == t.line && v[j - 1].col > t.col))) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = t;
	}
}

void sk_ctx_error(struct sk_load_ctx *c, unsigned line, unsigned col, const char *fmt, ...)
{
	char msg[1024];
	/* A hostile file can produce an error per byte; nobody reads past the first screenful. */
	if (c->n_errors++ >= SK_MAX_ERRORS) {
		if (c->n_errors == SK_MAX_ERRORS + 1)
			sk_diags_add(c->diags, c->file, line, col, "too many errors, stopped reporting after %d",
				     SK_MAX_ERRORS);
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sk_diags_add(c->diags, c->file, line, col, "%s", msg);
}

char *sk_quote(const char *s, char *out, size_t outsz)
{
	size_t o = 0;
	const size_t limit = outsz > 8 ? outsz - 8 : 0;  /* room for an escape, "...'" and NUL */
	if (outsz < 12) {
		if (outsz)
			out[0] = 0;
		return out;
	}
	out[o++] = '\'';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (o >= limit) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (*p < 0x20 || *p >= 0x7f || *p == '\'' || *p == '\\') {
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", *p);
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o++] = '\'';
	out[o] = 0;
	return out;
}

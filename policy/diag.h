/* policy/diag.h — the policy loaders' diagnostics: one "file:line:col: message" per problem a load
 * found, all of them, not only the first (diag.c). Included by policy.h, whose load entry points fill it.
 *
 * Ownership: a struct sk_diags owns its entries and their text; the caller zero-initialises it and frees
 * it with sk_diags_free. */
#ifndef SK_POLICY_DIAG_H
#define SK_POLICY_DIAG_H

#include <stddef.h>

/* One diagnostic: "file:line:col: message". */
struct sk_diag {
	char *file;
	unsigned line, col;
	char *msg;
};
struct sk_diags {
	struct sk_diag *v;
	size_t n, cap;
};
void sk_diags_add(struct sk_diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void sk_diags_free(struct sk_diags *d);
/* Writes every diagnostic as "file:line:col: msg\n". */
void sk_diags_print(const struct sk_diags *d, void *stdio_file);

#endif

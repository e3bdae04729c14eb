/* injector/jsonpatch.h — RFC 6902 JSON Patch between two cJSON trees: what the admission webhook answers
 * with (the API server applies it to the pod it sent), and an applier that the unit tests and the fuzz
 * target use as the oracle (apply(diff(a, b), a) == b).
 *
 * What it owns: the diff (objects key by key in b's order; arrays element by element when their lengths
 * agree, else replaced whole, which is what a prepended init container gives; scalars replaced when they
 * differ), JSON Pointer escaping (~0 ~1), and printing a patch so that integers stay exact (cJSON prints an
 * integer beyond int range in %g form, "1e+15", which the API server refuses for an int64 field). */
#ifndef SK_INJECTOR_JSONPATCH_H
#define SK_INJECTOR_JSONPATCH_H

struct cJSON;
struct sk_err;

/* The operations turning a into b, as a new cJSON array (owned; empty when the trees are equal), or NULL
 * on allocation failure. Borrows a and b. */
struct cJSON *sk_jsonpatch_diff(const struct cJSON *a, const struct cJSON *b);

/* Applies patch (add, remove, replace) to *doc in place (*doc may be replaced when a path is ""). 0, or
 * -EINVAL with err naming the operation's index and path (the document is then in an unspecified but
 * valid state), or -ENOMEM. Borrows patch. */
int sk_jsonpatch_apply(struct cJSON **doc, const struct cJSON *patch, struct sk_err *err);

/* patch (or any tree) as compact JSON text with exact integers (|n| <= 2^53), or NULL on allocation
 * failure. Returns owned. Borrows patch. */
char *sk_jsonpatch_print(const struct cJSON *patch);

#endif

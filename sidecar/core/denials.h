/* sidecar/core/denials.h — ring buffer of the last N denial audit lines (default 256), served by the admin
 * port as a JSON array at /denials?limit=N. Bounded memory: each entry is capped in length. */
#ifndef SK_SIDECAR_DENIALS_H
#define SK_SIDECAR_DENIALS_H

#include <stddef.h>

#include "common/err.h"

struct sk_denials;

/* capacity 0: 256. Returns 0, or -ENOMEM with err filled; *out owned. */
int sk_denials_new(size_t capacity, struct sk_denials **out, struct sk_err *err);
void sk_denials_free(struct sk_denials *d);
/* Copies one audit JSON object (no trailing newline); the oldest entry is dropped when full. */
void sk_denials_push(struct sk_denials *d, const char *json_object, size_t len);
/* Renders the newest `limit` entries (newest last) as a JSON array; malloc'd, owned by the caller. */
int sk_denials_render(const struct sk_denials *d, size_t limit, char **out, size_t *len);

#endif

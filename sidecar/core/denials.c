/* sidecar/core/denials.c — see denials.h. Owns the ring of recent denial audit objects.
 *
 * All slots are allocated once, at creation, so recording a denial never allocates: a flood of denials
 * from a hostile agent costs a memcpy each and cannot exhaust memory or fail halfway. */
#include "sidecar/core/denials.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The audit formatter bounds a line to SK_AUDIT_LINE_MAX (4 KiB); slots match it. 256 slots = 1 MiB of
 * address space, touched only as denials arrive (calloc'd pages). */
#define SLOT_MAX 4096

struct slot {
	size_t len;
	char data[SLOT_MAX];
};

struct sk_denials {
	size_t capacity;
	size_t next;    /* slot the next push writes */
	size_t count;   /* valid entries, <= capacity */
	struct slot *slots;
};

int sk_denials_new(size_t capacity, struct sk_denials **out, struct sk_err *err)
{
	if (capacity == 0)
		capacity = 256;
	struct sk_denials *d = calloc(1, sizeof(*d));
	if (!d)
		return sk_err_sys(err, ENOMEM, "denials: allocate %zu slots", capacity);
	d->slots = calloc(capacity, sizeof(*d->slots));
	if (!d->slots) {
		free(d);
		return sk_err_sys(err, ENOMEM, "denials: allocate %zu slots", capacity);
	}
	d->capacity = capacity;
	*out = d;
	return 0;
}

void sk_denials_free(struct sk_denials *d)
{
	if (!d)
		return;
	free(d->slots);
	free(d);
}

void sk_denials_push(struct sk_denials *d, const char *json_object, size_t len)
{
	/* Cutting an over-long object would leave invalid JSON in the array, so it is replaced by a marker
	 * that still says a denial happened. */
	static const char too_long[] = "{\"event\":\"deny\",\"truncated\":true}";
	struct slot *s = &d->slots[d->next];
	if (len == 0 || len > SLOT_MAX || !json_object) {
		memcpy(s->data, too_long, sizeof(too_long) - 1);
		s->len = sizeof(too_long) - 1;
	} else {
		memcpy(s->data, json_object, len);
		s->len = len;
	}
	d->next = (d->next + 1) % d->capacity;
	if (d->count < d->capacity)
		d->count++;
}

int sk_denials_render(const struct sk_denials *d, size_t limit, char **out, size_t *len)
{
	size_t n = limit < d->count ? limit : d->count;
	size_t first = (d->next + d->capacity - n) % d->capacity;  /* oldest of the newest n */
	size_t total = 3;  /* brackets and trailing newline; each entry adds its comma slot below */
	for (size_t i = 0; i < n; i++)
		total += d->slots[(first + i) % d->capacity].len + 1;
	char *buf = malloc(total + 1);
	if (!buf)
		return -ENOMEM;
	size_t p = 0;
	buf[p++] = '[';
	for (size_t i = 0; i < n; i++) {
		const struct slot *s = &d->slots[(first + i) % d->capacity];
		if (i)
			buf[p++] = ',';
		memcpy(buf + p, s->data, s->len);
		p += s->len;
	}
	buf[p++] = ']';
	buf[p++] = '\n';
	buf[p] = '\0';
	*out = buf;
	*len = p;
	return 0;
}

/* policy/tree_get.c — typed reads of the document tree for the validator: each takes a node and the path
 * the message names ("egress[2].ports[0]"), and either gives the value or writes "path: what is wrong,
 * expected what" at the node's line:col. Also the key check of a mapping against the schema's keys, the
 * message paths, and the quiet checks the hot paths try first. Above diag.c and tree.c only. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

/* Path strings for messages ("egress[2].ports[0]"); a truncated path is still a useful message. */
void sk_pathf(char *buf, size_t sz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(buf, sz, fmt, ap);
	va_end(ap);
}

/* The hot paths (one per rule and per port) build their paths without printf: "base[idx]" and
 * "base.key", truncated exactly as vsnprintf would truncate them. */
static void path_cat(char *buf, size_t sz, const char *base, const char *a, size_t alen, char tail)
{
	if (!sz)
		return;
	size_t o = 0, bl = strlen(base);
	const size_t room = sz - 1;
	if (bl > room)
		bl = room;
	memcpy(buf, base, bl);
	o = bl;
	size_t n = alen < room - o ? alen : room - o;
	memcpy(buf + o, a, n);
	o += n;
	if (tail && o < room)
		buf[o++] = tail;
	buf[o] = 0;
}

void sk_path_key(char *buf, size_t sz, const char *base, const char *key)
{
	char a[PATHSZ];
	const size_t kl = strlen(key);
	if (kl + 1 >= sizeof(a)) {
		sk_pathf(buf, sz, "%s.%s", base, key);
		return;
	}
	a[0] = '.';
	memcpy(a + 1, key, kl + 1);  /* with its NUL */
	path_cat(buf, sz, base, a, kl + 1, 0);
}

void sk_path_idx(char *buf, size_t sz, const char *base, size_t idx)
{
	char d[24];
	size_t i = sizeof(d);
	do {
		d[--i] = (char)('0' + idx % 10);
		idx /= 10;
	} while (idx);
	d[--i] = '[';
	path_cat(buf, sz, base, d + i, sizeof(d) - i, ']');
}

/* ---- generic shape checks ---------------------------------------------------------------------- */

bool sk_want_map(struct sk_load_ctx *c, const struct sk_node *n, const char *path)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_MAP)
		return true;
	err_at(c, n, "%s: expected a mapping, got %s", path, sk_node_describe(n, d, sizeof(d)));
	return false;
}

bool sk_want_seq(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *of)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_SEQ)
		return true;
	err_at(c, n, "%s: expected a list of %s, got %s", path, of, sk_node_describe(n, d, sizeof(d)));
	return false;
}

/* "k1, k2, ..." for messages; built only when one is written. Returns buf. */
static const char *keys_text(const struct sk_schema_obj *o, char *buf, size_t sz)
{
	size_t w = 0;
	buf[0] = 0;
	for (size_t i = 0; i < o->n_fields && w < sz; i++)
		w += (size_t)snprintf(buf + w, sz - w, "%s%s", i ? ", " : "", o->fields[i].key);
	return buf;
}

const char *sk_lazy_path(struct sk_lazy_path *lp)
{
	if (lp->idx == SK_NO_IDX)
		return lp->base;
	if (!lp->done) {
		sk_path_idx(lp->s, sizeof(lp->s), lp->base, lp->idx);
		lp->done = true;
	}
	return lp->s;
}

/* Every key must be a string, one of the schema's keys for this mapping (policy/schema.c: the one list
 * the validator and the JSON Schema share), and present once.
 * With vals (room for o->n_fields), also hands back each field's value, the first one written, as
 * sk_node_get would find it (a key equal to a field's key is that field), in the same walk: a long
 * policy's rules otherwise spent a seventh of its load finding their keys again one by one. `where`
 * names the mapping in messages. */
void sk_gather_keys_at(struct sk_load_ctx *c, const struct sk_node *map, struct sk_lazy_path *where,
		       const struct sk_schema_obj *o, const struct sk_node **vals)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16], expected[256];
	const struct sk_node *first[32] = { 0 };  /* the first key node of each field; schema objects are small */
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		const struct sk_node *k = map->items[i];
		if (k->kind != SK_NODE_SCALAR || k->skind != SK_SCALAR_STR) {
			err_at(c, k, "%s: key is %s, expected one of %s", sk_lazy_path(where),
			       sk_node_describe(k, d, sizeof(d)), keys_text(o, expected, sizeof(expected)));
			continue;
		}
		const struct sk_schema_field *f = sk_schema_field(o, k->text);
		if (!f) {
			err_at(c, k, "%s: unknown key %s, expected one of %s", sk_lazy_path(where),
			       sk_quote(k->text, q, sizeof(q)), keys_text(o, expected, sizeof(expected)));
			continue;
		}
		const size_t fi = (size_t)(f - o->fields);
		/* An earlier key with this text is this field's first key (only string keys name a field). */
		const struct sk_node *prev = fi < SK_ARRAY_SIZE(first) ? first[fi] : NULL;
		if (fi >= SK_ARRAY_SIZE(first)) {
			for (size_t j = 0; j < i && !prev; j += 2)
				if (map->items[j]->kind == SK_NODE_SCALAR && !strcmp(map->items[j]->text, k->text))
					prev = map->items[j];
		}
		if (prev) {
			err_at(c, k, "%s: duplicate key %s (first at %u:%u), expected each key once",
			       sk_lazy_path(where), sk_quote(k->text, q, sizeof(q)), prev->line, prev->col);
			continue;
		}
		if (fi < SK_ARRAY_SIZE(first))
			first[fi] = k;
		if (vals)
			vals[fi] = map->items[i + 1];
	}
}

void sk_check_keys(struct sk_load_ctx *c, const struct sk_node *map, const char *where,
		   const struct sk_schema_obj *o)
{
	struct sk_lazy_path lp = { .base = where, .idx = SK_NO_IDX };
	sk_gather_keys_at(c, map, &lp, o, NULL);
}

const struct sk_node *sk_need(struct sk_load_ctx *c, const struct sk_node *map, const char *where,
			      const char *key, const char *expected)
{
	const struct sk_node *v = sk_node_get(map, key);
	if (!v)
		err_at(c, map, "%s: missing key '%s', expected %s", where, key, expected);
	return v;
}

/* Unsigned decimal integer in [min, max]. */
int sk_get_uint(struct sk_load_ctx *c, const struct sk_node *n, const char *path, unsigned long long min,
		unsigned long long max, const char *what, unsigned long long *out)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || n->skind != SK_SCALAR_NUM) {
		err_at(c, n, "%s: expected %s, got %s", path, what, sk_node_describe(n, d, sizeof(d)));
		return -EINVAL;
	}
	const char *t = n->text;
	const char *digits = t[0] == '-' || t[0] == '+' ? t + 1 : t;
	bool all = *digits != 0;
	for (const char *p = digits; *p && all; p++)
		all = *p >= '0' && *p <= '9';
	if (!all) {
		err_at(c, n, "%s: %s is not a whole number, expected %s", path, t, what);
		return -EINVAL;
	}
	/* strtoull's value and ERANGE, for a string known to be all decimal digits */
	unsigned long long v = 0;
	bool range = false;
	for (const char *p = digits; *p && !range; p++) {
		const unsigned dig = (unsigned)(*p - '0');
		range = v > (ULLONG_MAX - dig) / 10;
		v = v * 10 + dig;
	}
	if (t[0] == '-' || range || v < min || v > max) {
		err_at(c, n, "%s: %s is out of range, expected %s", path, t, what);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

const char *sk_get_str(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *what)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || n->skind != SK_SCALAR_STR) {
		err_at(c, n, "%s: expected %s, got %s", path, what, sk_node_describe(n, d, sizeof(d)));
		return NULL;
	}
	return n->text;
}

int sk_get_bool(struct sk_load_ctx *c, const struct sk_node *n, const char *path, bool *out)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || n->skind != SK_SCALAR_BOOL) {
		err_at(c, n, "%s: expected true or false, got %s", path, sk_node_describe(n, d, sizeof(d)));
		return -EINVAL;
	}
	*out = n->text[0] == 't' || n->text[0] == 'T';
	return 0;
}

/* The index of s among names[] (short words: compared in line, no strcmp call per name), or -1. */
int sk_enum_index(const char *s, const char *const *names, size_t n_names)
{
	for (size_t i = 0; i < n_names; i++) {
		const char *a = names[i], *b = s;
		while (*a && *a == *b) {
			a++;
			b++;
		}
		if (*a == *b)
			return (int)i;
	}
	return -1;
}

/* One of names[]; `what` is the noun in "is not a <what>". Returns the index or -1. */
int sk_get_enum(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *what,
		const char *const *names, size_t n_names, const char *expected)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || n->skind != SK_SCALAR_STR) {
		err_at(c, n, "%s: expected %s, got %s", path, expected, sk_node_describe(n, d, sizeof(d)));
		return -1;
	}
	const int i = sk_enum_index(n->text, names, n_names);
	if (i >= 0)
		return i;
	err_at(c, n, "%s: %s is not a %s, expected %s", path, sk_quote(n->text, q, sizeof(q)), what, expected);
	return -1;
}

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

size_t sk_sort_unique_u16(uint16_t *v, size_t n)
{
	if (!n || !v)
		return 0;
	if (n <= 8) {
		/* a rule's handful of ports: insertion sort, no qsort call per rule */
		for (size_t i = 1; i < n; i++) {
			uint16_t t = v[i];
			size_t j = i;
			for (; j > 0 && v[j - 1] > t; j--)
				v[j] = v[j - 1];
			v[j] = t;
		}
	} else {
		qsort(v, n, sizeof(*v), cmp_u16);
	}
	size_t o = 1;
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[o - 1])
			v[o++] = v[i];
	return o;
}

/* The common port, plain decimal 1..65535 without a sign or leading zero, read without the item's path:
 * sk_get_uint accepts exactly this and gives the same value. Anything else (a sign, zero, too long, not a
 * number) is left to sk_get_uint, which says what is wrong with it. */
bool sk_port_quiet(const struct sk_node *it, uint16_t *out)
{
	if (it->kind != SK_NODE_SCALAR || it->skind != SK_SCALAR_NUM || it->text[0] < '1' || it->text[0] > '9')
		return false;
	unsigned v = 0;
	size_t k = 0;
	for (; k < 6 && it->text[k] >= '0' && it->text[k] <= '9'; k++)
		v = v * 10 + (unsigned)(it->text[k] - '0');
	if (it->text[k] || v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

/* A list of ports 1..65535, sorted and deduplicated (listing one twice is harmless). An empty list is
 * refused: it would read as "no port" but the model says "any port". */
int sk_get_port_list(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint16_t **out,
		     size_t *n_out)
{
	char ipath[PATHSZ];
	if (!sk_want_seq(c, n, path, "ports 1..65535"))
		return -EINVAL;
	if (n->n == 0) {
		err_at(c, n, "%s: empty list, expected at least one port (leave the key out for any port)", path);
		return -EINVAL;
	}
	uint16_t *v = malloc(n->n * sizeof(*v));  /* every slot is written or v is freed: no calloc */
	if (!v) {
		err_at(c, n, "%s: out of memory", path);
		return -ENOMEM;
	}
	int ret = 0;
	for (size_t i = 0; i < n->n; i++) {
		unsigned long long p;
		if (!(c->flags & SK_LOAD_GENERAL_PATHS) && sk_port_quiet(n->items[i], &v[i]))
			continue;
		sk_path_idx(ipath, sizeof(ipath), path, i);
		if (sk_get_uint(c, n->items[i], ipath, 1, 65535, "a port 1..65535", &p) < 0)
			ret = -EINVAL;
		else
			v[i] = (uint16_t)p;
	}
	if (ret < 0) {
		free(v);
		return ret;
	}
	*n_out = sk_sort_unique_u16(v, n->n);
	*out = v;
	return 0;
}


/* [a-z0-9-]{1,63}: api names and rule names, which end up in URLs and metric labels. */
bool sk_name_ok(const char *s)
{
	size_t l = strlen(s);
	bool ok = l >= 1 && l <= 63;
	for (size_t i = 0; i < l && ok; i++)
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
	return ok;
}

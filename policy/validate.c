/* policy/validate.c — the one validator behind both native formats: walks the position-annotated tree
 * (load-internal.h), checks and normalises every field of docs/policy.md into struct sk_policy, and reports
 * every problem it finds as "path: what is wrong, expected what" at the key's or value's line:col.
 * It keeps going after an error so one run shows them all; the caller discards the model if any. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/addr.h"
#include "policy/domain.h"
#include "policy/load-internal.h"
#include "policy/requests.h"
#include "policy/schema.h"

#define PATHSZ 160

/* Path strings for messages ("egress[2].ports[0]"); a truncated path is still a useful message. */
static void pathf(char *buf, size_t sz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t sz, const char *fmt, ...)
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

static void path_key(char *buf, size_t sz, const char *base, const char *key)
{
	char a[PATHSZ];
	const size_t kl = strlen(key);
	if (kl + 1 >= sizeof(a)) {
		pathf(buf, sz, "%s.%s", base, key);
		return;
	}
	a[0] = '.';
	memcpy(a + 1, key, kl + 1);  /* with its NUL */
	path_cat(buf, sz, base, a, kl + 1, 0);
}

static void path_idx(char *buf, size_t sz, const char *base, size_t idx)
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

#define err_at(c, n, ...) sk_ctx_error((c), (n)->line, (n)->col, __VA_ARGS__)

/* ---- generic shape checks ---------------------------------------------------------------------- */

static bool want_map(struct sk_load_ctx *c, const struct sk_node *n, const char *path)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_MAP)
		return true;
	err_at(c, n, "%s: expected a mapping, got %s", path, sk_node_describe(n, d, sizeof(d)));
	return false;
}

static bool want_seq(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *of)
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

/* A message path written only when a message needs it, "base[idx]" (or base itself, with idx NO_IDX):
 * of a long policy's rules, nearly none ever has one (a rule's path and its keys' paths were a tenth of
 * its load). */
#define NO_IDX SIZE_MAX
struct lazy_path {
	const char *base;
	size_t idx;
	bool done;
	char s[PATHSZ];
};

static const char *lazy_path(struct lazy_path *lp)
{
	if (lp->idx == NO_IDX)
		return lp->base;
	if (!lp->done) {
		path_idx(lp->s, sizeof(lp->s), lp->base, lp->idx);
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
static void gather_keys_at(struct sk_load_ctx *c, const struct sk_node *map, struct lazy_path *where,
			   const struct sk_schema_obj *o, const struct sk_node **vals)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16], expected[256];
	const struct sk_node *first[32] = { 0 };  /* the first key node of each field; schema objects are small */
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		const struct sk_node *k = map->items[i];
		if (k->kind != SK_NODE_SCALAR || k->skind != SK_SCALAR_STR) {
			err_at(c, k, "%s: key is %s, expected one of %s", lazy_path(where),
			       sk_node_describe(k, d, sizeof(d)), keys_text(o, expected, sizeof(expected)));
			continue;
		}
		const struct sk_schema_field *f = sk_schema_field(o, k->text);
		if (!f) {
			err_at(c, k, "%s: unknown key %s, expected one of %s", lazy_path(where),
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
			       lazy_path(where), sk_quote(k->text, q, sizeof(q)), prev->line, prev->col);
			continue;
		}
		if (fi < SK_ARRAY_SIZE(first))
			first[fi] = k;
		if (vals)
			vals[fi] = map->items[i + 1];
	}
}

static void check_keys(struct sk_load_ctx *c, const struct sk_node *map, const char *where,
		       const struct sk_schema_obj *o)
{
	struct lazy_path lp = { .base = where, .idx = NO_IDX };
	gather_keys_at(c, map, &lp, o, NULL);
}

static const struct sk_node *need(struct sk_load_ctx *c, const struct sk_node *map, const char *where,
				  const char *key, const char *expected)
{
	const struct sk_node *v = sk_node_get(map, key);
	if (!v)
		err_at(c, map, "%s: missing key '%s', expected %s", where, key, expected);
	return v;
}

/* Unsigned decimal integer in [min, max]. */
static int get_uint(struct sk_load_ctx *c, const struct sk_node *n, const char *path, unsigned long long min,
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

static const char *get_str(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *what)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || n->skind != SK_SCALAR_STR) {
		err_at(c, n, "%s: expected %s, got %s", path, what, sk_node_describe(n, d, sizeof(d)));
		return NULL;
	}
	return n->text;
}

static int get_bool(struct sk_load_ctx *c, const struct sk_node *n, const char *path, bool *out)
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
static int enum_index(const char *s, const char *const *names, size_t n_names)
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
static int get_enum(struct sk_load_ctx *c, const struct sk_node *n, const char *path, const char *what,
		    const char *const *names, size_t n_names, const char *expected)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || n->skind != SK_SCALAR_STR) {
		err_at(c, n, "%s: expected %s, got %s", path, expected, sk_node_describe(n, d, sizeof(d)));
		return -1;
	}
	const int i = enum_index(n->text, names, n_names);
	if (i >= 0)
		return i;
	err_at(c, n, "%s: %s is not a %s, expected %s", path, sk_quote(n->text, q, sizeof(q)), what, expected);
	return -1;
}

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static size_t sort_unique_u16(uint16_t *v, size_t n)
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
 * get_uint accepts exactly this and gives the same value. Anything else (a sign, zero, too long, not a
 * number) is left to get_uint, which says what is wrong with it. */
static bool port_quiet(const struct sk_node *it, uint16_t *out)
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
static int get_port_list(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint16_t **out,
			 size_t *n_out)
{
	char ipath[PATHSZ];
	if (!want_seq(c, n, path, "ports 1..65535"))
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
		if (!(c->flags & SK_LOAD_GENERAL_PATHS) && port_quiet(n->items[i], &v[i]))
			continue;
		path_idx(ipath, sizeof(ipath), path, i);
		if (get_uint(c, n->items[i], ipath, 1, 65535, "a port 1..65535", &p) < 0)
			ret = -EINVAL;
		else
			v[i] = (uint16_t)p;
	}
	if (ret < 0) {
		free(v);
		return ret;
	}
	*n_out = sort_unique_u16(v, n->n);
	*out = v;
	return 0;
}

/* ---- names, addresses ------------------------------------------------------------------------------ */

/* Validates and normalises a host pattern into norm (SK_DOMAIN_MAX + 1 bytes). */
static int check_host_name(struct sk_load_ctx *c, const struct sk_node *n, const char *path, char *norm,
			   bool *wildcard)
{
	char q[SK_QUOTE_MAX];
	const char *s = get_str(c, n, path, "a DNS name like api.example.com or *.example.com");
	if (!s)
		return -EINVAL;
	struct sk_addr a;
	if (sk_addr_parse(s, &a) == 0) {
		err_at(c, n, "%s: %s is an IP address, expected a name (use cidr: for addresses)", path,
		       sk_quote(s, q, sizeof(q)));
		return -EINVAL;
	}
	const char *why = NULL;
	if (sk_domain_normalize(s, strlen(s), SK_DOMAIN_ALLOW_WILDCARD, norm, wildcard, &why) < 0) {
		err_at(c, n, "%s: invalid name %s: %s, expected a DNS name like api.example.com or *.example.com",
		       path, sk_quote(s, q, sizeof(q)), why ? why : "not a valid name");
		return -EINVAL;
	}
	return 0;
}

int sk_add_host_rule(struct sk_load_ctx *c, struct sk_policy *p, const struct sk_node *n, const char *path,
		     const uint16_t *ports, size_t n_ports)
{
	char norm[SK_DOMAIN_MAX + 1];
	bool wildcard = false;
	if (check_host_name(c, n, path, norm, &wildcard) < 0)
		return -EINVAL;
	struct sk_rule *r = sk_policy_add_rule(c, p);
	if (!r)
		return -ENOMEM;
	r->kind = SK_RULE_HOST;
	r->wildcard = wildcard;
	r->pos = (struct sk_pos){ n->line, n->col };
	r->host = strdup(norm);
	if (n_ports) {
		r->ports = malloc(n_ports * sizeof(*r->ports));
		if (r->ports) {
			memcpy(r->ports, ports, n_ports * sizeof(*r->ports));
			r->n_ports = n_ports;
		}
	}
	if (!r->host || (n_ports && !r->ports)) {
		err_at(c, n, "%s: out of memory", path);
		return -ENOMEM;
	}
	return 0;
}

int sk_parse_cidr_at(struct sk_load_ctx *c, const struct sk_node *n, const char *path, struct sk_cidr *out)
{
	char q[SK_QUOTE_MAX], addr[SK_ADDR_STRLEN + 8];
	static const char expected[] = "a network like 10.0.0.0/8 or fd00::/8";
	const char *s = get_str(c, n, path, expected);
	if (!s)
		return -EINVAL;
	/* One parse for a valid network; only a refused one is taken apart again below, for a message that
	 * says what is wrong with it (every check below is one sk_cidr_parse makes, so a network it accepts
	 * passes them all). */
	if (sk_cidr_parse(s, out, NULL) == 0)
		return 0;
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	struct sk_addr a;
	if (alen >= sizeof(addr) || (memcpy(addr, s, alen), addr[alen] = 0, sk_addr_parse(addr, &a) < 0)) {
		err_at(c, n, "%s: %s is not a valid address/prefix, expected %s", path, sk_quote(s, q, sizeof(q)),
		       expected);
		return -EINVAL;
	}
	const unsigned maxp = a.family == AF_INET ? 32 : 128;
	unsigned prefix = maxp;
	if (slash) {
		const char *d = slash + 1;
		size_t dl = strlen(d);
		bool ok = dl >= 1 && dl <= 3 && !(dl > 1 && d[0] == '0');
		for (size_t i = 0; i < dl && ok; i++)
			ok = d[i] >= '0' && d[i] <= '9';
		if (!ok || (prefix = (unsigned)atoi(d)) > maxp) {
			err_at(c, n, "%s: %s has an invalid prefix length, expected /0../%u", path,
			       sk_quote(s, q, sizeof(q)), maxp);
			return -EINVAL;
		}
	}
	/* Host bits set usually means a typo for a different network: say which network it would be. */
	struct sk_cidr masked = { .net = a, .prefix = (uint8_t)prefix };
	const unsigned nbytes = maxp / 8;
	for (unsigned i = 0; i < nbytes; i++) {
		unsigned bits = prefix > i * 8 ? prefix - i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
		masked.net.bytes[i] &= mask;
	}
	if (memcmp(masked.net.bytes, a.bytes, sizeof(a.bytes)) != 0) {
		char net[SK_ADDR_STRLEN + 4];
		sk_cidr_format(&masked, net);
		err_at(c, n, "%s: %s has host bits set, expected %s", path, sk_quote(s, q, sizeof(q)), net);
		return -EINVAL;
	}
	const char *why = NULL;
	if (sk_cidr_parse(s, out, &why) < 0) {
		err_at(c, n, "%s: %s: %s, expected %s", path, sk_quote(s, q, sizeof(q)), why ? why : "invalid",
		       expected);
		return -EINVAL;
	}
	return 0;
}

/* ---- budgets ------------------------------------------------------------------------------------------ */

#define SIZE_EXPECTED "a number of bytes, optionally with Ki, Mi, Gi or Ti (e.g. 10Mi)"
#define SIZE_MAX_BYTES (1ull << 50)   /* 1024Ti: far past any window, and no overflow in the counters */

/* Digits then a suffix; *num gets the value. 0 when the text is digits + one of sufs (or no suffix when
 * "" is among them); -1 otherwise. Sets *unit to the index of the suffix. */
static int split_number(const char *t, const char *const *sufs, size_t n_sufs, unsigned long long *num,
			size_t *unit)
{
	const char *p = t;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == t || p - t > 19)
		return -1;
	for (size_t i = 0; i < n_sufs; i++) {
		if (!strcmp(p, sufs[i])) {
			errno = 0;
			*num = strtoull(t, NULL, 10);
			if (errno == ERANGE)
				return -1;
			*unit = i;
			return 0;
		}
	}
	return -1;
}

/* A byte size: a whole number, or a string "<n>Ki|Mi|Gi|Ti" (binary units only: "10M" is refused rather
 * than guessed as 10^7 or 10·2^20). 1 byte .. 1024Ti. */
static int get_size(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint64_t *out)
{
	static const char *const sufs[] = { "", "Ki", "Mi", "Gi", "Ti" };
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || (n->skind != SK_SCALAR_NUM && n->skind != SK_SCALAR_STR)) {
		err_at(c, n, "%s: expected %s, got %s", path, SIZE_EXPECTED, sk_node_describe(n, d, sizeof(d)));
		return -EINVAL;
	}
	unsigned long long v = 0;
	size_t unit = 0;
	if (split_number(n->text, sufs, SK_ARRAY_SIZE(sufs), &v, &unit) < 0) {
		if (n->text[0] == '-')
			err_at(c, n, "%s: %s is negative, expected %s", path, sk_quote(n->text, q, sizeof(q)),
			       SIZE_EXPECTED);
		else
			err_at(c, n, "%s: %s is not a size, expected %s", path, sk_quote(n->text, q, sizeof(q)),
			       SIZE_EXPECTED);
		return -EINVAL;
	}
	if (v == 0) {
		err_at(c, n, "%s: 0 would allow nothing, expected at least 1 byte (leave the key out for no limit)",
		       path);
		return -EINVAL;
	}
	if (v > SIZE_MAX_BYTES >> (10 * unit)) {
		err_at(c, n, "%s: %s is too large, expected at most 1024Ti", path, sk_quote(n->text, q, sizeof(q)));
		return -EINVAL;
	}
	*out = (uint64_t)v << (10 * unit);
	return 0;
}

/* A window: "<n>s", "<n>m" or "<n>h", 1s .. 24h. */
static int get_window(struct sk_load_ctx *c, const struct sk_node *n, const char *path, uint64_t *out_ms)
{
	static const char *const sufs[] = { "s", "m", "h" };
	static const uint64_t ms[] = { 1000, 60000, 3600000 };
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind != SK_NODE_SCALAR || (n->skind != SK_SCALAR_NUM && n->skind != SK_SCALAR_STR)) {
		err_at(c, n, "%s: expected a duration like 30s, 10m or 1h, got %s", path,
		       sk_node_describe(n, d, sizeof(d)));
		return -EINVAL;
	}
	unsigned long long v = 0;
	size_t unit = 0;
	if (split_number(n->text, sufs, SK_ARRAY_SIZE(sufs), &v, &unit) < 0) {
		err_at(c, n, "%s: %s is not a duration, expected a whole number with s, m or h (e.g. 30s, 10m, 1h)",
		       path, sk_quote(n->text, q, sizeof(q)));
		return -EINVAL;
	}
	if (v == 0) {
		err_at(c, n, "%s: a window of 0 counts nothing, expected 1s to 24h", path);
		return -EINVAL;
	}
	if (v > SK_BUDGET_MAX_WINDOW_MS / ms[unit]) {
		err_at(c, n, "%s: %s is longer than 24h, expected 1s to 24h (counters live in memory)", path,
		       sk_quote(n->text, q, sizeof(q)));
		return -EINVAL;
	}
	*out_ms = (uint64_t)v * ms[unit];
	return 0;
}

/* A budget mapping: window and at least one of sent, received, connections, queries. Whether it may
 * stand where it is (the rule kind) is the caller's check. */
static int get_budget(struct sk_load_ctx *c, const struct sk_node *n, const char *path, struct sk_budget *out)
{
	char kpath[PATHSZ];
	struct sk_budget b = { 0 };
	bool bad = false;
	if (!want_map(c, n, path))
		return -EINVAL;
	check_keys(c, n, path, &sk_schema_budget);
	const struct sk_node *v;
	if ((v = sk_node_get(n, "sent"))) {
		path_key(kpath, sizeof(kpath), path, "sent");
		bad |= get_size(c, v, kpath, &b.sent) < 0;
	}
	if ((v = sk_node_get(n, "received"))) {
		path_key(kpath, sizeof(kpath), path, "received");
		bad |= get_size(c, v, kpath, &b.received) < 0;
	}
	unsigned long long u;
	if ((v = sk_node_get(n, "connections"))) {
		path_key(kpath, sizeof(kpath), path, "connections");
		if (get_uint(c, v, kpath, 1, 1ull << 40, "a number of connections >= 1", &u) < 0)
			bad = true;
		else
			b.connections = u;
	}
	if ((v = sk_node_get(n, "queries"))) {
		path_key(kpath, sizeof(kpath), path, "queries");
		if (get_uint(c, v, kpath, 1, 1ull << 40, "a number of DNS queries >= 1", &u) < 0)
			bad = true;
		else
			b.queries = u;
	}
	if ((v = need(c, n, path, "window", "a window like window: 10m (1s to 24h)"))) {
		path_key(kpath, sizeof(kpath), path, "window");
		bad |= get_window(c, v, kpath, &b.window_ms) < 0;
	} else {
		bad = true;
	}
	if (!bad && !b.sent && !b.received && !b.connections && !b.queries) {
		err_at(c, n, "%s: limits nothing, expected at least one of sent, received, connections, queries", path);
		bad = true;
	}
	if (bad)
		return -EINVAL;
	*out = b;
	return 0;
}

/* Where a budget on egress[i] is meaningful: every rule the proxy relays. A direct or udp cidr rule is
 * an nft set in the kernel — no byte of it passes the sidecar, so nothing could count or cut it. queries
 * counts the DNS names under a wildcard zone: only a wildcard host rule has such names. */
static bool rule_budget_ok(struct sk_load_ctx *c, const struct sk_node *bn, const char *path, bool host,
			   bool wildcard, bool direct, int proto, const struct sk_budget *b)
{
	if (!host && (direct || proto == SK_PROTO_UDP)) {
		err_at(c, bn, "%s: a %s cidr rule bypasses the proxy, so nothing can count its bytes; expected a "
			      "budget on a host rule or a proxied (non-direct, tcp) cidr rule", path,
		       direct ? "direct" : "udp");
		return false;
	}
	if (b->queries && !(host && wildcard)) {
		const struct sk_node *qn = sk_node_get(bn, "queries");
		char kpath[PATHSZ];
		path_key(kpath, sizeof(kpath), path, "queries");
		err_at(c, qn ? qn : bn, "%s: counts DNS names under a wildcard zone, expected it on a wildcard host "
					"rule (host: \"*.example.com\")", kpath);
		return false;
	}
	return true;
}

static void validate_budgets(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!want_map(c, n, "budgets"))
		return;
	check_keys(c, n, "budgets", &sk_schema_budgets);
	const struct sk_node *d = sk_node_get(n, "default");
	struct sk_budget b;
	if (d && get_budget(c, d, "budgets.default", &b) == 0)
		p->budget_default = b;
}

/* budgets.default goes to every proxied rule without a budget of its own (its queries only to wildcard
 * rules); then the count of budgeted rules is held to the sidecar table's cap. Runs once the whole
 * policy is known (budgets may come after egress). */
static void apply_default_budget(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p)
{
	const struct sk_budget *def = &p->budget_default;
	size_t n = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		struct sk_rule *r = &p->rules[i];
		if (def->window_ms && !r->budget.window_ms &&
		    !(r->kind == SK_RULE_CIDR && (r->direct || r->proto == SK_PROTO_UDP))) {
			struct sk_budget b = *def;
			if (!(r->kind == SK_RULE_HOST && r->wildcard))
				b.queries = 0;
			if (b.sent || b.received || b.connections || b.queries) {
				b.from_default = true;
				r->budget = b;
			}
		}
		n += r->budget.window_ms != 0;
	}
	if (n > SK_BUDGET_MAX_RULES) {
		const struct sk_node *at = sk_node_get(root, "budgets");
		if (!at)
			at = sk_node_get(root, "egress");
		err_at(c, at ? at : root, "budgets: %zu rules have a budget, expected at most %d (one counter each "
					  "in the sidecar)", n, SK_BUDGET_MAX_RULES);
	}
}

/* ---- sections ---------------------------------------------------------------------------------------- */

#define protos sk_schema_protos  /* enum sk_proto order */
#define PROTO_EXPECTED "tls, http, tcp, udp or any"

/* [a-z0-9-]{1,63}: api names and rule names, which end up in URLs and metric labels. */
static bool name_ok(const char *s)
{
	size_t l = strlen(s);
	bool ok = l >= 1 && l <= 63;
	for (size_t i = 0; i < l && ok; i++)
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
	return ok;
}

/* egress[i].name: optional, unique among the rules; the stable `rule` label of metrics and audit lines
 * (the list position changes whenever a rule is inserted above). Returns an owned copy, NULL when absent
 * or invalid (*bad set). */
static char *get_rule_name(struct sk_load_ctx *c, const struct sk_node *nn, const char *path,
			   const struct sk_policy *p, bool *bad)
{
	char q[SK_QUOTE_MAX];
	const char *s = get_str(c, nn, path, "a name [a-z0-9-]{1,63}");
	if (!s) {
		*bad = true;
		return NULL;
	}
	if (!name_ok(s)) {
		err_at(c, nn, "%s: %s is not a valid rule name, expected [a-z0-9-]{1,63}", path,
		       sk_quote(s, q, sizeof(q)));
		*bad = true;
		return NULL;
	}
	for (size_t j = 0; j < p->n_rules; j++)
		if (p->rules[j].name && !strcmp(p->rules[j].name, s)) {
			err_at(c, nn, "%s: %s is already the name of the rule at %u:%u, expected unique names", path,
			       sk_quote(s, q, sizeof(q)), p->rules[j].pos.line, p->rules[j].pos.col);
			*bad = true;
			return NULL;
		}
	char *copy = strdup(s);
	if (!copy) {
		err_at(c, nn, "%s: out of memory", path);
		*bad = true;
	}
	return copy;
}

/* Where each egress rule key sits in sk_schema_rule.fields, looked up once per egress list. */
enum { RK_HOST, RK_CIDR, RK_PORTS, RK_PROTOCOL, RK_DIRECT, RK_BUDGET, RK_NAME, RK_N };
static const char *const rule_keys[RK_N] = { "host", "cidr", "ports", "protocol", "direct", "budget", "name" };

struct rule_fields {
	size_t field[RK_N];
	size_t n_protos;
};

/* kpath = the rule's path + "." + key; only for a message now, so no faster than path_key. */
static void rule_kpath(char kpath[PATHSZ], struct lazy_path *lp, const char *key)
{
	path_key(kpath, PATHSZ, lazy_path(lp), key);
}

/* Each key of a rule is first tried without its path: the quiet checks below accept only what the
 * general one (get_port_list, get_enum, get_bool, sk_parse_cidr_at) accepts without a message, and give
 * the same value; anything else goes to the general one, with its path, for the message. */
static bool port_list_quiet(const struct sk_node *n, uint16_t **out, size_t *n_out)
{
	if (n->kind != SK_NODE_SEQ || n->n == 0)
		return false;
	uint16_t *v = malloc(n->n * sizeof(*v));
	if (!v)
		return false;
	for (size_t i = 0; i < n->n; i++) {
		if (!port_quiet(n->items[i], &v[i])) {
			free(v);
			return false;
		}
	}
	*n_out = sort_unique_u16(v, n->n);
	*out = v;
	return true;
}

static void validate_rule(struct sk_load_ctx *c, const struct sk_node *n, size_t idx, struct sk_policy *p,
			  const struct rule_fields *rf)
{
	char kpath[PATHSZ];
	struct lazy_path lp;  /* not zeroed: s is written before it is read */
	lp.base = "egress";
	lp.idx = idx;
	lp.done = false;
	const size_t n_before = p->n_rules;  /* the rule this item adds, if any, is the next one */
	if (n->kind != SK_NODE_MAP) {
		want_map(c, n, lazy_path(&lp));
		return;
	}
	const struct sk_node *vals[32] = { 0 };
	_Static_assert(RK_N <= SK_ARRAY_SIZE(vals), "vals holds every rule key");
	gather_keys_at(c, n, &lp, &sk_schema_rule, vals);
	const size_t *field = rf->field;
	const struct sk_node *host = vals[field[RK_HOST]], *cidr = vals[field[RK_CIDR]];
	const struct sk_node *pn = vals[field[RK_PORTS]], *prn = vals[field[RK_PROTOCOL]];
	const struct sk_node *dn = vals[field[RK_DIRECT]], *bn = vals[field[RK_BUDGET]];
	const struct sk_node *nn = vals[field[RK_NAME]];
	const bool quiet = !(c->flags & SK_LOAD_GENERAL_PATHS);
	bool bad = false, direct = false;
	int proto = SK_PROTO_ANY;
	uint16_t *ports = NULL;
	size_t n_ports = 0;
	struct sk_budget budget = { 0 };
	char *name = NULL;

	if (host && cidr) {
		err_at(c, n, "%s: has both host and cidr, expected exactly one of them", lazy_path(&lp));
		bad = true;
	} else if (!host && !cidr) {
		err_at(c, n, "%s: has neither host nor cidr, expected exactly one of them", lazy_path(&lp));
		bad = true;
	}
	if (pn && !(quiet && port_list_quiet(pn, &ports, &n_ports))) {
		rule_kpath(kpath, &lp, "ports");
		if (get_port_list(c, pn, kpath, &ports, &n_ports) < 0)
			bad = true;
	}
	if (prn) {
		proto = quiet && prn->kind == SK_NODE_SCALAR && prn->skind == SK_SCALAR_STR ?
				enum_index(prn->text, protos, rf->n_protos) : -1;
		if (proto < 0) {
			rule_kpath(kpath, &lp, "protocol");
			proto = get_enum(c, prn, kpath, "protocol", protos, rf->n_protos, PROTO_EXPECTED);
			if (proto < 0)
				bad = true;
		}
	}
	if (dn) {
		if (quiet && dn->kind == SK_NODE_SCALAR && dn->skind == SK_SCALAR_BOOL) {
			direct = dn->text[0] == 't' || dn->text[0] == 'T';  /* as get_bool reads it */
		} else {
			rule_kpath(kpath, &lp, "direct");
			if (get_bool(c, dn, kpath, &direct) < 0)
				bad = true;
		}
	}
	if (bn) {
		rule_kpath(kpath, &lp, "budget");
		const char *h = host && host->kind == SK_NODE_SCALAR ? host->text : "";
		if (get_budget(c, bn, kpath, &budget) < 0 ||
		    !rule_budget_ok(c, bn, kpath, host && !cidr, h[0] == '*', direct, proto, &budget))
			bad = true;
	}
	if (nn) {
		rule_kpath(kpath, &lp, "name");
		name = get_rule_name(c, nn, kpath, p, &bad);
	}
	if (host && !cidr) {
		/* The proxy decides host rules by the name it sees in a TCP stream; UDP never reaches it. */
		if (proto == SK_PROTO_UDP) {
			rule_kpath(kpath, &lp, "protocol");
			err_at(c, prn, "%s: UDP cannot be proxied by name, expected a cidr rule for udp traffic", kpath);
			bad = true;
		}
		if (direct) {
			rule_kpath(kpath, &lp, "direct");
			err_at(c, dn, "%s: only cidr rules can be direct, expected direct on a cidr rule "
				      "(a host rule is decided by name in the proxy)", kpath);
			bad = true;
		}
		rule_kpath(kpath, &lp, "host");
		if (bad) {
			char norm[SK_DOMAIN_MAX + 1];
			bool wc;
			check_host_name(c, host, kpath, norm, &wc);  /* for its messages only */
		} else if (sk_add_host_rule(c, p, host, kpath, ports, n_ports) == 0) {
			struct sk_rule *r = &p->rules[p->n_rules - 1];
			r->proto = (enum sk_proto)proto;
			r->pos = (struct sk_pos){ n->line, n->col };
			r->budget = budget;
			r->name = sk_steal_pointer(&name);
		}
	} else if (cidr && !host) {
		struct sk_cidr net;
		if (!(quiet && cidr->kind == SK_NODE_SCALAR && cidr->skind == SK_SCALAR_STR &&
		      sk_cidr_parse(cidr->text, &net, NULL) == 0)) {
			rule_kpath(kpath, &lp, "cidr");
			if (sk_parse_cidr_at(c, cidr, kpath, &net) < 0)
				bad = true;
		}
		/* A direct rule is an nft set match in the kernel: it sees ports, never a TLS or HTTP header. */
		if (direct && (proto == SK_PROTO_TLS || proto == SK_PROTO_HTTP)) {
			rule_kpath(kpath, &lp, "direct");
			err_at(c, dn, "%s: a direct rule bypasses the proxy and cannot check protocol %s, "
				      "expected protocol tcp, udp or any", kpath, protos[proto]);
			bad = true;
		}
		if (!bad) {
			struct sk_rule *r = sk_policy_add_rule(c, p);
			if (r) {
				r->kind = SK_RULE_CIDR;
				r->cidr = net;
				r->pos = (struct sk_pos){ n->line, n->col };
				r->ports = sk_steal_pointer(&ports);
				r->n_ports = n_ports;
				r->direct = direct;
				r->proto = (enum sk_proto)proto;
				r->budget = budget;
				r->name = sk_steal_pointer(&name);
			}
		}
	}
	free(ports);
	free(name);
	sk_requests_validate(c, n, lazy_path(&lp), p->n_rules > n_before ? &p->rules[p->n_rules - 1] : NULL);
}

static void validate_egress(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!want_seq(c, n, "egress", "rules"))
		return;
	struct rule_fields rf = { .n_protos = sk_schema_count(protos) };
	for (size_t k = 0; k < RK_N; k++) {
		const struct sk_schema_field *f = sk_schema_field(&sk_schema_rule, rule_keys[k]);
		if (!f) {  /* schema.c and this file disagree: a bug, refused rather than a key ignored */
			err_at(c, n, "egress: internal error: no schema field for '%s'", rule_keys[k]);
			return;
		}
		rf.field[k] = (size_t)(f - sk_schema_rule.fields);
	}
	for (size_t i = 0; i < n->n; i++)
		validate_rule(c, n->items[i], i, p, &rf);
}

static uint32_t get_uid_at(struct sk_load_ctx *c, const struct sk_node *n, const char *path, bool *ok)
{
	unsigned long long v = 0;
	if (get_uint(c, n, path, 0, 4294967294ULL, "a uid 1..4294967294", &v) < 0) {
		*ok = false;
		return 0;
	}
	if (v == 0) {
		err_at(c, n, "%s: uid 0 is root, expected a non-root uid", path);
		*ok = false;
	}
	return (uint32_t)v;
}

/* agent: {uid: N} / sidecar: {uid: N}. Returns the uid node for later cross-checks. */
static const struct sk_node *validate_uid_section(struct sk_load_ctx *c, const struct sk_node *n, const char *name,
						  uint32_t *uid, bool *ok)
{
	char path[PATHSZ];
	if (!want_map(c, n, name)) {
		*ok = false;
		return NULL;
	}
	check_keys(c, n, name, &sk_schema_uid);
	const struct sk_node *u = need(c, n, name, "uid", "uid: N");
	if (!u) {
		*ok = false;
		return NULL;
	}
	path_key(path, sizeof(path), name, "uid");
	uint32_t v = get_uid_at(c, u, path, ok);
	if (*ok)
		*uid = v;
	return u;
}

static void validate_ports(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	const struct sk_schema_obj *o = &sk_schema_ports;
	const char *keys[4];
	if (!want_map(c, n, "ports"))
		return;
	check_keys(c, n, "ports", o);
	for (size_t i = 0; i < 4; i++)
		keys[i] = o->fields[i].key;  /* proxy, dns, admin, api: the order of the slots below */
	uint16_t *slot[] = { &p->ports.proxy, &p->ports.dns, &p->ports.admin, &p->ports.api };
	const struct sk_node *where[4] = { 0 };
	char path[PATHSZ];
	for (size_t i = 0; i < 4; i++) {
		const struct sk_node *v = sk_node_get(n, keys[i]);
		unsigned long long port;
		pathf(path, sizeof(path), "ports.%s", keys[i]);
		if (v && get_uint(c, v, path, 1, 65535, "a port 1..65535", &port) == 0) {
			*slot[i] = (uint16_t)port;
			where[i] = v;
		}
	}
	for (size_t i = 0; i < 4; i++)
		for (size_t j = i + 1; j < 4; j++) {
			if (*slot[i] != *slot[j])
				continue;
			/* Report at the value the user wrote (the other one may be a default). */
			const struct sk_node *at = where[j] ? where[j] : where[i] ? where[i] : n;
			const size_t self = where[j] ? j : i, other = where[j] ? i : j;
			err_at(c, at, "ports.%s: %u collides with ports.%s, expected four different ports", keys[self],
			       *slot[i], keys[other]);
		}
}

static void validate_exempt(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	char path[PATHSZ];
	if (!want_seq(c, n, "exemptUids", "uids"))
		return;
	if (!n->n)
		return;
	p->exempt_uids = calloc(n->n, sizeof(*p->exempt_uids));
	if (!p->exempt_uids) {
		err_at(c, n, "exemptUids: out of memory");
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < n->n; i++) {
		bool ok = true;
		pathf(path, sizeof(path), "exemptUids[%zu]", i);
		uint32_t u = get_uid_at(c, n->items[i], path, &ok);
		if (!ok)
			continue;
		if (u == p->agent_uid || u == p->sidecar_uid) {
			err_at(c, n->items[i], "%s: %u is the %s uid, expected a uid other than agent and sidecar",
			       path, u, u == p->agent_uid ? "agent" : "sidecar");
			continue;
		}
		p->exempt_uids[k++] = u;
	}
	qsort(p->exempt_uids, k, sizeof(uint32_t), cmp_u32);
	size_t o = 0;
	for (size_t i = 0; i < k; i++)
		if (!o || p->exempt_uids[i] != p->exempt_uids[o - 1])
			p->exempt_uids[o++] = p->exempt_uids[i];
	p->n_exempt_uids = o;
}

#define qtypes sk_schema_qtypes

static bool upstream_ok(const char *s)
{
	struct sk_addr a;
	char buf[SK_ADDR_STRLEN + 8];
	const char *port = NULL;
	if (!strcmp(s, "resolv.conf"))
		return true;
	if (s[0] == '[') {
		const char *e = strchr(s, ']');
		if (!e || (size_t)(e - s - 1) >= sizeof(buf))
			return false;
		memcpy(buf, s + 1, (size_t)(e - s - 1));
		buf[e - s - 1] = 0;
		if (sk_addr_parse(buf, &a) < 0 || !strchr(buf, ':'))
			return false;
		if (e[1] == 0)
			return true;
		if (e[1] != ':')
			return false;
		port = e + 2;
	} else {
		const char *colon = strchr(s, ':');
		if (colon && !strchr(colon + 1, ':')) {
			if ((size_t)(colon - s) >= sizeof(buf))
				return false;
			memcpy(buf, s, (size_t)(colon - s));
			buf[colon - s] = 0;
			port = colon + 1;
		} else if (strlen(s) < sizeof(buf)) {
			memcpy(buf, s, strlen(s) + 1);
		} else {
			return false;
		}
		if (sk_addr_parse(buf, &a) < 0)
			return false;
	}
	if (!port)
		return true;
	size_t pl = strlen(port);
	if (pl < 1 || pl > 5 || port[0] == '0')
		return false;
	for (size_t i = 0; i < pl; i++)
		if (port[i] < '0' || port[i] > '9')
			return false;
	return atoi(port) <= 65535;
}

static void validate_dns(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	const char *const *denies = sk_schema_dns_denies;
	char path[PATHSZ], q[SK_QUOTE_MAX];
	if (!want_map(c, n, "dns"))
		return;
	check_keys(c, n, "dns", &sk_schema_dns);
	const struct sk_node *v;
	if ((v = sk_node_get(n, "upstream")) && want_seq(c, v, "dns.upstream", "resolvers")) {
		if (!v->n)
			err_at(c, v, "dns.upstream: empty list, expected resolv.conf or resolver addresses");
		p->dns.upstream = calloc(v->n ? v->n : 1, sizeof(char *));
		for (size_t i = 0; p->dns.upstream && i < v->n; i++) {
			pathf(path, sizeof(path), "dns.upstream[%zu]", i);
			const char *s = get_str(c, v->items[i], path, "resolv.conf or an IP address");
			if (!s)
				continue;
			if (!upstream_ok(s)) {
				err_at(c, v->items[i],
				       "%s: %s is not a resolver, expected resolv.conf or an IP address with optional "
				       "port (10.0.0.10, 10.0.0.10:53, [fd00::a]:53)", path, sk_quote(s, q, sizeof(q)));
				continue;
			}
			p->dns.upstream[p->dns.n_upstream++] = strdup(s);
		}
	}
	if ((v = sk_node_get(n, "deny"))) {
		int d = get_enum(c, v, "dns.deny", "deny answer", denies, sk_schema_count(denies), "nxdomain or refused");
		if (d >= 0)
			p->dns.deny = (enum sk_dns_deny)d;
	}
	if ((v = sk_node_get(n, "maxQueryLength"))) {
		unsigned long long m;
		if (get_uint(c, v, "dns.maxQueryLength", 1, 253, "a length 1..253", &m) == 0)
			p->dns.max_query_length = (unsigned)m;
	}
	if ((v = sk_node_get(n, "allowTypes")) && want_seq(c, v, "dns.allowTypes", "record type names")) {
		p->dns.allow_types = calloc(v->n ? v->n : 1, sizeof(uint16_t));
		for (size_t i = 0; p->dns.allow_types && i < v->n; i++) {
			pathf(path, sizeof(path), "dns.allowTypes[%zu]", i);
			const char *s = get_str(c, v->items[i], path, "a record type name like A or AAAA");
			if (!s)
				continue;
			size_t j = 0;
			while (j < sk_schema_n_qtypes && strcasecmp(qtypes[j].name, s) != 0)
				j++;
			if (j == sk_schema_n_qtypes) {
				err_at(c, v->items[i], "%s: unknown record type %s, expected a type name like A, AAAA, "
						       "CNAME, HTTPS, SVCB, MX, TXT or SRV", path, sk_quote(s, q, sizeof(q)));
				continue;
			}
			p->dns.allow_types[p->dns.n_allow_types++] = qtypes[j].type;
		}
		p->dns.n_allow_types = sort_unique_u16(p->dns.allow_types, p->dns.n_allow_types);
	}
}

static void validate_loopback(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_SEQ) {
		if (get_port_list(c, n, "loopback", &p->loopback_ports, &p->n_loopback_ports) == 0)
			p->loopback = SK_LOOPBACK_PORTS;
		return;
	}
	if (n->kind == SK_NODE_SCALAR && n->skind == SK_SCALAR_STR) {
		if (!strcmp(n->text, "allow"))
			p->loopback = SK_LOOPBACK_ALLOW;
		else if (!strcmp(n->text, "deny"))
			p->loopback = SK_LOOPBACK_DENY;
		else
			err_at(c, n, "loopback: %s is not a loopback mode, expected allow, deny or a list of ports",
			       sk_quote(n->text, q, sizeof(q)));
		return;
	}
	err_at(c, n, "loopback: expected allow, deny or a list of ports, got %s", sk_node_describe(n, d, sizeof(d)));
}

/* tls: {echGrease: allow | deny}. Proxy-only (not in the netns hash): a live reload may change it. */
static void validate_tls(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	const char *const *grease = sk_schema_ech_grease;
	if (!want_map(c, n, "tls"))
		return;
	check_keys(c, n, "tls", &sk_schema_tls);
	const struct sk_node *v;
	if ((v = sk_node_get(n, "echGrease"))) {
		int g = get_enum(c, v, "tls.echGrease", "valid setting", grease, sk_schema_count(grease),
				 "allow or deny");
		if (g >= 0)
			p->tls.ech_grease_allow = g == 1;
	}
}

static bool syscall_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static void syscall_list(struct sk_load_ctx *c, const struct sk_node *n, const char *path, char ***out,
			 struct sk_pos **pos, size_t *n_out)
{
	char ipath[PATHSZ], q[SK_QUOTE_MAX];
	if (!want_seq(c, n, path, "syscall names"))
		return;
	*out = calloc(n->n ? n->n : 1, sizeof(char *));
	*pos = calloc(n->n ? n->n : 1, sizeof(**pos));
	if (!*pos) {
		free(*out);
		*out = NULL;
	}
	for (size_t i = 0; *out && i < n->n; i++) {
		path_idx(ipath, sizeof(ipath), path, i);
		const char *s = get_str(c, n->items[i], ipath, "a syscall name");
		if (!s)
			continue;
		if (!syscall_name_ok(s)) {
			err_at(c, n->items[i], "%s: %s is not a syscall name, expected [a-z0-9_]+ like openat", ipath,
			       sk_quote(s, q, sizeof(q)));
			continue;
		}
		bool dup = false;
		for (size_t j = 0; j < *n_out && !dup; j++)
			dup = (*out)[j] && !strcmp((*out)[j], s);
		char *copy = dup ? NULL : strdup(s);
		if (copy) {
			(*pos)[*n_out] = (struct sk_pos){ n->items[i]->line, n->items[i]->col };
			(*out)[(*n_out)++] = copy;
		}
		else if (!dup)
			err_at(c, n->items[i], "%s: out of memory", ipath);
	}
}

static void validate_seccomp(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	char q[SK_QUOTE_MAX];
	if (!want_map(c, n, "seccomp"))
		return;
	check_keys(c, n, "seccomp", &sk_schema_seccomp);
	const struct sk_node *a = sk_node_get(n, "allow"), *d = sk_node_get(n, "deny");
	if (a)
		syscall_list(c, a, "seccomp.allow", &p->seccomp.allow, &p->seccomp.allow_pos, &p->seccomp.n_allow);
	if (d)
		syscall_list(c, d, "seccomp.deny", &p->seccomp.deny, &p->seccomp.deny_pos, &p->seccomp.n_deny);
	if (!d || d->kind != SK_NODE_SEQ)
		return;
	for (size_t i = 0; i < d->n; i++) {
		const struct sk_node *x = d->items[i];
		if (x->kind != SK_NODE_SCALAR)
			continue;
		for (size_t j = 0; j < p->seccomp.n_allow; j++)
			if (p->seccomp.allow[j] && !strcmp(p->seccomp.allow[j], x->text)) {
				err_at(c, x, "seccomp.deny[%zu]: %s is also in seccomp.allow, expected each syscall in one "
					     "list", i, sk_quote(x->text, q, sizeof(q)));
				break;
			}
	}
}

/* ---- apis ----------------------------------------------------------------------------------------------- */

static bool printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* https://host[:port][/path] → normalised (scheme and host lower case, no trailing slash) in *out.
 * Returns NULL on success or a static reason. */
static const char *normalize_upstream(const char *s, char **out)
{
	if (!printable_ascii(s))
		return "contains spaces, control bytes or non-ASCII";
	if (strncasecmp(s, "https://", 8) != 0)
		return "is not an https:// URL";
	if (strchr(s, '#'))
		return "has a fragment";
	if (strchr(s, '?'))
		return "has a query";
	const char *auth = s + 8, *path = auth + strcspn(auth, "/");
	size_t alen = (size_t)(path - auth);
	if (memchr(auth, '@', alen))
		return "contains userinfo (user@), which would put credentials in the URL";
	if (!alen)
		return "has no host";
	char host[SK_DOMAIN_MAX + 2];
	const char *port = NULL;
	size_t hlen;
	if (auth[0] == '[') {
		const char *e = memchr(auth, ']', alen);
		if (!e)
			return "has an unterminated [IPv6] host";
		hlen = (size_t)(e - auth - 1);
		if (hlen >= sizeof(host))
			return "has an invalid host";
		memcpy(host, auth + 1, hlen);
		host[hlen] = 0;
		struct sk_addr a;
		if (sk_addr_parse(host, &a) < 0 || !strchr(host, ':'))
			return "has an invalid [IPv6] host";
		if (e + 1 < path) {
			if (e[1] != ':')
				return "has garbage after the host";
			port = e + 2;
		}
	} else {
		const char *colon = memchr(auth, ':', alen);
		hlen = colon ? (size_t)(colon - auth) : alen;
		if (hlen == 0 || hlen >= sizeof(host))
			return "has an invalid host";
		memcpy(host, auth, hlen);
		host[hlen] = 0;
		struct sk_addr a;
		char norm[SK_DOMAIN_MAX + 1];
		bool wc = false;
		const char *why = NULL;
		if (sk_addr_parse(host, &a) < 0 && sk_domain_normalize(host, hlen, 0, norm, &wc, &why) < 0)
			return "has an invalid host name";
		if (colon)
			port = colon + 1;
	}
	if (port) {
		size_t pl = (size_t)(path - port);
		bool ok = pl >= 1 && pl <= 5 && port[0] != '0';
		for (size_t i = 0; i < pl && ok; i++)
			ok = port[i] >= '0' && port[i] <= '9';
		if (!ok || atoi(port) > 65535)
			return "has an invalid port";
	}
	size_t plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		plen--;
	if (asprintf(out, "https://%.*s%.*s", (int)alen, auth, (int)plen, path) < 0) {
		*out = NULL;
		return "out of memory";
	}
	/* Host names are case-insensitive; the path is not. */
	for (char *p = *out + 8; *p && *p != '/'; p++)
		*p = (char)tolower((unsigned char)*p);
	return NULL;
}

static bool http_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* A path the sidecar will open: must be readable now (unless the caller checks policies off-node). */
static char *get_file(struct sk_load_ctx *c, const struct sk_node *n, const char *path)
{
	char q[SK_QUOTE_MAX];
	const char *s = get_str(c, n, path, "a file path");
	if (!s)
		return NULL;
	if (!*s || !printable_ascii(s)) {
		err_at(c, n, "%s: %s is not a usable path, expected a file path without spaces or control bytes",
		       path, sk_quote(s, q, sizeof(q)));
		return NULL;
	}
	if (!(c->flags & SK_LOAD_NO_FILE_CHECKS)) {
		sk_autoclose int fd = open(s, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		struct stat st;
		int e = fd < 0 ? errno : fstat(fd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
		if (e) {
			err_at(c, n, "%s: cannot read %s: %s, expected a readable file", path, sk_quote(s, q, sizeof(q)),
			       strerror(e));
			return NULL;
		}
	}
	return strdup(s);
}

static int get_number(struct sk_load_ctx *c, const struct sk_node *n, const char *path, double *out)
{
	char d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_SCALAR && n->skind == SK_SCALAR_NUM) {
		char *end = NULL;
		double v = strtod(n->text, &end);
		if (end && !*end && isfinite(v) && v >= 0 && v <= 1e9) {
			*out = v;
			return 0;
		}
	}
	err_at(c, n, "%s: expected a number 0..1000000000, got %s", path, sk_node_describe(n, d, sizeof(d)));
	return -EINVAL;
}

static void validate_api(struct sk_load_ctx *c, const struct sk_node *n, size_t idx, struct sk_policy *p)
{
	char path[PATHSZ], kp[PATHSZ], q[SK_QUOTE_MAX];
	pathf(path, sizeof(path), "apis[%zu]", idx);
	if (!want_map(c, n, path))
		return;
	check_keys(c, n, path, &sk_schema_api);
	struct sk_api *a = &p->apis[p->n_apis++];  /* freed with p even when invalid */
	a->pos = (struct sk_pos){ n->line, n->col };
	const struct sk_node *v;

	if ((v = need(c, n, path, "name", "name: [a-z0-9-]{1,63}"))) {
		path_key(kp, sizeof(kp), path, "name");
		const char *s = get_str(c, v, kp, "a name [a-z0-9-]{1,63}");
		if (s) {
			bool ok = name_ok(s);
			if (!ok) {
				err_at(c, v, "%s: %s is not a valid api name, expected [a-z0-9-]{1,63}", kp,
				       sk_quote(s, q, sizeof(q)));
			} else {
				for (size_t j = 0; j + 1 < p->n_apis; j++)
					if (p->apis[j].name && !strcmp(p->apis[j].name, s)) {
						err_at(c, v, "%s: %s is already the name of apis[%zu], expected unique "
							     "names", kp, sk_quote(s, q, sizeof(q)), j);
						ok = false;
						break;
					}
				if (ok)
					a->name = strdup(s);
			}
		}
	}
	if ((v = need(c, n, path, "upstream", "upstream: https://host"))) {
		path_key(kp, sizeof(kp), path, "upstream");
		const char *s = get_str(c, v, kp, "an https:// URL");
		const char *why = s ? normalize_upstream(s, &a->upstream) : NULL;
		if (why)
			err_at(c, v, "%s: %s %s, expected https://host[:port][/path] without credentials, query or "
				     "fragment", kp, sk_quote(s, q, sizeof(q)), why);
	}
	if ((v = need(c, n, path, "header", "header: {name: ..., valueFile: ...}"))) {
		path_key(kp, sizeof(kp), path, "header");
		if (want_map(c, v, kp)) {
			check_keys(c, v, kp, &sk_schema_api_header);
			const struct sk_node *hn = need(c, v, kp, "name", "an HTTP header name");
			const struct sk_node *hf = need(c, v, kp, "valueFile", "the path of the secret value");
			char hp[PATHSZ];
			path_key(hp, sizeof(hp), kp, "name");
			const char *s = hn ? get_str(c, hn, hp, "an HTTP header name") : NULL;
			if (s && !http_token(s))
				err_at(c, hn, "%s: %s is not a header name, expected an HTTP token like x-api-key", hp,
				       sk_quote(s, q, sizeof(q)));
			else if (s)
				a->header_name = strdup(s);
			path_key(hp, sizeof(hp), kp, "valueFile");
			if (hf)
				a->value_file = get_file(c, hf, hp);
		}
	}
	if ((v = sk_node_get(n, "callerToken"))) {
		path_key(kp, sizeof(kp), path, "callerToken");
		a->caller_token_file = get_file(c, v, kp);
	}
	if ((v = sk_node_get(n, "caFile"))) {
		path_key(kp, sizeof(kp), path, "caFile");
		a->ca_file = get_file(c, v, kp);
	}
	if ((v = sk_node_get(n, "rateLimit"))) {
		path_key(kp, sizeof(kp), path, "rateLimit");
		if (want_map(c, v, kp)) {
			check_keys(c, v, kp, &sk_schema_api_rate);
			const struct sk_node *r = sk_node_get(v, "rps"), *b = sk_node_get(v, "burst");
			char rp[PATHSZ];
			path_key(rp, sizeof(rp), kp, "rps");
			if (r)
				get_number(c, r, rp, &a->rate);
			path_key(rp, sizeof(rp), kp, "burst");
			if (b)
				get_number(c, b, rp, &a->burst);
		}
	}
	if ((v = sk_node_get(n, "methods"))) {
		path_key(kp, sizeof(kp), path, "methods");
		if (want_seq(c, v, kp, "HTTP methods") && (a->methods = calloc(v->n ? v->n : 1, sizeof(char *)))) {
			for (size_t i = 0; i < v->n; i++) {
				char ip[PATHSZ];
				path_idx(ip, sizeof(ip), kp, i);
				const char *s = get_str(c, v->items[i], ip, "an HTTP method like GET");
				if (!s)
					continue;
				size_t l = strlen(s);
				bool ok = l >= 1 && l <= 32;
				for (size_t j = 0; j < l && ok; j++)
					ok = isalpha((unsigned char)s[j]);
				if (!ok) {
					err_at(c, v->items[i], "%s: %s is not an HTTP method, expected a name like GET "
							       "or POST", ip, sk_quote(s, q, sizeof(q)));
					continue;
				}
				char *m = strdup(s);
				for (char *x = m; x && *x; x++)
					*x = (char)toupper((unsigned char)*x);
				bool dup = false;
				for (size_t j = 0; m && j < a->n_methods && !dup; j++)
					dup = a->methods[j] && !strcmp(a->methods[j], m);
				if (dup || !m)
					free(m);
				else
					a->methods[a->n_methods++] = m;
			}
		}
	}
	if ((v = sk_node_get(n, "pathPrefixes"))) {
		path_key(kp, sizeof(kp), path, "pathPrefixes");
		if (want_seq(c, v, kp, "paths") && (a->path_prefixes = calloc(v->n ? v->n : 1, sizeof(char *)))) {
			for (size_t i = 0; i < v->n; i++) {
				char ip[PATHSZ];
				path_idx(ip, sizeof(ip), kp, i);
				const char *s = get_str(c, v->items[i], ip, "a path starting with /");
				if (!s)
					continue;
				/* A prefix with ".." could be escaped from by the request path it is meant to fence. */
				if (s[0] != '/' || !printable_ascii(s) || strpbrk(s, "?#") || strstr(s, "/../") ||
				    (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/.."))) {
					err_at(c, v->items[i], "%s: %s is not a path prefix, expected a path starting with / "
							       "without spaces, '..' segments, query or fragment",
					       ip, sk_quote(s, q, sizeof(q)));
					continue;
				}
				a->path_prefixes[a->n_path_prefixes++] = strdup(s);
			}
		}
	}
}

static void validate_apis(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	if (!want_seq(c, n, "apis", "api gateways"))
		return;
	if (!n->n)
		return;
	p->apis = calloc(n->n, sizeof(*p->apis));
	if (!p->apis) {
		err_at(c, n, "apis: out of memory");
		return;
	}
	for (size_t i = 0; i < n->n; i++)
		validate_api(c, n->items[i], i, p);
}

/* ---- rules that go around the proxy ------------------------------------------------------------------ */

/* A direct or udp cidr rule becomes an nft set in the kernel: the proxy's "only a rule lying wholly inside
 * the class names a link-local (or, with blockPrivate, private) destination" never runs for it. So such a
 * rule may not overlap a class without lying wholly inside it: 0.0.0.0/0, ::/0, 2002::/16 (6to4 images
 * of 169.254.169.254) or 100.64.0.0/10 (holds 100.100.100.200) are refused; 169.254.169.254/32,
 * 10.96.0.0/12 and 198.18.1.20/32 are not. Runs once the whole policy is known (blockPrivate may come
 * after egress). Rules are matched to their egress items by position, in order. */
static void check_bypass_rules(struct sk_load_ctx *c, const struct sk_node *egress, const struct sk_policy *p)
{
	if (!egress || egress->kind != SK_NODE_SEQ)
		return;
	size_t j = 0;
	for (size_t i = 0; i < egress->n && j < p->n_rules; i++) {
		const struct sk_node *item = egress->items[i];
		const struct sk_rule *r = &p->rules[j];
		if (r->pos.line != item->line || r->pos.col != item->col)
			continue;
		j++;
		if (r->kind != SK_RULE_CIDR || !(r->direct || r->proto == SK_PROTO_UDP))
			continue;
		const char *kind = r->direct && r->proto == SK_PROTO_UDP ? "direct udp" : r->direct ? "direct" : "udp";
		char net[SK_ADDR_STRLEN + 4], list[256];
		const struct sk_node *cn = NULL;
		if (!sk_cidr_is_link_local(&r->cidr) && sk_cidr_link_local_overlaps(&r->cidr, list, sizeof(list))) {
			cn = sk_node_get(item, "cidr");  /* where the message points */
			sk_cidr_format(&r->cidr, net);  /* for the message only */
			err_at(c, cn ? cn : item, "egress[%zu].cidr: %s is a %s rule, which goes around the proxy, and "
				"contains link-local/metadata addresses (%s); expected a block that lies wholly inside "
				"one of them or contains none", i, net, kind, list);
		} else if (p->block_private && !sk_cidr_is_private(&r->cidr) &&
			   sk_cidr_private_overlaps(&r->cidr, list, sizeof(list))) {
			cn = sk_node_get(item, "cidr");
			sk_cidr_format(&r->cidr, net);
			err_at(c, cn ? cn : item, "egress[%zu].cidr: %s is a %s rule, which goes around the proxy, and "
				"contains private addresses (%s) while blockPrivate is true; expected a block that lies "
				"wholly inside one private range or contains none", i, net, kind, list);
		}
	}
}

/* ---- top level ------------------------------------------------------------------------------------------- */

int sk_policy_dns_defaults(struct sk_policy *p)
{
	static const uint16_t def_types[] = { 1, 5, 28, 64, 65 };  /* A CNAME AAAA SVCB HTTPS, sorted */
	if (!p->dns.upstream) {
		p->dns.upstream = calloc(1, sizeof(char *));
		if (!p->dns.upstream || !(p->dns.upstream[0] = strdup("resolv.conf")))
			return -ENOMEM;
		p->dns.n_upstream = 1;
	}
	if (!p->dns.allow_types) {
		p->dns.allow_types = malloc(sizeof(def_types));
		if (!p->dns.allow_types)
			return -ENOMEM;
		memcpy(p->dns.allow_types, def_types, sizeof(def_types));
		p->dns.n_allow_types = SK_ARRAY_SIZE(def_types);
	}
	return 0;
}

void sk_validate_policy(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p)
{
	const char *const *modes = sk_schema_modes;
	char d[SK_QUOTE_MAX + 16];
	if (root->kind != SK_NODE_MAP) {
		err_at(c, root, "policy: expected a mapping starting with version: 1, got %s",
		       sk_node_describe(root, d, sizeof(d)));
		return;
	}
	check_keys(c, root, "policy", &sk_schema_policy);
	const struct sk_node *v;
	if ((v = need(c, root, "policy", "version", "version: 1"))) {
		unsigned long long ver;
		if (get_uint(c, v, "version", 0, 1ULL << 31, "1", &ver) == 0 && ver != 1)
			err_at(c, v, "version: unsupported version %llu, expected 1", ver);
	}
	if ((v = sk_node_get(root, "mode"))) {
		int m = get_enum(c, v, "mode", "mode", modes, sk_schema_count(modes), "enforce or audit");
		if (m >= 0)
			p->mode = (enum sk_mode)m;
	}
	bool agent_ok = true, sidecar_ok = true;
	if ((v = sk_node_get(root, "agent")))
		validate_uid_section(c, v, "agent", &p->agent_uid, &agent_ok);
	const struct sk_node *su = NULL;
	if ((v = sk_node_get(root, "sidecar")))
		su = validate_uid_section(c, v, "sidecar", &p->sidecar_uid, &sidecar_ok);
	/* The sidecar's UID is exempt from redirection: an agent sharing it would bypass everything. */
	if (agent_ok && sidecar_ok && p->agent_uid == p->sidecar_uid) {
		const struct sk_node *at = su ? su : sk_node_get(sk_node_get(root, "agent"), "uid");
		err_at(c, at ? at : root, "sidecar.uid: same as agent.uid (%u), expected a different uid", p->agent_uid);
	}
	if ((v = sk_node_get(root, "exemptUids")))
		validate_exempt(c, v, p);
	if ((v = sk_node_get(root, "ports")))
		validate_ports(c, v, p);
	if ((v = sk_node_get(root, "egress")))
		validate_egress(c, v, p);
	if ((v = sk_node_get(root, "dns")))
		validate_dns(c, v, p);
	if ((v = sk_node_get(root, "blockPrivate")))
		get_bool(c, v, "blockPrivate", &p->block_private);
	if ((v = sk_node_get(root, "loopback")))
		validate_loopback(c, v, p);
	if ((v = sk_node_get(root, "apis")))
		validate_apis(c, v, p);
	if ((v = sk_node_get(root, "seccomp")))
		validate_seccomp(c, v, p);
	if ((v = sk_node_get(root, "tls")))
		validate_tls(c, v, p);
	if ((v = sk_node_get(root, "budgets")))
		validate_budgets(c, v, p);
	apply_default_budget(c, root, p);
	check_bypass_rules(c, sk_node_get(root, "egress"), p);
	if (sk_policy_dns_defaults(p) < 0)
		err_at(c, root, "out of memory");
}

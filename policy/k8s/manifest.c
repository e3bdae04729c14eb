/* policy/k8s/manifest.c — YAML/JSON manifest streams ⇄ cJSON (see manifest.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "common/strbuf.h"
#include "policy/k8s/manifest.h"

#define TAG_PREFIX "tag:yaml.org,2002:"
/* cJSON keeps numbers as doubles: beyond this an integer would change silently. */
#define MAX_EXACT 9007199254740992.0
/* Keys longer than this could pass YAML's 1024-character simple-key limit once escaped (a byte becomes at
 * most six characters, \\u007F): 160 * 6 + 2 quotes < 1024. */
#define LONG_KEY 160

/* ---- YAML 1.1 plain-scalar resolution, as go-yaml v2 (kubectl) does it ---- */

static bool one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return true;
	return false;
}

static const char *const null_words[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", NULL };
static const char *const false_words[] = { "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
					   NULL };

static bool digits_in(const char *s, const char *set)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s != '_' && !strchr(set, *s))
			return false;
	return true;
}

/* Decimal (with optional sign and '_' separators), 0x hex, 0b binary, leading-0 octal. */
static bool parse_int(const char *s, double *v)
{
	bool neg = *s == '-';
	const char *d = (*s == '-' || *s == '+') ? s + 1 : s;
	int base = 10;
	if (!strncmp(d, "0x", 2)) {
		base = 16;
		d += 2;
		if (!digits_in(d, "0123456789abcdefABCDEF"))
			return false;
	} else if (!strncmp(d, "0b", 2)) {
		base = 2;
		d += 2;
		if (!digits_in(d, "01"))
			return false;
	} else if (d[0] == '0' && d[1]) {
		base = 8;
		if (!digits_in(d + 1, "01234567"))
			return false;
	} else if (!digits_in(d, "0123456789") || d[0] == '_') {
		return false;
	}
	double acc = 0;
	for (; *d; d++) {
		if (*d == '_')
			continue;
		int dv = *d >= 'a' ? *d - 'a' + 10 : *d >= 'A' ? *d - 'A' + 10 : *d - '0';
		acc = acc * base + dv;
		if (acc > MAX_EXACT * 2)
			break;
	}
	*v = neg ? -acc : acc;
	return true;
}

static bool parse_float(const char *s, double *v)
{
	const char *p = (*s == '+' || *s == '-') ? s + 1 : s;
	bool digits = false;
	while ((*p >= '0' && *p <= '9') || *p == '_')
		digits |= *p++ != '_';
	if (*p == '.') {
		p++;
		while ((*p >= '0' && *p <= '9') || *p == '_')
			digits |= *p++ != '_';
	}
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p)
		return false;
	char buf[128];
	size_t n = 0;
	for (p = s; *p && n + 1 < sizeof(buf); p++)
		if (*p != '_')
			buf[n++] = *p;
	buf[n] = 0;
	*v = strtod(buf, NULL);
	return isfinite(*v);
}

/* ---- reader ---- */

struct rd {
	const char *name;
	struct sk_err *err;
	yaml_parser_t ps;
	size_t nodes;
};

static int rd_fail(struct rd *r, const yaml_mark_t *m, const char *what, const char *expected)
{
	return sk_err_set(r->err, EINVAL, "%s:%zu:%zu: %s, expected %s", r->name, m->line + 1, m->column + 1, what,
			  expected);
}

static int rd_next(struct rd *r, yaml_event_t *ev)
{
	if (yaml_parser_parse(&r->ps, ev))
		return 0;
	const yaml_mark_t *m = &r->ps.problem_mark;
	return sk_err_set(r->err, EINVAL, "%s:%zu:%zu: YAML syntax error: %s, expected valid YAML", r->name,
			  m->line + 1, m->column + 1, r->ps.problem ? r->ps.problem : "unknown");
}

static int rd_scalar(struct rd *r, const yaml_event_t *ev, cJSON **out)
{
	const char *s = (const char *)ev->data.scalar.value;
	const char *tag = (const char *)ev->data.scalar.tag;
	if (strlen(s) != ev->data.scalar.length)
		return rd_fail(r, &ev->start_mark, "a NUL byte in a scalar", "text");
	/* "!" (non-specific) and !!str make a string; another core tag resolves as if untagged */
	if (tag && strcmp(tag, "!") && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)))
		return rd_fail(r, &ev->start_mark, "a custom tag", "plain data (no tags)");
	bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		     !(tag && (!strcmp(tag, "!") || !strcmp(tag, TAG_PREFIX "str")));
	double v;
	if (plain && one_of(s, null_words))
		*out = cJSON_CreateNull();
	else if (plain && one_of(s, true_words))
		*out = cJSON_CreateTrue();
	else if (plain && one_of(s, false_words))
		*out = cJSON_CreateFalse();
	else if (plain && parse_int(s, &v)) {
		if (fabs(v) >= MAX_EXACT)
			return rd_fail(r, &ev->start_mark, "an integer beyond 2^53", "a smaller number (or quote it)");
		*out = cJSON_CreateNumber(v);
	} else if (plain && parse_float(s, &v))
		*out = cJSON_CreateNumber(v);
	else
		*out = cJSON_CreateString(s);
	return *out ? 0 : -ENOMEM;
}

/* Reads the node whose first event is *ev (consumed by the caller's free). */
static int rd_node(struct rd *r, yaml_event_t *ev, unsigned depth, cJSON **out)
{
	*out = NULL;
	if (++r->nodes > SK_MANIFEST_MAX_NODES)
		return rd_fail(r, &ev->start_mark, "too many nodes", "a smaller document");
	if (depth > SK_MANIFEST_MAX_DEPTH)
		return rd_fail(r, &ev->start_mark, "nesting too deep", "at most 64 levels");
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return rd_fail(r, &ev->start_mark, "an alias", "plain data (anchors and aliases are not expanded)");
	case YAML_SCALAR_EVENT:
		return rd_scalar(r, ev, out);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		break;
	default:
		return rd_fail(r, &ev->start_mark, "an unexpected event", "a node");
	}
	const bool is_map = ev->type == YAML_MAPPING_START_EVENT;
	const char *tag = (const char *)(is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
	if (tag && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)))
		return rd_fail(r, &ev->start_mark, "a custom tag", "plain data (no tags)");
	cJSON *node = is_map ? cJSON_CreateObject() : cJSON_CreateArray();
	if (!node)
		return -ENOMEM;
	int rc = 0;
	for (;;) {
		yaml_event_t ch;
		if ((rc = rd_next(r, &ch)) < 0)
			break;
		if (ch.type == YAML_MAPPING_END_EVENT || ch.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ch);
			break;
		}
		if (!is_map) {
			cJSON *item;
			rc = rd_node(r, &ch, depth + 1, &item);
			yaml_event_delete(&ch);
			if (rc < 0)
				break;
			cJSON_AddItemToArray(node, item);
			continue;
		}
		/* a key: a scalar, turned into its text whatever it resolves to */
		if (ch.type != YAML_SCALAR_EVENT) {
			rc = rd_fail(r, &ch.start_mark, ch.type == YAML_ALIAS_EVENT ? "an alias key" : "a non-scalar key",
				     "a plain key");
			yaml_event_delete(&ch);
			break;
		}
		const char *key = (const char *)ch.data.scalar.value;
		if (strlen(key) != ch.data.scalar.length || (ch.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
							     !strcmp(key, "<<"))) {
			rc = rd_fail(r, &ch.start_mark, "a merge key or a NUL in a key", "plain keys");
			yaml_event_delete(&ch);
			break;
		}
		if (cJSON_GetObjectItemCaseSensitive(node, key)) {
			char what[160];
			(void)snprintf(what, sizeof(what), "duplicate key '%.100s'", key);
			rc = rd_fail(r, &ch.start_mark, what, "each key once");
			yaml_event_delete(&ch);
			break;
		}
		yaml_event_t val;
		if ((rc = rd_next(r, &val)) < 0) {
			yaml_event_delete(&ch);
			break;
		}
		cJSON *item;
		rc = rd_node(r, &val, depth + 1, &item);
		yaml_event_delete(&val);
		if (rc == 0 && !cJSON_AddItemToObject(node, key, item)) {
			cJSON_Delete(item);
			rc = -ENOMEM;
		}
		yaml_event_delete(&ch);
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		cJSON_Delete(node);
		return rc == -ENOMEM ? sk_err_set(r->err, ENOMEM, "%s: out of memory", r->name) : rc;
	}
	*out = node;
	return 0;
}

static int parse_yaml(const char *name, const char *buf, size_t len, cJSON *docs, struct sk_err *err)
{
	struct rd r = { .name = name, .err = err };
	if (!yaml_parser_initialize(&r.ps))
		return sk_err_set(err, ENOMEM, "%s: out of memory", name);
	yaml_parser_set_input_string(&r.ps, (const unsigned char *)buf, len);
	int rc = 0;
	for (;;) {
		yaml_event_t ev;
		if ((rc = rd_next(&r, &ev)) < 0)
			break;
		yaml_event_type_t t = ev.type;
		if (t == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		cJSON *doc;
		rc = rd_node(&r, &ev, 0, &doc);
		yaml_event_delete(&ev);
		if (rc < 0)
			break;
		if (cJSON_IsNull(doc))
			cJSON_Delete(doc); /* an empty document ("---" alone) carries nothing */
		else
			cJSON_AddItemToArray(docs, doc);
	}
	yaml_parser_delete(&r.ps);
	return rc;
}

/* cJSON's error pointer, turned into line:col. */
static void json_pos(const char *buf, const char *at, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (const char *p = buf; p < at; p++) {
		if (*p == '\n') {
			++*line;
			*col = 1;
		} else {
			++*col;
		}
	}
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF), as libyaml demands of YAML. */
static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
		if (n == 9)
			return false;
		unsigned cp = n ? c & (0x3f >> n) : c;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		static const unsigned min[] = { 0, 0x80, 0x800, 0x10000 };
		if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* cJSON keeps every copy of a repeated key; YAML refuses them, and which copy the API server would take is
 * not ours to guess: refused as in YAML. Sorted, not pairwise: an object of many keys stays n log n. */
static const char *check_unique_keys(const cJSON *obj)
{
	size_t n = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		n++;
	if (n < 2)
		return NULL;
	const char **keys = malloc(n * sizeof(*keys));
	if (!keys)
		return "out of memory";
	size_t i = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		keys[i++] = c->string;
	qsort(keys, n, sizeof(*keys), cmp_key);
	const char *why = NULL;
	for (i = 1; i < n && !why; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			why = "a duplicate key";
	free(keys);
	return why;
}

/* What cJSON lets through and the rest of the pipeline cannot hold: inexact integers, invalid UTF-8,
 * repeated keys. */
static const char *check_values(const cJSON *n)
{
	if (n->string && !utf8_ok((const unsigned char *)n->string))
		return "a key that is not UTF-8";
	if (cJSON_IsString(n) && !utf8_ok((const unsigned char *)n->valuestring))
		return "a string that is not UTF-8";
	if (cJSON_IsNumber(n) && !(isfinite(n->valuedouble) && fabs(n->valuedouble) < MAX_EXACT))
		return "a number beyond 2^53";
	if (cJSON_IsObject(n)) {
		const char *why = check_unique_keys(n);
		if (why)
			return why;
	}
	for (const cJSON *c = n->child; c; c = c->next) {
		const char *why = check_values(c);
		if (why)
			return why;
	}
	return NULL;
}

static int parse_json(const char *name, const char *buf, size_t len, cJSON *docs, struct sk_err *err)
{
	/* cJSON wants NUL-terminated text and stops at the first NUL; an embedded one is an error. */
	if (memchr(buf, 0, len))
		return sk_err_set(err, EINVAL, "%s: a NUL byte in the text, expected JSON", name);
	char *text = malloc(len + 1);
	if (!text)
		return sk_err_set(err, ENOMEM, "%s: out of memory", name);
	memcpy(text, buf, len);
	text[len] = 0;
	const char *p = text;
	int rc = 0;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		const char *end = NULL;
		cJSON *doc = cJSON_ParseWithOpts(p, &end, 0);
		if (!doc) {
			size_t line, col;
			json_pos(text, end ? end : p, &line, &col);
			rc = sk_err_set(err, EINVAL, "%s:%zu:%zu: JSON syntax error, expected a JSON value", name, line, col);
			break;
		}
		const char *why = check_values(doc);
		if (why) {
			size_t line, col;
			json_pos(text, p, &line, &col);
			cJSON_Delete(doc);
			rc = sk_err_set(err, EINVAL, "%s:%zu:%zu: %s in this document, expected UTF-8 text, "
					"each key once and integers below 2^53", name, line, col, why);
			break;
		}
		if (cJSON_IsNull(doc))
			cJSON_Delete(doc); /* as an empty YAML document: nothing to apply */
		else
			cJSON_AddItemToArray(docs, doc);
		p = end;
	}
	free(text);
	return rc;
}

int sk_manifest_parse(const char *name, const char *buf, size_t len, cJSON **out, bool *is_json,
		      struct sk_err *err)
{
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	*is_json = i < len && (buf[i] == '{' || buf[i] == '[');
	cJSON *docs = cJSON_CreateArray();
	if (!docs)
		return sk_err_set(err, ENOMEM, "%s: out of memory", name);
	int rc = *is_json ? parse_json(name, buf, len, docs, err) : parse_yaml(name, buf, len, docs, err);
	if (rc < 0) {
		cJSON_Delete(docs);
		return rc;
	}
	*out = docs;
	return 0;
}

/* ---- writer ---- */

/* The writer's appends fail only by running out of memory, which sticks to the buffer (common/strbuf.h):
 * sk_manifest_yaml checks once. */
static void indent(struct sk_strbuf *w, unsigned n)
{
	static const char sp[] = "                                                                ";
	while (n > 0) {
		unsigned k = n < sizeof(sp) - 1 ? n : (unsigned)sizeof(sp) - 1;
		sk_strbuf_put(w, sp, k);
		n -= k;
	}
}

/* Plain only when it cannot read back as anything but this string (YAML 1.1 and 1.2 alike). */
static bool plain_ok(const char *s)
{
	if (!*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '/' || *s == '_'))
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("_./-", *p)))
			return false;
	double v;
	return !one_of(s, null_words) && !one_of(s, true_words) && !one_of(s, false_words) && !parse_int(s, &v) &&
	       !parse_float(s, &v);
}

static void put_string(struct sk_strbuf *w, const char *s)
{
	if (plain_ok(s)) {
		sk_strbuf_puts(w, s);
		return;
	}
	sk_strbuf_put(w, "\"", 1);
	/* The text is UTF-8 (libyaml checked YAML input, check_values JSON). Escaped: what YAML does not
	 * allow raw (controls, C1, U+FFFE/U+FFFF), the line breaks NEL/LS/PS, and the BOM. */
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned c = *p, n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
		unsigned cp = n == 1 ? c : c & (0x7f >> n);
		for (unsigned i = 1; i < n; i++) {
			if ((p[i] & 0xc0) != 0x80) {
				/* not UTF-8 (a tree built by hand): one replacement character per bad byte */
				n = 1;
				cp = 0xfffd;
				break;
			}
			cp = cp << 6 | (p[i] & 0x3f);
		}
		char esc[16];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			sk_strbuf_put(w, esc, 2);
		} else if (c == '\n') {
			sk_strbuf_puts(w, "\\n");
		} else if (c == '\t') {
			sk_strbuf_puts(w, "\\t");
		} else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff ||
			   cp == 0xfffe || cp == 0xffff || cp == 0xfffd || c >= 0xf8) {
			if (c >= 0xf8)
				cp = 0xfffd;
			(void)snprintf(esc, sizeof(esc), "\\u%04X", cp);
			sk_strbuf_puts(w, esc);
		} else {
			sk_strbuf_put(w, (const char *)p, n);
		}
		p += n;
	}
	sk_strbuf_put(w, "\"", 1);
}

static void put_scalar(struct sk_strbuf *w, const cJSON *v)
{
	char num[64];
	if (cJSON_IsString(v))
		put_string(w, v->valuestring);
	else if (cJSON_IsTrue(v))
		sk_strbuf_puts(w, "true");
	else if (cJSON_IsFalse(v))
		sk_strbuf_puts(w, "false");
	else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < MAX_EXACT) {
			(void)snprintf(num, sizeof(num), "%.0f", d);
		} else {
			(void)snprintf(num, sizeof(num), "%.17g", d);
			/* a whole number past 2^53 came in as a float and must read back as one, not as an integer */
			size_t l = strlen(num);
			if (!strpbrk(num, ".e") && l + 3 <= sizeof(num))
				memcpy(num + l, ".0", 3);
		}
		sk_strbuf_puts(w, num);
	} else {
		sk_strbuf_puts(w, "null");
	}
}

static bool empty_or_scalar(const cJSON *v)
{
	return !(cJSON_IsObject(v) || cJSON_IsArray(v)) || !v->child;
}

static void put_inline(struct sk_strbuf *w, const cJSON *v)
{
	if (cJSON_IsObject(v))
		sk_strbuf_puts(w, "{}");
	else if (cJSON_IsArray(v))
		sk_strbuf_puts(w, "[]");
	else
		put_scalar(w, v);
}

static void put_node(struct sk_strbuf *w, const cJSON *v, unsigned ind, bool first_inline);

/* A block mapping at `ind`; with first_inline the first key follows a "- " already written. */
static void put_map(struct sk_strbuf *w, const cJSON *m, unsigned ind, bool first_inline)
{
	for (const cJSON *c = m->child; c; c = c->next) {
		if (!(first_inline && c == m->child))
			indent(w, ind);
		if (strlen(c->string) > LONG_KEY) {
			/* a YAML simple key is at most 1024 characters: a longer one gets the explicit "? " form */
			sk_strbuf_put(w, "? ", 2);
			put_string(w, c->string);
			sk_strbuf_put(w, "\n", 1);
			indent(w, ind);
		} else {
			put_string(w, c->string);
		}
		sk_strbuf_put(w, ":", 1);
		if (empty_or_scalar(c)) {
			sk_strbuf_put(w, " ", 1);
			put_inline(w, c);
			sk_strbuf_put(w, "\n", 1);
		} else {
			sk_strbuf_put(w, "\n", 1);
			put_node(w, c, ind + 2, false);
		}
	}
}

static void put_seq(struct sk_strbuf *w, const cJSON *a, unsigned ind, bool first_inline)
{
	for (const cJSON *c = a->child; c; c = c->next) {
		if (!(first_inline && c == a->child))
			indent(w, ind);
		sk_strbuf_put(w, "- ", 2);
		if (empty_or_scalar(c)) {
			put_inline(w, c);
			sk_strbuf_put(w, "\n", 1);
		} else {
			put_node(w, c, ind + 2, true);
		}
	}
}

static void put_node(struct sk_strbuf *w, const cJSON *v, unsigned ind, bool first_inline)
{
	if (cJSON_IsObject(v) && v->child)
		put_map(w, v, ind, first_inline);
	else if (cJSON_IsArray(v) && v->child)
		put_seq(w, v, ind, first_inline);
	else {
		if (!first_inline)
			indent(w, ind);
		put_inline(w, v);
		sk_strbuf_put(w, "\n", 1);
	}
}

char *sk_manifest_yaml(const cJSON *doc)
{
	struct sk_strbuf w = { 0 };
	put_node(&w, doc, 0, false);
	return sk_strbuf_steal(&w, NULL);   /* NULL when out of memory */
}

static const char *str_or_null(const cJSON *s)
{
	return cJSON_IsString(s) ? s->valuestring : NULL;
}

void sk_manifest_id(const cJSON *doc, struct sk_manifest_id *id)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
	id->kind = str_or_null(cJSON_GetObjectItemCaseSensitive(doc, "kind"));
	id->name = str_or_null(cJSON_GetObjectItemCaseSensitive(meta, "name"));
	id->ns = str_or_null(cJSON_GetObjectItemCaseSensitive(meta, "namespace"));
}

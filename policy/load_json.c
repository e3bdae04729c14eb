/* policy/load_json.c — JSON text → position-annotated tree. cJSON parses and decodes; it keeps no
 * positions, so a second pass walks the text in step with cJSON's tree (same order: cJSON keeps object
 * members, duplicates included, in document order) and records where each key and value starts. That
 * pass also refuses what cJSON lets through but JSON does not (leading zeros, raw control bytes in
 * strings) and "\u0000", which cJSON would silently cut a string at. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

struct scan {
	struct sk_load_ctx *c;
	const char *buf;
	size_t len;
	size_t off;            /* cursor; line/col are its position */
	unsigned line, col;
	bool failed;
};

static void advance_to(struct scan *s, size_t off)
{
	while (s->off < off && s->off < s->len) {
		unsigned char ch = (unsigned char)s->buf[s->off++];
		if (ch == '\n') {
			s->line++;
			s->col = 1;
		} else if ((ch & 0xc0) != 0x80) {
			s->col++;  /* columns count characters, as libyaml's do */
		}
	}
}

static void skip_ws(struct scan *s)
{
	size_t o = s->off;
	while (o < s->len && (s->buf[o] == ' ' || s->buf[o] == '\t' || s->buf[o] == '\n' || s->buf[o] == '\r'))
		o++;
	advance_to(s, o);
}

static void fail_here(struct scan *s, const char *what)
{
	if (!s->failed)
		sk_ctx_error(s->c, s->line, s->col, "JSON syntax error: %s", what);
	s->failed = true;
}

static bool peek(const struct scan *s, char ch)
{
	return s->off < s->len && s->buf[s->off] == ch;
}

/* Skips one string token at the cursor (cJSON already checked its escapes). */
static void scan_string(struct scan *s)
{
	if (!peek(s, '"')) {
		fail_here(s, "expected a string");
		return;
	}
	size_t o = s->off + 1;
	while (o < s->len && s->buf[o] != '"') {
		unsigned char ch = (unsigned char)s->buf[o];
		if (ch < 0x20) {
			advance_to(s, o);
			fail_here(s, "raw control byte in a string, expected it escaped");
			return;
		}
		if (ch == '\\') {
			if (o + 5 < s->len && s->buf[o + 1] == 'u' && !strncmp(s->buf + o + 2, "0000", 4)) {
				advance_to(s, o);
				fail_here(s, "\\u0000 in a string, expected text without NUL bytes");
				return;
			}
			o++;
		}
		o++;
	}
	advance_to(s, o + 1);
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* Checks the JSON number grammar at the cursor and returns its length (0 = not a valid number). */
static size_t number_len(const struct scan *s)
{
	const char *p = s->buf + s->off, *e = s->buf + s->len, *q = p;
	if (q < e && *q == '-')
		q++;
	if (q < e && *q == '0')
		q++;
	else if (q < e && is_digit(*q))
		while (q < e && is_digit(*q))
			q++;
	else
		return 0;
	if (q < e && *q == '.') {
		q++;
		if (!(q < e && is_digit(*q)))
			return 0;
		while (q < e && is_digit(*q))
			q++;
	}
	if (q < e && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		if (!(q < e && is_digit(*q)))
			return 0;
		while (q < e && is_digit(*q))
			q++;
	}
	if (q < e && (is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
		return 0;  /* "01", "1.2.3": cJSON's strtod would take a prefix */
	return (size_t)(q - p);
}

/* ---- syntax check --------------------------------------------------------------------------------
 * cJSON reports where it gave up, which is often past the real mistake (a trailing comma is reported
 * at the closing bracket's line end). This strict RFC 8259 recogniser runs first and stops exactly at
 * the first byte that cannot continue a JSON document, with what it expected there. */
struct jcheck {
	const char *b;
	size_t n, o;
	const char *why;       /* static; set at the first error, o then points at it */
};

static void jc_ws(struct jcheck *j)
{
	while (j->o < j->n && (j->b[j->o] == ' ' || j->b[j->o] == '\t' || j->b[j->o] == '\n' || j->b[j->o] == '\r'))
		j->o++;
}

static bool jc_fail(struct jcheck *j, const char *why)
{
	j->why = why;
	return false;
}

static bool jc_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static bool jc_string(struct jcheck *j)
{
	if (j->o >= j->n || j->b[j->o] != '"')
		return jc_fail(j, "expected a string");
	j->o++;
	while (j->o < j->n) {
		unsigned char ch = (unsigned char)j->b[j->o];
		if (ch == '"') {
			j->o++;
			return true;
		}
		if (ch < 0x20)
			return jc_fail(j, "raw control byte in a string, expected it escaped");
		if (ch == '\\') {
			j->o++;
			if (j->o >= j->n)
				break;
			char e = j->b[j->o];
			if (e == 'u') {
				for (int i = 1; i <= 4; i++)
					if (j->o + (size_t)i >= j->n || !jc_hex(j->b[j->o + (size_t)i]))
						return jc_fail(j, "invalid \\u escape, expected 4 hex digits");
				j->o += 4;
			} else if (!strchr("\"\\/bfnrt", e) || !e) {
				return jc_fail(j, "invalid escape in a string, expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
			}
		}
		j->o++;
	}
	return jc_fail(j, "unterminated string, expected a closing quote");
}

static bool jc_value(struct jcheck *j, unsigned depth);

static bool jc_container(struct jcheck *j, unsigned depth, bool obj)
{
	const char close = obj ? '}' : ']';
	if (depth >= SK_TREE_MAX_DEPTH)
		return jc_fail(j, "nested too deeply, expected a flatter policy");
	j->o++;
	jc_ws(j);
	if (j->o < j->n && j->b[j->o] == close) {
		j->o++;
		return true;
	}
	for (;;) {
		if (obj) {
			if (j->o >= j->n || j->b[j->o] != '"')
				return jc_fail(j, "expected a string key");
			if (!jc_string(j))
				return false;
			jc_ws(j);
			if (j->o >= j->n || j->b[j->o] != ':')
				return jc_fail(j, "expected ':' after the key");
			j->o++;
			jc_ws(j);
		}
		if (!jc_value(j, depth + 1))
			return false;
		jc_ws(j);
		if (j->o < j->n && j->b[j->o] == ',') {
			j->o++;
			jc_ws(j);
			continue;
		}
		if (j->o < j->n && j->b[j->o] == close) {
			j->o++;
			return true;
		}
		return jc_fail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static bool jc_value(struct jcheck *j, unsigned depth)
{
	if (j->o >= j->n)
		return jc_fail(j, "expected a value");
	const char ch = j->b[j->o];
	if (ch == '{' || ch == '[')
		return jc_container(j, depth, ch == '{');
	if (ch == '"')
		return jc_string(j);
	static const char *const lits[] = { "true", "false", "null" };
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(lits[i]);
		if (j->n - j->o >= l && !strncmp(j->b + j->o, lits[i], l)) {
			j->o += l;
			return true;
		}
	}
	if (ch == '-' || (ch >= '0' && ch <= '9')) {
		struct scan tmp = { .buf = j->b, .len = j->n, .off = j->o };
		size_t l = number_len(&tmp);
		if (!l)
			return jc_fail(j, "invalid number, expected JSON number syntax (no leading zeros)");
		j->o += l;
		return true;
	}
	return jc_fail(j, "expected a value");
}

static struct sk_node *walk(struct scan *s, const cJSON *item, unsigned depth);

static struct sk_node *new_scalar(struct scan *s, enum sk_scalar_kind k, const char *text, size_t len, unsigned line,
				  unsigned col)
{
	struct sk_node *n = sk_node_new(s->c, SK_NODE_SCALAR, line, col);
	if (!n || sk_node_set_text(n, text, len) < 0) {
		sk_node_free(n);
		fail_here(s, "out of memory or too many nodes");
		return NULL;
	}
	n->skind = k;
	return n;
}

static struct sk_node *walk_container(struct scan *s, const cJSON *item, unsigned depth, bool is_obj)
{
	const unsigned line = s->line, col = s->col;
	if (depth >= SK_TREE_MAX_DEPTH) {
		sk_ctx_error(s->c, line, col, "nested more than %d levels deep, expected a flatter policy",
			     SK_TREE_MAX_DEPTH);
		s->failed = true;
		return NULL;
	}
	struct sk_node *n = sk_node_new(s->c, is_obj ? SK_NODE_MAP : SK_NODE_SEQ, line, col);
	if (!n) {
		fail_here(s, "out of memory or too many nodes");
		return NULL;
	}
	advance_to(s, s->off + 1);  /* '{' or '[' */
	for (const cJSON *ch = item->child; ch && !s->failed; ch = ch->next) {
		skip_ws(s);
		if (is_obj) {
			const unsigned kl = s->line, kc = s->col;
			scan_string(s);
			if (s->failed)
				break;
			struct sk_node *k = new_scalar(s, SK_SCALAR_STR, ch->string ? ch->string : "",
						       ch->string ? strlen(ch->string) : 0, kl, kc);
			if (!k || sk_node_push(n, k) < 0) {
				fail_here(s, "out of memory");
				break;
			}
			skip_ws(s);
			if (!peek(s, ':')) {
				fail_here(s, "expected ':'");
				break;
			}
			advance_to(s, s->off + 1);
			skip_ws(s);
		}
		struct sk_node *v = walk(s, ch, depth + 1);
		if (!v || sk_node_push(n, v) < 0) {
			fail_here(s, "out of memory");
			break;
		}
		skip_ws(s);
		if (ch->next) {
			if (!peek(s, ',')) {
				fail_here(s, "expected ','");
				break;
			}
			advance_to(s, s->off + 1);
		}
	}
	if (!s->failed) {
		skip_ws(s);
		if (!peek(s, is_obj ? '}' : ']'))
			fail_here(s, is_obj ? "expected '}'" : "expected ']'");
		else
			advance_to(s, s->off + 1);
	}
	if (s->failed) {
		sk_node_free(n);
		return NULL;
	}
	return n;
}

static struct sk_node *walk(struct scan *s, const cJSON *item, unsigned depth)
{
	const unsigned line = s->line, col = s->col;
	if (cJSON_IsObject(item) || cJSON_IsArray(item))
		return walk_container(s, item, depth, cJSON_IsObject(item));
	if (cJSON_IsString(item)) {
		scan_string(s);
		if (s->failed)
			return NULL;
		return new_scalar(s, SK_SCALAR_STR, item->valuestring, strlen(item->valuestring), line, col);
	}
	if (cJSON_IsNumber(item)) {
		size_t n = number_len(s);
		if (!n) {
			fail_here(s, "invalid number, expected JSON number syntax");
			return NULL;
		}
		struct sk_node *r = new_scalar(s, SK_SCALAR_NUM, s->buf + s->off, n, line, col);
		advance_to(s, s->off + n);
		return r;
	}
	if (cJSON_IsBool(item) || cJSON_IsNull(item)) {
		const char *lit = cJSON_IsTrue(item) ? "true" : cJSON_IsFalse(item) ? "false" : "null";
		size_t n = strlen(lit);
		if (s->len - s->off < n || strncmp(s->buf + s->off, lit, n) != 0) {
			fail_here(s, "unexpected token");
			return NULL;
		}
		struct sk_node *r = new_scalar(s, cJSON_IsNull(item) ? SK_SCALAR_NULL : SK_SCALAR_BOOL, lit, n, line, col);
		advance_to(s, s->off + n);
		return r;
	}
	fail_here(s, "unexpected token");
	return NULL;
}

struct sk_node *sk_json_parse(struct sk_load_ctx *c, const char *buf, size_t len)
{
	struct scan s = { .c = c, .buf = buf, .len = len, .line = 1, .col = 1 };
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		s.off = 3;  /* cJSON skips a UTF-8 BOM too */
	struct jcheck jc = { .b = buf, .n = len, .o = s.off };
	jc_ws(&jc);
	bool ok = jc_value(&jc, 0);
	if (ok) {
		jc_ws(&jc);
		if (jc.o < len)
			ok = jc_fail(&jc, "trailing characters after the document, expected end of file");
	}
	if (!ok) {
		advance_to(&s, jc.o);
		char q[SK_QUOTE_MAX], found[2] = { jc.o < len ? buf[jc.o] : 0, 0 };
		if (strncmp(jc.why, "expected", 8) != 0)
			sk_ctx_error(c, s.line, s.col, "JSON syntax error: %s", jc.why);
		else if (jc.o < len)
			sk_ctx_error(c, s.line, s.col, "JSON syntax error: unexpected %s, %s", sk_quote(found, q, sizeof(q)),
				     jc.why);
		else
			sk_ctx_error(c, s.line, s.col, "JSON syntax error: unexpected end of input, %s", jc.why);
		return NULL;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!root) {
		size_t at = (end && end >= buf && end <= buf + len) ? (size_t)(end - buf) : len;
		advance_to(&s, at);
		char q[SK_QUOTE_MAX], near[24] = "";
		size_t nl = len - at < 16 ? len - at : 16;
		memcpy(near, buf + at, nl);
		near[nl] = 0;
		if (at >= len)
			sk_ctx_error(c, s.line, s.col, "JSON syntax error: unexpected end of input, expected valid JSON");
		else
			sk_ctx_error(c, s.line, s.col, "JSON syntax error near %s, expected valid JSON",
				     sk_quote(near, q, sizeof(q)));
		return NULL;
	}
	skip_ws(&s);
	(void)sk_tree_begin(c);  /* without an arena the nodes are malloc'd one by one: slower, same tree */
	struct sk_node *tree = walk(&s, root, 0);
	cJSON_Delete(root);
	if (!tree) {
		sk_tree_end(c, NULL);
		return NULL;
	}
	skip_ws(&s);
	if (s.off < len) {
		fail_here(&s, "trailing characters after the document, expected end of file");
		sk_node_free(tree);
		sk_tree_end(c, NULL);
		return NULL;
	}
	return sk_tree_end(c, tree);
}

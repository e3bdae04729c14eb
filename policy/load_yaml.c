/* policy/load_yaml.c — YAML text → position-annotated tree, through libyaml's event API (its marks give
 * every node's line:col). Plain scalars are resolved with the YAML 1.2 core schema (so `yes` is a string,
 * not a boolean); aliases, custom tags and multiple documents are refused: a policy is plain data, and
 * aliases are how "billion laughs" documents blow up. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy/internal.h"

#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

/* Character classes of the plain-block fast path, as a table: it tests every byte of a long policy, and
 * strchr over the same sets was a tenth of a 10 000-rule load. NUL is in no class (the fast path refuses
 * a buffer holding one before it looks at anything). */
#define CC_FLOW (1u << 0)   /* flow indicators: end a plain scalar's fast path */
#define CC_NOT_PLAIN (1u << 1)   /* cannot start a plain scalar in block context */
#define CC_NOT_FLOW_ITEM (1u << 2)   /* cannot start a plain item of a flow list */
#define CC_FLOW_ITEM_END (1u << 3)   /* end an item of a flow list */
#define CC_FLOW_ITEM_BAD (1u << 4)   /* inside a flow item: left to libyaml */
#define CC_CORE_FIRST (1u << 5)   /* can start a null, boolean or number (core schema) */
#define CC_SCAN_STOP (1u << 6)   /* a key's or plain value's scan looks at it: '\n', ':', '#', flow */

static const unsigned char cc[256] = {
	[' '] = CC_NOT_PLAIN,
	['!'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['"'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD,
	['#'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD | CC_SCAN_STOP,
	['%'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['&'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['\n'] = CC_SCAN_STOP,
	['\''] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD,
	['*'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['+'] = CC_CORE_FIRST,
	[','] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_END,
	['-'] = CC_NOT_PLAIN | CC_CORE_FIRST,
	['.'] = CC_CORE_FIRST,
	['0'] = CC_CORE_FIRST,
	['1'] = CC_CORE_FIRST,
	['2'] = CC_CORE_FIRST,
	['3'] = CC_CORE_FIRST,
	['4'] = CC_CORE_FIRST,
	['5'] = CC_CORE_FIRST,
	['6'] = CC_CORE_FIRST,
	['7'] = CC_CORE_FIRST,
	['8'] = CC_CORE_FIRST,
	['9'] = CC_CORE_FIRST,
	[':'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD | CC_SCAN_STOP,
	['>'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['?'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['@'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['F'] = CC_CORE_FIRST,
	['N'] = CC_CORE_FIRST,
	['T'] = CC_CORE_FIRST,
	['['] = CC_FLOW | CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD | CC_SCAN_STOP,
	[']'] = CC_FLOW | CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_END | CC_FLOW_ITEM_BAD | CC_SCAN_STOP,
	['`'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['f'] = CC_CORE_FIRST,
	['n'] = CC_CORE_FIRST,
	['t'] = CC_CORE_FIRST,
	['{'] = CC_FLOW | CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD | CC_SCAN_STOP,
	['|'] = CC_NOT_PLAIN | CC_NOT_FLOW_ITEM,
	['}'] = CC_FLOW | CC_NOT_PLAIN | CC_NOT_FLOW_ITEM | CC_FLOW_ITEM_BAD | CC_SCAN_STOP,
	['~'] = CC_CORE_FIRST,
};

static bool is_cc(char ch, unsigned cls)
{
	return (cc[(unsigned char)ch] & cls) != 0;
}

/* [0-9]+, [0-7]+, [0-9a-fA-F]+ over s[0..len): the core schema's integer digits. */
static bool is_dec(char ch) { return ch >= '0' && ch <= '9'; }
static bool is_oct(char ch) { return ch >= '0' && ch <= '7'; }
static bool is_hex(char ch) { return is_dec(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'); }

static bool all_of(const char *s, size_t len, bool (*cls)(char))
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!cls(s[i]))
			return false;
	return true;
}

/* s[0..len) is one of the NUL-free words w (e.g. "null", "Null", "NULL"). */
static bool word_is(const char *s, size_t len, const char *const *w, size_t n)
{
	if (len == 0 || len > 5)  /* no word of the core schema is longer */
		return false;
	for (size_t i = 0; i < n; i++)
		if (w[i][0] == s[0] && strlen(w[i]) == len && !memcmp(s, w[i], len))
			return true;
	return false;
}

static bool is_core_float(const char *s, size_t len)
{
	static const char *const inf[] = { ".inf", ".Inf", ".INF" };
	const char *const e = s + len;
	if (s < e && (*s == '+' || *s == '-'))
		s++;
	if (word_is(s, (size_t)(e - s), inf, 3))
		return true;
	bool digits = false;
	while (s < e && is_dec(*s)) {
		s++;
		digits = true;
	}
	if (s < e && *s == '.') {
		s++;
		while (s < e && is_dec(*s)) {
			s++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (s < e && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < e && (*s == '+' || *s == '-'))
			s++;
		if (!(s < e && is_dec(*s)))
			return false;
		while (s < e && is_dec(*s))
			s++;
	}
	return s == e;
}

/* YAML 1.2 core schema for plain (unquoted) scalars: s[0..len), holding no NUL. Lengths instead of
 * string comparisons: every scalar of a long policy comes through here. */
static enum sk_scalar_kind resolve_plain(const char *s, size_t len)
{
	static const char *const nulls[] = { "~", "null", "Null", "NULL" };
	static const char *const bools[] = { "true", "True", "TRUE", "false", "False", "FALSE" };
	static const char *const nans[] = { ".nan", ".NaN", ".NAN" };
	/* Most scalars are names and addresses: only these first characters can start a null, a boolean or
	 * a number, so anything else is a string without the comparisons below. */
	if (len && !is_cc(*s, CC_CORE_FIRST))
		return SK_SCALAR_STR;
	/* a letter (n, t, f in either case) starts no number: a null, a boolean or a string (tcp, nginx) */
	if (len && ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z'))
		return word_is(s, len, nulls, 4) ? SK_SCALAR_NULL :
		       word_is(s, len, bools, 6) ? SK_SCALAR_BOOL : SK_SCALAR_STR;
	/* ports and the like: a plain decimal integer */
	if (all_of(s, len, is_dec))
		return SK_SCALAR_NUM;
	/* addresses and networks (10.0.0.0/8, fd00::/8): a '/' or ':' is in no null, boolean or number */
	if (memchr(s, '/', len) || memchr(s, ':', len))
		return SK_SCALAR_STR;
	if (!len || word_is(s, len, nulls, 4))
		return SK_SCALAR_NULL;
	if (word_is(s, len, bools, 6))
		return SK_SCALAR_BOOL;
	const size_t sign = *s == '+' || *s == '-';
	if (all_of(s + sign, len - sign, is_dec) ||
	    (len > 2 && s[0] == '0' && s[1] == 'x' && all_of(s + 2, len - 2, is_hex)) ||
	    (len > 2 && s[0] == '0' && s[1] == 'o' && all_of(s + 2, len - 2, is_oct)) || is_core_float(s, len) ||
	    word_is(s, len, nans, 3))
		return SK_SCALAR_NUM;
	return SK_SCALAR_STR;
}

/* A tag is accepted only when it is one of the core schema's; it then forces the scalar's kind. */
static int check_tag(struct sk_load_ctx *c, const yaml_char_t *tag, const yaml_mark_t *m, enum sk_node_kind kind,
		     enum sk_scalar_kind *skind)
{
	if (!tag || !strcmp((const char *)tag, "!"))
		return 0;
	const char *t = (const char *)tag;
	if (!strncmp(t, YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX))) {
		const char *s = t + strlen(YAML_TAG_PREFIX);
		if (kind == SK_NODE_MAP && !strcmp(s, "map"))
			return 0;
		if (kind == SK_NODE_SEQ && !strcmp(s, "seq"))
			return 0;
		if (kind == SK_NODE_SCALAR) {
			enum sk_scalar_kind want;
			if (!strcmp(s, "str")) {
				*skind = SK_SCALAR_STR;
				return 0;
			}
			if (!strcmp(s, "int") || !strcmp(s, "float"))
				want = SK_SCALAR_NUM;
			else if (!strcmp(s, "bool"))
				want = SK_SCALAR_BOOL;
			else if (!strcmp(s, "null"))
				want = SK_SCALAR_NULL;
			else
				goto unsupported;
			if (*skind == want)
				return 0;
			sk_ctx_error(c, (unsigned)m->line + 1, (unsigned)m->column + 1,
				     "value does not match its tag !!%s, expected a value of that type", s);
			return -1;
		}
	}
unsupported:;
	char q[SK_QUOTE_MAX];
	sk_ctx_error(c, (unsigned)m->line + 1, (unsigned)m->column + 1,
		     "unsupported YAML tag %s, expected plain values (or !!str)", sk_quote(t, q, sizeof(q)));
	return -1;
}

struct builder {
	struct sk_node *root;
	struct sk_node *stack[SK_TREE_MAX_DEPTH + 1];
	size_t depth;
};

/* Attaches a finished-or-open node to the current container (or makes it the root). Takes n. */
static int attach(struct builder *b, struct sk_node *n)
{
	if (b->depth == 0) {
		if (b->root) {
			sk_node_free(n);
			return -EINVAL;
		}
		b->root = n;
		return 0;
	}
	return sk_node_push(b->stack[b->depth - 1], n);
}

static void syntax_error(struct sk_load_ctx *c, const yaml_parser_t *ps)
{
	const char *problem = ps->problem ? ps->problem : "unknown error";
	if (ps->error == YAML_MEMORY_ERROR) {
		sk_ctx_error(c, 1, 1, "out of memory while parsing YAML");
		return;
	}
	if (ps->context)
		sk_ctx_error(c, (unsigned)ps->problem_mark.line + 1, (unsigned)ps->problem_mark.column + 1,
			     "YAML syntax error: %s %s (started at %u:%u), expected valid YAML", problem,
			     ps->context, (unsigned)ps->context_mark.line + 1, (unsigned)ps->context_mark.column + 1);
	else
		sk_ctx_error(c, (unsigned)ps->problem_mark.line + 1, (unsigned)ps->problem_mark.column + 1,
			     "YAML syntax error: %s, expected valid YAML", problem);
}

/* ---- the plain-block fast path ------------------------------------------------------------------------
 * Policies are nearly always written in one small corner of YAML: block mappings and sequences indented
 * with spaces, plain one-line scalars, one-line flow lists of plain scalars (`ports: [443, 8443]`) and
 * comments. libyaml spends most of a long policy's load on its token queue and an allocation per token
 * and event; this reads that corner directly into the same tree, with the same positions and the same
 * scalar resolution. Anything outside it, or anything it is unsure of (tabs, CR, non-ASCII, quotes,
 * anchors, tags, block scalars, multi-line scalars, flow mappings, documents markers, an empty value,
 * odd indentation, any error at all) makes it give up without a trace, and libyaml parses the file: so
 * every error is still libyaml's, reported exactly as before. yaml_fast_test (load_test.c) checks both
 * paths give identical trees. */

struct fy {
	struct sk_load_ctx *c;
	char *b;             /* the text, copied into the tree's arena with a '\n' after it (so a line scan
	                      * needs no bound) and one byte more: scalars point into it */
	size_t len;          /* of the text, without that '\n' */
	char *pending_nul;   /* the end of the last scalar made: it becomes its NUL when the next one is made
	                      * (the reader never looks back past a scalar it has made) or at the end */
	size_t pos;          /* start of the current line */
	unsigned line;       /* 1-based number of the current line */
	size_t ind;          /* indentation of the current line (valid when has_line) */
	bool has_line;       /* a content line is current (pos/ind), false at the end */
	bool marker;         /* a line starts with a document marker ("---", "..."): give up */
	unsigned depth;
};

/* Moves to the next line that is neither blank nor a comment, starting at the current one. */
static void fy_skip_blank(struct fy *f)
{
	while (f->pos < f->len) {
		size_t i = f->pos;
		if ((f->b[i] == '-' || f->b[i] == '.') && f->len - i >= 3 &&
		    (!memcmp(f->b + i, "---", 3) || !memcmp(f->b + i, "...", 3))) {
			f->marker = true;  /* a document marker: libyaml's */
			break;
		}
		while (f->b[i] == ' ')  /* b[len] is '\n' */
			i++;
		if (i < f->len && f->b[i] != '\n' && f->b[i] != '#') {
			f->ind = i - f->pos;
			f->has_line = true;
			return;
		}
		while (i < f->len && f->b[i] != '\n')
			i++;
		if (i >= f->len)
			break;
		f->pos = i + 1;
		f->line++;
	}
	f->pos = f->len;
	f->has_line = false;
}

static void fy_next_line(struct fy *f, size_t from)
{
	while (f->b[from] != '\n')  /* b[len] is one */
		from++;
	if (from >= f->len) {
		f->pos = f->len;
		f->has_line = false;
		return;
	}
	f->pos = from + 1;
	f->line++;
	fy_skip_blank(f);
}

static bool fy_eol(const struct fy *f, size_t i)
{
	return f->b[i] == '\n';  /* b[len] is one: no index past it is read */
}

/* After a value: only spaces, then end of line or a comment. */
static bool fy_rest_empty(const struct fy *f, size_t i)
{
	const size_t from = i;
	while (!fy_eol(f, i) && f->b[i] == ' ')
		i++;
	return fy_eol(f, i) || (f->b[i] == '#' && i > from);
}

/* Can a plain scalar start here (in block context)? Indicators, quotes, anchors, tags and the like
 * are left to libyaml; '-' only as in "-1". */
static bool fy_plain_start(const struct fy *f, size_t i)
{
	if (fy_eol(f, i))
		return false;
	const char ch = f->b[i];
	if (ch == '-')
		return !fy_eol(f, i + 1) && ((f->b[i + 1] >= '0' && f->b[i + 1] <= '9') || f->b[i + 1] == '.');
	return !is_cc(ch, CC_NOT_PLAIN);
}

/* A scalar node whose text is b[from..to), in place: b[to] becomes its NUL once the reader is past it. */
static struct sk_node *fy_text(struct fy *f, size_t from, size_t to, size_t col)
{
	struct sk_node *n = sk_node_new(f->c, SK_NODE_SCALAR, f->line, (unsigned)col + 1);
	if (!n)
		return NULL;
	if (f->pending_nul)
		*f->pending_nul = 0;
	f->pending_nul = f->b + to;
	n->text = f->b + from;
	return n;
}

static struct sk_node *fy_scalar(struct fy *f, size_t from, size_t to, size_t col)
{
	struct sk_node *n = fy_text(f, from, to, col);
	if (n)
		n->skind = resolve_plain(n->text, to - from);
	return n;
}

/* A key on the current line at byte i: a plain scalar followed by ": " or ":" at the end of the line.
 * Returns the index of the ':' or 0 if this is not such a key. */
static size_t fy_key_end(const struct fy *f, size_t i)
{
	if (!fy_plain_start(f, i))
		return 0;
	for (size_t k = i;; k++) {
		while (!is_cc(f->b[k], CC_SCAN_STOP))  /* one table lookup per byte; b[len] is '\n' */
			k++;
		const char ch = f->b[k];
		if (ch == '\n')
			return 0;
		if (ch == ':' && (fy_eol(f, k + 1) || f->b[k + 1] == ' '))
			return f->b[k - 1] == ' ' || k - i > 1000 ? 0 : k;  /* "a : b" and very long keys: libyaml */
		if ((ch == '#' && f->b[k - 1] == ' ') || is_cc(ch, CC_FLOW))
			return 0;
	}
}

static struct sk_node *fy_block(struct fy *f, size_t col, size_t first);

/* A one-line flow sequence of plain scalars at byte i ('['); *end gets the index after ']'. */
static struct sk_node *fy_flow_seq(struct fy *f, size_t i, size_t *end)
{
	struct sk_node *seq = sk_node_new(f->c, SK_NODE_SEQ, f->line, (unsigned)(i - f->pos) + 1);
	if (!seq)
		return NULL;
	size_t k = i + 1;
	for (;;) {
		while (!fy_eol(f, k) && f->b[k] == ' ')
			k++;
		if (fy_eol(f, k))
			return NULL;
		if (f->b[k] == ']' && seq->n == 0) {
			*end = k + 1;
			return seq;
		}
		const size_t s = k;
		if (f->b[s] == '-' ? !fy_plain_start(f, s) : is_cc(f->b[s], CC_NOT_FLOW_ITEM))
			return NULL;
		while (!fy_eol(f, k) && !is_cc(f->b[k], CC_FLOW_ITEM_END)) {
			if (is_cc(f->b[k], CC_FLOW_ITEM_BAD))
				return NULL;
			k++;
		}
		if (fy_eol(f, k))
			return NULL;
		size_t e = k;
		while (e > s && f->b[e - 1] == ' ')
			e--;
		struct sk_node *it = fy_scalar(f, s, e, s - f->pos);
		if (!it || sk_node_push(seq, it) < 0)
			return NULL;
		if (f->b[k++] == ']') {
			*end = k;
			return seq;
		}
	}
}

/* The value of a "key:" or "- " whose text starts at byte i of the current line (col: the key's or
 * dash's column). Consumes through the value's last line. */
static struct sk_node *fy_value(struct fy *f, size_t i, size_t col, bool in_seq)
{
	while (!fy_eol(f, i) && f->b[i] == ' ')
		i++;
	if (fy_eol(f, i) || f->b[i] == '#') {
		/* the value is the block on the next lines */
		fy_next_line(f, i);
		if (!f->has_line)
			return NULL;
		const size_t at = f->pos + f->ind;
		const bool dash = f->b[at] == '-' && (fy_eol(f, at + 1) || f->b[at + 1] == ' ');
		if (f->ind > col || (!in_seq && f->ind == col && dash))
			return fy_block(f, f->ind, at);
		return NULL;  /* an empty value */
	}
	struct sk_node *v;
	size_t end;
	if (f->b[i] == '[') {
		v = fy_flow_seq(f, i, &end);
		if (!v || !fy_rest_empty(f, end))
			return NULL;
	} else if (f->b[i] == '"' || f->b[i] == '\'') {
		/* a one-line quoted scalar without escapes ("*.example.com"): a string as written */
		const char q = f->b[i];
		size_t k = i + 1;
		while (!fy_eol(f, k) && f->b[k] != q && f->b[k] != '\\')
			k++;
		if (fy_eol(f, k) || f->b[k] != q || (q == '\'' && !fy_eol(f, k + 1) && f->b[k + 1] == q) ||
		    !fy_rest_empty(f, k + 1))
			return NULL;
		v = fy_text(f, i + 1, k, i - f->pos);
		if (!v)
			return NULL;
		v->skind = SK_SCALAR_STR;
		end = k + 1;
	} else {
		if (!fy_plain_start(f, i))
			return NULL;
		size_t k = i;
		for (;; k++) {
			while (!is_cc(f->b[k], CC_SCAN_STOP))
				k++;
			if (f->b[k] == '\n')
				break;
			if (f->b[k] == ':' && (fy_eol(f, k + 1) || f->b[k + 1] == ' '))
				return NULL;
			if (f->b[k] == '#' && f->b[k - 1] == ' ')
				break;
			if (is_cc(f->b[k], CC_FLOW))
				return NULL;
		}
		end = k;
		while (end > i && f->b[end - 1] == ' ')
			end--;
		v = fy_scalar(f, i, end, i - f->pos);
		if (!v)
			return NULL;
	}
	fy_next_line(f, end);
	/* a more indented line after a one-line value would continue a multi-line scalar (or be an error) */
	if (f->has_line && f->ind > col)
		return NULL;
	return v;
}

/* A block mapping or sequence whose first key or dash is at byte `first` (column col) of the current
 * line, ending before the first line indented less than col. */
static struct sk_node *fy_block(struct fy *f, size_t col, size_t first)
{
	if (++f->depth > SK_TREE_MAX_DEPTH)
		return NULL;
	const bool is_seq = f->b[first] == '-' && (fy_eol(f, first + 1) || f->b[first + 1] == ' ');
	struct sk_node *n = sk_node_new(f->c, is_seq ? SK_NODE_SEQ : SK_NODE_MAP, f->line, (unsigned)col + 1);
	if (!n)
		return NULL;
	size_t at = first;
	for (;;) {
		if (is_seq) {
			/* "- " then a scalar, a flow list, or the first key of a compact mapping */
			size_t i = at + 1;
			while (!fy_eol(f, i) && f->b[i] == ' ')
				i++;
			struct sk_node *v;
			if (fy_key_end(f, i)) {
				const size_t kcol = i - f->pos;
				v = fy_block(f, kcol, i);
				if (v && f->has_line && f->ind > col && f->ind != kcol)
					return NULL;
			} else {
				if (fy_eol(f, i) || f->b[i] == '#')
					return NULL;  /* "-" alone: the entry's value on later lines */
				v = fy_value(f, i, col, true);
			}
			if (!v || sk_node_push(n, v) < 0)
				return NULL;
		} else {
			const size_t ke = fy_key_end(f, at);
			if (!ke)
				return NULL;
			size_t e = ke;
			struct sk_node *k = fy_scalar(f, at, e, col);
			if (!k || sk_node_push(n, k) < 0)
				return NULL;
			struct sk_node *v = fy_value(f, ke + 1, col, false);
			if (!v || sk_node_push(n, v) < 0)
				return NULL;
		}
		if (!f->has_line || f->ind < col)
			break;
		if (f->ind > col)
			return NULL;
		at = f->pos + f->ind;
		const bool dash = f->b[at] == '-' && (fy_eol(f, at + 1) || f->b[at + 1] == ' ');
		if (dash != is_seq) {
			/* a key after an indentless sequence ends it: its mapping goes on */
			if (is_seq && !dash)
				break;
			return NULL;
		}
	}
	f->depth--;
	return n;
}

int sk_yaml_parse_simple(struct sk_load_ctx *c, const char *buf, size_t len, struct sk_node **out)
{
	*out = NULL;
	/* Tabs, CR, NUL, control bytes and non-ASCII (columns count characters) send the file to libyaml
	 * (document markers too: fy_skip_blank sees every line start). Eight bytes at a time, each byte's
	 * class exact (the high bits masked off before any add, so no carry crosses a byte): this scan
	 * touches every byte of the file, and a newline no longer sends its word to a byte loop. */
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull, lows = ~highs;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, buf + i, 8);
		const uint64_t low7 = w & lows;
		const uint64_t ge20 = low7 + 0x60 * ones;         /* high bit: low 7 bits >= 0x20 */
		const uint64_t del = low7 + ones;                  /* high bit: low 7 bits == 0x7f */
		const uint64_t x = (w ^ 0x0a * ones) & lows;
		const uint64_t not_nl = (x + 0x7f * ones) | w;      /* high bit: byte != '\n' */
		if (((~ge20 & not_nl) | w | del) & highs)
			return 0;
	}
	for (; i < len; i++) {
		const unsigned char ch = (unsigned char)buf[i];
		if ((ch < 0x20 && ch != '\n') || ch >= 0x7f)
			return 0;
	}
	struct fy f = { .c = c, .len = len, .line = 1 };
	const size_t nodes_before = c->n_nodes;
	if (sk_tree_begin(c) < 0)
		return 0;
	f.b = sk_tree_alloc(c, len + 2);
	if (!f.b) {
		sk_tree_end(c, NULL);
		return 0;
	}
	memcpy(f.b, buf, len);
	f.b[len] = '\n';
	f.b[len + 1] = 0;
	fy_skip_blank(&f);
	struct sk_node *root = NULL;
	if (f.has_line) {
		const size_t at = f.pos + f.ind;
		if ((f.b[at] == '-' && (fy_eol(&f, at + 1) || f.b[at + 1] == ' ')) || fy_key_end(&f, at))
			root = fy_block(&f, f.ind, at);
		if (root && (f.has_line || f.marker))
			root = NULL;  /* something after the root block, or a document marker */
	}
	if (!root) {
		sk_tree_end(c, NULL);
		c->n_nodes = nodes_before;
		return 0;
	}
	if (f.pending_nul)
		*f.pending_nul = 0;
	*out = sk_tree_end(c, root);
	return 1;
}

struct sk_node *sk_yaml_parse(struct sk_load_ctx *c, const char *buf, size_t len)
{
	struct sk_node *root;
	if (!(c->flags & SK_LOAD_GENERAL_PATHS) && sk_yaml_parse_simple(c, buf, len, &root) > 0)
		return root;
	return sk_yaml_parse_events(c, buf, len);
}

struct sk_node *sk_yaml_parse_events(struct sk_load_ctx *c, const char *buf, size_t len)
{
	yaml_parser_t ps;
	yaml_event_t ev;
	struct builder b = { 0 };
	int docs = 0;
	bool done = false, failed = false;

	if (!yaml_parser_initialize(&ps)) {
		sk_ctx_error(c, 1, 1, "out of memory while parsing YAML");
		return NULL;
	}
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	(void)sk_tree_begin(c);  /* without an arena the nodes are malloc'd one by one: slower, same tree */
	while (!done && !failed) {
		if (!yaml_parser_parse(&ps, &ev)) {
			syntax_error(c, &ps);
			failed = true;
			break;
		}
		const unsigned line = (unsigned)ev.start_mark.line + 1, col = (unsigned)ev.start_mark.column + 1;
		struct sk_node *n = NULL;
		enum sk_scalar_kind sk = SK_SCALAR_STR;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				sk_ctx_error(c, line, col, "a second YAML document, expected one policy per file");
				failed = true;
			}
			break;
		case YAML_ALIAS_EVENT:
			sk_ctx_error(c, line, col, "YAML aliases are not supported, expected the value written out");
			failed = true;
			break;
		case YAML_SCALAR_EVENT:
			if (ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
				sk = resolve_plain((const char *)ev.data.scalar.value,
						   strlen((const char *)ev.data.scalar.value));
			if (check_tag(c, ev.data.scalar.tag, &ev.start_mark, SK_NODE_SCALAR, &sk) < 0) {
				failed = true;
				break;
			}
			n = sk_node_new(c, SK_NODE_SCALAR, line, col);
			if (!n || sk_node_set_text(n, (const char *)ev.data.scalar.value, ev.data.scalar.length) < 0) {
				sk_node_free(n);
				sk_ctx_error(c, line, col, "out of memory or too many YAML nodes (limit %d)",
					     SK_TREE_MAX_NODES);
				failed = true;
				break;
			}
			if (strlen(n->text) != ev.data.scalar.length) {
				sk_node_free(n);
				sk_ctx_error(c, line, col, "NUL byte in a YAML scalar, expected text");
				failed = true;
				break;
			}
			n->skind = sk;
			if (attach(&b, n) < 0) {
				sk_ctx_error(c, line, col, "out of memory while parsing YAML");
				failed = true;
			}
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT: {
			const bool is_map = ev.type == YAML_MAPPING_START_EVENT;
			const enum sk_node_kind kind = is_map ? SK_NODE_MAP : SK_NODE_SEQ;
			const yaml_char_t *tag = is_map ? ev.data.mapping_start.tag : ev.data.sequence_start.tag;
			if (check_tag(c, tag, &ev.start_mark, kind, &sk) < 0) {
				failed = true;
				break;
			}
			if (b.depth >= SK_TREE_MAX_DEPTH) {
				sk_ctx_error(c, line, col, "nested more than %d levels deep, expected a flatter policy",
					     SK_TREE_MAX_DEPTH);
				failed = true;
				break;
			}
			n = sk_node_new(c, kind, line, col);
			if (!n) {
				sk_ctx_error(c, line, col, "out of memory or too many YAML nodes (limit %d)",
					     SK_TREE_MAX_NODES);
				failed = true;
				break;
			}
			if (attach(&b, n) < 0) {
				sk_ctx_error(c, line, col, "out of memory while parsing YAML");
				failed = true;
				break;
			}
			b.stack[b.depth++] = n;  /* borrowed: owned by its parent or by b.root */
			break;
		}
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			if (b.depth > 0)
				b.depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&ps);
	if (failed) {
		sk_node_free(b.root);
		sk_tree_end(c, NULL);
		return NULL;
	}
	if (!b.root) {
		/* An empty file is a document with nothing in it: let the validator say what was expected. */
		b.root = sk_node_new(c, SK_NODE_SCALAR, 1, 1);
		if (b.root)
			b.root->skind = SK_SCALAR_NULL;
		else
			sk_ctx_error(c, 1, 1, "out of memory while parsing YAML");
	}
	return sk_tree_end(c, b.root);
}

/* policy/load_yaml.c — YAML text → position-annotated tree, through libyaml's event API (its marks give
 * every node's line:col). Plain scalars are resolved with the YAML 1.2 core schema (so `yes` is a string,
 * not a boolean); aliases, custom tags and multiple documents are refused: a policy is plain data, and
 * aliases are how "billion laughs" documents blow up. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy/load-internal.h"

#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

static bool all_digits(const char *s, const char *digits)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr(digits, *s))
			return false;
	return true;
}

static bool is_core_float(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF"))
		return true;
	bool digits = false;
	while (*s >= '0' && *s <= '9') {
		s++;
		digits = true;
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			s++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == 0;
}

/* YAML 1.2 core schema for plain (unquoted) scalars. */
static enum sk_scalar_kind resolve_plain(const char *s)
{
	if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
		return SK_SCALAR_NULL;
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") || !strcmp(s, "false") ||
	    !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return SK_SCALAR_BOOL;
	const char *d = (*s == '+' || *s == '-') ? s + 1 : s;
	if (all_digits(d, "0123456789") || (!strncmp(s, "0x", 2) && all_digits(s + 2, "0123456789abcdefABCDEF")) ||
	    (!strncmp(s, "0o", 2) && all_digits(s + 2, "01234567")) || is_core_float(s) || !strcmp(s, ".nan") ||
	    !strcmp(s, ".NaN") || !strcmp(s, ".NAN"))
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

struct sk_node *sk_yaml_parse(struct sk_load_ctx *c, const char *buf, size_t len)
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
				sk = resolve_plain((const char *)ev.data.scalar.value);
			if (check_tag(c, ev.data.scalar.tag, &ev.start_mark, SK_NODE_SCALAR, &sk) < 0) {
				failed = true;
				break;
			}
			n = sk_node_new(c, SK_NODE_SCALAR, line, col);
			if (!n || !(n->text = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length))) {
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
	return b.root;
}

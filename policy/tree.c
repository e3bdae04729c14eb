/* policy/tree.c — the position-annotated document tree both loaders produce (see internal.h): nodes, their
 * arena, the key lookup and the "got ..." description of a node. Above diag.c only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

/* ---- arena: bump allocation in chunks, freed all at once ---- */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

struct sk_arena {
	struct arena_chunk *head;
	size_t next_cap;
};

#define ARENA_FIRST_CHUNK (16u << 10)
#define ARENA_MAX_CHUNK (1u << 20)
#define NODE_BLOCK 64

static void *arena_alloc(struct sk_arena *a, size_t size, size_t align)
{
	struct arena_chunk *ch = a->head;
	if (ch) {
		size_t off = (ch->used + align - 1) & ~(align - 1);
		if (off <= ch->cap && size <= ch->cap - off) {
			ch->used = off + size;
			return ch->data + off;
		}
	}
	size_t cap = a->next_cap;
	if (cap < ARENA_MAX_CHUNK)
		a->next_cap = cap * 2;
	if (size > cap / 4) {
		/* a big block gets a chunk of its own, behind the current one, which stays in use */
		struct arena_chunk *big = malloc(sizeof(*big) + size);
		if (!big)
			return NULL;
		big->used = big->cap = size;
		if (ch) {
			big->next = ch->next;
			ch->next = big;
		} else {
			big->next = NULL;
			a->head = big;
		}
		return big->data;
	}
	ch = malloc(sizeof(*ch) + cap);
	if (!ch)
		return NULL;
	ch->next = a->head;
	ch->cap = cap;
	ch->used = size;
	a->head = ch;
	return ch->data;
}

static void arena_free(struct sk_arena *a)
{
	if (!a)
		return;
	for (struct arena_chunk *ch = a->head, *next; ch; ch = next) {
		next = ch->next;
		free(ch);
	}
	free(a);
}

void *sk_tree_alloc(struct sk_load_ctx *c, size_t size)
{
	return c->arena ? arena_alloc(c->arena, size, 16) : NULL;
}

int sk_tree_begin(struct sk_load_ctx *c)
{
	struct sk_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->next_cap = ARENA_FIRST_CHUNK;
	arena_free(c->arena);
	c->arena = a;
	c->node_next = c->node_end = NULL;
	return 0;
}

struct sk_node *sk_tree_end(struct sk_load_ctx *c, struct sk_node *root)
{
	struct sk_arena *a = c->arena;
	c->arena = NULL;
	c->node_next = c->node_end = NULL;
	if (!a)
		return root;
	if (!root || root->pool != a) {
		arena_free(a);  /* every pooled node goes with it */
		return NULL;
	}
	root->owns_pool = true;
	return root;
}

struct sk_node *sk_node_new(struct sk_load_ctx *c, enum sk_node_kind kind, unsigned line, unsigned col)
{
	if (c->n_nodes >= SK_TREE_MAX_NODES)
		return NULL;
	struct sk_node *n;
	if (c->arena) {
		/* nodes come a block at a time: one arena call per NODE_BLOCK nodes, not one each */
		if (c->node_next == c->node_end) {
			n = arena_alloc(c->arena, NODE_BLOCK * sizeof(*n), _Alignof(struct sk_node));
			if (!n)
				return NULL;
			c->node_next = n;
			c->node_end = n + NODE_BLOCK;
		}
		n = c->node_next++;
	} else {
		n = malloc(sizeof(*n));
		if (!n)
			return NULL;
	}
	*n = (struct sk_node){ .kind = kind, .line = line, .col = col, .pool = c->arena };
	c->n_nodes++;
	return n;
}

int sk_node_set_text(struct sk_node *n, const char *s, size_t len)
{
	char *t = n->pool ? arena_alloc(n->pool, len + 1, 1) : malloc(len + 1);
	if (!t)
		return -ENOMEM;
	memcpy(t, s, len);
	t[len] = 0;
	if (!n->pool)
		free(n->text);
	n->text = t;
	return 0;
}

int sk_node_push(struct sk_node *parent, struct sk_node *child)
{
	if (parent->n == parent->cap) {
		/* a list starts small: most are a rule's one or two ports */
		size_t cap = parent->cap ? parent->cap * 2 : parent->kind == SK_NODE_SEQ ? 2 : 8;
		struct sk_node **v;
		if (parent->pool) {
			/* the old array stays in the arena: growth by doubling wastes at most as much as it keeps */
			v = arena_alloc(parent->pool, cap * sizeof(struct sk_node *), _Alignof(struct sk_node *));
			if (v && parent->n)
				memcpy(v, parent->items, parent->n * sizeof(struct sk_node *));
		} else {
			v = realloc(parent->items, cap * sizeof(struct sk_node *));
		}
		if (!v) {
			sk_node_free(child);
			return -ENOMEM;
		}
		parent->items = v;
		parent->cap = cap;
	}
	parent->items[parent->n++] = child;
	return 0;
}

void sk_node_free(struct sk_node *n)
{
	if (!n)
		return;
	if (n->pool) {
		if (n->owns_pool)
			arena_free(n->pool);  /* n itself is in it */
		return;
	}
	for (size_t i = 0; i < n->n; i++)
		sk_node_free(n->items[i]);
	free(n->items);
	free(n->text);
	free(n);
}

struct sk_node *sk_node_get(const struct sk_node *map, const char *key)
{
	if (!map || map->kind != SK_NODE_MAP)
		return NULL;
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		const struct sk_node *k = map->items[i];
		if (k->kind == SK_NODE_SCALAR && k->text && !strcmp(k->text, key))
			return map->items[i + 1];
	}
	return NULL;
}

const char *sk_node_describe(const struct sk_node *n, char *buf, size_t bufsz)
{
	char q[SK_QUOTE_MAX];
	if (!n)
		return "nothing";
	switch (n->kind) {
	case SK_NODE_MAP:
		return "a mapping";
	case SK_NODE_SEQ:
		return "a list";
	case SK_NODE_SCALAR:
		break;
	}
	switch (n->skind) {
	case SK_SCALAR_NULL:
		return "null";
	case SK_SCALAR_BOOL:
		(void)snprintf(buf, bufsz, "boolean %s", n->text);
		return buf;
	case SK_SCALAR_NUM:
		(void)snprintf(buf, bufsz, "number %s", n->text);
		return buf;
	case SK_SCALAR_STR:
		break;
	}
	(void)snprintf(buf, bufsz, "string %s", sk_quote(n->text, q, sizeof(q)));
	return buf;
}

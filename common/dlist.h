/* common/dlist.h — an intrusive doubly linked list: a struct sk_dlink inside the element, a struct sk_dlist
 * (head and tail) in the owner, sk_container_of to get back from a link to its element. Nothing allocates.
 *
 * A zeroed list is empty, a zeroed link is unlinked; a link is in at most one list at a time. Unlinking a
 * link that is in no list is harmless (it stays unlinked and the list is untouched), so an owner does not
 * have to remember whether an element has already been taken out. */
#ifndef SK_COMMON_DLIST_H
#define SK_COMMON_DLIST_H

#include <stdbool.h>
#include <stddef.h>

struct sk_dlink {
	struct sk_dlink *prev, *next;
};

struct sk_dlist {
	struct sk_dlink *head, *tail;
};

/* The element of type `type` whose member `member` is the link ptr (ptr must not be NULL). */
#define sk_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
/* Same, NULL for NULL: for head, tail, next, prev and what pop returns. */
#define sk_dlist_entry(ptr, type, member) ((type *)sk_dlink_base_((ptr), offsetof(type, member)))
static inline void *sk_dlink_base_(struct sk_dlink *p, size_t off)
{
	return p ? (void *)((char *)p - off) : NULL;
}

static inline bool sk_dlist_empty(const struct sk_dlist *l)
{
	return l->head == NULL;
}

/* Takes n out of l; n's links are cleared. A link in no list (both links NULL, not l's head) is left alone. */
static inline void sk_dlist_unlink(struct sk_dlist *l, struct sk_dlink *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else if (l->head == n)
		l->head = n->next;
	else
		return;                 /* not in l */
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->prev = n->next = NULL;
}

static inline void sk_dlist_push_front(struct sk_dlist *l, struct sk_dlink *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	else
		l->tail = n;
	l->head = n;
}

static inline void sk_dlist_push_back(struct sk_dlist *l, struct sk_dlink *n)
{
	n->next = NULL;
	n->prev = l->tail;
	if (l->tail)
		l->tail->next = n;
	else
		l->head = n;
	l->tail = n;
}

/* The first link, taken out; NULL when l is empty. */
static inline struct sk_dlink *sk_dlist_pop_front(struct sk_dlist *l)
{
	struct sk_dlink *n = l->head;
	if (!n)
		return NULL;
	l->head = n->next;
	if (l->head)
		l->head->prev = NULL;
	else
		l->tail = NULL;
	n->prev = n->next = NULL;
	return n;
}

/* The last link, taken out; NULL when l is empty. */
static inline struct sk_dlink *sk_dlist_pop_back(struct sk_dlist *l)
{
	struct sk_dlink *n = l->tail;
	if (!n)
		return NULL;
	l->tail = n->prev;
	if (l->tail)
		l->tail->next = NULL;
	else
		l->head = NULL;
	n->prev = n->next = NULL;
	return n;
}

/* Moves n (in l) to the front: the "touch" of an LRU list. */
static inline void sk_dlist_move_front(struct sk_dlist *l, struct sk_dlink *n)
{
	if (l->head == n)
		return;
	sk_dlist_unlink(l, n);
	sk_dlist_push_front(l, n);
}

#endif

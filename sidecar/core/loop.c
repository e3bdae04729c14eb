/* sidecar/core/loop.c — epoll + timer heap; see loop.h for the contract. */
#include "sidecar/core/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#define SK_LOOP_BATCH 256

struct sk_loop {
	int epfd;
	uint64_t now_ms;
	bool stop;
	/* The batch being dispatched: sk_loop_del blanks entries from cur+1 on, so a callback that frees
	 * another object leaves no dangling pointer behind for this round. */
	struct epoll_event events[SK_LOOP_BATCH];
	int n_events, cur;
	struct sk_timer **heap;
	size_t n_heap, cap_heap;
	void (*turn_end)(void *ctx);   /* after each round's callbacks and timers (audit flush) */
	void *turn_end_ctx;
	struct { void (*fn)(void *ctx); void *ctx; } flush[SK_LOOP_FLUSH_MAX];   /* sk_loop_add_flush */
	uint64_t arm_seq;              /* counts sk_timer_arm calls (see run_timers) */
};

uint64_t sk_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int sk_loop_new(struct sk_loop **out, struct sk_err *err)
{
	struct sk_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return sk_err_set(err, ENOMEM, "event loop: allocate");
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int e = errno;
		free(l);
		return sk_err_sys(err, e, "event loop: epoll_create1");
	}
	l->now_ms = sk_monotonic_ms();
	*out = l;
	return 0;
}

void sk_loop_free(struct sk_loop *l)
{
	if (!l)
		return;
	close(l->epfd);
	free(l->heap);
	free(l);
}

void sk_io_init(struct sk_io *io, int fd, sk_io_cb cb, void *ctx)
{
	io->fd = fd;
	io->cb = cb;
	io->ctx = ctx;
	io->registered = false;
}

int sk_loop_add(struct sk_loop *l, struct sk_io *io, uint32_t events, struct sk_err *err)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, io->fd, &ev) < 0)
		return sk_err_sys(err, errno, "event loop: add fd %d", io->fd);
	io->registered = true;
	return 0;
}

int sk_loop_mod(struct sk_loop *l, struct sk_io *io, uint32_t events, struct sk_err *err)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
		return sk_err_sys(err, errno, "event loop: modify fd %d", io->fd);
	return 0;
}

static void blank_pending(struct sk_loop *l, const struct sk_io *io)
{
	for (int i = l->cur + 1; i < l->n_events; i++)
		if (l->events[i].data.ptr == io)
			l->events[i].data.ptr = NULL;
}

void sk_loop_del(struct sk_loop *l, struct sk_io *io)
{
	if (!io->registered)
		return;
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->registered = false;
	blank_pending(l, io);
}

void sk_loop_forget(struct sk_loop *l, struct sk_io *io)
{
	if (!io->registered)
		return;
	io->registered = false;
	blank_pending(l, io);
}

void sk_loop_set_turn_end(struct sk_loop *l, void (*fn)(void *ctx), void *ctx)
{
	l->turn_end = fn;
	l->turn_end_ctx = ctx;
}

int sk_loop_add_flush(struct sk_loop *l, void (*fn)(void *ctx), void *ctx)
{
	for (size_t i = 0; i < SK_LOOP_FLUSH_MAX; i++) {
		if (!l->flush[i].fn) {
			l->flush[i].fn = fn;
			l->flush[i].ctx = ctx;
			return 0;
		}
	}
	return -ENOSPC;
}

void sk_loop_del_flush(struct sk_loop *l, void (*fn)(void *ctx), void *ctx)
{
	for (size_t i = 0; i < SK_LOOP_FLUSH_MAX; i++)
		if (l->flush[i].fn == fn && l->flush[i].ctx == ctx)
			l->flush[i].fn = NULL;
}

/* ---- timer heap (binary heap in an array, smallest due_ms at index 0) ---- */

static void heap_set(struct sk_loop *l, size_t i, struct sk_timer *t)
{
	l->heap[i] = t;
	t->heap_idx = i;
}

static void heap_up(struct sk_loop *l, size_t i)
{
	struct sk_timer *t = l->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (l->heap[p]->due_ms <= t->due_ms)
			break;
		heap_set(l, i, l->heap[p]);
		i = p;
	}
	heap_set(l, i, t);
}

static void heap_down(struct sk_loop *l, size_t i)
{
	struct sk_timer *t = l->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= l->n_heap)
			break;
		if (c + 1 < l->n_heap && l->heap[c + 1]->due_ms < l->heap[c]->due_ms)
			c++;
		if (t->due_ms <= l->heap[c]->due_ms)
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

void sk_timer_init(struct sk_timer *t, sk_timer_cb cb, void *ctx)
{
	t->due_ms = 0;
	t->heap_idx = SIZE_MAX;
	t->arm_seq = 0;
	t->cb = cb;
	t->ctx = ctx;
}

void sk_timer_cancel(struct sk_loop *l, struct sk_timer *t)
{
	size_t i = t->heap_idx;
	if (i == SIZE_MAX)
		return;
	t->heap_idx = SIZE_MAX;
	l->n_heap--;
	if (i == l->n_heap)
		return;
	struct sk_timer *m = l->heap[l->n_heap];
	heap_set(l, i, m);
	heap_up(l, i);
	heap_down(l, m->heap_idx);
}

int sk_timer_arm(struct sk_loop *l, struct sk_timer *t, uint64_t after_ms)
{
	t->arm_seq = ++l->arm_seq;
	if (sk_timer_armed(t)) {
		uint64_t old = t->due_ms;
		t->due_ms = l->now_ms + after_ms;
		if (t->due_ms < old)
			heap_up(l, t->heap_idx);
		else
			heap_down(l, t->heap_idx);
		return 0;
	}
	if (l->n_heap == l->cap_heap) {
		size_t cap = l->cap_heap ? l->cap_heap * 2 : 64;
		struct sk_timer **h = realloc(l->heap, cap * sizeof(struct sk_timer *));
		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->cap_heap = cap;
	}
	t->due_ms = l->now_ms + after_ms;
	heap_set(l, l->n_heap++, t);
	heap_up(l, t->heap_idx);
	return 0;
}

size_t sk_loop_timers_armed(const struct sk_loop *l) { return l->n_heap; }

uint64_t sk_loop_now_ms(const struct sk_loop *l) { return l->now_ms; }

/* ---- dispatch ---- */

/* Fires the timers due now that were armed before this call: one (re-)armed by a callback of this
 * round waits for the next round, so a timer re-arming itself for "now" cannot spin the loop. */
static int run_timers(struct sk_loop *l)
{
	int n = 0;
	uint64_t armed_before = l->arm_seq;
	while (l->n_heap > 0 && l->heap[0]->due_ms <= l->now_ms && l->heap[0]->arm_seq <= armed_before) {
		struct sk_timer *t = l->heap[0];
		sk_timer_cancel(l, t);
		t->cb(l, t);
		n++;
	}
	return n;
}

int sk_loop_run_once(struct sk_loop *l, int max_wait_ms, struct sk_err *err)
{
	int wait = max_wait_ms;
	l->now_ms = sk_monotonic_ms();
	if (l->n_heap > 0) {
		uint64_t due = l->heap[0]->due_ms;
		int until = due <= l->now_ms ? 0 : (due - l->now_ms > 60000 ? 60000 : (int)(due - l->now_ms));
		if (wait < 0 || until < wait)
			wait = until;
	}
	int n = epoll_wait(l->epfd, l->events, SK_LOOP_BATCH, wait);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return sk_err_sys(err, errno, "event loop: epoll_wait");
	}
	l->now_ms = sk_monotonic_ms();
	l->n_events = n;
	int ran = 0;
	for (l->cur = 0; l->cur < l->n_events; l->cur++) {
		struct sk_io *io = l->events[l->cur].data.ptr;
		if (!io)
			continue;
		io->cb(l, io, l->events[l->cur].events);
		ran++;
	}
	l->n_events = 0;
	l->cur = 0;
	ran += run_timers(l);
	for (size_t i = 0; i < SK_LOOP_FLUSH_MAX; i++)
		if (l->flush[i].fn)
			l->flush[i].fn(l->flush[i].ctx);
	if (l->turn_end)
		l->turn_end(l->turn_end_ctx);
	return ran;
}

int sk_loop_run(struct sk_loop *l, struct sk_err *err)
{
	l->stop = false;
	while (!l->stop) {
		int r = sk_loop_run_once(l, -1, err);
		if (r < 0)
			return r;
	}
	return 0;
}

void sk_loop_stop(struct sk_loop *l) { l->stop = true; }

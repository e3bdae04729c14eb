/* sidecar/core/loop.h — the sidecar's one event loop: epoll for file descriptors, a binary min-heap of
 * timers, and a cached monotonic clock. Every server of the sidecar (proxy, DNS filter, admin, API
 * gateway) plugs in by embedding a `struct sk_io` per descriptor and a `struct sk_timer` per deadline in
 * its own objects and registering them here; the loop never allocates per event and owns nothing it is
 * handed (it borrows every sk_io and sk_timer until they are removed).
 *
 * Safety invariant: a callback may remove (and then free) any sk_io, including ones whose events are
 * still pending in the current epoll batch — sk_loop_del() blanks them, so a freed object is never
 * called. Likewise a timer cancelled by an earlier callback never fires. Single-threaded. */
#ifndef SK_SIDECAR_LOOP_H
#define SK_SIDECAR_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/util.h"

struct sk_loop;
struct sk_io;
struct sk_timer;

/* events: EPOLLIN / EPOLLOUT / EPOLLERR / EPOLLHUP / EPOLLRDHUP bits as epoll reported them. */
typedef void (*sk_io_cb)(struct sk_loop *l, struct sk_io *io, uint32_t events);
typedef void (*sk_timer_cb)(struct sk_loop *l, struct sk_timer *t);

struct sk_io {
	int fd;
	sk_io_cb cb;
	void *ctx;             /* the owner's object, for the callback */
	bool registered;
};

struct sk_timer {
	uint64_t due_ms;       /* monotonic ms */
	size_t heap_idx;       /* SIZE_MAX when not armed */
	uint64_t arm_seq;      /* the loop's arm counter when last armed: a round fires only older arms */
	sk_timer_cb cb;
	void *ctx;
};

SK_MUST_USE int sk_loop_new(struct sk_loop **out, struct sk_err *err);   /* *out owned; free with sk_loop_free */
void sk_loop_free(struct sk_loop *l);  /* closes only the epoll fd; registered fds stay the owners' */

void sk_io_init(struct sk_io *io, int fd, sk_io_cb cb, void *ctx);
/* events: EPOLLIN|EPOLLOUT|EPOLLET|... as for epoll_ctl. */
SK_MUST_USE int sk_loop_add(struct sk_loop *l, struct sk_io *io, uint32_t events, struct sk_err *err);
int sk_loop_mod(struct sk_loop *l, struct sk_io *io, uint32_t events, struct sk_err *err);
/* Removes io (no-op if not registered); pending events for it in this round are dropped. Call before
 * closing io->fd. */
void sk_loop_del(struct sk_loop *l, struct sk_io *io);
/* Like sk_loop_del without the epoll_ctl: for an fd the caller closes right away (closing removes it
 * from the epoll set). Pending events for io in this round are dropped all the same. Never use it on an
 * fd that stays open: epoll would keep reporting it with a pointer to io. */
void sk_loop_forget(struct sk_loop *l, struct sk_io *io);
/* fn(ctx) runs once at the end of every round, after the I/O callbacks and timers (one hook; NULL
 * removes it): lets a writer batch what a round produced into one write. */
void sk_loop_set_turn_end(struct sk_loop *l, void (*fn)(void *ctx), void *ctx);
/* Flushes that a component registers for itself (at most SK_LOOP_FLUSH_MAX): each fn(ctx) runs at the
 * end of every round, after the timers and before the turn-end hook, so what a round queued (the DNS
 * server's UDP replies) leaves in one batch before the loop waits again. add: 0 or -ENOSPC; del removes
 * the pair (a no-op when absent). */
#define SK_LOOP_FLUSH_MAX 4
int sk_loop_add_flush(struct sk_loop *l, void (*fn)(void *ctx), void *ctx);
void sk_loop_del_flush(struct sk_loop *l, void (*fn)(void *ctx), void *ctx);

void sk_timer_init(struct sk_timer *t, sk_timer_cb cb, void *ctx);
/* Arms (or re-arms) t to fire once, after_ms from the loop's current time. 0 or -ENOMEM. */
int sk_timer_arm(struct sk_loop *l, struct sk_timer *t, uint64_t after_ms);
void sk_timer_cancel(struct sk_loop *l, struct sk_timer *t);   /* no-op if not armed */
static inline bool sk_timer_armed(const struct sk_timer *t) { return t->heap_idx != SIZE_MAX; }

/* Monotonic milliseconds, refreshed once per round (cheap to call often). */
uint64_t sk_loop_now_ms(const struct sk_loop *l);
/* Reads the clock now (for durations measured inside one round). */
uint64_t sk_monotonic_ms(void);

/* One round: waits up to max_wait_ms (-1: until the next timer or event), dispatches I/O, then due
 * timers. Returns the number of callbacks run, or < 0 on an epoll failure. EINTR counts as 0. */
SK_MUST_USE int sk_loop_run_once(struct sk_loop *l, int max_wait_ms, struct sk_err *err);
/* Runs rounds until sk_loop_stop() is called. 0 or < 0 on an epoll failure. */
SK_MUST_USE int sk_loop_run(struct sk_loop *l, struct sk_err *err);
void sk_loop_stop(struct sk_loop *l);
size_t sk_loop_timers_armed(const struct sk_loop *l);

#endif

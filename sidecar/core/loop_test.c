/* sidecar/core/loop_test.c — the event loop's promises (loop.h): timers fire in due order and never after a
 * cancel, an sk_io removed by an earlier callback of the same round is never called, the turn-end hook
 * runs once per round after everything else, and a timer that re-arms itself for "now" cannot spin a
 * round forever. Real epoll, real eventfds. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/core/loop.h"

static struct sk_loop *new_loop(void)
{
	struct sk_loop *l = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	return l;
}

/* ---- timers ---- */

#define N_TIMERS 300

struct fired_log {
	uint64_t due[N_TIMERS];
	size_t n;
	bool cancelled[N_TIMERS];
	int wrong;                  /* fired though cancelled */
};

struct tctx {
	struct fired_log *log;
	size_t idx;
};

static void on_logged_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct tctx *c = t->ctx;
	if (c->log->cancelled[c->idx])
		c->log->wrong++;
	c->log->due[c->log->n++] = t->due_ms;
}

/* deterministic delays, so a failure replays */
static uint64_t next_delay(uint64_t *seed, uint64_t mod)
{
	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return (*seed >> 33) % mod;
}

static void test_timers_fire_in_due_order_and_never_after_cancel(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	static struct sk_timer timers[N_TIMERS];
	static struct tctx ctx[N_TIMERS];
	static struct fired_log log;
	memset(&log, 0, sizeof(log));
	uint64_t seed = 7;
	for (size_t i = 0; i < N_TIMERS; i++) {
		ctx[i] = (struct tctx){ &log, i };
		sk_timer_init(&timers[i], on_logged_timer, &ctx[i]);
		assert_int_equal(sk_timer_arm(l, &timers[i], next_delay(&seed, 30)), 0);
	}
	/* re-arm some (earlier and later), cancel a third: the heap must stay a heap through all of it */
	for (size_t i = 0; i < N_TIMERS; i += 7)
		assert_int_equal(sk_timer_arm(l, &timers[i], next_delay(&seed, 40)), 0);
	size_t expect = N_TIMERS;
	for (size_t i = 0; i < N_TIMERS; i += 3) {
		sk_timer_cancel(l, &timers[i]);
		sk_timer_cancel(l, &timers[i]);    /* twice: a no-op */
		log.cancelled[i] = true;
		assert_false(sk_timer_armed(&timers[i]));
		expect--;
	}
	assert_int_equal(sk_loop_timers_armed(l), expect);
	struct sk_err err = { 0 };
	for (int rounds = 0; sk_loop_timers_armed(l) > 0 && rounds < 1000; rounds++)
		assert_true(sk_loop_run_once(l, -1, &err) >= 0);
	assert_int_equal(log.n, expect);
	assert_int_equal(log.wrong, 0);
	for (size_t i = 1; i < log.n; i++)
		assert_true(log.due[i - 1] <= log.due[i]);
	sk_loop_free(l);
}

struct pair_ctx {
	struct sk_timer a, b;
	int fired_a, fired_b;
};

static void on_cancel_other(struct sk_loop *l, struct sk_timer *t)
{
	struct pair_ctx *p = t->ctx;
	if (t == &p->a) {
		p->fired_a++;
		sk_timer_cancel(l, &p->b);
	} else {
		p->fired_b++;
		sk_timer_cancel(l, &p->a);
	}
}

static void test_timer_cancelled_by_earlier_callback_of_same_round_never_fires(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	struct pair_ctx p = { 0 };
	sk_timer_init(&p.a, on_cancel_other, &p);
	sk_timer_init(&p.b, on_cancel_other, &p);
	assert_int_equal(sk_timer_arm(l, &p.a, 0), 0);
	assert_int_equal(sk_timer_arm(l, &p.b, 0), 0);
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_run_once(l, 0, &err), 1);
	assert_int_equal(p.fired_a + p.fired_b, 1);
	assert_int_equal(sk_loop_timers_armed(l), 0);
	sk_loop_free(l);
}

struct spin_ctx {
	struct sk_timer t;
	int fired;
};

static void on_rearm_now(struct sk_loop *l, struct sk_timer *t)
{
	struct spin_ctx *s = t->ctx;
	s->fired++;
	assert_int_equal(sk_timer_arm(l, t, 0), 0);
}

/* A timer that re-arms itself for "now" fires once per round: the round ends (I/O gets its turn), it
 * does not spin forever inside run_timers. */
static void test_timer_rearmed_for_now_fires_once_per_round(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	struct spin_ctx s = { 0 };
	sk_timer_init(&s.t, on_rearm_now, &s);
	assert_int_equal(sk_timer_arm(l, &s.t, 0), 0);
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_run_once(l, 0, &err), 1);
	assert_int_equal(s.fired, 1);
	assert_true(sk_timer_armed(&s.t));
	assert_int_equal(sk_loop_run_once(l, 0, &err), 1);
	assert_int_equal(s.fired, 2);
	sk_timer_cancel(l, &s.t);
	sk_loop_free(l);
}

static void test_rearm_moves_an_armed_timer(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	struct spin_ctx late = { 0 };
	sk_timer_init(&late.t, on_logged_timer, NULL);
	assert_int_equal(sk_timer_arm(l, &late.t, 100000), 0);
	uint64_t first = late.t.due_ms;
	assert_int_equal(sk_timer_arm(l, &late.t, 10), 0);
	assert_true(late.t.due_ms < first);
	assert_int_equal(sk_loop_timers_armed(l), 1);   /* moved, not added twice */
	sk_timer_cancel(l, &late.t);
	assert_int_equal(sk_loop_timers_armed(l), 0);
	sk_loop_free(l);
}

/* ---- descriptors ---- */

struct io_pair {
	struct sk_io x, y;
	int called_x, called_y;
	bool forget;               /* remove the other with sk_loop_forget + close instead of sk_loop_del */
};

static void on_remove_other(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)events;
	struct io_pair *p = io->ctx;
	struct sk_io *other = io == &p->x ? &p->y : &p->x;
	if (io == &p->x)
		p->called_x++;
	else
		p->called_y++;
	if (!other->registered)
		return;
	if (p->forget) {
		sk_loop_forget(l, other);
		close(other->fd);
		other->fd = -1;
	} else {
		sk_loop_del(l, other);
	}
}

static void removed_io_is_not_called(bool forget)
{
	struct sk_loop *l = new_loop();
	struct io_pair p = { .forget = forget };
	int fx = eventfd(1, EFD_NONBLOCK), fy = eventfd(1, EFD_NONBLOCK);  /* both readable at once */
	assert_true(fx >= 0 && fy >= 0);
	sk_io_init(&p.x, fx, on_remove_other, &p);
	sk_io_init(&p.y, fy, on_remove_other, &p);
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_add(l, &p.x, EPOLLIN, &err), 0);
	assert_int_equal(sk_loop_add(l, &p.y, EPOLLIN, &err), 0);
	/* both events come in one epoll batch; whichever runs first removes the other */
	assert_int_equal(sk_loop_run_once(l, 1000, &err), 1);
	assert_int_equal(p.called_x + p.called_y, 1);
	struct sk_io *left = p.called_x ? &p.x : &p.y;
	sk_loop_del(l, left);
	close(left->fd);
	if (!forget) {
		struct sk_io *gone = p.called_x ? &p.y : &p.x;
		close(gone->fd);
	}
	sk_loop_free(l);
}

static void test_io_deleted_by_earlier_callback_is_not_called(void **state)
{
	(void)state;
	removed_io_is_not_called(false);
}

static void test_io_forgotten_and_closed_by_earlier_callback_is_not_called(void **state)
{
	(void)state;
	removed_io_is_not_called(true);
}

/* ---- round order ---- */

struct order_ctx {
	struct sk_io io;
	struct sk_timer t;
	char seq[16];
	size_t n;
};

static void note(struct order_ctx *o, char c)
{
	if (o->n < sizeof(o->seq) - 1)
		o->seq[o->n++] = c;
}

static void on_order_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	(void)events;
	struct order_ctx *o = io->ctx;
	uint64_t v;
	(void)!read(io->fd, &v, sizeof(v));
	note(o, 'i');
}

static void on_order_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	note(t->ctx, 't');
}

static void on_turn_end(void *ctx) { note(ctx, 'e'); }

static void test_turn_end_runs_once_per_round_after_io_and_timers(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	struct order_ctx o = { 0 };
	int fd = eventfd(1, EFD_NONBLOCK);
	assert_true(fd >= 0);
	sk_io_init(&o.io, fd, on_order_io, &o);
	sk_timer_init(&o.t, on_order_timer, &o);
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_add(l, &o.io, EPOLLIN, &err), 0);
	assert_int_equal(sk_timer_arm(l, &o.t, 0), 0);
	sk_loop_set_turn_end(l, on_turn_end, &o);
	assert_int_equal(sk_loop_run_once(l, 1000, &err), 2);
	assert_string_equal(o.seq, "ite");
	/* an idle round still ends with the hook; with the hook removed nothing is noted */
	assert_int_equal(sk_loop_run_once(l, 0, &err), 0);
	assert_string_equal(o.seq, "itee");
	sk_loop_set_turn_end(l, NULL, NULL);
	assert_int_equal(sk_loop_run_once(l, 0, &err), 0);
	assert_string_equal(o.seq, "itee");
	sk_loop_del(l, &o.io);
	close(fd);
	sk_loop_free(l);
}

static void on_flush_a(void *ctx) { note(ctx, 'a'); }
static void on_flush_b(void *ctx) { note(ctx, 'b'); }

/* Registered flushes run every round after the I/O and timers and before the turn-end hook; one removed
 * runs no more; the table is bounded and says so. */
static void test_flushes_run_before_turn_end_and_are_bounded(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	struct order_ctx o = { 0 };
	struct sk_err err = { 0 };
	sk_timer_init(&o.t, on_order_timer, &o);
	assert_int_equal(sk_timer_arm(l, &o.t, 0), 0);
	assert_int_equal(sk_loop_add_flush(l, on_flush_a, &o), 0);
	assert_int_equal(sk_loop_add_flush(l, on_flush_b, &o), 0);
	sk_loop_set_turn_end(l, on_turn_end, &o);
	assert_int_equal(sk_loop_run_once(l, 1000, &err), 1);
	assert_string_equal(o.seq, "tabe");
	sk_loop_del_flush(l, on_flush_a, &o);
	assert_int_equal(sk_loop_run_once(l, 0, &err), 0);
	assert_string_equal(o.seq, "tabebe");
	for (int i = 0; i < SK_LOOP_FLUSH_MAX - 1; i++)
		assert_int_equal(sk_loop_add_flush(l, on_flush_a, &o), 0);
	assert_int_equal(sk_loop_add_flush(l, on_flush_a, &o), -ENOSPC);
	sk_loop_free(l);
}

static void on_stop(struct sk_loop *l, struct sk_timer *t)
{
	(*(int *)t->ctx)++;
	sk_loop_stop(l);
}

static void test_run_returns_after_stop(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	int fired = 0;
	struct sk_timer t;
	sk_timer_init(&t, on_stop, &fired);
	assert_int_equal(sk_timer_arm(l, &t, 5), 0);
	uint64_t before = sk_monotonic_ms();
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_run(l, &err), 0);
	assert_int_equal(fired, 1);
	assert_true(sk_monotonic_ms() >= before + 5);   /* waited for the timer, did not return early */
	sk_loop_free(l);
}

static void test_add_of_a_bad_fd_fails_with_a_reason(void **state)
{
	(void)state;
	struct sk_loop *l = new_loop();
	struct sk_io io;
	sk_io_init(&io, 1 << 20, on_order_io, NULL);
	struct sk_err err = { 0 };
	assert_true(sk_loop_add(l, &io, EPOLLIN, &err) < 0);
	assert_false(io.registered);
	assert_true(strlen(err.msg) > 0);
	sk_loop_del(l, &io);    /* not registered: a no-op */
	sk_loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_fire_in_due_order_and_never_after_cancel),
		cmocka_unit_test(test_timer_cancelled_by_earlier_callback_of_same_round_never_fires),
		cmocka_unit_test(test_timer_rearmed_for_now_fires_once_per_round),
		cmocka_unit_test(test_rearm_moves_an_armed_timer),
		cmocka_unit_test(test_io_deleted_by_earlier_callback_is_not_called),
		cmocka_unit_test(test_io_forgotten_and_closed_by_earlier_callback_is_not_called),
		cmocka_unit_test(test_turn_end_runs_once_per_round_after_io_and_timers),
		cmocka_unit_test(test_flushes_run_before_turn_end_and_are_bounded),
		cmocka_unit_test(test_run_returns_after_stop),
		cmocka_unit_test(test_add_of_a_bad_fd_fails_with_a_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

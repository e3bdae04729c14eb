/* sidecar/relay_test.c — the splice relay over real loopback TCP pairs, driven by the real loop. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/loop.h"
#include "sidecar/relay.h"

struct done_rec {
	int calls;
	enum sk_relay_end how;
	int errnum;
};

static void on_done(struct sk_relay *r, enum sk_relay_end how, int errnum)
{
	struct done_rec *d = r->ctx;
	d->calls++;
	d->how = how;
	d->errnum = errnum;
}

/* A connected loopback TCP pair: *x and *y, both non-blocking. */
static void tcp_pair(int *x, int *y)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 1), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &len), 0);
	*x = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(*x >= 0);
	int rc = connect(*x, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(rc == 0 || errno == EINPROGRESS);
	*y = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
	assert_true(*y >= 0);
	close(ls);
}

struct world {
	struct sk_loop *loop;
	struct sk_pipe_pool pool;
	struct sk_relay relay;
	struct done_rec done;
	int client, relay_a, relay_b, upstream;
};

static void world_up(struct world *w, const uint8_t *prefix, size_t plen, uint64_t idle_ms)
{
	struct sk_err err = { 0 };
	memset(w, 0, sizeof(*w));
	assert_int_equal(sk_loop_new(&w->loop, &err), 0);
	sk_pipe_pool_init(&w->pool, 4, 16384);
	tcp_pair(&w->client, &w->relay_a);
	tcp_pair(&w->relay_b, &w->upstream);
	assert_int_equal(sk_relay_start(&w->relay, w->loop, &w->pool, w->relay_a, w->relay_b, prefix, plen,
					idle_ms, on_done, &w->done, &err), 0);
}

static void world_down(struct world *w)
{
	if (w->relay.running)
		sk_relay_stop(&w->relay);
	close(w->client);
	close(w->relay_a);
	close(w->relay_b);
	close(w->upstream);
	sk_pipe_pool_fini(&w->pool);
	sk_loop_free(w->loop);
}

static void fill_pattern(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
}

/* One end's progress: write out[*wo..n_out) and read into in, shut down after writing if asked. */
struct endp {
	int fd;
	const uint8_t *out;
	size_t n_out, wo;
	bool shut_after, shut_done;
	uint8_t *in;
	size_t cap_in, n_in;
	bool eof;
};

static void endp_step(struct endp *e)
{
	while (e->wo < e->n_out) {
		ssize_t n = send(e->fd, e->out + e->wo, e->n_out - e->wo, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		e->wo += (size_t)n;
	}
	if (e->wo == e->n_out && e->shut_after && !e->shut_done) {
		shutdown(e->fd, SHUT_WR);
		e->shut_done = true;
	}
	while (!e->eof) {
		uint8_t tmp[65536];
		ssize_t n = recv(e->fd, tmp, sizeof(tmp), 0);
		if (n == 0)
			e->eof = true;
		if (n <= 0)
			break;
		assert_true(e->n_in + (size_t)n <= e->cap_in);
		memcpy(e->in + e->n_in, tmp, (size_t)n);
		e->n_in += (size_t)n;
	}
}

static void test_relay_bulk_both_ways_with_prefix_and_half_close(void **state)
{
	(void)state;
	const size_t N = 3u << 20, M = 5u << 20;
	static const uint8_t prefix[] = "PEEKED-BYTES-MUST-ARRIVE-FIRST";
	uint8_t *up = malloc(N), *down = malloc(M), *got_up = malloc(N + 64), *got_down = malloc(M);
	assert_non_null(up);
	assert_non_null(down);
	assert_non_null(got_up);
	assert_non_null(got_down);
	fill_pattern(up, N, 1);
	fill_pattern(down, M, 2);

	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, prefix, sizeof(prefix) - 1, 10000);
	struct endp c = { .fd = w.client, .out = up, .n_out = N, .shut_after = true, .in = got_down, .cap_in = M };
	struct endp u = { .fd = w.upstream, .out = down, .n_out = M, .shut_after = true, .in = got_up,
			  .cap_in = N + 64 };
	for (int i = 0; i < 20000 && w.done.calls == 0; i++) {
		endp_step(&c);
		endp_step(&u);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	endp_step(&c);
	endp_step(&u);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_DONE);
	assert_true(u.eof);
	assert_true(c.eof);
	assert_int_equal(u.n_in, N + sizeof(prefix) - 1);
	assert_memory_equal(got_up, prefix, sizeof(prefix) - 1);
	assert_memory_equal(got_up + sizeof(prefix) - 1, up, N);
	assert_int_equal(c.n_in, M);
	assert_memory_equal(got_down, down, M);
	assert_int_equal(w.relay.a2b.bytes, N + sizeof(prefix) - 1);
	assert_int_equal(w.relay.b2a.bytes, M);
	assert_int_equal(w.pool.live, 0);
	world_down(&w);
	free(up);
	free(down);
	free(got_up);
	free(got_down);
}

/* The client half-closes first; the upstream keeps talking and must still be heard. */
static void test_relay_half_close_keeps_other_direction(void **state)
{
	(void)state;
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 10000);
	assert_int_equal(send(w.client, "ping", 4, 0), 4);
	shutdown(w.client, SHUT_WR);
	uint8_t buf[16];
	ssize_t got = 0;
	for (int i = 0; i < 200 && got < 5; i++) {
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
		ssize_t n = recv(w.upstream, buf + got, sizeof(buf) - (size_t)got, 0);
		if (n > 0)
			got += n;
		else if (n == 0)
			break;
	}
	assert_int_equal(got, 4);
	assert_memory_equal(buf, "ping", 4);
	/* Upstream saw EOF (the client's FIN passed through). */
	for (int i = 0; i < 50; i++)
		assert_true(sk_loop_run_once(w.loop, 2, &err) >= 0);
	assert_int_equal(recv(w.upstream, buf, sizeof(buf), 0), 0);
	assert_int_equal(w.done.calls, 0);
	assert_int_equal(send(w.upstream, "pong", 4, 0), 4);
	got = 0;
	for (int i = 0; i < 200 && got < 4; i++) {
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
		ssize_t n = recv(w.client, buf + got, sizeof(buf) - (size_t)got, 0);
		if (n > 0)
			got += n;
	}
	assert_int_equal(got, 4);
	assert_memory_equal(buf, "pong", 4);
	shutdown(w.upstream, SHUT_WR);
	for (int i = 0; i < 200 && w.done.calls == 0; i++)
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_DONE);
	assert_int_equal(recv(w.client, buf, sizeof(buf), 0), 0);
	world_down(&w);
}

static void test_relay_upstream_reset_ends_as_reset(void **state)
{
	(void)state;
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 10000);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	setsockopt(w.upstream, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(w.upstream);
	w.upstream = -1;
	for (int i = 0; i < 200 && w.done.calls == 0; i++)
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_RESET);
	assert_int_equal(w.done.errnum, ECONNRESET);
	world_down(&w);
}

static void test_relay_idle_timeout(void **state)
{
	(void)state;
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 60);
	uint64_t t0 = sk_monotonic_ms();
	/* Traffic at t≈30 ms pushes the deadline out. */
	/* One byte, once: a send on every loop turn in a window used to keep the relay busy for all the
	 * turns the loop was allowed on a fast machine, so the deadline was never reached. */
	bool sent = false;
	for (int i = 0; i < 1000 && w.done.calls == 0 && sk_monotonic_ms() - t0 < 2000; i++) {
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
		if (!sent && sk_monotonic_ms() - t0 >= 30) {
			(void)send(w.client, "x", 1, 0);
			sent = true;
		}
	}
	uint64_t took = sk_monotonic_ms() - t0;
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_IDLE);
	assert_true(took >= 85);
	assert_true(took < 1000);
	world_down(&w);
}

struct fire_log {
	int seen[8];
	int n;
};

struct rec_timer {
	struct sk_timer t;
	int id;
	struct fire_log *log;
};

static void record_fire(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct rec_timer *r = t->ctx;
	r->log->seen[r->log->n++] = r->id;
}

static int over_calls;
static void on_over(struct sk_relay *r)
{
	(void)r;
	over_calls++;
}

/* Runs client c and upstream u against the relay until it ends (or nothing more can happen). */
static void run_until_done(struct world *w, struct endp *c, struct endp *u)
{
	struct sk_err err = { 0 };
	for (int i = 0; i < 20000 && w->done.calls == 0; i++) {
		endp_step(c);
		endp_step(u);
		assert_true(sk_loop_run_once(w->loop, 1, &err) >= 0);
	}
	/* what was delivered before the cut is readable; the relay's fds are closed by the owner only */
	for (int i = 0; i < 50; i++) {
		endp_step(c);
		endp_step(u);
	}
}

/* sent: the upstream gets exactly the budget — prefix included — and the relay ends as BUDGET, whatever
 * the pipe size or how the client's bytes are cut. */
static void test_relay_budget_cuts_sent_to_the_byte(void **state)
{
	(void)state;
	const size_t N = 3u << 20, B = 1000003;
	static const uint8_t prefix[] = "PEEKED-HELLO";
	uint8_t *up = malloc(N), *got_up = malloc(N + 64);
	assert_non_null(up);
	assert_non_null(got_up);
	fill_pattern(up, N, 7);
	struct sk_budget_entry e = { .lim = { .sent = B, .window_ms = 60000 }, .live = true };
	struct world w;
	world_up(&w, prefix, sizeof(prefix) - 1, 10000);
	sk_relay_budget(&w.relay, &e, true, on_over);
	struct endp c = { .fd = w.client, .out = up, .n_out = N, .in = got_up, .cap_in = 0 };
	struct endp u = { .fd = w.upstream, .in = got_up, .cap_in = N + 64 };
	run_until_done(&w, &c, &u);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_BUDGET);
	assert_int_equal(u.n_in, B);
	assert_int_equal(w.relay.a2b.bytes, B);
	assert_memory_equal(got_up, prefix, sizeof(prefix) - 1);
	assert_memory_equal(got_up + sizeof(prefix) - 1, up, B - (sizeof(prefix) - 1));
	assert_int_equal(e.used[SK_BUDGET_SENT], B);
	assert_int_equal(e.exhausted, 1);
	assert_int_equal(over_calls, 0);   /* enforcing: the end says it, not over */
	assert_int_equal(w.pool.live, 0);
	world_down(&w);
	free(up);
	free(got_up);
}

static void test_relay_budget_cuts_received_to_the_byte(void **state)
{
	(void)state;
	const size_t M = 2u << 20, B = 70001;
	uint8_t *down = malloc(M), *got_down = malloc(M);
	assert_non_null(down);
	assert_non_null(got_down);
	fill_pattern(down, M, 9);
	struct sk_budget_entry e = { .lim = { .received = B, .window_ms = 60000 }, .live = true };
	struct world w;
	world_up(&w, NULL, 0, 10000);
	sk_relay_budget(&w.relay, &e, true, on_over);
	struct endp c = { .fd = w.client, .in = got_down, .cap_in = M };
	struct endp u = { .fd = w.upstream, .out = down, .n_out = M, .in = got_down, .cap_in = 0 };
	run_until_done(&w, &c, &u);
	assert_int_equal(w.done.how, SK_RELAY_BUDGET);
	assert_int_equal(c.n_in, B);
	assert_memory_equal(got_down, down, B);
	assert_int_equal(e.used[SK_BUDGET_RECEIVED], B);
	world_down(&w);
	free(down);
	free(got_down);
}

/* A budget another relay already spent: this one takes nothing and ends at its first round. */
static void test_relay_budget_spent_elsewhere(void **state)
{
	(void)state;
	struct sk_budget_entry e = { .lim = { .sent = 10, .window_ms = 60000 }, .live = true };
	struct world w;
	world_up(&w, (const uint8_t *)"hello", 5, 10000);
	sk_budget_charge(&e, SK_BUDGET_SENT, 10, sk_loop_now_ms(w.loop));
	sk_relay_budget(&w.relay, &e, true, on_over);
	uint8_t sink[16];
	struct endp c = { .fd = w.client, .in = sink, .cap_in = 0 };
	struct endp u = { .fd = w.upstream, .in = sink, .cap_in = sizeof(sink) };
	run_until_done(&w, &c, &u);
	assert_int_equal(w.done.how, SK_RELAY_BUDGET);
	assert_int_equal(u.n_in, 0);
	assert_int_equal(w.relay.a2b.bytes, 0);
	world_down(&w);
}

/* Not enforced (mode audit): every byte passes, the spent budget is reported once. */
static void test_relay_budget_audit_only_reports(void **state)
{
	(void)state;
	const size_t N = 1u << 20;
	uint8_t *up = malloc(N), *got_up = malloc(N);
	assert_non_null(up);
	assert_non_null(got_up);
	fill_pattern(up, N, 3);
	struct sk_budget_entry e = { .lim = { .sent = 1000, .window_ms = 60000 }, .live = true };
	struct world w;
	world_up(&w, NULL, 0, 10000);
	over_calls = 0;
	sk_relay_budget(&w.relay, &e, false, on_over);
	struct endp c = { .fd = w.client, .out = up, .n_out = N, .shut_after = true, .in = got_up, .cap_in = 0 };
	struct endp u = { .fd = w.upstream, .shut_after = true, .in = got_up, .cap_in = N };
	run_until_done(&w, &c, &u);
	assert_int_equal(w.done.how, SK_RELAY_DONE);
	assert_int_equal(u.n_in, N);
	assert_memory_equal(got_up, up, N);
	assert_int_equal(over_calls, 1);
	assert_int_equal(e.used[SK_BUDGET_SENT], N);
	world_down(&w);
	free(up);
	free(got_up);
}

static void test_loop_timers_fire_in_order_and_cancel(void **state)
{
	(void)state;
	struct sk_loop *l;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct fire_log log = { .n = 0 };
	struct rec_timer t[8];
	const uint64_t after[8] = { 40, 10, 30, 20, 70, 50, 60, 0 };
	for (int i = 0; i < 8; i++) {
		t[i].id = i;
		t[i].log = &log;
		sk_timer_init(&t[i].t, record_fire, &t[i]);
		assert_int_equal(sk_timer_arm(l, &t[i].t, after[i]), 0);
	}
	sk_timer_cancel(l, &t[2].t);
	sk_timer_cancel(l, &t[2].t);
	assert_false(sk_timer_armed(&t[2].t));
	assert_int_equal(sk_loop_timers_armed(l), 7);
	assert_int_equal(sk_timer_arm(l, &t[4].t, 5), 0);  /* re-armed earlier */
	for (int i = 0; i < 200 && sk_loop_timers_armed(l) > 0; i++)
		assert_true(sk_loop_run_once(l, -1, &err) >= 0);
	const int want[7] = { 7, 4, 1, 3, 0, 5, 6 };
	assert_int_equal(log.n, 7);
	assert_memory_equal(log.seen, want, sizeof(want));
	sk_loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relay_bulk_both_ways_with_prefix_and_half_close),
		cmocka_unit_test(test_relay_half_close_keeps_other_direction),
		cmocka_unit_test(test_relay_upstream_reset_ends_as_reset),
		cmocka_unit_test(test_relay_idle_timeout),
		cmocka_unit_test(test_loop_timers_fire_in_order_and_cancel),
		cmocka_unit_test(test_relay_budget_cuts_sent_to_the_byte),
		cmocka_unit_test(test_relay_budget_cuts_received_to_the_byte),
		cmocka_unit_test(test_relay_budget_spent_elsewhere),
		cmocka_unit_test(test_relay_budget_audit_only_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/core/relay_test.c — the splice relay over real loopback TCP pairs, driven by the real loop. */
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
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/core/loop.h"
#include "sidecar/core/relay.h"

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

/* bulk_size 0: every pipe stays at 16 KiB (the relay's full-pipe paths run all the time). */
static void world_up_bulk(struct world *w, const uint8_t *prefix, size_t plen, uint64_t idle_ms, int bulk_size,
			  size_t bulk_max)
{
	struct sk_err err = { 0 };
	memset(w, 0, sizeof(*w));
	assert_int_equal(sk_loop_new(&w->loop, &err), 0);
	sk_pipe_pool_init(&w->pool, 4, 16384);
	sk_pipe_pool_bulk(&w->pool, bulk_size, bulk_max, bulk_max);
	tcp_pair(&w->client, &w->relay_a);
	tcp_pair(&w->relay_b, &w->upstream);
	assert_int_equal(sk_relay_start(&w->relay, w->loop, &w->pool, w->relay_a, w->relay_b, prefix, plen,
					idle_ms, on_done, &w->done, &err), 0);
}

static void world_up(struct world *w, const uint8_t *prefix, size_t plen, uint64_t idle_ms)
{
	world_up_bulk(w, prefix, plen, idle_ms, 0, 0);
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

/* Both directions at once, megabytes each way, then both half-close: every byte arrives once, in order,
 * the prefix first. bulk_size/bulk_max as sk_pipe_pool_bulk; never more bulk pipes than bulk_max. */
static void bulk_both_ways(int bulk_size, size_t bulk_max)
{
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
	world_up_bulk(&w, prefix, sizeof(prefix) - 1, 10000, bulk_size, bulk_max);
	struct endp c = { .fd = w.client, .out = up, .n_out = N, .shut_after = true, .in = got_down, .cap_in = M };
	struct endp u = { .fd = w.upstream, .out = down, .n_out = M, .shut_after = true, .in = got_up,
			  .cap_in = N + 64 };
	for (int i = 0; i < 20000 && w.done.calls == 0; i++) {
		endp_step(&c);
		endp_step(&u);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
		assert_true(w.pool.bulk_count <= bulk_max);
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
	if (bulk_size > 0) {
		/* Both directions filled their 16 KiB pipes: they grew, as far as the cap allowed, and the
		 * grown pipes went back to the pool empty. */
		assert_int_equal(w.pool.bulk_count, bulk_max);
		assert_int_equal(w.pool.n_bfree, bulk_max);
		for (size_t i = 0; i < w.pool.n_bfree; i++) {
			assert_true(w.pool.bfree[i].bulk);
			assert_int_equal(w.pool.bfree[i].cap, (size_t)bulk_size);
			assert_int_equal(fcntl(w.pool.bfree[i].w, F_GETPIPE_SZ), bulk_size);
		}
	}
	world_down(&w);
	free(up);
	free(down);
	free(got_up);
	free(got_down);
}

static void test_relay_bulk_both_ways_with_prefix_and_half_close(void **state)
{
	(void)state;
	bulk_both_ways(0, 0);
}

/* The same with bulk pipes (16 KiB growing to 256 KiB): both directions grow... */
static void test_relay_bulk_pipes_grow(void **state)
{
	(void)state;
	bulk_both_ways(256 << 10, 2);
}

/* ...and with room for one bulk pipe only, the other direction keeps its small pipe. */
static void test_relay_bulk_pipes_capped(void **state)
{
	(void)state;
	bulk_both_ways(256 << 10, 1);
}

/* The client half-closes first; the upstream keeps talking and must still be heard. */
/* Fairness: a pump stops a direction after turn_max bytes and the relay goes on from a 0 ms timer in a
 * later round (after the loop served every other ready fd), until every byte is through, in order. */
static void test_relay_yields_after_turn_bytes(void **state)
{
	(void)state;
	const size_t N = 1u << 20;
	uint8_t *up = malloc(N), *got = malloc(N);
	assert_non_null(up);
	assert_non_null(got);
	fill_pattern(up, N, 3);
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 10000);
	w.relay.turn_max = 4096;
	struct endp c = { .fd = w.client, .out = up, .n_out = N, .shut_after = true };
	struct endp u = { .fd = w.upstream, .shut_after = true, .in = got, .cap_in = N };
	c.shut_after = false;
	endp_step(&c);
	/* Queued before the first round; the round may move at most three pumps' worth (the two fds' events
	 * and the resume timer armed by the first, each pump at most turn_max plus one 16 KiB pipe). */
	assert_true(c.wo >= 65536);
	assert_true(sk_loop_run_once(w.loop, 100, &err) >= 0);
	assert_true(w.relay.a2b.bytes > 0);
	assert_true(w.relay.a2b.bytes <= 3 * (4096 + 16384));
	assert_true(sk_timer_armed(&w.relay.resume));
	c.shut_after = true;
	int rounds = 1;
	for (; rounds < 200000 && w.done.calls == 0; rounds++) {
		endp_step(&c);
		endp_step(&u);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	endp_step(&c);
	endp_step(&u);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_DONE);
	assert_int_equal(u.n_in, N);
	assert_memory_equal(got, up, N);
	assert_true(rounds > (int)(N / (3 * (4096 + 16384))));
	assert_false(sk_timer_armed(&w.relay.resume));
	world_down(&w);
	free(up);
	free(got);
}

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

static void assert_pool_clean(const struct sk_pipe_pool *p);

/* Requests and responses smaller than a read through user space, one at a time as on a kept-alive
 * connection: each arrives whole and in order without a pipe; then the client stops reading while the
 * upstream keeps writing small pieces, so sends come up short and the rest waits in the pipe, ahead of
 * anything read later. Every byte arrives once, in order, and the pipe goes back to the pool empty. */
static void test_relay_small_reads_copy_and_keep_order(void **state)
{
	(void)state;
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 10000);
	uint8_t buf[512];
	for (int k = 0; k < 50; k++) {
		char req[64], resp[300];
		int rl = snprintf(req, sizeof(req), "GET /%d HTTP/1.1\r\n\r\n", k);
		memset(resp, 'a' + k % 26, sizeof(resp));
		assert_int_equal(send(w.client, req, (size_t)rl, 0), rl);
		ssize_t got = 0;
		for (int i = 0; i < 200 && got < rl; i++) {
			assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
			ssize_t n = recv(w.upstream, buf + got, sizeof(buf) - (size_t)got, MSG_DONTWAIT);
			if (n > 0)
				got += n;
		}
		assert_int_equal(got, rl);
		assert_memory_equal(buf, req, (size_t)rl);
		assert_int_equal(send(w.upstream, resp, sizeof(resp), 0), (ssize_t)sizeof(resp));
		got = 0;
		for (int i = 0; i < 200 && got < (ssize_t)sizeof(resp); i++) {
			assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
			ssize_t n = recv(w.client, buf + got, sizeof(buf) - (size_t)got, MSG_DONTWAIT);
			if (n > 0)
				got += n;
		}
		assert_int_equal(got, (ssize_t)sizeof(resp));
		assert_memory_equal(buf, resp, sizeof(resp));
		assert_int_equal(w.relay.b2a.pipe.r, -1);   /* never needed one */
	}
	assert_false(w.relay.a2b.spliced);
	assert_false(w.relay.b2a.spliced);
	/* The client stops reading; the upstream writes 1000-byte pieces until the relay holds some. */
	const size_t M = 8u << 20, piece = 1000;
	uint8_t *down = malloc(M), *got_down = malloc(M);
	assert_non_null(down);
	assert_non_null(got_down);
	fill_pattern(down, M, 7);
	size_t wo = 0;
	for (int i = 0; i < 100000 && w.relay.b2a.fill == 0 && wo < M; i++) {
		ssize_t n = send(w.upstream, down + wo, piece, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			wo += (size_t)n;
		assert_true(sk_loop_run_once(w.loop, 0, &err) >= 0);
	}
	assert_true(w.relay.b2a.fill > 0);
	/* Now both: the upstream sends the rest in pieces and shuts, the client reads it all. */
	struct endp c = { .fd = w.client, .in = got_down, .cap_in = M };
	for (int i = 0; i < 200000 && !c.eof; i++) {
		if (wo < M) {
			size_t k = M - wo < piece ? M - wo : piece;
			ssize_t n = send(w.upstream, down + wo, k, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				wo += (size_t)n;
			if (wo == M)
				shutdown(w.upstream, SHUT_WR);
		}
		endp_step(&c);
		assert_true(sk_loop_run_once(w.loop, 0, &err) >= 0);
	}
	assert_true(c.eof);
	assert_int_equal(c.n_in, M);
	assert_memory_equal(got_down, down, M);
	assert_int_equal(w.relay.b2a.bytes, 50 * 300 + M);
	assert_int_equal(w.pool.live, 0);
	assert_pool_clean(&w.pool);
	world_down(&w);
	free(down);
	free(got_down);
}

/* A request and the client's FIN that arrive together, after the relay's first read came up short: the
 * FIN's edge keeps the side readable until its EOF is read, and it reaches the upstream. */
static void test_relay_short_read_then_fin(void **state)
{
	(void)state;
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 10000);
	assert_int_equal(send(w.client, "one", 3, 0), 3);
	for (int i = 0; i < 20; i++)
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	assert_false(w.relay.a_rd);   /* the short read (or an EAGAIN) drained it */
	assert_int_equal(send(w.client, "two", 3, 0), 3);
	shutdown(w.client, SHUT_WR);
	uint8_t buf[16];
	ssize_t got = 0;
	bool eof = false;
	for (int i = 0; i < 200 && !eof; i++) {
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
		ssize_t n = recv(w.upstream, buf + got, sizeof(buf) - (size_t)got, MSG_DONTWAIT);
		if (n > 0)
			got += n;
		else if (n == 0)
			eof = true;
	}
	assert_true(eof);
	assert_int_equal(got, 6);
	assert_memory_equal(buf, "onetwo", 6);
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


/* ---- a relay over the owner's registrations whose upstream connect is still in progress ---- */

struct cworld {
	struct sk_loop *loop;
	struct sk_pipe_pool pool;
	struct sk_relay relay;
	struct done_rec done;
	struct sk_io a, b;
	int client, relay_a, relay_b, ls;
	uint16_t port;
};

static void noop_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	(void)io;
	(void)events;
}

/* A loopback listener whose accept queue is full (backlog 0, one connection queued): a connect to it stays
 * in progress until its SYN is sent again (~1 s). listening false: nobody listens on the port. */
static void cworld_up(struct cworld *w, bool listening, int *filler)
{
	struct sk_err err = { 0 };
	memset(w, 0, sizeof(*w));
	assert_int_equal(sk_loop_new(&w->loop, &err), 0);
	sk_pipe_pool_init(&w->pool, 4, 16384);
	tcp_pair(&w->client, &w->relay_a);
	w->ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_int_equal(bind(w->ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(w->ls, 0), 0);
	assert_int_equal(getsockname(w->ls, (struct sockaddr *)&sa, &len), 0);
	*filler = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int rc = connect(*filler, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(rc == 0 || errno == EINPROGRESS);
	if (!listening) {
		close(w->ls);
		w->ls = -1;
	}
	w->relay_b = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	rc = connect(w->relay_b, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(rc < 0 && errno == EINPROGRESS);
	const uint32_t ev = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	sk_io_init(&w->a, w->relay_a, noop_io, NULL);
	sk_io_init(&w->b, w->relay_b, noop_io, NULL);
	assert_int_equal(sk_loop_add(w->loop, &w->a, ev, &err), 0);
	assert_int_equal(sk_loop_add(w->loop, &w->b, ev, &err), 0);
	assert_int_equal(sk_relay_start_on(&w->relay, w->loop, &w->pool, &w->a, &w->b, (const uint8_t *)"PREFIX", 6,
					   10000, on_done, &w->done, &err), 0);
	sk_relay_connecting(&w->relay);
	sk_relay_set_ready(&w->relay, false, false);
	sk_relay_begin(&w->relay);
}

static void cworld_down(struct cworld *w)
{
	if (w->relay.running)
		sk_relay_stop(&w->relay);
	close(w->client);
	close(w->relay_a);
	close(w->relay_b);
	if (w->ls >= 0)
		close(w->ls);
	sk_pipe_pool_fini(&w->pool);
	sk_loop_free(w->loop);
}

/* Refused while connecting: the end is CONNECT with the connect's errno, not a reset relay, and the
 * client got nothing. */
static void test_relay_connecting_refused_ends_as_connect(void **state)
{
	(void)state;
	struct cworld w;
	struct sk_err err = { 0 };
	int filler;
	cworld_up(&w, false, &filler);
	for (int i = 0; i < 200 && w.done.calls == 0; i++)
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_CONNECT);
	assert_int_equal(w.done.errnum, ECONNREFUSED);
	char buf[16];
	assert_int_equal(recv(w.client, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	close(filler);
	cworld_down(&w);
}

/* Connecting when the relay began: the prefix waits, and goes (once, first) when the connect completes;
 * from then on the relay is an ordinary one. */
static void test_relay_connecting_sends_once_connected(void **state)
{
	(void)state;
	struct cworld w;
	struct sk_err err = { 0 };
	int filler;
	cworld_up(&w, true, &filler);
	for (int i = 0; i < 20; i++)
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	assert_int_equal(w.done.calls, 0);
	assert_false(sk_relay_connected(&w.relay));
	assert_int_equal(send(w.client, "MORE", 4, 0), 4);
	int q = accept4(w.ls, NULL, NULL, SOCK_NONBLOCK);
	assert_true(q >= 0);
	int up = -1;
	for (int i = 0; i < 3000 && up < 0; i++) {
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
		up = accept4(w.ls, NULL, NULL, SOCK_NONBLOCK);
	}
	assert_true(up >= 0);
	char buf[32];
	size_t have = 0;
	for (int i = 0; i < 200 && have < 10; i++) {
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
		ssize_t n = recv(up, buf + have, sizeof(buf) - have, MSG_DONTWAIT);
		if (n > 0)
			have += (size_t)n;
	}
	assert_int_equal(have, 10);
	assert_memory_equal(buf, "PREFIXMORE", 10);
	assert_true(sk_relay_connected(&w.relay));
	assert_int_equal(send(up, "BACK", 4, MSG_NOSIGNAL), 4);
	ssize_t n = -1;
	for (int i = 0; i < 200 && n <= 0; i++) {
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
		n = recv(w.client, buf, sizeof(buf), MSG_DONTWAIT);
	}
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "BACK", 4);
	assert_int_equal(w.done.calls, 0);
	close(up);
	close(q);
	close(filler);
	cworld_down(&w);
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
			assert_int_equal(send(w.client, "x", 1, 0), 1);
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
	/* what was delivered before the cut is readable; the relay's fds are closed by the owner only. Read
	 * until nothing more has come for 50 ms: on a loaded machine loopback delivers a moment after the
	 * relay's send, and a fixed number of non-blocking reads could stop short of bytes in flight. */
	for (int i = 0; i < 200; i++) {
		endp_step(c);
		endp_step(u);
		struct pollfd pf[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = u->fd, .events = POLLIN } };
		int n = poll(pf, 2, 50);
		if (n == 0 || (n > 0 && (c->eof || !(pf[0].revents & POLLIN)) && (u->eof || !(pf[1].revents & POLLIN))))
			break;
	}
	endp_step(c);
	endp_step(u);
}

/* sent: the upstream gets exactly the budget — prefix included — and the relay ends as BUDGET, whatever
 * the pipe size or how the client's bytes are cut. */
static void budget_cuts_sent(int bulk_size)
{
	over_calls = 0;
	const size_t N = 3u << 20, B = 1000003;
	static const uint8_t prefix[] = "PEEKED-HELLO";
	uint8_t *up = malloc(N), *got_up = malloc(N + 64);
	assert_non_null(up);
	assert_non_null(got_up);
	fill_pattern(up, N, 7);
	struct sk_budget_entry e = { .lim = { .sent = B, .window_ms = 60000 }, .live = true };
	struct world w;
	world_up_bulk(&w, prefix, sizeof(prefix) - 1, 10000, bulk_size, 2);
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

static void test_relay_budget_cuts_sent_to_the_byte(void **state)
{
	(void)state;
	budget_cuts_sent(0);
}

/* The same with a pipe that grows to 256 KiB once the client's bytes fill it. */
static void test_relay_budget_cuts_sent_to_the_byte_bulk(void **state)
{
	(void)state;
	budget_cuts_sent(256 << 10);
}

/* Bytes queued in a pipe (FIONREAD), -1 if fd is not open. */
static int pipe_queued(int fd)
{
	int n = -1;
	if (ioctl(fd, FIONREAD, &n) < 0)
		return -1;
	return n;
}

/* A pipe goes back to the pool only empty: one put back with bytes in it is closed, an empty one is
 * handed out again as it was (same descriptors, nothing to read). */
static void test_pipe_pool_keeps_only_empty_pipes(void **state)
{
	(void)state;
	struct sk_pipe_pool pool;
	sk_pipe_pool_init(&pool, 2, 16384);
	struct sk_pipe a, b;
	assert_int_equal(sk_pipe_pool_get(&pool, &a, false), 0);
	assert_int_equal(pool.live, 1);
	assert_int_equal(write(a.w, "secret", 6), 6);
	int ar = a.r, aw = a.w;
	sk_pipe_pool_put(&pool, &a, false);
	assert_int_equal(a.r, -1);
	assert_int_equal(pool.live, 0);
	assert_int_equal(pool.n_free, 0);
	assert_int_equal(fcntl(ar, F_GETFD), -1);   /* closed, the bytes with it */
	assert_int_equal(fcntl(aw, F_GETFD), -1);
	assert_int_equal(sk_pipe_pool_get(&pool, &b, false), 0);
	int br = b.r;
	assert_int_equal(write(b.w, "xy", 2), 2);
	char tmp[4];
	assert_int_equal(read(b.r, tmp, 2), 2);      /* drained by its user before it goes back */
	sk_pipe_pool_put(&pool, &b, true);
	assert_int_equal(pool.n_free, 1);
	struct sk_pipe c;
	assert_int_equal(sk_pipe_pool_get(&pool, &c, false), 0);
	assert_int_equal(c.r, br);
	assert_int_equal(pipe_queued(c.r), 0);
	assert_int_equal(read(c.r, tmp, 1), -1);
	assert_int_equal(errno, EAGAIN);
	/* A bulk pipe: grown in place with bytes in it (they stay), counted, and pooled apart. */
	sk_pipe_pool_bulk(&pool, 64 << 10, 1, 1);
	assert_int_equal(write(c.w, "abc", 3), 3);
	assert_int_equal(sk_pipe_pool_grow(&pool, &c), 0);
	assert_true(c.bulk);
	assert_int_equal(c.cap, 64u << 10);
	assert_int_equal(pipe_queued(c.r), 3);
	assert_int_equal(pool.bulk_count, 1);
	struct sk_pipe d;
	assert_int_equal(sk_pipe_pool_get(&pool, &d, true), 0);   /* no free bulk pipe: a small one */
	assert_false(d.bulk);
	assert_int_equal(sk_pipe_pool_grow(&pool, &d), -ENOSPC);   /* the cap: one bulk pipe */
	assert_false(d.bulk);
	assert_int_equal(read(c.r, tmp, 3), 3);
	sk_pipe_pool_put(&pool, &c, true);
	assert_int_equal(pool.n_bfree, 1);
	sk_pipe_pool_put(&pool, &d, true);
	struct sk_pipe e;
	assert_int_equal(sk_pipe_pool_get(&pool, &e, true), 0);
	assert_true(e.bulk);
	assert_int_equal(pipe_queued(e.r), 0);
	sk_pipe_pool_put(&pool, &e, false);   /* with bytes (or after a reset): closed, uncounted */
	assert_int_equal(pool.bulk_count, 0);
	assert_int_equal(pool.live, 0);
	sk_pipe_pool_fini(&pool);
}

/* Every pipe in the pool is empty. */
static void assert_pool_clean(const struct sk_pipe_pool *p)
{
	for (size_t i = 0; i < p->n_free; i++)
		assert_int_equal(pipe_queued(p->free[i].r), 0);
	for (size_t i = 0; i < p->n_bfree; i++)
		assert_int_equal(pipe_queued(p->bfree[i].r), 0);
}

/* One relay is cut by a reset while its pipe holds client bytes the upstream never took; the next relay
 * on the same pool gets its pipes from the pool and delivers exactly its own bytes — nothing of the
 * first connection's. Its upstream stalls for a while first, so its pipe fills and waits too. */
static void test_relay_pool_reuse_leaks_nothing(void **state)
{
	(void)state;
	const size_t N = 4u << 20, M = 16u << 20;
	uint8_t *first = malloc(N), *second = malloc(M), *got = malloc(M + 1);
	assert_non_null(first);
	assert_non_null(second);
	assert_non_null(got);
	fill_pattern(first, N, 11);
	fill_pattern(second, M, 12);
	struct world w;
	struct sk_err err = { 0 };
	world_up_bulk(&w, NULL, 0, 10000, 256 << 10, 2);
	/* The upstream answers first, more than one read through user space moves, so that direction
	 * splices: its pipe comes from the pool and goes back to it empty once the client has read it. */
	uint8_t answer[3 * SK_RELAY_COPY_MAX], answer_got[sizeof(answer)];
	fill_pattern(answer, sizeof(answer), 13);
	assert_int_equal(send(w.upstream, answer, sizeof(answer), 0), (ssize_t)sizeof(answer));
	/* The upstream reads nothing: the client's bytes pile up in the socket buffers and the pipe. */
	struct endp c = { .fd = w.client, .out = first, .n_out = N, .in = answer_got, .cap_in = sizeof(answer) };
	for (int i = 0; i < 2000 && (w.relay.a2b.fill == 0 || c.n_in < sizeof(answer)); i++) {
		endp_step(&c);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	assert_int_equal(c.n_in, sizeof(answer));
	assert_memory_equal(answer_got, answer, sizeof(answer));
	assert_true(w.relay.b2a.spliced);
	for (int i = 0; i < 20; i++) {
		endp_step(&c);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	assert_true(w.relay.a2b.fill > 0);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	setsockopt(w.upstream, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(w.upstream);
	w.upstream = -1;
	for (int i = 0; i < 200 && w.done.calls == 0; i++)
		assert_true(sk_loop_run_once(w.loop, 5, &err) >= 0);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_RESET);
	assert_int_equal(w.pool.live, 0);
	assert_pool_clean(&w.pool);
	/* The upstream→client pipe was taken, found nothing and went back empty; the client→upstream one
	 * held bytes and was closed. */
	assert_int_equal(w.pool.n_free + w.pool.n_bfree, 1);
	const int pooled_r = w.pool.n_free ? w.pool.free[0].r : w.pool.bfree[0].r;

	/* The second connection, same loop and pool. */
	close(w.client);
	close(w.relay_a);
	close(w.relay_b);
	tcp_pair(&w.client, &w.relay_a);
	tcp_pair(&w.relay_b, &w.upstream);
	memset(&w.done, 0, sizeof(w.done));
	assert_int_equal(sk_relay_start(&w.relay, w.loop, &w.pool, w.relay_a, w.relay_b, NULL, 0, 10000, on_done,
					&w.done, &err), 0);
	struct endp c2 = { .fd = w.client, .out = second, .n_out = M, .shut_after = true };
	struct endp u2 = { .fd = w.upstream, .shut_after = true, .in = got, .cap_in = M + 1 };
	for (int i = 0; i < 5000 && w.relay.a2b.fill == 0; i++) {   /* stalled upstream */
		endp_step(&c2);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	assert_int_equal(w.relay.a2b.pipe.r, pooled_r);   /* the pooled pipe, holding this client's bytes */
	assert_true(w.relay.a2b.fill > 0);
	for (int i = 0; i < 20000 && w.done.calls == 0; i++) {
		endp_step(&c2);
		endp_step(&u2);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	endp_step(&u2);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_DONE);
	assert_int_equal(u2.n_in, M);
	assert_memory_equal(got, second, M);
	assert_int_equal(w.relay.a2b.bytes, M);
	assert_int_equal(w.pool.live, 0);
	assert_pool_clean(&w.pool);
	world_down(&w);
	free(first);
	free(second);
	free(got);
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

/* One direction's budget spent stops the other direction too: the relay takes nothing
 * more from either side once the entry is spent, delivers what it had already taken and ends as BUDGET.
 * The other direction is kept busy throughout: its source streams far more than the sockets and the pipe
 * hold, and its destination does not read until the budget is spent, so the relay holds some of its bytes
 * when the cut comes (it cannot end before delivering them) and would take more as soon as they drain.
 * spend_sent: the client spends `sent` while the upstream streams down; else the upstream spends
 * `received` while the client streams up. */
static void budget_spent_stops_other_direction(bool spend_sent)
{
	const size_t M = 32u << 20, B = 4096;
	uint8_t *stream = malloc(M), *got = malloc(M), *spend = malloc(B), *sink = malloc(B);
	assert_non_null(stream);
	assert_non_null(got);
	assert_non_null(spend);
	assert_non_null(sink);
	fill_pattern(stream, M, 21);
	fill_pattern(spend, B, 22);
	struct sk_budget_entry e = { .lim = { .window_ms = 60000 }, .live = true };
	if (spend_sent)
		e.lim.sent = B;
	else
		e.lim.received = B;
	const enum sk_budget_dim other = spend_sent ? SK_BUDGET_RECEIVED : SK_BUDGET_SENT;
	struct world w;
	struct sk_err err = { 0 };
	world_up(&w, NULL, 0, 10000);
	sk_relay_budget(&w.relay, &e, true, on_over);
	/* s: streams M bytes, reads what comes the other way; d: its peer, spends B, reads nothing yet. */
	int s_fd = spend_sent ? w.upstream : w.client, d_fd = spend_sent ? w.client : w.upstream;
	struct sk_relay_dir *od = spend_sent ? &w.relay.b2a : &w.relay.a2b;
	struct endp s = { .fd = s_fd, .out = stream, .n_out = M, .in = sink, .cap_in = B };
	struct endp d = { .fd = d_fd, .in = got, .cap_in = 0 };
	/* The stream flows until the relay holds bytes it cannot deliver (the reader is not reading). */
	size_t last = (size_t)-1;
	for (int i = 0; i < 20000 && (od->fill == 0 || e.used[other] != last); i++) {
		last = e.used[other];
		endp_step(&s);
		for (int k = 0; k < 5; k++)
			assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	assert_int_equal(w.done.calls, 0);
	assert_true(od->fill > 0);
	assert_true(e.used[other] > 0);
	assert_true(s.wo < M);   /* the streamer is held back: more is waiting to be taken */
	/* The reader spends its budget (sending, still not reading). */
	size_t sent = 0;
	for (int i = 0; i < 20000 && !sk_budget_spent(&e, sk_loop_now_ms(w.loop)) && w.done.calls == 0; i++) {
		ssize_t n = sent < B ? send(d_fd, spend + sent, B - sent, MSG_NOSIGNAL) : 0;
		if (n > 0)
			sent += (size_t)n;
		endp_step(&s);
		assert_true(sk_loop_run_once(w.loop, 1, &err) >= 0);
	}
	assert_true(sk_budget_spent(&e, sk_loop_now_ms(w.loop)));
	const uint64_t taken = e.used[other];
	/* Now the reader reads: it gets what the relay had taken when the budget was spent, and nothing more. */
	d.cap_in = M;
	run_until_done(&w, &s, &d);
	assert_int_equal(w.done.calls, 1);
	assert_int_equal(w.done.how, SK_RELAY_BUDGET);
	assert_int_equal(e.used[other], taken);
	assert_int_equal(od->bytes, taken);
	assert_int_equal(d.n_in, taken);
	assert_memory_equal(got, stream, taken);
	assert_int_equal(s.n_in, B);   /* the spending direction got its budget, to the byte */
	assert_memory_equal(sink, spend, B);
	assert_int_equal(w.pool.live, 0);
	world_down(&w);
	free(stream);
	free(got);
	free(spend);
	free(sink);
}

static void test_relay_budget_sent_spent_stops_received(void **state)
{
	(void)state;
	budget_spent_stops_other_direction(true);
}

static void test_relay_budget_received_spent_stops_sent(void **state)
{
	(void)state;
	budget_spent_stops_other_direction(false);
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
		cmocka_unit_test(test_relay_yields_after_turn_bytes),
		cmocka_unit_test(test_relay_half_close_keeps_other_direction),
		cmocka_unit_test(test_relay_upstream_reset_ends_as_reset),
		cmocka_unit_test(test_relay_small_reads_copy_and_keep_order),
		cmocka_unit_test(test_relay_short_read_then_fin),
		cmocka_unit_test(test_relay_connecting_refused_ends_as_connect),
		cmocka_unit_test(test_relay_connecting_sends_once_connected),
		cmocka_unit_test(test_relay_idle_timeout),
		cmocka_unit_test(test_loop_timers_fire_in_order_and_cancel),
		cmocka_unit_test(test_relay_budget_cuts_sent_to_the_byte),
		cmocka_unit_test(test_relay_budget_cuts_received_to_the_byte),
		cmocka_unit_test(test_relay_budget_spent_elsewhere),
		cmocka_unit_test(test_relay_budget_sent_spent_stops_received),
		cmocka_unit_test(test_relay_budget_received_spent_stops_sent),
		cmocka_unit_test(test_relay_budget_audit_only_reports),
		cmocka_unit_test(test_relay_bulk_pipes_grow),
		cmocka_unit_test(test_relay_bulk_pipes_capped),
		cmocka_unit_test(test_relay_budget_cuts_sent_to_the_byte_bulk),
		cmocka_unit_test(test_pipe_pool_keeps_only_empty_pipes),
		cmocka_unit_test(test_relay_pool_reuse_leaks_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/core/relay.c — splice relay; see relay.h. */
#include "sidecar/core/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- pipe pool ---- */

void sk_pipe_pool_init(struct sk_pipe_pool *p, size_t max_free, int pipe_size)
{
	memset(p, 0, sizeof(*p));
	p->max_free = max_free;
	p->pipe_size = pipe_size;
	if (pipe_size < (int)SK_PIPE_BULK_SIZE)
		sk_pipe_pool_bulk(p, (int)SK_PIPE_BULK_SIZE, SK_PIPE_BULK_MAX, SK_PIPE_BULK_FREE);
}

void sk_pipe_pool_bulk(struct sk_pipe_pool *p, int bulk_size, size_t bulk_max, size_t max_bfree)
{
	p->bulk_size = bulk_size;
	p->bulk_max = bulk_max;
	p->max_bfree = max_bfree < bulk_max ? max_bfree : bulk_max;
}

static void pipe_close(struct sk_pipe_pool *p, struct sk_pipe *pp)
{
	close(pp->r);
	close(pp->w);
	if (pp->bulk)
		p->bulk_count--;
	pp->r = pp->w = -1;
	pp->bulk = false;
}

void sk_pipe_pool_fini(struct sk_pipe_pool *p)
{
	for (size_t i = 0; i < p->n_free; i++)
		pipe_close(p, &p->free[i]);
	for (size_t i = 0; i < p->n_bfree; i++)
		pipe_close(p, &p->bfree[i]);
	free(p->free);
	free(p->bfree);
	p->free = p->bfree = NULL;
	p->n_free = p->n_bfree = 0;
}

int sk_pipe_pool_get(struct sk_pipe_pool *p, struct sk_pipe *out, bool bulk)
{
	if (bulk && p->n_bfree > 0) {
		*out = p->bfree[--p->n_bfree];
		p->live++;
		return 0;
	}
	if (p->n_free > 0) {
		*out = p->free[--p->n_free];
		p->live++;
		return 0;
	}
	int fds[2];
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	/* Failing to resize is not fatal: past pipe-user-pages-soft the kernel hands out small pipes and
	 * refuses growth, and a small pipe only costs more syscalls. F_SETPIPE_SZ answers the size it set. */
	int cap = p->pipe_size > 0 ? fcntl(fds[1], F_SETPIPE_SZ, p->pipe_size) : -1;
	if (cap <= 0)
		cap = fcntl(fds[1], F_GETPIPE_SZ);
	out->r = fds[0];
	out->w = fds[1];
	out->cap = cap > 0 ? (size_t)cap : 4096;
	out->bulk = false;
	p->live++;
	return 0;
}

int sk_pipe_pool_grow(struct sk_pipe_pool *p, struct sk_pipe *pp)
{
	if (pp->bulk || p->bulk_size <= 0 || (size_t)p->bulk_size <= pp->cap || p->bulk_count >= p->bulk_max)
		return -ENOSPC;
	int cap = fcntl(pp->w, F_SETPIPE_SZ, p->bulk_size);
	if (cap < 0)
		return -errno;
	pp->cap = (size_t)cap;
	pp->bulk = true;
	p->bulk_count++;
	return 0;
}

/* Keeps pp in list (growing it on first use) if it has room, else closes it. */
static void pool_keep(struct sk_pipe_pool *p, struct sk_pipe **list, size_t *n, size_t max, struct sk_pipe *pp)
{
	if (*n < max) {
		if (!*list)
			*list = calloc(max, sizeof(**list));
		if (*list) {
			(*list)[(*n)++] = *pp;
			pp->r = pp->w = -1;
			pp->bulk = false;
			return;
		}
	}
	pipe_close(p, pp);
}

void sk_pipe_pool_put(struct sk_pipe_pool *p, struct sk_pipe *pp, bool empty)
{
	if (pp->r < 0)
		return;
	p->live--;
	if (!empty)
		pipe_close(p, pp);
	else if (pp->bulk)
		pool_keep(p, &p->bfree, &p->n_bfree, p->max_bfree, pp);
	else
		pool_keep(p, &p->free, &p->n_free, p->max_free, pp);
}

/* ---- relay ---- */

const char *sk_relay_end_name(enum sk_relay_end e)
{
	switch (e) {
	case SK_RELAY_DONE: return "done";
	case SK_RELAY_RESET: return "reset";
	case SK_RELAY_IDLE: return "idle";
	case SK_RELAY_DENIED: return "denied";
	case SK_RELAY_BUDGET: return "budget";
	case SK_RELAY_CONNECT: return "connect";
	}
	return "?";
}

static void relay_release(struct sk_relay *r)
{
	if (!r->running)
		return;
	r->running = false;
	if (!r->ext_io) {
		sk_loop_del(r->loop, r->a);
		sk_loop_del(r->loop, r->b);
	}
	sk_timer_cancel(r->loop, &r->idle);
	sk_timer_cancel(r->loop, &r->resume);
	sk_pipe_pool_put(r->pool, &r->a2b.pipe, r->a2b.fill == 0);
	sk_pipe_pool_put(r->pool, &r->b2a.pipe, r->b2a.fill == 0);
	free(r->gbuf);
	r->gbuf = NULL;
	r->glen = r->gout = r->gcap = 0;
}

void sk_relay_stop(struct sk_relay *r) { relay_release(r); }

static void relay_finish(struct sk_relay *r, enum sk_relay_end how, int errnum)
{
	relay_release(r);
	r->done(r, how, errnum);   /* may free r: nothing after this */
}

/* ---- budget (only reached when r->budget is set) ---- */

/* How many of want bytes may be taken now: all of them when the budget only reports; at most what is
 * left when it is enforced, and nothing at all once it is spent in either direction. */
static size_t budget_allow(struct sk_relay *r, enum sk_budget_dim dim, size_t want)
{
	if (!r->budget_enforce)
		return want;
	uint64_t now = sk_loop_now_ms(r->loop);
	if (sk_budget_spent(r->budget, now))
		return 0;
	uint64_t left = sk_budget_remaining(r->budget, dim, now);
	return left < want ? (size_t)left : want;
}

static void budget_take(struct sk_relay *r, enum sk_budget_dim dim, size_t n)
{
	uint64_t now = sk_loop_now_ms(r->loop);
	sk_budget_charge(r->budget, dim, n, now);
	if (!r->budget_enforce && !r->budget_over && sk_budget_spent(r->budget, now)) {
		r->budget_over = true;
		if (r->over)
			r->over(r);
	}
}

/* n bytes of d sent to b from a buffer of ours (the prefix, the gate's output): b is connected, the bytes
 * counted and charged to the budget's sent dimension. */
static void sent_to_b(struct sk_relay *r, struct sk_relay_dir *d, size_t n)
{
	r->b_connecting = false;
	d->bytes += (uint64_t)n;
	d->turn += n;
	if (r->budget)
		budget_take(r, SK_BUDGET_SENT, n);
}

/* d is about to be shut and the other direction already is: the relay ends DONE in this pump, and an
 * owner that closes at DONE sends the FIN with its close (sk_relay_owner_closes). */
static bool last_shut(const struct sk_relay *r, const struct sk_relay_dir *d)
{
	const struct sk_relay_dir *o = d == &r->a2b ? &r->b2a : &r->a2b;
	return r->owner_closes && o->shut && !r->denied;
}

/* A read or write on fd failed with errno: remembered so the end can say whose (RESET or CONNECT). */
static int side_failed(struct sk_relay *r, int fd)
{
	r->err_fd = fd;
	return -errno;
}

/* One read of a direction with nothing in its pipe, through user space: recv + send is two syscalls where
 * the pipe takes two splices and, since a short splice proves nothing (the pipe may have run out of
 * slots), often a third that can only say EAGAIN; a short recv proves the socket drained (hup in relay.h).
 * What send does not take goes into the pipe, ahead of anything spliced later, so order is kept; it is at
 * most PIPE_BUF bytes, which an empty pipe always takes whole. A read that fills the buffer makes the
 * direction spliced: bulk moves through the pipe, never copied. Returns 1 when something moved or changed,
 * 0 when not, -errno when a side failed. */
_Static_assert(SK_RELAY_COPY_MAX <= PIPE_BUF, "a copy's leftover must fit an empty pipe in one write");

static int copy_step(struct sk_relay *r, struct sk_relay_dir *d, enum sk_budget_dim dim, int src, int dst,
		     size_t want, bool *src_rd, bool *dst_wr)
{
	uint8_t buf[SK_RELAY_COPY_MAX];
	const size_t ask = want < sizeof(buf) ? want : sizeof(buf);
	ssize_t n = recv(src, buf, ask, MSG_DONTWAIT);
	if (n >= 0 && src == r->b->fd)
		r->b_connecting = false;
	if (n < 0) {
		if (errno == EAGAIN) {
			*src_rd = false;
			d->hup = false;
			return 0;
		}
		return errno == EINTR ? 0 : side_failed(r, src);
	}
	if (n == 0) {
		d->eof = true;
		return 1;
	}
	if (r->budget)
		budget_take(r, dim, (size_t)n);
	if ((size_t)n == sizeof(buf))
		d->spliced = true;
	else if ((size_t)n < ask && !d->hup)
		*src_rd = false;
	size_t sent = 0;
	if (*dst_wr) {
		ssize_t m = send(dst, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (m > 0) {
			sent = (size_t)m;
			if (dst == r->b->fd)
				r->b_connecting = false;
			d->bytes += sent;
			d->turn += sent;
		} else if (m < 0 && errno == EAGAIN) {
			*dst_wr = false;
		} else if (m < 0 && errno != EINTR) {
			return side_failed(r, dst);
		}
	}
	if (sent < (size_t)n) {
		if (d->pipe.r < 0) {
			int rc = sk_pipe_pool_get(r->pool, &d->pipe, d->bulk);
			if (rc < 0)
				return rc;
		}
		ssize_t w = write(d->pipe.w, buf + sent, (size_t)n - sent);
		if (w != (ssize_t)((size_t)n - sent))
			return w < 0 ? -errno : -EIO;
		d->fill += (size_t)n - sent;
	}
	return 1;
}

/* Moves what it can in one direction; returns 0, or -errno when a side failed. Sets *moved when any
 * byte moved or a state changed. Edge-triggered: it tries every step its sides' readiness allows until
 * none moves, so a pipe that was full when the socket became readable can never leave bytes stranded.
 * src_rd / dst_wr: the sides' readiness (relay.h); an EAGAIN clears it. A read that finds the pipe
 * empty and gets EAGAIN proves the socket drained; with bytes in the pipe EAGAIN may only mean the pipe
 * is full, so readiness stays until the pipe has been emptied and the read tried again. */
static int dir_pump(struct sk_relay *r, struct sk_relay_dir *d, int src, int dst, bool with_prefix,
		    bool *src_rd, bool *dst_wr, bool *moved)
{
	const enum sk_budget_dim dim = d == &r->a2b ? SK_BUDGET_SENT : SK_BUDGET_RECEIVED;
	for (;;) {
		if (d->turn >= r->turn_max)
			return 0;   /* the rest next round (relay_resume): readiness is kept */
		bool step = false;
		size_t want = r->prefix_len;
		if (with_prefix && want > 0 && r->budget)
			want = budget_allow(r, SK_BUDGET_SENT, want);
		if (with_prefix && want > 0 && *dst_wr) {
			ssize_t n = send(dst, r->prefix, want, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0) {
				r->prefix += n;
				r->prefix_len -= (size_t)n;
				sent_to_b(r, d, (size_t)n);   /* with_prefix: dst is b */
				step = true;
			} else if (n < 0 && errno == EAGAIN) {
				*dst_wr = false;
			} else if (n < 0 && errno != EINTR) {
				return side_failed(r, dst);
			}
		}
		/* A pipe not yet taken has room for its whole capacity (or the pool's size, learnt on get). */
		want = d->pipe.r < 0 ? SIZE_MAX : d->pipe.cap - d->fill;
		if (!d->eof && *src_rd && want > 0 && r->budget)
			want = budget_allow(r, dim, want);
		if (!d->eof && *src_rd && want > 0 && d->fill == 0 && !d->spliced && !d->bulk &&
		    !(with_prefix && r->prefix_len > 0)) {
			int rc = copy_step(r, d, dim, src, dst, want, src_rd, dst_wr);
			if (rc < 0)
				return rc;
			step = step || rc > 0;
		} else if (!d->eof && *src_rd && want > 0) {
			if (d->pipe.r < 0) {
				int rc = sk_pipe_pool_get(r->pool, &d->pipe, d->bulk);
				if (rc < 0)
					return rc;
			}
			if (want > d->pipe.cap - d->fill)
				want = d->pipe.cap - d->fill;
			ssize_t n = splice(src, NULL, d->pipe.w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n >= 0 && src == r->b->fd)
				r->b_connecting = false;
			if (n > 0) {
				d->fill += (size_t)n;
				if (r->budget)
					budget_take(r, dim, (size_t)n);
				step = true;
				/* A full pipe: this direction is bulk. Growing keeps the bytes in it. */
				if (d->fill >= d->pipe.cap && !d->pipe.bulk && !d->nogrow) {
					d->bulk = true;
					int rc = sk_pipe_pool_grow(r->pool, &d->pipe);
					if (rc < 0 && rc != -ENOSPC)
						d->nogrow = true;
				}
			} else if (n == 0) {
				d->eof = true;
				step = true;
			} else if (errno == EAGAIN) {
				if (d->fill == 0) {
					*src_rd = false;
					d->hup = false;
				}
			} else if (errno != EINTR) {
				return side_failed(r, src);
			}
		}
		/* The prefix goes out before any spliced byte, so order is kept exactly. */
		if (d->fill > 0 && *dst_wr && !(with_prefix && r->prefix_len > 0)) {
			ssize_t n = splice(d->pipe.r, NULL, dst, NULL, d->fill, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				if (dst == r->b->fd)
					r->b_connecting = false;
				d->fill -= (size_t)n;
				d->bytes += (uint64_t)n;
				d->turn += (size_t)n;
				step = true;
			} else if (n < 0 && errno == EAGAIN) {
				*dst_wr = false;
			} else if (n < 0 && errno != EINTR) {
				return side_failed(r, dst);
			}
		}
		if (d->fill == 0 && d->pipe.r >= 0)
			sk_pipe_pool_put(r->pool, &d->pipe, true);
		/* A shutdown of b while its connect is in progress would abort the connect (SYN_SENT goes to
		 * CLOSE): the EOF waits until b is connected (its writable edge runs the pump again). */
		if (d->eof && d->fill == 0 && !d->shut && !(with_prefix && r->prefix_len > 0) &&
		    !(r->denied && d == &r->b2a) && !(with_prefix && r->b_connecting)) {
			if (!last_shut(r, d) && shutdown(dst, SHUT_WR) < 0 && errno != ENOTCONN)
				return side_failed(r, dst);
			d->shut = true;
			step = true;
		}
		if (!step)
			return 0;
		*moved = true;
	}
}

static int sock_error(int fd)
{
	int e = 0;
	socklen_t len = sizeof(e);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		return errno;
	return e;
}

/* Client→upstream through the gate: read into gbuf, let the gate judge, send what it released, in
 * order. Unreleased bytes never leave. Same edge-triggered discipline as dir_pump: loop until no step. */
static int gate_pump(struct sk_relay *r, bool *moved)
{
	struct sk_relay_dir *d = &r->a2b;
	for (;;) {
		if (d->turn >= r->turn_max)
			return 0;
		bool step = false;
		/* Released bytes are charged as they leave (unreleased ones never do). */
		size_t out = r->gout;
		if (out > 0 && r->budget)
			out = budget_allow(r, SK_BUDGET_SENT, out);
		if (out > 0 && r->b_wr) {
			ssize_t n = send(r->b->fd, r->gbuf, out, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0) {
				memmove(r->gbuf, r->gbuf + n, r->glen - (size_t)n);
				r->glen -= (size_t)n;
				r->gout -= (size_t)n;
				sent_to_b(r, d, (size_t)n);
				step = true;
			} else if (n < 0 && errno == EAGAIN) {
				r->b_wr = false;
			} else if (n < 0 && errno != EINTR) {
				return side_failed(r, r->b->fd);
			}
		}
		if (!d->eof && !r->denied && r->glen < r->gmax && r->a_rd) {
			if (r->glen == r->gcap) {
				size_t ncap = r->gcap ? r->gcap * 2 : 4096;
				if (ncap > r->gmax)
					ncap = r->gmax;
				uint8_t *nb = realloc(r->gbuf, ncap);
				if (!nb)
					return -ENOMEM;
				r->gbuf = nb;
				r->gcap = ncap;
			}
			const size_t room = r->gcap - r->glen;
			ssize_t n = recv(r->a->fd, r->gbuf + r->glen, room, 0);
			if (n > 0) {
				if ((size_t)n < room && !d->hup)
					r->a_rd = false;   /* drained (hup in relay.h) */
				r->glen += (size_t)n;
				r->gate_dirty = true;
				step = true;
			} else if (n == 0) {
				d->eof = true;
				r->gate_dirty = true;
				step = true;
			} else if (errno == EAGAIN) {
				r->a_rd = false;
				d->hup = false;
			} else if (errno != EINTR) {
				return side_failed(r, r->a->fd);
			}
		}
		if (r->gate && r->gate_dirty && !r->denied) {
			r->gate_dirty = false;
			size_t un = r->glen - r->gout;
			if (un > 0) {
				ssize_t k = r->gate(r, r->gbuf + r->gout, un, d->eof, r->glen >= r->gmax);
				if (k < 0) {
					r->denied = true;
				} else {
					r->gout += (size_t)k > un ? un : (size_t)k;
				}
				step = true;
			}
		}
		if (!r->gate && !r->denied)
			r->gout = r->glen;   /* ungated: everything left passes */
		if (d->eof && !r->denied && !r->gate_dirty && r->glen > r->gout && r->gout == 0)
			r->glen = 0;         /* the client is gone; what the gate never released is dropped */
		if (!r->gate && r->glen == 0) {
			free(r->gbuf);       /* back to splice (the caller runs dir_pump next) */
			r->gbuf = NULL;
			r->gcap = 0;
			*moved = *moved || step;
			return 0;
		}
		/* EOF: once everything is out. Refused: once what was released is out (the refused bytes
		 * stay behind), so the upstream finishes the requests before and closes. */
		if (!d->shut && !r->b_connecting &&   /* as in dir_pump: no shutdown while b connects */
		    ((d->eof && r->glen == 0) || (r->denied && r->gout == 0 && d->bytes > 0))) {
			if (!(d->eof && last_shut(r, d)) && shutdown(r->b->fd, SHUT_WR) < 0 && errno != ENOTCONN)
				return side_failed(r, r->b->fd);
			d->shut = true;
			step = true;
		}
		if (!step)
			return 0;
		*moved = true;
	}
}

static void relay_pump(struct sk_relay *r, uint32_t events, int fd)
{
	if (r->b_connecting && fd == r->b->fd && fd >= 0) {
		if (events & (EPOLLERR | EPOLLHUP)) {
			/* The connect failed: refused, unreachable, reset during the handshake. */
			int e = sock_error(fd);
			relay_finish(r, SK_RELAY_CONNECT, e ? e : ECONNRESET);
			return;
		}
		if (events & EPOLLOUT)
			r->b_connecting = false;
	}
	if (events & EPOLLERR) {
		int e = sock_error(fd);
		if (e) {
			relay_finish(r, SK_RELAY_RESET, e);
			return;
		}
	}
	if (fd >= 0) {
		const bool rd = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
		const bool wr = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
		if (fd == r->a->fd) {
			r->a_rd |= rd;
			r->a_wr |= wr;
			r->a2b.hup |= (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
		} else {
			r->b_rd |= rd;
			r->b_wr |= wr;
			r->b2a.hup |= (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
		}
	}
	bool moved = false;
	bool was_denied = r->denied;
	r->a2b.turn = r->b2a.turn = 0;
	r->in_pump = true;
	int rc = 0;
	if (r->gate || r->gbuf)
		rc = gate_pump(r, &moved);
	if (rc == 0 && !r->gate && !r->gbuf)
		rc = dir_pump(r, &r->a2b, r->a->fd, r->b->fd, true, &r->a_rd, &r->b_wr, &moved);
	if (rc == 0 && r->peek && r->peek(r))
		r->peek = NULL;
	if (rc == 0 && !r->peek)
		rc = dir_pump(r, &r->b2a, r->b->fd, r->a->fd, false, &r->b_rd, &r->a_wr, &moved);
	/* A peek that released the hold may have changed what the gate answers (a websocket 101). */
	if (rc == 0 && r->gate_dirty && r->gate)
		rc = gate_pump(r, &moved);
	if (rc == 0 && !r->gate && !r->gbuf)
		rc = dir_pump(r, &r->a2b, r->a->fd, r->b->fd, true, &r->a_rd, &r->b_wr, &moved);
	r->in_pump = false;
	if (rc < 0) {
		relay_finish(r, r->b_connecting && r->err_fd == r->b->fd ? SK_RELAY_CONNECT : SK_RELAY_RESET, -rc);
		return;
	}
	/* A direction stopped at the cap goes on next round. Armed before any finish below: relay_release
	 * cancels it. */
	const bool yielded = r->a2b.turn >= r->turn_max || r->b2a.turn >= r->turn_max;
	if (yielded && sk_timer_arm(r->loop, &r->resume, 0) < 0) {
		relay_finish(r, SK_RELAY_RESET, ENOMEM);
		return;
	}
	if (moved)
		r->last_ms = sk_loop_now_ms(r->loop);
	/* Spent: nothing more is taken (budget_allow), and once what was taken — and charged — has been
	 * delivered, the relay is cut. Bytes a gate released but never sent were not charged and go. */
	if (r->budget && r->budget_enforce && r->a2b.fill == 0 && r->b2a.fill == 0 &&
	    sk_budget_spent(r->budget, sk_loop_now_ms(r->loop))) {
		relay_finish(r, SK_RELAY_BUDGET, 0);
		return;
	}
	if (r->denied) {
		/* Nothing of the client's ever went upstream: no answer to wait for. Otherwise the upstream's
		 * answer to what was released flows until it closes (or drain_ms passes). */
		if ((r->a2b.bytes == 0 && r->gout == 0) || r->deny_at_once) {
			relay_finish(r, SK_RELAY_DENIED, 0);
			return;
		}
		if (r->b2a.eof && r->b2a.fill == 0) {
			relay_finish(r, SK_RELAY_DENIED, 0);
			return;
		}
		if (!was_denied) {
			r->idle_ms = r->drain_ms;
			r->last_ms = sk_loop_now_ms(r->loop);
			if (sk_timer_arm(r->loop, &r->idle, r->drain_ms) < 0)
				relay_finish(r, SK_RELAY_DENIED, 0);
		}
		return;
	}
	if (r->a2b.shut && r->b2a.shut)
		relay_finish(r, SK_RELAY_DONE, 0);
}

static void relay_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	relay_pump(io->ctx, events, io->fd);
}

/* A pump that stopped at SK_RELAY_TURN_BYTES goes on from the readiness it kept. */
static void relay_resume(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	relay_pump(t->ctx, 0, -1);
}

static void relay_idle(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_relay *r = t->ctx;
	uint64_t now = sk_loop_now_ms(l), quiet = now - r->last_ms;
	if (quiet >= r->idle_ms) {
		relay_finish(r, r->denied ? SK_RELAY_DENIED : SK_RELAY_IDLE, ETIMEDOUT);
		return;
	}
	if (sk_timer_arm(l, t, r->idle_ms - quiet) < 0)
		relay_finish(r, SK_RELAY_RESET, ENOMEM);
}

static void relay_init(struct sk_relay *r, struct sk_loop *l, struct sk_pipe_pool *pool,
		       const uint8_t *prefix, size_t prefix_len, uint64_t idle_ms, sk_relay_done_cb done,
		       void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->loop = l;
	r->pool = pool;
	r->a2b.pipe.r = r->a2b.pipe.w = r->b2a.pipe.r = r->b2a.pipe.w = -1;
	r->prefix = prefix;
	r->prefix_len = prefix_len;
	r->idle_ms = idle_ms;
	r->last_ms = sk_loop_now_ms(l);
	r->done = done;
	r->ctx = ctx;
	r->a_rd = r->a_wr = r->b_rd = r->b_wr = true;
	r->a2b.hup = r->b2a.hup = true;
	r->err_fd = -1;
	sk_timer_init(&r->idle, relay_idle, r);
	sk_timer_init(&r->resume, relay_resume, r);
	r->turn_max = SK_RELAY_TURN_BYTES;
}

int sk_relay_start(struct sk_relay *r, struct sk_loop *l, struct sk_pipe_pool *pool, int a_fd, int b_fd,
		   const uint8_t *prefix, size_t prefix_len, uint64_t idle_ms, sk_relay_done_cb done,
		   void *ctx, struct sk_err *err)
{
	relay_init(r, l, pool, prefix, prefix_len, idle_ms, done, ctx);
	r->a = &r->a_own;
	r->b = &r->b_own;
	sk_io_init(r->a, a_fd, relay_io, r);
	sk_io_init(r->b, b_fd, relay_io, r);
	const uint32_t ev = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	int rc = sk_loop_add(l, r->a, ev, err);
	if (rc < 0)
		return sk_err_prefix(err, "relay: client");
	rc = sk_loop_add(l, r->b, ev, err);
	if (rc < 0) {
		sk_loop_del(l, r->a);
		return sk_err_prefix(err, "relay: upstream");
	}
	if (idle_ms > 0 && sk_timer_arm(l, &r->idle, idle_ms) < 0) {
		sk_loop_del(l, r->a);
		sk_loop_del(l, r->b);
		return sk_err_set(err, ENOMEM, "relay: idle timer");
	}
	r->running = true;
	/* Edge-triggered registration reports what is already pending, so the first round moves the
	 * prefix and anything queued without an explicit kick here. */
	return 0;
}

int sk_relay_start_on(struct sk_relay *r, struct sk_loop *l, struct sk_pipe_pool *pool, struct sk_io *a,
		      struct sk_io *b, const uint8_t *prefix, size_t prefix_len, uint64_t idle_ms,
		      sk_relay_done_cb done, void *ctx, struct sk_err *err)
{
	relay_init(r, l, pool, prefix, prefix_len, idle_ms, done, ctx);
	if (idle_ms > 0 && sk_timer_arm(l, &r->idle, idle_ms) < 0)
		return sk_err_set(err, ENOMEM, "relay: idle timer");
	r->ext_io = true;
	r->a = a;
	r->b = b;
	a->cb = b->cb = relay_io;
	a->ctx = b->ctx = r;
	r->running = true;
	return 0;
}

void sk_relay_set_ready(struct sk_relay *r, bool a_rd, bool b_rd)
{
	r->a_rd = a_rd;
	r->b_rd = b_rd;
	/* drained, by the owner's EAGAIN or a short read with no RDHUP seen: no EOF is queued unreported */
	if (!a_rd)
		r->a2b.hup = false;
	if (!b_rd)
		r->b2a.hup = false;
}

void sk_relay_connecting(struct sk_relay *r) { r->b_connecting = true; }

void sk_relay_owner_closes(struct sk_relay *r) { r->owner_closes = true; }

void sk_relay_begin(struct sk_relay *r)
{
	if (r->running)
		relay_pump(r, 0, -1);
}

int sk_relay_gate(struct sk_relay *r, sk_relay_gate_fn gate, const uint8_t *initial, size_t initial_len,
		  size_t max, uint64_t drain_ms)
{
	if (max < initial_len)
		max = initial_len;
	size_t cap = initial_len > 4096 ? initial_len : 4096;
	if (cap > max)
		cap = max;
	uint8_t *b = malloc(cap ? cap : 1);
	if (!b)
		return -ENOMEM;
	if (initial_len)
		memcpy(b, initial, initial_len);
	free(r->gbuf);
	r->gbuf = b;
	r->gcap = cap;
	r->glen = initial_len;
	r->gout = 0;
	r->gmax = max;
	r->gate = gate;
	r->gate_dirty = initial_len > 0;
	r->drain_ms = drain_ms;
	r->prefix = NULL;
	r->prefix_len = 0;
	return 0;
}

void sk_relay_ungate(struct sk_relay *r) { r->gate = NULL; }

void sk_relay_deny_at_once(struct sk_relay *r) { r->deny_at_once = true; }

void sk_relay_hold_b(struct sk_relay *r, sk_relay_peek_fn peek) { r->peek = peek; }

void sk_relay_budget(struct sk_relay *r, struct sk_budget_entry *e, bool enforce, sk_relay_over_fn over)
{
	r->budget = e;
	r->budget_enforce = enforce;
	r->budget_over = false;
	r->over = over;
}

void sk_relay_kick(struct sk_relay *r)
{
	r->gate_dirty = true;
	if (r->in_pump || !r->running)
		return;   /* the pump in progress sees gate_dirty and runs the gate again */
	relay_pump(r, 0, -1);
}

/* sidecar/core/relay.h — moves bytes both ways between two connected non-blocking TCP sockets: small reads
 * (a request, a response) through user space, recv + send, and a direction that ever fills a read
 * (SK_RELAY_COPY_MAX) with splice(2) through a pipe, never copied from then on. Owns: the relay state machine
 * (half-close: EOF from one side becomes shutdown(SHUT_WR) of the other once its pipe is drained;
 * a reset or write error on either side ends the relay as RESET; an idle timeout), the replay of bytes
 * already read from side A before splicing starts, byte counts, and a pool of pipes.
 *
 * Memory stays bounded: a direction holds a pipe only while bytes are in flight (it goes back to the
 * pool when it empties), pipes are sized with F_SETPIPE_SZ, and an idle connection holds no pipe at all.
 * A direction that fills its pipe gets a larger one (bulk pipes, below), a bounded number of them.
 * Syscalls: the relay tracks each side's readiness from the edges, so a side that answered EAGAIN is
 * not tried again before its next event (a short connection costs no read that is sure to fail). 
 * The relay borrows both fds (the owner closes them after the done callback) and the prefix buffer.
 *
 * Gated client bytes (sk_relay_gate): a connection whose client bytes must be judged as they come (every
 * request of a plain-HTTP connection; the first flight of a client that was silent when the upstream was
 * connected) does not splice client→upstream. The relay reads those bytes into its own buffer and sends
 * upstream only what the gate releases, in order; unreleased bytes never leave. The gate may hand the
 * direction back to splice (sk_relay_ungate) once nothing more needs judging. A gate that refuses ends
 * the relay as DENIED — at once when no client byte was ever released, else after the released bytes are
 * sent, the upstream is shut for writing and its answer to them has been relayed (bounded by drain_ms),
 * so an earlier allowed request keeps its response. The upstream→client direction can be held too
 * (sk_relay_hold_b): a peek callback looks at the upstream's first bytes without consuming them.
 *
 * Budget (sk_relay_budget, budget.h): every byte taken from a side is charged to the rule's entry as it
 * is taken (into a pipe, or sent from the prefix or the gate buffer), and an enforcing relay never takes
 * more than the entry has left, so the upstream gets at most the budget, to the byte. Once the entry is
 * spent (by this relay or another) the relay takes nothing more, delivers what it already took, and ends
 * as BUDGET. Without a budget the only cost is a NULL check per step. */
#ifndef SK_SIDECAR_RELAY_H
#define SK_SIDECAR_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "sidecar/core/budget.h"
#include "sidecar/core/loop.h"

struct sk_pipe {
	int r, w;              /* -1 when none */
	size_t cap;            /* F_GETPIPE_SZ */
	bool bulk;             /* grown to the pool's bulk_size (counted in bulk_count) */
};

/* Bulk pipes: a direction whose pipe filled up (it moves bytes faster than one pipe's worth per round)
 * gets its pipe grown to bulk_size, so a bulk transfer costs a few splices per MiB instead of 32 (a
 * 64 KiB pipe moves at most 16 pages per call). The kernel charges every pipe's capacity to the
 * sidecar's UID (fs/pipe-user-pages-soft, 16 384 pages by default; past it new pipes get 2 pages and
 * growth fails), so bulk pipes are counted and capped: at most bulk_max exist (live or free) at once,
 * 4 096 pages with the defaults, and a direction that cannot grow keeps its small pipe. */
#define SK_PIPE_BULK_SIZE (512u << 10)
#define SK_PIPE_BULK_MAX 8u
#define SK_PIPE_BULK_FREE 4u

/* Free pipes kept for reuse; a pipe in the pool is always empty (a pipe put back with bytes in it is
 * closed, never pooled, so no byte of one connection can reach another). */
struct sk_pipe_pool {
	struct sk_pipe *free;
	size_t n_free, max_free;
	int pipe_size;         /* requested F_SETPIPE_SZ; 0 keeps the kernel default */
	size_t live;           /* pipes handed out and not yet returned */
	struct sk_pipe *bfree; /* free bulk pipes */
	size_t n_bfree, max_bfree;
	int bulk_size;         /* 0: no bulk pipes */
	size_t bulk_count, bulk_max;
};

/* max_free small pipes kept; bulk pipes as the SK_PIPE_BULK_* defaults (none if pipe_size is already
 * at least SK_PIPE_BULK_SIZE). */
void sk_pipe_pool_init(struct sk_pipe_pool *p, size_t max_free, int pipe_size);
/* Overrides the bulk defaults (size 0: no bulk pipes). Call before the first get. */
void sk_pipe_pool_bulk(struct sk_pipe_pool *p, int bulk_size, size_t bulk_max, size_t max_bfree);
void sk_pipe_pool_fini(struct sk_pipe_pool *p);   /* closes the free pipes */
/* A pipe: a free bulk one first when bulk (if any), else a free small one, else a new one. 0 or -errno. */
int sk_pipe_pool_get(struct sk_pipe_pool *p, struct sk_pipe *out, bool bulk);
/* Grows pp (which may hold bytes) to the bulk size: 0, or -ENOSPC when the bulk cap is reached or pp is
 * already bulk, or -errno from F_SETPIPE_SZ (then pp is unchanged). */
int sk_pipe_pool_grow(struct sk_pipe_pool *p, struct sk_pipe *pp);
void sk_pipe_pool_put(struct sk_pipe_pool *p, struct sk_pipe *pp, bool empty);  /* closes if !empty */

enum sk_relay_end {
	SK_RELAY_DONE = 0,     /* both directions saw EOF and were shut down: a clean close */
	SK_RELAY_RESET,        /* a side reset, or a read/write failed (err holds the errno) */
	SK_RELAY_IDLE,         /* no byte moved for idle_ms */
	SK_RELAY_DENIED,       /* the gate refused client bytes (the owner answers the client) */
	SK_RELAY_BUDGET,       /* the rule's budget is spent: cut after the last byte it allowed */
	SK_RELAY_CONNECT,      /* b's connect failed (sk_relay_connecting; err holds the connect's errno) */
};

struct sk_relay_dir {
	struct sk_pipe pipe;
	size_t fill;           /* bytes now in pipe */
	bool bulk;             /* filled a pipe once: takes (or grows to) a bulk pipe from now on */
	bool nogrow;           /* growing failed: not tried again */
	bool eof;              /* source returned EOF */
	/* The source's EOF may be queued behind its bytes with no edge left to report it: set at start and
	 * by an edge saying RDHUP/HUP/ERR, cleared by an EAGAIN. While clear, a short read (fewer bytes than
	 * asked for, into user space) proves the source drained as an EAGAIN would: anything that arrives
	 * after it, bytes or the FIN, raises a new edge. Saves the read that could only say EAGAIN. */
	bool hup;
	/* Moves through the pipe from now on: a read into user space filled SK_RELAY_COPY_MAX (bulk). */
	bool spliced;
	bool shut;             /* destination was shut down for writing */
	uint64_t bytes;        /* delivered to the destination (prefix included) */
	size_t turn;           /* delivered in the current pump (SK_RELAY_TURN_BYTES) */
};

struct sk_relay;
typedef void (*sk_relay_done_cb)(struct sk_relay *r, enum sk_relay_end how, int errnum);
/* Judges client bytes not yet released, buf[0..len) (the relay's buffer: valid until the call returns).
 * eof: the client sent FIN after them; full: the buffer is at its cap, no more bytes can come until some
 * are released. Returns how many bytes from the front may go upstream now (0..len), or -1 to refuse (the
 * relay ends DENIED). Called again when new bytes arrive and after sk_relay_kick. */
typedef ssize_t (*sk_relay_gate_fn)(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);
/* With the upstream→client direction held: look at the upstream (recv MSG_PEEK on r->b.fd) and return
 * true to release the hold (then splicing resumes), false to keep holding. */
typedef bool (*sk_relay_peek_fn)(struct sk_relay *r);
/* A relay that only reports (budget not enforced) found its budget spent; called once, from the pump. */
typedef void (*sk_relay_over_fn)(struct sk_relay *r);

/* Bytes one direction moves in one pump before the relay yields to the loop: a fast bulk stream on a
 * fast link would otherwise keep the (single-threaded) loop for tens of milliseconds, and DNS answers,
 * probes and every other connection with it. 4 MiB is ~3 ms at 10 Gbit/s and eight 512 KiB bulk pipes. */
#define SK_RELAY_TURN_BYTES ((size_t)4 << 20)

/* The most one read moves through user space (copy_step in relay.c): PIPE_BUF, so what the destination
 * does not take fits an empty pipe in one atomic write. A read that fills it makes the direction splice. */
#define SK_RELAY_COPY_MAX 4096u

struct sk_relay {
	struct sk_loop *loop;
	struct sk_pipe_pool *pool;
	struct sk_io *a, *b;   /* a: the client (agent), b: the upstream */
	struct sk_io a_own, b_own;   /* a and b when the relay registers them itself (sk_relay_start) */
	bool ext_io;           /* a and b are the owner's registrations (sk_relay_start_on) */
	bool owner_closes;     /* the owner closes both fds when done says DONE (sk_relay_owner_closes) */
	struct sk_relay_dir a2b, b2a;
	const uint8_t *prefix; /* borrowed: bytes read from a before the relay, sent to b first */
	size_t prefix_len;
	struct sk_timer idle;
	/* Fairness: one pump moves at most SK_RELAY_TURN_BYTES a direction; a relay with more to move then
	 * resumes from this 0 ms timer, which fires after the loop has served the other fds of its round. */
	struct sk_timer resume;
	size_t turn_max;       /* SK_RELAY_TURN_BYTES (tests lower it) */
	uint64_t idle_ms, last_ms;
	sk_relay_done_cb done; /* called once; the relay is stopped before, and may be freed inside */
	void *ctx;
	bool running;
	/* Readiness learnt from the edges (edge-triggered): set by an event that reports it, cleared by an
	 * EAGAIN, so a side that said "nothing more" costs no syscall until its next edge. All set at
	 * start (edges consumed before the relay are not reported again). */
	bool a_rd, a_wr, b_rd, b_wr;
	/* b's connect was not seen to complete when the relay started (sk_relay_connecting): cleared by the
	 * first byte written to or read from b, or an edge saying b is writable without an error. */
	bool b_connecting;
	int err_fd;            /* the side whose read or write failed (RESET vs CONNECT) */
	/* gate (client→upstream judged in user space); gate == NULL: splice */
	sk_relay_gate_fn gate;
	uint8_t *gbuf;         /* owned: gbuf[0..gout) released, not yet sent; [gout..glen) unjudged */
	size_t glen, gout, gcap, gmax;
	bool gate_dirty;       /* unjudged bytes the gate has not seen in their current extent */
	bool denied;           /* the gate refused: draining the upstream's answer to released bytes */
	bool deny_at_once;     /* a refusal ends the relay without that drain (sk_relay_deny_at_once) */
	uint64_t drain_ms;
	sk_relay_peek_fn peek; /* non-NULL while the upstream→client direction is held */
	bool in_pump;
	/* budget: NULL = none (borrowed: the owner holds a reference, sk_budget_ref) */
	struct sk_budget_entry *budget;
	bool budget_enforce;   /* false: count and report (over), never cut */
	bool budget_over;      /* over was called */
	sk_relay_over_fn over;
};

/* Starts relaying. On failure nothing is registered and the caller still owns everything. */
int sk_relay_start(struct sk_relay *r, struct sk_loop *l, struct sk_pipe_pool *pool, int a_fd, int b_fd,
		   const uint8_t *prefix, size_t prefix_len, uint64_t idle_ms, sk_relay_done_cb done,
		   void *ctx, struct sk_err *err);
/* Relays over descriptors the owner already registered on l, edge-triggered, for EPOLLIN | EPOLLOUT |
 * EPOLLRDHUP (no epoll_ctl here or at the end): the relay takes a->cb/ctx and b->cb/ctx over while it
 * runs and leaves the registrations in place when it ends (the owner closes the fds — see
 * sk_loop_forget — or takes them back with sk_loop_mod). Events the owner consumed before are not
 * reported again: call sk_relay_begin (after any sk_relay_gate) to move what is already pending. */
int sk_relay_start_on(struct sk_relay *r, struct sk_loop *l, struct sk_pipe_pool *pool, struct sk_io *a,
		      struct sk_io *b, const uint8_t *prefix, size_t prefix_len, uint64_t idle_ms,
		      sk_relay_done_cb done, void *ctx, struct sk_err *err);
/* What the owner knows of the sides when a relay started with sk_relay_start_on begins (by default every
 * side is taken as ready: one read per side that may only answer EAGAIN). a_rd / b_rd false: that side
 * was drained (its last read came up short or said EAGAIN) and no edge reported on it since — its
 * edge-triggered registration reports the next bytes or EOF, so nothing is lost. Call before
 * sk_relay_begin. */
void sk_relay_set_ready(struct sk_relay *r, bool a_rd, bool b_rd);
/* b's non-blocking connect has not been seen to complete (often it has: on a local path the handshake is
 * done inside connect()). b is tried as writable all the same — the send of the first bytes is the probe,
 * answering EAGAIN until the handshake is done, after which b's edge says so — instead of waiting a loop
 * round for that edge. A failure on b before anything was written to or read from it and before it was
 * reported writable ends the relay as SK_RELAY_CONNECT with the connect's errno, so the owner reports a
 * refused upstream, not a reset relay. The owner keeps its own connect deadline (sk_relay_connected). */
void sk_relay_connecting(struct sk_relay *r);
/* b's connect is known to have completed (always true without sk_relay_connecting). */
static inline bool sk_relay_connected(const struct sk_relay *r) { return !r->b_connecting; }
/* The owner closes both fds as soon as done reports SK_RELAY_DONE: the direction that finishes last then
 * leaves its shutdown(SHUT_WR) to that close, which sends the same FIN (both receive queues are empty by
 * then: each side's EOF was read) — one syscall less per connection. */
void sk_relay_owner_closes(struct sk_relay *r);
/* The first round of a relay started with sk_relay_start_on. May end it (done is called). */
void sk_relay_begin(struct sk_relay *r);
/* Stops without calling done (e.g. on shutdown): deregisters, cancels the timer, returns the pipes, frees
 * the gate buffer. */
void sk_relay_stop(struct sk_relay *r);

/* Call right after sk_relay_start, before returning to the loop (or from inside a gate or peek callback):
 * client bytes go through gate. initial (may be NULL/0) are bytes already read from the client
 * and not yet judged (copied). max: the most bytes held at once (>= initial_len). drain_ms bounds the
 * upstream drain after a refusal. The relay takes no prefix in this mode. 0 or -ENOMEM. */
int sk_relay_gate(struct sk_relay *r, sk_relay_gate_fn gate, const uint8_t *initial, size_t initial_len,
		  size_t max, uint64_t drain_ms);
/* A refusal by the gate ends the relay at once: no answer of the upstream's to bytes released before is
 * owed to the client (TLS: once a later hello is refused, the answer to the first is of no use). */
void sk_relay_deny_at_once(struct sk_relay *r);
/* From inside the gate: after this call's released bytes, splice client→upstream again (bytes the gate did
 * not release are released too: call it only when everything left is to pass). */
void sk_relay_ungate(struct sk_relay *r);
/* Holds upstream→client until peek returns true (NULL releases now). */
void sk_relay_hold_b(struct sk_relay *r, sk_relay_peek_fn peek);
/* Counts this relay's bytes against e from now on (NULL: none). enforce: take at most what e has left
 * and end as BUDGET once it is spent; otherwise count everything and call over once when it is spent.
 * e is borrowed: the owner keeps it alive (sk_budget_ref) until the relay ends. */
void sk_relay_budget(struct sk_relay *r, struct sk_budget_entry *e, bool enforce, sk_relay_over_fn over);
/* Re-runs the relay (the gate sees its unjudged bytes again): after an outside event changed what the gate
 * would answer. May end the relay (done is called). */
void sk_relay_kick(struct sk_relay *r);

/* "done", "reset", "idle", "denied", "budget", "connect" */
const char *sk_relay_end_name(enum sk_relay_end e);

#endif

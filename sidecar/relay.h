/* sidecar/relay.h — moves bytes both ways between two connected non-blocking TCP sockets with splice(2)
 * through a pipe per direction, never copying them into user space. Owns: the relay state machine
 * (half-close: EOF from one side becomes shutdown(SHUT_WR) of the other once its pipe is drained;
 * a reset or write error on either side ends the relay as RESET; an idle timeout), the replay of bytes
 * already read from side A before splicing starts, byte counts, and a pool of pipes.
 *
 * Memory stays bounded: a direction holds a pipe only while bytes are in flight (it goes back to the
 * pool when it empties), pipes are sized with F_SETPIPE_SZ, and an idle connection holds no pipe at all.
 * The relay borrows both fds (the owner closes them after the done callback) and the prefix buffer. */
#ifndef SK_SIDECAR_RELAY_H
#define SK_SIDECAR_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "sidecar/loop.h"

struct sk_pipe {
	int r, w;              /* -1 when none */
	size_t cap;            /* F_GETPIPE_SZ */
};

/* Free pipes kept for reuse; a pipe in the pool is always empty. */
struct sk_pipe_pool {
	struct sk_pipe *free;
	size_t n_free, max_free;
	int pipe_size;         /* requested F_SETPIPE_SZ; 0 keeps the kernel default */
	size_t live;           /* pipes handed out and not yet returned */
};

void sk_pipe_pool_init(struct sk_pipe_pool *p, size_t max_free, int pipe_size);
void sk_pipe_pool_fini(struct sk_pipe_pool *p);   /* closes the free pipes */
int sk_pipe_pool_get(struct sk_pipe_pool *p, struct sk_pipe *out);   /* 0 or -errno */
void sk_pipe_pool_put(struct sk_pipe_pool *p, struct sk_pipe *pp, bool empty);  /* closes if !empty */

enum sk_relay_end {
	SK_RELAY_DONE = 0,     /* both directions saw EOF and were shut down: a clean close */
	SK_RELAY_RESET,        /* a side reset, or a read/write failed (err holds the errno) */
	SK_RELAY_IDLE,         /* no byte moved for idle_ms */
};

struct sk_relay_dir {
	struct sk_pipe pipe;
	size_t fill;           /* bytes now in pipe */
	bool eof;              /* source returned EOF */
	bool shut;             /* destination was shut down for writing */
	uint64_t bytes;        /* delivered to the destination (prefix included) */
};

struct sk_relay;
typedef void (*sk_relay_done_cb)(struct sk_relay *r, enum sk_relay_end how, int errnum);

struct sk_relay {
	struct sk_loop *loop;
	struct sk_pipe_pool *pool;
	struct sk_io a, b;     /* a: the client (agent), b: the upstream */
	struct sk_relay_dir a2b, b2a;
	const uint8_t *prefix; /* borrowed: bytes read from a before the relay, sent to b first */
	size_t prefix_len;
	struct sk_timer idle;
	uint64_t idle_ms, last_ms;
	sk_relay_done_cb done; /* called once; the relay is stopped before, and may be freed inside */
	void *ctx;
	bool running;
};

/* Starts relaying. On failure nothing is registered and the caller still owns everything. */
int sk_relay_start(struct sk_relay *r, struct sk_loop *l, struct sk_pipe_pool *pool, int a_fd, int b_fd,
		   const uint8_t *prefix, size_t prefix_len, uint64_t idle_ms, sk_relay_done_cb done,
		   void *ctx, struct sk_err *err);
/* Stops without calling done (e.g. on shutdown): deregisters, cancels the timer, returns the pipes. */
void sk_relay_stop(struct sk_relay *r);

const char *sk_relay_end_name(enum sk_relay_end e);   /* "done", "reset", "idle" */

#endif

/* sidecar/dns/internal.h — what the DNS server's files share (the server object, a query in flight, the
 * client and upstream connections) and nothing else includes: other rooms include server.h only. The server
 * is split along its concerns:
 *   server.c    setup, drain and teardown; the binding hooks the proxy checks
 *   client.c    the agent's side: UDP and TCP listeners, TCP clients, replies, a query judged and answered
 *               locally, from the cache, or sent on
 *   forward.c   the upstream side: a query's life cycle, its UDP sockets, TCP after TC=1, the answer judged,
 *               the pending table's deadlines
 *   fallback.c  the sidecar's own resolutions on a binding miss (sc->resolve)
 *   probe.c     the upstream liveness probe and /readyz's dns_upstream_ok
 *   account.c   audit lines and metrics of a judged query, the `queries` budget
 *
 * Objects and ownership:
 *  - struct dq: one client query in flight toward upstream; owned by the pending table entry whose ctx it
 *    is (freed by dns_query_finish together with the entry); holds its client (UDP peer, or a TCP client it
 *    keeps a reference on) and its upstream TCP connection, if the answer was truncated.
 *  - struct tcl: a TCP client connection. Freed when the peer is gone AND no dq refers to it, so a late
 *    answer never touches freed memory.
 *  - struct utcp: the TCP connection of one query to its upstream, owned by that dq.
 *  - struct usock: a UDP socket of one query toward one upstream server, owned by that dq (us[server]),
 *    connected to that server from a port the kernel picks at random (RFC 5452: a spoofer must guess the
 *    port as well as the ID), closed with the dq. At most s->us_max open at once (the pool); a query that
 *    cannot get one is answered SERVFAIL, never sent from a shared or fixed port.
 *  - fallback resolutions (sc->resolve, resolve.h): a group of requests for one (name, family) owns one
 *    dq (resolve = true, no client) and its overall deadline timer; the group (dq->rg, group->ctx == dq)
 *    and its requests belong to s->rbook. The dq is freed before the group's done callbacks run, so a
 *    callback may start or cancel resolutions freely. */
#ifndef SK_SIDECAR_DNS_INTERNAL_H
#define SK_SIDECAR_DNS_INTERNAL_H

#include "sidecar/dns/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "sidecar/core/budget.h"
#include "sidecar/dns/bind.h"
#include "sidecar/dns/cache.h"
#include "sidecar/dns/filter.h"
#include "sidecar/dns/resolve.h"
#include "sidecar/dns/upstream.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/net.h"

#define TCP_QUERY_MAX 4096          /* a client's TCP query larger than this is not a query */
#define TCP_CLIENTS_MAX 256
#define TCP_CLIENT_OUTSTANDING 32
#define TCP_WBUF_MAX (256u * 1024u)
#define TCP_IDLE_MS 10000u
#define PENDING_MAX 4096
#define UDP_BATCH 64
#define UDP_MMSG 16                 /* the agent's UDP queries one recvmmsg takes (UDP_BATCH a wake-up) */

struct tcl {
	struct sk_dns_srv *srv;
	struct sk_io io;
	struct sk_timer idle;
	struct sk_addr peer;
	uint16_t peer_port;
	uint8_t rbuf[2 + TCP_QUERY_MAX];
	size_t rlen;
	uint8_t *wbuf;
	size_t wlen, woff;
	unsigned refs;               /* dq pointing here */
	bool closed;
};

struct utcp {
	struct sk_io io;
	struct dq *dq;
	uint8_t wbuf[2 + 512];
	size_t wlen, woff;
	uint8_t *rbuf;               /* 2 + 65535 */
	size_t rlen;
};

struct usock {
	struct sk_io io;
	struct dq *dq;
	uint8_t server;              /* index into srv->ups: the peer this socket is connected to */
};

struct dq {
	struct sk_dns_srv *srv;
	struct usock *us[SK_DNS_UPSTREAM_MAX];   /* UDP toward each server it was sent to, opened on first send */
	struct sk_dns_pending *p;
	bool client_tcp;
	int lfd;                     /* UDP: the listener it came in on */
	struct sockaddr_storage peer;
	socklen_t peerlen;
	struct tcl *tc;
	struct utcp *ut;
	bool probe;                  /* the server's own liveness probe: no client, answers only set readiness */
	bool resolve;                /* a fallback resolution (rg): no client, answers go to its requests */
	struct sk_resolve_group *rg;
	struct sk_timer rtimer;      /* resolve: the overall deadline (SK_RESOLVE_TIMEOUT_MS), or 0 for a hit */
	struct sk_addr *hit;         /* resolve answered from the cache (no p): its addresses, owned */
	size_t n_hit;
	bool hit_answered;           /* the cached answer was NOERROR */
};

struct sk_dns_srv {
	struct sk_sidecar *sc;
	struct sk_dns_upstreams ups;
	struct sk_dns_ptable *pt;
	struct sk_bind_table *binds;
	struct sk_dns_filter_opts opts;
	struct sk_io udp[2];           /* [0] IPv4, [1] IPv6; fd -1 when unused */
	struct sk_listener tcp[2];     /* net.h: back off when out of descriptors; io.fd -1 when unused */
	size_t n_us, us_max;           /* upstream UDP sockets open (struct usock), and the pool's bound */
	struct sk_timer timer;
	struct sk_timer probe;       /* periodic upstream probe for /readyz's dns_upstream check */
	uint64_t probe_ms;           /* 0: no probe (readiness then follows real answers only) */
	bool probe_inflight;
	size_t n_tcl;
	struct sk_rbook rbook;       /* fallback resolutions in flight */
	struct sk_rneg *neg;         /* their recent mismatches */
	struct sk_dns_cache *cache;  /* filtered answers (dns_cache.h); flushed when policy_gen moves */
	uint8_t in[SK_DNS_MSG_MAX + 2];
	uint8_t out[SK_DNS_MSG_MAX + 2];
	/* One recvmmsg's worth of the agent's queries (client.c), each as large as any datagram, as in is:
	 * only the pages a query is written to are ever touched. */
	uint8_t qbuf[UDP_MMSG][SK_DNS_MSG_MAX + 2];
	/* UDP replies a loop round produced, sent together by one sendmmsg a listener at the round's end
	 * (dns_flush_replies, a loop flush) or when the queue is full; rbuf as qbuf. */
	struct udp_reply {
		int lfd;
		socklen_t peerlen;
		struct sockaddr_storage peer;
		size_t len;
	} rq[UDP_MMSG];
	size_t n_rq;
	bool flush_added;            /* dns_flush_replies is registered with the loop */
	uint8_t rbuf[UDP_MMSG][SK_DNS_MSG_MAX + 2];
};

static inline uint64_t dns_now_ms(const struct sk_dns_srv *s) { return sk_loop_now_ms(s->sc->loop); }

/* account.c */
/* One judged query's metric, and its audit line when it is a denial (audit: a would_deny of mode audit);
 * src NULL for the sidecar's own resolutions. */
void dns_account(struct sk_dns_srv *s, enum sk_dns_result r, const struct sk_dns_fquery *q, bool audit,
		 const struct sk_addr *src, uint16_t src_port, bool tcp);
/* Charges q to its rule's `queries` budget; true when the query must not go upstream (see account.c). */
bool dns_budget_spent(struct sk_dns_srv *s, const struct sk_dns_fquery *q, const struct sk_addr *src,
		      uint16_t sport, bool tcp);

/* client.c */
void dns_on_udp(struct sk_loop *l, struct sk_io *io, uint32_t events);
void dns_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *ss);
/* Drops a query's reference on its TCP client, freeing it once it is closed and no query refers to it. */
void dns_tcl_release(struct tcl *c);
/* Sends msg to d's client: a TCP frame now, a UDP datagram queued for the round's dns_flush_replies. */
void dns_reply(struct dq *d, const uint8_t *msg, size_t len);
/* Sends the queued UDP replies (the loop runs it at the end of every round; ctx is the server). */
void dns_flush_replies(void *ctx);
/* d's client address, for audit lines. */
void dns_peer_of(const struct dq *d, struct sk_addr *a, uint16_t *port);

/* forward.c */
int dns_send_upstream(struct sk_dns_srv *s, struct dq *d);
void dns_handle_answer(struct sk_dns_srv *s, struct dq *d, const uint8_t *ans, size_t len, bool upstream_tcp);
/* Ends d: its upstream sockets, its pending entry, its reference on a TCP client; frees d. */
void dns_query_finish(struct dq *d);
/* Arms the server's timer for the pending table's next deadline. */
void dns_arm_timer(struct sk_dns_srv *s);
void dns_on_timer(struct sk_loop *l, struct sk_timer *t);

/* fallback.c: sc->resolve's hooks */
int dns_resolve_start(void *ctx, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done, void *arg,
		      struct sk_resolve_req **req);
void dns_resolve_cancel(void *ctx, struct sk_resolve_req *req);
void dns_resolve_end(struct sk_dns_srv *s, struct dq *d, bool answered, const struct sk_addr *addrs, size_t n);
/* A resolution's upstream answer, judged as an agent's (av): ends its group. */
void dns_resolve_answered(struct sk_dns_srv *s, struct dq *d, const struct sk_dns_averdict *av);

/* probe.c */
void dns_set_upstream_ok(struct sk_dns_srv *s, bool ok);
void dns_on_probe(struct sk_loop *l, struct sk_timer *t);

#endif

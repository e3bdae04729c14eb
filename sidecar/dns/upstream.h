/* sidecar/dns/upstream.h — where the DNS filter forwards to, and the queries in flight there.
 *
 * Owns: the upstream list (resolv.conf `nameserver` lines — search/ndots/options are the client's
 * business, its own stub applies them before asking us — or literals from the policy's dns.upstream);
 * upstream query IDs (random, from getrandom, unique among those in flight); and the pending-query
 * table: an answer is accepted only if its ID is the query's, its question equals the one asked, and it
 * comes from a server that query was sent to over the query's own socket (sk_dns_pend_answers; the
 * server gives every query a connected UDP socket with a fresh random source port, RFC 5452) — anything
 * else (spoofed, late, duplicate, or another query's answer) is dropped.
 * Timeouts and retries are a pure state machine over explicit time; the socket I/O and the timer are the
 * server's (sidecar/dns/forward.c), which calls in with what happened. Single-threaded. */
#ifndef SK_SIDECAR_DNS_UPSTREAM_H
#define SK_SIDECAR_DNS_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "policy/addr.h"
#include "policy/policy.h"
#include "sidecar/dns/filter.h"

#define SK_DNS_UPSTREAM_MAX 8   /* from the policy; resolv.conf contributes at most 3, as glibc reads it */
#define SK_RESOLV_MAXNS 3

struct sk_dns_server {
	struct sk_addr addr;
	uint16_t port;
};

struct sk_dns_upstreams {
	struct sk_dns_server v[SK_DNS_UPSTREAM_MAX];
	size_t n;
};

/* Parses resolv.conf text: `nameserver ADDR` lines (IPv4 or IPv6; an IPv6 with a %zone is skipped, as
 * the sidecar cannot choose the interface), appended to out up to SK_RESOLV_MAXNS from this text. Other
 * keywords are ignored. Returns the number appended, or -ENOENT (err filled) when there is none. */
int sk_resolv_parse(const char *text, size_t len, const char *what, struct sk_dns_upstreams *out,
		    struct sk_err *err);
int sk_resolv_load(const char *path, struct sk_dns_upstreams *out, struct sk_err *err);

/* "10.0.0.10", "10.0.0.10:5353", "fd00::a", "[fd00::a]:5353". Returns 0 or -EINVAL. */
int sk_dns_server_parse(const char *s, struct sk_dns_server *out);

/* The policy's dns.upstream, in order: "resolv.conf" expands to resolv_path's nameservers, literals are
 * parsed. Returns 0, or < 0 with err naming the entry (no usable upstream is an error: fail closed). */
int sk_dns_upstreams_from_policy(const struct sk_policy *p, const char *resolv_path,
				 struct sk_dns_upstreams *out, struct sk_err *err);

struct sk_dns_pt_cfg {
	struct sk_dns_upstreams servers;  /* copied; n >= 1 */
	uint32_t attempt_timeout_ms; /* per UDP attempt; default 1500 */
	uint32_t tcp_timeout_ms;     /* for the TCP retry after TC=1; default 4000 */
	unsigned max_attempts;       /* UDP sends in total, rotating servers; default max(2, servers.n) ≤ 4 */
};

/* One query in flight. The server owns ctx (its client); everything else belongs to the table. */
struct sk_dns_pending {
	uint16_t id;                 /* the ID on the wire toward upstream */
	uint8_t server;              /* index of the server of the current attempt */
	uint8_t sent_mask;           /* servers it was sent to: late answers from an earlier one still count */
	uint8_t attempts;            /* UDP sends so far */
	bool tcp;                    /* the current attempt is over TCP (after TC=1) */
	uint64_t started_ms, deadline_ms;
	struct sk_dns_fquery q;
	void *ctx;
	struct sk_dns_pending *prev, *next;   /* deadline order (intrusive) */
	bool in_list;
};

struct sk_dns_ptable;

/* cap: most queries in flight (a new one beyond it is refused: the server answers SERVFAIL). */
int sk_dns_ptable_new(size_t cap, const struct sk_dns_pt_cfg *cfg, struct sk_dns_ptable **out,
		      struct sk_err *err);
void sk_dns_ptable_free(struct sk_dns_ptable *t);   /* frees the pendings; never touches their ctx */
size_t sk_dns_ptable_count(const struct sk_dns_ptable *t);

/* Starts a query: unique random ID, first server, deadline = now + attempt timeout. The caller then
 * sends sk_dns_filter_upstream_query(&p->q, p->id, ...) to server p->server. NULL when full (or
 * getrandom failed). */
struct sk_dns_pending *sk_dns_pend_start(struct sk_dns_ptable *t, const struct sk_dns_fquery *q, void *ctx,
					 uint64_t now_ms);
/* Does ans[0..len), which arrived on the socket the server opened for p toward server index `server`
 * (a connected UDP socket with its own random source port, or p's TCP connection), answer p? True when
 * p is still in flight, was sent to that server, and ans is a response with p's ID and one question
 * equal to p's (case-insensitively). The socket stands for the rest of the tuple: the kernel delivers
 * to a connected socket only datagrams from its peer, so a spoofer must hit our port too. */
bool sk_dns_pend_answers(const struct sk_dns_ptable *t, const struct sk_dns_pending *p, unsigned server,
			 const uint8_t *ans, size_t len);
/* The answer was truncated: the next attempt is over TCP to the same server, with the TCP timeout. */
void sk_dns_pend_to_tcp(struct sk_dns_ptable *t, struct sk_dns_pending *p, uint64_t now_ms);
/* Removes and frees p (answered, given up, or its client went away). */
void sk_dns_pend_done(struct sk_dns_ptable *t, struct sk_dns_pending *p);

/* The earliest deadline, or UINT64_MAX when nothing is in flight (for arming the loop's timer). */
uint64_t sk_dns_pend_next_deadline(const struct sk_dns_ptable *t);

enum sk_dns_expiry {
	SK_DNS_EXP_NONE = 0,   /* nothing is due */
	SK_DNS_EXP_RETRY,      /* *p: send again (same ID) to p->server over UDP; its deadline was reset */
	SK_DNS_EXP_GIVE_UP,    /* *p: out of attempts (or TCP timed out): answer SERVFAIL, then pend_done */
};
/* Takes the next due query, if any, and decides. Call until it returns NONE. */
enum sk_dns_expiry sk_dns_pend_expire(struct sk_dns_ptable *t, uint64_t now_ms, struct sk_dns_pending **p);

#endif

/* sidecar/proxy/internal.h — what the transparent proxy's files share (struct conn, struct sk_proxy, the
 * enums of the state machine) and nothing else includes: other rooms include proxy.h only. The proxy is
 * split along its concerns:
 *   proxy.c     deciding (match, binding, fallback resolution), accepting, the early connect, the listeners
 *   conn.c      per-source counts, a connection's life and end (audit line, deny answers), budgets, the
 *               upstream connect and the relay
 *   classify.c  the peek: classifying the first flight and deciding before the connect
 *   gates.c     judging client bytes while relaying (server-first flights, every TLS ClientHello, every
 *               HTTP request head)
 *   inspect.c   a TLS connection an `inspect: true` rule allowed: the TLS bridge (inspect/bridge.h) with
 *               the HTTP/1 filter (inspect_h1.h) in place of the relay, its audit lines and budgets */
#ifndef SK_SIDECAR_PROXY_INTERNAL_H
#define SK_SIDECAR_PROXY_INTERNAL_H

#include "sidecar/proxy/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/util.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "sidecar/proxy/http_head.h"
#include "sidecar/proxy/http_track.h"
#include "sidecar/proxy/requests_gate.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/net.h"
#include "sidecar/core/relay.h"
#include "sidecar/proxy/tls_hello.h"

struct sk_bridge;
struct sk_pt_filter;

/* linux/netfilter_ipv4.h and linux/netfilter_ipv6/ip6_tables.h: both are 80, on SOL_IP / SOL_IPV6. */
#define SK_SO_ORIGINAL_DST 80
#define SK_IP6T_SO_ORIGINAL_DST 80

#define PEEK_BUF_INITIAL 2048
#define CLOSING_LINGER_MS 2000
/* How often a budget-cut upstream is looked at until the kernel has sent (and had acked) its queue. */
#define BUDGET_FLUSH_POLL_MS 2
#define SRC_BUCKETS 256
/* Each connection's two fds are registered once, edge-triggered, for everything the relay needs. */
#define CONN_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

enum conn_state { CS_PEEK = 0, CS_RESOLVE, CS_CONNECT, CS_RELAY, CS_CLOSING, CS_BRIDGE };

/* What the client→upstream gate of a relaying connection is doing (see relay.h, sk_relay_gate). */
enum gate_kind {
	GATE_NONE = 0,   /* spliced: TLS past its hellos, or TCP that was classified, or a declared-TCP port */
	GATE_FIRST,      /* server-first connect: the client's first flight, whenever it comes, is classified */
	GATE_HTTP,       /* plain HTTP: every request head is checked (http_track.h) */
	GATE_TLS,        /* TLS whose handshake may still carry a new ClientHello (after a HelloRetryRequest):
			  * every client record is walked and every hello judged, until the server's
			  * ServerHello that is not an HRR (gate_tls, peek_tls_server) */
};

/* A decision that waits on the sidecar's own resolution (sk_resolve_hooks). */
enum verdict { V_ALLOW = 0, V_DENY, V_PENDING };

struct src_count {
	struct src_count *next;
	struct sk_addr addr;
	uint32_t n;
};

/* struct conn's yes/no facts, one bit each of conn->flags (conn_has, conn_set; conn_flags_str names
 * them for the debug log). */
enum conn_flag {
	CF_HAS_NAME = 1u << 0,       /* c->name holds the SNI / Host the connection is decided on */
	CF_RULE_NAMED = 1u << 1,     /* the deciding rule has a name (rule_label is it, else its index) */
	CF_LATE = 1u << 2,           /* connected on a silent start: the first flight came (or comes) late */
	CF_FIRST_DONE = 1u << 3,     /* GATE_FIRST: the first flight was classified and decided */
	CF_HTTP_FIRST_OK = 1u << 4,  /* the first request head was the one decided before connecting */
	CF_UPGRADE_WAIT = 1u << 5,   /* GATE_HTTP: a websocket upgrade waits for its status line */
	CF_RULE_REQUESTS = 1u << 6,  /* the rule (set_rule) has request rules (requests_gate.h) */
	CF_TLS_OPEN = 1u << 7,       /* GATE_TLS: the server has not yet answered with a non-HRR ServerHello */
	CF_TLS_ECH = 1u << 8,        /* the allowed hello carried ECH (tls.echGrease: allow): so must the rest */
	CF_RESOLVED = 1u << 9,       /* a resolution finished; verdict_after holds its outcome */
	CF_BUDGET_COUNTED = 1u << 10, /* charged as one of the rule's connections */
	/* early connect (see early_connect): ufd was opened at accept, before the decision; not one byte
	 * goes to it until the decision allows (the relay starts only then) */
	CF_EARLY = 1u << 11,
	CF_EARLY_UP = 1u << 12,      /* its connect completed */
	/* What the relay must look at when it starts (edges consumed before it are not reported again): the
	 * client may have bytes or EOF not yet read (the peek stopped without draining it, or an edge came
	 * while resolving or connecting); the upstream may have bytes (a greeting before the decision). */
	CF_C_RD = 1u << 13,
	CF_U_RD = 1u << 14,
	CF_RULE_INSPECT = 1u << 15,  /* the rule (set_rule) says inspect: true: its TLS is terminated */
	CF_BRIDGED = 1u << 16,       /* connecting for, or running, the TLS bridge (inspect.c) */
	CF_BUDGET_OVER = 1u << 17,   /* mode audit: the bridge's budget was found spent and reported once */
	CF_H2_LINE_DONE = 1u << 18,  /* the HTTP/2 header hook wrote the deny line of the stream it refused */
};
#define CONN_FLAGS_STR_MAX 192   /* every flag's name, comma-separated, and the NUL */

struct sk_swap_mask;

struct conn {
	struct sk_proxy *px;
	struct conn *prev, *next;      /* every live connection, for shutdown */
	enum conn_state st;
	int cfd, ufd;
	struct sk_io cio, uio;
	struct sk_timer timer;         /* peek deadline, connect timeout, late-flight deadline or linger */
	struct sk_relay relay;
	struct sk_addr src, dst;
	uint16_t sport, dport;
	uint32_t flags;                /* enum conn_flag */
	struct src_count *srcent;
	struct sk_req_denial *req_denial;  /* GATE_HTTP: the request its request rules denied (owned) */
	uint64_t t0_ms;
	uint64_t rule_gen;             /* the policy_gen rule indexes (set_rule) */
	uint8_t *buf;                  /* every byte read from the client before the decision */
	size_t len, cap;
	char name[SK_DOMAIN_MAX + 1];
	/* The deciding rule's label, copied at the decision (a reload may free the policy before the
	 * connection ends): its name: when it has one, else its index. Meaningful while rule >= 0. */
	char rule_label[64];
	const char *proto;             /* "tls" | "http" | "tcp"; NULL before classification */
	enum sk_proto match_proto;
	int rule;
	const char *decision, *reason, *binding;
	/* after the decision */
	enum gate_kind gate;
	struct sk_http_track track;    /* GATE_HTTP */
	uint32_t request;              /* GATE_HTTP: number of the head being judged (1-based) */
	size_t held_head;              /* GATE_HTTP: a head already parsed, waiting on a resolution */
	size_t tls_skip;               /* GATE_TLS: bytes of a passing record not yet in the gate's buffer */
	/* fallback resolution */
	struct sk_resolve_req *resolving;
	enum verdict verdict_after;
	uint64_t bytes_in, bytes_out;  /* when the relay ended */
	/* budget of the rule that allowed it (budget.h): a reference held until the connection is freed */
	struct sk_budget_entry *budget;
	unsigned flush_polls;          /* budget cut: looks left at the upstream's send queue before its reset */
	/* CS_BRIDGE (inspect.c): the bridge (owned) and the filter it borrows (owned, freed after it) */
	struct sk_bridge *bridge;
	struct sk_pt_filter *filter;
	struct sk_swap_mask *h2_mask;  /* HTTP/2 toward a host a secret lists: the values its filter masks
	                                * (owned, freed after the filter, which borrows it) */
	uint64_t br_up, br_down;       /* the bridge's plaintext counts already charged to the budget */
	uint32_t want_c, want_u;       /* the epoll interest last registered for the bridge */
};

struct sk_proxy {
	struct sk_sidecar *sc;
	struct sk_listener l4, l6;     /* net.h: back off when out of descriptors */
	struct conn *conns;
	size_t n_conns;
	struct sk_pipe_pool pipes;
	struct src_count *src[SRC_BUCKETS];
	/* Ports every proxied rule of the policy in force declares `protocol: tcp` (decided at accept, no
	 * peek); recomputed when sc->policy_gen moves on. One bit a port. */
	uint64_t tcp_ports_gen;
	bool tcp_ports_valid;
	uint8_t tcp_only[65536 / 8];
	bool budget_sweeping;          /* closing the other relays of a spent budget (no nesting) */
};


/* What the client's first flight is (the classifier table in docs/policy.md, "How a connection is
 * classified"):
 *   0x16 then 0x03                  a TLS handshake record: the ClientHello is parsed for SNI (waits for
 *                                   the whole hello, up to the cap); 0x16 then anything else is not TLS
 *   high bit set, third byte 0x01   an SSLv2-format ClientHello (servers still take it; it has no SNI):
 *                                   denied as TLS
 *   a token then SP ...             an HTTP/1.x request line (waits for the whole head); heads the parser
 *                                   refuses but a server would take are denied as HTTP
 *   anything else                   "tcp" at once: it cannot begin a TLS hello or a request line, so no
 *                                   server reads a name out of it */
enum classify {
	CL_MORE = 0,   /* a prefix of TLS or HTTP: wait for more (up to the cap and the deadline) */
	CL_TCP,        /* cannot be TLS or HTTP: plain TCP */
	CL_NAMED,      /* TLS with SNI, or HTTP with a Host: c->proto, c->name / has_name set */
	CL_PARSE_DENY, /* TLS or HTTP that is refused as such; *why says why */
};

/* conn.c */
/* The names of flags' set bits, comma-separated ("-" for none), into buf (CONN_FLAGS_STR_MAX bytes). */
const char *conn_flags_str(uint32_t flags, char *buf, size_t size);
struct src_count *src_get(struct sk_proxy *px, const struct sk_addr *a, bool create);
void close_rst(int fd);
bool is_loop(const struct sk_proxy *px, const struct sk_addr *dst, uint16_t port);
const char *conn_rule_label(const struct conn *c);
void set_rule(struct conn *c, const struct sk_policy *pol, int rule);
void conn_audit(struct conn *c, const char *event, uint64_t bytes_in, uint64_t bytes_out);
void conn_free(struct conn *c);
void conn_deny_rst(struct conn *c, const char *reason);
void ignore_io(struct sk_loop *l, struct sk_io *io, uint32_t events);
void conn_deny(struct conn *c, const char *reason);
enum verdict budget_admit(struct conn *c);
void conn_connect(struct conn *c);

/* proxy.c */
void decision_latency(struct conn *c);
enum verdict verdict_deny(struct conn *c, const char *reason);
enum verdict decide(struct conn *c);

/* classify.c */
enum classify classify_bytes(struct conn *c, const uint8_t *b, size_t len, bool final, const char **why);
enum verdict check_conn_requests(struct conn *c);
enum verdict check_request_rules(struct conn *c, const uint8_t *head, size_t n, const struct sk_http_head *h);
/* A plain-HTTP head carrying a `secrets:` placeholder or value: credential_misuse (classify.c). */
enum verdict check_credentials(struct conn *c, const uint8_t *head, size_t n);
void act_peek(struct conn *c, enum verdict v);
void peek_io(struct sk_loop *l, struct sk_io *io, uint32_t events);
void peek_timer(struct sk_loop *l, struct sk_timer *t);

/* inspect.c */
void bridge_start(struct conn *c);
void bridge_free(struct conn *c);
void bridge_shutdown(struct conn *c);

/* gates.c */
ssize_t gate_first(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);
ssize_t gate_tls(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);
bool peek_tls_server(struct sk_relay *r);
ssize_t gate_http(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);

static inline bool conn_has(const struct conn *c, uint32_t f)
{
	return (c->flags & f) != 0;
}

static inline void conn_set(struct conn *c, uint32_t f, bool on)
{
	if (on)
		c->flags |= f;
	else
		c->flags &= ~f;
}

#endif

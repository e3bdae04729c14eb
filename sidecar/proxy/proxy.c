/* sidecar/proxy/proxy.c — the transparent proxy; see proxy.h for the states. */
#include "sidecar/proxy/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
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

enum conn_state { CS_PEEK = 0, CS_RESOLVE, CS_CONNECT, CS_RELAY, CS_CLOSING };

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
	bool has_name;
	bool rule_named;
	const char *proto;             /* "tls" | "http" | "tcp"; NULL before classification */
	enum sk_proto match_proto;
	int rule;
	const char *decision, *reason, *binding;
	/* after the decision */
	enum gate_kind gate;
	bool late;                     /* connected on a silent start: the first flight came (or comes) late */
	bool first_done;               /* GATE_FIRST: the first flight was classified and decided */
	bool http_first_ok;            /* the first request head was the one decided before connecting */
	struct sk_http_track track;    /* GATE_HTTP */
	uint32_t request;              /* GATE_HTTP: number of the head being judged (1-based) */
	size_t held_head;              /* GATE_HTTP: a head already parsed, waiting on a resolution */
	bool upgrade_wait;             /* GATE_HTTP: a websocket upgrade waits for its status line */
	bool rule_requests;            /* the rule (set_rule) has request rules (requests_gate.h) */
	bool tls_open;                 /* GATE_TLS: the server has not yet answered with a non-HRR ServerHello */
	bool tls_ech;                  /* the allowed hello carried ECH (tls.echGrease: allow): so must the rest */
	size_t tls_skip;               /* GATE_TLS: bytes of a passing record not yet in the gate's buffer */
	/* fallback resolution */
	struct sk_resolve_req *resolving;
	bool resolved;                 /* a resolution finished; verdict_after holds its outcome */
	enum verdict verdict_after;
	uint64_t bytes_in, bytes_out;  /* when the relay ended */
	/* budget of the rule that allowed it (budget.h): a reference held until the connection is freed */
	struct sk_budget_entry *budget;
	bool budget_counted;           /* charged as one of the rule's connections */
	/* early connect (see early_connect): ufd was opened at accept, before the decision; not one byte goes
	 * to it until the decision allows (the relay starts only then) */
	bool early;
	bool early_up;                 /* its connect completed */
	/* What the relay must look at when it starts (edges consumed before it are not reported again):
	 * the client may have bytes or EOF not yet read (the peek stopped without draining it, or an edge
	 * came while resolving or connecting); the upstream may have bytes (a greeting before the decision). */
	bool c_rd, u_rd;
	unsigned flush_polls;          /* budget cut: looks left at the upstream's send queue before its reset */
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

/* ---- per-source counts ---- */

static size_t src_hash(const struct sk_addr *a)
{
	return sk_fnv1a64(a->bytes, a->family == AF_INET ? 4 : 16) % SRC_BUCKETS;
}

static struct src_count *src_get(struct sk_proxy *px, const struct sk_addr *a, bool create)
{
	size_t b = src_hash(a);
	for (struct src_count *s = px->src[b]; s; s = s->next)
		if (sk_addr_equal(&s->addr, a))
			return s;
	if (!create)
		return NULL;
	struct src_count *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->addr = *a;
	s->next = px->src[b];
	px->src[b] = s;
	return s;
}

static void src_put(struct sk_proxy *px, struct src_count *s)
{
	if (!s || --s->n > 0)
		return;
	struct src_count **pp = &px->src[src_hash(&s->addr)];
	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
	free(s);
}

/* ---- helpers ---- */

/* SO_LINGER {1,0}: close sends RST, so the peer sees a refusal at once instead of a clean EOF. */
static void reset_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void close_rst(int fd)
{
	if (fd < 0)
		return;
	reset_on_close(fd);
	close(fd);
}

/* Is a an address of this network namespace (where a connection would come back to us)? */
static bool addr_is_local(const struct sk_addr *a)
{
	static const uint8_t zero[16];
	if (sk_addr_is_loopback(a) || memcmp(a->bytes, zero, 16) == 0)
		return true;
	struct ifaddrs *ifs = NULL;
	if (getifaddrs(&ifs) < 0)
		return true;   /* cannot tell: treat as local, so a possible loop is denied */
	bool local = false;
	for (struct ifaddrs *i = ifs; i && !local; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		struct sk_addr x;
		uint16_t port;
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
									   : sizeof(struct sockaddr_in6));
		sk_addr_from_sockaddr(&ss, &x, &port);
		local = sk_addr_equal(&x, a);
	}
	freeifaddrs(ifs);
	return local;
}

static bool is_loop(const struct sk_proxy *px, const struct sk_addr *dst, uint16_t port)
{
	const struct sk_ports *p = &px->sc->policy->ports;
	if (port != p->proxy && port != p->dns && port != p->admin && port != p->api)
		return false;
	return addr_is_local(dst);
}

/* ---- connection life ---- */

/* The rule label of metrics (NULL: no rule decided). */
static const char *conn_rule_label(const struct conn *c)
{
	return c->rule >= 0 ? c->rule_label : NULL;
}

static void set_rule(struct conn *c, const struct sk_policy *pol, int rule)
{
	c->rule = rule;
	c->rule_gen = c->px->sc->policy_gen;
	c->rule_requests = rule >= 0 && (size_t)rule < pol->n_rules && pol->rules[rule].requests;
	c->rule_named = rule >= 0 && (size_t)rule < pol->n_rules && pol->rules[rule].name;
	char idx[24];
	const char *l = sk_rule_label(pol, rule, idx);
	/* fits: rule names are [a-z0-9-]{1,63} (validate.c), an index far shorter */
	(void)snprintf(c->rule_label, sizeof(c->rule_label), "%s", l ? l : "");
}

static void conn_audit(struct conn *c, const char *event, uint64_t bytes_in, uint64_t bytes_out)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_audit_rec r = {
		.event = event, .src = &c->src, .src_port = c->sport, .dst = &c->dst, .dst_port = c->dport,
		.name = c->has_name ? c->name : NULL, .proto = c->proto, .rule = c->rule,
		.rule_name = c->rule >= 0 && c->rule_named ? c->rule_label : NULL,
		.decision = c->decision, .reason = c->reason, .binding = c->binding,
		/* request: only on the deny of a later request (docs/operating.md); the final allow line of a
		 * kept-alive connection does not carry the count. */
		.late = c->late, .request = strcmp(event, "deny") == 0 && c->request > 1 ? c->request : 0,
		.method = c->req_denial ? c->req_denial->method : NULL, .path = c->req_denial ? c->req_denial->path : NULL,
		.bytes_in = bytes_in, .bytes_out = bytes_out,
		.duration_ms = sk_loop_now_ms(sc->loop) - c->t0_ms,
	};
	sk_audit_emit(&sc->audit, &r);
}

static const char *metrics_proto(const struct conn *c)
{
	return c->proto ? c->proto : "tcp";
}

static void conn_free(struct conn *c)
{
	struct sk_proxy *px = c->px;
	struct sk_sidecar *sc = px->sc;
	struct sk_loop *l = sc->loop;
	if (c->st == CS_RELAY)
		sk_relay_stop(&c->relay);
	if (c->resolving && sc->resolve.cancel)
		sc->resolve.cancel(sc->resolve.ctx, c->resolving);
	c->resolving = NULL;
	/* Both fds are closed below (or were just now): closing takes them out of the epoll set. */
	sk_loop_forget(l, &c->cio);
	sk_loop_forget(l, &c->uio);
	sk_timer_cancel(l, &c->timer);
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	src_put(px, c->srcent);
	if (c->prev)
		c->prev->next = c->next;
	else
		px->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	px->n_conns--;
	if (sc->metrics)
		sk_metrics_conn_active(sc->metrics, -1);
	if (c->budget)
		sk_budget_unref(&sc->budgets, c->budget);
	sk_req_denial_free(c->req_denial);
	free(c->buf);
	free(c);
}

/* Deny by RST with an audit line; frees c. */
static void conn_deny_rst(struct conn *c, const char *reason)
{
	c->decision = "deny";
	c->reason = reason;
	if (c->px->sc->metrics)
		sk_metrics_conn(c->px->sc->metrics, "deny", reason, conn_rule_label(c), metrics_proto(c));
	conn_audit(c, "deny", c->bytes_in, c->bytes_out);
	sk_loop_forget(c->px->sc->loop, &c->cio);
	sk_loop_forget(c->px->sc->loop, &c->uio);
	close_rst(c->cfd);
	c->cfd = -1;
	close_rst(c->ufd);
	c->ufd = -1;
	conn_free(c);
}

static void closing_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	(void)events;
	struct conn *c = io->ctx;
	char scratch[4096];
	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(c->cfd, scratch, sizeof(scratch), 0);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		break;
	}
	conn_free(c);
}

static void closing_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	conn_free(t->ctx);
}

/* While resolving or connecting: client edges are left for the relay, which looks when it starts. */
static void ignore_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct conn *c = io->ctx;
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->c_rd = true;
}

/* Deny with a protocol-level answer (TLS alert, HTTP 403), then drain the client until EOF or a short
 * linger: closing with unread bytes would make the kernel send RST, which can overtake the answer. */
static void conn_deny_answer(struct conn *c, const char *reason, const void *msg, size_t len)
{
	struct sk_loop *l = c->px->sc->loop;
	c->decision = "deny";
	c->reason = reason;
	if (c->px->sc->metrics)
		sk_metrics_conn(c->px->sc->metrics, "deny", reason, conn_rule_label(c), metrics_proto(c));
	conn_audit(c, "deny", c->bytes_in, c->bytes_out);
	(void)send(c->cfd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)shutdown(c->cfd, SHUT_WR);
	/* The upstream (a late or later-request deny) learns nothing more: reset it. */
	sk_loop_forget(l, &c->uio);
	close_rst(c->ufd);
	c->ufd = -1;
	c->st = CS_CLOSING;
	sk_timer_cancel(l, &c->timer);
	/* The client's registration stays; it goes level-triggered to drain whatever is left. */
	c->cio.cb = closing_io;
	c->cio.ctx = c;
	sk_timer_init(&c->timer, closing_timer, c);
	int rc = c->cio.registered ? sk_loop_mod(l, &c->cio, EPOLLIN | EPOLLRDHUP, NULL)
				   : sk_loop_add(l, &c->cio, EPOLLIN | EPOLLRDHUP, NULL);
	if (rc < 0 || sk_timer_arm(l, &c->timer, CLOSING_LINGER_MS) < 0)
		conn_free(c);
}

static void conn_deny(struct conn *c, const char *reason)
{
	if (c->proto && strcmp(c->proto, "tls") == 0) {
		conn_deny_answer(c, reason, SK_TLS_ALERT_ACCESS_DENIED, sizeof(SK_TLS_ALERT_ACCESS_DENIED) - 1);
	} else if (c->req_denial && c->req_denial->answer) {
		conn_deny_answer(c, reason, c->req_denial->answer, c->req_denial->answer_len);
	} else if (c->proto && strcmp(c->proto, "http") == 0) {
		char body[160], msg[400];
		int bl = snprintf(body, sizeof(body), "stockade: egress denied (%s)\n", reason);
		int ml = snprintf(msg, sizeof(msg),
				  "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
				  "Connection: close\r\n\r\n%s", bl, body);
		conn_deny_answer(c, reason, msg, (size_t)ml);
	} else {
		conn_deny_rst(c, reason);
	}
}

/* ---- budgets (budget.h) ---- */

/* The relay of c was cut because its rule's budget is spent: one deny line (it shows in /denials) and a
 * metric, then a reset both ways — a FIN would let either peer take the cut stream for a whole one. The
 * other relays of the same budget are woken so they end too, instead of waiting for their next byte. */
/* The agent gets every byte its budget paid for: the relay cut once they were all in the kernel, and a
 * reset would drop what the kernel still queues for the agent (on a fast machine most of it). So the agent
 * side closes gracefully — FIN after the queued bytes; the audit line and the short body say it was cut —
 * after discarding what the agent sent and nobody read (unread data would make close() reset after all).
 * Bounded: an agent that keeps sending only gets its reset sooner. */
static void close_after_queued(int fd)
{
	char sink[16384];
	(void)shutdown(fd, SHUT_WR);
	for (int i = 0; i < 64 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

/* Frees c (whose close resets the upstream) once its send queue is empty or its looks ran out. */
static void budget_flush_timer(struct sk_loop *l, struct sk_timer *t)
{
	struct conn *c = t->ctx;
	int queued = 0;
	if (c->flush_polls > 0 && ioctl(c->ufd, SIOCOUTQ, &queued) == 0 && queued > 0) {
		c->flush_polls--;
		if (sk_timer_arm(l, &c->timer, BUDGET_FLUSH_POLL_MS) == 0)
			return;
	}
	conn_free(c);
}

static void budget_cut(struct conn *c)
{
	struct sk_proxy *px = c->px;
	struct sk_sidecar *sc = px->sc;
	struct sk_budget_entry *e = c->budget;
	c->decision = "deny";
	c->reason = "budget_exhausted";
	e->refused++;
	if (sc->metrics)
		sk_metrics_conn(sc->metrics, "deny", c->reason, conn_rule_label(c), metrics_proto(c));
	conn_audit(c, "deny", c->bytes_in, c->bytes_out);
	sk_loop_forget(sc->loop, &c->cio);
	sk_loop_forget(sc->loop, &c->uio);
	close_after_queued(c->cfd);
	c->cfd = -1;
	sk_budget_ref(e);   /* c's reference goes with it; the sweep below still compares against e */
	/* The upstream is reset too, but only once the kernel has delivered what the budget paid for: a
	 * close under SO_LINGER {1,0} throws the send queue away (megabytes on a fast link). Nothing more is
	 * taken from the agent meanwhile; the wait is bounded by CLOSING_LINGER_MS. */
	reset_on_close(c->ufd);
	c->st = CS_CLOSING;   /* the relay is already stopped */
	sk_timer_cancel(sc->loop, &c->timer);
	sk_timer_init(&c->timer, budget_flush_timer, c);
	c->flush_polls = CLOSING_LINGER_MS / BUDGET_FLUSH_POLL_MS;
	budget_flush_timer(sc->loop, &c->timer);   /* frees c at once when nothing is queued */
	if (!px->budget_sweeping) {
		px->budget_sweeping = true;
		struct conn *next;
		for (struct conn *o = px->conns; o; o = next) {
			next = o->next;   /* a kicked relay that ends frees only its own connection */
			if (o->budget == e && o->st == CS_RELAY)
				sk_relay_kick(&o->relay);
		}
		px->budget_sweeping = false;
	}
	sk_budget_unref(&sc->budgets, e);
}

/* Mode audit: the relay found its budget spent and goes on; say what enforce would have done. */
static void relay_over(struct sk_relay *r)
{
	struct conn *c = r->ctx;
	struct sk_sidecar *sc = c->px->sc;
	c->decision = "would_deny";
	c->reason = "budget_exhausted";
	c->budget->refused++;
	if (sc->metrics)
		sk_metrics_conn(sc->metrics, "would_deny", c->reason, conn_rule_label(c), metrics_proto(c));
	conn_audit(c, "deny", r->b2a.bytes, r->a2b.bytes);
}

static void conn_set_budget(struct conn *c, struct sk_budget_entry *e)
{
	if (c->budget == e)
		return;
	if (e)
		sk_budget_ref(e);
	if (c->budget)
		sk_budget_unref(&c->px->sc->budgets, c->budget);
	c->budget = e;
	if (c->st == CS_RELAY)
		sk_relay_budget(&c->relay, e, c->px->sc->policy->mode == SK_MODE_ENFORCE, relay_over);
}

static enum verdict verdict_deny(struct conn *c, const char *reason);

/* The rule c->rule allows c; its budget may still refuse it (budget_exhausted, answered like any other
 * deny: TLS alert, 403 or RST). A connection is counted once, when first admitted; a later decision on
 * the same connection (a late first flight, another Host) checks the bytes only. */
static enum verdict budget_admit(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	const struct sk_policy *pol = sc->policy;
	if (c->rule < 0 || (size_t)c->rule >= pol->n_rules || !pol->rules[c->rule].budget.window_ms) {
		conn_set_budget(c, NULL);
		return V_ALLOW;
	}
	struct sk_budget_entry *e = sk_budget_for_rule(sk_sidecar_budgets(sc), c->rule);
	if (!e) {
		conn_set_budget(c, NULL);
		return verdict_deny(c, "budget_unavailable");   /* the table could not follow the policy */
	}
	conn_set_budget(c, e);
	uint64_t now = sk_loop_now_ms(sc->loop);
	bool ok = c->budget_counted ? !sk_budget_spent(e, now) : sk_budget_admits(e, now);
	if (!ok) {
		e->refused++;
		if (verdict_deny(c, "budget_exhausted") == V_DENY)
			return V_DENY;
	}
	if (!c->budget_counted) {
		c->budget_counted = true;
		sk_budget_charge(e, SK_BUDGET_CONNS, 1, now);
	}
	return V_ALLOW;
}

static void connect_failed(struct conn *c, const char *reason)
{
	c->reason = reason;
	conn_audit(c, "conn", 0, 0);
	close_rst(c->cfd);
	c->cfd = -1;
	conn_free(c);
}

/* The connect failed with errno e. */
static void connect_failed_errno(struct conn *c, int e)
{
	if (e == ECONNREFUSED)
		connect_failed(c, "upstream_refused");
	else if (e == ENETUNREACH || e == EHOSTUNREACH)
		connect_failed(c, "upstream_unreachable");
	else
		connect_failed(c, "upstream_error");
}

static void relay_done(struct sk_relay *r, enum sk_relay_end how, int errnum)
{
	struct conn *c = r->ctx;
	struct sk_sidecar *sc = c->px->sc;
	if (how == SK_RELAY_CONNECT) {
		/* The upstream refused (or never answered) before a byte moved: the same end as a connect
		 * that failed before the relay started. */
		c->st = CS_CONNECT;   /* the relay is already stopped */
		connect_failed_errno(c, errnum);
		return;
	}
	if (sc->metrics)
		sk_metrics_bytes(sc->metrics, r->a2b.bytes, r->b2a.bytes);
	c->bytes_in = r->b2a.bytes;
	c->bytes_out = r->a2b.bytes;
	c->st = CS_CLOSING;   /* the relay is already stopped */
	if (how == SK_RELAY_BUDGET) {
		budget_cut(c);
		return;
	}
	if (how == SK_RELAY_DENIED) {
		/* The gate refused client bytes (a late first flight, a later request): c->reason says why. */
		conn_deny(c, c->reason ? c->reason : "denied");
		return;
	}
	conn_audit(c, "conn", c->bytes_in, c->bytes_out);
	if (how != SK_RELAY_DONE) {
		/* A reset (or an idle kill) on one side becomes a reset on the other: neither peer may
		 * mistake a broken stream for a complete one. */
		sk_loop_forget(c->px->sc->loop, &c->cio);
		sk_loop_forget(c->px->sc->loop, &c->uio);
		close_rst(c->cfd);
		close_rst(c->ufd);
		c->cfd = c->ufd = -1;
	}
	conn_free(c);
}


static ssize_t gate_first(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);
static ssize_t gate_http(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);
static ssize_t gate_tls(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full);
static bool peek_tls_server(struct sk_relay *r);

static void connect_timer(struct sk_loop *l, struct sk_timer *t);

/* Starts the relay. connecting: the upstream's connect was not seen to complete — the relay's first send
 * to it is the probe (relay.h, sk_relay_connecting), under the connect deadline. */
static void connect_done(struct conn *c, bool connecting)
{
	struct sk_loop *l = c->px->sc->loop;
	const struct sk_proxy_limits *lim = &c->px->sc->limits;
	struct sk_err err = { 0 };
	sk_timer_cancel(l, &c->timer);
	bool gated = c->gate != GATE_NONE;
	/* The relay takes over both registrations as they are: no epoll_ctl from here to close. */
	if (sk_relay_start_on(&c->relay, l, &c->px->pipes, &c->cio, &c->uio, gated ? NULL : c->buf,
			      gated ? 0 : c->len, lim->idle_timeout_ms, relay_done, c, &err) < 0) {
		connect_failed(c, "relay_failed");
		return;
	}
	if (gated) {
		/* Client bytes are judged as they come; the peeked ones first (a pipelined second request
		 * may already be among them). */
		sk_relay_gate_fn fn = c->gate == GATE_HTTP ? gate_http : c->gate == GATE_TLS ? gate_tls : gate_first;
		if (sk_relay_gate(&c->relay, fn, c->buf, c->len, lim->peek_cap, CLOSING_LINGER_MS) < 0) {
			sk_relay_stop(&c->relay);
			connect_failed(c, "no_memory");
			return;
		}
		free(c->buf);
		c->buf = NULL;
		c->len = c->cap = 0;
		if (c->gate == GATE_TLS)
			sk_relay_hold_b(&c->relay, peek_tls_server);
	}
	c->st = CS_RELAY;
	sk_relay_owner_closes(&c->relay);   /* relay_done frees c, closing both fds, on DONE */
	if (c->budget)
		sk_relay_budget(&c->relay, c->budget, c->px->sc->policy->mode == SK_MODE_ENFORCE, relay_over);
	if (connecting) {
		sk_relay_connecting(&c->relay);
		sk_timer_init(&c->timer, connect_timer, c);
		if (sk_timer_arm(l, &c->timer, c->px->sc->limits.connect_timeout_ms) < 0) {
			sk_relay_stop(&c->relay);
			c->st = CS_CONNECT;
			connect_failed(c, "upstream_error");
			return;
		}
	}
	/* Edges seen before were not acted on: move what is pending now (the prefix first); a side known
	 * to be drained costs no read that could only say EAGAIN. */
	sk_relay_set_ready(&c->relay, c->c_rd, c->u_rd);
	sk_relay_begin(&c->relay);
}


static void connect_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct conn *c = io->ctx;
	int e = 0;
	if (!(events & (EPOLLERR | EPOLLHUP))) {
		if (events & (EPOLLIN | EPOLLRDHUP))
			c->u_rd = true;
		if (!(events & EPOLLOUT))
			return;
		/* Writable without an error or hang-up: the connect completed; no SO_ERROR round trip. */
		connect_done(c, false);
		return;
	}
	socklen_t len = sizeof(e);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	if (e == 0)
		e = ECONNRESET;
	connect_failed_errno(c, e);
}

/* The connect deadline; with the relay already running (connect_done, connecting) it only matters while
 * the relay has not seen the connect complete. */
static void connect_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct conn *c = t->ctx;
	if (c->st == CS_RELAY) {
		if (sk_relay_connected(&c->relay))
			return;
		sk_relay_stop(&c->relay);
		c->st = CS_CONNECT;
	}
	connect_failed(c, "upstream_timeout");
}

/* The upstream connect was started (up: and is known to have completed). The relay starts now unless the
 * connection waits for a late first flight (GATE_FIRST keeps c->timer for that flight's deadline): on a
 * local path the handshake is usually done inside connect(), and the relay's first send finds out —
 * the wait for the writable edge would cost a loop round on every connection. */
static void connect_wait(struct conn *c, bool up)
{
	struct sk_loop *l = c->px->sc->loop;
	if (up || c->gate != GATE_FIRST) {
		connect_done(c, !up);
		return;
	}
	sk_timer_init(&c->timer, connect_timer, c);
	if (sk_timer_arm(l, &c->timer, c->px->sc->limits.connect_timeout_ms) < 0)
		connect_failed(c, "upstream_error");
}

static void conn_connect(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_loop *l = sc->loop;
	if (sc->metrics)
		sk_metrics_conn(sc->metrics, c->decision, c->reason, conn_rule_label(c), metrics_proto(c));
	sk_timer_cancel(l, &c->timer);
	c->st = CS_CONNECT;
	/* Client events wait until the relay runs (it moves what is pending when it starts). */
	c->cio.cb = ignore_io;
	if (!c->cio.registered && sk_loop_add(l, &c->cio, CONN_EVENTS, NULL) < 0) {
		connect_failed(c, "internal_error");
		return;
	}
	if (c->early) {
		/* Connected (or connecting) since the accept: the handshake overlapped the client's first
		 * flight. From here on it is an ordinary upstream connect. */
		c->early = false;
		c->uio.cb = connect_io;
		connect_wait(c, c->early_up);
		return;
	}
	/* The sidecar's UID is exempt in nftables, so this connect goes straight out (no redirect loop). */
	c->ufd = socket(c->dst.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->ufd < 0) {
		connect_failed(c, "upstream_socket");
		return;
	}
	int one = 1;
	(void)setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_storage ss;
	socklen_t sl = sk_sockaddr_from_addr(&c->dst, c->dport, &ss);
	int crc = connect(c->ufd, (struct sockaddr *)&ss, sl);
	if (crc < 0 && errno != EINPROGRESS) {
		connect_failed(c, errno == ECONNREFUSED ? "upstream_refused" : "upstream_error");
		return;
	}
	/* Registered once, after connect() (an unconnected socket reports EPOLLHUP), for the whole life. */
	sk_io_init(&c->uio, c->ufd, connect_io, c);
	if (sk_loop_add(l, &c->uio, CONN_EVENTS, NULL) < 0) {
		connect_failed(c, "upstream_error");
		return;
	}
	connect_wait(c, crc == 0);
}

/* ---- decision ---- */

struct name_pick {
	const struct sk_policy *pol;
	struct sk_query q;
	struct sk_decision d;
	char name[SK_DOMAIN_MAX + 1];
	bool found;
};

static bool name_pick_cb(const char *name, void *arg)
{
	struct name_pick *np = arg;
	struct sk_decision d;
	np->q.host = name;
	sk_match(np->pol, &np->q, &d);
	if (!d.allow)
		return true;
	np->d = d;
	/* fits: the binding table refuses names longer than SK_DOMAIN_MAX (dns_bind.c) */
	(void)snprintf(np->name, sizeof(np->name), "%s", name);
	np->found = true;
	return false;
}

static void decision_latency(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	if (sc->metrics)
		sk_metrics_decision_latency(sc->metrics, (double)(sk_monotonic_ms() - c->t0_ms) / 1000.0);
}

/* Mode audit turns a deny into would_deny (the connection goes on); enforce keeps it. */
static enum verdict verdict_deny(struct conn *c, const char *reason)
{
	c->reason = reason;
	if (c->px->sc->policy->mode == SK_MODE_AUDIT) {
		c->decision = "would_deny";
		return V_ALLOW;
	}
	c->decision = "deny";
	return V_DENY;
}

static void resolved_cb(void *arg, enum sk_resolve_result res);

/* Decides what c is known to be now (c->proto/match_proto, c->name when has_name) against the policy in
 * force and the bindings. Sets c->rule, c->decision, c->reason, c->binding. V_PENDING: the name is
 * allowed but not bound to the destination, and the sidecar is resolving it (resolved_cb goes on). */
static enum verdict decide(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	const struct sk_policy *pol = sc->policy;
	/* The matcher runs on an enforce-mode view of the snapshot so the audit line carries the real
	 * reason; mode audit is applied once, in verdict_deny, to policy and parse denials alike. */
	struct sk_policy enforce = *pol;
	enforce.mode = SK_MODE_ENFORCE;
	struct sk_query q = { .host = c->has_name ? c->name : NULL, .dst = &c->dst, .port = c->dport,
			      .proto = c->match_proto };
	struct sk_decision d;
	c->binding = NULL;
	if (!c->has_name && sc->bind.names && c->match_proto == SK_PROTO_TCP) {
		/* Plain TCP carries no name: use the names the DNS filter bound to this address. An HTTP
		 * request whose Host is an IP literal is connect-by-IP (IP rules only): lending it a bound name
		 * would let `Host: <shared CDN address>` reach whatever default site that address serves. */
		struct name_pick np = { .pol = &enforce, .q = q };
		sc->bind.names(sc->bind.ctx, &c->dst, name_pick_cb, &np);
		if (np.found) {
			(void)snprintf(c->name, sizeof(c->name), "%s", np.name);
			c->has_name = true;
			c->binding = "ok";
			set_rule(c, pol, np.d.rule);
			c->decision = "allow";
			c->reason = "rule";
			return budget_admit(c);
		}
	}
	sk_match(&enforce, &q, &d);
	set_rule(c, pol, d.rule);
	if (!d.allow)
		return verdict_deny(c, sk_reason_name(d.reason));
	if (c->has_name && d.rule >= 0 && pol->rules[d.rule].kind == SK_RULE_HOST) {
		if (!sc->bind.name_bound) {
			c->binding = "unchecked";
		} else if (sc->bind.name_bound(sc->bind.ctx, &c->dst, c->name)) {
			c->binding = "ok";
		} else if (sc->resolve.start) {
			/* Allowed name, unbound destination: a client that resolved elsewhere (hosts file,
			 * --resolve, an old cache). Resolve it ourselves; only its own answers can bind. */
			int rc = sc->resolve.start(sc->resolve.ctx, c->name, &c->dst, resolved_cb, c, &c->resolving);
			if (rc == 0) {
				c->resolved = false;
				return V_PENDING;
			}
			c->resolving = NULL;
			c->binding = rc == -ENOENT ? "mismatch" : "unresolved";
			return verdict_deny(c, "sni_ip_mismatch");
		} else {
			/* A forged SNI/Host toward an address no allowed name resolved to. */
			c->binding = "mismatch";
			return verdict_deny(c, "sni_ip_mismatch");
		}
	}
	c->decision = "allow";
	c->reason = "rule";
	return budget_admit(c);
}

static const char *hello_reason(enum sk_hello_result r)
{
	switch (r) {
	case SK_HELLO_NO_SNI: return "no_sni";
	case SK_HELLO_MULTI_SNI: return "multi_sni";
	case SK_HELLO_SNI_IP: return "sni_ip_literal";
	case SK_HELLO_BAD_NAME: return "bad_sni";
	case SK_HELLO_ECH: return "ech";
	case SK_HELLO_TOO_BIG: return "hello_too_big";
	case SK_HELLO_NEED_MORE: return "hello_incomplete";
	default: return "malformed_hello";
	}
}

static const char *http_reason(enum sk_http_result r)
{
	switch (r) {
	case SK_HTTP_NO_HOST: return "http_no_host";
	case SK_HTTP_DUP_HOST: return "http_dup_host";
	case SK_HTTP_BAD_HOST: return "http_bad_host";
	case SK_HTTP_HOST_MISMATCH: return "http_host_mismatch";
	case SK_HTTP_NEED_MORE: return "http_incomplete";
	case SK_HTTP_H2C_PRIOR: return "http_h2c_prior";
	default: return "http_malformed";
	}
}

/* Whether bytes the HTTP parser refused still look enough like an HTTP request that a server would take
 * them as one. Such a request must be denied as HTTP, never relayed as plain TCP: plain TCP is decided by
 * the name the DNS binding gives the address, so a request for another site on a shared (CDN) address
 * would ride an allowed name. Servers skip leading empty lines (RFC 9112 §2.2), accept tabs and odd case,
 * so the test is loose on purpose: leading CR/LF, "HTTP/" anywhere in the first line, or a known method
 * followed by whitespace. */
static bool first_line_is_http(const uint8_t *b, size_t len)
{
	static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS",
						"TRACE", "PATCH", "PRI" };
	if (len > 0 && (b[0] == '\r' || b[0] == '\n'))
		return true;
	size_t n = 0;
	while (n < len && b[n] != '\n' && b[n] != '\r')
		n++;
	for (size_t i = 0; i + 5 <= n; i++)
		if (strncasecmp((const char *)b + i, "HTTP/", 5) == 0)
			return true;
	for (size_t m = 0; m < SK_ARRAY_SIZE(methods); m++) {
		size_t ml = strlen(methods[m]);
		if (n > ml && strncasecmp((const char *)b, methods[m], ml) == 0 &&
		    (b[ml] == ' ' || b[ml] == '\t' || b[ml] == '\v' || b[ml] == '\f'))
			return true;
	}
	return false;
}

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

static enum classify classify_bytes(struct conn *c, const uint8_t *b, size_t len, bool final,
				    const char **why)
{
	size_t cap = c->px->sc->limits.peek_cap;
	c->has_name = false;
	c->tls_ech = false;
	if (sk_tls_content_type(b[0])) {
		/* Every TLS content type first, with any record version: servers take a hello behind an alert
		 * or a change_cipher_spec record, or under another legacy version — relayed as TCP, its SNI
		 * would go unread. A well-formed hello decides; anything else is denied. */
		c->proto = "tls";
		c->match_proto = SK_PROTO_TLS;
		enum sk_hello_result r = sk_tls_hello_parse(b, len, cap, c->name);
		if (r == SK_HELLO_NEED_MORE && !final && len < cap)
			return CL_MORE;
		if (r == SK_HELLO_ECH && c->px->sc->policy->tls.ech_grease_allow && c->name[0]) {
			/* tls.echGrease: allow — decide on the outer SNI (docs/threat-model.md: the inner name
			 * is unseen; our DNS never hands out ECH configs). */
			r = SK_HELLO_OK;
			c->tls_ech = true;
		}
		if (r == SK_HELLO_OK) {
			c->has_name = true;
			return CL_NAMED;
		}
		/* For the audit line only: the outer name of an ECH hello, the literal of an IP SNI. */
		c->has_name = c->name[0] != '\0' && (r == SK_HELLO_ECH || r == SK_HELLO_SNI_IP);
		*why = hello_reason(r);
		return CL_PARSE_DENY;
	}
	if ((b[0] & 0x80) && (len < 3 || b[2] == 0x01)) {
		if (len < 3 && !final)
			return CL_MORE;
		if (len >= 3) {
			c->proto = "tls";
			c->match_proto = SK_PROTO_TLS;
			*why = "sslv2_hello";
			return CL_PARSE_DENY;
		}
	}
	struct sk_http_head h;
	enum sk_http_result r = sk_http_head_parse(b, len, &h);
	if (r == SK_HTTP_NEED_MORE && !final && len < cap)
		return CL_MORE;
	if (r == SK_HTTP_OK) {
		c->proto = "http";
		c->match_proto = SK_PROTO_HTTP;
		/* The framing of the first request (CONNECT, h2c upgrade, CL/TE ambiguity) is judged by the
		 * same tracker that will judge every later one. */
		struct sk_http_track t;
		size_t n = 0;
		const char *reason = NULL;
		sk_http_track_init(&t);
		enum sk_track_result tr = sk_http_track_next(&t, b, len, &n, &h, &reason);
		if (!h.host_is_ip && h.host[0]) {
			(void)snprintf(c->name, sizeof(c->name), "%s", h.host);
			c->has_name = true;   /* also on a framing deny: the audit line names the host asked for */
		}
		if (tr == SK_TRACK_ERROR) {
			*why = reason ? reason : "http_malformed";
			return CL_PARSE_DENY;
		}
		return CL_NAMED;
	}
	if (r == SK_HTTP_H2C_PRIOR) {
		/* h2c carries its authority inside HPACK, which we do not decode: denied (DESIGN §5.1). */
		c->proto = "http";
		c->match_proto = SK_PROTO_HTTP;
		*why = "http_h2c_prior";
		return CL_PARSE_DENY;
	}
	if (r != SK_HTTP_NOT_HTTP && (r == SK_HTTP_NEED_MORE || first_line_is_http(b, len))) {
		c->proto = "http";
		c->match_proto = SK_PROTO_HTTP;
		*why = len >= cap ? "http_head_too_big" : http_reason(r);
		return CL_PARSE_DENY;
	}
	c->proto = "tcp";
	c->match_proto = SK_PROTO_TCP;
	return CL_TCP;
}

/* ---- deciding before the upstream connect (peek) ---- */

/* A rule with request rules admits plain HTTP only, until TLS termination reads inside TLS
 * (requests_gate.h). */
static enum verdict check_conn_requests(struct conn *c)
{
	const struct sk_policy *pol = c->px->sc->policy;
	const struct sk_rule *ru = c->rule >= 0 && (size_t)c->rule < pol->n_rules ? &pol->rules[c->rule] : NULL;
	const char *why = sk_req_gate_conn(ru, c->match_proto);
	return why ? verdict_deny(c, why) : V_ALLOW;
}

/* Every head on a connection whose rule has request rules: its method and path (requests_gate.h). */
static enum verdict check_request_rules(struct conn *c, const uint8_t *head, size_t n, const struct sk_http_head *h)
{
	const struct sk_policy *pol = c->px->sc->policy;
	if (c->rule_gen != c->px->sc->policy_gen && c->rule >= 0) {
		/* A reload since the decision: c->rule indexes the old policy. Find this name's rule in the new
		 * one, so a later request meets the request rules in force. A name the new policy no longer
		 * allows stays allowed on this connection as before, unless its rule had request rules: those
		 * fail closed rather than let every later request through. */
		struct sk_policy enforce = *pol;
		enforce.mode = SK_MODE_ENFORCE;
		struct sk_query q = { .host = c->has_name ? c->name : NULL, .dst = &c->dst, .port = c->dport,
				      .proto = c->match_proto };
		struct sk_decision d;
		sk_match(&enforce, &q, &d);
		if (d.allow)
			set_rule(c, pol, d.rule);
		else if (c->rule_requests)
			return verdict_deny(c, sk_reason_name(d.reason));
		else
			return V_ALLOW;   /* the old index stays as it was: nothing of the new policy to apply */
	}
	if (!c->rule_requests || c->rule < 0 || (size_t)c->rule >= pol->n_rules || !pol->rules[c->rule].requests)
		return V_ALLOW;
	const char *why = sk_req_gate_judge(&pol->rules[c->rule], conn_rule_label(c), head, n, h, &c->req_denial);
	if (!why)
		return V_ALLOW;
	enum verdict v = verdict_deny(c, why);
	if (v == V_ALLOW) {
		/* mode audit: one would_deny line for this request now (the connection's last line is about
		 * its last request, so a later allowed one would hide it), and the connection goes on allowed */
		conn_audit(c, "deny", c->relay.b2a.bytes, c->relay.a2b.bytes);
		c->decision = "allow";
		c->reason = "rule";
		sk_req_denial_free(c->req_denial);
		c->req_denial = NULL;
	}
	return v;
}

static void act_peek(struct conn *c, enum verdict v)
{
	if (v == V_PENDING) {
		/* Stop reading while the name resolves; the resolution has its own short timeout. */
		struct sk_loop *l = c->px->sc->loop;
		c->cio.cb = ignore_io;
		sk_timer_cancel(l, &c->timer);
		c->st = CS_RESOLVE;
		return;
	}
	decision_latency(c);
	if (v == V_ALLOW)
		v = check_conn_requests(c);
	if (v == V_ALLOW) {
		if (c->match_proto == SK_PROTO_HTTP) {
			c->gate = GATE_HTTP;
			c->http_first_ok = true;
		} else if (c->match_proto == SK_PROTO_TLS) {
			c->gate = GATE_TLS;
			c->tls_open = true;
		}
		conn_connect(c);
		return;
	}
	conn_deny(c, c->reason);
}

static void peek_decide(struct conn *c, bool final)
{
	const char *why = NULL;
	switch (classify_bytes(c, c->buf, c->len, final, &why)) {
	case CL_MORE:
		return;
	case CL_PARSE_DENY:
		c->rule = -1;
		act_peek(c, verdict_deny(c, why));
		return;
	case CL_TCP:
	case CL_NAMED:
		act_peek(c, decide(c));
		return;
	}
}

/* Nothing sent by the deadline: a server-speaks-first protocol (SMTP, MySQL...). Connect by the names
 * bound to the destination when a tcp/any rule allows one of them, so the greeting can flow; the client's
 * first flight, whenever it comes, is still classified (gate_first). */
static void silent_start(struct conn *c)
{
	c->proto = "tcp";
	c->match_proto = SK_PROTO_TCP;
	c->has_name = false;
	enum verdict v = decide(c);
	decision_latency(c);
	if (v != V_ALLOW) {
		conn_deny_rst(c, c->reason);
		return;
	}
	c->late = true;
	c->gate = GATE_FIRST;
	conn_connect(c);
}

static void peek_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct conn *c = io->ctx;
	if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;   /* the writable edge of the registration */
	size_t cap = c->px->sc->limits.peek_cap;
	for (;;) {
		if (c->len == c->cap) {
			size_t ncap = c->cap * 2 > cap ? cap : c->cap * 2;
			uint8_t *nb = realloc(c->buf, ncap);
			if (!nb) {
				conn_deny_rst(c, "no_memory");
				return;
			}
			c->buf = nb;
			c->cap = ncap;
		}
		/* recv into our own buffer, never MSG_PEEK: what we read is exactly what we replay. */
		ssize_t n = recv(c->cfd, c->buf + c->len, c->cap - c->len, 0);
		if (n < 0) {
			if (errno == EAGAIN) {
				c->c_rd = false;
				break;
			}
			if (errno == EINTR)
				break;
			conn_deny_rst(c, "client_reset");
			return;
		}
		if (n == 0) {
			if (c->len == 0) {
				conn_deny_rst(c, "client_closed");
				return;
			}
			c->c_rd = true;   /* the relay reads the EOF again */
			peek_decide(c, true);
			return;
		}
		c->len += (size_t)n;
		/* Edge-triggered: a short read drained the socket (new bytes bring a new edge), unless a FIN
		 * is queued behind them, which only the next read shows. */
		if (c->len < c->cap && !(events & (EPOLLRDHUP | EPOLLHUP))) {
			c->c_rd = false;
			break;
		}
		if (c->len >= cap) {
			c->c_rd = true;   /* stopped at the cap, not drained */
			break;
		}
	}
	if (c->len == 0)
		return;
	peek_decide(c, false);
}

static void peek_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct conn *c = t->ctx;
	if (c->len == 0) {
		silent_start(c);
		return;
	}
	/* Some bytes but not enough to decide: a slowloris hello or head. */
	if (sk_tls_content_type(c->buf[0]))
		c->proto = "tls";
	conn_deny_rst(c, "peek_timeout");
}

/* ---- judging client bytes while relaying (relay.h gate) ---- */

/* The late first flight did not complete by the deadline. */
static void late_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct conn *c = t->ctx;
	c->bytes_in = c->relay.b2a.bytes;
	c->bytes_out = c->relay.a2b.bytes;
	sk_relay_stop(&c->relay);
	c->st = CS_CLOSING;
	conn_deny_rst(c, "peek_timeout");
}

static ssize_t gate_first(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full)
{
	struct conn *c = r->ctx;
	struct sk_loop *l = c->px->sc->loop;
	enum verdict v;
	if (c->resolving)
		return 0;
	if (c->resolved) {
		c->resolved = false;
		v = c->verdict_after;
	} else {
		if (!sk_timer_armed(&c->timer)) {
			/* The first byte of the flight starts its own deadline, as the peek's did. */
			sk_timer_init(&c->timer, late_timer, c);
			if (sk_timer_arm(l, &c->timer, c->px->sc->limits.peek_timeout_ms) < 0)
				return -1;
		}
		const char *why = NULL;
		enum classify k = classify_bytes(c, buf, len, eof || full, &why);
		switch (k) {
		case CL_MORE:
			return 0;
		case CL_PARSE_DENY:
			c->rule = -1;
			v = verdict_deny(c, why);
			break;
		default:
			/* CL_NAMED: the SNI or Host decides. CL_TCP (not TLS, not HTTP): the bindings decide,
			 * as they did at the connect (again, so an expiry in between is not missed). */
			v = decide(c);
			break;
		}
	}
	if (v == V_PENDING)
		return 0;
	sk_timer_cancel(l, &c->timer);
	c->first_done = true;
	decision_latency(c);
	if (v == V_ALLOW)
		v = check_conn_requests(c);
	if (v == V_DENY)
		return -1;
	if (c->match_proto == SK_PROTO_HTTP) {
		c->gate = GATE_HTTP;
		c->http_first_ok = true;
		r->gate = gate_http;
		return gate_http(r, buf, len, eof, full);
	}
	if (c->match_proto == SK_PROTO_TLS) {
		/* The late hello is judged again by the TLS gate (the same name, so it passes) and every
		 * hello after it, until the server's answer shows the handshake is past them. */
		c->gate = GATE_TLS;
		c->tls_open = true;
		r->gate = gate_tls;
		sk_relay_hold_b(r, peek_tls_server);
		return gate_tls(r, buf, len, eof, full);
	}
	c->gate = GATE_NONE;
	sk_relay_ungate(r);
	return (ssize_t)len;
}

/* ---- TLS: every ClientHello, not only the first (gate_tls) ---- */

/* A hello after the allowed one must say the same: the same SNI and the same ECH decision. A server takes
 * the second hello's name after a HelloRetryRequest (OpenSSL does), and its own SNI = Host check then
 * passes too, since the Host follows the second name. */
static bool same_hello(const struct conn *c, enum sk_hello_result r, const char *name)
{
	bool ech = r == SK_HELLO_ECH && c->px->sc->policy->tls.ech_grease_allow && name[0];
	if (r != SK_HELLO_OK && !ech)
		return false;
	return ech == c->tls_ech && strcmp(name, c->name) == 0;
}

/* Refuses the connection for a later hello (or a record that cannot be judged) with the name it asked
 * for on the audit line; mode audit reports it once and stops judging. */
static ssize_t tls_refuse(struct sk_relay *r, const char *name, size_t off, size_t len)
{
	struct conn *c = r->ctx;
	if (name && name[0])
		(void)snprintf(c->name, sizeof(c->name), "%s", name);
	if (verdict_deny(c, "tls_second_hello") == V_ALLOW) {
		conn_audit(c, "deny", r->b2a.bytes, r->a2b.bytes);
		c->decision = "allow";
		c->gate = GATE_NONE;
		c->tls_open = false;
		sk_relay_ungate(r);
		return (ssize_t)len;
	}
	/* Nothing from the refused record on goes upstream, and the relay ends now: the server's answer to
	 * the hello before is owed to no one. */
	(void)off;
	sk_relay_deny_at_once(r);
	return -1;
}

/* Walks the client's records while the handshake can still carry a new hello: change_cipher_spec, alerts
 * and 0-RTT application data pass whole; every handshake record must be a ClientHello saying what the
 * allowed one said. Only whole hellos are released, so the upstream never sees a hello that was not
 * judged. */
static ssize_t gate_tls(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full)
{
	struct conn *c = r->ctx;
	size_t cap = c->px->sc->limits.peek_cap;
	size_t off = 0;
	for (;;) {
		if (c->tls_skip > 0) {
			size_t k = len - off < c->tls_skip ? len - off : c->tls_skip;
			c->tls_skip -= k;
			off += k;
			if (c->tls_skip > 0)
				return (ssize_t)off;
		}
		if (!c->tls_open) {
			/* The server answered with a ServerHello: the client's records from here on are its
			 * encrypted flight (1.3) or key exchange (1.2); no hello can follow in clear. */
			c->gate = GATE_NONE;
			sk_relay_ungate(r);
			return (ssize_t)len;
		}
		if (off == len)
			return (ssize_t)off;
		size_t used = 0;
		enum sk_hello_result hr = SK_HELLO_MALFORMED;
		char name[SK_DOMAIN_MAX + 1];
		switch (sk_tls_client_record(buf + off, len - off, cap, &used, &hr, name)) {
		case SK_TLS_NEXT_MORE:
			if (eof || full)
				return tls_refuse(r, NULL, off, len);
			return (ssize_t)off;
		case SK_TLS_NEXT_PASS:
			c->tls_skip = used;
			continue;
		case SK_TLS_NEXT_BAD:
			return tls_refuse(r, NULL, off, len);
		case SK_TLS_NEXT_HELLO:
			if (!same_hello(c, hr, name))
				return tls_refuse(r, name, off, len);
			off += used;
			/* Its answer says whether yet another hello may follow. */
			sk_relay_hold_b(r, peek_tls_server);
			continue;
		}
	}
}

/* Holds the server's answer to a hello until its first record shows what it is (MSG_PEEK: nothing is
 * consumed). A ServerHello that is not an HRR ends the TLS gate; an HRR or anything else leaves it
 * judging the client's records. */
static bool peek_tls_server(struct sk_relay *r)
{
	struct conn *c = r->ctx;
	uint8_t got[512];
	ssize_t n = recv(r->b->fd, got, sizeof(got), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return errno != EAGAIN && errno != EINTR;   /* an error: let the relay see it */
	if (n == 0)
		return true;                                /* EOF: the relay reads it */
	enum sk_server_first k = sk_tls_server_first(got, (size_t)n);
	if (k == SK_SERVER_FIRST_MORE && (size_t)n < sizeof(got)) {
		/* A peek never reads the EOF behind bytes it leaves queued: a server that closes after a
		 * partial record would be held until the idle timeout. Ask the socket whether the peer is
		 * done; if so, let the relay deliver what there is (the gate keeps judging the client). */
		struct pollfd pf = { .fd = r->b->fd, .events = POLLRDHUP };
		if (poll(&pf, 1, 0) <= 0 || !(pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return false;
	}
	if (k == SK_SERVER_FIRST_HELLO && c->tls_open) {
		c->tls_open = false;
		/* Client bytes the gate holds unjudged are judged first (kick); with none, back to splice. */
		if (r->glen == r->gout) {
			c->gate = GATE_NONE;
			sk_relay_ungate(r);
		} else {
			sk_relay_kick(r);
		}
	}
	return true;
}

/* Upstream→client is held after a websocket upgrade request until its status line shows. */
static bool peek_upgrade(struct sk_relay *r)
{
	struct conn *c = r->ctx;
	static const char want[] = "HTTP/1.1 101";
	char got[sizeof(want) - 1];
	ssize_t n = recv(r->b->fd, got, sizeof(got), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return errno != EAGAIN && errno != EINTR;   /* an error: let the relay see it */
	bool switched = false;
	if (n > 0) {
		size_t m = (size_t)n;
		/* "HTTP/1.0 101" counts as well: compare all but the minor version digit. */
		for (size_t i = 0; i < m; i++) {
			if (i == 7 ? (got[i] != '0' && got[i] != '1') : got[i] != want[i]) {
				m = 0;
				break;
			}
		}
		if (m > 0 && m < sizeof(got))
			return false;   /* a prefix of a 101 so far: wait for more */
		switched = m == sizeof(got);
	}
	c->upgrade_wait = false;
	sk_http_track_upgrade_result(&c->track, switched);
	sk_relay_kick(r);
	return true;
}

static enum verdict check_request(struct conn *c, const struct sk_http_head *h)
{
	if (c->request == 1 && c->http_first_ok)
		return V_ALLOW;   /* the head the connection was decided on */
	if (!h->host_is_ip && h->host[0] && c->has_name && strcmp(h->host, c->name) == 0 &&
	    c->decision && strcmp(c->decision, "allow") == 0)
		return V_ALLOW;   /* the same name as the request before: already allowed for this address */
	c->proto = "http";
	c->match_proto = SK_PROTO_HTTP;
	c->has_name = !h->host_is_ip && h->host[0];
	if (c->has_name)
		(void)snprintf(c->name, sizeof(c->name), "%s", h->host);
	return decide(c);
}

static ssize_t gate_http(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full)
{
	(void)eof;
	struct conn *c = r->ctx;
	size_t off = 0;
	if (c->held_head) {
		if (c->resolving)
			return 0;
		c->resolved = false;
		if (c->verdict_after == V_DENY)
			return -1;
		off = c->held_head;
		c->held_head = 0;
	}
	/* After a websocket head the tracker answers HOLD even with nothing left: ask it again then. */
	while (off < len || c->track.st == SK_TS_OPAQUE || c->track.st == SK_TS_UPGRADE_WAIT) {
		size_t n = 0;
		struct sk_http_head h;
		const char *why = NULL;
		enum sk_track_result tr = sk_http_track_next(&c->track, buf + off, len - off, &n, &h, &why);
		switch (tr) {
		case SK_TRACK_FORWARD:
			off += n;
			continue;
		case SK_TRACK_HEAD: {
			c->request++;
			sk_req_denial_free(c->req_denial);   /* a line is about this request from here on */
			c->req_denial = NULL;
			enum verdict v = check_request(c, &h);
			if (v == V_ALLOW)
				v = check_request_rules(c, buf + off, n, &h);
			if (v == V_ALLOW) {
				if (c->decision && strcmp(c->decision, "would_deny") == 0 && c->request > 1)
					conn_audit(c, "deny", r->b2a.bytes, r->a2b.bytes);
				off += n;
				continue;
			}
			if (v == V_PENDING) {
				c->held_head = n;
				return (ssize_t)off;
			}
			r->denied = off > 0 || r->a2b.bytes > 0;   /* refuse after what went before */
			return off > 0 ? (ssize_t)off : -1;
		}
		case SK_TRACK_HOLD:
			if (!c->upgrade_wait) {
				c->upgrade_wait = true;
				sk_relay_hold_b(r, peek_upgrade);
			}
			return (ssize_t)off;
		case SK_TRACK_OPAQUE:
			/* 101 to a websocket upgrade whose Host was checked: the rest is the new protocol's. */
			c->gate = GATE_NONE;
			sk_relay_ungate(r);
			return (ssize_t)len;
		case SK_TRACK_NEED_MORE:
			if (full && off == 0) {
				c->request++;
				c->rule = -1;
				return verdict_deny(c, "http_head_too_big") == V_DENY ? -1 : (ssize_t)len;
			}
			return (ssize_t)off;
		case SK_TRACK_ERROR:
			c->request++;
			c->proto = "http";
			c->rule = -1;
			if (verdict_deny(c, why ? why : "http_malformed") == V_ALLOW) {
				/* mode audit: report, then stop judging this connection (framing is lost). */
				conn_audit(c, "deny", r->b2a.bytes, r->a2b.bytes);
				c->decision = "allow";
				c->gate = GATE_NONE;
				sk_relay_ungate(r);
				return (ssize_t)len;
			}
			r->denied = off > 0 || r->a2b.bytes > 0;
			return off > 0 ? (ssize_t)off : -1;
		}
	}
	return (ssize_t)off;
}

static void resolved_cb(void *arg, enum sk_resolve_result res)
{
	struct conn *c = arg;
	c->resolving = NULL;
	if (res == SK_RESOLVE_MATCH) {
		c->binding = "resolved";
		c->decision = "allow";
		c->reason = "rule";
		c->verdict_after = budget_admit(c);
	} else {
		c->binding = res == SK_RESOLVE_MISMATCH ? "mismatch" : "unresolved";
		c->verdict_after = verdict_deny(c, "sni_ip_mismatch");
	}
	c->resolved = true;
	if (c->st == CS_RESOLVE) {
		c->resolved = false;
		c->st = CS_PEEK;
		act_peek(c, c->verdict_after);
		return;
	}
	if (c->st == CS_RELAY)
		sk_relay_kick(&c->relay);   /* the gate sees c->resolved */
}

/* ---- accepting ---- */

/* Recomputes the declared-TCP port set for the policy in force: a port is in it when at least one
 * proxied rule covers it and every proxied rule covering it is `protocol: tcp` (host and cidr rules
 * alike, whatever their destination: conservative, and O(1) per connection). */
static void tcp_ports_refresh(struct sk_proxy *px)
{
	struct sk_sidecar *sc = px->sc;
	if (px->tcp_ports_valid && px->tcp_ports_gen == sc->policy_gen)
		return;
	const struct sk_policy *pol = sc->policy;
	uint8_t other[65536 / 8];
	memset(px->tcp_only, 0, sizeof(px->tcp_only));
	memset(other, 0, sizeof(other));
	bool any_port_other = false;
	for (size_t i = 0; i < pol->n_rules; i++) {
		const struct sk_rule *ru = &pol->rules[i];
		if (ru->proto == SK_PROTO_UDP || ru->direct)
			continue;
		bool tcp = ru->proto == SK_PROTO_TCP;
		if (ru->n_ports == 0) {
			if (!tcp)
				any_port_other = true;
			else
				memset(px->tcp_only, 0xff, sizeof(px->tcp_only));
			continue;
		}
		for (size_t k = 0; k < ru->n_ports; k++) {
			uint16_t p = ru->ports[k];
			if (tcp)
				px->tcp_only[p / 8] |= (uint8_t)(1u << (p % 8));
			else
				other[p / 8] |= (uint8_t)(1u << (p % 8));
		}
	}
	for (size_t i = 0; i < sizeof(other); i++)
		px->tcp_only[i] = any_port_other ? 0 : (uint8_t)(px->tcp_only[i] & ~other[i]);
	px->tcp_ports_gen = sc->policy_gen;
	px->tcp_ports_valid = true;
}

static bool port_declared_tcp(struct sk_proxy *px, uint16_t port)
{
	tcp_ports_refresh(px);
	return px->tcp_only[port / 8] & (1u << (port % 8));
}

/* ---- early connect ---- */

/* The upstream connect of a connection that still has to be classified is started at accept when its
 * destination is bound (dns_bind.h) to a name the policy in force allows on that port, for some protocol,
 * under a budget that admits a connection now: the TCP handshake then overlaps the client's first flight
 * instead of following it. Never for an unbound or denied destination (no SYN at all), and nothing is ever
 * sent on it before the decision: the relay, the only writer, starts after an allow. If the SNI/Host
 * decides deny, or a name that is not bound to this address, the socket is closed unused and the client
 * gets exactly the deny it would have got without it. */
struct early_pick {
	struct sk_sidecar *sc;
	const struct sk_policy *pol;   /* an enforce-mode view */
	const struct sk_addr *dst;
	uint16_t port;
	bool found;
};

static bool early_pick_cb(const char *name, void *arg)
{
	static const enum sk_proto protos[] = { SK_PROTO_TLS, SK_PROTO_HTTP, SK_PROTO_TCP };
	struct early_pick *ep = arg;
	for (size_t i = 0; i < SK_ARRAY_SIZE(protos); i++) {
		struct sk_query q = { .host = name, .dst = ep->dst, .port = ep->port, .proto = protos[i] };
		struct sk_decision d;
		sk_match(ep->pol, &q, &d);
		if (!d.allow)
			continue;
		if (d.rule >= 0 && (size_t)d.rule < ep->pol->n_rules && ep->pol->rules[d.rule].budget.window_ms) {
			struct sk_budget_entry *e = sk_budget_for_rule(sk_sidecar_budgets(ep->sc), d.rule);
			if (!e || !sk_budget_admits(e, sk_loop_now_ms(ep->sc->loop)))
				continue;
		}
		ep->found = true;
		return false;
	}
	return true;
}

/* Until the decision: the connect's outcome is noted; a failure drops the socket, and an allow then
 * connects afresh (so the audit line of a refused upstream is the one it always was). */
static void early_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	struct conn *c = io->ctx;
	if (events & (EPOLLERR | EPOLLHUP)) {
		sk_loop_forget(l, &c->uio);
		close(c->ufd);
		c->ufd = -1;
		c->early = c->early_up = false;
		sk_io_init(&c->uio, -1, NULL, c);
		return;
	}
	if (events & EPOLLOUT)
		c->early_up = true;
	if (events & (EPOLLIN | EPOLLRDHUP))
		c->u_rd = true;
}

static void early_connect(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	if (!sc->bind.names)
		return;
	struct sk_policy enforce = *sc->policy;
	enforce.mode = SK_MODE_ENFORCE;
	struct early_pick ep = { .sc = sc, .pol = &enforce, .dst = &c->dst, .port = c->dport };
	sc->bind.names(sc->bind.ctx, &c->dst, early_pick_cb, &ep);
	if (!ep.found)
		return;
	sk_autoclose int fd = socket(c->dst.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;   /* out of descriptors now: the decision connects, or refuses, as without this */
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_storage ss;
	socklen_t sl = sk_sockaddr_from_addr(&c->dst, c->dport, &ss);
	int crc = connect(fd, (struct sockaddr *)&ss, sl);
	if (crc < 0 && errno != EINPROGRESS)
		return;
	/* Registered once for the connection's whole life, as conn_connect does. */
	sk_io_init(&c->uio, fd, early_io, c);
	if (sk_loop_add(sc->loop, &c->uio, CONN_EVENTS, NULL) < 0) {
		sk_io_init(&c->uio, -1, NULL, c);
		return;
	}
	c->ufd = sk_steal_fd(&fd);
	c->early = true;
	c->early_up = crc == 0;
}

int sk_proxy_adopt(struct sk_proxy *px, int fd, const struct sk_addr *src, uint16_t src_port,
		   const struct sk_addr *dst, uint16_t dst_port, struct sk_err *err)
{
	struct sk_sidecar *sc = px->sc;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close_rst(fd);
		return sk_err_set(err, ENOMEM, "proxy: allocate connection");
	}
	c->px = px;
	c->cfd = fd;
	c->ufd = -1;
	c->rule = -1;
	c->c_rd = true;   /* nothing read yet */
	c->src = *src;
	c->sport = src_port;
	c->dst = *dst;
	c->dport = dst_port;
	c->t0_ms = sk_loop_now_ms(sc->loop);
	sk_http_track_init(&c->track);
	sk_io_init(&c->cio, fd, peek_io, c);
	sk_io_init(&c->uio, -1, NULL, c);
	sk_timer_init(&c->timer, peek_timer, c);
	c->next = px->conns;
	if (px->conns)
		px->conns->prev = c;
	px->conns = c;
	px->n_conns++;
	if (sc->metrics)
		sk_metrics_conn_active(sc->metrics, +1);

	if (px->n_conns > sc->limits.max_conns) {
		conn_deny_rst(c, "conn_limit");
		return sk_err_set(err, EBUSY, "proxy: connection limit %u reached", sc->limits.max_conns);
	}
	c->srcent = src_get(px, src, true);
	if (!c->srcent) {
		conn_deny_rst(c, "no_memory");
		return sk_err_set(err, ENOMEM, "proxy: allocate source count");
	}
	if (++c->srcent->n > sc->limits.max_per_src) {
		conn_deny_rst(c, "source_limit");
		return sk_err_set(err, EBUSY, "proxy: per-source limit %u reached", sc->limits.max_per_src);
	}
	/* A connection to one of our own ports would loop back into the sidecar: deny before reading. */
	if (is_loop(px, dst, dst_port)) {
		conn_deny_rst(c, "loop");
		return 0;
	}
	if (port_declared_tcp(px, dst_port)) {
		/* Every rule that could allow this port says `protocol: tcp`: the operator declared what
		 * the port carries, so there is nothing to classify and nothing to wait for (server-first
		 * protocols connect at once). The binding or an IP rule decides. */
		c->proto = "tcp";
		c->match_proto = SK_PROTO_TCP;
		enum verdict v = decide(c);
		decision_latency(c);
		if (v != V_ALLOW) {
			conn_deny_rst(c, c->reason);
			return 0;
		}
		conn_connect(c);
		return 0;
	}
	c->cap = PEEK_BUF_INITIAL < sc->limits.peek_cap ? PEEK_BUF_INITIAL : sc->limits.peek_cap;
	c->buf = malloc(c->cap);
	if (!c->buf) {
		conn_deny_rst(c, "no_memory");
		return sk_err_set(err, ENOMEM, "proxy: allocate peek buffer");
	}
	if (sk_loop_add(sc->loop, &c->cio, CONN_EVENTS, err) < 0 ||
	    sk_timer_arm(sc->loop, &c->timer, sc->limits.peek_timeout_ms) < 0) {
		conn_deny_rst(c, "internal_error");
		return -EIO;
	}
	early_connect(c);
	/* A client's first flight is usually queued by now (it is sent right behind the handshake that made
	 * the listener readable, and the early connect took a while): read it in this turn instead of one
	 * loop round later. When it is not there yet this costs one EAGAIN, and the registration above
	 * reports it when it comes. */
	peek_io(sc->loop, &c->cio, EPOLLIN);
	return 0;
}

/* ---- listeners ---- */

static int original_dst(int fd, int family, struct sk_addr *dst, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	int rc = family == AF_INET ? getsockopt(fd, SOL_IP, SK_SO_ORIGINAL_DST, &ss, &len)
				   : getsockopt(fd, SOL_IPV6, SK_IP6T_SO_ORIGINAL_DST, &ss, &len);
	if (rc < 0)
		return -errno;
	if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	/* The port comes back in network byte order, like any sockaddr. */
	sk_addr_from_sockaddr(&ss, dst, port);
	return 0;
}

static void proxy_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *ss)
{
	struct sk_proxy *px = ls->ctx;
	struct sk_addr src, dst = { 0 };
	uint16_t sport = 0, dport = 0;
	sk_addr_from_sockaddr(ss, &src, &sport);
	struct sk_err err = { 0 };
	if (original_dst(fd, ss->ss_family, &dst, &dport) < 0) {
		/* No conntrack entry: the connection did not come through our redirect. */
		struct sk_audit_rec r = { .event = "deny", .src = &src, .src_port = sport, .rule = -1,
					  .decision = "deny", .reason = "no_original_dst" };
		sk_audit_emit(&px->sc->audit, &r);
		close_rst(fd);
		return;
	}
	(void)sk_proxy_adopt(px, fd, &src, sport, &dst, dport, &err);
}

static int listen_on(struct sk_proxy *px, struct sk_listener *ls, int family, uint16_t port, struct sk_err *err)
{
	/* 127.0.0.1 and ::1, where nftables `redirect` delivers the agent's TCP. */
	struct sk_addr a = sk_net_loopback(family);
	int rc = sk_listener_open(ls, px->sc->loop, &a, port, 4096, "proxy", proxy_accept, px, err);
	if (rc < 0)
		return rc;
	/* Both legs without Nagle: a response that comes as a header segment and a body segment would
	 * otherwise wait for the agent's delayed ACK on every kept-alive request (~40 ms). Set on the
	 * listener, every accepted socket inherits it: one setsockopt less per connection. */
	int one = 1;
	if (setsockopt(ls->io.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		int e = errno;
		sk_listener_close(ls);
		return sk_err_sys(err, e, "proxy: TCP_NODELAY on the listener");
	}
	return 0;
}

int sk_proxy_new(struct sk_sidecar *sc, bool no_listen, struct sk_proxy **out, struct sk_err *err)
{
	struct sk_proxy *px = calloc(1, sizeof(*px));
	if (!px)
		return sk_err_set(err, ENOMEM, "proxy: allocate");
	px->sc = sc;
	sc->proxy_listen_fd = sk_proxy_listen_fd;   /* the admin port's readiness asks through it */
	px->l4.io.fd = px->l6.io.fd = -1;
	sk_pipe_pool_init(&px->pipes, 256, sc->limits.pipe_size);
	if (!no_listen) {
		uint16_t port = sc->policy->ports.proxy;
		int rc = listen_on(px, &px->l4, AF_INET, port, err);
		if (rc == 0)
			rc = listen_on(px, &px->l6, AF_INET6, port, err);
		if (rc < 0) {
			sk_proxy_free(px);
			return rc;
		}
	}
	*out = px;
	return 0;
}

void sk_proxy_stop_accepting(struct sk_proxy *p)
{
	sk_listener_close(&p->l4);
	sk_listener_close(&p->l6);
}

void sk_proxy_free(struct sk_proxy *p)
{
	if (!p)
		return;
	sk_proxy_stop_accepting(p);
	struct conn *next;
	for (struct conn *c = p->conns; c; c = next) {
		next = c->next;   /* conn_free unlinks c only */
		if (c->st == CS_RELAY) {
			sk_relay_stop(&c->relay);
			c->reason = c->reason ? c->reason : "shutdown";
			conn_audit(c, "conn", c->relay.b2a.bytes, c->relay.a2b.bytes);
			c->st = CS_CLOSING;
		} else if (c->st == CS_PEEK || c->st == CS_RESOLVE) {
			c->decision = "deny";
			c->reason = "shutdown";
			conn_audit(c, "deny", 0, 0);
		}
		conn_free(c);
	}
	sk_pipe_pool_fini(&p->pipes);
	for (size_t b = 0; b < SRC_BUCKETS; b++) {
		while (p->src[b]) {
			struct src_count *s = p->src[b];
			p->src[b] = s->next;
			free(s);
		}
	}
	free(p);
}

size_t sk_proxy_active(const struct sk_proxy *p) { return p->n_conns; }

int sk_proxy_listen_fd(const struct sk_proxy *p, int family)
{
	/* A listener that could not resume accepting after a back-off counts as not listening. */
	const struct sk_listener *ls = family == AF_INET ? &p->l4 : &p->l6;
	return sk_listener_ok(ls) ? ls->io.fd : -1;
}

/* The proxy's entry in the sidecar's server list (core/server.h); main.c registers it. */
static void server_stop(void *s) { sk_proxy_stop_accepting(s); }
static size_t server_active(const void *s) { return sk_proxy_active(s); }
static void server_free(void *s) { sk_proxy_free(s); }
const struct sk_server_ops sk_server_proxy = { "proxy", server_stop, server_active, server_free };

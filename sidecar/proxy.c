/* sidecar/proxy.c — the transparent proxy; see proxy.h for the states. */
#include "sidecar/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "sidecar/dns_bind.h"
#include "sidecar/http_head.h"
#include "sidecar/metrics.h"
#include "sidecar/relay.h"
#include "sidecar/tls_hello.h"

/* linux/netfilter_ipv4.h and linux/netfilter_ipv6/ip6_tables.h: both are 80, on SOL_IP / SOL_IPV6. */
#define SK_SO_ORIGINAL_DST 80
#define SK_IP6T_SO_ORIGINAL_DST 80

#define PEEK_BUF_INITIAL 2048
#define CLOSING_LINGER_MS 2000
#define ACCEPT_BURST 128
#define SRC_BUCKETS 256

enum conn_state { CS_PEEK = 0, CS_CONNECT, CS_RELAY, CS_CLOSING };

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
	struct sk_timer timer;         /* peek deadline, connect timeout or closing linger */
	struct sk_relay relay;
	struct sk_addr src, dst;
	uint16_t sport, dport;
	struct src_count *srcent;
	uint64_t t0_ms;
	uint8_t *buf;                  /* every byte read from the client before the decision */
	size_t len, cap;
	char name[SK_DOMAIN_MAX + 1];
	bool has_name;
	const char *proto;             /* "tls" | "http" | "h2c" | "tcp"; NULL before classification */
	enum sk_proto match_proto;
	int rule;
	const char *decision, *reason, *binding;
};

struct listener {
	struct sk_io io;
	struct sk_proxy *px;
	struct sk_timer retry;         /* re-enables accept after EMFILE */
};

struct sk_proxy {
	struct sk_sidecar *sc;
	struct listener l4, l6;
	struct conn *conns;
	size_t n_conns;
	struct sk_pipe_pool pipes;
	struct src_count *src[SRC_BUCKETS];
};

/* ---- limits ---- */

void sk_proxy_limits_default(struct sk_proxy_limits *l)
{
	l->peek_cap = 16384;
	l->peek_timeout_ms = 5000;
	l->connect_timeout_ms = 10000;
	l->idle_timeout_ms = 3600u * 1000u;
	l->max_conns = 16384;
	l->max_per_src = 8192;
	l->pipe_size = 65536;
}

static const char *env_get(char *const envp[], const char *key)
{
	if (!envp)
		return getenv(key);
	size_t kl = strlen(key);
	for (size_t i = 0; envp[i]; i++)
		if (strncmp(envp[i], key, kl) == 0 && envp[i][kl] == '=')
			return envp[i] + kl + 1;
	return NULL;
}

static int env_u32(char *const envp[], const char *key, uint64_t lo, uint64_t hi, uint64_t *out,
		   struct sk_err *err)
{
	const char *v = env_get(envp, key);
	if (!v)
		return 0;
	char *end = NULL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *end || errno || v[0] == '-' || x < lo || x > hi)
		return sk_err_set(err, EINVAL, "%s=%s: expected an integer in %llu..%llu", key, v,
				  (unsigned long long)lo, (unsigned long long)hi);
	*out = x;
	return 1;
}

int sk_proxy_limits_from_env(struct sk_proxy_limits *l, char *const envp[], struct sk_err *err)
{
	uint64_t v = 0;
	int rc;
	if ((rc = env_u32(envp, "STOCKADE_PEEK_TIMEOUT_MS", 1, 600000, &v, err)) < 0)
		return rc;
	if (rc)
		l->peek_timeout_ms = (uint32_t)v;
	if ((rc = env_u32(envp, "STOCKADE_PEEK_MAX_BYTES", 512, 1u << 20, &v, err)) < 0)
		return rc;
	if (rc)
		l->peek_cap = (size_t)v;
	if ((rc = env_u32(envp, "STOCKADE_CONNECT_TIMEOUT_MS", 1, 600000, &v, err)) < 0)
		return rc;
	if (rc)
		l->connect_timeout_ms = (uint32_t)v;
	if ((rc = env_u32(envp, "STOCKADE_IDLE_TIMEOUT_MS", 0, 86400000, &v, err)) < 0)
		return rc;
	if (rc)
		l->idle_timeout_ms = (uint32_t)v;
	if ((rc = env_u32(envp, "STOCKADE_MAX_CONNS", 1, 1000000, &v, err)) < 0)
		return rc;
	if (rc)
		l->max_conns = (uint32_t)v;
	if ((rc = env_u32(envp, "STOCKADE_MAX_CONNS_PER_SOURCE", 1, 1000000, &v, err)) < 0)
		return rc;
	if (rc)
		l->max_per_src = (uint32_t)v;
	if ((rc = env_u32(envp, "STOCKADE_PIPE_SIZE", 4096, 1u << 20, &v, err)) < 0)
		return rc;
	if (rc)
		l->pipe_size = (int)v;
	return 0;
}

/* ---- binding hooks over dns_bind.h ---- */

static bool table_name_bound(void *ctx, const struct sk_addr *addr, const char *name)
{
	struct sk_sidecar *sc = ctx;
	return sc->bindings && sk_bind_has(sc->bindings, addr, name, sk_loop_now_ms(sc->loop));
}

struct names_adapter {
	sk_bind_name_fn cb;
	void *arg;
};

static bool names_adapter_cb(const char *name, uint64_t expires_ms, void *arg)
{
	(void)expires_ms;
	struct names_adapter *a = arg;
	return a->cb(name, a->arg);
}

static void table_names(void *ctx, const struct sk_addr *addr, sk_bind_name_fn cb, void *arg)
{
	struct sk_sidecar *sc = ctx;
	struct names_adapter a = { cb, arg };
	if (sc->bindings)
		sk_bind_names(sc->bindings, addr, sk_loop_now_ms(sc->loop), names_adapter_cb, &a);
}

void sk_sidecar_attach_bindings(struct sk_sidecar *sc, struct sk_bind_table *t)
{
	sc->bindings = t;
	sc->bind.ctx = sc;
	sc->bind.name_bound = table_name_bound;
	sc->bind.names = table_names;
}

struct sk_policy *sk_sidecar_swap_policy(struct sk_sidecar *sc, struct sk_policy *p)
{
	struct sk_policy *old = sc->policy;
	sc->policy = p;
	return old;
}

/* ---- per-source counts ---- */

static size_t src_hash(const struct sk_addr *a)
{
	uint32_t h = 2166136261u;
	size_t n = a->family == AF_INET ? 4 : 16;
	for (size_t i = 0; i < n; i++)
		h = (h ^ a->bytes[i]) * 16777619u;
	return h % SRC_BUCKETS;
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

static void addr_from_sockaddr(const struct sockaddr_storage *ss, struct sk_addr *a, uint16_t *port)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		a->family = AF_INET;
		memcpy(a->bytes, &s4->sin_addr, 4);
		*port = ntohs(s4->sin_port);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		a->family = AF_INET6;
		memcpy(a->bytes, &s6->sin6_addr, 16);
		*port = ntohs(s6->sin6_port);
	}
}

static socklen_t sockaddr_from_addr(const struct sk_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, a->bytes, 4);
		return sizeof(*s4);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	memcpy(&s6->sin6_addr, a->bytes, 16);
	return sizeof(*s6);
}

static void close_rst(int fd)
{
	if (fd < 0)
		return;
	/* SO_LINGER {1,0}: close sends RST, so the peer sees a refusal at once instead of a clean EOF. */
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
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
		addr_from_sockaddr(&ss, &x, &port);
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

static void conn_audit(struct conn *c, const char *event, uint64_t bytes_in, uint64_t bytes_out)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_audit_rec r = {
		.event = event, .src = &c->src, .src_port = c->sport, .dst = &c->dst, .dst_port = c->dport,
		.name = c->has_name ? c->name : NULL, .proto = c->proto, .rule = c->rule,
		.decision = c->decision, .reason = c->reason, .binding = c->binding,
		.bytes_in = bytes_in, .bytes_out = bytes_out,
		.duration_ms = sk_loop_now_ms(sc->loop) - c->t0_ms,
	};
	sk_audit_emit(&sc->audit, &r);
}

static const char *metrics_proto(const struct conn *c)
{
	if (!c->proto)
		return "tcp";
	return strcmp(c->proto, "h2c") == 0 ? "tcp" : c->proto;
}

static void conn_free(struct conn *c)
{
	struct sk_proxy *px = c->px;
	struct sk_loop *l = px->sc->loop;
	if (c->st == CS_RELAY)
		sk_relay_stop(&c->relay);
	sk_loop_del(l, &c->cio);
	sk_loop_del(l, &c->uio);
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
	if (px->sc->metrics)
		sk_metrics_conn_active(px->sc->metrics, -1);
	free(c->buf);
	free(c);
}

/* Deny by RST with an audit line; frees c. */
static void conn_deny_rst(struct conn *c, const char *reason)
{
	c->decision = "deny";
	c->reason = reason;
	if (c->px->sc->metrics)
		sk_metrics_conn(c->px->sc->metrics, "deny", reason, c->rule, metrics_proto(c));
	conn_audit(c, "deny", 0, 0);
	close_rst(c->cfd);
	c->cfd = -1;
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

/* Deny with a protocol-level answer (TLS alert, HTTP 403), then drain the client until EOF or a short
 * linger: closing with unread bytes would make the kernel send RST, which can overtake the answer. */
static void conn_deny_answer(struct conn *c, const char *reason, const void *msg, size_t len)
{
	struct sk_loop *l = c->px->sc->loop;
	c->decision = "deny";
	c->reason = reason;
	if (c->px->sc->metrics)
		sk_metrics_conn(c->px->sc->metrics, "deny", reason, c->rule, metrics_proto(c));
	conn_audit(c, "deny", 0, 0);
	(void)send(c->cfd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)shutdown(c->cfd, SHUT_WR);
	c->st = CS_CLOSING;
	sk_loop_del(l, &c->cio);
	sk_timer_cancel(l, &c->timer);
	sk_io_init(&c->cio, c->cfd, closing_io, c);
	sk_timer_init(&c->timer, closing_timer, c);
	if (sk_loop_add(l, &c->cio, EPOLLIN | EPOLLRDHUP, NULL) < 0 ||
	    sk_timer_arm(l, &c->timer, CLOSING_LINGER_MS) < 0)
		conn_free(c);
}

static void conn_deny(struct conn *c, const char *reason)
{
	if (c->proto && strcmp(c->proto, "tls") == 0) {
		conn_deny_answer(c, reason, SK_TLS_ALERT_ACCESS_DENIED, sizeof(SK_TLS_ALERT_ACCESS_DENIED) - 1);
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

static void relay_done(struct sk_relay *r, enum sk_relay_end how, int errnum)
{
	(void)errnum;
	struct conn *c = r->ctx;
	struct sk_sidecar *sc = c->px->sc;
	if (sc->metrics)
		sk_metrics_bytes(sc->metrics, r->a2b.bytes, r->b2a.bytes);
	conn_audit(c, "conn", r->b2a.bytes, r->a2b.bytes);
	if (how != SK_RELAY_DONE) {
		/* A reset (or an idle kill) on one side becomes a reset on the other: neither peer may
		 * mistake a broken stream for a complete one. */
		close_rst(c->cfd);
		close_rst(c->ufd);
		c->cfd = c->ufd = -1;
	}
	c->st = CS_CLOSING;   /* the relay is already stopped */
	conn_free(c);
}

static void connect_failed(struct conn *c, const char *reason)
{
	c->reason = reason;
	conn_audit(c, "conn", 0, 0);
	close_rst(c->cfd);
	c->cfd = -1;
	conn_free(c);
}

static void connect_done(struct conn *c)
{
	struct sk_loop *l = c->px->sc->loop;
	struct sk_err err = { 0 };
	sk_loop_del(l, &c->uio);
	sk_loop_del(l, &c->cio);
	sk_timer_cancel(l, &c->timer);
	if (sk_relay_start(&c->relay, l, &c->px->pipes, c->cfd, c->ufd, c->buf, c->len,
			   c->px->sc->limits.idle_timeout_ms, relay_done, c, &err) < 0) {
		connect_failed(c, "relay_failed");
		return;
	}
	c->st = CS_RELAY;
}

static void connect_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	(void)events;
	struct conn *c = io->ctx;
	int e = 0;
	socklen_t len = sizeof(e);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	if (e == 0) {
		connect_done(c);
		return;
	}
	connect_failed(c, e == ECONNREFUSED ? "upstream_refused"
			  : e == ENETUNREACH || e == EHOSTUNREACH ? "upstream_unreachable"
								   : "upstream_error");
}

static void connect_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	connect_failed(t->ctx, "upstream_timeout");
}

static void conn_connect(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_loop *l = sc->loop;
	if (sc->metrics)
		sk_metrics_conn(sc->metrics, c->decision, c->reason, c->rule, metrics_proto(c));
	sk_loop_del(l, &c->cio);
	sk_timer_cancel(l, &c->timer);
	c->st = CS_CONNECT;
	/* The sidecar's UID is exempt in nftables, so this connect goes straight out (no redirect loop). */
	c->ufd = socket(c->dst.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->ufd < 0) {
		connect_failed(c, "upstream_socket");
		return;
	}
	int one = 1;
	(void)setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_from_addr(&c->dst, c->dport, &ss);
	if (connect(c->ufd, (struct sockaddr *)&ss, sl) == 0) {
		connect_done(c);
		return;
	}
	if (errno != EINPROGRESS) {
		connect_failed(c, errno == ECONNREFUSED ? "upstream_refused" : "upstream_error");
		return;
	}
	sk_io_init(&c->uio, c->ufd, connect_io, c);
	sk_timer_init(&c->timer, connect_timer, c);
	if (sk_loop_add(l, &c->uio, EPOLLOUT, NULL) < 0 ||
	    sk_timer_arm(l, &c->timer, sc->limits.connect_timeout_ms) < 0)
		connect_failed(c, "upstream_error");
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
	snprintf(np->name, sizeof(np->name), "%s", name);
	np->found = true;
	return false;
}

/* Decides c (classified, name or not) and moves it on: connect, or deny. */
static void conn_decide(struct conn *c)
{
	struct sk_proxy *px = c->px;
	struct sk_sidecar *sc = px->sc;
	const struct sk_policy *pol = sc->policy;
	/* The matcher runs on an enforce-mode view of the snapshot so the audit line carries the real
	 * reason; mode audit is applied once, below, to policy and parse denials alike. */
	struct sk_policy enforce = *pol;
	enforce.mode = SK_MODE_ENFORCE;
	struct sk_query q = { .host = c->has_name ? c->name : NULL, .dst = &c->dst, .port = c->dport,
			      .proto = c->match_proto };
	struct sk_decision d;
	if (!c->has_name && sc->bind.names && c->match_proto == SK_PROTO_TCP) {
		/* Plain TCP carries no name: use the names the DNS filter bound to this address. An HTTP
		 * request whose Host is an IP literal is connect-by-IP (IP rules only): lending it a bound name
		 * would let `Host: <shared CDN address>` reach whatever default site that address serves. */
		struct name_pick np = { .pol = &enforce, .q = q };
		sc->bind.names(sc->bind.ctx, &c->dst, name_pick_cb, &np);
		if (np.found) {
			snprintf(c->name, sizeof(c->name), "%s", np.name);
			c->has_name = true;
			c->binding = "ok";
			d = np.d;
			goto decided;
		}
	}
	sk_match(&enforce, &q, &d);
	if (d.allow && c->has_name && d.rule >= 0 && pol->rules[d.rule].kind == SK_RULE_HOST) {
		if (!sc->bind.name_bound) {
			c->binding = "unchecked";
		} else if (sc->bind.name_bound(sc->bind.ctx, &c->dst, c->name)) {
			c->binding = "ok";
		} else {
			/* A forged SNI/Host toward an address no allowed name resolved to. */
			c->binding = "mismatch";
			d.allow = false;
			c->rule = d.rule;
			c->reason = "sni_ip_mismatch";
			goto deny;
		}
	}
decided:
	c->rule = d.rule;
	if (d.allow) {
		c->decision = "allow";
		c->reason = "rule";
		if (sc->metrics)
			sk_metrics_decision_latency(sc->metrics, (double)(sk_monotonic_ms() - c->t0_ms) / 1000.0);
		conn_connect(c);
		return;
	}
	c->reason = sk_reason_name(d.reason);
deny:
	if (sc->metrics)
		sk_metrics_decision_latency(sc->metrics, (double)(sk_monotonic_ms() - c->t0_ms) / 1000.0);
	if (pol->mode == SK_MODE_AUDIT) {
		c->decision = "would_deny";
		conn_connect(c);
		return;
	}
	conn_deny(c, c->reason);
}

/* A parse-level deny (malformed hello, bad Host...): mode audit still lets it through. */
static void conn_parse_deny(struct conn *c, const char *reason)
{
	if (c->px->sc->policy->mode == SK_MODE_AUDIT) {
		c->decision = "would_deny";
		c->reason = reason;
		conn_connect(c);
		return;
	}
	conn_deny(c, reason);
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
	default: return "http_malformed";
	}
}

/* Does the first line look like an HTTP request line (so a parse failure is an HTTP deny and not
 * some other line protocol)? */
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

enum classify { CL_MORE = 0, CL_DONE };

/* Classifies what has been read. `final`: no more bytes will come (EOF or deadline). Returns CL_MORE to
 * keep reading; CL_DONE when c was decided (and possibly freed). */
static enum classify conn_classify(struct conn *c, bool final)
{
	size_t cap = c->px->sc->limits.peek_cap;
	if (c->len == 0) {
		/* Nothing sent by the deadline: a server-speaks-first protocol (SSH, SMTP...). */
		c->proto = "tcp";
		c->match_proto = SK_PROTO_TCP;
		conn_decide(c);
		return CL_DONE;
	}
	if (c->buf[0] == 0x16) {
		c->proto = "tls";
		c->match_proto = SK_PROTO_TLS;
		enum sk_hello_result r = sk_tls_hello_parse(c->buf, c->len, cap, c->name);
		if (r == SK_HELLO_NEED_MORE && !final && c->len < cap)
			return CL_MORE;
		if (r == SK_HELLO_OK) {
			c->has_name = true;
			conn_decide(c);
		} else {
			conn_parse_deny(c, hello_reason(r));
		}
		return CL_DONE;
	}
	struct sk_http_head h;
	enum sk_http_result r = sk_http_head_parse(c->buf, c->len, &h);
	if (r == SK_HTTP_NEED_MORE && !final && c->len < cap)
		return CL_MORE;
	switch (r) {
	case SK_HTTP_OK:
		c->proto = "http";
		c->match_proto = SK_PROTO_HTTP;
		if (!h.host_is_ip && h.host[0]) {
			snprintf(c->name, sizeof(c->name), "%s", h.host);
			c->has_name = true;
		}
		conn_decide(c);
		return CL_DONE;
	case SK_HTTP_H2C_PRIOR:
		/* h2c carries its authority inside HPACK; we do not decode it, so it is plain TCP to us. */
		c->proto = "h2c";
		c->match_proto = SK_PROTO_TCP;
		conn_decide(c);
		return CL_DONE;
	case SK_HTTP_NOT_HTTP:
		break;
	default:
		if (r == SK_HTTP_NEED_MORE || first_line_is_http(c->buf, c->len)) {
			c->proto = "http";
			c->match_proto = SK_PROTO_HTTP;
			conn_parse_deny(c, c->len >= cap ? "http_head_too_big" : http_reason(r));
			return CL_DONE;
		}
		break;
	}
	c->proto = "tcp";
	c->match_proto = SK_PROTO_TCP;
	conn_decide(c);
	return CL_DONE;
}

static void peek_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	(void)events;
	struct conn *c = io->ctx;
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
			if (errno == EAGAIN || errno == EINTR)
				break;
			conn_deny_rst(c, "client_reset");
			return;
		}
		if (n == 0) {
			if (c->len == 0) {
				conn_deny_rst(c, "client_closed");
				return;
			}
			(void)conn_classify(c, true);
			return;
		}
		c->len += (size_t)n;
		if (c->len < c->cap)
			break;
		if (c->len >= cap)
			break;
	}
	(void)conn_classify(c, false);
}

static void peek_timer(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	struct conn *c = t->ctx;
	if (c->len == 0) {
		(void)conn_classify(c, true);
		return;
	}
	/* Some bytes but not enough to decide: a slowloris hello or head. */
	if (c->buf[0] == 0x16) {
		c->proto = "tls";
	}
	conn_deny_rst(c, "peek_timeout");
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
	c->src = *src;
	c->sport = src_port;
	c->dst = *dst;
	c->dport = dst_port;
	c->t0_ms = sk_loop_now_ms(sc->loop);
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
	c->cap = PEEK_BUF_INITIAL < sc->limits.peek_cap ? PEEK_BUF_INITIAL : sc->limits.peek_cap;
	c->buf = malloc(c->cap);
	if (!c->buf) {
		conn_deny_rst(c, "no_memory");
		return sk_err_set(err, ENOMEM, "proxy: allocate peek buffer");
	}
	if (sk_loop_add(sc->loop, &c->cio, EPOLLIN | EPOLLRDHUP, err) < 0 ||
	    sk_timer_arm(sc->loop, &c->timer, sc->limits.peek_timeout_ms) < 0) {
		conn_deny_rst(c, "internal_error");
		return -EIO;
	}
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
	addr_from_sockaddr(&ss, dst, port);
	return 0;
}

static void listener_io(struct sk_loop *l, struct sk_io *io, uint32_t events);

static void listener_retry(struct sk_loop *l, struct sk_timer *t)
{
	struct listener *ls = t->ctx;
	if (ls->io.fd >= 0 && !ls->io.registered)
		(void)sk_loop_add(l, &ls->io, EPOLLIN, NULL);
}

static void listener_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)events;
	struct listener *ls = io->ctx;
	struct sk_proxy *px = ls->px;
	for (int i = 0; i < ACCEPT_BURST; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		int fd = accept4(io->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: pause accepting briefly instead of spinning on a
				 * listener that stays readable. */
				sk_loop_del(l, io);
				(void)sk_timer_arm(l, &ls->retry, 100);
			}
			return;
		}
		struct sk_addr src, dst = { 0 };
		uint16_t sport = 0, dport = 0;
		addr_from_sockaddr(&ss, &src, &sport);
		struct sk_err err = { 0 };
		if (original_dst(fd, ss.ss_family, &dst, &dport) < 0) {
			/* No conntrack entry: the connection did not come through our redirect. */
			struct sk_audit_rec r = { .event = "deny", .src = &src, .src_port = sport, .rule = -1,
						  .decision = "deny", .reason = "no_original_dst" };
			sk_audit_emit(&px->sc->audit, &r);
			close_rst(fd);
			continue;
		}
		(void)sk_proxy_adopt(px, fd, &src, sport, &dst, dport, &err);
	}
}

static int listen_on(struct sk_proxy *px, struct listener *ls, int family, uint16_t port, struct sk_err *err)
{
	ls->px = px;
	sk_io_init(&ls->io, -1, listener_io, ls);
	sk_timer_init(&ls->retry, listener_retry, ls);
	sk_autoclose int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sk_err_sys(err, errno, "proxy: socket");
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sk_addr a = { .family = (uint8_t)family };
	if (family == AF_INET) {
		a.bytes[0] = 127;
		a.bytes[3] = 1;
	} else {
		a.bytes[15] = 1;
		/* v6-only: IPv4 is served by its own listener, and mapped addresses never reach this one. */
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
			return sk_err_sys(err, errno, "proxy: IPV6_V6ONLY");
	}
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_from_addr(&a, port, &ss);
	char ep[SK_ADDR_STRLEN + 8];
	sk_audit_endpoint(&a, port, ep);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		return sk_err_sys(err, errno, "proxy: bind %s", ep);
	if (listen(fd, 4096) < 0)
		return sk_err_sys(err, errno, "proxy: listen %s", ep);
	ls->io.fd = fd;
	if (sk_loop_add(px->sc->loop, &ls->io, EPOLLIN, err) < 0) {
		ls->io.fd = -1;
		return sk_err_prefix(err, "proxy: %s", ep);
	}
	sk_steal_fd(&fd);
	return 0;
}

static void listener_close(struct sk_proxy *px, struct listener *ls)
{
	if (ls->io.fd < 0)
		return;
	sk_loop_del(px->sc->loop, &ls->io);
	sk_timer_cancel(px->sc->loop, &ls->retry);
	close(ls->io.fd);
	ls->io.fd = -1;
}

int sk_proxy_new(struct sk_sidecar *sc, bool no_listen, struct sk_proxy **out, struct sk_err *err)
{
	struct sk_proxy *px = calloc(1, sizeof(*px));
	if (!px)
		return sk_err_set(err, ENOMEM, "proxy: allocate");
	px->sc = sc;
	px->l4.io.fd = px->l6.io.fd = -1;
	sk_timer_init(&px->l4.retry, listener_retry, &px->l4);
	sk_timer_init(&px->l6.retry, listener_retry, &px->l6);
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
	listener_close(p, &p->l4);
	listener_close(p, &p->l6);
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
		} else if (c->st == CS_PEEK) {
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
	return family == AF_INET ? p->l4.io.fd : p->l6.io.fd;
}

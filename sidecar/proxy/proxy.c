/* sidecar/proxy/proxy.c — the transparent proxy: deciding (loop check, match, binding, fallback resolution),
 * accepting, the early connect and the listeners; see proxy.h for the states, internal.h for the other files. */
#include "sidecar/proxy/internal.h"

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

void decision_latency(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	if (sc->metrics)
		sk_metrics_decision_latency(sc->metrics, (double)(sk_monotonic_ms() - c->t0_ms) / 1000.0);
}

/* Mode audit turns a deny into would_deny (the connection goes on); enforce keeps it. */
enum verdict verdict_deny(struct conn *c, const char *reason)
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

/* The decision proper: matches what c is known to be now (c->proto/match_proto, c->name when has_name)
 * against the policy in force and checks the binding. Sets c->rule, c->decision, c->reason, c->binding;
 * *by_rule when a rule allows c (its budget is then still to ask). V_PENDING: the name is allowed but
 * not bound to the destination, and the sidecar is resolving it (resolved_cb goes on). */
static enum verdict match_and_bind(struct conn *c, bool *by_rule)
{
	struct sk_sidecar *sc = c->px->sc;
	const struct sk_policy *pol = sc->policy;
	/* The matcher runs on an enforce-mode view of the snapshot so the audit line carries the real
	 * reason; mode audit is applied once, in verdict_deny, to policy and parse denials alike. */
	struct sk_policy enforce = *pol;
	enforce.mode = SK_MODE_ENFORCE;
	struct sk_query q = { .host = conn_has(c, CF_HAS_NAME) ? c->name : NULL, .dst = &c->dst, .port = c->dport,
			      .proto = c->match_proto };
	struct sk_decision d;
	c->binding = NULL;
	if (!conn_has(c, CF_HAS_NAME) && sc->bind.names && c->match_proto == SK_PROTO_TCP) {
		/* Plain TCP carries no name: use the names the DNS filter bound to this address. An HTTP
		 * request whose Host is an IP literal is connect-by-IP (IP rules only): lending it a bound name
		 * would let `Host: <shared CDN address>` reach whatever default site that address serves. */
		struct name_pick np = { .pol = &enforce, .q = q };
		sc->bind.names(sc->bind.ctx, &c->dst, name_pick_cb, &np);
		if (np.found) {
			(void)snprintf(c->name, sizeof(c->name), "%s", np.name);
			conn_set(c, CF_HAS_NAME, true);
			c->binding = "ok";
			set_rule(c, pol, np.d.rule);
			c->decision = "allow";
			c->reason = "rule";
			*by_rule = true;
			return V_ALLOW;
		}
	}
	sk_match(&enforce, &q, &d);
	set_rule(c, pol, d.rule);
	if (!d.allow)
		return verdict_deny(c, sk_reason_name(d.reason));
	if (conn_has(c, CF_HAS_NAME) && d.rule >= 0 && pol->rules[d.rule].kind == SK_RULE_HOST) {
		if (!sc->bind.name_bound) {
			c->binding = "unchecked";
		} else if (sc->bind.name_bound(sc->bind.ctx, &c->dst, c->name)) {
			c->binding = "ok";
		} else if (sc->resolve.start) {
			/* Allowed name, unbound destination: a client that resolved elsewhere (hosts file,
			 * --resolve, an old cache). Resolve it ourselves; only its own answers can bind. */
			int rc = sc->resolve.start(sc->resolve.ctx, c->name, &c->dst, resolved_cb, c, &c->resolving);
			if (rc == 0) {
				conn_set(c, CF_RESOLVED, false);
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
	*by_rule = true;
	return V_ALLOW;
}

/* Decides c: the match and the binding first, then, when a rule allows c, its budget in one call
 * (budget_admit). Same contract as match_and_bind, with the budget's refusal as a deny. */
enum verdict decide(struct conn *c)
{
	bool by_rule = false;
	enum verdict v = match_and_bind(c, &by_rule);
	return by_rule ? budget_admit(c) : v;
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
	conn_set(c, CF_RESOLVED, true);
	if (c->st == CS_RESOLVE) {
		conn_set(c, CF_RESOLVED, false);
		c->st = CS_PEEK;
		act_peek(c, c->verdict_after);
		return;
	}
	if (c->st == CS_RELAY)
		sk_relay_kick(&c->relay);   /* the gate sees CF_RESOLVED */
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
		conn_set(c, CF_EARLY | CF_EARLY_UP, false);
		sk_io_init(&c->uio, -1, NULL, c);
		return;
	}
	if (events & EPOLLOUT)
		conn_set(c, CF_EARLY_UP, true);
	if (events & (EPOLLIN | EPOLLRDHUP))
		conn_set(c, CF_U_RD, true);
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
	conn_set(c, CF_EARLY, true);
	conn_set(c, CF_EARLY_UP, crc == 0);
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
	conn_set(c, CF_C_RD, true);   /* nothing read yet */
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
		} else if (c->st == CS_BRIDGE) {
			bridge_shutdown(c);
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


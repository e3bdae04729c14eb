/* sidecar/proxy/conn.c — a proxied connection's life: per-source counts, the audit line, deny answers, budgets,
 * the upstream connect and the relay (internal.h). */
#include "sidecar/proxy/internal.h"

/* ---- per-source counts ---- */

static size_t src_hash(const struct sk_addr *a)
{
	return sk_fnv1a64(a->bytes, a->family == AF_INET ? 4 : 16) % SRC_BUCKETS;
}

struct src_count *src_get(struct sk_proxy *px, const struct sk_addr *a, bool create)
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

void close_rst(int fd)
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

bool is_loop(const struct sk_proxy *px, const struct sk_addr *dst, uint16_t port)
{
	const struct sk_ports *p = &px->sc->policy->ports;
	if (port != p->proxy && port != p->dns && port != p->admin && port != p->api)
		return false;
	return addr_is_local(dst);
}

/* ---- connection life ---- */

/* The rule label of metrics (NULL: no rule decided). */
const char *conn_rule_label(const struct conn *c)
{
	return c->rule >= 0 ? c->rule_label : NULL;
}

void set_rule(struct conn *c, const struct sk_policy *pol, int rule)
{
	c->rule = rule;
	c->rule_gen = c->px->sc->policy_gen;
	conn_set(c, CF_RULE_REQUESTS, rule >= 0 && (size_t)rule < pol->n_rules && pol->rules[rule].requests);
	conn_set(c, CF_RULE_NAMED, rule >= 0 && (size_t)rule < pol->n_rules && pol->rules[rule].name);
	conn_set(c, CF_RULE_INSPECT, rule >= 0 && (size_t)rule < pol->n_rules && pol->rules[rule].inspect);
	char idx[24];
	const char *l = sk_rule_label(pol, rule, idx);
	/* fits: rule names are [a-z0-9-]{1,63} (validate.c), an index far shorter */
	(void)snprintf(c->rule_label, sizeof(c->rule_label), "%s", l ? l : "");
}

void conn_audit(struct conn *c, const char *event, uint64_t bytes_in, uint64_t bytes_out)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_audit_rec r = {
		.event = event, .src = &c->src, .src_port = c->sport, .dst = &c->dst, .dst_port = c->dport,
		.name = conn_has(c, CF_HAS_NAME) ? c->name : NULL, .proto = c->proto, .rule = c->rule,
		.rule_name = c->rule >= 0 && conn_has(c, CF_RULE_NAMED) ? c->rule_label : NULL,
		.decision = c->decision, .reason = c->reason, .binding = c->binding,
		/* request: only on the deny of a later request (docs/operating.md); the final allow line of a
		 * kept-alive connection does not carry the count. */
		.late = conn_has(c, CF_LATE), .request = strcmp(event, "deny") == 0 && c->request > 1 ? c->request : 0,
		/* only once the bridge has the connection: a connect that failed before it terminated nothing */
		.inspected = c->st == CS_BRIDGE,
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

const char *conn_flags_str(uint32_t flags, char *buf, size_t size)
{
	static const char *const names[] = {
		"has_name", "rule_named", "late", "first_done", "http_first_ok", "upgrade_wait", "rule_requests",
		"tls_open", "tls_ech", "resolved", "budget_counted", "early", "early_up", "c_rd", "u_rd",
		"rule_inspect", "bridged", "budget_over", "h2_line_done",
	};
	size_t off = 0;
	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & (1u << i)))
			continue;
		int w = snprintf(buf + off, size - off, "%s%s", off ? "," : "", names[i]);
		if (w < 0 || (size_t)w >= size - off) {
			/* CONN_FLAGS_STR_MAX holds them all; a shorter buf keeps the names that fit, whole (snprintf
			 * wrote the start of the one that did not) */
			buf[off] = '\0';
			break;
		}
		off += (size_t)w;
	}
	if (off == 0)
		(void)snprintf(buf, size, "-");   /* "-" always fits a non-empty buf */
	return buf;
}

static const char *conn_state_name(enum conn_state st)
{
	static const char *const names[] = { "peek", "resolve", "connect", "relay", "closing", "bridge" };
	return (size_t)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

void conn_free(struct conn *c)
{
	struct sk_proxy *px = c->px;
	struct sk_sidecar *sc = px->sc;
	struct sk_loop *l = sc->loop;
	if (sk_log_enabled(SK_LOG_DEBUG)) {
		char fl[CONN_FLAGS_STR_MAX];
		sk_log(SK_LOG_DEBUG, "proxy: connection to port %u freed in state %s, rule %d, flags %s",
		       (unsigned)c->dport, conn_state_name(c->st), c->rule, conn_flags_str(c->flags, fl, sizeof(fl)));
	}
	if (c->st == CS_RELAY)
		sk_relay_stop(&c->relay);
	bridge_free(c);
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
void conn_deny_rst(struct conn *c, const char *reason)
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
void ignore_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct conn *c = io->ctx;
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		conn_set(c, CF_C_RD, true);
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

void conn_deny(struct conn *c, const char *reason)
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


/* The rule c->rule allows c; its budget may still refuse it (budget_exhausted, answered like any other
 * deny: TLS alert, 403 or RST). A connection is counted once, when first admitted; a later decision on
 * the same connection (a late first flight, another Host) checks the bytes only. */
enum verdict budget_admit(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	const struct sk_policy *pol = sc->policy;
	bool counted = conn_has(c, CF_BUDGET_COUNTED);
	struct sk_budget_entry *e;
	enum sk_budget_admission a = sk_budget_admit_conn(sk_sidecar_budgets(sc), pol, c->rule, counted,
							   pol->mode == SK_MODE_AUDIT, sk_loop_now_ms(sc->loop), &e);
	conn_set_budget(c, e);
	switch (a) {
	case SK_BUDGET_FREE:
		return V_ALLOW;
	case SK_BUDGET_UNAVAILABLE:
		return verdict_deny(c, "budget_unavailable");   /* the table could not follow the policy */
	case SK_BUDGET_REFUSED:
		/* mode audit: would_deny, and the connection was counted (charge_refused) */
		if (verdict_deny(c, "budget_exhausted") == V_DENY)
			return V_DENY;
		break;
	case SK_BUDGET_ADMITTED:
		break;
	}
	conn_set(c, CF_BUDGET_COUNTED, true);
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



static void connect_timer(struct sk_loop *l, struct sk_timer *t);

/* Starts the relay. connecting: the upstream's connect was not seen to complete — the relay's first send
 * to it is the probe (relay.h, sk_relay_connecting), under the connect deadline. */
static void connect_done(struct conn *c, bool connecting)
{
	struct sk_loop *l = c->px->sc->loop;
	const struct sk_proxy_limits *lim = &c->px->sc->limits;
	struct sk_err err = { 0 };
	sk_timer_cancel(l, &c->timer);
	if (conn_has(c, CF_BRIDGED)) {
		bridge_start(c);
		return;
	}
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
	sk_relay_set_ready(&c->relay, conn_has(c, CF_C_RD), conn_has(c, CF_U_RD));
	sk_relay_begin(&c->relay);
}


static void connect_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	struct conn *c = io->ctx;
	int e = 0;
	if (!(events & (EPOLLERR | EPOLLHUP))) {
		if (events & (EPOLLIN | EPOLLRDHUP))
			conn_set(c, CF_U_RD, true);
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
	/* The TLS bridge's first write is a ClientHello: it waits for the connect, so a refused upstream is
	 * audited as one, not as a TLS failure. */
	if (up || (c->gate != GATE_FIRST && !conn_has(c, CF_BRIDGED))) {
		connect_done(c, !up);
		return;
	}
	sk_timer_init(&c->timer, connect_timer, c);
	if (sk_timer_arm(l, &c->timer, c->px->sc->limits.connect_timeout_ms) < 0)
		connect_failed(c, "upstream_error");
}

void conn_connect(struct conn *c)
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
	if (conn_has(c, CF_EARLY)) {
		/* Connected (or connecting) since the accept: the handshake overlapped the client's first
		 * flight. From here on it is an ordinary upstream connect. */
		conn_set(c, CF_EARLY, false);
		c->uio.cb = connect_io;
		connect_wait(c, conn_has(c, CF_EARLY_UP));
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


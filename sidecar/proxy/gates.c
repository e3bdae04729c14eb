/* sidecar/proxy/gates.c — the relay's client→upstream gates (relay.h sk_relay_gate): a server-first
 * connection's first flight, every TLS ClientHello, every HTTP request head (internal.h). */
#include "sidecar/proxy/internal.h"

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

ssize_t gate_first(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full)
{
	struct conn *c = r->ctx;
	struct sk_loop *l = c->px->sc->loop;
	enum verdict v;
	if (c->resolving)
		return 0;
	if (conn_has(c, CF_RESOLVED)) {
		conn_set(c, CF_RESOLVED, false);
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
	conn_set(c, CF_FIRST_DONE, true);
	decision_latency(c);
	if (v == V_ALLOW)
		v = check_conn_requests(c);
	if (v == V_ALLOW && c->match_proto == SK_PROTO_TLS && conn_has(c, CF_RULE_INSPECT))
		v = verdict_deny(c, "request_unreadable");   /* the relay is running: too late to terminate */
	if (v == V_DENY)
		return -1;
	if (c->match_proto == SK_PROTO_HTTP) {
		c->gate = GATE_HTTP;
		conn_set(c, CF_HTTP_FIRST_OK, true);
		r->gate = gate_http;
		return gate_http(r, buf, len, eof, full);
	}
	if (c->match_proto == SK_PROTO_TLS) {
		/* The late hello is judged again by the TLS gate (the same name, so it passes) and every
		 * hello after it, until the server's answer shows the handshake is past them. */
		c->gate = GATE_TLS;
		conn_set(c, CF_TLS_OPEN, true);
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
	return ech == conn_has(c, CF_TLS_ECH) && strcmp(name, c->name) == 0;
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
		conn_set(c, CF_TLS_OPEN, false);
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
ssize_t gate_tls(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full)
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
		if (!conn_has(c, CF_TLS_OPEN)) {
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
bool peek_tls_server(struct sk_relay *r)
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
	if (k == SK_SERVER_FIRST_HELLO && conn_has(c, CF_TLS_OPEN)) {
		conn_set(c, CF_TLS_OPEN, false);
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
	conn_set(c, CF_UPGRADE_WAIT, false);
	sk_http_track_upgrade_result(&c->track, switched);
	sk_relay_kick(r);
	return true;
}

static enum verdict check_request(struct conn *c, const struct sk_http_head *h)
{
	if (c->request == 1 && conn_has(c, CF_HTTP_FIRST_OK))
		return V_ALLOW;   /* the head the connection was decided on */
	if (!h->host_is_ip && h->host[0] && conn_has(c, CF_HAS_NAME) && strcmp(h->host, c->name) == 0 &&
	    c->decision && strcmp(c->decision, "allow") == 0)
		return V_ALLOW;   /* the same name as the request before: already allowed for this address */
	c->proto = "http";
	c->match_proto = SK_PROTO_HTTP;
	conn_set(c, CF_HAS_NAME, !h->host_is_ip && h->host[0]);
	if (conn_has(c, CF_HAS_NAME))
		(void)snprintf(c->name, sizeof(c->name), "%s", h->host);
	return decide(c);
}

ssize_t gate_http(struct sk_relay *r, const uint8_t *buf, size_t len, bool eof, bool full)
{
	(void)eof;
	struct conn *c = r->ctx;
	size_t off = 0;
	if (c->held_head) {
		if (c->resolving)
			return 0;
		conn_set(c, CF_RESOLVED, false);
		if (c->verdict_after == V_DENY)
			return -1;
		/* The held head meets the request rules of the rule the resolution confirmed. */
		struct sk_http_head hh;
		enum sk_http_result hr = sk_http_head_parse(buf, c->held_head, &hh);
		if ((hr != SK_HTTP_OK && conn_has(c, CF_RULE_REQUESTS)) ||
		    check_credentials(c, buf, c->held_head) == V_DENY ||
		    (hr == SK_HTTP_OK && check_request_rules(c, buf, c->held_head, &hh) == V_DENY)) {
			c->held_head = 0;
			r->denied = r->a2b.bytes > 0;
			return -1;
		}
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
				v = check_credentials(c, buf + off, n);
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
			if (!conn_has(c, CF_UPGRADE_WAIT)) {
				conn_set(c, CF_UPGRADE_WAIT, true);
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


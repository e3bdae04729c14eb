/* sidecar/proxy/classify.c — the peek: what the client's first flight is (TLS, HTTP, TCP) and the decision
 * taken on it before the upstream connect (internal.h). */
#include "sidecar/proxy/internal.h"

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

enum classify classify_bytes(struct conn *c, const uint8_t *b, size_t len, bool final,
				    const char **why)
{
	size_t cap = c->px->sc->limits.peek_cap;
	conn_set(c, CF_HAS_NAME, false);
	conn_set(c, CF_TLS_ECH, false);
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
			conn_set(c, CF_TLS_ECH, true);
		}
		if (r == SK_HELLO_OK) {
			conn_set(c, CF_HAS_NAME, true);
			return CL_NAMED;
		}
		/* For the audit line only: the outer name of an ECH hello, the literal of an IP SNI. */
		conn_set(c, CF_HAS_NAME, c->name[0] != '\0' && (r == SK_HELLO_ECH || r == SK_HELLO_SNI_IP));
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
			conn_set(c, CF_HAS_NAME, true);   /* also on a framing deny: the audit line names the host asked for */
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
enum verdict check_conn_requests(struct conn *c)
{
	const struct sk_policy *pol = c->px->sc->policy;
	const struct sk_rule *ru = c->rule >= 0 && (size_t)c->rule < pol->n_rules ? &pol->rules[c->rule] : NULL;
	const char *why = sk_req_gate_conn(ru, c->match_proto);
	return why ? verdict_deny(c, why) : V_ALLOW;
}

/* Every head on a connection whose rule has request rules: its method and path (requests_gate.h). */
enum verdict check_request_rules(struct conn *c, const uint8_t *head, size_t n, const struct sk_http_head *h)
{
	const struct sk_policy *pol = c->px->sc->policy;
	if (c->rule_gen != c->px->sc->policy_gen && c->rule >= 0) {
		/* A reload since the decision: c->rule indexes the old policy. Find this name's rule in the new
		 * one, so a later request meets the request rules in force. A name the new policy no longer
		 * allows stays allowed on this connection as before, unless its rule had request rules: those
		 * fail closed rather than let every later request through. */
		struct sk_policy enforce = *pol;
		enforce.mode = SK_MODE_ENFORCE;
		struct sk_query q = { .host = conn_has(c, CF_HAS_NAME) ? c->name : NULL, .dst = &c->dst, .port = c->dport,
				      .proto = c->match_proto };
		struct sk_decision d;
		sk_match(&enforce, &q, &d);
		if (d.allow)
			set_rule(c, pol, d.rule);
		else if (conn_has(c, CF_RULE_REQUESTS))
			return verdict_deny(c, sk_reason_name(d.reason));
		else
			return V_ALLOW;   /* the old index stays as it was: nothing of the new policy to apply */
	}
	if (!conn_has(c, CF_RULE_REQUESTS) || c->rule < 0 || (size_t)c->rule >= pol->n_rules || !pol->rules[c->rule].requests)
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

enum verdict check_credentials(struct conn *c, const uint8_t *head, size_t n)
{
	struct sk_sidecar *sc = c->px->sc;
	if (!sc->policy || !sc->policy->n_secrets)
		return V_ALLOW;
	const char *why = sk_req_gate_credentials(sc->policy, sk_sidecar_secrets(sc), head, n);
	return why ? verdict_deny(c, why) : V_ALLOW;
}

void act_peek(struct conn *c, enum verdict v)
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
	bool inspect = v == V_ALLOW && c->match_proto == SK_PROTO_TLS && conn_has(c, CF_RULE_INSPECT);
	if (inspect && !c->px->sc->inspect_env) {
		/* no CA or trust bundle (the start said why): refused before any connect, never spliced unread
		 * (mode audit: would_deny, and the TLS goes on as a rule without inspect would) */
		v = verdict_deny(c, "inspect_unavailable");
		inspect = false;
	}
	if (v == V_ALLOW) {
		if (inspect) {
			/* terminated and read (inspect.c) instead of spliced: every hello after this one is the
			 * bridge's own OpenSSL's to refuse, every request the filter's */
			c->gate = GATE_NONE;
			conn_set(c, CF_BRIDGED, true);
		} else if (c->match_proto == SK_PROTO_HTTP) {
			c->gate = GATE_HTTP;
			conn_set(c, CF_HTTP_FIRST_OK, true);
		} else if (c->match_proto == SK_PROTO_TLS) {
			c->gate = GATE_TLS;
			conn_set(c, CF_TLS_OPEN, true);
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
	conn_set(c, CF_HAS_NAME, false);
	enum verdict v = decide(c);
	decision_latency(c);
	if (v != V_ALLOW) {
		conn_deny_rst(c, c->reason);
		return;
	}
	conn_set(c, CF_LATE, true);
	c->gate = GATE_FIRST;
	conn_connect(c);
}

void peek_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
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
				conn_set(c, CF_C_RD, false);
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
			conn_set(c, CF_C_RD, true);   /* the relay reads the EOF again */
			peek_decide(c, true);
			return;
		}
		c->len += (size_t)n;
		/* Edge-triggered: a short read drained the socket (new bytes bring a new edge), unless a FIN
		 * is queued behind them, which only the next read shows. */
		if (c->len < c->cap && !(events & (EPOLLRDHUP | EPOLLHUP))) {
			conn_set(c, CF_C_RD, false);
			break;
		}
		if (c->len >= cap) {
			conn_set(c, CF_C_RD, true);   /* stopped at the cap, not drained */
			break;
		}
	}
	if (c->len == 0)
		return;
	peek_decide(c, false);
}

void peek_timer(struct sk_loop *l, struct sk_timer *t)
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


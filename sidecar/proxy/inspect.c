/* sidecar/proxy/inspect.c — a TLS connection an `inspect: true` rule allowed (internal.h): instead of the
 * relay, the TLS bridge (inspect/bridge.h) terminates the agent's TLS and opens verified TLS to the
 * server, and the HTTP/1 filter (inspect_h1.h) or the HTTP/2 one (inspect/h2_filter.h), by the protocol
 * the two ends agreed on, judges every request inside. The connection keeps its one
 * allow line (with "inspected":true) at its end; each refused request gets a deny line of its own; a
 * bridge that fails (the server's certificate, the agent's TLS) ends with a deny line naming the bridge's
 * reason, never with the bytes passed through. Budgets count plaintext bytes. */
#include "sidecar/proxy/internal.h"

#include "common/http_path.h"
#include "sidecar/core/secret_swap.h"
#include "sidecar/inspect/bridge.h"
#include "sidecar/inspect/filter.h"
#include "sidecar/inspect/h2_filter.h"
#include "sidecar/proxy/inspect_h1.h"
#include "sidecar/proxy/tls_hello.h"

static const char *metrics_proto(const struct conn *c)
{
	return c->proto ? c->proto : "tcp";
}

static uint64_t up_bytes(const struct conn *c)
{
	return c->bridge ? sk_bridge_stats(c->bridge).to_upstream : c->bytes_out;
}

static uint64_t down_bytes(const struct conn *c)
{
	return c->bridge ? sk_bridge_stats(c->bridge).to_client : c->bytes_in;
}

/* One deny line about request `request` while the connection itself stays allowed (its own line comes at
 * its end): decision and reason are put back after. */
static void request_line(struct conn *c, uint32_t request)
{
	struct sk_sidecar *sc = c->px->sc;
	c->request = request;
	if (sc->metrics)
		sk_metrics_conn(sc->metrics, c->decision, c->reason, conn_rule_label(c), metrics_proto(c));
	conn_audit(c, "deny", down_bytes(c), up_bytes(c));
	c->decision = "allow";
	c->reason = "rule";
}

/* The filter's judge (inspect_h1.h): the rule's request rules, as on plain HTTP (a reload re-matches the
 * name; mode audit writes its would_deny line and allows). */
static const char *h1_judge(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
			    const struct sk_req_denial **d)
{
	struct conn *c = ctx;
	c->request = request;
	sk_req_denial_free(c->req_denial);
	c->req_denial = NULL;
	if (check_request_rules(c, head, n, h) == V_ALLOW)
		return NULL;
	const char *why = c->reason;
	request_line(c, request);
	*d = c->req_denial;
	return why;
}

static void copy_cut(char *dst, size_t cap, const char *src)
{
	(void)snprintf(dst, cap, "%s", src ? src : "");
}

/* The filter's own refusals (Host != SNI, framing): a deny line each; mode audit lets them through. */
static bool h1_refuse(void *ctx, uint32_t request, const char *reason, const char *method, const char *path)
{
	struct conn *c = ctx;
	sk_req_denial_free(c->req_denial);
	c->req_denial = calloc(1, sizeof(*c->req_denial));   /* the line's method and path; NULL: without */
	if (c->req_denial) {
		copy_cut(c->req_denial->method, sizeof(c->req_denial->method), method);
		copy_cut(c->req_denial->path, sizeof(c->req_denial->path), path);
	}
	enum verdict v = verdict_deny(c, reason);
	request_line(c, request);
	sk_req_denial_free(c->req_denial);
	c->req_denial = NULL;
	return v == V_DENY;
}

/* The name the bridge and the filter check against: the SNI (an address when there was none). */
static const char *conn_sni(const struct conn *c, char addr[SK_ADDR_STRLEN])
{
	if (conn_has(c, CF_HAS_NAME) && c->name[0])
		return c->name;
	sk_addr_format(&c->dst, addr);
	return addr;
}

/* Whether a request's host (parsed as an HTTP/1 Host: a name, normalised, or an address) is the name the
 * connection's TLS was decided on. */
static bool host_is_sni(const struct conn *c, const struct sk_http_head *h)
{
	/* conn_sni's two cases, read from the connection itself rather than formatted and parsed back */
	if (conn_has(c, CF_HAS_NAME) && c->name[0])
		return !h->host_is_ip && strcasecmp(h->host, c->name) == 0;
	return h->host_is_ip && sk_addr_equal(&h->ip, &c->dst);
}

/* The policy's secrets and their values now (core/secret_swap.h); n 0 when it has none. */
static struct sk_swap_set swap_set(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_swap_set s = { .secrets = sc->policy->secrets, .n = sc->policy->n_secrets };
	if (s.n)
		s.values = sk_sidecar_secrets(sc);
	return s;
}

/* A request carrying a secret's placeholder (or value) where the secret may not go: its deny line, and a
 * log line saying which secret and where (never the value). true: refuse it (mode enforce). */
static bool misuse(struct conn *c, uint32_t request, const struct sk_swap_set *s, const struct sk_swap_misuse *m,
		   const char *method)
{
	char text[256];
	sk_log(SK_LOG_WARN, "proxy: credential_misuse on %s: %s", c->name, sk_swap_misuse_text(s, m, text, sizeof(text)));
	return h1_refuse(c, request, "credential_misuse", method, NULL);
}

/* The HTTP/2 filter's judge. The request is written as the HTTP/1 head it stands for and read back by the
 * HTTP/1 head parser, so that one parser, one path normaliser and one rule check decide both protocols:
 * nothing an HTTP/2 client sends can be read more leniently than the same request over HTTP/1.1. */
static enum sk_h2_decision h2_judge(void *ctx, const struct sk_h2_request *rq, int *status, struct sk_strbuf *body,
				    const char **reason)
{
	struct conn *c = ctx;
	uint32_t request = c->request + 1;
	char head[SK_HTTP_PATH_MAX + SK_DOMAIN_MAX + 64];
	int n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", rq->method, rq->path, rq->authority);
	struct sk_http_head h;
	const char *bad = n < 0 || (size_t)n >= sizeof(head) ? "http_head_too_big" : NULL;
	if (!bad) {
		switch (sk_http_head_parse((const uint8_t *)head, (size_t)n, &h)) {
		case SK_HTTP_OK: break;
		case SK_HTTP_NO_HOST: bad = "http_no_host"; break;
		case SK_HTTP_BAD_HOST: bad = "http_bad_host"; break;
		case SK_HTTP_HOST_MISMATCH: bad = "http_host_mismatch"; break;   /* an absolute :path */
		default: bad = "http_malformed"; break;
		}
	}
	if (bad) {
		if (!h1_refuse(c, request, bad, rq->method, NULL))
			return SK_H2_ALLOW;
		*status = 400;
		*reason = bad;
		sk_h2_denial_body(body, *reason, c->rule_label, rq);
		return SK_H2_DENY;
	}
	if (!host_is_sni(c, &h)) {
		if (!h1_refuse(c, request, "host_sni_mismatch", rq->method, rq->path))
			return SK_H2_ALLOW;
		*status = 421;
		*reason = "host_sni_mismatch";
		sk_h2_denial_body(body, *reason, c->rule_label, rq);
		return SK_H2_DENY;
	}
	const struct sk_req_denial *d = NULL;
	const char *why = h1_judge(c, request, (const uint8_t *)head, (size_t)n, &h, &d);
	if (!why) {
		/* a secret's placeholder or value in the path or query is never swapped: misuse */
		struct sk_swap_set s = swap_set(c);
		struct sk_swap_misuse m = { 0 };
		if (s.n && sk_swap_scan(&s, (const uint8_t *)rq->path, strlen(rq->path), SK_SWAP_AT_PATH, &m) &&
		    misuse(c, request, &s, &m, rq->method)) {
			*status = 403;
			*reason = "credential_misuse";
			sk_h2_denial_body(body, *reason, c->rule_label, rq);
			return SK_H2_DENY;
		}
		return SK_H2_ALLOW;
	}
	*status = 403;
	*reason = d && d->detail ? d->detail : why;
	/* the body names the path as it was judged (normalised; a refused one without its query) */
	struct sk_h2_request shown = *rq;
	if (d)
		shown.path = d->path;
	sk_h2_denial_body(body, *reason, c->rule_label, &shown);
	return SK_H2_DENY;
}

/* The values a secret may send to this connection's host go into the response mask (each at most once;
 * a rotated value joins the old one, which the server may still echo). false: out of memory. */
static bool mask_values(struct conn *c, struct sk_swap_mask *mk, const struct sk_swap_set *s, const char *host)
{
	for (size_t i = 0; i < s->n && s->values; i++) {
		struct sk_swap_set one = { .secrets = &s->secrets[i], .n = 1, .values = &s->values[i] };
		if (s->values[i].val && sk_swap_host_listed(&one, host) &&
		    sk_swap_mask_add(mk, s->values[i].val, s->values[i].len) < 0) {
			sk_log(SK_LOG_WARN, "proxy: inspected connection to %s: out of memory masking a secret", c->name);
			return false;
		}
	}
	return true;
}

/* The HTTP/1 filter's rewrite hook: the placeholders of `secrets:` swapped for their values in the
 * headers and toward the hosts and paths each secret lists; anything else carrying one is refused. Toward
 * a host a secret lists, the head also asks for the response whole and identity-coded, the form the
 * response mask searches (sk_swap_h1_body_form). */
static int h1_rewrite(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
		      struct sk_strbuf *out, const char **reason)
{
	struct conn *c = ctx;
	struct sk_swap_set s = swap_set(c);
	if (!s.n)
		return 0;
	char addr[SK_ADDR_STRLEN];
	const char *host = conn_sni(c, addr);
	struct sk_swap_misuse m = { 0 };
	enum sk_swap_result r = sk_swap_h1_head(&s, host, head, n, out, &m);
	if ((r == SK_SWAP_NONE || r == SK_SWAP_SWAPPED) && sk_swap_host_listed(&s, host)) {
		if (!mask_values(c, sk_h1_filter_mask(c->filter), &s, host)) {
			r = SK_SWAP_NOMEM;
		} else {
			struct sk_strbuf form = { 0 };
			const uint8_t *cur = r == SK_SWAP_SWAPPED ? (const uint8_t *)out->p : head;
			size_t curlen = r == SK_SWAP_SWAPPED ? out->len : n;
			enum sk_swap_result f = sk_swap_h1_body_form(cur, curlen, &form);
			if (f == SK_SWAP_SWAPPED) {
				sk_strbuf_reset(out);
				(void)sk_strbuf_put(out, form.p, form.len);
				r = sk_strbuf_ok(out) < 0 ? SK_SWAP_NOMEM : SK_SWAP_SWAPPED;
			} else if (f != SK_SWAP_NONE) {
				r = SK_SWAP_NOMEM;
			}
			if (form.p)
				explicit_bzero(form.p, form.cap);   /* it holds the swapped value */
			sk_strbuf_free(&form);
		}
	}
	if (r == SK_SWAP_NONE)
		return 0;
	if (r == SK_SWAP_SWAPPED)
		return 1;
	if (out->p) {
		explicit_bzero(out->p, out->cap);
		sk_strbuf_reset(out);
	}
	*reason = "credential_misuse";
	if (r != SK_SWAP_MISUSE)   /* a head the swap cannot read safely, or out of memory: refused all the same */
		return h1_refuse(c, request, "credential_misuse", h->method, NULL) ? -1 : 0;
	return misuse(c, request, &s, &m, h->method) ? -1 : 0;
}

/* The filters' body hook: the body prefix a request sends carries no placeholder or value (a credential
 * goes in the headers a secret lists, never in a body). Its deny line here, once per body. */
static int body_scan(void *ctx, uint32_t request, const char *method, struct sk_swap_body *scan, const uint8_t *p,
		     size_t n)
{
	struct conn *c = ctx;
	struct sk_swap_set s = swap_set(c);
	struct sk_swap_misuse m = { 0 };
	if (!s.n || !sk_swap_body_scan(scan, &s, p, n, &m))
		return 0;
	return misuse(c, request, &s, &m, method) ? -1 : 0;
}

/* The HTTP/2 filter's body hook: the same scan, per stream (its line numbered as the last request). */
static int h2_body(void *ctx, const struct sk_h2_request *rq, struct sk_swap_body *scan, const uint8_t *p, size_t n)
{
	struct conn *c = ctx;
	return body_scan(c, c->request, rq->method, scan, p, n);
}

/* The HTTP/2 filter's header hook: the same swap, one field at a time; a swapped field goes out
 * never-indexed (no HPACK table keeps the value). A refusal writes its credential_misuse line here, so
 * the filter's own report of the reset (h2_refused) is not written twice. */
static int h2_header(void *ctx, const struct sk_h2_request *rq, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, struct sk_strbuf *new_value, bool *never_index)
{
	struct conn *c = ctx;
	struct sk_swap_set s = swap_set(c);
	if (!s.n)
		return 0;
	char addr[SK_ADDR_STRLEN];
	struct sk_swap_misuse m = { 0 };
	const char *host = conn_sni(c, addr);
	enum sk_swap_result r = sk_swap_h2_header(&s, host, rq->path, strlen(rq->path), (const char *)name,
						  namelen, (const char *)value, valuelen, new_value, never_index, &m);
	if (r == SK_SWAP_SWAPPED && c->h2_mask && !mask_values(c, c->h2_mask, &s, host))
		r = SK_SWAP_NOMEM;   /* a rotated value the response mask must know first */
	if (r == SK_SWAP_NONE && c->h2_mask) {
		/* toward a masked host: the response whole and identity-coded (sk_swap_h2_body_form) */
		int form = sk_swap_h2_body_form((const char *)name, namelen);
		if (form == 1)
			(void)sk_strbuf_puts(new_value, "identity");
		if (form)
			return sk_strbuf_ok(new_value) < 0 ? -1 : form;
	}
	if (r == SK_SWAP_NONE)
		return 0;
	if (r == SK_SWAP_SWAPPED)
		return 1;
	bool enforce = r == SK_SWAP_MISUSE ? misuse(c, c->request + 1, &s, &m, rq->method)
					   : h1_refuse(c, c->request + 1, "credential_misuse", rq->method, NULL);
	if (!enforce)
		return 0;
	conn_set(c, CF_H2_LINE_DONE, true);
	return -1;
}

/* A stream the HTTP/2 filter reset without judging it (malformed, a tunnel): its deny line. The stream
 * is reset in mode audit too (it cannot be sent on); the line then says would_deny like every other. */
static void h2_refused(void *ctx, const struct sk_h2_request *rq, const char *reason)
{
	struct conn *c = ctx;
	if (conn_has(c, CF_H2_LINE_DONE)) {   /* the header hook's refusal: its line is written */
		conn_set(c, CF_H2_LINE_DONE, false);
		return;
	}
	(void)h1_refuse(c, c->request + 1, reason, rq->method[0] ? rq->method : NULL, rq->path[0] ? rq->path : NULL);
}

/* The protocol the agent and the server agreed on picks the filter, made here (the connection owns it,
 * the bridge borrows it): HTTP/2 or HTTP/1 (also when nothing was agreed); anything else has no reader,
 * and the bridge fails it (alpn_mismatch). */
static struct sk_pt_filter *select_filter(void *ctx, const char *alpn)
{
	struct conn *c = ctx;
	struct sk_err err = { 0 };
	char addr[SK_ADDR_STRLEN];
	struct sk_swap_set s = swap_set(c);
	if (strcmp(alpn, "h2") == 0) {
		struct sk_h2_filter_cfg cfg = { .judge = h2_judge, .header = h2_header, .refused = h2_refused, .ctx = c,
						 .header_refusal_status = 403,
						 .header_refusal_reason = "credential_misuse" };
		if (s.n)
			cfg.body = h2_body;   /* without secrets, DATA stays zero-copy */
		if (s.n && sk_swap_host_listed(&s, conn_sni(c, addr))) {
			/* a host a secret lists may echo its value: responses masked (h2_filter.h) */
			if (!(c->h2_mask = calloc(1, sizeof(*c->h2_mask))) ||
			    !mask_values(c, c->h2_mask, &s, conn_sni(c, addr)))
				return NULL;
			cfg.mask = c->h2_mask;
		}
		if (sk_h2_filter_new(&cfg, &c->filter, &err) < 0) {
			sk_log(SK_LOG_WARN, "proxy: inspected connection to %s: %s", c->name, err.msg);
			return NULL;
		}
		return c->filter;
	}
	if (alpn[0] && strcmp(alpn, "http/1.1") != 0)
		return NULL;
	struct sk_h1_hooks hooks = { .ctx = c, .judge = h1_judge, .refuse = h1_refuse, .rewrite = h1_rewrite,
				     .body = body_scan };
	const char *sni = conn_sni(c, addr);
	if (sk_h1_filter_new(sni, c->rule_label, &hooks, &c->filter, &err) < 0) {
		sk_log(SK_LOG_WARN, "proxy: inspected connection to %s: %s", c->name, err.msg);
		return NULL;
	}
	/* a host a secret lists may echo its value: every response on the connection is masked */
	if (s.n && sk_swap_host_listed(&s, sni) && !mask_values(c, sk_h1_filter_mask(c->filter), &s, sni)) {
		c->filter->ops->free(c->filter);
		c->filter = NULL;
		return NULL;
	}
	return c->filter;
}

void bridge_free(struct conn *c)
{
	sk_bridge_free(c->bridge);   /* first: it borrows the filter */
	c->bridge = NULL;
	if (c->filter)
		c->filter->ops->free(c->filter);
	c->filter = NULL;
	if (c->h2_mask) {
		sk_swap_mask_free(c->h2_mask);
		free(c->h2_mask);
		c->h2_mask = NULL;
	}
}

/* Charges the plaintext moved since the last look to the rule's budget; true when an enforced budget is
 * spent (the connection then ends). */
static bool bridge_charge(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_bridge_stats s = sk_bridge_stats(c->bridge);
	uint64_t up = s.to_upstream - c->br_up, down = s.to_client - c->br_down;
	c->br_up = s.to_upstream;
	c->br_down = s.to_client;
	if (sc->metrics && (up || down))
		sk_metrics_bytes(sc->metrics, up, down);
	if (!c->budget)
		return false;
	uint64_t now = sk_loop_now_ms(sc->loop);
	if (up)
		(void)sk_budget_charge(c->budget, SK_BUDGET_SENT, up, now);
	if (down)
		(void)sk_budget_charge(c->budget, SK_BUDGET_RECEIVED, down, now);
	if (!sk_budget_spent(c->budget, now))
		return false;
	if (sc->policy->mode == SK_MODE_ENFORCE)
		return true;
	if (!conn_has(c, CF_BUDGET_OVER)) {
		/* mode audit: what enforce would have done, once; the connection goes on (as the relay's) */
		conn_set(c, CF_BUDGET_OVER, true);
		c->decision = "would_deny";
		c->reason = "budget_exhausted";
		c->budget->refused++;
		if (sc->metrics)
			sk_metrics_conn(sc->metrics, "would_deny", c->reason, conn_rule_label(c), metrics_proto(c));
		conn_audit(c, "deny", s.to_client, s.to_upstream);
	}
	return false;
}

/* The end of a bridged connection; frees c. reset: both sides get a reset (a cut stream must not look
 * whole). */
static void bridge_end(struct conn *c, const char *event, bool reset)
{
	struct sk_sidecar *sc = c->px->sc;
	c->bytes_in = down_bytes(c);
	c->bytes_out = up_bytes(c);
	if (strcmp(event, "deny") == 0 && sc->metrics)
		sk_metrics_conn(sc->metrics, "deny", c->reason, conn_rule_label(c), metrics_proto(c));
	c->request = 0;
	/* the last refused request's method and path belong to its own line, not the connection's */
	if (strcmp(event, "conn") == 0) {
		sk_req_denial_free(c->req_denial);
		c->req_denial = NULL;
	}
	conn_audit(c, event, c->bytes_in, c->bytes_out);
	if (reset) {
		sk_loop_forget(sc->loop, &c->cio);
		sk_loop_forget(sc->loop, &c->uio);
		close_rst(c->cfd);
		close_rst(c->ufd);
		c->cfd = c->ufd = -1;
	}
	c->st = CS_CLOSING;
	conn_free(c);
}

void bridge_shutdown(struct conn *c)
{
	c->reason = c->reason ? c->reason : "shutdown";
	c->bytes_in = down_bytes(c);
	c->bytes_out = up_bytes(c);
	conn_audit(c, "conn", c->bytes_in, c->bytes_out);
	c->st = CS_CLOSING;
}

static uint32_t interest(uint32_t want)
{
	return want | EPOLLET | (want & EPOLLIN ? EPOLLRDHUP : 0);
}

static void bridge_run(struct conn *c, int fd, uint32_t events)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_loop *l = sc->loop;
	struct sk_bridge_want w = { 0 };
	struct sk_err err = { 0 };
	int rc = sk_bridge_step(c->bridge, fd, events, &w, &err);
	bool spent = bridge_charge(c);
	if (rc < 0) {
		/* fails closed: the agent got an alert (or the filter's answer), the server nothing more */
		const char *why = sk_bridge_reason(c->bridge);
		sk_log(SK_LOG_DEBUG, "proxy: inspected connection to %s: %s", c->name, err.msg);
		c->decision = "deny";
		c->reason = why ? why : "client_tls";
		bridge_end(c, "deny", false);
		return;
	}
	if (rc == 0) {
		/* Shaken hands and gone without a request: a client pinning the real server's key does this
		 * (curl's --pinnedpubkey, SDKs with pinned certificates). Its line says so, for the operator
		 * who wonders why that tool fails. */
		if (sk_bridge_stats(c->bridge).to_upstream == 0 && c->request == 0)
			c->reason = "client_no_request";
		bridge_end(c, "conn", false);
		return;
	}
	if (spent) {
		c->decision = "deny";
		c->reason = "budget_exhausted";
		c->budget->refused++;
		bridge_end(c, "deny", true);
		return;
	}
	/* Edge-triggered, re-armed after every step: a MOD looks at the fd's readiness again, so a step that
	 * yielded with EPOLLOUT on a writable fd is called again at once. */
	if (sk_loop_mod(l, &c->cio, interest(w.client), NULL) < 0 || sk_loop_mod(l, &c->uio, interest(w.upstream), NULL) < 0) {
		c->reason = "internal_error";
		bridge_end(c, "conn", true);
		return;
	}
	if (sc->limits.idle_timeout_ms)
		(void)sk_timer_arm(l, &c->timer, sc->limits.idle_timeout_ms);
}

static void bridge_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)l;
	bridge_run(io->ctx, io->fd, events);
}

/* No byte either way for the idle timeout: the same end as an idle relay's. */
static void bridge_idle(struct sk_loop *l, struct sk_timer *t)
{
	(void)l;
	bridge_end(t->ctx, "conn", true);
}

/* The upstream connect completed: the bridge takes both fds (the agent's ClientHello, read by the peek,
 * is handed to it). */
void bridge_start(struct conn *c)
{
	struct sk_sidecar *sc = c->px->sc;
	struct sk_loop *l = sc->loop;
	struct sk_err err = { 0 };
	sk_timer_cancel(l, &c->timer);
	c->st = CS_BRIDGE;
	if (!sc->inspect_env) {
		/* no CA or no trust bundle at start: refused, never spliced unread */
		c->decision = "deny";
		c->reason = "inspect_unavailable";
		bridge_end(c, "deny", true);
		return;
	}
	char addr[SK_ADDR_STRLEN];
	const char *sni = conn_sni(c, addr);
	struct sk_bridge_cfg cfg = { .sni = sni, .client_prefix = c->buf, .client_prefix_len = c->len,
				     .select_filter = select_filter, .ctx = c };
	/* The agent's ALPN offer: the server is offered only what the agent can speak. A list too long to
	 * keep leaves the configured one (the bridge then refuses a protocol the agent did not offer). */
	struct sk_hello_alpn alpn;
	char hello_sni[SK_DOMAIN_MAX + 1];
	if (sk_tls_hello_parse_alpn(c->buf, c->len, c->len, hello_sni, &alpn) != SK_HELLO_MALFORMED && !alpn.too_long) {
		cfg.client_alpn_known = true;
		cfg.client_alpn = alpn.len ? alpn.list : NULL;
		cfg.client_alpn_len = alpn.len;
	}
	if (sk_bridge_new(sc->inspect_env, &cfg, c->cfd, c->ufd, &c->bridge, &err) < 0) {
		sk_log(SK_LOG_WARN, "proxy: inspected connection to %s: %s", sni, err.msg);
		c->decision = "deny";
		c->reason = "inspect_unavailable";
		bridge_end(c, "deny", true);
		return;
	}
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
	c->cio.cb = bridge_io;
	c->uio.cb = bridge_io;
	sk_timer_init(&c->timer, bridge_idle, c);
	bridge_run(c, -1, 0);
}

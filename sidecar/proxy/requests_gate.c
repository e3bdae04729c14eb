/* sidecar/proxy/requests_gate.c — request rules on plain HTTP (requests_gate.h). */
#include "sidecar/proxy/requests_gate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http_path.h"
#include "common/json_str.h"
#include "common/strbuf.h"
#include "policy/requests.h"
#include "sidecar/core/secret_swap.h"

/* The request-target of a head whose request line the head parser accepted: between the first two
 * spaces of the first line. */
static void target_of(const uint8_t *head, size_t n, const char **t, size_t *len)
{
	const uint8_t *eol = memchr(head, '\r', n);
	size_t line = eol ? (size_t)(eol - head) : n;
	const uint8_t *sp1 = memchr(head, ' ', line);
	*t = "";
	*len = 0;
	if (!sp1)
		return;
	const uint8_t *start = sp1 + 1;
	const uint8_t *sp2 = memchr(start, ' ', line - (size_t)(start - head));
	*t = (const char *)start;
	*len = sp2 ? (size_t)(sp2 - start) : line - (size_t)(start - head);
}

char *sk_req_answer(int status, const char *status_text, const char *detail, const char *rule_label,
		    const char *method, const char *host, const char *path, bool close, size_t *len)
{
	struct sk_strbuf body = { 0 }, msg = { 0 };
	char *out = NULL;
	(void)sk_strbuf_puts(&body, "{\"error\":\"stockade_denied\",\"reason\":");
	(void)sk_json_str_buf(&body, detail);
	(void)sk_strbuf_puts(&body, ",\"rule\":");
	(void)sk_json_str_buf(&body, rule_label ? rule_label : "");
	(void)sk_strbuf_puts(&body, ",\"method\":");
	(void)sk_json_str_buf(&body, method ? method : "");
	(void)sk_strbuf_puts(&body, ",\"host\":");
	(void)sk_json_str_buf(&body, host ? host : "");
	(void)sk_strbuf_puts(&body, ",\"path\":");
	(void)sk_json_str_buf(&body, path ? path : "");
	(void)sk_strbuf_puts(&body, "}\n");
	if (sk_strbuf_ok(&body) == 0) {
		/* detail is one of our own tokens ([a-z_]), safe in a header as it is */
		(void)sk_strbuf_printf(&msg,
				       "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
				       "Content-Length: %zu\r\nx-stockade-reason: %s\r\n%s\r\n",
				       status, status_text, body.len, detail, close ? "Connection: close\r\n" : "");
		(void)sk_strbuf_put(&msg, body.p, body.len);
		out = sk_strbuf_steal(&msg, len);
	}
	sk_strbuf_free(&body);
	sk_strbuf_free(&msg);
	return out;
}

/* The 403: JSON body (every string escaped: method, host and path come from the agent), the reason in a
 * header too, and Connection: close (the proxy ends the connection after a denied request). */
static void build_answer(struct sk_req_denial *d, const char *rule_label, const char *host)
{
	d->answer = sk_req_answer(403, "Forbidden", d->detail, rule_label, d->method, host, d->path, true,
				  &d->answer_len);
}

/* dst[0..cap) = src[0..n) cut to fit, NUL-terminated. */
static void copy_cut(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

const char *sk_req_gate_judge(const struct sk_rule *r, const char *rule_label, const uint8_t *head, size_t n,
			      const struct sk_http_head *h, struct sk_req_denial **out)
{
	*out = NULL;
	if (!r->requests)
		return NULL;
	const char *t;
	size_t tlen;
	target_of(head, n, &t, &tlen);
	char path[SK_HTTP_PATH_MAX];
	enum sk_path_result pr = sk_http_path_normalize(t, tlen, h->host_is_ip ? NULL : h->host, path, sizeof(path), NULL);
	struct sk_req_decision dec = { .allow = false, .index = -1 };
	/* `access: read-only` promises that nothing but reads goes out, and an upgrade (a websocket) opens a
	 * channel both ways behind one GET: the shorthand never allows one. A request rule that names the
	 * path with GET does (the policy's author saw that path). */
	bool upgrade_ro = h->upgrade && r->requests->access == SK_ACCESS_READ_ONLY;
	if (pr == SK_PATH_OK && !upgrade_ro) {
		sk_requests_decide(r->requests, h->method, path, &dec);
		if (dec.allow)
			return NULL;
	}
	const char *reason = pr == SK_PATH_OK ? "request_denied" : "request_bad_path";
	struct sk_req_denial *d = calloc(1, sizeof(*d));
	if (!d)
		return reason;
	copy_cut(d->method, sizeof(d->method), h->method, strlen(h->method));
	if (pr == SK_PATH_OK) {
		copy_cut(d->path, sizeof(d->path), path, strlen(path));
		d->detail = upgrade_ro ? "upgrade_read_only" : "no_request_rule";
	} else {
		/* As sent, without the query: its values may be secrets, and they decide nothing. */
		const char *q = memchr(t, '?', tlen);
		copy_cut(d->path, sizeof(d->path), t, q ? (size_t)(q - t) : tlen);
		d->detail = sk_path_result_name(pr);
	}
	char ip[SK_ADDR_STRLEN];
	if (h->host_is_ip)
		sk_addr_format(&h->ip, ip);
	build_answer(d, rule_label, h->host_is_ip ? ip : h->host);
	*out = d;
	return reason;
}

const char *sk_req_gate_conn(const struct sk_rule *r, enum sk_proto seen)
{
	if (!r || seen == SK_PROTO_HTTP)
		return NULL;
	if (r->inspect)
		return seen == SK_PROTO_TLS ? NULL : "request_unreadable";   /* TLS: the bridge reads it */
	return r->requests ? "request_unreadable" : NULL;
}

const char *sk_req_gate_credentials(const struct sk_policy *p, const struct sk_secret_value *values,
				    const uint8_t *head, size_t n)
{
	if (!p || !p->n_secrets)
		return NULL;
	struct sk_swap_set set = { p->secrets, p->n_secrets, values };
	struct sk_swap_misuse m;
	return sk_swap_scan(&set, head, n, SK_SWAP_AT_PLAIN_HTTP, &m) ? "credential_misuse" : NULL;
}

void sk_req_denial_free(struct sk_req_denial *d)
{
	if (!d)
		return;
	free(d->answer);
	free(d);
}

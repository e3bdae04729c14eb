/* sidecar/proxy/inspect_h1_test.c — the HTTP/1 filter of inspected connections, fed chunks the way the
 * bridge would: every request judged (rule: GET and HEAD under /repos/acme), Host checked against the SNI,
 * a refused request answered in order between responses, a request smuggled behind an allowed one in
 * the same record refused, heads split over records and pipelined heads, bodies and framing errors; the
 * secrets' response mask (a value across records and chunks, compressed bodies refused) and the body
 * scan (a placeholder cut anywhere ends the connection). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "sidecar/proxy/inspect_h1.h"

static const char policy_text[] =
	"version: 1\n"
	"egress:\n"
	"  - host: api.example.com\n"
	"    inspect: true\n"
	"    name: gh\n"
	"    requests:\n"
	"      - { methods: [GET, HEAD], paths: [\"/repos/acme/**\"] }\n";

struct fx {
	struct sk_policy *pol;
	struct sk_pt_filter *f;
	struct sk_req_denial *d;
	char reasons[512];         /* every refusal's reason, comma-separated */
	uint32_t last_request;
	bool audit_mode;
	struct sk_pt_out out;
};

static const char *judge(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
			 const struct sk_req_denial **d)
{
	struct fx *x = ctx;
	sk_req_denial_free(x->d);
	x->d = NULL;
	const char *why = sk_req_gate_judge(&x->pol->rules[0], "gh", head, n, h, &x->d);
	if (why) {
		size_t l = strlen(x->reasons);
		(void)snprintf(x->reasons + l, sizeof(x->reasons) - l, "%s%s#%u", l ? "," : "", why, request);
	}
	*d = x->d;
	return x->audit_mode ? NULL : why;
}

static bool refuse(void *ctx, uint32_t request, const char *reason, const char *method, const char *path)
{
	(void)method;
	(void)path;
	struct fx *x = ctx;
	size_t l = strlen(x->reasons);
	(void)snprintf(x->reasons + l, sizeof(x->reasons) - l, "%s%s#%u", l ? "," : "", reason, request);
	x->last_request = request;
	return !x->audit_mode;
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	struct sk_diags d = { 0 };
	int rc = sk_policy_load_buffer_ex("t.yaml", policy_text, sizeof(policy_text) - 1, -1, SK_LOAD_NO_FILE_CHECKS,
					  &x->pol, &d);
	sk_diags_free(&d);
	if (rc < 0)
		return rc;
	struct sk_h1_hooks hooks = { .ctx = x, .judge = judge, .refuse = refuse };
	struct sk_err err = { 0 };
	if (sk_h1_filter_new("api.example.com", "gh", &hooks, &x->f, &err) < 0)
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	x->f->ops->free(x->f);
	sk_req_denial_free(x->d);
	sk_pt_out_free(&x->out);
	sk_policy_free(x->pol);
	free(x);
	return 0;
}

/* Feeds one chunk from the agent; what went on into to_peer (a PASS is copied there too). */
static enum sk_pt_verdict client(struct fx *x, const char *s, struct sk_strbuf *to_peer, struct sk_strbuf *to_agent)
{
	sk_pt_out_reset(&x->out);
	enum sk_pt_verdict v = x->f->ops->from_client(x->f, (const uint8_t *)s, strlen(s), &x->out);
	if (v == SK_PT_PASS) {
		assert_int_equal(x->out.to_peer.len + x->out.to_sender.len, 0);
		(void)sk_strbuf_puts(to_peer, s);
	} else {
		(void)sk_strbuf_put(to_peer, x->out.to_peer.p, x->out.to_peer.len);
	}
	(void)sk_strbuf_put(to_agent, x->out.to_sender.p, x->out.to_sender.len);
	return v;
}

static enum sk_pt_verdict server(struct fx *x, const char *s, struct sk_strbuf *to_agent)
{
	sk_pt_out_reset(&x->out);
	enum sk_pt_verdict v = x->f->ops->from_server(x->f, (const uint8_t *)s, strlen(s), &x->out);
	if (v == SK_PT_PASS)
		(void)sk_strbuf_puts(to_agent, s);
	else
		(void)sk_strbuf_put(to_agent, x->out.to_peer.p, x->out.to_peer.len);
	assert_int_equal(x->out.to_sender.len, 0);
	return v;
}

static const char *str(struct sk_strbuf *b)
{
	return b->p ? b->p : "";
}

#define GET_OK "GET /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
#define RESP_OK "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

static void test_allowed_request_passes_without_a_copy(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, GET_OK, &up, &down), SK_PT_PASS);
	assert_int_equal(server(x, RESP_OK, &down), SK_PT_PASS);
	assert_string_equal(str(&up), GET_OK);
	assert_string_equal(str(&down), RESP_OK);
	assert_string_equal(x->reasons, "");
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_denied_request_is_answered_and_the_connection_goes_on(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "DELETE /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", &up, &down),
			 SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_non_null(strstr(str(&down), "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(strstr(str(&down), "x-stockade-reason: no_request_rule\r\n"));
	assert_non_null(strstr(str(&down), "\"reason\":\"no_request_rule\""));
	assert_null(strstr(str(&down), "Connection: close"));   /* no body: the connection goes on */
	assert_false(x->out.close_after);
	assert_string_equal(x->reasons, "request_denied#1");
	sk_strbuf_reset(&down);
	assert_int_equal(client(x, GET_OK, &up, &down), SK_PT_PASS);
	assert_string_equal(str(&up), GET_OK);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_request_smuggled_behind_an_allowed_one(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	/* one record: an allowed GET, then a POST the rule does not allow */
	assert_int_equal(client(x, GET_OK "POST /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", &up, &down),
			 SK_PT_EMIT);
	assert_string_equal(str(&up), GET_OK);   /* only the GET went on */
	assert_int_equal(down.len, 0);           /* the 403 waits for the GET's response */
	assert_string_equal(x->reasons, "request_denied#2");
	/* the response, split; the 403 follows it, not inside it */
	assert_int_equal(server(x, "HTTP/1.1 200 OK\r\nContent-Le", &down), SK_PT_PASS);
	assert_int_equal(server(x, "ngth: 2\r\n\r\nok", &down), SK_PT_EMIT);
	assert_true(strncmp(str(&down), RESP_OK "HTTP/1.1 403 Forbidden\r\n", strlen(RESP_OK) + 24) == 0);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_head_split_over_records(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "GET /repos/ac", &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);   /* nothing goes on before the head is judged */
	assert_int_equal(client(x, "me/x HTTP/1.1\r\nHost: api.exa", &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_int_equal(client(x, "mple.com\r\n\r\n", &up, &down), SK_PT_EMIT);
	assert_string_equal(str(&up), GET_OK);
	/* and a denied one split the same way */
	sk_strbuf_reset(&up);
	assert_int_equal(client(x, "PUT /repos/acme/x HTTP/1.1\r\nHo", &up, &down), SK_PT_EMIT);
	assert_int_equal(client(x, "st: api.example.com\r\n\r\n", &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_string_equal(x->reasons, "request_denied#2");
	assert_int_equal(server(x, RESP_OK, &down), SK_PT_EMIT);
	assert_non_null(strstr(str(&down), RESP_OK "HTTP/1.1 403"));
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_pipelined_heads_and_their_responses(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	const char *three = "HEAD /repos/acme/a HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
			    "GET /repos/acme/b HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
			    "GET /orgs/evil HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
	assert_int_equal(client(x, three, &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, strlen(three) - strlen("GET /orgs/evil HTTP/1.1\r\nHost: api.example.com\r\n\r\n"));
	assert_null(strstr(str(&up), "/orgs/evil"));
	assert_string_equal(x->reasons, "request_denied#3");
	/* HEAD's response says a length but has no body; then a chunked one with a trailer */
	const char *resps = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
			    "HTTP/1.1 100 Continue\r\n\r\n"
			    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n";
	assert_int_equal(server(x, resps, &down), SK_PT_EMIT);
	size_t rl = strlen(resps);
	assert_memory_equal(str(&down), resps, rl);
	assert_true(strncmp(str(&down) + rl, "HTTP/1.1 403 Forbidden", 22) == 0);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_host_other_than_sni_is_misdirected(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "GET /repos/acme/x HTTP/1.1\r\nHost: evil.example.net\r\n\r\n", &up, &down),
			 SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_non_null(strstr(str(&down), "HTTP/1.1 421 Misdirected Request\r\n"));
	assert_non_null(strstr(str(&down), "\"reason\":\"host_sni_mismatch\""));
	assert_non_null(strstr(str(&down), "\"host\":\"evil.example.net\""));
	assert_string_equal(x->reasons, "host_sni_mismatch#1");
	/* absolute form naming another host too */
	sk_strbuf_reset(&down);
	assert_int_equal(client(x, "GET http://evil.example.net/repos/acme/x HTTP/1.1\r\nHost: evil.example.net\r\n\r\n",
				&up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_non_null(strstr(str(&down), " 421 "));
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_denied_request_with_a_body_ends_the_connection(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "POST /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n\r\nhel",
				&up, &down), SK_PT_EMIT);
	assert_non_null(strstr(str(&down), "Connection: close\r\n"));
	assert_true(x->out.close_after);
	/* nothing more goes on, however well framed */
	assert_int_equal(client(x, "lo" GET_OK, &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_ambiguous_framing_is_refused(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "GET /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 3\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_non_null(strstr(str(&down), "HTTP/1.1 400 Bad Request\r\n"));
	assert_string_equal(x->reasons, "http_te_cl#1");
	assert_true(x->out.close_after);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* A framing error outside a head (a bad trailer of an allowed request): the 400 names no method (the
 * tracker parsed no head for it; found by fuzz_inspect_h1 as an answer carrying stack bytes). */
static void test_framing_error_in_a_body_names_no_method(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	const char *req = "GET /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n";
	assert_int_equal(client(x, req, &up, &down), SK_PT_PASS);
	assert_int_equal(client(x, "0\r\nX: a\rb\r\n\r\n", &up, &down), SK_PT_EMIT);
	/* the last-chunk line went on (framing is passed element by element), the bad trailer never */
	assert_int_equal(up.len, strlen(req) + 3);
	assert_null(strstr(str(&up), "X: a"));
	assert_string_equal(x->reasons, "http_bad_chunk#2");
	assert_int_equal(down.len, 0);        /* the GET's response first */
	assert_int_equal(server(x, RESP_OK, &down), SK_PT_EMIT);
	assert_non_null(strstr(str(&down), RESP_OK "HTTP/1.1 400 Bad Request\r\n"));
	assert_non_null(strstr(str(&down), "\"method\":\"\""));
	assert_true(x->out.close_after);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_head_cut_short_never_goes_on(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "DELETE /repos/acme/x HTTP/1.1\r\nHost: api.exa", &up, &down), SK_PT_EMIT);
	sk_pt_out_reset(&x->out);
	assert_int_equal(x->f->ops->closed(x->f, true, &x->out), SK_PT_PASS);
	assert_int_equal(up.len + x->out.to_peer.len, 0);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_websocket_upgrade_is_refused(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "GET /repos/acme/ws HTTP/1.1\r\nHost: api.example.com\r\nUpgrade: websocket\r\n"
				   "Connection: Upgrade\r\n\r\n", &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_string_equal(x->reasons, "http_upgrade_unsupported#1");
	assert_true(x->out.close_after);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

static void test_mode_audit_lets_it_through(void **state)
{
	struct fx *x = *state;
	x->audit_mode = true;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "POST /repos/acme/x HTTP/1.1\r\nHost: evil.example.net\r\n\r\n", &up, &down),
			 SK_PT_PASS);
	assert_string_equal(x->reasons, "host_sni_mismatch#1,request_denied#1");
	assert_string_equal(str(&up), "POST /repos/acme/x HTTP/1.1\r\nHost: evil.example.net\r\n\r\n");
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* ---- secrets: the response mask and the body scan ---- */

#define VAL "s3cr3t-VALUE-1234"
#define STARS "*****************"
#define PLH "stockade-secret-gh"

static char *sec_hosts[] = { "api.example.com" };
static char *sec_in[] = { "authorization" };
static struct sk_secret sec[] = { { .name = "gh", .placeholder = PLH, .hosts = sec_hosts, .n_hosts = 1,
				    .in = sec_in, .n_in = 1 } };
static const struct sk_secret_value sec_val[] = { { VAL, sizeof(VAL) - 1 } };
static const struct sk_swap_set sec_set = { sec, 1, sec_val };

static int scan_body(void *ctx, uint32_t request, const char *method, struct sk_swap_body *scan, const uint8_t *p,
		     size_t n)
{
	struct fx *x = ctx;
	struct sk_swap_misuse m;
	if (!sk_swap_body_scan(scan, &sec_set, p, n, &m))
		return 0;
	size_t l = strlen(x->reasons);
	(void)snprintf(x->reasons + l, sizeof(x->reasons) - l, "%scredential_misuse#%u:%s", l ? "," : "", request,
		       method);
	return x->audit_mode ? 0 : -1;
}

/* A fresh filter with no request rules (every request may go), the body scan, and masking when asked. */
static struct sk_pt_filter *secret_filter(struct fx *x, bool masked)
{
	struct sk_h1_hooks hooks = { .ctx = x, .refuse = refuse, .body = scan_body };
	struct sk_err err = { 0 };
	struct sk_pt_filter *f = NULL;
	assert_int_equal(sk_h1_filter_new("api.example.com", "gh", &hooks, &f, &err), 0);
	if (masked)
		assert_int_equal(sk_swap_mask_add(sk_h1_filter_mask(f), VAL, sizeof(VAL) - 1), 0);
	return f;
}

/* Feeds s to the filter's server side cut every `cut` bytes, then the server's close; what the agent got. */
static void serve_cut(struct sk_pt_filter *f, const char *s, size_t cut, struct sk_strbuf *down, bool *closed)
{
	struct sk_pt_out o = { 0 };
	size_t n = strlen(s);
	*closed = false;
	for (size_t off = 0; off < n && !*closed; off += cut) {
		size_t k = off + cut > n ? n - off : cut;
		sk_pt_out_reset(&o);
		enum sk_pt_verdict v = f->ops->from_server(f, (const uint8_t *)s + off, k, &o);
		assert_int_not_equal(v, SK_PT_FAIL);
		if (v == SK_PT_PASS)
			(void)sk_strbuf_put(down, s + off, k);
		else
			(void)sk_strbuf_put(down, o.to_peer.p, o.to_peer.len);
		*closed = o.close_after;
	}
	sk_pt_out_free(&o);
}

static void feed_request(struct fx *x, struct sk_pt_filter *f, const char *req)
{
	sk_pt_out_reset(&x->out);
	assert_int_equal(f->ops->from_client(f, (const uint8_t *)req, strlen(req), &x->out), SK_PT_PASS);
}

/* A response echoing the value in a header and twice in a Content-Length body, then a chunked one whose
 * value straddles two chunks, cut at every size: the agent gets the same bytes with each value masked, the
 * same length (Content-Length and chunk sizes hold), and each response whole at its end. */
static void test_responses_are_masked_across_records_and_chunks(void **state)
{
	struct fx *x = *state;
	const char *resp = "HTTP/1.1 200 OK\r\nX-Echo: Bearer " VAL "\r\nContent-Length: 43\r\n\r\n"
			   "[" VAL "|" VAL "]abcdef"
			   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "9\r\nxs3cr3t-V\r\n9\r\nALUE-1234\r\n3\r\ns3c\r\n0\r\nX-T: " VAL "\r\n\r\n";
	const char *want = "HTTP/1.1 200 OK\r\nX-Echo: Bearer " STARS "\r\nContent-Length: 43\r\n\r\n"
			   "[" STARS "|" STARS "]abcdef"
			   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "9\r\nx********\r\n9\r\n*********\r\n3\r\ns3c\r\n0\r\nX-T: " STARS "\r\n\r\n";
	assert_int_equal(strlen(resp), strlen(want));
	for (size_t cut = 1; cut <= strlen(resp); cut++) {
		struct sk_pt_filter *f = secret_filter(x, true);
		feed_request(x, f, GET_OK GET_OK);
		struct sk_strbuf down = { 0 };
		bool closed;
		serve_cut(f, resp, cut, &down, &closed);
		/* no close needed: each response is released whole at its end */
		if (down.len != strlen(want) || memcmp(down.p, want, down.len) != 0)
			fail_msg("cut %zu: got %.*s", cut, (int)down.len, str(&down));
		assert_false(closed);
		f->ops->free(f);
		sk_strbuf_free(&down);
	}
}

/* Regression (fuzz_inspect_h1_mask): a record ending in the middle of a chunk, its last bytes a possible
 * start of the value, released the span's head and held the rest; the span's offset then wrapped below 0
 * and the next release wrote through an overflowed pointer (UBSan under clang). Every cut, both orders of
 * the held bytes: the same bytes as the server's, each value masked. */
static void test_mask_release_inside_a_chunk(void **state)
{
	struct fx *x = *state;
	const char *resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "4\r\naas3\r\n10\r\ncr3t-VALUE-1234x\r\n0\r\nX-T: s3" VAL "\r\n\r\n";
	const char *want = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "4\r\naa**\r\n10\r\n***************x\r\n0\r\nX-T: s3" STARS "\r\n\r\n";
	assert_int_equal(strlen(resp), strlen(want));
	for (size_t cut = 1; cut <= strlen(resp); cut++) {
		struct sk_pt_filter *f = secret_filter(x, true);
		feed_request(x, f, GET_OK);
		struct sk_strbuf down = { 0 };
		bool closed;
		serve_cut(f, resp, cut, &down, &closed);
		if (down.len != strlen(want) || memcmp(down.p, want, down.len) != 0)
			fail_msg("cut %zu: got %.*s", cut, (int)down.len, str(&down));
		assert_false(closed);
		f->ops->free(f);
		sk_strbuf_free(&down);
	}
}

/* A body delimited by the close: what the mask holds at the end goes with the close, masked. */
static void test_masked_body_until_close(void **state)
{
	struct fx *x = *state;
	struct sk_pt_filter *f = secret_filter(x, true);
	feed_request(x, f, GET_OK);
	struct sk_strbuf down = { 0 };
	bool closed;
	serve_cut(f, "HTTP/1.1 200 OK\r\n\r\nab " VAL " s3cr3t", 4, &down, &closed);
	struct sk_pt_out o = { 0 };
	assert_int_equal(f->ops->closed(f, false, &o), SK_PT_EMIT);
	(void)sk_strbuf_put(&down, o.to_peer.p, o.to_peer.len);
	assert_string_equal(str(&down), "HTTP/1.1 200 OK\r\n\r\nab " STARS " s3cr3t");
	sk_pt_out_free(&o);
	f->ops->free(f);
	sk_strbuf_free(&down);
}

/* A compressed (or partial) body cannot be searched: refused with a 502 before any of its head reaches the
 * agent, and the connection ends; the responses before it go as they were. */
static void test_masked_connection_refuses_a_compressed_response(void **state)
{
	struct fx *x = *state;
	static const char *const bad[] = {
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Encoding: identity, br\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 206 Partial Content\r\nContent-Length: 3\r\n\r\nabc",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t cut = 1; cut < 40; cut += 7) {
			struct sk_pt_filter *f = secret_filter(x, true);
			x->reasons[0] = 0;
			feed_request(x, f, GET_OK GET_OK);
			struct sk_strbuf down = { 0 }, resp = { 0 };
			(void)sk_strbuf_puts(&resp, RESP_OK);
			(void)sk_strbuf_puts(&resp, bad[i]);
			bool closed;
			serve_cut(f, str(&resp), cut, &down, &closed);
			assert_true(closed);
			assert_int_equal(strncmp(str(&down), RESP_OK "HTTP/1.1 502 Bad Gateway\r\n", strlen(RESP_OK) + 26), 0);
			assert_non_null(strstr(str(&down), "\"reason\":\"upstream_encoding\""));
			assert_null(strstr(str(&down) + strlen(RESP_OK), "abc"));
			assert_string_equal(x->reasons, "upstream_encoding#2");
			f->ops->free(f);
			sk_strbuf_free(&down);
			sk_strbuf_free(&resp);
		}
	}
	/* identity and chunked are searchable, and a connection without a mask never looks */
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc";
	struct sk_pt_filter *f = secret_filter(x, true);
	feed_request(x, f, GET_OK);
	struct sk_strbuf down = { 0 };
	bool closed;
	serve_cut(f, ok, 5, &down, &closed);
	assert_string_equal(str(&down), ok);
	f->ops->free(f);
	sk_strbuf_reset(&down);
	f = secret_filter(x, false);
	feed_request(x, f, GET_OK);
	struct sk_pt_out o = { 0 };
	const char *gz = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc";
	assert_int_equal(f->ops->from_server(f, (const uint8_t *)gz, strlen(gz), &o), SK_PT_PASS);
	sk_pt_out_free(&o);
	f->ops->free(f);
	sk_strbuf_free(&down);
}

/* Regression (fuzz_inspect_h1_mask): a chunk line cut short by the server's close, the value in its
 * extension or before its CRLF: framing the mask does not search, released as it was at the close. It is
 * dropped now; the content before it goes, masked. */
static void test_chunk_line_cut_short_at_close_is_dropped(void **state)
{
	struct fx *x = *state;
	static const char *const bad[] = {
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;e=" VAL,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc" VAL,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t cut = 1; cut <= strlen(bad[i]); cut++) {
			struct sk_pt_filter *f = secret_filter(x, true);
			feed_request(x, f, GET_OK);
			struct sk_strbuf down = { 0 };
			bool closed;
			serve_cut(f, bad[i], cut, &down, &closed);
			struct sk_pt_out o = { 0 };
			assert_int_equal(f->ops->closed(f, false, &o), SK_PT_EMIT);
			(void)sk_strbuf_put(&down, o.to_peer.p, o.to_peer.len);
			assert_null(strstr(str(&down), "s3cr3t-"));
			assert_non_null(strstr(str(&down), i ? "chunked\r\n\r\n3\r\nabc" : "chunked\r\n\r\n"));
			sk_pt_out_free(&o);
			f->ops->free(f);
			sk_strbuf_free(&down);
		}
	}
}

/* The value in chunk framing (an extension, or bytes before a chunk's CRLF, whole or after the value's
 * head ending the chunk), where the mask does not search: the line is held whole and the connection
 * fails, nothing of the line sent, at every cut. */
static void test_value_in_chunk_framing_fails_closed(void **state)
{
	struct fx *x = *state;
	static const char *const bad[] = {
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;e=" VAL "\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc" VAL "\r\n0\r\n\r\n",
		/* regression (fuzz_inspect_h1_mask): the value's head ends a chunk, its last byte comes before
		 * the CRLF; the mask held the head, the framing line went on unsearched and the agent's stream
		 * held the value whole */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n12\r\nab" "s3cr3t-VALUE-123" "4\r\n0\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t cut = 1; cut <= strlen(bad[i]); cut++) {
			struct sk_pt_filter *f = secret_filter(x, true);
			feed_request(x, f, GET_OK);
			struct sk_strbuf down = { 0 };
			struct sk_pt_out o = { 0 };
			bool failed = false;
			size_t n = strlen(bad[i]);
			for (size_t off = 0; off < n && !failed; off += cut) {
				sk_pt_out_reset(&o);
				enum sk_pt_verdict v = f->ops->from_server(f, (const uint8_t *)bad[i] + off,
									   off + cut > n ? n - off : cut, &o);
				failed = v == SK_PT_FAIL;
				if (failed)
					assert_string_equal(o.reason, "secret_in_response_header");
				(void)sk_strbuf_put(&down, o.to_peer.p, o.to_peer.len);
			}
			assert_true(failed);
			assert_null(strstr(str(&down), "s3cr3t-"));
			sk_pt_out_free(&o);
			f->ops->free(f);
			sk_strbuf_free(&down);
		}
	}
}

/* The placeholder in a body, whole or cut by a record or by chunk framing: the head and the body before
 * it went on, nothing after; the agent gets the 403 and the connection ends. */
static void test_body_carrying_a_placeholder_ends_the_connection(void **state)
{
	struct fx *x = *state;
	static const char *const reqs[] = {
		"POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 30\r\n\r\n{\"t\":\"" PLH "\",\"z\":1}",
		"POST /x HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
		"5\r\nstock\r\nd\r\nade-secret-gh\r\n0\r\n\r\n",
	};
	for (size_t i = 0; i < 2; i++) {
		for (size_t cut = 1; cut <= strlen(reqs[i]); cut++) {
			struct sk_pt_filter *f = secret_filter(x, false);
			x->reasons[0] = 0;
			struct sk_strbuf up = { 0 }, down = { 0 };
			bool closed = false;
			size_t n = strlen(reqs[i]);
			for (size_t off = 0; off < n && !closed; off += cut) {
				size_t k = off + cut > n ? n - off : cut;
				sk_pt_out_reset(&x->out);
				enum sk_pt_verdict v = f->ops->from_client(f, (const uint8_t *)reqs[i] + off, k, &x->out);
				assert_int_not_equal(v, SK_PT_FAIL);
				if (v == SK_PT_PASS)
					(void)sk_strbuf_put(&up, reqs[i] + off, k);
				else
					(void)sk_strbuf_put(&up, x->out.to_peer.p, x->out.to_peer.len);
				(void)sk_strbuf_put(&down, x->out.to_sender.p, x->out.to_sender.len);
				closed = x->out.close_after;
			}
			if (!closed)
				fail_msg("request %zu cut %zu: not closed (%s)", i, cut, x->reasons);
			assert_string_equal(x->reasons, "credential_misuse#1:POST");
			assert_non_null(strstr(str(&down), "HTTP/1.1 403 Forbidden\r\n"));
			assert_non_null(strstr(str(&down), "credential_misuse"));
			assert_null(strstr(str(&up), PLH));
			assert_int_equal(strncmp(str(&up), reqs[i], 40), 0);   /* the head went on */
			f->ops->free(f);
			sk_strbuf_free(&up);
			sk_strbuf_free(&down);
		}
	}
	/* a clean body goes on whole, zero-copy */
	struct sk_pt_filter *f = secret_filter(x, false);
	x->reasons[0] = 0;
	feed_request(x, f, "POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n\r\nhello");
	assert_string_equal(x->reasons, "");
	f->ops->free(f);
}

/* The server answered before the body ended (its response under way): no 403 can go in its place, the
 * connection just closes; mode audit writes the line and lets the body go. */
static void test_body_refusal_after_an_early_response(void **state)
{
	struct fx *x = *state;
	struct sk_pt_filter *f = secret_filter(x, false);
	x->reasons[0] = 0;
	feed_request(x, f, "POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 40\r\n\r\nabc");
	struct sk_pt_out o = { 0 };
	const char *early = "HTTP/1.1 413 Too Large\r\nContent-Le";
	assert_int_equal(f->ops->from_server(f, (const uint8_t *)early, strlen(early), &o), SK_PT_PASS);
	sk_pt_out_reset(&x->out);
	assert_int_equal(f->ops->from_client(f, (const uint8_t *)PLH, strlen(PLH), &x->out), SK_PT_EMIT);
	assert_true(x->out.close_after);
	assert_int_equal(x->out.to_sender.len + x->out.to_peer.len, 0);
	sk_pt_out_free(&o);
	f->ops->free(f);
	x->audit_mode = true;
	x->reasons[0] = 0;
	f = secret_filter(x, false);
	feed_request(x, f, "POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 18\r\n\r\n" PLH);
	assert_string_equal(x->reasons, "credential_misuse#1:POST");
	f->ops->free(f);
}

/* ---- websockets (RFC 6455) ---- */

#define WS_KEY "dGhlIHNhbXBsZSBub25jZQ=="      /* RFC 6455 §1.3's example: its accept below */
#define WS_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define WS_REQ(path) "GET " path " HTTP/1.1\r\nHost: api.example.com\r\nUpgrade: websocket\r\n" \
		     "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: " WS_KEY "\r\nSec-WebSocket-Version: 13\r\n\r\n"
#define WS_101(accept) "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
		       "Sec-WebSocket-Accept: " accept "\r\n\r\n"

/* A masked text frame from the agent ("hi" under the mask 01 02 03 04) and the server's unmasked echo. */
static const uint8_t ws_cframe[] = { 0x81, 0x82, 0x01, 0x02, 0x03, 0x04, 'h' ^ 0x01, 'i' ^ 0x02 };
static const uint8_t ws_sframe[] = { 0x81, 0x02, 'h', 'i' };

static enum sk_pt_verdict client_n(struct fx *x, const void *p, size_t n)
{
	sk_pt_out_reset(&x->out);
	return x->f->ops->from_client(x->f, p, n, &x->out);
}

static enum sk_pt_verdict server_n(struct fx *x, const void *p, size_t n)
{
	sk_pt_out_reset(&x->out);
	return x->f->ops->from_server(x->f, p, n, &x->out);
}

/* An upgrade the rules allow goes on; the server's 101 with the right accept switches the connection; the
 * frames both ways go on as they are (zero-copy), split across records anywhere. */
static void test_websocket_upgrade_allowed_and_frames_pass(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, WS_REQ("/repos/acme/ws"), &up, &down), SK_PT_PASS);
	assert_string_equal(str(&up), WS_REQ("/repos/acme/ws"));
	/* the 101 is held until whole, then goes on */
	static const char r101[] = WS_101(WS_ACCEPT);
	assert_int_equal(server(x, "HTTP/1.1 101 Switching", &down), SK_PT_EMIT);
	assert_int_equal(down.len, 0);
	assert_int_equal(server(x, r101 + 22, &down), SK_PT_EMIT);
	assert_string_equal(str(&down), r101);
	for (size_t i = 0; i < sizeof(ws_cframe); i++)
		assert_int_equal(client_n(x, ws_cframe + i, 1), SK_PT_PASS);
	assert_int_equal(server_n(x, ws_sframe, 3), SK_PT_PASS);
	assert_int_equal(server_n(x, ws_sframe + 3, 1), SK_PT_PASS);
	/* a frame of 300 bytes (16-bit length), its header split */
	uint8_t big[4 + 300] = { 0x82, 126, 0x01, 0x2c };
	assert_int_equal(server_n(x, big, 3), SK_PT_PASS);
	assert_int_equal(server_n(x, big + 3, sizeof(big) - 3), SK_PT_PASS);
	assert_int_equal(server_n(x, ws_sframe, sizeof(ws_sframe)), SK_PT_PASS);
	assert_string_equal(x->reasons, "");
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* The request rules decide the upgrade like any GET: a path they do not allow is a 403 that ends it. */
static void test_websocket_upgrade_refused_by_the_rules(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, WS_REQ("/other/ws"), &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_string_equal(x->reasons, "request_denied#1");
	assert_non_null(strstr(str(&down), "403"));
	assert_true(x->out.close_after);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* Without the handshake's fields (a version other than 13 here) the upgrade keeps the old refusal. */
static void test_websocket_upgrade_without_its_handshake_is_refused(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, "GET /repos/acme/ws HTTP/1.1\r\nHost: api.example.com\r\nUpgrade: websocket\r\n"
				   "Connection: Upgrade\r\nSec-WebSocket-Key: " WS_KEY "\r\nSec-WebSocket-Version: 8\r\n\r\n",
				   &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_string_equal(x->reasons, "http_upgrade_unsupported#1");
	assert_true(x->out.close_after);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* A 101 whose Sec-WebSocket-Accept is not the one the key asks for reaches no one: the connection fails. */
static void test_websocket_bad_accept_fails_closed(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, WS_REQ("/repos/acme/ws"), &up, &down), SK_PT_PASS);
	assert_int_equal(server_n(x, WS_101("AAAAAAAAAAAAAAAAAAAAAAAAAAA="), strlen(WS_101("AAAAAAAAAAAAAAAAAAAAAAAAAAA="))),
			 SK_PT_FAIL);
	assert_string_equal(x->out.reason, "websocket_bad_accept");
	assert_int_equal(x->out.to_peer.len, 0);
	assert_string_equal(x->reasons, "websocket_bad_accept#1");
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* A declined upgrade leaves the connection HTTP: the next request is judged as before. */
static void test_websocket_declined_stays_http(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, WS_REQ("/repos/acme/ws"), &up, &down), SK_PT_PASS);
	assert_int_equal(server(x, "HTTP/1.1 426 Upgrade Required\r\nContent-Length: 2\r\n\r\nno", &down), SK_PT_EMIT);
	assert_string_equal(str(&down), "HTTP/1.1 426 Upgrade Required\r\nContent-Length: 2\r\n\r\nno");
	assert_false(x->out.close_after);
	assert_int_equal(client(x, "POST /repos/acme/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", &up, &down),
			 SK_PT_EMIT);
	assert_string_equal(x->reasons, "request_denied#2");
	assert_int_equal(client(x, GET_OK, &up, &down), SK_PT_PASS);
	assert_int_equal(sk_h1_filter_requests(x->f), 3);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* A request pipelined behind the upgrade is held, never forwarded unjudged: after a 101 its bytes are read
 * as frames (they are none: the connection fails); after a decline they are judged as requests. */
static void test_websocket_request_pipelined_after_the_upgrade(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, WS_REQ("/repos/acme/ws") "POST /gist HTTP/1.1\r\nHost: api.example.com\r\n\r\n", &up,
				&down), SK_PT_EMIT);
	assert_string_equal(str(&up), WS_REQ("/repos/acme/ws"));
	assert_int_equal(client(x, GET_OK, &up, &down), SK_PT_EMIT);
	assert_string_equal(str(&up), WS_REQ("/repos/acme/ws"));
	assert_int_equal(server_n(x, WS_101(WS_ACCEPT), strlen(WS_101(WS_ACCEPT))), SK_PT_FAIL);
	assert_string_equal(x->out.reason, "websocket_bad_frame");
	assert_int_equal(x->out.to_sender.len, 0);

	/* declined: the held requests are judged as if they came after the answer (so how the agent's bytes
	 * were cut against the server's does not matter): the POST refused after the 404, never sent; the
	 * GET behind it sent toward the server */
	x->f->ops->free(x->f);
	struct sk_h1_hooks hooks = { .ctx = x, .judge = judge, .refuse = refuse };
	struct sk_err err = { 0 };
	assert_int_equal(sk_h1_filter_new("api.example.com", "gh", &hooks, &x->f, &err), 0);
	x->reasons[0] = '\0';
	sk_strbuf_reset(&up);
	sk_strbuf_reset(&down);
	assert_int_equal(client(x, WS_REQ("/repos/acme/ws") "POST /gist HTTP/1.1\r\nHost: api.example.com\r\n\r\n" GET_OK,
				&up, &down), SK_PT_EMIT);
	assert_string_equal(str(&up), WS_REQ("/repos/acme/ws"));
	assert_string_equal(x->reasons, "");
	static const char r404[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	assert_int_equal(server_n(x, r404, sizeof(r404) - 1), SK_PT_EMIT);
	assert_string_equal(x->reasons, "request_denied#2");
	assert_false(x->out.close_after);
	assert_string_equal(str(&x->out.to_sender), GET_OK);
	assert_true(x->out.to_peer.len > sizeof(r404) - 1);
	assert_memory_equal(x->out.to_peer.p, r404, sizeof(r404) - 1);
	assert_non_null(strstr(x->out.to_peer.p + sizeof(r404) - 1, "\"method\":\"POST\""));
	assert_int_equal(sk_h1_filter_requests(x->f), 3);
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* Frames the agent sent before the 101 (allowed by RFC 6455 once the handshake is sent) are held, then go on
 * toward the server with the 101; an unmasked frame from the agent, or a masked one from the server, fails. */
static void test_websocket_frames_held_then_checked(void **state)
{
	struct fx *x = *state;
	struct sk_strbuf up = { 0 }, down = { 0 };
	uint8_t req[sizeof(WS_REQ("/repos/acme/ws")) - 1 + sizeof(ws_cframe)];
	memcpy(req, WS_REQ("/repos/acme/ws"), sizeof(WS_REQ("/repos/acme/ws")) - 1);
	memcpy(req + sizeof(WS_REQ("/repos/acme/ws")) - 1, ws_cframe, sizeof(ws_cframe));
	assert_int_equal(client_n(x, req, sizeof(req)), SK_PT_EMIT);
	assert_int_equal(x->out.to_peer.len, sizeof(req) - sizeof(ws_cframe));
	assert_int_equal(server_n(x, WS_101(WS_ACCEPT), strlen(WS_101(WS_ACCEPT))), SK_PT_EMIT);
	assert_int_equal(x->out.to_sender.len, sizeof(ws_cframe));
	assert_memory_equal(x->out.to_sender.p, ws_cframe, sizeof(ws_cframe));
	assert_int_equal(client_n(x, ws_sframe, sizeof(ws_sframe)), SK_PT_FAIL);   /* unmasked from the agent */
	assert_string_equal(x->out.reason, "websocket_bad_frame");
	assert_int_equal(server_n(x, ws_cframe, sizeof(ws_cframe)), SK_PT_FAIL);   /* masked from the server */
	assert_string_equal(x->reasons, "websocket_bad_frame#1,websocket_bad_frame#1");
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

/* Toward a host a secret lists (its responses masked), frames are not searched: the upgrade is refused. */
static void test_websocket_refused_toward_a_secret_host(void **state)
{
	struct fx *x = *state;
	struct sk_pt_filter *f = secret_filter(x, true);
	sk_pt_out_reset(&x->out);
	static const char req[] = WS_REQ("/repos/acme/ws");
	assert_int_equal(f->ops->from_client(f, (const uint8_t *)req, sizeof(req) - 1, &x->out), SK_PT_EMIT);
	assert_int_equal(x->out.to_peer.len, 0);
	assert_true(x->out.close_after);
	assert_string_equal(x->reasons, "websocket_secret_host#1");
	f->ops->free(f);
}

/* A rewrite hook that turns masking on as it sees the head (a host a reload made secret-listed): the
 * upgrade it was about to let on is refused after all. */
static int mask_on_rewrite(void *ctx, uint32_t request, const uint8_t *head, size_t n, const struct sk_http_head *h,
			   struct sk_strbuf *out, const char **reason)
{
	(void)request;
	(void)head;
	(void)n;
	(void)h;
	(void)out;
	(void)reason;
	struct fx *x = ctx;
	assert_int_equal(sk_swap_mask_add(sk_h1_filter_mask(x->f), VAL, sizeof(VAL) - 1), 0);
	return 0;
}

static void test_websocket_refused_when_the_swap_turns_masking_on(void **state)
{
	struct fx *x = *state;
	x->f->ops->free(x->f);
	struct sk_h1_hooks hooks = { .ctx = x, .refuse = refuse, .rewrite = mask_on_rewrite };
	struct sk_err err = { 0 };
	assert_int_equal(sk_h1_filter_new("api.example.com", "gh", &hooks, &x->f, &err), 0);
	struct sk_strbuf up = { 0 }, down = { 0 };
	assert_int_equal(client(x, WS_REQ("/repos/acme/ws"), &up, &down), SK_PT_EMIT);
	assert_int_equal(up.len, 0);
	assert_true(x->out.close_after);
	assert_string_equal(x->reasons, "websocket_secret_host#1");
	sk_strbuf_free(&up);
	sk_strbuf_free(&down);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_allowed_request_passes_without_a_copy),
		T(test_denied_request_is_answered_and_the_connection_goes_on),
		T(test_request_smuggled_behind_an_allowed_one),
		T(test_head_split_over_records),
		T(test_pipelined_heads_and_their_responses),
		T(test_host_other_than_sni_is_misdirected),
		T(test_denied_request_with_a_body_ends_the_connection),
		T(test_ambiguous_framing_is_refused),
		T(test_framing_error_in_a_body_names_no_method),
		T(test_head_cut_short_never_goes_on),
		T(test_websocket_upgrade_is_refused),
		T(test_mode_audit_lets_it_through),
		T(test_responses_are_masked_across_records_and_chunks),
		T(test_mask_release_inside_a_chunk),
		T(test_masked_body_until_close),
		T(test_chunk_line_cut_short_at_close_is_dropped),
		T(test_masked_connection_refuses_a_compressed_response),
		T(test_value_in_chunk_framing_fails_closed),
		T(test_body_carrying_a_placeholder_ends_the_connection),
		T(test_body_refusal_after_an_early_response),
		T(test_websocket_upgrade_allowed_and_frames_pass),
		T(test_websocket_upgrade_refused_by_the_rules),
		T(test_websocket_upgrade_without_its_handshake_is_refused),
		T(test_websocket_bad_accept_fails_closed),
		T(test_websocket_declined_stays_http),
		T(test_websocket_request_pipelined_after_the_upgrade),
		T(test_websocket_frames_held_then_checked),
		T(test_websocket_refused_toward_a_secret_host),
		T(test_websocket_refused_when_the_swap_turns_masking_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

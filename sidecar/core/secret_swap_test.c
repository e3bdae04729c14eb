/* sidecar/core/secret_swap_test.c — the placeholder swap: HTTP/1 heads (several occurrences,
 * Basic with and without a user, Bearer, folding refused, misuse in path, query, another header, toward
 * another host or path), HTTP/2 headers (never-index), the scan's encodings, masking across cuts, the
 * store's rotation, and no value in any text produced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sidecar/core/secret_swap.h"

#define VALUE "ghp_REALvalue0123456789abcdef"
#define PH "stockade-secret-github"

static char *gh_hosts[] = { "github.com", "api.github.com" };
static char *gh_paths[] = { "/acme/**", "/repos/acme/**" };
static char *gh_in[] = { "authorization", "x-api-key" };
static char *np_hosts[] = { "registry.npmjs.org" };
static char *np_in[] = { "authorization" };

static struct sk_secret secrets[] = {
	{ .name = "github", .placeholder = PH, .hosts = gh_hosts, .n_hosts = 2, .paths = gh_paths, .n_paths = 2,
	  .in = gh_in, .n_in = 2 },
	{ .name = "npm", .placeholder = "NPM-PLACEHOLDER-0001", .hosts = np_hosts, .n_hosts = 1, .in = np_in, .n_in = 1 },
};
static const struct sk_secret_value values[] = { { VALUE, sizeof(VALUE) - 1 }, { "npm_secret_value_xyz", 20 } };
static const struct sk_swap_set set = { secrets, 2, values };

static enum sk_swap_result h1(const char *host, const char *head, struct sk_strbuf *out, struct sk_swap_misuse *m)
{
	sk_strbuf_reset(out);
	memset(m, 0xee, sizeof(*m));
	return sk_swap_h1_head(&set, host, (const uint8_t *)head, strlen(head), out, m);
}

static void no_value_in_text(const struct sk_swap_misuse *m)
{
	char t[256];
	sk_swap_misuse_text(&set, m, t, sizeof(t));
	assert_null(strstr(t, VALUE));
	assert_null(strstr(t, "npm_secret_value_xyz"));
	assert_non_null(strstr(t, "secret"));
}

static void expect_misuse(const char *host, const char *head, size_t secret, enum sk_swap_where w, bool value)
{
	struct sk_strbuf out = { 0 };
	struct sk_swap_misuse m;
	enum sk_swap_result r = h1(host, head, &out, &m);
	if (r != SK_SWAP_MISUSE)
		fail_msg("expected misuse for %s, got %d", head, r);
	assert_int_equal(m.secret, secret);
	if (m.where != w)
		fail_msg("where %s, expected %s: %s", sk_swap_where_name(m.where), sk_swap_where_name(w), head);
	assert_int_equal(m.value, value);
	assert_int_equal(out.len, 0);
	no_value_in_text(&m);
	sk_strbuf_free(&out);
}

static void test_bearer_and_key(void **state)
{
	(void)state;
	struct sk_strbuf out = { 0 };
	struct sk_swap_misuse m;
	assert_int_equal(h1("api.github.com",
			    "GET /repos/acme/x?per_page=1 HTTP/1.1\r\nHost: api.github.com\r\n"
			    "Authorization:   Bearer " PH "  \r\nX-Api-Key: " PH "," PH "\r\nAccept: */*\r\n\r\n",
			    &out, &m),
			 SK_SWAP_SWAPPED);
	assert_string_equal(out.p, "GET /repos/acme/x?per_page=1 HTTP/1.1\r\nHost: api.github.com\r\n"
				   "Authorization:   Bearer " VALUE "  \r\nX-Api-Key: " VALUE "," VALUE
				   "\r\nAccept: */*\r\n\r\n");
	/* nothing of a secret: NONE and out untouched */
	sk_strbuf_reset(&out);
	assert_int_equal(h1("api.github.com", "GET / HTTP/1.1\nHost: x\n\n", &out, &m), SK_SWAP_NONE);
	assert_int_equal(out.len, 0);
	/* the second secret, LF line ends, any path */
	assert_int_equal(h1("registry.npmjs.org", "GET /anything HTTP/1.1\nauthorization: Bearer NPM-PLACEHOLDER-0001\n\n",
			    &out, &m),
			 SK_SWAP_SWAPPED);
	assert_string_equal(out.p, "GET /anything HTTP/1.1\nauthorization: Bearer npm_secret_value_xyz\n\n");
	sk_strbuf_free(&out);
}

static void test_basic(void **state)
{
	(void)state;
	struct sk_strbuf out = { 0 };
	struct sk_swap_misuse m;
	/* git over HTTPS: x-access-token:PLACEHOLDER */
	const char *user = "x-access-token:" PH, *nouser = PH ":", *want_user = "x-access-token:" VALUE,
		   *want_nouser = VALUE ":";
	char enc[256] = "", head[512], want[512], wenc[256] = "";
	const char *cases[][2] = { { user, want_user }, { nouser, want_nouser } };
	for (size_t i = 0; i < 2; i++) {
		/* base64 by hand via the swap's own output would be circular: use a fixed encoder */
		static const char B[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *srcs[2] = { cases[i][0], cases[i][1] };
		char *dsts[2] = { enc, wenc };
		for (size_t k = 0; k < 2; k++) {
			const uint8_t *s = (const uint8_t *)srcs[k];
			size_t n = strlen(srcs[k]), o = 0;
			for (size_t j = 0; j < n; j += 3) {
				uint32_t v = (uint32_t)s[j] << 16 | (j + 1 < n ? (uint32_t)s[j + 1] << 8 : 0) |
					     (j + 2 < n ? s[j + 2] : 0);
				dsts[k][o++] = B[v >> 18];
				dsts[k][o++] = B[(v >> 12) & 63];
				dsts[k][o++] = j + 1 < n ? B[(v >> 6) & 63] : '=';
				dsts[k][o++] = j + 2 < n ? B[v & 63] : '=';
			}
			dsts[k][o] = 0;
		}
		(void)snprintf(head, sizeof(head), "GET /acme/repo.git/info/refs HTTP/1.1\r\nHost: github.com\r\n"
						   "Authorization: Basic %s\r\n\r\n", enc);
		(void)snprintf(want, sizeof(want), "GET /acme/repo.git/info/refs HTTP/1.1\r\nHost: github.com\r\n"
						   "Authorization: Basic %s\r\n\r\n", wenc);
		assert_int_equal(h1("github.com", head, &out, &m), SK_SWAP_SWAPPED);
		assert_string_equal(out.p, want);
		/* the same credentials toward a path the secret does not list */
		(void)snprintf(head, sizeof(head), "GET /other/repo.git/info/refs HTTP/1.1\r\nHost: github.com\r\n"
						   "Authorization: Basic %s\r\n\r\n", enc);
		expect_misuse("github.com", head, 0, SK_SWAP_AT_PATH_RULE, false);
		/* in another header, base64 still found */
		(void)snprintf(head, sizeof(head), "GET /acme/x HTTP/1.1\r\nHost: github.com\r\nX-Note: %s\r\n\r\n", enc);
		expect_misuse("github.com", head, 0, SK_SWAP_AT_HEADER, false);
	}
	sk_strbuf_free(&out);
}

static void test_misuse(void **state)
{
	(void)state;
	/* toward a host the secret does not list (the other secret's host too) */
	expect_misuse("evil.example", "GET /acme/x HTTP/1.1\r\nAuthorization: Bearer " PH "\r\n\r\n", 0,
		      SK_SWAP_AT_HOST, false);
	expect_misuse("registry.npmjs.org", "GET / HTTP/1.1\r\nAuthorization: token " PH "\r\n\r\n", 0,
		      SK_SWAP_AT_HOST, false);
	/* another header */
	expect_misuse("api.github.com", "GET /acme/x HTTP/1.1\r\nCookie: t=" PH "\r\n\r\n", 0, SK_SWAP_AT_HEADER, false);
	/* in a header name */
	expect_misuse("api.github.com", "GET /acme/x HTTP/1.1\r\nX-" PH ": 1\r\n\r\n", 0, SK_SWAP_AT_HEADER, false);
	/* path and query, raw, case-folded, percent-encoded, hex */
	expect_misuse("api.github.com", "GET /acme/" PH " HTTP/1.1\r\n\r\n", 0, SK_SWAP_AT_PATH, false);
	expect_misuse("api.github.com", "GET /acme/x?t=STOCKADE-SECRET-GITHUB HTTP/1.1\r\n\r\n", 0, SK_SWAP_AT_QUERY, false);
	expect_misuse("api.github.com", "GET /acme/x?t=%73tockade-secret-github HTTP/1.1\r\n\r\n", 0, SK_SWAP_AT_QUERY,
		      false);
	expect_misuse("api.github.com", "GET /acme/73746f636b6164652d7365637265742d676974687562 HTTP/1.1\r\n\r\n", 0,
		      SK_SWAP_AT_PATH, false);
	/* the real value: anywhere, even in an allowed header toward a listed host */
	expect_misuse("api.github.com", "GET /acme/x HTTP/1.1\r\nAuthorization: Bearer " VALUE "\r\n\r\n", 0,
		      SK_SWAP_AT_HEADER, true);
	expect_misuse("api.github.com", "GET /acme/x?v=" VALUE " HTTP/1.1\r\n\r\n", 0, SK_SWAP_AT_QUERY, true);
	/* an odd spelling in an allowed header is not swapped, so it is misuse */
	expect_misuse("api.github.com", "GET /acme/x HTTP/1.1\r\nAuthorization: Bearer Stockade-Secret-GitHub\r\n\r\n",
		      0, SK_SWAP_AT_HEADER, false);
	/* the second secret found too */
	expect_misuse("api.github.com", "POST /acme/x HTTP/1.1\r\nAuthorization: Bearer NPM-PLACEHOLDER-0001\r\n\r\n",
		      1, SK_SWAP_AT_HOST, false);
}

static void test_malformed(void **state)
{
	(void)state;
	struct sk_strbuf out = { 0 };
	struct sk_swap_misuse m;
	const char *bad[] = {
		"GET /acme/x HTTP/1.1\r\nAuthorization: Bearer\r\n " PH "\r\n\r\n",   /* folding */
		"GET /acme/x HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n",
		"GET /acme/x HTTP/1.1\r\nAuthorization: Bearer " PH "\r\n",          /* no end */
		"GET /acme/x HTTP/1.1\r\nAuthorization : x\r\n\r\n",
		"GET /acme/x HTTP/1.1\r\nX: a\rb\r\n\r\n",                            /* bare CR */
		"GET\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n",                         /* two heads */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (h1("api.github.com", bad[i], &out, &m) != SK_SWAP_MALFORMED)
			fail_msg("not refused: %s", bad[i]);
	sk_strbuf_free(&out);
}

static void test_h2(void **state)
{
	(void)state;
	struct sk_strbuf out = { 0 };
	struct sk_swap_misuse m;
	bool ni = true;
	const char *path = "/repos/acme/x?q=1";
	assert_int_equal(sk_swap_h2_header(&set, "api.github.com", path, strlen(path), "authorization", 13,
					   "token " PH, strlen("token " PH), &out, &ni, &m),
			 SK_SWAP_SWAPPED);
	assert_true(ni);
	assert_string_equal(out.p, "token " VALUE);
	sk_strbuf_reset(&out);
	assert_int_equal(sk_swap_h2_header(&set, "api.github.com", path, strlen(path), "accept", 6, "*/*", 3, &out,
					   &ni, &m),
			 SK_SWAP_NONE);
	assert_false(ni);
	assert_int_equal(sk_swap_h2_header(&set, "api.github.com", path, strlen(path), "cookie", 6, PH, strlen(PH),
					   &out, &ni, &m),
			 SK_SWAP_MISUSE);
	assert_int_equal(m.where, SK_SWAP_AT_HEADER);
	assert_string_equal(m.header, "cookie");
	const char *bp = "/repos/acme/x?t=" PH;
	assert_int_equal(sk_swap_h2_header(&set, "api.github.com", bp, strlen(bp), ":path", 5, bp, strlen(bp), &out,
					   &ni, &m),
			 SK_SWAP_MISUSE);
	assert_int_equal(m.where, SK_SWAP_AT_QUERY);
	assert_int_equal(sk_swap_h2_header(&set, "gist.github.com", path, strlen(path), "authorization", 13, PH,
					   strlen(PH), &out, &ni, &m),
			 SK_SWAP_MISUSE);
	assert_int_equal(m.where, SK_SWAP_AT_HOST);
	no_value_in_text(&m);
	sk_strbuf_free(&out);
}

static void test_scan(void **state)
{
	(void)state;
	struct sk_swap_misuse m;
	static const struct {
		const char *text;
		bool want;
	} cases[] = {
		{ "stockade-secret-github.attacker.example", true },   /* DNS name, lower-cased */
		{ "x " VALUE " y", true },                             /* the value */
		{ "ghp_realvalue0123456789abcdef", true },             /* folded */
		{ "Z2hwX1JFQUx2YWx1ZTAxMjM0NTY3ODlhYmNkZWY=", true },  /* base64 of the value */
		{ "eGdocF9SRUFMdmFsdWUwMTIzNDU2Nzg5YWJjZGVm", true },  /* base64 of "x" + value (shifted) */
		{ "67687025f5245414c76616c7565303132333435363738396162636465", false }, /* hex shifted a nibble */
		{ "676870255f5245414c76616c756530313233343536373839616263646566", false }, /* hex of a %-escape */
		{ "ghp%5FREALvalue0123456789abcdef", true },           /* percent */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (sk_swap_scan(&set, (const uint8_t *)cases[i].text, strlen(cases[i].text), SK_SWAP_AT_BODY, &m) !=
		    cases[i].want)
			fail_msg("scan of %s: expected %d", cases[i].text, cases[i].want);
	assert_true(sk_swap_scan(&set, (const uint8_t *)"bnBtX3NlY3JldF92YWx1ZV94eXo", 27, SK_SWAP_AT_DNS, &m));
	assert_int_equal(m.secret, 1);
	assert_true(m.value);
	assert_int_equal(m.where, SK_SWAP_AT_DNS);
	/* without values, only placeholders */
	struct sk_swap_set ph_only = { secrets, 2, NULL };
	assert_false(sk_swap_scan(&ph_only, (const uint8_t *)VALUE, strlen(VALUE), SK_SWAP_AT_DNS, &m));
	assert_true(sk_swap_scan(&ph_only, (const uint8_t *)"npm-placeholder-0001.x", 22, SK_SWAP_AT_DNS, &m));
	assert_false(sk_swap_scan(&set, (const uint8_t *)"api.github.com", 14, SK_SWAP_AT_DNS, &m));
}

static void test_mask(void **state)
{
	(void)state;
	const char *in = "{\"echo\":\"" VALUE "\",\"n\":\"npm_secret_value_xyz\",\"t\":\"" VALUE VALUE "\"}";
	size_t n = strlen(in);
	for (size_t cut = 1; cut <= n; cut++) {
		struct sk_swap_mask mk;
		assert_int_equal(sk_swap_mask_init(&mk, &set), 0);
		struct sk_strbuf out = { 0 };
		for (size_t off = 0; off < n; off += cut)
			assert_int_equal(sk_swap_mask_run(&mk, (const uint8_t *)in + off, off + cut > n ? n - off : cut,
							  false, &out),
					 0);
		assert_int_equal(sk_swap_mask_run(&mk, NULL, 0, true, &out), 0);
		assert_int_equal(out.len, n);
		assert_null(strstr(out.p, VALUE));
		assert_null(strstr(out.p, "npm_secret_value_xyz"));
		assert_int_equal(memcmp(out.p, "{\"echo\":\"*****", 14), 0);
		sk_swap_mask_free(&mk);
		sk_strbuf_free(&out);
	}
}

/* A body prefix scanned piece by piece: an occurrence cut anywhere (a placeholder, its percent and base64
 * spellings) is found in the piece that completes it, never before; a body without one never is; past the
 * prefix nothing is looked at. */
static void test_body_scan(void **state)
{
	(void)state;
	static const char *const bodies[] = {
		"{\"token\":\"" PH "\"}",
		"a=1&t=stockade%2Dsecret%2Dgithub&b=2",
		"xx c3RvY2thZGUtc2VjcmV0LWdpdGh1Yg== yy",   /* base64 of the placeholder */
		"echo " VALUE " back",
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(bodies); i++) {
		size_t n = strlen(bodies[i]);
		for (size_t cut = 1; cut <= n; cut++) {
			struct sk_swap_body b = { 0 };
			struct sk_swap_misuse m;
			bool found = false;
			size_t off = 0;
			for (; off < n && !found; off += cut)
				found = sk_swap_body_scan(&b, &set, (const uint8_t *)bodies[i] + off,
							  off + cut > n ? n - off : cut, &m);
			if (!found)
				fail_msg("body %zu cut %zu: not found", i, cut);
			assert_int_equal(m.where, SK_SWAP_AT_BODY);
			assert_int_equal(m.secret, 0);
			/* done: later pieces are not scanned again */
			assert_false(sk_swap_body_scan(&b, &set, (const uint8_t *)PH, strlen(PH), &m));
			sk_swap_body_reset(&b);
		}
	}
	/* several occurrences of two secrets: found, named by the set's order */
	struct sk_swap_body b = { 0 };
	struct sk_swap_misuse m;
	const char *two = "NPM-PLACEHOLDER-0001 then " PH;
	assert_true(sk_swap_body_scan(&b, &set, (const uint8_t *)two, strlen(two), &m));
	assert_int_equal(m.secret, 0);
	sk_swap_body_reset(&b);
	/* clean bodies of any cut */
	char clean[3000];
	for (size_t i = 0; i < sizeof(clean); i++)
		clean[i] = "abcdefghij stockade-secret-githu"[i % 32];
	for (size_t cut = 1; cut < sizeof(clean); cut = cut * 3 + 1) {
		for (size_t off = 0; off < sizeof(clean); off += cut)
			assert_false(sk_swap_body_scan(&b, &set, (const uint8_t *)clean + off,
						       off + cut > sizeof(clean) ? sizeof(clean) - off : cut, &m));
		assert_true(b.tlen < 3 * strlen(VALUE) + 4);   /* the tail stays bounded */
		sk_swap_body_reset(&b);
	}
	/* the prefix: an occurrence starting past SK_SWAP_BODY_SCAN is not looked for */
	char *big = calloc(1, SK_SWAP_BODY_SCAN + 64);
	assert_non_null(big);
	memset(big, 'x', SK_SWAP_BODY_SCAN);
	memcpy(big + SK_SWAP_BODY_SCAN, PH, sizeof(PH) - 1);
	assert_false(sk_swap_body_scan(&b, &set, (const uint8_t *)big, SK_SWAP_BODY_SCAN + strlen(PH), &m));
	assert_false(sk_swap_body_scan(&b, &set, (const uint8_t *)PH, strlen(PH), &m));
	sk_swap_body_reset(&b);
	/* ...and one ending right at its end is */
	memcpy(big + SK_SWAP_BODY_SCAN - (sizeof(PH) - 1), PH, sizeof(PH) - 1);
	assert_true(sk_swap_body_scan(&b, &set, (const uint8_t *)big, SK_SWAP_BODY_SCAN + 10, &m));
	sk_swap_body_reset(&b);
	free(big);
}

/* Toward a host whose responses are masked, a request asks for them whole and identity-coded. */
static void test_body_form(void **state)
{
	(void)state;
	struct sk_strbuf out = { 0 };
	const char *head = "GET /x HTTP/1.1\r\nHost: github.com\r\nAccept-Encoding: gzip, br\r\nRange: bytes=0-3\r\n"
			   "X-A: 1\r\nif-range: \"e\"\r\nWant-Digest: sha-256\r\n\r\n";
	assert_int_equal(sk_swap_h1_body_form((const uint8_t *)head, strlen(head), &out), SK_SWAP_SWAPPED);
	assert_int_equal(out.len, strlen("GET /x HTTP/1.1\r\nHost: github.com\r\nAccept-Encoding: identity\r\nX-A: 1\r\n\r\n"));
	assert_memory_equal(out.p, "GET /x HTTP/1.1\r\nHost: github.com\r\nAccept-Encoding: identity\r\nX-A: 1\r\n\r\n", out.len);
	const char *plain = "GET /x HTTP/1.1\r\nHost: github.com\r\nAccept: */*\r\n\r\n";
	sk_strbuf_reset(&out);
	assert_int_equal(sk_swap_h1_body_form((const uint8_t *)plain, strlen(plain), &out), SK_SWAP_NONE);
	assert_int_equal(out.len, 0);
	assert_int_equal(sk_swap_h2_body_form("accept-encoding", 15), 1);
	assert_int_equal(sk_swap_h2_body_form("range", 5), 2);
	assert_int_equal(sk_swap_h2_body_form("accept", 6), 0);
	assert_true(sk_swap_host_listed(&set, "api.github.com"));
	assert_true(sk_swap_host_listed(&set, "registry.npmjs.org."));
	assert_false(sk_swap_host_listed(&set, "example.com"));
	sk_strbuf_free(&out);
}

/* A value added later (a rotated file) is masked from then on; the same value is not added twice. */
static void test_mask_add(void **state)
{
	(void)state;
	struct sk_swap_mask mk = { 0 };
	char v[] = "rotated-value-42";
	assert_int_equal(sk_swap_mask_add(&mk, v, 16), 0);
	assert_int_equal(sk_swap_mask_add(&mk, "rotated-value-42", 16), 0);
	assert_int_equal(mk.n, 1);
	struct sk_strbuf out = { 0 };
	assert_int_equal(sk_swap_mask_run(&mk, (const uint8_t *)"a rotated-val", 13, false, &out), 0);
	assert_int_equal(sk_swap_mask_held(&mk), 11);
	v[0] = 'X';   /* the mask keeps its own copy */
	assert_int_equal(sk_swap_mask_run(&mk, (const uint8_t *)"ue-42 b", 7, true, &out), 0);
	assert_int_equal(out.len, 20);
	assert_memory_equal(out.p, "a **************** b", 20);
	/* a field on its own: found or not, the stream's state untouched */
	assert_int_equal(sk_swap_mask_run(&mk, (const uint8_t *)"x rot", 5, false, &out), 0);
	size_t held = sk_swap_mask_held(&mk);
	assert_true(sk_swap_mask_finds(&mk, (const uint8_t *)"Bearer rotated-value-42", 23));
	assert_false(sk_swap_mask_finds(&mk, (const uint8_t *)"Bearer rotated-value-4", 22));
	assert_int_equal(sk_swap_mask_held(&mk), held);
	sk_swap_mask_free(&mk);
	sk_strbuf_free(&out);
}

static void test_store_rotation(void **state)
{
	(void)state;
	char dir[] = "/tmp/sk-secret-XXXXXX", path[64], tmp[64];
	assert_non_null(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/token", dir);
	(void)snprintf(tmp, sizeof(tmp), "%s/token.new", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs("first-value\n", f) >= 0);
	assert_int_equal(fclose(f), 0);
	struct sk_secret sec[2] = { { .name = "a", .value_file = path }, { .name = "b", .value_file = "/nonexistent/x" } };
	struct sk_policy p = { .secrets = sec, .n_secrets = 2 };
	struct sk_secret_store st = { 0 };
	struct sk_secret_value v[2];
	struct sk_err err = { 0 };
	assert_true(sk_secret_store_sync(&st, &p, v, &err) < 0);
	assert_non_null(strstr(err.msg, "secret b"));
	assert_int_equal(v[0].len, 11);
	assert_memory_equal(v[0].val, "first-value", 11);
	assert_null(v[1].val);
	/* rotated as Kubernetes does: a new file renamed over the old */
	f = fopen(tmp, "w");
	assert_non_null(f);
	assert_true(fputs("second-value-longer", f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
	p.n_secrets = 1;
	assert_int_equal(sk_secret_store_sync(&st, &p, v, &err), 0);
	assert_int_equal(v[0].len, 19);
	assert_memory_equal(v[0].val, "second-value-longer", 19);
	sk_secret_store_free(&st);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer_and_key), cmocka_unit_test(test_basic), cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_malformed),      cmocka_unit_test(test_h2),    cmocka_unit_test(test_scan),
		cmocka_unit_test(test_mask),           cmocka_unit_test(test_store_rotation),
		cmocka_unit_test(test_body_scan),      cmocka_unit_test(test_body_form),  cmocka_unit_test(test_mask_add),
	};
	return cmocka_run_group_tests_name("secret_swap", tests, NULL, NULL);
}

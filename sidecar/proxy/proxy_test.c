/* sidecar/proxy/proxy_test.c — the proxy state machine with real sockets: the client side is a socketpair fed
 * byte by byte (so every classification sees every split), the upstream a loopback TCP listener. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/loop.h"
#include "sidecar/proxy/proxy.h"
#include "sidecar/core/sidecar.h"

struct world {
	struct sk_sidecar sc;
	int audit_r;        /* read end of the audit pipe */
	int upstream_ls;    /* loopback listener standing in for the internet */
	uint16_t upstream_port;
	struct sk_addr lo, src;
};

#define POLICY_FMT \
	"version: 1\n" \
	"mode: %s\n" \
	"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n" \
	"egress:\n" \
	"  - host: allowed.example\n" \
	"  - cidr: 198.18.1.30/32\n" \
	"    ports: [7000]\n" \
	"blockPrivate: false\n"

/* Replaces every "{PORT}" in tmpl with port. */
static void expand_port(const char *tmpl, uint16_t port, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *t = tmpl; *t && o + 8 < cap;) {
		if (strncmp(t, "{PORT}", 6) == 0) {
			o += (size_t)snprintf(out + o, cap - o, "%u", port);
			t += 6;
		} else {
			out[o++] = *t++;
		}
	}
	out[o] = '\0';
}

/* A world whose policy is `tmpl` ({PORT} = the upstream listener's port). */
static void world_up_policy(struct world *w, const char *tmpl, uint32_t peek_ms)
{
	struct sk_err err = { 0 };
	memset(w, 0, sizeof(*w));
	w->upstream_ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	assert_int_equal(bind(w->upstream_ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(w->upstream_ls, 8), 0);
	assert_int_equal(getsockname(w->upstream_ls, (struct sockaddr *)&sa, &sl), 0);
	w->upstream_port = ntohs(sa.sin_port);
	assert_int_equal(sk_addr_parse("127.0.0.1", &w->lo), 0);
	assert_int_equal(sk_addr_parse("198.18.0.2", &w->src), 0);

	char pol[2048];
	expand_port(tmpl, w->upstream_port, pol, sizeof(pol));
	struct sk_diags diags = { 0 };
	int rc = sk_policy_load_buffer("<test>", pol, strlen(pol), -1, &w->sc.policy, &diags);
	if (rc < 0)
		sk_diags_print(&diags, stderr);
	sk_diags_free(&diags);
	assert_int_equal(rc, 0);
	assert_int_equal(sk_loop_new(&w->sc.loop, &err), 0);
	sk_proxy_limits_default(&w->sc.limits);
	w->sc.limits.peek_timeout_ms = peek_ms;
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	w->audit_r = p[0];
	sk_audit_init(&w->sc.audit, p[1], NULL);
	assert_int_equal(sk_proxy_new(&w->sc, true, &w->sc.proxy, &err), 0);
}

static void world_up(struct world *w, const char *mode, uint32_t peek_ms)
{
	char tmpl[1024];
	(void)snprintf(tmpl, sizeof(tmpl), POLICY_FMT, mode);
	world_up_policy(w, tmpl, peek_ms);
}

/* Bindings as the DNS filter would have made them: allowed.example (and public.example) on 127.0.0.1. */
static bool fake_name_bound(void *ctx, const struct sk_addr *addr, const char *name)
{
	(void)ctx;
	(void)addr;
	return strcmp(name, "allowed.example") == 0 || strcmp(name, "public.example") == 0;
}

static void fake_names(void *ctx, const struct sk_addr *addr, sk_bind_name_fn cb, void *arg)
{
	(void)ctx;
	(void)addr;
	if (cb("allowed.example", arg))
		(void)cb("public.example", arg);
}

static void bind_fake(struct world *w)
{
	w->sc.bind.name_bound = fake_name_bound;
	w->sc.bind.names = fake_names;
}

static void world_down(struct world *w)
{
	sk_proxy_free(w->sc.proxy);
	sk_budget_table_fini(&w->sc.budgets);
	close(w->sc.audit.fd);
	close(w->audit_r);
	close(w->upstream_ls);
	sk_policy_free(w->sc.policy);
	sk_loop_free(w->sc.loop);
}

static void spin(struct world *w, int rounds)
{
	struct sk_err err = { 0 };
	for (int i = 0; i < rounds; i++)
		assert_true(sk_loop_run_once(w->sc.loop, 1, &err) >= 0);
}

/* A new client connection to dst:port that the proxy adopted with result `want` (0, or the refusal's
 * -errno); returns the agent's end. */
static int client_rc(struct world *w, const struct sk_addr *dst, uint16_t port, int want)
{
	int sp[2];
	struct sk_err err = { 0 };
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
	assert_int_equal(sk_proxy_adopt(w->sc.proxy, sp[1], &w->src, 40000, dst, port, &err), want);
	return sp[0];
}

/* A new client connection to dst:port, adopted; returns the agent's end. */
static int client(struct world *w, const struct sk_addr *dst, uint16_t port)
{
	return client_rc(w, dst, port, 0);
}

/* Reads whatever audit lines are there; returns the parsed last one (owned) and the count. */
static cJSON *last_audit(struct world *w, int *count)
{
	static char buf[65536];
	ssize_t n = read(w->audit_r, buf, sizeof(buf) - 1);
	*count = 0;
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	char *last = NULL;
	for (char *s = buf, *nl; (nl = strchr(s, '\n')); s = nl + 1) {
		*nl = '\0';
		last = s;
		(*count)++;
	}
	return last ? cJSON_Parse(last) : NULL;
}

static const char *jstr(cJSON *j, const char *k)
{
	cJSON *v = cJSON_GetObjectItem(j, k);
	return cJSON_IsString(v) ? v->valuestring : "(null)";
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap, f);
	(void)fclose(f);
	return n;
}

/* Feeds msg one byte per loop round, the way a hostile or unlucky network would deliver it. */
static void feed_bytewise(struct world *w, int fd, const uint8_t *msg, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(send(fd, msg + i, 1, MSG_NOSIGNAL), 1);
		spin(w, 1);
	}
}

/* Feeds msg in two sends split at `at`, one loop round apart: for a flight that must complete within a
 * short deadline (a late first flight's is the peek's), where one byte a round would race the clock on a
 * loaded machine. */
static void feed_split(struct world *w, int fd, const uint8_t *msg, size_t len, size_t at)
{
	assert_true(at > 0 && at < len);
	assert_int_equal(send(fd, msg, at, MSG_NOSIGNAL), (ssize_t)at);
	spin(w, 1);
	assert_int_equal(send(fd, msg + at, len - at, MSG_NOSIGNAL), (ssize_t)(len - at));
	spin(w, 1);
}

#define AFTER_REC "\x17\x03\x03\x00\x05" "AFTER"

static void test_tls_hello_bytewise_is_replayed_exactly(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/curl.bin", hello, sizeof(hello));
	assert_true(n > 100);
	int c = client(&w, &w.lo, w.upstream_port);
	feed_bytewise(&w, c, hello, n);
	/* After the allow the proxy connects upstream and replays every byte it read, in order. */
	int up = -1;
	for (int i = 0; i < 200 && up < 0; i++) {
		spin(&w, 1);
		up = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
	}
	assert_true(up >= 0);
	/* What follows the hello before the server answers is judged as TLS records too (0-RTT data here). */
	assert_int_equal(send(c, AFTER_REC, 10, MSG_NOSIGNAL), 10);
	uint8_t got[8192];
	size_t have = 0;
	for (int i = 0; i < 400 && have < n + 10; i++) {
		spin(&w, 1);
		ssize_t r = recv(up, got + have, sizeof(got) - have, 0);
		if (r > 0)
			have += (size_t)r;
	}
	assert_int_equal(have, n + 10);
	assert_memory_equal(got, hello, n);
	assert_memory_equal(got + n, AFTER_REC, 10);
	/* and the other way */
	assert_int_equal(send(up, "SERVER", 6, MSG_NOSIGNAL), 6);
	char back[16] = { 0 };
	ssize_t r = -1;
	for (int i = 0; i < 200 && r <= 0; i++) {
		spin(&w, 1);
		r = recv(c, back, sizeof(back), 0);
	}
	assert_int_equal(r, 6);
	assert_memory_equal(back, "SERVER", 6);
	close(c);
	close(up);
	spin(&w, 20);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_non_null(j);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "event"), "conn");
	assert_string_equal(jstr(j, "decision"), "allow");
	assert_string_equal(jstr(j, "name"), "allowed.example");
	assert_string_equal(jstr(j, "proto"), "tls");
	assert_string_equal(jstr(j, "binding"), "unchecked");
	assert_int_equal(cJSON_GetObjectItem(j, "rule")->valueint, 0);
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, (int)n + 10);
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_in")->valueint, 6);
	cJSON_Delete(j);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

static void test_tls_denied_name_gets_access_denied_alert(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	/* Same hello, name changed to one no rule allows (same length keeps every length field valid). */
	uint8_t *p = memmem(hello, n, "allowed.example", 15);
	assert_non_null(p);
	memcpy(p, "denied0.example", 15);
	int c = client(&w, &w.lo, w.upstream_port);
	feed_bytewise(&w, c, hello, n);
	spin(&w, 5);
	uint8_t got[64];
	ssize_t r = recv(c, got, sizeof(got), 0);
	assert_int_equal(r, 7);
	assert_memory_equal(got, "\x15\x03\x03\x00\x02\x02\x31", 7);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "deny");
	assert_string_equal(jstr(j, "reason"), "no_match");
	assert_string_equal(jstr(j, "name"), "denied0.example");
	assert_string_equal(jstr(j, "proto"), "tls");
	cJSON_Delete(j);
	assert_int_equal(accept4(w.upstream_ls, NULL, NULL, 0), -1);   /* nothing went upstream */
	close(c);
	spin(&w, 5);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

static void test_http_denied_host_gets_403_bytewise(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	static const char req[] = "GET /x HTTP/1.1\r\nHost: denied.example\r\nUser-Agent: t\r\n\r\n";
	int c = client(&w, &w.lo, 80);
	feed_bytewise(&w, c, (const uint8_t *)req, sizeof(req) - 1);
	spin(&w, 5);
	char got[512] = { 0 };
	ssize_t r = recv(c, got, sizeof(got) - 1, 0);
	assert_true(r > 0);
	assert_true(strncmp(got, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(got, "Connection: close\r\n"));
	assert_non_null(strstr(got, "\r\n\r\nstockade: egress denied (no_match)\n"));
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "proto"), "http");
	assert_string_equal(jstr(j, "name"), "denied.example");
	assert_string_equal(jstr(j, "dst"), "127.0.0.1:80");
	assert_string_equal(jstr(j, "src"), "198.18.0.2:40000");
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

static void test_loop_to_own_port_is_denied_before_reading(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "audit", 5000);   /* even mode audit never lets a loop through */
	int c = client(&w, &w.lo, 15001);
	spin(&w, 3);
	char b[8];
	ssize_t r = recv(c, b, sizeof(b), 0);
	assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "reason"), "loop");
	assert_string_equal(jstr(j, "decision"), "deny");
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

static void test_partial_hello_dies_at_peek_deadline(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 60);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, "\x16\x03\x01", 3, 0), 3);
	uint64_t t0 = sk_monotonic_ms();
	for (int i = 0; i < 500 && sk_proxy_active(w.sc.proxy) > 0; i++)
		spin(&w, 1);
	uint64_t took = sk_monotonic_ms() - t0;
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	assert_true(took >= 50 && took < 1000);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "reason"), "peek_timeout");
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

static void test_audit_mode_lets_denied_name_through_as_would_deny(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "audit", 5000);
	static const char req[] = "GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n";
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	int up = -1;
	for (int i = 0; i < 200 && up < 0; i++) {
		spin(&w, 1);
		up = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
	}
	assert_true(up >= 0);
	char got[128];
	ssize_t have = 0;
	for (int i = 0; i < 200 && have < (ssize_t)sizeof(req) - 1; i++) {
		spin(&w, 1);
		ssize_t r = recv(up, got + have, sizeof(got) - (size_t)have, 0);
		if (r > 0)
			have += r;
	}
	assert_int_equal(have, sizeof(req) - 1);
	assert_memory_equal(got, req, sizeof(req) - 1);
	close(c);
	close(up);
	spin(&w, 20);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "would_deny");
	assert_string_equal(jstr(j, "reason"), "no_match");
	cJSON_Delete(j);
	world_down(&w);
}

static void test_plain_tcp_uses_ip_rules_and_resets(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	struct sk_addr t;
	assert_int_equal(sk_addr_parse("198.18.1.30", &t), 0);
	int c = client(&w, &t, 7001);   /* the cidr rule covers port 7000 only */
	assert_int_equal(send(c, "\x00\x01binary", 8, 0), 8);
	spin(&w, 3);
	char b[8];
	ssize_t r = recv(c, b, sizeof(b), 0);
	assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "proto"), "tcp");
	assert_string_equal(jstr(j, "reason"), "no_match");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "name")));
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

/* Requests our parser refuses but a server would still take must be denied as HTTP, never relayed as
 * plain TCP under whatever name the DNS binding gives the address (domain fronting on a shared IP). */
static void test_near_http_is_denied_as_http_not_relayed_as_tcp(void **state)
{
	(void)state;
	static const char *const reqs[] = {
		"\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET /\tHTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET\t/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"get / http/1.1\r\nHost: evil.example\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : evil.example\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.example\r\nHost: evil.example\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		struct world w;
		world_up(&w, "enforce", 5000);
		struct sk_addr t;
		assert_int_equal(sk_addr_parse("198.18.1.30", &t), 0);
		int c = client(&w, &t, 7000);   /* the cidr rule would allow plain TCP here */
		assert_int_equal(send(c, reqs[i], strlen(reqs[i]), 0), (ssize_t)strlen(reqs[i]));
		spin(&w, 5);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "proto"), "http");
		assert_string_equal(jstr(j, "decision"), "deny");
		cJSON_Delete(j);
		close(c);
		world_down(&w);
	}
}

static void test_source_limit_resets_extra_connections(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	w.sc.limits.max_per_src = 2;
	int c1 = client(&w, &w.lo, w.upstream_port);
	int c2 = client(&w, &w.lo, w.upstream_port);
	int c3 = client_rc(&w, &w.lo, w.upstream_port, -EBUSY);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 2);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "reason"), "source_limit");
	cJSON_Delete(j);
	close(c1);
	close(c2);
	close(c3);
	world_down(&w);
}

/* ---- every client byte that can name a host is checked ---- */

static int accept_up(struct world *w)
{
	int up = -1;
	for (int i = 0; i < 300 && up < 0; i++) {
		spin(w, 1);
		up = accept4(w->upstream_ls, NULL, NULL, SOCK_NONBLOCK);
	}
	return up;
}

/* The upstream connection up ends (FIN or reset) without having carried a single byte. */
static void assert_upstream_got_nothing(struct world *w, int up)
{
	char g[64];
	ssize_t r = -1;
	for (int i = 0; i < 200; i++) {
		spin(w, 1);
		r = recv(up, g, sizeof(g), 0);
		if (r >= 0 || errno != EAGAIN)
			break;
	}
	assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
	close(up);
}

/* Nothing reached the upstream: no connection, or (an early connect, a bound and allowed destination)
 * connections that end without a byte. */
static void assert_nothing_upstream(struct world *w)
{
	int up;
	while ((up = accept4(w->upstream_ls, NULL, NULL, SOCK_NONBLOCK)) >= 0)
		assert_upstream_got_nothing(w, up);
}

/* Reads from fd while spinning the loop until want bytes or EOF/error; returns the count. */
static size_t recv_some(struct world *w, int fd, void *buf, size_t want)
{
	size_t have = 0;
	for (int i = 0; i < 400 && have < want; i++) {
		spin(w, 1);
		ssize_t r = recv(fd, (char *)buf + have, want - have, 0);
		if (r > 0)
			have += (size_t)r;
		else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
	}
	return have;
}

/* Spins until fd reads EOF (true) or a bound passes (false). */
static bool wait_eof(struct world *w, int fd)
{
	char b[256];
	for (int i = 0; i < 400; i++) {
		spin(w, 1);
		ssize_t r = recv(fd, b, sizeof(b), 0);
		if (r == 0)
			return true;
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return false;
	}
	return false;
}

#define SHARED_POLICY \
	"version: 1\n" \
	"mode: enforce\n" \
	"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n" \
	"egress:\n" \
	"  - host: allowed.example\n" \
	"blockPrivate: false\n"

#define BUDGET_POLICY \
	"version: 1\n" \
	"mode: %s\n" \
	"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n" \
	"egress:\n" \
	"  - host: allowed.example\n" \
	"    budget: { sent: 100, connections: 3, window: 1m }\n" \
	"blockPrivate: false\n"

/* Reads every audit line there is into lines (each owned); returns how many. */
static int all_audit(struct world *w, cJSON **lines, int cap)
{
	static char buf[65536];
	ssize_t n = read(w->audit_r, buf, sizeof(buf) - 1);
	int k = 0;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *s = buf, *nl; (nl = strchr(s, '\n')) && k < cap; s = nl + 1) {
		*nl = '\0';
		lines[k++] = cJSON_Parse(s);
	}
	return k;
}

/* sent: 100 — the upstream gets exactly 100 bytes of a longer request, the relay is reset, and the next
 * connection gets 403 budget_exhausted before any upstream connect. */
static void test_budget_cuts_relay_then_denies_with_403(void **state)
{
	(void)state;
	struct world w;
	char tmpl[1024];
	(void)snprintf(tmpl, sizeof(tmpl), BUDGET_POLICY, "enforce");
	world_up_policy(&w, tmpl, 5000);
	bind_fake(&w);
	char req[400];
	int hl = snprintf(req, sizeof(req), "POST /up HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 300\r\n\r\n");
	memset(req + hl, 'x', 300);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, req, (size_t)hl + 300, 0), hl + 300);
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[512];
	assert_int_equal(recv_some(&w, up, got, sizeof(got)), 100);
	assert_memory_equal(got, req, 100);
	cJSON *lines[8] = { 0 };
	int n = all_audit(&w, lines, 8);
	assert_int_equal(n, 1);
	assert_string_equal(jstr(lines[0], "event"), "deny");
	assert_string_equal(jstr(lines[0], "reason"), "budget_exhausted");
	assert_string_equal(jstr(lines[0], "name"), "allowed.example");
	assert_int_equal(cJSON_GetObjectItem(lines[0], "bytes_out")->valuedouble, 100);
	cJSON_Delete(lines[0]);
	close(up);
	close(c);

	static const char get[] = "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, get, sizeof(get) - 1, 0), (ssize_t)sizeof(get) - 1);
	spin(&w, 5);
	char back[512] = { 0 };
	assert_true(recv_some(&w, c, back, sizeof(back) - 1) > 24);
	assert_true(strncmp(back, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(back, "stockade: egress denied (budget_exhausted)\n"));
	assert_int_equal(accept(w.upstream_ls, NULL, NULL), -1);   /* never connected upstream */
	n = all_audit(&w, lines, 8);
	assert_int_equal(n, 1);
	assert_string_equal(jstr(lines[0], "decision"), "deny");
	assert_string_equal(jstr(lines[0], "reason"), "budget_exhausted");
	cJSON_Delete(lines[0]);
	struct sk_budget_entry *e = sk_budget_for_rule(&w.sc.budgets, 0);
	assert_non_null(e);
	assert_int_equal(e->used[SK_BUDGET_SENT], 100);
	assert_int_equal(e->used[SK_BUDGET_CONNS], 1);   /* the refused one is not counted */
	assert_int_equal(e->refused, 2);
	close(c);
	world_down(&w);
}

/* One connection spends the budget: another open relay of the same rule, idle, is cut at once too. */
static void test_budget_spent_cuts_the_other_relays(void **state)
{
	(void)state;
	struct world w;
	char tmpl[1024];
	(void)snprintf(tmpl, sizeof(tmpl), BUDGET_POLICY, "enforce");
	world_up_policy(&w, tmpl, 5000);
	bind_fake(&w);
	static const char small[] = "POST /a HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 2\r\n\r\nhi";
	int c1 = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c1, small, sizeof(small) - 1, 0), (ssize_t)sizeof(small) - 1);
	int up1 = accept_up(&w);
	assert_true(up1 >= 0);
	char got[512];
	assert_int_equal(recv_some(&w, up1, got, sizeof(small) - 1), sizeof(small) - 1);
	char req[400];
	int hl = snprintf(req, sizeof(req), "POST /b HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 300\r\n\r\n");
	memset(req + hl, 'x', 300);
	int c2 = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c2, req, (size_t)hl + 300, 0), hl + 300);
	int up2 = accept_up(&w);
	assert_true(up2 >= 0);
	/* what the first left of the 100 bytes, not one more */
	assert_int_equal(recv_some(&w, up2, got, sizeof(got)), 100 - (sizeof(small) - 1));
	/* the idle first relay went too: its client sees the end without sending anything */
	assert_true(wait_eof(&w, c1));
	cJSON *lines[8] = { 0 };
	int n = all_audit(&w, lines, 8);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++) {
		assert_string_equal(jstr(lines[i], "event"), "deny");
		assert_string_equal(jstr(lines[i], "reason"), "budget_exhausted");
		cJSON_Delete(lines[i]);
	}
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	close(up1);
	close(up2);
	close(c1);
	close(c2);
	world_down(&w);
}

/* mode audit: everything passes, one would_deny line when the relay crosses the budget. */
static void test_budget_audit_mode_reports_only(void **state)
{
	(void)state;
	struct world w;
	char tmpl[1024];
	(void)snprintf(tmpl, sizeof(tmpl), BUDGET_POLICY, "audit");
	world_up_policy(&w, tmpl, 5000);
	bind_fake(&w);
	char req[400];
	int hl = snprintf(req, sizeof(req), "POST /up HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 300\r\n\r\n");
	memset(req + hl, 'x', 300);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, req, (size_t)hl + 300, 0), hl + 300);
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[512];
	assert_int_equal(recv_some(&w, up, got, (size_t)hl + 300), (size_t)hl + 300);
	cJSON *lines[8] = { 0 };
	int n = all_audit(&w, lines, 8);
	assert_int_equal(n, 1);
	assert_string_equal(jstr(lines[0], "event"), "deny");
	assert_string_equal(jstr(lines[0], "decision"), "would_deny");
	assert_string_equal(jstr(lines[0], "reason"), "budget_exhausted");
	cJSON_Delete(lines[0]);
	close(up);
	close(c);
	world_down(&w);
}

static void test_silent_start_connects_but_late_hello_with_denied_sni_is_denied(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, SHARED_POLICY, 150);
	bind_fake(&w);
	int c = client(&w, &w.lo, w.upstream_port);
	/* Silent past the deadline: connected as server-first, the greeting flows to the agent. */
	int up = accept_up(&w);
	assert_true(up >= 0);
	assert_int_equal(send(up, "GREET\r\n", 7, MSG_NOSIGNAL), 7);
	char g[16] = { 0 };
	assert_int_equal(recv_some(&w, c, g, 7), 7);
	assert_memory_equal(g, "GREET\r\n", 7);
	/* Then a hello naming another tenant of the same address. */
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	uint8_t *p = memmem(hello, n, "allowed.example", 15);
	assert_non_null(p);
	memcpy(p, "denied0.example", 15);
	/* split inside the name: the late flight is reassembled before it is judged */
	feed_split(&w, c, hello, n, (size_t)(p - hello) + 7);
	spin(&w, 10);
	uint8_t got[64];
	assert_int_equal(recv_some(&w, c, got, 7), 7);
	assert_memory_equal(got, SK_TLS_ALERT_ACCESS_DENIED, 7);
	/* Not one byte of the hello reached the upstream. */
	uint8_t junk[64];
	ssize_t r = recv(up, junk, sizeof(junk), 0);
	assert_true(r <= 0);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "deny");
	assert_string_equal(jstr(j, "reason"), "no_match");
	assert_string_equal(jstr(j, "proto"), "tls");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "late")));
	cJSON_Delete(j);
	close(c);
	close(up);
	world_down(&w);
}

static void test_silent_start_then_allowed_hello_is_relayed(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, SHARED_POLICY, 150);
	bind_fake(&w);
	uint64_t t0 = sk_monotonic_ms();
	int c = client(&w, &w.lo, w.upstream_port);
	int up = accept_up(&w);
	assert_true(up >= 0);
	/* Silent past the 150 ms peek (the upstream may be up before that: connected early). */
	while (sk_monotonic_ms() - t0 < 220)
		spin(&w, 1);
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	const uint8_t *name = memmem(hello, n, "allowed.example", 15);
	assert_non_null(name);
	feed_split(&w, c, hello, n, (size_t)(name - hello) + 7);
	uint8_t got[4096];
	assert_int_equal(recv_some(&w, up, got, n), n);
	assert_memory_equal(got, hello, n);
	close(c);
	close(up);
	spin(&w, 20);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "allow");
	assert_string_equal(jstr(j, "name"), "allowed.example");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "late")));
	cJSON_Delete(j);
	world_down(&w);
}

static void test_silent_start_then_withheld_host_is_denied(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, SHARED_POLICY, 50);
	bind_fake(&w);
	int c = client(&w, &w.lo, w.upstream_port);
	int up = accept_up(&w);
	assert_true(up >= 0);
	static const char req[] = "GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n";
	assert_int_equal(send(c, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	char got[512] = { 0 };
	assert_true(recv_some(&w, c, got, 24) >= 24);
	assert_true(strncmp(got, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	char junk[64];
	assert_true(recv(up, junk, sizeof(junk), 0) <= 0);
	close(c);
	close(up);
	world_down(&w);
}

static void test_pipelined_second_request_with_denied_host_never_leaves(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, SHARED_POLICY, 5000);
	bind_fake(&w);
	static const char r1[] = "GET /1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	static const char r2[] = "GET /2 HTTP/1.1\r\nHost: denied.example\r\n\r\n";
	char both[256];
	(void)snprintf(both, sizeof(both), "%s%s", r1, r2);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, both, strlen(both), 0), (ssize_t)strlen(both));
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[256] = { 0 };
	size_t have = recv_some(&w, up, got, sizeof(got) - 1);
	/* Exactly the first request, then EOF: the upstream was shut for writing after it. */
	assert_int_equal(have, sizeof(r1) - 1);
	assert_memory_equal(got, r1, sizeof(r1) - 1);
	assert_true(wait_eof(&w, up));
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	assert_int_equal(send(up, resp, sizeof(resp) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(resp) - 1);
	close(up);
	char back[1024] = { 0 };
	size_t bl = recv_some(&w, c, back, sizeof(back) - 1);
	assert_true(bl > sizeof(resp) - 1);
	assert_memory_equal(back, resp, sizeof(resp) - 1);
	assert_true(strncmp(back + sizeof(resp) - 1, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "deny");
	assert_string_equal(jstr(j, "name"), "denied.example");
	assert_int_equal(cJSON_GetObjectItem(j, "request")->valueint, 2);
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

static void test_kept_alive_requests_each_checked_bodies_intact(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, SHARED_POLICY, 5000);
	bind_fake(&w);
	static const char r1[] = "POST /a HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 5\r\n\r\nhello";
	static const char r2[] = "POST /b HTTP/1.1\r\nHost: allowed.example\r\nTransfer-Encoding: chunked\r\n\r\n"
				 "3\r\nabc\r\n0\r\n\r\n";
	static const char r3[] = "GET /c HTTP/1.1\r\nHost: denied.example\r\n\r\n";
	int c = client(&w, &w.lo, w.upstream_port);
	feed_bytewise(&w, c, (const uint8_t *)r1, sizeof(r1) - 1);
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[512] = { 0 };
	assert_int_equal(recv_some(&w, up, got, sizeof(r1) - 1), sizeof(r1) - 1);
	assert_memory_equal(got, r1, sizeof(r1) - 1);
	feed_bytewise(&w, c, (const uint8_t *)r2, sizeof(r2) - 1);
	assert_int_equal(recv_some(&w, up, got, sizeof(r2) - 1), sizeof(r2) - 1);
	assert_memory_equal(got, r2, sizeof(r2) - 1);
	assert_int_equal(send(c, r3, sizeof(r3) - 1, 0), (ssize_t)sizeof(r3) - 1);
	/* The third never arrives: the upstream sees EOF. */
	assert_true(wait_eof(&w, up));
	close(up);
	char back[512] = { 0 };
	assert_true(recv_some(&w, c, back, 24) >= 24);
	assert_true(strncmp(back, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	close(c);
	world_down(&w);
}

static void test_h2c_upgrade_and_preface_are_denied(void **state)
{
	(void)state;
	static const char *const reqs[] = {
		"GET / HTTP/1.1\r\nHost: allowed.example\r\nConnection: Upgrade, HTTP2-Settings\r\n"
		"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
		"0\r\n\r\n",
		"CONNECT allowed.example:443 HTTP/1.1\r\nHost: allowed.example:443\r\n\r\n",
	};
	static const char *const why[] = { "http_h2c_upgrade", "http_h2c_prior", "http_te_cl", "http_connect" };
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		struct world w;
		world_up_policy(&w, SHARED_POLICY, 5000);
		bind_fake(&w);
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(send(c, reqs[i], strlen(reqs[i]), 0), (ssize_t)strlen(reqs[i]));
		spin(&w, 10);
		assert_nothing_upstream(&w);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "decision"), "deny");
		assert_string_equal(jstr(j, "reason"), why[i]);
		if (i != 1)   /* the h2c preface names no host */
			assert_string_equal(jstr(j, "name"), "allowed.example");
		cJSON_Delete(j);
		close(c);
		world_down(&w);
	}
}

static void test_declared_tcp_port_connects_at_accept(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w,
			"version: 1\n"
			"egress:\n"
			"  - host: allowed.example\n"
			"    ports: [443]\n"
			"  - cidr: 127.0.0.1/32\n"
			"    ports: [{PORT}]\n"
			"    protocol: tcp\n"
			"blockPrivate: false\n",
			5000);
	uint64_t t0 = sk_monotonic_ms();
	int c = client(&w, &w.lo, w.upstream_port);
	int up = accept_up(&w);
	assert_true(up >= 0);
	assert_true(sk_monotonic_ms() - t0 < 1000);   /* not the 5 s peek */
	assert_int_equal(send(up, "220 hi\r\n", 8, MSG_NOSIGNAL), 8);
	char g[16];
	assert_int_equal(recv_some(&w, c, g, 8), 8);
	/* A 1-byte write that could begin a request line passes at once: the port is declared tcp. */
	assert_int_equal(send(c, "x", 1, 0), 1);
	assert_int_equal(recv_some(&w, up, g, 1), 1);
	assert_int_equal(g[0], 'x');
	close(c);
	close(up);
	world_down(&w);
}

/* ---- TLS: every hello is judged, not only the first (the second ClientHello) ---- */

/* A ServerHello record, or a HelloRetryRequest (its random is SHA-256("HelloRetryRequest")). */
static size_t server_hello_record(bool hrr, uint8_t *out)
{
	static const uint8_t hrr_random[32] = {
		0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
		0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
	};
	/* body: version, random, sid len 0, suite 0x1301, compression 0, no extensions */
	static const size_t body = 2 + 32 + 1 + 2 + 1 + 2;
	size_t o = 0;
	out[o++] = 0x16; out[o++] = 0x03; out[o++] = 0x03;
	out[o++] = 0; out[o++] = (uint8_t)(4 + body);
	out[o++] = 0x02; out[o++] = 0; out[o++] = 0; out[o++] = (uint8_t)body;
	out[o++] = 0x03; out[o++] = 0x03;
	memcpy(out + o, hrr_random, 32);
	if (!hrr)
		out[o + 31] ^= 0x5a;
	o += 32;
	out[o++] = 0; out[o++] = 0x13; out[o++] = 0x01; out[o++] = 0; out[o++] = 0; out[o++] = 0;
	return o;
}

/* The openssl capture with its SNI set to name (15 characters, so every length field stays valid). */
static size_t hello_named(const char *name, uint8_t *hello, size_t cap)
{
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, cap);
	uint8_t *p = memmem(hello, n, "allowed.example", 15);
	assert_non_null(p);
	assert_int_equal(strlen(name), 15);
	memcpy(p, name, 15);
	return n;
}

/* Allowed first hello through to an accepted upstream, which has read it; the server answers with
 * `answer` (an HRR or a ServerHello) and the client has read that answer. */
static void tls_to_answer(struct world *w, int *c, int *up, const uint8_t *answer, size_t alen)
{
	uint8_t hello[4096], got[4096];
	size_t n = hello_named("allowed.example", hello, sizeof(hello));
	*c = client(w, &w->lo, w->upstream_port);
	assert_int_equal(send(*c, hello, n, 0), (ssize_t)n);
	*up = accept_up(w);
	assert_true(*up >= 0);
	assert_int_equal(recv_some(w, *up, got, n), n);
	assert_memory_equal(got, hello, n);
	assert_int_equal(send(*up, answer, alen, 0), (ssize_t)alen);
	assert_int_equal(recv_some(w, *c, got, alen), alen);
	assert_memory_equal(got, answer, alen);
}

static void test_second_hello_after_hrr_naming_another_host_is_denied(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	uint8_t hrr[128], hello2[4096], got[4096];
	size_t hl = server_hello_record(true, hrr);
	int c, up;
	tls_to_answer(&w, &c, &up, hrr, hl);
	/* Middlebox-compatibility CCS, then the second hello for a tenant the policy denies. */
	size_t n2 = hello_named("denied0.example", hello2, sizeof(hello2));
	assert_int_equal(send(c, "\x14\x03\x03\x00\x01\x01", 6, 0), 6);
	assert_int_equal(send(c, hello2, n2, 0), (ssize_t)n2);
	spin(&w, 10);
	/* The agent gets the access_denied alert; the upstream gets the CCS at most, never the hello. */
	ssize_t r = recv(c, got, sizeof(got), 0);
	assert_int_equal(r, 7);
	assert_memory_equal(got, "\x15\x03\x03\x00\x02\x02\x31", 7);
	size_t have = 0;
	for (int i = 0; i < 50; i++) {
		spin(&w, 1);
		ssize_t k = recv(up, got + have, sizeof(got) - have, 0);
		if (k > 0)
			have += (size_t)k;
		else if (k == 0 || errno != EAGAIN)
			break;
	}
	assert_true(have <= 6);
	assert_null(memmem(got, have, "denied0", 7));
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_non_null(j);
	assert_string_equal(jstr(j, "decision"), "deny");
	assert_string_equal(jstr(j, "reason"), "tls_second_hello");
	assert_string_equal(jstr(j, "name"), "denied0.example");
	assert_string_equal(jstr(j, "proto"), "tls");
	cJSON_Delete(j);
	close(c);
	close(up);
	spin(&w, 5);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

/* The normal HRR case (curl, Chromium against a server preferring another group): the same name again
 * passes, and once the server's real ServerHello is through, the client's records are no longer hellos
 * (a TLS 1.2 key exchange, encrypted data) and pass as they are. */
static void test_second_hello_same_name_then_server_hello_ungates(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	uint8_t hrr[128], sh[128], hello2[4096], got[4096];
	size_t hl = server_hello_record(true, hrr);
	int c, up;
	tls_to_answer(&w, &c, &up, hrr, hl);
	size_t n2 = hello_named("allowed.example", hello2, sizeof(hello2));
	uint8_t flight[4200];
	static const uint8_t ccs[6] = { 0x14, 0x03, 0x03, 0x00, 0x01, 0x01 };
	memcpy(flight, ccs, sizeof(ccs));
	memcpy(flight + 6, hello2, n2);
	assert_int_equal(send(c, flight, 6 + n2, 0), (ssize_t)(6 + n2));
	assert_int_equal(recv_some(&w, up, got, 6 + n2), 6 + n2);
	assert_memory_equal(got, flight, 6 + n2);
	size_t sl = server_hello_record(false, sh);
	assert_int_equal(send(up, sh, sl, 0), (ssize_t)sl);
	assert_int_equal(recv_some(&w, c, got, sl), sl);
	/* A handshake record that is no ClientHello (ClientKeyExchange) and bytes that are no record at all:
	 * past the hellos the TLS gate no longer judges. */
	static const uint8_t after[] = "\x16\x03\x03\x00\x04\x10\x00\x00\x00" "opaque";
	assert_int_equal(send(c, after, sizeof(after) - 1, 0), (ssize_t)(sizeof(after) - 1));
	assert_int_equal(recv_some(&w, up, got, sizeof(after) - 1), sizeof(after) - 1);
	assert_memory_equal(got, after, sizeof(after) - 1);
	close(c);
	close(up);
	spin(&w, 20);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_non_null(j);
	assert_string_equal(jstr(j, "decision"), "allow");
	assert_string_equal(jstr(j, "event"), "conn");
	cJSON_Delete(j);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

/* A server that sends part of a first record and closes: the peek that holds the server's side cannot
 * see that EOF behind the queued bytes, yet the client gets those bytes and the close at once, not at
 * the idle timeout. */
static void test_server_closing_after_a_partial_record_is_not_held(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	uint8_t sh[128], got[128];
	server_hello_record(false, sh);
	uint8_t hello[4096];
	size_t n = hello_named("allowed.example", hello, sizeof(hello));
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, hello, n, 0), (ssize_t)n);
	int up = accept_up(&w);
	assert_true(up >= 0);
	assert_int_equal(recv_some(&w, up, hello, n), n);
	assert_int_equal(send(up, sh, 20, 0), 20);   /* the ServerHello's random is cut short */
	spin(&w, 3);
	assert_int_equal(shutdown(up, SHUT_WR), 0);
	assert_int_equal(recv_some(&w, c, got, 20), 20);
	assert_memory_equal(got, sh, 20);
	assert_true(wait_eof(&w, c));
	close(c);
	close(up);
	spin(&w, 5);
	world_down(&w);
}

/* Before the server has answered, only records that carry no hello pass (CCS, alerts, 0-RTT data); a
 * handshake record that is not a ClientHello, or bytes that are no TLS record, are refused. */
static void test_before_the_server_answers_only_hellos_are_handshake(void **state)
{
	(void)state;
	static const struct {
		const char *bytes;
		size_t n;
		bool pass;
	} cases[] = {
		{ "\x17\x03\x03\x00\x03" "abc", 8, true },        /* 0-RTT early data */
		{ "\x16\x03\x03\x00\x04\x10\x00\x00\x00", 9, false }, /* ClientKeyExchange before a ServerHello */
		{ "GET / HTTP/1.1\r\n\r\n", 18, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;
		world_up(&w, "enforce", 5000);
		uint8_t hello[4096], got[4096];
		size_t n = hello_named("allowed.example", hello, sizeof(hello));
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(send(c, hello, n, 0), (ssize_t)n);
		int up = accept_up(&w);
		assert_true(up >= 0);
		assert_int_equal(recv_some(&w, up, got, n), n);
		assert_int_equal(send(c, cases[i].bytes, cases[i].n, 0), (ssize_t)cases[i].n);
		if (cases[i].pass) {
			assert_int_equal(recv_some(&w, up, got, cases[i].n), cases[i].n);
			assert_memory_equal(got, cases[i].bytes, cases[i].n);
		} else {
			assert_int_equal(recv_some(&w, c, got, 7), 7);
			assert_memory_equal(got, "\x15\x03\x03\x00\x02\x02\x31", 7);
			int count;
			cJSON *j = last_audit(&w, &count);
			assert_non_null(j);
			assert_string_equal(jstr(j, "reason"), "tls_second_hello");
			cJSON_Delete(j);
			ssize_t k = recv(up, got, sizeof(got), MSG_DONTWAIT);
			assert_true(k <= 0);
		}
		close(c);
		close(up);
		spin(&w, 5);
		world_down(&w);
	}
}

/* The record layer: every TLS content type first is TLS, judged as TLS. A hello led by an alert or a CCS
 * record, or framed under another record version, was relayed as plain TCP with its SNI unread (the
 * address's binding allowed it); now it is denied as a TLS hello that does not parse. */
static void test_tls_led_by_another_record_or_version_is_denied_as_tls(void **state)
{
	(void)state;
	uint8_t hello[4096];
	size_t n = hello_named("denied0.example", hello, sizeof(hello));
	uint8_t msg[4200];
	for (int k = 0; k < 5; k++) {
		struct world w;
		world_up(&w, "enforce", 5000);
		bind_fake(&w);   /* allowed.example is bound to the destination: plain TCP there would pass */
		size_t len = 0;
		if (k <= 3) {
			/* one record of each content type, then the hello */
			static const uint8_t lead[4][7] = {
				{ 0x15, 0x03, 0x01, 0x00, 0x02, 0x01, 0x00 },
				{ 0x14, 0x03, 0x01, 0x00, 0x01, 0x01, 0 },
				{ 0x17, 0x03, 0x01, 0x00, 0x01, 0x00, 0 },
				{ 0x16, 0x02, 0x00, 0x00, 0x01, 0x00, 0 },
			};
			size_t ll = lead[k][0] == 0x15 ? 7 : 6;
			memcpy(msg, lead[k], ll);
			len = ll;
		}
		memcpy(msg + len, hello, n);
		if (k == 4)
			msg[len + 1] = 0x00;   /* the hello's own record under version 0x0001 */
		len += n;
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(send(c, msg, len, 0), (ssize_t)len);
		spin(&w, 5);
		uint8_t got[64];
		ssize_t r = recv(c, got, sizeof(got), 0);
		assert_int_equal(r, 7);
		assert_memory_equal(got, "\x15\x03\x03\x00\x02\x02\x31", 7);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_non_null(j);
		assert_string_equal(jstr(j, "decision"), "deny");
		assert_string_equal(jstr(j, "proto"), "tls");
		assert_string_equal(jstr(j, "reason"), "malformed_hello");
		cJSON_Delete(j);
		assert_nothing_upstream(&w);
		close(c);
		spin(&w, 5);
		world_down(&w);
	}
}

static void test_byte_that_cannot_begin_tls_or_http_is_decided_at_once(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w,
			"version: 1\n"
			"egress:\n"
			"  - cidr: 127.0.0.1/32\n"
			"    ports: [{PORT}]\n"
			"blockPrivate: false\n",
			5000);
	uint64_t t0 = sk_monotonic_ms();
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, "{", 1, 0), 1);
	int up = accept_up(&w);
	assert_true(up >= 0);
	char g[4];
	assert_int_equal(recv_some(&w, up, g, 1), 1);
	assert_int_equal(g[0], '{');
	assert_true(sk_monotonic_ms() - t0 < 1000);
	close(c);
	close(up);
	world_down(&w);
}

static void test_ech_grease_denied_by_default_allowed_by_policy(void **state)
{
	(void)state;
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/go-ech.bin", hello, sizeof(hello));
	for (int allow = 0; allow < 2; allow++) {
		struct world w;
		world_up_policy(&w,
				allow ? "version: 1\negress:\n  - host: public.example\ntls: { echGrease: allow }\n"
					"blockPrivate: false\n"
				      : "version: 1\negress:\n  - host: public.example\nblockPrivate: false\n",
				5000);
		bind_fake(&w);
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(send(c, hello, n, 0), (ssize_t)n);
		spin(&w, 5);
		int up = allow ? accept_up(&w) : -1;
		if (allow) {
			assert_true(up >= 0);
			uint8_t got[4096];
			assert_int_equal(recv_some(&w, up, got, n), n);
			close(up);
		} else {
			assert_nothing_upstream(&w);
			int count;
			cJSON *j = last_audit(&w, &count);
			assert_int_equal(count, 1);
			assert_string_equal(jstr(j, "reason"), "ech");
			assert_string_equal(jstr(j, "name"), "public.example");   /* the outer name, for the audit */
			cJSON_Delete(j);
		}
		close(c);
		world_down(&w);
	}
}

static void ws_world(struct world *w, int *c, int *up)
{
	world_up_policy(w, SHARED_POLICY, 5000);
	bind_fake(w);
	static const char req[] = "GET /chat HTTP/1.1\r\nHost: allowed.example\r\nUpgrade: websocket\r\n"
				  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
				  "Sec-WebSocket-Version: 13\r\n\r\n";
	*c = client(w, &w->lo, w->upstream_port);
	assert_int_equal(send(*c, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	*up = accept_up(w);
	assert_true(*up >= 0);
	char got[512];
	assert_int_equal(recv_some(w, *up, got, sizeof(req) - 1), sizeof(req) - 1);
}

static void test_websocket_upgrade_is_opaque_after_101(void **state)
{
	(void)state;
	struct world w;
	int c, up;
	ws_world(&w, &c, &up);
	static const char resp[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
				   "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
	assert_int_equal(send(up, resp, sizeof(resp) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(resp) - 1);
	char back[512];
	assert_int_equal(recv_some(&w, c, back, sizeof(resp) - 1), sizeof(resp) - 1);
	/* A binary frame (not HTTP at all) now passes as it is. */
	static const uint8_t frame[] = { 0x82, 0x85, 1, 2, 3, 4, 'h' ^ 1, 'e' ^ 2, 'l' ^ 3, 'l' ^ 4, 'o' ^ 1 };
	assert_int_equal(send(c, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
	uint8_t got[64];
	assert_int_equal(recv_some(&w, up, got, sizeof(frame)), sizeof(frame));
	assert_memory_equal(got, frame, sizeof(frame));
	close(c);
	close(up);
	world_down(&w);
}

static void test_declined_websocket_upgrade_keeps_checking_requests(void **state)
{
	(void)state;
	struct world w;
	int c, up;
	ws_world(&w, &c, &up);
	static const char resp[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
	assert_int_equal(send(up, resp, sizeof(resp) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(resp) - 1);
	char back[512];
	assert_int_equal(recv_some(&w, c, back, sizeof(resp) - 1), sizeof(resp) - 1);
	static const char r2[] = "GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n";
	assert_int_equal(send(c, r2, sizeof(r2) - 1, 0), (ssize_t)sizeof(r2) - 1);
	char got[64];
	assert_int_equal(recv_some(&w, up, got, sizeof(got)), 0);   /* EOF, nothing of r2 */
	close(up);
	char deny[512] = { 0 };
	assert_true(recv_some(&w, c, deny, 24) >= 24);
	assert_true(strncmp(deny, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	close(c);
	world_down(&w);
}

/* A resolver stand-in: remembers one request; the test answers it. */
struct fake_resolver {
	sk_resolve_done_fn done;
	void *arg;
	char name[256];
	int starts, cancels;
};

static int fake_resolve_start(void *ctx, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
			      void *arg, struct sk_resolve_req **req)
{
	(void)addr;
	struct fake_resolver *f = ctx;
	f->done = done;
	f->arg = arg;
	(void)snprintf(f->name, sizeof(f->name), "%s", name);
	f->starts++;
	*req = (struct sk_resolve_req *)f;
	return 0;
}

static void fake_resolve_cancel(void *ctx, struct sk_resolve_req *req)
{
	(void)req;
	struct fake_resolver *f = ctx;
	f->cancels++;
	f->done = NULL;
}

static bool never_bound(void *ctx, const struct sk_addr *addr, const char *name)
{
	(void)ctx;
	(void)addr;
	(void)name;
	return false;
}

#define MORE_REC "\x17\x03\x03\x00\x04" "MORE"   /* 0-RTT data after the hello */

static void test_binding_miss_is_resolved_by_the_sidecar(void **state)
{
	(void)state;
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	for (int match = 0; match < 2; match++) {
		struct world w;
		struct fake_resolver f = { 0 };
		world_up_policy(&w, SHARED_POLICY, 5000);
		w.sc.bind.name_bound = never_bound;
		w.sc.resolve.ctx = &f;
		w.sc.resolve.start = fake_resolve_start;
		w.sc.resolve.cancel = fake_resolve_cancel;
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(send(c, hello, n, 0), (ssize_t)n);
		spin(&w, 5);
		assert_int_equal(f.starts, 1);
		assert_string_equal(f.name, "allowed.example");
		assert_int_equal(accept4(w.upstream_ls, NULL, NULL, 0), -1);   /* nothing before the answer */
		/* More bytes while the name resolves: their edge comes before the relay runs, which must
		 * still look at the client when it starts. */
		assert_int_equal(send(c, MORE_REC, 9, 0), 9);
		spin(&w, 3);
		f.done(f.arg, match ? SK_RESOLVE_MATCH : SK_RESOLVE_MISMATCH);
		spin(&w, 5);
		int up = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
		if (match) {
			assert_true(up >= 0);
			uint8_t got[4200];
			assert_int_equal(recv_some(&w, up, got, n + 9), n + 9);
			assert_memory_equal(got, hello, n);
			assert_memory_equal(got + n, MORE_REC, 9);
			close(up);
			close(c);
			spin(&w, 10);
		} else {
			assert_int_equal(up, -1);
			uint8_t got[16];
			assert_int_equal(recv_some(&w, c, got, 7), 7);
			assert_memory_equal(got, SK_TLS_ALERT_ACCESS_DENIED, 7);
			close(c);
		}
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "binding"), match ? "resolved" : "mismatch");
		assert_string_equal(jstr(j, "decision"), match ? "allow" : "deny");
		if (!match)
			assert_string_equal(jstr(j, "reason"), "sni_ip_mismatch");
		cJSON_Delete(j);
		world_down(&w);
	}
}

/* The sidecar's own lookup failed (timeout, SERVFAIL, NXDOMAIN: FAILED) — never a match: the TLS client
 * gets the alert, nothing reaches the upstream, the line says deny / unresolved. A start the DNS filter
 * refuses (the rule's queries budget spent: -EDQUOT; the name too long for dns.maxQueryLength: -EPERM)
 * denies at once, the same way. A forged SNI must not pass because the sidecar could not resolve it. */
static int refusing_start_rc;
static int refusing_resolve_start(void *ctx, const char *name, const struct sk_addr *addr, sk_resolve_done_fn done,
				  void *arg, struct sk_resolve_req **req)
{
	struct fake_resolver *f = ctx;
	(void)name;
	(void)addr;
	(void)done;
	(void)arg;
	f->starts++;
	*req = NULL;
	return refusing_start_rc;
}

static void test_binding_miss_failed_resolution_denies(void **state)
{
	(void)state;
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	static const int refusals[] = { 0, -EDQUOT, -EPERM };   /* 0: started, then done(FAILED) */
	for (size_t k = 0; k < sizeof(refusals) / sizeof(refusals[0]); k++) {
		struct world w;
		struct fake_resolver f = { 0 };
		world_up_policy(&w, SHARED_POLICY, 5000);
		w.sc.bind.name_bound = never_bound;
		w.sc.resolve.ctx = &f;
		refusing_start_rc = refusals[k];
		w.sc.resolve.start = refusals[k] ? refusing_resolve_start : fake_resolve_start;
		w.sc.resolve.cancel = fake_resolve_cancel;
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(send(c, hello, n, 0), (ssize_t)n);
		spin(&w, 5);
		assert_int_equal(f.starts, 1);
		if (!refusals[k]) {
			assert_int_equal(accept4(w.upstream_ls, NULL, NULL, 0), -1);   /* nothing before the answer */
			f.done(f.arg, SK_RESOLVE_FAILED);
			spin(&w, 5);
		}
		assert_int_equal(accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK), -1);
		uint8_t got[16];
		assert_int_equal(recv_some(&w, c, got, 7), 7);
		assert_memory_equal(got, SK_TLS_ALERT_ACCESS_DENIED, 7);
		close(c);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "decision"), "deny");
		assert_string_equal(jstr(j, "reason"), "sni_ip_mismatch");
		assert_string_equal(jstr(j, "binding"), "unresolved");
		cJSON_Delete(j);
		world_down(&w);
	}
}

static void test_client_gone_while_resolving_cancels(void **state)
{
	(void)state;
	struct world w;
	struct fake_resolver f = { 0 };
	world_up_policy(&w, SHARED_POLICY, 5000);
	w.sc.bind.name_bound = never_bound;
	w.sc.resolve.ctx = &f;
	w.sc.resolve.start = fake_resolve_start;
	w.sc.resolve.cancel = fake_resolve_cancel;
	static const char req[] = "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	spin(&w, 5);
	assert_int_equal(f.starts, 1);
	close(c);
	sk_proxy_free(w.sc.proxy);   /* shutdown with the resolution in flight */
	w.sc.proxy = NULL;
	assert_int_equal(f.cancels, 1);
	world_down(&w);
}

/* ---- early connect: the upstream handshake overlaps the client's first flight ---- */

/* Spins until the upstream listener has a connection queued, or a bound passes; no bytes are sent. */
static int accept_up_quiet(struct world *w, int rounds)
{
	int up = -1;
	for (int i = 0; i < rounds && up < 0; i++) {
		spin(w, 1);
		up = accept4(w->upstream_ls, NULL, NULL, SOCK_NONBLOCK);
	}
	return up;
}

/* An allowed, bound destination: the upstream sees the connection before the client sent anything, not
 * a byte on it until the hello is allowed, then exactly the hello; and it is the only connection made. */
static void test_early_connect_to_bound_allowed_name_carries_only_allowed_bytes(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	bind_fake(&w);
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/curl.bin", hello, sizeof(hello));
	int c = client(&w, &w.lo, w.upstream_port);
	int up = accept_up_quiet(&w, 200);
	assert_true(up >= 0);   /* connected before the first client byte */
	char g[8192];
	spin(&w, 5);
	assert_int_equal(recv(up, g, sizeof(g), 0), -1);
	assert_int_equal(errno, EAGAIN);
	/* All but the last byte of the hello: still undecided, still nothing upstream. */
	feed_bytewise(&w, c, hello, n - 1);
	spin(&w, 5);
	assert_int_equal(recv(up, g, sizeof(g), 0), -1);
	assert_int_equal(errno, EAGAIN);
	feed_bytewise(&w, c, hello + n - 1, 1);
	assert_int_equal(recv_some(&w, up, g, n), n);
	assert_memory_equal(g, hello, n);
	assert_int_equal(accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK), -1);   /* no second connect */
	assert_int_equal(send(up, "SERVER", 6, MSG_NOSIGNAL), 6);
	assert_int_equal(recv_some(&w, c, g, 6), 6);
	assert_memory_equal(g, "SERVER", 6);
	close(c);
	close(up);
	spin(&w, 20);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "allow");
	assert_string_equal(jstr(j, "binding"), "ok");
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, (int)n);
	cJSON_Delete(j);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

/* The same bound address, a name the policy denies in the hello: the pre-opened upstream is closed
 * without a byte, and the client gets exactly the deny it always got. */
static void test_early_connect_denied_sni_sends_nothing_upstream(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	bind_fake(&w);
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	uint8_t *p = memmem(hello, n, "allowed.example", 15);
	assert_non_null(p);
	memcpy(p, "denied0.example", 15);
	int c = client(&w, &w.lo, w.upstream_port);
	int up = accept_up_quiet(&w, 200);
	assert_true(up >= 0);
	feed_bytewise(&w, c, hello, n);
	spin(&w, 5);
	uint8_t got[64];
	assert_int_equal(recv(c, got, sizeof(got), 0), 7);
	assert_memory_equal(got, SK_TLS_ALERT_ACCESS_DENIED, 7);
	assert_upstream_got_nothing(&w, up);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "deny");
	assert_string_equal(jstr(j, "reason"), "no_match");
	assert_string_equal(jstr(j, "name"), "denied0.example");
	cJSON_Delete(j);
	assert_int_equal(accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK), -1);
	close(c);
	close(up);
	spin(&w, 5);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

/* No early connect (no SYN at all) for an unbound destination, nor for a bound name the policy does
 * not allow on that port, nor under a budget that admits no connection; when the bytes allow, the
 * decision connects as it always did. */
static void test_no_early_connect_unbound_or_denied_port_or_spent_budget(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	for (int k = 0; k < 3; k++) {
		struct world w;
		if (k == 0) {
			world_up(&w, "enforce", 5000);   /* nothing bound */
		} else if (k == 1) {
			world_up_policy(&w,
					"version: 1\n"
					"egress:\n"
					"  - host: allowed.example\n"
					"    ports: [1]\n"
					"blockPrivate: false\n",
					5000);
			bind_fake(&w);
		} else {
			world_up_policy(&w,
					"version: 1\n"
					"egress:\n"
					"  - host: allowed.example\n"
					"    budget: { connections: 1, window: 1h }\n"
					"blockPrivate: false\n",
					5000);
			bind_fake(&w);
			/* The budget's one connection, used and closed. */
			int c0 = client(&w, &w.lo, w.upstream_port);
			int up0 = accept_up_quiet(&w, 200);
			assert_true(up0 >= 0);
			assert_int_equal(send(c0, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
			char g0[128];
			assert_int_equal(recv_some(&w, up0, g0, sizeof(req) - 1), sizeof(req) - 1);
			close(c0);
			close(up0);
			spin(&w, 20);
		}
		int c = client(&w, &w.lo, w.upstream_port);
		assert_int_equal(accept_up_quiet(&w, 50), -1);
		if (k == 0) {
			/* Allowed by its Host (no binding table: unchecked): connected after the decision. */
			assert_int_equal(send(c, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
			int up = accept_up_quiet(&w, 200);
			assert_true(up >= 0);
			char g[128];
			assert_int_equal(recv_some(&w, up, g, sizeof(req) - 1), sizeof(req) - 1);
			close(up);
		}
		close(c);
		spin(&w, 10);
		world_down(&w);
	}
}


/* ---- the first flight at accept, and an upstream connect the relay starts before it completes ---- */

/* A client whose first flight is already queued when the proxy takes the connection. */
static int client_sent(struct world *w, const struct sk_addr *dst, uint16_t port, const void *msg, size_t len)
{
	int sp[2];
	struct sk_err err = { 0 };
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
	assert_int_equal(send(sp[0], msg, len, 0), (ssize_t)len);
	assert_int_equal(sk_proxy_adopt(w->sc.proxy, sp[1], &w->src, 40000, dst, port, &err), 0);
	return sp[0];
}

/* A first flight queued at accept is read and decided in the accept's own turn: a denied hello's alert is
 * there before the loop ran once, and the pre-opened upstream carries nothing. An allowed head queued at
 * accept goes upstream, then its body, arriving split afterwards, exactly once and in order. */
static void test_first_flight_queued_at_accept_is_decided_in_that_turn(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	bind_fake(&w);
	uint8_t hello[4096];
	size_t n = read_file("sidecar/proxy/testdata/hellos/openssl.bin", hello, sizeof(hello));
	uint8_t *p = memmem(hello, n, "allowed.example", 15);
	assert_non_null(p);
	memcpy(p, "denied0.example", 15);
	int c = client_sent(&w, &w.lo, w.upstream_port, hello, n);
	uint8_t got[64];
	assert_int_equal(recv(c, got, sizeof(got), 0), 7);   /* no loop round yet */
	assert_memory_equal(got, SK_TLS_ALERT_ACCESS_DENIED, 7);
	spin(&w, 3);
	assert_nothing_upstream(&w);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "reason"), "no_match");
	cJSON_Delete(j);
	close(c);
	spin(&w, 3);

	static const char head[] = "POST /x HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 10\r\n\r\n";
	const size_t hl = sizeof(head) - 1;
	c = client_sent(&w, &w.lo, w.upstream_port, head, hl);
	int up = accept_up(&w);
	assert_true(up >= 0);
	feed_bytewise(&w, c, (const uint8_t *)"0123456789", 10);
	char g[256];
	assert_int_equal(recv_some(&w, up, g, hl + 10), hl + 10);
	assert_memory_equal(g, head, hl);
	assert_memory_equal(g + hl, "0123456789", 10);
	assert_int_equal(accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK), -1);   /* one connection */
	static const char resp[] = "HTTP/1.1 204 No Content\r\n\r\n";
	assert_int_equal(send(up, resp, sizeof(resp) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(resp) - 1);
	assert_int_equal(recv_some(&w, c, g, sizeof(resp) - 1), sizeof(resp) - 1);
	assert_memory_equal(g, resp, sizeof(resp) - 1);
	close(c);
	close(up);
	spin(&w, 20);
	j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "allow");
	assert_string_equal(jstr(j, "binding"), "ok");
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, (int)hl + 10);
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_in")->valueint, (int)sizeof(resp) - 1);
	cJSON_Delete(j);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

/* A first flight longer than the peek cap: the peek stops at the cap with bytes still in the socket, and
 * the relay picks them up without another edge (none comes: the client has sent everything). Once queued
 * whole at accept, once with its start at accept and the rest in one later write (whose edge the peek
 * took). */
static void test_flight_beyond_the_peek_cap_is_relayed_whole(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	bind_fake(&w);
	w.sc.limits.peek_cap = 512;
	char req[2200];
	int hl = snprintf(req, sizeof(req), "POST /big HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 2000\r\n\r\n");
	for (int i = 0; i < 2000; i++)
		req[hl + i] = (char)('a' + i % 26);
	const size_t n = (size_t)hl + 2000;
	for (int split = 0; split < 2; split++) {
		const size_t first = split ? 20 : n;
		int c = client_sent(&w, &w.lo, w.upstream_port, req, first);
		if (split) {
			spin(&w, 3);
			assert_int_equal(send(c, req + first, n - first, 0), (ssize_t)(n - first));
		}
		int up = accept_up(&w);
		assert_true(up >= 0);
		char g[2400];
		assert_int_equal(recv_some(&w, up, g, n), n);
		assert_memory_equal(g, req, n);
		close(c);
		close(up);
		spin(&w, 20);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "decision"), "allow");
		assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, (int)n);
		cJSON_Delete(j);
	}
	world_down(&w);
}

/* The upstream's accept queue is full (listen backlog 0 and one connection queued): the kernel drops the
 * proxy's SYN and the connect stays in progress until the SYN is sent again (~1 s). */
static int fill_upstream_backlog(struct world *w)
{
	assert_int_equal(listen(w->upstream_ls, 0), 0);
	int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(w->upstream_port) };
	int rc = connect(f, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(rc == 0 || errno == EINPROGRESS);
	return f;
}

/* The verdict comes while the upstream connect is still in progress: the relay starts at once and its
 * first send only learns the connect is not done; bytes that come meanwhile (split) wait, unsent and in
 * order, until the connect completes, then go in one stream. */
static void test_upstream_connect_completing_after_the_verdict(void **state)
{
	(void)state;
	for (int early = 0; early < 2; early++) {
		struct world w;
		world_up(&w, "enforce", 5000);
		if (early)
			bind_fake(&w);
		int filler = fill_upstream_backlog(&w);
		static const char head[] = "POST /y HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 6\r\n\r\n";
		const size_t hl = sizeof(head) - 1;
		int c = client_sent(&w, &w.lo, w.upstream_port, head, hl);
		feed_bytewise(&w, c, (const uint8_t *)"abc", 3);
		spin(&w, 5);
		feed_bytewise(&w, c, (const uint8_t *)"def", 3);
		assert_int_equal(sk_proxy_active(w.sc.proxy), 1);
		/* Free the queue: the SYN sent again completes the same connect. */
		int q = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
		assert_true(q >= 0);
		assert_int_equal(accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK), -1);   /* the SYN was dropped */
		int up = -1;
		for (int i = 0; i < 4000 && up < 0; i++) {
			spin(&w, 1);
			up = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
		}
		assert_true(up >= 0);
		char g[256];
		assert_int_equal(recv_some(&w, up, g, hl + 6), hl + 6);
		assert_memory_equal(g, head, hl);
		assert_memory_equal(g + hl, "abcdef", 6);
		assert_int_equal(accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK), -1);
		close(c);
		close(up);
		spin(&w, 20);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "decision"), "allow");
		assert_string_equal(jstr(j, "reason"), "rule");
		assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, (int)hl + 6);
		cJSON_Delete(j);
		close(q);
		close(filler);
		world_down(&w);
	}
}

/* A declared-tcp port connects at accept; a client that half-closes at once, before the upstream connect
 * completed, must not abort that connect (a shutdown in SYN_SENT would): the upstream is connected and
 * sees the EOF, and its answer still reaches the client. */
static void test_client_eof_while_upstream_connects_is_passed_on_after_connect(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w,
			"version: 1\n"
			"egress:\n"
			"  - cidr: 127.0.0.1/32\n"
			"    ports: [{PORT}]\n"
			"    protocol: tcp\n"
			"blockPrivate: false\n",
			5000);
	int filler = fill_upstream_backlog(&w);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(shutdown(c, SHUT_WR), 0);
	spin(&w, 5);
	int q = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
	assert_true(q >= 0);
	int up = -1;
	for (int i = 0; i < 4000 && up < 0; i++) {
		spin(&w, 1);
		up = accept4(w.upstream_ls, NULL, NULL, SOCK_NONBLOCK);
	}
	assert_true(up >= 0);
	assert_true(wait_eof(&w, up));
	assert_int_equal(send(up, "BYE", 3, MSG_NOSIGNAL), 3);
	char g[8];
	assert_int_equal(recv_some(&w, c, g, 3), 3);
	assert_memory_equal(g, "BYE", 3);
	close(up);
	assert_true(wait_eof(&w, c));
	close(c);
	close(q);
	close(filler);
	spin(&w, 5);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	world_down(&w);
}

/* A connect that never completes is cut at the connect deadline, relay or not: the client is reset and
 * the audit line says upstream_timeout. */
static void test_upstream_connect_timeout_while_relay_waits(void **state)
{
	(void)state;
	struct world w;
	world_up(&w, "enforce", 5000);
	bind_fake(&w);
	w.sc.limits.connect_timeout_ms = 30;
	int filler = fill_upstream_backlog(&w);
	static const char req[] = "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	int c = client_sent(&w, &w.lo, w.upstream_port, req, sizeof(req) - 1);
	for (int i = 0; i < 500 && sk_proxy_active(w.sc.proxy) > 0; i++)
		spin(&w, 1);
	assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "event"), "conn");
	assert_string_equal(jstr(j, "decision"), "allow");
	assert_string_equal(jstr(j, "reason"), "upstream_timeout");
	assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, 0);
	cJSON_Delete(j);
	char b[16];
	assert_true(recv(c, b, sizeof(b), 0) <= 0);
	close(c);
	close(filler);
	world_down(&w);
}

/* An upstream that refuses is reported as refused whether the refusal is learnt by the relay's first send
 * (the verdict came before the connect's outcome was seen: early connect with the flight queued at
 * accept, or a connect made after the verdict) or before the verdict (the early socket is dropped and the
 * verdict connects afresh). The client is reset; nothing was relayed. */
static void test_upstream_refused_is_reported_as_refused(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	for (int k = 0; k < 3; k++) {
		struct world w;
		world_up(&w, "enforce", 5000);
		if (k < 2)
			bind_fake(&w);
		/* Nobody listens on the port any more. */
		close(w.upstream_ls);
		w.upstream_ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		int c;
		if (k == 0) {
			c = client_sent(&w, &w.lo, w.upstream_port, req, sizeof(req) - 1);
		} else {
			c = client(&w, &w.lo, w.upstream_port);
			spin(&w, 5);   /* the early connect's refusal comes first (k == 1) */
			assert_int_equal(send(c, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
		}
		for (int i = 0; i < 200 && sk_proxy_active(w.sc.proxy) > 0; i++)
			spin(&w, 1);
		assert_int_equal(sk_proxy_active(w.sc.proxy), 0);
		int count;
		cJSON *j = last_audit(&w, &count);
		assert_int_equal(count, 1);
		assert_string_equal(jstr(j, "event"), "conn");
		assert_string_equal(jstr(j, "decision"), "allow");
		assert_string_equal(jstr(j, "reason"), "upstream_refused");
		assert_int_equal(cJSON_GetObjectItem(j, "bytes_out")->valueint, 0);
		cJSON_Delete(j);
		char b[16];
		assert_true(recv(c, b, sizeof(b), 0) <= 0);
		close(c);
		world_down(&w);
	}
}

/* ---- request rules (requests_gate.h) ---- */

#define REQ_POLICY(paths) \
	"version: 1\n" \
	"mode: enforce\n" \
	"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n" \
	"egress:\n" \
	"  - host: allowed.example\n" \
	"    protocol: http\n" \
	"    name: gh\n" \
	"    requests:\n" \
	"      - { methods: [GET], paths: [\"" paths "\"] }\n" \
	"blockPrivate: false\n"

static void test_request_rule_denies_first_request_with_json_403(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, REQ_POLICY("/a/**"), 5000);
	bind_fake(&w);
	static const char req[] = "POST /a/x?t=s3cret HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 0\r\n\r\n";
	int c = client(&w, &w.lo, w.upstream_port);
	feed_bytewise(&w, c, (const uint8_t *)req, sizeof(req) - 1);
	char got[1024] = { 0 };
	size_t n = recv_some(&w, c, got, sizeof(got) - 1);
	assert_true(n > 24);
	assert_true(strncmp(got, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(got, "\r\nx-stockade-reason: no_request_rule\r\n"));
	cJSON *b = cJSON_Parse(strstr(got, "\r\n\r\n") + 4);
	assert_non_null(b);
	assert_string_equal(jstr(b, "reason"), "no_request_rule");
	assert_string_equal(jstr(b, "rule"), "gh");
	assert_string_equal(jstr(b, "path"), "/a/x");
	cJSON_Delete(b);
	assert_nothing_upstream(&w);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "decision"), "deny");
	assert_string_equal(jstr(j, "reason"), "request_denied");
	assert_string_equal(jstr(j, "rule"), "gh");
	assert_string_equal(jstr(j, "method"), "POST");
	assert_string_equal(jstr(j, "path"), "/a/x");
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

/* A reload between two requests of one kept-alive connection: the second meets the request rules in
 * force, found by name though the rule moved to another index. */
static void test_request_rules_follow_a_reload_on_a_kept_alive_connection(void **state)
{
	(void)state;
	struct world w;
	world_up_policy(&w, REQ_POLICY("/a/**"), 5000);
	bind_fake(&w);
	static const char r1[] = "GET /a/1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	static const char r2[] = "GET /a/2 HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, r1, sizeof(r1) - 1, 0), (ssize_t)sizeof(r1) - 1);
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[512] = { 0 };
	assert_int_equal(recv_some(&w, up, got, sizeof(r1) - 1), sizeof(r1) - 1);
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	assert_int_equal(send(up, resp, sizeof(resp) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(resp) - 1);
	char back[1024] = { 0 };
	assert_int_equal(recv_some(&w, c, back, sizeof(resp) - 1), sizeof(resp) - 1);

	static const char next[] =
		"version: 1\n"
		"mode: enforce\n"
		"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n"
		"egress:\n"
		"  - host: other.example\n"
		"  - host: allowed.example\n"
		"    protocol: http\n"
		"    requests:\n"
		"      - { methods: [GET], paths: [\"/b/**\"] }\n"
		"blockPrivate: false\n";
	struct sk_policy *np = NULL;
	struct sk_diags diags = { 0 };
	assert_int_equal(sk_policy_load_buffer("<next>", next, sizeof(next) - 1, -1, &np, &diags), 0);
	sk_diags_free(&diags);
	sk_policy_free(sk_sidecar_swap_policy(&w.sc, np));

	assert_int_equal(send(c, r2, sizeof(r2) - 1, 0), (ssize_t)sizeof(r2) - 1);
	/* The upstream is shut for writing without the second request; once it is done answering what it
	 * got (it closes), the agent gets the 403. */
	assert_upstream_got_nothing(&w, up);
	memset(back, 0, sizeof(back));
	size_t n = recv_some(&w, c, back, sizeof(back) - 1);
	assert_true(n > 24);
	assert_true(strncmp(back, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(back, "\"rule\":\"1\""));
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_string_equal(jstr(j, "reason"), "request_denied");
	assert_string_equal(jstr(j, "path"), "/a/2");
	assert_int_equal(cJSON_GetObjectItem(j, "rule")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(j, "request")->valueint, 2);
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

/* Mode audit: the request its rules would deny goes upstream, with one would_deny line of its own that a
 * later allowed request on the connection does not hide. */
static void test_request_rules_in_mode_audit_report_each_request(void **state)
{
	(void)state;
	struct world w;
	static const char audit_policy[] =
		"version: 1\n"
		"mode: audit\n"
		"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n"
		"egress:\n"
		"  - host: allowed.example\n"
		"    protocol: http\n"
		"    requests:\n"
		"      - { methods: [GET], paths: [\"/a/**\"] }\n"
		"blockPrivate: false\n";
	world_up_policy(&w, audit_policy, 5000);
	bind_fake(&w);
	static const char r1[] = "DELETE /a/1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	static const char r2[] = "GET /a/2 HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	char both[256];
	(void)snprintf(both, sizeof(both), "%s%s", r1, r2);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, both, strlen(both), 0), (ssize_t)strlen(both));
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[256] = { 0 };
	assert_int_equal(recv_some(&w, up, got, strlen(both)), strlen(both));
	assert_memory_equal(got, both, strlen(both));
	close(up);
	close(c);
	spin(&w, 20);
	/* every line: the would_deny of request 1 with its method and path, then the connection's allow */
	char lines[8192] = { 0 };
	ssize_t n = read(w.audit_r, lines, sizeof(lines) - 1);
	assert_true(n > 0);
	char *nl = strchr(lines, '\n');
	assert_non_null(nl);
	*nl = '\0';
	cJSON *j1 = cJSON_Parse(lines), *j2 = cJSON_Parse(nl + 1);
	assert_non_null(j1);
	assert_non_null(j2);
	assert_string_equal(jstr(j1, "event"), "deny");
	assert_string_equal(jstr(j1, "decision"), "would_deny");
	assert_string_equal(jstr(j1, "reason"), "request_denied");
	assert_string_equal(jstr(j1, "method"), "DELETE");
	assert_string_equal(jstr(j1, "path"), "/a/1");
	assert_string_equal(jstr(j2, "event"), "conn");
	assert_string_equal(jstr(j2, "decision"), "allow");
	assert_null(cJSON_GetObjectItem(j2, "method"));
	cJSON_Delete(j1);
	cJSON_Delete(j2);
	world_down(&w);
}

static bool only_allowed_bound(void *ctx, const struct sk_addr *addr, const char *name)
{
	(void)ctx;
	(void)addr;
	return strcmp(name, "allowed.example") == 0;
}

/* A later request for another name that the sidecar must resolve first is held, then meets the request
 * rules of the rule the resolution confirmed (it was forwarded unjudged before). */
static void test_request_held_for_a_resolution_meets_request_rules(void **state)
{
	(void)state;
	struct world w;
	struct fake_resolver f = { 0 };
	world_up_policy(&w,
			"version: 1\n"
			"mode: enforce\n"
			"ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n"
			"egress:\n"
			"  - host: allowed.example\n"
			"  - host: api.example\n"
			"    protocol: http\n"
			"    requests:\n"
			"      - { methods: [GET], paths: [\"/a/**\"] }\n"
			"blockPrivate: false\n",
			5000);
	w.sc.bind.name_bound = only_allowed_bound;
	w.sc.resolve.ctx = &f;
	w.sc.resolve.start = fake_resolve_start;
	w.sc.resolve.cancel = fake_resolve_cancel;
	static const char r1[] = "GET /1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n";
	static const char r2[] = "POST /a/x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 0\r\n\r\n";
	char both[256];
	(void)snprintf(both, sizeof(both), "%s%s", r1, r2);
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, both, strlen(both), 0), (ssize_t)strlen(both));
	int up = accept_up(&w);
	assert_true(up >= 0);
	char got[256] = { 0 };
	assert_int_equal(recv_some(&w, up, got, sizeof(r1) - 1), sizeof(r1) - 1);
	spin(&w, 5);
	assert_int_equal(f.starts, 1);
	assert_string_equal(f.name, "api.example");
	f.done(f.arg, SK_RESOLVE_MATCH);
	assert_upstream_got_nothing(&w, up);
	char back[1024] = { 0 };
	size_t n = recv_some(&w, c, back, sizeof(back) - 1);
	assert_true(n > 24);
	assert_true(strncmp(back, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	assert_non_null(strstr(back, "\"path\":\"/a/x\""));
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_string_equal(jstr(j, "reason"), "request_denied");
	assert_string_equal(jstr(j, "name"), "api.example");
	assert_string_equal(jstr(j, "method"), "POST");
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

/* TLS under a rule with request rules: its requests cannot be read (no TLS termination yet), so the
 * connection is denied rather than every request let through. */
/* TLS on a rule with request rules: an inspect rule terminates it, but not without the inspection's CA and
 * trust bundle (this world has none: inspect_unavailable, refused before any connect): an alert, nothing
 * upstream, never spliced unread. (A rule that does not inspect cannot carry request rules for TLS: the
 * validator refuses it.) */
static void tls_under_request_rules(const char *rule, const char *reason)
{
	char pol[512];
	(void)snprintf(pol, sizeof(pol),
		       "version: 1\n"
		       "mode: enforce\n"
		       "ports: { proxy: 15001, dns: 15053, admin: 15000, api: 15080 }\n"
		       "egress:\n"
		       "  - host: allowed.example\n"
		       "%s"
		       "    access: read-only\n"
		       "blockPrivate: false\n", rule);
	struct world w;
	world_up_policy(&w, pol, 5000);
	bind_fake(&w);
	uint8_t hello[4096];
	size_t n = hello_named("allowed.example", hello, sizeof(hello));
	int c = client(&w, &w.lo, w.upstream_port);
	assert_int_equal(send(c, hello, n, 0), (ssize_t)n);
	char got[64];
	ssize_t r = (ssize_t)recv_some(&w, c, got, 7);
	assert_int_equal(r, 7);
	assert_int_equal((uint8_t)got[0], 0x15);   /* an alert record */
	assert_nothing_upstream(&w);
	int count;
	cJSON *j = last_audit(&w, &count);
	assert_int_equal(count, 1);
	assert_string_equal(jstr(j, "reason"), reason);
	assert_string_equal(jstr(j, "proto"), "tls");
	assert_null(cJSON_GetObjectItem(j, "method"));
	assert_null(cJSON_GetObjectItem(j, "inspected"));
	cJSON_Delete(j);
	close(c);
	world_down(&w);
}

static void test_tls_under_request_rules_is_denied(void **state)
{
	(void)state;
	tls_under_request_rules("    inspect: true\n", "inspect_unavailable");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_hello_bytewise_is_replayed_exactly),
		cmocka_unit_test(test_tls_denied_name_gets_access_denied_alert),
		cmocka_unit_test(test_second_hello_after_hrr_naming_another_host_is_denied),
		cmocka_unit_test(test_second_hello_same_name_then_server_hello_ungates),
		cmocka_unit_test(test_before_the_server_answers_only_hellos_are_handshake),
		cmocka_unit_test(test_server_closing_after_a_partial_record_is_not_held),
		cmocka_unit_test(test_tls_led_by_another_record_or_version_is_denied_as_tls),
		cmocka_unit_test(test_http_denied_host_gets_403_bytewise),
		cmocka_unit_test(test_loop_to_own_port_is_denied_before_reading),
		cmocka_unit_test(test_partial_hello_dies_at_peek_deadline),
		cmocka_unit_test(test_audit_mode_lets_denied_name_through_as_would_deny),
		cmocka_unit_test(test_plain_tcp_uses_ip_rules_and_resets),
		cmocka_unit_test(test_near_http_is_denied_as_http_not_relayed_as_tcp),
		cmocka_unit_test(test_source_limit_resets_extra_connections),
		cmocka_unit_test(test_silent_start_connects_but_late_hello_with_denied_sni_is_denied),
		cmocka_unit_test(test_silent_start_then_allowed_hello_is_relayed),
		cmocka_unit_test(test_silent_start_then_withheld_host_is_denied),
		cmocka_unit_test(test_pipelined_second_request_with_denied_host_never_leaves),
		cmocka_unit_test(test_kept_alive_requests_each_checked_bodies_intact),
		cmocka_unit_test(test_h2c_upgrade_and_preface_are_denied),
		cmocka_unit_test(test_declared_tcp_port_connects_at_accept),
		cmocka_unit_test(test_byte_that_cannot_begin_tls_or_http_is_decided_at_once),
		cmocka_unit_test(test_ech_grease_denied_by_default_allowed_by_policy),
		cmocka_unit_test(test_websocket_upgrade_is_opaque_after_101),
		cmocka_unit_test(test_declined_websocket_upgrade_keeps_checking_requests),
		cmocka_unit_test(test_binding_miss_is_resolved_by_the_sidecar),
		cmocka_unit_test(test_binding_miss_failed_resolution_denies),
		cmocka_unit_test(test_client_gone_while_resolving_cancels),
		cmocka_unit_test(test_budget_cuts_relay_then_denies_with_403),
		cmocka_unit_test(test_budget_spent_cuts_the_other_relays),
		cmocka_unit_test(test_budget_audit_mode_reports_only),
		cmocka_unit_test(test_early_connect_to_bound_allowed_name_carries_only_allowed_bytes),
		cmocka_unit_test(test_early_connect_denied_sni_sends_nothing_upstream),
		cmocka_unit_test(test_no_early_connect_unbound_or_denied_port_or_spent_budget),
		cmocka_unit_test(test_first_flight_queued_at_accept_is_decided_in_that_turn),
		cmocka_unit_test(test_flight_beyond_the_peek_cap_is_relayed_whole),
		cmocka_unit_test(test_upstream_connect_completing_after_the_verdict),
		cmocka_unit_test(test_upstream_connect_timeout_while_relay_waits),
		cmocka_unit_test(test_client_eof_while_upstream_connects_is_passed_on_after_connect),
		cmocka_unit_test(test_upstream_refused_is_reported_as_refused),
		cmocka_unit_test(test_request_rule_denies_first_request_with_json_403),
		cmocka_unit_test(test_request_rules_follow_a_reload_on_a_kept_alive_connection),
		cmocka_unit_test(test_request_rules_in_mode_audit_report_each_request),
		cmocka_unit_test(test_request_held_for_a_resolution_meets_request_rules),
		cmocka_unit_test(test_tls_under_request_rules_is_denied),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

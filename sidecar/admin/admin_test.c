/* sidecar/admin/admin_test.c — the admin port: head parsing, routing and status codes, readiness bodies, and the
 * socket side driven by a real loop (one request per connection, oversized and slow requests cut off). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "sidecar/admin/admin.h"
#include "sidecar/core/denials.h"
#include "sidecar/core/metrics.h"

/* ---- head parsing ---- */

static int parse(const char *s, struct sk_admin_request *req)
{
	return sk_admin_parse_head(s, strlen(s), req);
}

static void test_parse_complete_and_partial(void **state)
{
	(void)state;
	struct sk_admin_request req;
	const char *r = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: kube-probe/1.29\r\n\r\n";
	assert_int_equal(parse(r, &req), (int)strlen(r));
	assert_string_equal(req.method, "GET");
	assert_string_equal(req.target, "/metrics?x=1");
	for (size_t cut = 0; cut < strlen(r); cut++)
		assert_int_equal(sk_admin_parse_head(r, cut, &req), 0);
	assert_int_equal(parse("HEAD /healthz HTTP/1.0\r\n\r\n", &req), 26);
	assert_string_equal(req.method, "HEAD");
}

static void test_parse_malformed(void **state)
{
	(void)state;
	struct sk_admin_request req;
	assert_int_equal(parse("garbage\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET /x HTTP/2.0\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET x HTTP/1.1\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET  /x HTTP/1.1\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("G(T /x HTTP/1.1\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET /x HTTP/1.1\r\nno colon\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET /x HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET /x HTTP/1.1\r\nA: b\rc\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET /x\x01 HTTP/1.1\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("VERYLONGMETHODNAME /x HTTP/1.1\r\n\r\n", &req), -E2BIG);
	char big[2100];
	(void)snprintf(big, sizeof(big), "GET /%01500d HTTP/1.1\r\n\r\n", 0);
	assert_int_equal(parse(big, &req), -E2BIG);
	/* CRLF only (the sidecar's one HTTP/1 tokenizer, http1.h): bare LF and bare CR line ends are malformed */
	assert_int_equal(parse("HEAD /healthz HTTP/1.0\n\n", &req), -EINVAL);
	assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: a\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost: a\r\n\n", &req), -EINVAL);
	assert_int_equal(parse("GET /healthz HTTP/1.1\r\nHost : a\r\n\r\n", &req), -EINVAL);
	assert_int_equal(parse("GET http://x/healthz HTTP/1.1\r\n\r\n", &req), -EINVAL);
	/* a visibly broken request line is judged before the head completes */
	assert_int_equal(parse("garbage\r\n", &req), -EINVAL);
}

/* ---- routing ---- */

struct fixture {
	struct sk_metrics *m;
	struct sk_denials *d;
	struct sk_health h;
	struct sk_admin_view v;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(sk_metrics_new(&f->m, NULL), 0);
	assert_int_equal(sk_denials_new(8, &f->d, NULL), 0);
	f->h.last_beat_ms = 10000;
	f->v.metrics = f->m;
	f->v.denials = f->d;
	f->v.health = &f->h;
	f->v.now_ms = 10500;
	f->v.ready.dns_upstream_ok = true;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	sk_metrics_free(f->m);
	sk_denials_free(f->d);
	free(f);
	return 0;
}

static struct sk_admin_response handle(struct fixture *f, const char *method, const char *target)
{
	struct sk_admin_response r;
	assert_int_equal(sk_admin_handle(&f->v, method, target, &r), 0);
	assert_non_null(r.body);
	return r;
}

static void test_route_status_codes(void **state)
{
	struct fixture *f = *state;
	static const struct {
		const char *method, *target;
		int status;
	} cases[] = {
		{ "GET", "/healthz", 200 },      { "HEAD", "/healthz", 200 },   { "GET", "/metrics", 200 },
		{ "GET", "/denials", 200 },      { "GET", "/denials?limit=3", 200 },
		{ "GET", "/denials?limit=x", 400 }, { "GET", "/denials?limit=", 400 },
		{ "GET", "/readyz", 503 },       { "GET", "/", 404 },           { "GET", "/healthz/x", 404 },
		{ "POST", "/healthz", 405 },     { "PUT", "/metrics", 405 },    { "DELETE", "/denials", 405 },
		{ "OPTIONS", "/readyz", 405 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_admin_response r = handle(f, cases[i].method, cases[i].target);
		if (r.status != cases[i].status)
			fail_msg("%s %s: got %d, want %d", cases[i].method, cases[i].target, r.status, cases[i].status);
		assert_int_equal(r.allow_header, r.status == 405);
		free(r.body);
	}
}

static void test_ca_pem_served_only_when_configured(void **state)
{
	struct fixture *f = *state;
	struct sk_admin_response r = handle(f, "GET", "/ca.pem");
	assert_int_equal(r.status, 404);
	free(r.body);
	static const char pem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
	f->v.ca_pem = pem;
	f->v.ca_pem_len = sizeof(pem) - 1;
	r = handle(f, "GET", "/ca.pem?fresh=1");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/x-pem-file");
	assert_int_equal(r.body_len, sizeof(pem) - 1);
	assert_memory_equal(r.body, pem, sizeof(pem) - 1);
	free(r.body);
	r = handle(f, "POST", "/ca.pem");
	assert_int_equal(r.status, 405);
	free(r.body);
	r = handle(f, "GET", "/ca.pem/x");
	assert_int_equal(r.status, 404);
	free(r.body);
}

static void test_healthz_fails_when_heartbeat_stale(void **state)
{
	struct fixture *f = *state;
	f->v.now_ms = f->h.last_beat_ms + SK_HEALTH_STALE_MS + 1;
	struct sk_admin_response r = handle(f, "GET", "/healthz");
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "event loop heartbeat stale: last beat 5001 ms ago\n");
	free(r.body);
}

static void test_denials_limit(void **state)
{
	struct fixture *f = *state;
	sk_denials_push(f->d, "{\"a\":1}", 7);
	sk_denials_push(f->d, "{\"a\":2}", 7);
	struct sk_admin_response r = handle(f, "GET", "/denials?limit=1");
	assert_string_equal(r.body, "[{\"a\":2}]\n");
	assert_string_equal(r.content_type, "application/json");
	free(r.body);
	r = handle(f, "GET", "/denials?foo=bar&limit=5");
	assert_string_equal(r.body, "[{\"a\":1},{\"a\":2}]\n");
	free(r.body);
}

static void test_metrics_content_type(void **state)
{
	struct fixture *f = *state;
	struct sk_admin_response r = handle(f, "GET", "/metrics");
	assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
	assert_non_null(strstr(r.body, "# TYPE stockade_connections_total counter"));
	free(r.body);
}

static void test_readyz_no_policy_names_missing(void **state)
{
	struct fixture *f = *state;
	f->v.ready.dns_upstream_ok = false;
	f->v.ready.dns_upstreams = "10.96.0.10:53";
	struct sk_admin_response r = handle(f, "GET", "/readyz");
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "{\"ready\":false,\"reason\":\"policy not loaded; dns_upstream unreachable "
				    "10.96.0.10:53 (no answer yet)\",\"missing\":["
				    "{\"check\":\"policy\",\"reason\":\"policy not loaded\",\"detail\":\"no policy loaded\"},"
				    "{\"check\":\"dns_upstream\",\"reason\":\"dns_upstream unreachable 10.96.0.10:53 (no answer yet)\","
				    "\"detail\":\"no upstream resolver has answered yet\"}]}\n");
	free(r.body);
}

static const char policy_yaml[] = "version: 1\n"
				  "ports: { proxy: 25001, dns: 25053, admin: 25000, api: 25080 }\n"
				  "egress:\n  - host: example.com\n    ports: [443]\n";

static int listen_on(int type, uint16_t port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
}

/* A marker path (or any detail) with bytes that are not UTF-8 still gives valid JSON: escaped, never raw. */
static void test_readyz_escapes_non_ascii_bytes(void **state)
{
	struct fixture *f = *state;
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer("t.yaml", policy_yaml, strlen(policy_yaml), -1, &p, &diags), 0);
	f->v.policy = p;
	f->v.ready.marker_path = "/tmp/admin_test_\xff\xc3(_marker";
	struct sk_admin_response r = handle(f, "GET", "/readyz");
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "admin_test_\\u00ff\\u00c3(_marker"));
	for (const char *c = r.body; *c; c++)
		assert_true((unsigned char)*c < 0x80);
	free(r.body);
	f->v.policy = NULL;
	sk_policy_free(p);
}

static void test_readyz_flips_with_listeners_and_marker(void **state)
{
	struct fixture *f = *state;
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer("t.yaml", policy_yaml, strlen(policy_yaml), -1, &p, &diags), 0);
	char hash[17], marker[64], line[80];
	sk_policy_netns_hash(p, hash);
	(void)snprintf(marker, sizeof(marker), "/tmp/admin_test_marker.%d", (int)getpid());
	unlink(marker);

	f->v.policy = p;
	f->v.ready.marker_path = marker;
	struct sk_admin_response r = handle(f, "GET", "/readyz");
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "{\"check\":\"proxy_listener\",\"reason\":\"proxy_listener not listening on port "
				       "25001\",\"detail\":\"nothing listening on proxy port 25001\"}"));
	assert_non_null(strstr(r.body, "{\"check\":\"dns_listener\",\"reason\":\"dns_listener port 25053 not bound for "
				       "udp and tcp\",\"detail\":\"DNS port 25053 not bound for udp and tcp\"}"));
	assert_non_null(strstr(r.body, "\"check\":\"marker\",\"reason\":\"marker absent /tmp/admin_test_marker."));
	assert_non_null(strstr(r.body, "(the init has not written it)\",\"detail\":\"marker /tmp/admin_test_marker."));
	assert_non_null(strstr(r.body, ": open: No such file or directory\"}"));
	free(r.body);

	int proxy = listen_on(SOCK_STREAM, 25001), dns_u = listen_on(SOCK_DGRAM, 25053);
	int dns_t = listen_on(SOCK_STREAM, 25053);
	int dns_fds[2] = { dns_u, dns_t };
	f->v.ready.proxy_fds = &proxy;
	f->v.ready.n_proxy_fds = 1;
	f->v.ready.dns_fds = dns_fds;
	f->v.ready.n_dns_fds = 1;  /* udp only so far */
	write_file(marker, "hash=0000000000000000\ntime=1\n");
	r = handle(f, "GET", "/readyz");
	assert_int_equal(r.status, 503);
	assert_null(strstr(r.body, "proxy_listener"));
	assert_non_null(strstr(r.body, "DNS port 25053 not bound for tcp"));
	assert_non_null(strstr(r.body, "marker hash 0000000000000000 differs from the policy's netns hash"));
	free(r.body);

	f->v.ready.n_dns_fds = 2;
	(void)snprintf(line, sizeof(line), "hash=%s\nrules=3\n", hash);
	write_file(marker, line);
	r = handle(f, "GET", "/readyz");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"ready\":true}\n");
	free(r.body);

	f->v.ready.draining = true;
	r = handle(f, "GET", "/readyz");
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "\"check\":\"draining\""));
	free(r.body);

	write_file(marker, "hash=XYZ\n");
	f->v.ready.draining = false;
	r = handle(f, "GET", "/readyz");
	assert_non_null(strstr(r.body, "first line is not hash=<16 hex digits>"));
	free(r.body);

	close(proxy);
	close(dns_u);
	close(dns_t);
	unlink(marker);
	sk_policy_free(p);
}

static void test_serialize_head_only(void **state)
{
	(void)state;
	struct sk_admin_response r;
	sk_admin_error_response(405, &r);
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(sk_admin_serialize(&r, true, &out, &len), 0);
	assert_non_null(strstr(out, "HTTP/1.1 405 Method Not Allowed\r\n"));
	assert_non_null(strstr(out, "\r\nAllow: GET, HEAD\r\n"));
	char cl[64];
	(void)snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", r.body_len);
	assert_non_null(strstr(out, cl));
	assert_int_equal(strcmp(out + len - 4, "\r\n\r\n"), 0);
	free(out);
	free(r.body);
}

/* ---- socket side ---- */

struct live {
	struct fixture *f;
	struct sk_loop *loop;
	struct sk_admin *admin;
	uint16_t port;
};

static void gather(void *ctx, struct sk_admin_view *out)
{
	struct fixture *f = ctx;
	*out = f->v;
}

static void live_start(struct live *lv, struct fixture *f)
{
	struct sk_err err = { 0 };
	lv->f = f;
	assert_int_equal(sk_loop_new(&lv->loop, &err), 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(sk_admin_start(lv->loop, (struct sockaddr *)&sa, sizeof(sa), gather, f, &lv->admin, &err), 0);
	socklen_t sl = sizeof(sa);
	assert_int_equal(getsockname(sk_admin_fd(lv->admin), (struct sockaddr *)&sa, &sl), 0);
	lv->port = ntohs(sa.sin_port);
}

static void live_stop(struct live *lv)
{
	sk_admin_free(lv->admin);
	sk_loop_free(lv->loop);
}

static int live_connect(struct live *lv)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(lv->port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Drives the loop until the server closes fd's connection (EOF) or rounds run out; returns what was read. */
static char *live_read_all(struct live *lv, int fd, int max_rounds)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = calloc(1, cap + 1);
	assert_non_null(buf);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	struct sk_err err = { 0 };
	for (int i = 0; i < max_rounds; i++) {
		assert_true(sk_loop_run_once(lv->loop, 50, &err) >= 0);
		for (;;) {
			ssize_t n = recv(fd, buf + len, cap - len, 0);
			if (n > 0) {
				len += (size_t)n;
				continue;
			}
			if (n == 0)
				return buf;
			break;
		}
	}
	return buf;
}

static void test_live_requests(void **state)
{
	struct fixture *f = *state;
	struct live lv;
	live_start(&lv, f);

	int fd = live_connect(&lv);
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(send(fd, req, sizeof(req) - 1, 0), (ssize_t)(sizeof(req) - 1));
	char *resp = live_read_all(&lv, fd, 40);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(resp, "\r\n\r\nok\n"));
	free(resp);
	close(fd);

	/* request head arriving a byte at a time, HEAD: no body */
	fd = live_connect(&lv);
	const char hreq[] = "HEAD /metrics HTTP/1.0\r\n\r\n";
	for (size_t i = 0; i < sizeof(hreq) - 1; i++) {
		assert_int_equal(send(fd, hreq + i, 1, 0), 1);
		struct sk_err err = { 0 };
		assert_true(sk_loop_run_once(lv.loop, 0, &err) >= 0);
	}
	resp = live_read_all(&lv, fd, 40);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(resp, "Content-Type: text/plain; version=0.0.4"));
	assert_int_equal(strcmp(resp + strlen(resp) - 4, "\r\n\r\n"), 0);
	free(resp);
	close(fd);

	fd = live_connect(&lv);
	const char post[] = "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
	send(fd, post, sizeof(post) - 1, 0);
	resp = live_read_all(&lv, fd, 40);
	assert_non_null(strstr(resp, "HTTP/1.1 405 Method Not Allowed\r\n"));
	free(resp);
	close(fd);

	fd = live_connect(&lv);
	send(fd, "\x16\x03\x01\x00\x05hello\r\n\r\n", 14, 0);
	resp = live_read_all(&lv, fd, 40);
	assert_non_null(strstr(resp, "HTTP/1.1 400 Bad Request\r\n"));
	free(resp);
	close(fd);

	/* a head that never ends within 8 KiB */
	fd = live_connect(&lv);
	char junk[SK_ADMIN_HEAD_MAX + 100];
	static const char pre[] = "GET / HTTP/1.1\r\nX: ";
	memset(junk, 'a', sizeof(junk));
	for (size_t i = 0; pre[i]; i++)
		junk[i] = pre[i];
	send(fd, junk, sizeof(junk), 0);
	resp = live_read_all(&lv, fd, 40);
	assert_non_null(strstr(resp, "HTTP/1.1 431 "));
	free(resp);
	close(fd);

	live_stop(&lv);
}

static void test_live_slow_request_cut_off(void **state)
{
	struct fixture *f = *state;
	struct live lv;
	live_start(&lv, f);
	int fd = live_connect(&lv);
	send(fd, "GET /healthz HTTP/1.1\r\n", 23, 0);  /* and then nothing */
	uint64_t t0 = sk_monotonic_ms();
	char *resp = live_read_all(&lv, fd, 200);  /* up to ~10 s of rounds */
	uint64_t took = sk_monotonic_ms() - t0;
	assert_non_null(strstr(resp, "HTTP/1.1 408 Request Timeout\r\n"));
	assert_true(took >= SK_ADMIN_DEADLINE_MS - 100 && took < SK_ADMIN_DEADLINE_MS + 2000);
	free(resp);
	close(fd);
	live_stop(&lv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_complete_and_partial),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test_setup_teardown(test_route_status_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_pem_served_only_when_configured, setup, teardown),
		cmocka_unit_test_setup_teardown(test_healthz_fails_when_heartbeat_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denials_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_content_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readyz_no_policy_names_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readyz_flips_with_listeners_and_marker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readyz_escapes_non_ascii_bytes, setup, teardown),
		cmocka_unit_test(test_serialize_head_only),
		cmocka_unit_test_setup_teardown(test_live_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_slow_request_cut_off, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

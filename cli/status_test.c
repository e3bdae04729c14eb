/* cli/status_test.c — `stockade-policy status` against a fake admin port on loopback (a thread answering
 * canned /readyz, /metrics and /denials): the ready summary and exit 0; not ready with its reason and exit
 * 1; -o json; the agent's host names with escape bytes never reaching the terminal; answers that are not a
 * sidecar's (a 200 whose body says not ready, a non-HTTP answer, a bad metrics line, nothing listening)
 * exit 5; the metrics reader on its own; the URL forms. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "cli/status.h"

struct route {
	const char *path;           /* prefix of the request target */
	const char *answer;         /* the whole answer, head and body */
};

struct fake {
	int fd;
	char url[64];
	const struct route *routes;
	size_t n;
	pthread_t th;
};

static void *serve(void *arg)
{
	struct fake *f = arg;
	for (;;) {
		int c = accept(f->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char req[4096];
		size_t got = 0;
		while (got < sizeof(req) - 1) {
			ssize_t n = recv(c, req + got, sizeof(req) - 1 - got, 0);
			if (n <= 0)
				break;
			got += (size_t)n;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[got] = '\0';
		const char *answer = "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\nno\n";
		for (size_t i = 0; i < f->n; i++)
			if (f->routes[i].path && !strncmp(req + 4, f->routes[i].path, strlen(f->routes[i].path)))
				answer = f->routes[i].answer;
		(void)!write(c, answer, strlen(answer));
		close(c);
	}
}

static void fake_start(struct fake *f, const struct route *routes, size_t n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	f->routes = routes;
	f->n = n;
	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->fd >= 0);
	assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->fd, 8), 0);
	assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &al), 0);
	(void)snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	assert_int_equal(pthread_create(&f->th, NULL, serve, f), 0);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);   /* the blocked accept returns */
	assert_int_equal(pthread_join(f->th, NULL), 0);
	close(f->fd);
}

#define OK_JSON "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
#define OK_TEXT "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"

static const char metrics[] = OK_TEXT
	"# HELP stockade_policy_loaded 1 when a policy is in force.\n# TYPE stockade_policy_loaded gauge\n"
	"stockade_policy_loaded 1\n"
	"stockade_policy_info{hash=\"1a2b3c4d5e6f7a8b\",netns_hash=\"0011223344556677\",mode=\"enforce\",source=\"/etc/stockade/policy.yaml\"} 1\n"
	"stockade_policy_rules 3\n"
	"stockade_policy_reloads_total{result=\"ok\"} 2\nstockade_policy_reloads_total{result=\"failed\"} 1\n"
	"stockade_reload_last_timestamp_seconds 1795900000\nstockade_reload_last_success 0\n"
	"stockade_connections_total{decision=\"allow\",reason=\"rule\",rule=\"0\",proto=\"tls\"} 40\n"
	"stockade_connections_total{decision=\"allow\",reason=\"rule\",rule=\"1\",proto=\"http\"} 2\n"
	"stockade_connections_total{decision=\"deny\",reason=\"no_match\",rule=\"\",proto=\"tls\"} 5\n"
	"stockade_dns_queries_total{result=\"forwarded\",qtype=\"A\"} 9\n"
	"stockade_dns_queries_total{result=\"denied\",qtype=\"AAAA\"} 4\n"
	"stockade_budget_exhausted_total{rule=\"0\",kind=\"bytes\"} 1\n"
	"stockade_decision_latency_seconds_bucket{le=\"+Inf\"} 47\n";
static const char denials[] = OK_JSON
	"[{\"v\":1,\"ts\":\"2026-11-29T03:00:00.000Z\",\"event\":\"deny\",\"decision\":\"deny\",\"policy\":\"x\","
	"\"name\":\"evil\\u001b[31m.example\",\"dst\":\"198.18.1.10:443\",\"proto\":\"tls\",\"reason\":\"no_match\"},"
	"{\"v\":1,\"ts\":\"2026-11-29T03:00:01.000Z\",\"event\":\"dns\",\"policy\":\"x\",\"name\":\"blocked.example\","
	"\"qtype\":\"AAAA\",\"reason\":\"denied\"}]\n";

static char *run(const char *url, bool json, int *ex)
{
	char *text = NULL, *errs = NULL;
	size_t len = 0, elen = 0;
	FILE *out = open_memstream(&text, &len), *err = open_memstream(&errs, &elen);
	struct sk_status_opts o = { .url = url, .limit = 10, .json = json, .timeout_ms = 3000 };
	*ex = sk_status_run(&o, out, err);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(fclose(err), 0);
	if (*ex == SK_EXIT_RUNTIME) {   /* what was said about it */
		free(text);
		return errs;
	}
	free(errs);
	return text;
}

static void test_ready(void **state)
{
	(void)state;
	const struct route routes[] = { { "/readyz", OK_JSON "{\"ready\":true}\n" }, { "/metrics", metrics },
					{ "/denials?limit=10", denials } };
	struct fake f;
	fake_start(&f, routes, 3);
	int ex;
	char *out = run(f.url, false, &ex);
	assert_int_equal(ex, SK_EXIT_OK);
	char want[2048];
	(void)snprintf(want, sizeof(want),
		       "sidecar   %s\nready     yes\n"
		       "policy    hash 1a2b3c4d5e6f7a8b, netns 0011223344556677, mode enforce, 3 rules, from /etc/stockade/policy.yaml\n"
		       "reloads   2 applied, 1 rejected; last attempt 2026-11-28T21:06:40Z REJECTED\n"
		       "conns     42 allowed, 5 denied\n"
		       "dns       13 queries, 4 denied\n"
		       "budgets   exhausted 1 times\n"
		       "denials   last 2 (newest last, at most 10)\n"
		       "    2026-11-29T03:00:00.000Z deny/deny evil?[31m.example -> 198.18.1.10:443 tls (no_match)\n"
		       "    2026-11-29T03:00:01.000Z dns blocked.example AAAA (denied)\n", f.url);
	assert_string_equal(out, want);
	free(out);

	out = run(f.url, true, &ex);
	assert_int_equal(ex, SK_EXIT_OK);
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ready")));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "policy"), "hash")->valuestring, "1a2b3c4d5e6f7a8b");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "connections"), "denied")->valueint, 5);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "denials")), 2);
	assert_null(strchr(out, '\x1b'));   /* escaped as \u001b by the JSON writer */
	cJSON_Delete(j);
	free(out);
	fake_stop(&f);
}

static void test_not_ready(void **state)
{
	(void)state;
	const struct route routes[] = {
		{ "/readyz", "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n"
			     "{\"ready\":false,\"reason\":\"dns_upstream unreachable 10.96.0.10:53\",\"missing\":[]}\n" },
		{ "/metrics", OK_TEXT "stockade_policy_loaded 0\n" }, { "/denials", OK_JSON "[]\n" } };
	struct fake f;
	fake_start(&f, routes, 3);
	int ex;
	char *out = run(f.url, false, &ex);
	assert_int_equal(ex, SK_EXIT_FAIL);
	assert_non_null(strstr(out, "\nready     NO: dns_upstream unreachable 10.96.0.10:53\npolicy    none in force\n"));
	assert_non_null(strstr(out, "denials   0 (newest last, at most 10)\n"));
	free(out);
	fake_stop(&f);
}

static void test_not_a_sidecar(void **state)
{
	(void)state;
	int ex;
	struct {
		struct route routes[3];
		const char *said;
	} cases[] = {
		{ { { "/readyz", OK_JSON "{\"ready\":false}\n" } }, "status 200 with a body that is not the sidecar's" },
		{ { { "/readyz", "SSH-2.0-OpenSSH\r\n" } }, "not an HTTP answer" },
		{ { { "/readyz", OK_JSON "{\"ready\":true}\n" }, { "/metrics", OK_TEXT "stockade_policy_loaded{ 1\n" } },
		  "/metrics line 1: not a sample" },
		{ { { "/readyz", OK_JSON "{\"ready\":true}\n" }, { "/metrics", OK_TEXT "" }, { "/denials", OK_JSON "{}" } },
		  "not a JSON array" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f;
		fake_start(&f, cases[i].routes, 3);
		char *out = run(f.url, false, &ex);
		assert_int_equal(ex, SK_EXIT_RUNTIME);
		if (!strstr(out, cases[i].said))
			fail_msg("case %zu: %s", i, out);
		free(out);
		fake_stop(&f);
	}
	/* nothing listening: a port just closed */
	struct fake f;
	fake_start(&f, NULL, 0);
	char url[64];
	(void)snprintf(url, sizeof(url), "%s", f.url);
	fake_stop(&f);
	char *out = run(url, false, &ex);
	assert_int_equal(ex, SK_EXIT_RUNTIME);
	assert_non_null(strstr(out, "Connection refused"));
	free(out);
}

static void test_metrics_and_urls(void **state)
{
	(void)state;
	struct sk_status_metrics m;
	struct sk_err err = { 0 };
	static const char esc[] = "stockade_policy_info{hash=\"a\\\"b\\\\c\\nd\",mode=\"audit\",} 1\n"
				  "stockade_connections_total{decision=\"would_deny\"} 7 1700000000000\n";
	assert_int_equal(sk_status_parse_metrics(esc, sizeof(esc) - 1, &m, &err), 0);
	assert_string_equal(m.hash, "a\"b\\c\nd");
	assert_string_equal(m.mode, "audit");
	assert_true(m.conn_would_deny == 7);
	assert_true(m.reload_last_ts == -1);
	static const char *const bad[] = { "x{a=\"b\\q\"} 1\n", "x{a=\"b} 1\n", "x 1x\n", "x\n", "{a=\"b\"} 1\n",
					   "x{a=b} 1\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sk_status_parse_metrics(bad[i], strlen(bad[i]), &m, &err) != -EINVAL)
			fail_msg("case %zu read", i);
	char *body = NULL;
	size_t len = 0;
	assert_int_equal(sk_status_get("https://127.0.0.1:1", "/readyz", 100, &body, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "expected http://HOST:PORT"));
	assert_int_equal(sk_status_get("http://127.0.0.1:1/readyz", "/readyz", 100, &body, &len, &err), -EINVAL);
	assert_int_equal(sk_status_get("http://[::1", "/readyz", 100, &body, &len, &err), -EINVAL);
	assert_int_equal(sk_status_get("http://:15000", "/readyz", 100, &body, &len, &err), -EINVAL);
	assert_int_equal(sk_status_get("http://127.0.0.1:999999", "/readyz", 100, &body, &len, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready), cmocka_unit_test(test_not_ready),
		cmocka_unit_test(test_not_a_sidecar), cmocka_unit_test(test_metrics_and_urls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

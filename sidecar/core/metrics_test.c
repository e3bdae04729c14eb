/* sidecar/core/metrics_test.c — Prometheus rendering: every sample is typed, values add up, label values are
 * escaped, label sets stay bounded. (The e2e suite also parses /metrics with prometheus_client.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "sidecar/core/metrics.h"

static char *render(const struct sk_metrics *m)
{
	struct sk_strbuf b = { 0 };
	assert_int_equal(sk_metrics_render(m, NULL, &b), 0);
	size_t len = 0;
	char *out = sk_strbuf_steal(&b, &len);
	assert_non_null(out);
	assert_int_equal(strlen(out), len);
	assert_true(len > 0 && out[len - 1] == '\n');
	return out;
}

/* Checks the exposition line grammar we rely on: comments are "# HELP name text" / "# TYPE name type",
 * and every sample's metric name (minus _bucket/_sum/_count for histograms) had a TYPE line before it. */
static void assert_well_formed(const char *text)
{
	char typed[64][96];
	size_t n_typed = 0;
	const char *line = text;
	while (*line) {
		const char *nl = strchr(line, '\n');
		assert_non_null(nl);
		char buf[1024];
		size_t l = (size_t)(nl - line);
		assert_true(l > 0 && l < sizeof(buf));
		memcpy(buf, line, l);
		buf[l] = '\0';
		if (strncmp(buf, "# TYPE ", 7) == 0) {
			char name[96], type[32];
			assert_int_equal(sscanf(buf + 7, "%95s %31s", name, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
				    strcmp(type, "histogram") == 0);
			assert_true(n_typed < 64);
			(void)snprintf(typed[n_typed++], sizeof(typed[0]), "%s", name);
		} else if (strncmp(buf, "# HELP ", 7) == 0) {
			assert_non_null(strchr(buf + 7, ' '));
		} else {
			assert_true(buf[0] != '#');
			size_t nl_name = strcspn(buf, "{ ");
			char name[96];
			assert_true(nl_name > 0 && nl_name < sizeof(name));
			memcpy(name, buf, nl_name);
			name[nl_name] = '\0';
			/* ours, or the standard process_* families */
			assert_true(strncmp(name, "stockade_", 9) == 0 || strncmp(name, "process_", 8) == 0);
			bool found = false;
			for (size_t i = 0; i < n_typed && !found; i++) {
				size_t tl = strlen(typed[i]);
				found = strcmp(name, typed[i]) == 0 ||
					(strncmp(name, typed[i], tl) == 0 &&
					 (strcmp(name + tl, "_bucket") == 0 || strcmp(name + tl, "_sum") == 0 ||
					  strcmp(name + tl, "_count") == 0));
			}
			if (!found)
				fail_msg("sample without TYPE: %s", buf);
			const char *val = strrchr(buf, ' ');
			assert_non_null(val);
			char *end = NULL;
			(void)strtod(val + 1, &end);   /* the value is any number: only that it parses whole matters */
			assert_true(end && *end == '\0');
		}
		line = nl + 1;
	}
}

static void test_empty_metrics_well_formed(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "stockade_policy_loaded 0\n"));
	assert_non_null(strstr(s, "# TYPE stockade_connections_total counter\n"));
	assert_non_null(strstr(s, "stockade_build_info{version=\""));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_count 0\n"));
	free(s);
	sk_metrics_free(m);
}

static void test_connections_counted_by_labels(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	sk_metrics_conn(m, "allow", "rule", "2", "tls");
	sk_metrics_conn(m, "allow", "rule", "2", "tls");
	sk_metrics_conn(m, "deny", "no_match", NULL, "http");
	sk_metrics_conn(m, "allow", "rule", "github-api", "tls");
	sk_metrics_conn_active(m, 3);
	sk_metrics_conn_active(m, -1);
	sk_metrics_bytes(m, 100, 2000);
	sk_metrics_bytes(m, 1, 2);
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "stockade_connections_total{decision=\"allow\",reason=\"rule\",rule=\"2\",proto=\"tls\"} 2\n"));
	assert_non_null(strstr(s, "stockade_connections_total{decision=\"deny\",reason=\"no_match\",rule=\"none\",proto=\"http\"} 1\n"));
	assert_non_null(strstr(s, "stockade_connections_total{decision=\"allow\",reason=\"rule\",rule=\"github-api\",proto=\"tls\"} 1\n"));
	assert_non_null(strstr(s, "stockade_connections_active 2\n"));
	assert_non_null(strstr(s, "stockade_bytes_total{direction=\"upstream\"} 101\n"));
	assert_non_null(strstr(s, "stockade_bytes_total{direction=\"client\"} 2002\n"));
	free(s);
	sk_metrics_free(m);
}

static void test_histogram_cumulative(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	sk_metrics_decision_latency(m, 0.0003);  /* <= 0.0005 */
	sk_metrics_decision_latency(m, 0.002);   /* <= 0.0025 */
	sk_metrics_decision_latency(m, 7.0);     /* only +Inf */
	sk_metrics_decision_latency(m, -1.0);    /* clamped to 0: first bucket */
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_bucket{le=\"1e-05\"} 1\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_bucket{le=\"0.00025\"} 1\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_bucket{le=\"0.0005\"} 2\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_bucket{le=\"0.0025\"} 3\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_bucket{le=\"1\"} 3\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_bucket{le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_count 4\n"));
	assert_non_null(strstr(s, "stockade_decision_latency_seconds_sum 7.0023\n"));
	free(s);
	sk_metrics_free(m);
}

static void test_dns_reload_api(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	sk_metrics_dns(m, "forwarded", "A");
	sk_metrics_dns(m, "forwarded", "A");
	sk_metrics_dns(m, "denied", "TXT");
	sk_metrics_reload(m, true);
	sk_metrics_reload(m, false);
	sk_metrics_reload(m, false);
	sk_metrics_api(m, "anthropic", 200, 0.3);
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "stockade_dns_queries_total{result=\"forwarded\",qtype=\"A\"} 2\n"));
	assert_non_null(strstr(s, "stockade_dns_queries_total{result=\"denied\",qtype=\"TXT\"} 1\n"));
	assert_non_null(strstr(s, "stockade_policy_reloads_total{result=\"ok\"} 1\n"));
	assert_non_null(strstr(s, "stockade_policy_reloads_total{result=\"failed\"} 2\n"));
	assert_non_null(strstr(s, "stockade_api_requests_total{api=\"anthropic\",status=\"200\"} 1\n"));
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_bucket{api=\"anthropic\",le=\"0.5\"} 1\n"));
	free(s);
	sk_metrics_free(m);
}

/* The gateway histogram has one series set per api: observations of one api never move another's. */
static void test_api_histogram_per_api_and_bounded(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	sk_metrics_api(m, "llm", 200, 0.02);
	sk_metrics_api(m, "llm", 500, 3.0);
	sk_metrics_api(m, "unknown", 404, 0.001);
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_bucket{api=\"llm\",le=\"0.025\"} 1\n"));
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_bucket{api=\"llm\",le=\"5\"} 2\n"));
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_count{api=\"llm\"} 2\n"));
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_sum{api=\"llm\"} 3.02\n"));
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_bucket{api=\"unknown\",le=\"0.005\"} 1\n"));
	assert_non_null(strstr(s, "stockade_api_request_duration_seconds_count{api=\"unknown\"} 1\n"));
	assert_null(strstr(s, "stockade_api_request_duration_seconds_count "));
	free(s);
	for (int i = 0; i < 100; i++) {
		char api[16];
		(void)snprintf(api, sizeof(api), "api%d", i);
		sk_metrics_api(m, api, 200, 0.1);
	}
	s = render(m);
	size_t hists = 0;
	for (const char *p = s; (p = strstr(p, "\nstockade_api_request_duration_seconds_count{")); p++)
		hists++;
	assert_int_equal(hists, 64);
	assert_non_null(strstr(s, "stockade_metrics_series_dropped_total{family=\"api\"} 38\n"));
	free(s);
	sk_metrics_free(m);
}

/* The last reload's time and result: the start's load until a reload happens, then each attempt. */
static void test_reload_last_timestamp_and_result(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	long long t0 = (long long)time(NULL);
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	char *s = render(m);
	assert_non_null(strstr(s, "stockade_reload_last_success 1\n"));
	long long ts = 0;
	const char *p = strstr(s, "\nstockade_reload_last_timestamp_seconds ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "\nstockade_reload_last_timestamp_seconds %lld", &ts), 1);
	assert_true(ts >= t0 && ts <= (long long)time(NULL));
	free(s);
	sk_metrics_reload(m, false);
	s = render(m);
	assert_non_null(strstr(s, "stockade_reload_last_success 0\n"));
	free(s);
	sk_metrics_reload(m, true);
	s = render(m);
	assert_non_null(strstr(s, "stockade_reload_last_success 1\n"));
	free(s);
	sk_metrics_free(m);
}

/* process_* from /proc/self: present, typed, and this process's own figures. */
static void test_process_metrics(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "# TYPE process_cpu_seconds_total counter\n"));
	const char *names[] = { "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
				"process_max_fds", "process_start_time_seconds" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[96];
		(void)snprintf(want, sizeof(want), "# TYPE %s gauge\n%s ", names[i], names[i]);
		const char *p = strstr(s, want);
		assert_non_null(p);
		double v = -1;
		assert_int_equal(sscanf(p + strlen(want), "%lf", &v), 1);
		assert_true(v > 0);
	}
	const char *p = strstr(s, "\nprocess_start_time_seconds ");
	double start = 0;
	assert_int_equal(sscanf(p, "\nprocess_start_time_seconds %lf", &start), 1);
	assert_true(start <= (double)time(NULL) + 1 && start > (double)time(NULL) - 86400);
	free(s);
	sk_metrics_free(m);
}

static void test_label_values_escaped(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	sk_metrics_dns(m, "we\"ird\\\nresult", NULL);
	char *s = render(m);
	assert_well_formed(s);
	assert_non_null(strstr(s, "stockade_dns_queries_total{result=\"we\\\"ird\\\\\\nresult\",qtype=\"\"} 1\n"));
	free(s);
	sk_metrics_free(m);
}

static void test_label_sets_bounded(void **state)
{
	(void)state;
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	for (int i = 0; i < 2000; i++) {
		char q[16];
		(void)snprintf(q, sizeof(q), "T%d", i);
		sk_metrics_dns(m, "forwarded", q);
	}
	sk_metrics_dns(m, "forwarded", "T0");  /* an existing set still counts */
	char *s = render(m);
	assert_well_formed(s);
	size_t series = 0;
	for (const char *p = s; (p = strstr(p, "\nstockade_dns_queries_total{")); p++)
		series++;
	assert_int_equal(series, 512);
	assert_non_null(strstr(s, "stockade_metrics_series_dropped_total{family=\"dns\"} 1488\n"));
	assert_non_null(strstr(s, "stockade_dns_queries_total{result=\"forwarded\",qtype=\"T0\"} 2\n"));
	free(s);
	sk_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_metrics_well_formed),
		cmocka_unit_test(test_connections_counted_by_labels),
		cmocka_unit_test(test_histogram_cumulative),
		cmocka_unit_test(test_dns_reload_api),
		cmocka_unit_test(test_label_values_escaped),
		cmocka_unit_test(test_label_sets_bounded),
		cmocka_unit_test(test_api_histogram_per_api_and_bounded),
		cmocka_unit_test(test_reload_last_timestamp_and_result),
		cmocka_unit_test(test_process_metrics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/admin/health_test.c — liveness from the heartbeat timer on a real loop: ticks keep it fresh, and once
 * the timer no longer fires (the case /healthz exists for: the loop serves sockets, its timers are dead)
 * the beat goes stale past SK_HEALTH_STALE_MS, exactly at the boundary; it recovers on the next beat.
 * (admin_test.c checks the 503 body; e2e/admin.test.sh blocks the whole process with SIGSTOP.)
 * Readiness reasons: the exact short text for each unmet condition, as the log, /readyz and the wait-ready
 * hook give it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "policy/policy.h"

#include "sidecar/admin/health.h"
#include "sidecar/core/loop.h"

static void test_alive_boundary(void **state)
{
	(void)state;
	struct sk_health h = { 0 };
	sk_health_beat(&h, 1000);
	uint64_t age = 1;
	assert_true(sk_health_alive(&h, 1000, &age));
	assert_int_equal(age, 0);
	assert_true(sk_health_alive(&h, 1000 + SK_HEALTH_STALE_MS, &age));
	assert_int_equal(age, SK_HEALTH_STALE_MS);
	assert_false(sk_health_alive(&h, 1000 + SK_HEALTH_STALE_MS + 1, &age));
	assert_int_equal(age, SK_HEALTH_STALE_MS + 1);
	assert_true(sk_health_alive(&h, 500, NULL));   /* a clock read before the beat is not "old" */
	sk_health_beat(&h, 1000 + SK_HEALTH_STALE_MS + 1);
	assert_true(sk_health_alive(&h, 1000 + SK_HEALTH_STALE_MS + 1, NULL));
}

static void test_timer_beats_and_stale_once_stopped(void **state)
{
	(void)state;
	struct sk_loop *l;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct sk_health h;
	assert_int_equal(sk_health_start(&h, l, &err), 0);
	uint64_t started = h.last_beat_ms;
	/* a beat is due SK_HEALTH_BEAT_MS after the start: run the loop until one lands */
	for (int i = 0; i < 100 && h.last_beat_ms == started; i++)
		assert_true(sk_loop_run_once(l, 50, &err) >= 0);
	assert_true(h.last_beat_ms > started);
	uint64_t last = h.last_beat_ms;
	assert_true(sk_health_alive(&h, last + SK_HEALTH_STALE_MS, NULL));
	/* the timer no longer fires: nothing refreshes the beat however long the loop keeps running */
	sk_health_stop(&h, l);
	for (int i = 0; i < 3; i++)
		assert_true(sk_loop_run_once(l, 0, &err) >= 0);
	assert_int_equal(h.last_beat_ms, last);
	assert_false(sk_health_alive(&h, last + SK_HEALTH_STALE_MS + 1, NULL));
	sk_loop_free(l);
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
}

static void test_reason_per_condition(void **state)
{
	(void)state;
	static const char yaml[] = "version: 1\nports: { proxy: 25101, dns: 25153, admin: 25100, api: 25180 }\n"
				   "egress:\n  - host: example.com\n    ports: [443]\n";
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer("t.yaml", yaml, strlen(yaml), -1, &p, &diags), 0);
	char reason[1024], marker[64], line[160], hash[17];
	(void)snprintf(marker, sizeof(marker), "/tmp/health_test_marker.%d", (int)getpid());
	unlink(marker);
	struct sk_ready_input in = { .dns_upstream_ok = false, .dns_upstreams = "10.96.0.10:53" };

	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	assert_string_equal(reason, "policy not loaded; dns_upstream unreachable 10.96.0.10:53 (no answer yet)");

	in.draining = true;
	in.dns_upstream_ok = true;
	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	assert_string_equal(reason, "draining (SIGTERM received); policy not loaded");

	in.draining = false;
	in.policy = p;
	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	assert_string_equal(reason, "proxy_listener not listening on port 25101; dns_listener port 25153 not bound for "
				    "udp and tcp; marker not configured");

	in.marker_path = marker;
	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	(void)snprintf(line, sizeof(line), "marker absent %s (the init has not written it)", marker);
	assert_non_null(strstr(reason, line));

	write_text(marker, "hash=XYZ\n");
	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "; marker unreadable: "));
	assert_non_null(strstr(reason, "first line is not hash=<16 hex digits>"));

	sk_policy_netns_hash(p, hash);
	write_text(marker, "hash=0000000000000000\n");
	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	(void)snprintf(line, sizeof(line), "; marker hash differs: marker 0000000000000000, policy %s", hash);
	assert_non_null(strstr(reason, line));

	/* an unknown upstream list still names the condition */
	(void)snprintf(line, sizeof(line), "hash=%s\n", hash);
	write_text(marker, line);
	in.dns_upstream_ok = false;
	in.dns_upstreams = NULL;
	assert_false(sk_ready_reason(&in, reason, sizeof(reason)));
	assert_null(strstr(reason, "marker"));   /* the marker matches now */
	assert_non_null(strstr(reason, "; dns_upstream unreachable (none known) (no answer yet)"));

	/* cut to the buffer, always terminated */
	char small[12];
	assert_false(sk_ready_reason(&in, small, sizeof(small)));
	assert_string_equal(small, "proxy_liste");

	unlink(marker);
	sk_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alive_boundary),
		cmocka_unit_test(test_timer_beats_and_stale_once_stopped),
		cmocka_unit_test(test_reason_per_condition),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

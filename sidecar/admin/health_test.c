/* sidecar/admin/health_test.c — liveness from the heartbeat timer on a real loop: ticks keep it fresh, and once
 * the timer no longer fires (the case /healthz exists for: the loop serves sockets, its timers are dead)
 * the beat goes stale past SK_HEALTH_STALE_MS, exactly at the boundary; it recovers on the next beat.
 * (admin_test.c checks the 503 body; e2e/admin.test.sh blocks the whole process with SIGSTOP.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alive_boundary),
		cmocka_unit_test(test_timer_beats_and_stale_once_stopped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sidecar/gateway/ratelimit.c — token bucket; see gw_ratelimit.h. */
#include "sidecar/gateway/ratelimit.h"

#include <math.h>

bool sk_gw_bucket_take(struct sk_gw_bucket *b, double rate, double burst, uint64_t now_ms, uint32_t *retry_after_s)
{
	if (rate <= 0)
		return true;
	double cap = burst > 0 ? burst : (rate > 1 ? rate : 1);
	if (!b->primed) {
		b->tokens = cap;
		b->last_ms = now_ms;
		b->primed = true;
	}
	if (now_ms > b->last_ms) {
		b->tokens += (double)(now_ms - b->last_ms) / 1000.0 * rate;
		if (b->tokens > cap)
			b->tokens = cap;
		b->last_ms = now_ms;
	}
	if (b->tokens >= 1.0) {
		b->tokens -= 1.0;
		return true;
	}
	double wait = (1.0 - b->tokens) / rate;
	double s = ceil(wait);
	*retry_after_s = s < 1 ? 1 : s > 86400 ? 86400 : (uint32_t)s;
	return false;
}

/* sidecar/gateway/ratelimit.h — the gateway's per-api rate limit (part of gateway.h's component): a token
 * bucket per api name, kept across policy reloads by the gateway. Pure. */
#ifndef SK_SIDECAR_GW_RATELIMIT_H
#define SK_SIDECAR_GW_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* Token bucket: rate tokens/s, at most burst (0 → max(1, rate)); rate 0 = unlimited. Takes one token
 * and returns true, or returns false with *retry_after_s = whole seconds until one is there (>= 1). */
struct sk_gw_bucket {
	double tokens;
	uint64_t last_ms;
	bool primed;
};
bool sk_gw_bucket_take(struct sk_gw_bucket *b, double rate, double burst, uint64_t now_ms, uint32_t *retry_after_s);

#endif

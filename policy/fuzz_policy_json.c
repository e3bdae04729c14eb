/* policy/fuzz_policy_json.c — libFuzzer target: the JSON loader, the forge importer and the validator
 * behind them, under the invariant of policy/fuzz-policy.h. */
#include <stddef.h>
#include <stdint.h>

#include "policy/fuzz-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Detection still picks JSON or the forge shape for an object; anything else is forced through JSON. */
	size_t o = 0;
	while (o < size && (data[o] == ' ' || data[o] == '\n' || data[o] == '\t' || data[o] == '\r'))
		o++;
	sk_fuzz_policy_load(data, size, o < size && data[o] == '{' ? -1 : SK_FORMAT_JSON);
	return 0;
}

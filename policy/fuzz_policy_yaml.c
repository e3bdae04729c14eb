/* policy/fuzz_policy_yaml.c — libFuzzer target: the YAML loader and the validator behind it, under the
 * invariant of policy/fuzz-policy.h. */
#include <stddef.h>
#include <stdint.h>

#include "policy/fuzz-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sk_fuzz_policy_load(data, size, SK_FORMAT_YAML);
	return 0;
}

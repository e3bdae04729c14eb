/* policy/domain.h — domain-name validation and normalisation, shared by the policy loaders, the SNI and
 * Host parsers and the DNS filter so that every place agrees on what a name is. */
#ifndef SK_POLICY_DOMAIN_H
#define SK_POLICY_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>

#define SK_DOMAIN_MAX 253   /* without the trailing dot */

enum sk_domain_flags {
	SK_DOMAIN_ALLOW_WILDCARD = 1 << 0,   /* accept a leading "*." (policy patterns only) */
};

/* Validates in[0..len) (not NUL-terminated necessarily) and writes the normalised form into out
 * (at least SK_DOMAIN_MAX + 1 bytes): lower case, one trailing dot removed. Rules: RFC 1123 labels of
 * [a-z0-9-], 1..63 bytes, not starting or ending with '-', total <= 253; no whitespace, control bytes,
 * empty labels (".."), non-ASCII (must be given as A-labels, "xn--"); an all-numeric last label is
 * rejected (an IP literal is not a domain). With SK_DOMAIN_ALLOW_WILDCARD a leading "*." is accepted:
 * *wildcard is set and out holds the suffix without "*.". Returns 0, or -EINVAL with *why set to a static
 * description of what is wrong ("empty label", "label longer than 63 bytes", ...). */
int sk_domain_normalize(const char *in, size_t len, unsigned flags, char *out, bool *wildcard,
			const char **why);

/* The Kubernetes DNS-1123 label (RFC 1123 label, lower case only): s[0..n) is 1..63 of [a-z0-9-], not
 * starting or ending with '-'. What a namespace name and a volume name must be. Stricter than a label of
 * sk_domain_normalize in that nothing is normalised (upper case is refused: the API server refuses it),
 * looser in that an all-digit label is a label ("123" is a valid namespace). */
bool sk_dns_label(const char *s, size_t n);

#endif

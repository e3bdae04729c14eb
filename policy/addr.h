/* policy/addr.h — IP addresses and CIDRs: parsing (strict, no bracket/zone/octal tricks), formatting,
 * containment, and the private/link-local classification used by blockPrivate (docs/policy.md, docs/architecture.md#transparent-proxy). */
#ifndef SK_POLICY_ADDR_H
#define SK_POLICY_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An address. family is AF_INET (bytes[0..3] used, rest zero) or AF_INET6. */
struct sk_addr {
	uint8_t family;
	uint8_t bytes[16];
};

struct sk_cidr {
	struct sk_addr net;    /* host bits are zero */
	uint8_t prefix;        /* 0..32 or 0..128 */
};

#define SK_ADDR_STRLEN 46  /* INET6_ADDRSTRLEN */

/* Strict dotted-quad or RFC 4291 text; no brackets, zone ids, leading zeros in IPv4 octets, or
 * shorthand ("10.1"). Returns 0 or -EINVAL. */
int sk_addr_parse(const char *s, struct sk_addr *out);
/* "a.b.c.d/n" or "x::/n"; without "/n" a single host. Host bits set in the address → -EINVAL
 * (why, if non-NULL, gets a static reason). */
int sk_cidr_parse(const char *s, struct sk_cidr *out, const char **why);
void sk_addr_format(const struct sk_addr *a, char out[SK_ADDR_STRLEN]);
void sk_cidr_format(const struct sk_cidr *c, char out[SK_ADDR_STRLEN + 4]);
bool sk_addr_equal(const struct sk_addr *a, const struct sk_addr *b);
bool sk_cidr_contains(const struct sk_cidr *c, const struct sk_addr *a);

/* The IPv4 address an IPv6 address stands for, if any: IPv4-mapped (::ffff:0:0/96), IPv4-compatible
 * (::/96 except :: and ::1), NAT64 (64:ff9b::/96), 6to4 (2002::/16), Teredo client (2001::/32). Returns
 * true and fills *v4 when it does. An AF_INET address returns itself. */
bool sk_addr_embedded_v4(const struct sk_addr *a, struct sk_addr *v4);

/* Classification, applied to the address and to any embedded IPv4 address. */
/* The link-local class (denied even without blockPrivate): 169.254/16, fe80::/10, and the provider
 * metadata / host-service addresses outside them: 168.63.129.16 (Azure), 100.100.100.200 (Alibaba),
 * 192.0.0.192 (Oracle Classic), fd00:ec2::254, ::253, ::123, ::23 (AWS), fd00:42::42 (Scaleway). */
bool sk_addr_is_link_local(const struct sk_addr *a);
bool sk_addr_is_private(const struct sk_addr *a);     /* blockPrivate set: 127/8, 0/8, 10/8, 172.16/12,
                                                       * 192.168/16, 100.64/10, 169.254/16, ::, ::1,
                                                       * fc00::/7, fe80::/10, multicast, the link-local
                                                       * class above, and embedded forms */
bool sk_addr_is_loopback(const struct sk_addr *a);    /* 127/8, ::1, and embedded 127/8 */

/* Whether every address of c lies inside one private (resp. link-local) range, directly or through its
 * IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96) or 6to4 image. The matcher lets only such a rule
 * "name" a private or link-local destination: 0.0.0.0/0 matches 169.254.169.254 but does not name it,
 * and 100.64.0.0/10 names 100.64.0.1 as private but does not name 100.100.100.200 (metadata). */
bool sk_cidr_is_private(const struct sk_cidr *c);
bool sk_cidr_is_link_local(const struct sk_cidr *c);

/* Whether c shares any address with the private (resp. link-local) class: c contains an address of one
 * of its ranges, or a range contains c, directly or in any embedded form sk_addr_is_private reads
 * (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4, Teredo). Equivalently:
 * some address a in c has sk_addr_is_private(a) (resp. sk_addr_is_link_local(a)). ::/0, 2002::/16 and
 * 0.0.0.0/0 overlap the link-local class; 10.96.0.0/12 and 198.18.1.20/32 do not. A rule that bypasses
 * the proxy (direct, udp) must not overlap a class it does not lie wholly inside (validate_egress.c). */
bool sk_cidr_overlaps_private(const struct sk_cidr *c);
bool sk_cidr_overlaps_link_local(const struct sk_cidr *c);
/* The same, listing for a message the entries c overlaps: "169.254.0.0/16, 168.63.129.16, ..." (a single
 * address without /32 or /128; an IPv4 entry reached by an IPv6 block as "embedded 169.254.0.0/16"; at
 * most four, then ", ..."), truncated to outsz. Returns how many entries c overlaps (0: out is ""). The
 * private list includes the link-local entries. */
size_t sk_cidr_private_overlaps(const struct sk_cidr *c, char *out, size_t outsz);
size_t sk_cidr_link_local_overlaps(const struct sk_cidr *c, char *out, size_t outsz);

#endif

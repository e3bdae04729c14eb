/* init/nft_expr.h — renders a struct sk_ruleset as libnftnl objects: the table, counters, chains, sets
 * with their elements, and each rule's expressions. Owns the register layout and the set key layout, so
 * the batch (nft_batch.c) and the read-back comparison (nft_verify.c) build byte-identical objects.
 * Pure: no socket, no kernel. Every builder returns an owned object (free with the matching nftnl_*_free)
 * or NULL when libnftnl fails to allocate (every nftnl_*_set_* result is checked). */
#ifndef SK_INIT_NFT_EXPR_H
#define SK_INIT_NFT_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>  /* before linux/netfilter.h, which would otherwise define in_addr */
#include <linux/netfilter.h>

#include "init/ruleset.h"

struct nlmsghdr;
struct nftnl_chain;
struct nftnl_obj;
struct nftnl_rule;
struct nftnl_set;
struct nftnl_table;

#define SK_NFT_FAMILY NFPROTO_INET
#define SK_NFT_KEY_MAX 24   /* bytes of the longest set key (direct6: address, proto, port) */

struct nftnl_table *sk_nft_build_table(void);
struct nftnl_obj *sk_nft_build_counter(int counter);
struct nftnl_chain *sk_nft_build_chain(const struct sk_rs_chain *ch);
struct nftnl_rule *sk_nft_build_rule(const struct sk_ruleset *rs, const struct sk_rs_rule *r);
struct nftnl_set *sk_nft_build_set(const struct sk_rs_set *s);
/* A set object carrying elements [from, to) of s, for one NEWSETELEM message. */
struct nftnl_set *sk_nft_build_elems(const struct sk_rs_set *s, size_t from, size_t to);

/* Writes the payload of the NEWSETELEM message for elements [from, to) of s straight into nlh: the very bytes
 * nftnl_set_elems_nlmsg_build_payload writes for sk_nft_build_elems(s, from, to) (nft_expr_test compares
 * them), without a libnftnl object and three allocations per element (a 10 000-element set spent a
 * tenth of the init there). The caller leaves room: at most 16 + 4 * SK_NFT_KEY_MAX bytes per element
 * beyond the three list attributes. */
void sk_nft_put_elems(struct nlmsghdr *nlh, const struct sk_rs_set *s, size_t from, size_t to);

/* One element as read back: its key, then (direct sets) its range end, each zero-padded. */
struct sk_nft_key {
	uint8_t k[2 * SK_NFT_KEY_MAX];
};
/* Reads one NEWSETELEM dump reply of set s straight off the netlink attributes (no libnftnl object per
 * element): every element's key is stored into keys[*n] while *n < cap, and *n counts them all; an
 * element not of s's shape (no key, a key of another length, a range end on a plain set or none on a
 * direct one) is counted in *odd instead. Returns 0, or -EBADMSG for a reply that is not a well-formed
 * element list of s in our table. */
int sk_nft_parse_elems(const struct nlmsghdr *nlh, const struct sk_rs_set *s, struct sk_nft_key *keys, size_t cap,
		       size_t *n, size_t *odd);

/* The direct sets (concatenated address . proto . port intervals). */
bool sk_nft_set_is_direct(const struct sk_rs_set *s);
uint32_t sk_nft_set_key_len(const struct sk_rs_set *s);
/* Key bytes of e as the kernel compares them (register layout); hi selects the range end. Returns the
 * length; out is zero-padded to SK_NFT_KEY_MAX. */
uint32_t sk_nft_elem_key(const struct sk_rs_set *s, const struct sk_rs_elem *e, bool hi, uint8_t out[SK_NFT_KEY_MAX]);

#endif

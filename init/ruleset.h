/* init/ruleset.h — THE nft ruleset of stockade (docs/architecture.md#the-init-stockade-init). Owns the one intermediate description of
 * table `inet stockade` (chains, sets, named counters, rules) built from the netns part of a policy.
 * Both the libnftnl batch (init/nft.c) and the nft text (`stockade-init --dry-run`, `stockade-policy
 * rules`) are produced from it, so what is printed and what is loaded cannot drift.
 *
 * Rule order and why (filter_output; socketless packets fall through to the chain's accept policy,
 * because `meta skuid` does not match a packet without a socket):
 *   IGMP and MLD (ICMPv6 130–132, 143) leaving the pod: drop (counted), whoever sent them — the kernel
 *   sends membership reports on no socket's behalf, and they name the group joined, so they would carry
 *   agent-chosen bytes; then any socket's packet (the sidecar's and the exemptUids' excepted) whose
 *   source address is not one of the netns's own: drop (counted) — over IPv6 an unprivileged socket can
 *   bind a foreign address with IPV6_FREEBIND and forge, via lo, a datagram from the upstream resolver to
 *   the sidecar's connected DNS socket (IPv4 refuses such a source without IP_TRANSPARENT already);
 *   then the agent, on every packet and never by conntrack state (conntrack knows no
 *   sockets, so the agent could otherwise reuse the 5-tuple of another UID's flow): TCP to the admin port
 *   on loopback (the pod's own addresses included) rejected (counted), loopback per policy, redirected
 *   flows, direct sets, else reject (counted) → established/related → loopback → ICMPv6 ND (133–137) →
 *   sidecar → exemptUids → any other UID (root included): reject (counted).
 * nat_output: agent DNS (port 53, UDP and TCP) → DNS port first, so the DNS filter is never bypassed,
 * not even by a direct rule; then direct sets and loopback return; then all other agent TCP → proxy.
 *
 * Direct sets are concatenated interval sets `daddr . l4proto . dport`, one per family. The builder
 * makes their elements pairwise disjoint (the kernel's pipapo backend rejects overlaps), so lookup cost
 * does not depend on the number of rules. */
#ifndef SK_INIT_RULESET_H
#define SK_INIT_RULESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "policy/policy.h"
#include "common/util.h"

#define SK_RS_FAMILY_NAME "inet"
#define SK_RS_TABLE "stockade"

enum sk_rs_chain_id { SK_RS_CHAIN_NAT = 0, SK_RS_CHAIN_FILTER, SK_RS_N_CHAINS };

struct sk_rs_chain {
	const char *name;      /* "nat_output", "filter_output" */
	const char *type;      /* "nat", "filter" */
	int priority;          /* -100, 0 */
	/* hook is always output, policy always accept (see the top comment) */
};

enum sk_rs_set_id {
	SK_RS_SET_EXEMPT = 0,  /* exempt_uids: type uid */
	SK_RS_SET_LOPORTS,     /* loopback_ports: type inet_service */
	SK_RS_SET_ND,          /* icmpv6_nd: type icmpv6_type */
	SK_RS_SET_MLD,         /* icmpv6_mld: type icmpv6_type */
	SK_RS_SET_DIRECT4,     /* direct4: ipv4_addr . inet_proto . inet_service, interval */
	SK_RS_SET_DIRECT6,     /* direct6: ipv6_addr . inet_proto . inet_service, interval */
	SK_RS_N_SETS
};

/* A set element. UID/port/ICMPv6-type sets use val; direct sets use the rest (an address range in
 * network byte order, of which IPv4 uses the first 4 bytes, × one protocol × a port range). */
struct sk_rs_elem {
	uint32_t val;
	uint8_t addr_lo[16], addr_hi[16];
	uint8_t proto;         /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port_lo, port_hi;
};

struct sk_rs_set {
	const char *name;
	enum sk_rs_set_id id;
	struct sk_rs_elem *elems;  /* owned; sorted */
	size_t n_elems;
};

enum sk_rs_match_kind {
	SK_RS_M_SKUID = 0,     /* meta skuid == val */
	SK_RS_M_SKUID_NE,      /* meta skuid != val */
	SK_RS_M_SKUID_ANY,     /* meta skuid >= 0: true for every packet that has a socket */
	SK_RS_M_SKUID_SET,     /* meta skuid @set */
	SK_RS_M_SKUID_NOT_SET, /* meta skuid != @set (false without a socket, like every skuid match) */
	SK_RS_M_SADDR_NOT_LOCAL, /* fib saddr type != local: the source is not an address of this netns */
	SK_RS_M_NFPROTO,       /* meta nfproto == val (NFPROTO_IPV4 / NFPROTO_IPV6) */
	SK_RS_M_L4PROTO,       /* meta l4proto == val (IPPROTO_*) */
	SK_RS_M_DPORT,         /* th dport == val */
	SK_RS_M_DPORT_SET,     /* th dport @set */
	SK_RS_M_OIF_LO,        /* oif "lo" (ifindex 1 in every netns) */
	SK_RS_M_CT_EST_REL,    /* ct state established,related */
	SK_RS_M_CT_DNAT,       /* ct status dnat */
	SK_RS_M_ICMPV6_SET,    /* icmpv6 type @set (after meta l4proto ipv6-icmp) */
	SK_RS_M_DIRECT_SET,    /* ip[6] daddr . meta l4proto . th dport @set (after meta nfproto) */
};

struct sk_rs_match {
	enum sk_rs_match_kind kind;
	uint32_t val;
	enum sk_rs_set_id set;  /* for *_SET kinds */
};

enum sk_rs_verdict {
	SK_RS_ACCEPT = 0,
	SK_RS_RETURN,          /* nat: leave the flow alone */
	SK_RS_REDIRECT,        /* nat: redirect to 127.0.0.1 / ::1, port redirect_port */
	SK_RS_REJECT_TCP,      /* reject with tcp reset */
	SK_RS_REJECT_ADMIN,    /* reject with icmpx admin-prohibited */
	SK_RS_DROP,            /* drop */
};

enum sk_rs_counter_id {
	SK_RS_CNT_NONE = -1,
	SK_RS_CNT_AGENT_TCP = 0,   /* agent_reject_tcp */
	SK_RS_CNT_AGENT_OTHER,     /* agent_reject_other */
	SK_RS_CNT_OTHER_TCP,       /* other_uid_reject_tcp */
	SK_RS_CNT_OTHER_OTHER,     /* other_uid_reject_other */
	SK_RS_CNT_MCAST_DROP,      /* mcast_report_drop */
	SK_RS_CNT_SPOOF_DROP,      /* spoofed_source_drop */
	SK_RS_N_COUNTERS
};

#define SK_RS_MAX_MATCH 8

struct sk_rs_rule {
	enum sk_rs_chain_id chain;
	const char *name;      /* static; stored as the rule's comment, names it in errors and checks */
	struct sk_rs_match m[SK_RS_MAX_MATCH];
	size_t n_m;
	enum sk_rs_counter_id counter;
	enum sk_rs_verdict verdict;
	uint16_t redirect_port;
};

struct sk_ruleset {
	struct sk_rs_chain chains[SK_RS_N_CHAINS];
	struct sk_rs_set sets[SK_RS_N_SETS];
	struct sk_rs_rule *rules;  /* owned; in load order, chain by chain */
	size_t n_rules;
};

/* Builds the ruleset for the netns part of p (borrowed). *out is owned: sk_ruleset_free(). */
SK_MUST_USE int sk_ruleset_build(const struct sk_policy *p, struct sk_ruleset **out, struct sk_err *err);
void sk_ruleset_free(struct sk_ruleset *rs);

/* Loads the policy at path and builds its ruleset: the one entry point of stockade-init and
 * `stockade-policy rules`, so both print the same text. The apis' secret files are not checked (only
 * the sidecar mounts them), and *pol has no matcher (nothing here matches a name) and an empty
 * content_hash (nothing here names the policy by its bytes). A policy error
 * returns -EINVAL with every diagnostic in diags and err saying so; a ruleset error fills err. On success *out is owned, and *pol too when pol is non-NULL. */
SK_MUST_USE int sk_ruleset_load(const char *path, struct sk_policy **pol, struct sk_ruleset **out, struct sk_diags *diags,
		    struct sk_err *err);

const char *sk_rs_counter_name(enum sk_rs_counter_id c);
size_t sk_ruleset_n_elems(const struct sk_ruleset *rs);
size_t sk_ruleset_chain_rules(const struct sk_ruleset *rs, enum sk_rs_chain_id c);

/* Writes the ruleset as an nft script: `table inet stockade`, `delete table inet stockade`, then the
 * whole table, so `nft -f` of it replaces the table atomically just as stockade-init does. */
SK_MUST_USE int sk_ruleset_print(const struct sk_ruleset *rs, FILE *out, struct sk_err *err);
/* The same text as an owned NUL-terminated string. */
char *sk_ruleset_text(const struct sk_ruleset *rs, struct sk_err *err);

/* Formats one element of set s as nft text (e.g. "10.96.0.0/12 . udp . 8125"). */
void sk_rs_elem_format(const struct sk_rs_set *s, const struct sk_rs_elem *e, char *buf, size_t len);

#endif

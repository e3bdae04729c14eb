/* sidecar/dns/filter.h — the DNS filter's decisions (docs/architecture.md#dns-filter), as pure functions over a policy
 * snapshot and message bytes; the server (sockets, upstream I/O, audit lines, metrics) calls them.
 *
 * Query side: a client message becomes either a local answer (FORMERR, NOTIMP, REFUSED, NXDOMAIN,
 * BADVERS — never forwarded, since a query for a denied name would itself carry data out) or a forward
 * decision with what is needed to rebuild a canonical upstream query and check its answer. The upstream
 * query is built fresh (sk_dns_filter_upstream_query), never relayed, so nothing the client put in extra
 * sections, options or trailing bytes leaves the pod; nor do the name's case or the client's header and
 * EDNS bits: two queries for the same (name, type, class) leave as the same bytes but for the ID (name
 * in lower case, RD alone, our own OPT with DO=0 and no options). The client's answer still echoes its
 * question as asked, case included.
 *
 * Answer side: an upstream answer becomes the bytes returned to the client, rebuilt from the records
 * that survive the checks, plus the (address, ttl) pairs to bind to the query's name:
 *  - only answer-section records on the CNAME chain from the question name are returned (owner == qname
 *    or a CNAME target reached from it, at most SK_DNS_CHAIN_MAX hops); authority keeps only SOA
 *    (negative caching); additional is dropped (glue for other names must not reach the client's cache);
 *  - with opts.strict_chain, A/AAAA whose owner the policy does not itself allow are stripped too
 *    (breaks CDN-hosted names that CNAME outside the allowed set; off by default: the binding is made for
 *    the allowed question name, so a chain leaving the allowed set grants nothing extra);
 *  - an A/AAAA in a link-local range, or in a private range when blockPrivate is on, and not vouched for
 *    by a CIDR rule, turns the whole answer into REFUSED (DNS rebinding defence);
 *  - TTLs are capped at SK_BIND_TTL_MAX so a client never caches an address longer than it stays bound;
 *  - every A/AAAA returned is bound (at most SK_DNS_MAX_BINDINGS; extra addresses are stripped rather
 *    than returned unbound); HTTPS/SVCB address hints never bind;
 *  - every HTTPS/SVCB record returned loses its `ech` (key 5), `ipv4hint` (4) and `ipv6hint` (6)
 *    SvcParams (RDLENGTH fixed, the message rebuilt): a client holding an ECH config could hide its real
 *    destination behind the outer SNI the proxy decides on, and hints never bind anyway (an ipv4hint of
 *    169.254.169.254 must not even reach the agent). A record whose `mandatory` list names one of those
 *    keys is left out (unusable without it); one
 *    with a malformed SvcParams list (keys not strictly increasing, a value past RDLENGTH, a compressed
 *    TargetName) makes the whole answer SERVFAIL, like any other malformed record;
 *  - an answer larger than the client accepts over UDP is replaced by an empty TC=1 answer and binds
 *    nothing: the client retries over TCP. */
#ifndef SK_SIDECAR_DNS_FILTER_H
#define SK_SIDECAR_DNS_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/addr.h"
#include "policy/domain.h"
#include "policy/policy.h"
#include "sidecar/core/secret_store.h"
#include "sidecar/dns/codec.h"

#define SK_DNS_CHAIN_MAX 16
#define SK_DNS_MAX_BINDINGS 32

enum sk_dns_action {
	SK_DNS_ACT_DROP = 0,    /* say nothing (not a query, or too short to answer) */
	SK_DNS_ACT_ANSWER,      /* send out[0..len) to the client */
	SK_DNS_ACT_FORWARD,     /* send a query built by sk_dns_filter_upstream_query; keep the fquery */
	SK_DNS_ACT_RETRY_TCP,   /* the upstream answer was truncated: ask the same question over TCP */
};

/* Outcome for audit lines and metrics (sk_dns_result_name gives the token). */
enum sk_dns_result {
	SK_DNS_R_FORWARDED = 0,   /* query allowed and forwarded */
	SK_DNS_R_ANSWERED,        /* upstream answer checked and returned */
	SK_DNS_R_DENIED,          /* name not allowed by any rule → NXDOMAIN/REFUSED per dns.deny */
	SK_DNS_R_BAD_NAME,        /* name not a valid host name (bytes, empty, numeric TLD) → per dns.deny */
	SK_DNS_R_TOO_LONG,        /* longer than dns.maxQueryLength → REFUSED */
	SK_DNS_R_REFUSED_TYPE,    /* qtype not in dns.allowTypes (or a zone transfer / meta type) → REFUSED */
	SK_DNS_R_REFUSED_CLASS,   /* qclass not IN → REFUSED */
	SK_DNS_R_MALFORMED,       /* unparseable → FORMERR (or drop when not even a header) */
	SK_DNS_R_QDCOUNT,         /* zero or several questions → FORMERR */
	SK_DNS_R_NOTIMP,          /* opcode other than QUERY → NOTIMP */
	SK_DNS_R_BADVERS,         /* EDNS version > 0 → BADVERS */
	SK_DNS_R_NOT_QUERY,       /* QR set: a response sent to us → drop */
	SK_DNS_R_REBINDING,       /* answer pointed into private/link-local space → REFUSED */
	SK_DNS_R_UPSTREAM_ERROR,  /* upstream answer malformed or not for our question → SERVFAIL */
	SK_DNS_R_TRUNCATED,       /* answer too big for the client's UDP limit → TC=1 */
	SK_DNS_R_TIMEOUT,         /* no upstream answered in time → SERVFAIL */
	/* decided by the server, not the filter (budget.h): a name under a wildcard rule whose `queries`
	 * budget is spent, or whose counters could not follow the policy → REFUSED */
	SK_DNS_R_BUDGET_EXHAUSTED,
	SK_DNS_R_BUDGET_UNAVAILABLE,
	/* the name carries a `secrets:` placeholder or value (core/secret_swap.h: any label, the labels
	 * joined, the encodings it looks for) → REFUSED in every mode (forwarding it would send the
	 * credential out: audit mode too), and the fquery's name is replaced by SK_DNS_MISUSE_NAME so that
	 * no audit line or /denials entry carries it */
	SK_DNS_R_CREDENTIAL_MISUSE,
};
#define SK_DNS_MISUSE_NAME "(credential)"

struct sk_dns_filter_opts {
	bool strict_chain;        /* see the top comment */
};

/* What the server keeps for a forwarded query (copied by value; no pointers). */
struct sk_dns_fquery {
	uint16_t id;              /* client's ID */
	uint16_t flags;           /* client's flags (RD, CD echoed) */
	struct sk_dns_name qname; /* as the client spelled it: echoed back (sent upstream in lower case) */
	uint16_t qtype, qclass;
	char name[SK_DOMAIN_MAX + 1];  /* normalised; "" when the name is not a valid host name (audit) */
	int rule;                 /* rule that allows the name, -1 in audit mode without one */
	bool edns, do_bit;        /* the client sent OPT (so gets one back) / set DO (echoed; never sent up) */
	uint16_t udp_limit;       /* largest UDP answer the client accepts: 512 or its EDNS size, ≤ 4096 */
	bool audit;               /* allowed only because mode is audit; `would` holds the denial */
	enum sk_dns_result would;
};

struct sk_dns_qverdict {
	enum sk_dns_action action;
	enum sk_dns_result result;
	int rcode;                /* ANSWER: the rcode sent */
	size_t len;               /* ANSWER: bytes in out */
	struct sk_dns_fquery q;   /* FORWARD: everything; ANSWER: as much as was parsed (for audit) */
};

struct sk_dns_binding {
	struct sk_addr addr;
	uint32_t ttl;             /* seconds, as returned to the client (clamping happens in dns_bind) */
};

struct sk_dns_averdict {
	enum sk_dns_action action;   /* ANSWER or RETRY_TCP */
	enum sk_dns_result result;
	int rcode;
	size_t len;
	unsigned stripped;           /* records removed from the upstream answer */
	size_t n_bind;
	struct sk_dns_binding bind[SK_DNS_MAX_BINDINGS];
};

/* Decides a client message msg[0..len). tcp: the client came over TCP (no UDP size limit). out (cap >=
 * 512 recommended) receives a local answer. p may not be NULL. */
void sk_dns_filter_query(const struct sk_policy *p, const uint8_t *msg, size_t len, bool tcp,
			 uint8_t *out, size_t cap, struct sk_dns_qverdict *v);
/* The same, also looking for the secrets' values: values[0..p->n_secrets) from the store
 * (sidecar/core/secret_store.h; NULL: placeholders only, which is what sk_dns_filter_query looks for). */
void sk_dns_filter_query_ex(const struct sk_policy *p, const struct sk_secret_value *values, const uint8_t *msg,
			    size_t len, bool tcp, uint8_t *out, size_t cap, struct sk_dns_qverdict *v);

/* Builds the upstream query for q with upstream ID id: lower-cased name, flags RD only, an OPT with
 * SK_DNS_EDNS_SIZE, DO=0 and no options. Returns its length or -ENOSPC. */
int sk_dns_filter_upstream_query(const struct sk_dns_fquery *q, uint16_t id, uint8_t *out, size_t cap);

/* Checks an upstream answer ans[0..alen) to q and builds the client's answer into out. upstream_tcp:
 * the answer came over TCP (a TC bit is then not retried); client_tcp: the client is on TCP. */
void sk_dns_filter_answer(const struct sk_policy *p, const struct sk_dns_filter_opts *opts,
			  const struct sk_dns_fquery *q, const uint8_t *ans, size_t alen, bool upstream_tcp,
			  bool client_tcp, uint8_t *out, size_t cap, struct sk_dns_averdict *v);

/* A local answer to q with rcode (SERVFAIL on upstream timeout, ...). Returns its length or -ENOSPC. */
int sk_dns_filter_local_answer(const struct sk_dns_fquery *q, int rcode, bool tc, uint8_t *out, size_t cap);

const char *sk_dns_result_name(enum sk_dns_result r);  /* "forwarded", "denied", "refused_type", ... */

#endif

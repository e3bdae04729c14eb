/* sidecar/dns/cache.c — see dns_cache.h. */
#include "sidecar/dns/cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/dlist.h"
#include "common/hash.h"
#include "sidecar/dns/bind.h"
#include "sidecar/dns/codec.h"

#define OPT_LEN 11u                 /* an OPT record without options, as sk_dns_w_opt writes it */
#define SOA_RDATA_MIN 22u           /* two root names and five 32-bit fields */

/* One TTL to rewrite on the way out; A/AAAA answer records also give a binding. */
struct crec {
	uint32_t ttl_at;            /* offset of the TTL field in the stored message */
	uint32_t ttl;               /* as stored (the TTL at insertion) */
	uint8_t fam;                /* 0, or AF_INET/AF_INET6 for an A/AAAA answer record (rdata at ttl_at + 6) */
};

struct entry {
	struct entry *hnext;        /* bucket chain */
	struct sk_dlink lru;        /* in the cache's LRU list: head = most recently used */
	uint64_t hash;
	uint64_t born_ms, expires_ms;
	size_t size;                /* bytes charged against max_bytes */
	uint16_t qtype, qclass;
	int rcode;
	uint8_t qlen;               /* wire length of the question name, at offset 12 of msg */
	uint16_t n_rec;
	uint32_t len;               /* stored message length (no OPT, question in lower case) */
	struct crec *rec;           /* n_rec, inside this allocation */
	uint8_t *msg;               /* len bytes, inside this allocation */
	uint64_t data[];            /* rec then msg */
};

struct bucket {
	struct entry *head;
};

struct sk_dns_cache {
	struct bucket *buckets;
	size_t mask;
	struct sk_dlist lru;        /* of struct entry */
	size_t count, bytes, max_entries, max_bytes;
	uint64_t gen;
	bool gen_set;
	struct sk_hash_key key;
	struct sk_dns_cache_stats st;
};

static uint8_t lower(uint8_t b)
{
	return b >= 'A' && b <= 'Z' ? (uint8_t)(b + ('a' - 'A')) : b;
}

/* Keyed hash of (lower-cased wire name, qtype, qclass). */
static uint64_t key_hash(const struct sk_dns_cache *c, const struct sk_dns_name *n, uint16_t qtype, uint16_t qclass)
{
	/* the same bytes as fed one by one before, but hashed in one pass: word at a time, not byte */
	uint8_t k[4 + sizeof(n->wire)];
	k[0] = (uint8_t)(qtype >> 8);
	k[1] = (uint8_t)qtype;
	k[2] = (uint8_t)(qclass >> 8);
	k[3] = (uint8_t)qclass;
	const size_t len = n->len < sizeof(n->wire) ? n->len : sizeof(n->wire);
	for (size_t i = 0; i < len; i++)
		k[4 + i] = lower(n->wire[i]);
	return sk_siphash13(&c->key, k, 4 + len);
}

static bool key_equal(const struct entry *e, uint64_t hash, const struct sk_dns_name *n, uint16_t qtype,
		      uint16_t qclass)
{
	if (e->hash != hash || e->qtype != qtype || e->qclass != qclass || e->qlen != n->len)
		return false;
	const uint8_t *w = e->msg + SK_DNS_HDR_LEN;
	for (size_t i = 0; i < n->len; i++)
		if (w[i] != lower(n->wire[i]))
			return false;
	return true;
}

int sk_dns_cache_new(size_t max_entries, size_t max_bytes, struct sk_dns_cache **out,
		     struct sk_err *err)
{
	*out = NULL;
	if (max_entries == 0 || max_entries > (1u << 24) || max_bytes < 4096)
		return sk_err_set(err, EINVAL, "answer cache: %zu entries (1..%u), %zu bytes (4096 or more)", max_entries,
				  1u << 24, max_bytes);
	struct sk_dns_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return sk_err_sys(err, ENOMEM, "answer cache: allocate %zu entries", max_entries);
	size_t nb = 64;
	while (nb < max_entries)
		nb <<= 1;
	c->buckets = calloc(nb, sizeof(struct bucket));
	if (!c->buckets) {
		free(c);
		return sk_err_sys(err, ENOMEM, "answer cache: allocate %zu entries", max_entries);
	}
	c->mask = nb - 1;
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	int rc = sk_hash_key_random(&c->key);
	if (rc < 0) {
		free(c->buckets);
		free(c);
		return sk_err_sys(err, -rc, "answer cache: random hash key");
	}
	*out = c;
	return 0;
}

static struct entry *entry_of(struct sk_dlink *l)
{
	return sk_dlist_entry(l, struct entry, lru);
}

static void entry_remove(struct sk_dns_cache *c, struct entry *e)
{
	struct entry **pp = &c->buckets[e->hash & c->mask].head;
	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	sk_dlist_unlink(&c->lru, &e->lru);
	c->count--;
	c->bytes -= e->size;
	free(e);
}

void sk_dns_cache_flush(struct sk_dns_cache *c)
{
	if (!c)
		return;
	struct sk_dlink *l;
	while ((l = sk_dlist_pop_front(&c->lru)))
		free(entry_of(l));
	memset(c->buckets, 0, (c->mask + 1) * sizeof(struct bucket));
	c->count = c->bytes = 0;
	c->st.flushes++;
}

void sk_dns_cache_free(struct sk_dns_cache *c)
{
	if (!c)
		return;
	sk_dns_cache_flush(c);
	free(c->buckets);
	free(c);
}

/* Entries made under another policy generation are dropped whole (see the header). */
static void check_gen(struct sk_dns_cache *c, uint64_t gen)
{
	if (c->gen_set && c->gen == gen)
		return;
	if (c->gen_set && c->count)
		sk_dns_cache_flush(c);
	c->gen = gen;
	c->gen_set = true;
}

static struct entry *find(struct sk_dns_cache *c, uint64_t hash, const struct sk_dns_name *n, uint16_t qtype,
			  uint16_t qclass)
{
	for (struct entry *e = c->buckets[hash & c->mask].head; e; e = e->hnext)
		if (key_equal(e, hash, n, qtype, qclass))
			return e;
	return NULL;
}

static uint32_t rd32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void wr32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

int sk_dns_cache_put(struct sk_dns_cache *c, uint64_t gen, const struct sk_dns_fquery *q,
		     const struct sk_dns_averdict *v, const uint8_t *msg, size_t len, uint64_t now_ms)
{
	check_gen(c, gen);
	if (v->action != SK_DNS_ACT_ANSWER || v->result != SK_DNS_R_ANSWERED ||
	    (v->rcode != SK_DNS_RC_NOERROR && v->rcode != SK_DNS_RC_NXDOMAIN) || len < SK_DNS_HDR_LEN ||
	    len > SK_DNS_MSG_MAX)
		return 0;
	struct sk_dns_msg m;
	if (sk_dns_parse(msg, len, &m) != SK_DNS_OK || (m.hdr.flags & SK_DNS_F_TC) || m.hdr.qdcount != 1 ||
	    (int)SK_DNS_RCODE(m.hdr.flags) != v->rcode || !sk_dns_name_equal(&m.qname, &q->qname) ||
	    m.qtype != q->qtype || m.qclass != q->qclass)
		return 0;
	/* The body is everything but the client's OPT, which the filter writes last, without options. */
	size_t blen = m.end;
	if (m.hdr.arcount != (q->edns ? 1 : 0) || m.has_opt != q->edns)
		return 0;
	if (q->edns) {
		if (blen < m.sec[SK_DNS_SEC_AR] + OPT_LEN || m.sec[SK_DNS_SEC_AR] + OPT_LEN != blen)
			return 0;
		blen = m.sec[SK_DNS_SEC_AR];
	}

	/* Walk answer and authority: TTL positions, the smallest TTL, A/AAAA, the SOA's MINIMUM. */
	const unsigned n_rr = (unsigned)m.hdr.ancount + m.hdr.nscount;
	if (n_rr > UINT16_MAX)
		return 0;
	struct crec *rec = n_rr ? calloc(n_rr, sizeof(*rec)) : NULL;
	if (n_rr && !rec)
		return -ENOMEM;
	uint32_t min_ttl = UINT32_MAX, soa_min = UINT32_MAX;
	bool has_soa = false, has_qtype = false;
	size_t n_bind = 0, k = 0;
	for (int s = SK_DNS_SEC_AN; s <= SK_DNS_SEC_NS; s++) {
		size_t off = m.sec[s];
		unsigned left = s == SK_DNS_SEC_AN ? m.hdr.ancount : m.hdr.nscount;
		struct sk_dns_rr rr;
		while (k < n_rr && sk_dns_rr_next(&m, &off, &left, &rr)) {
			struct crec *r = &rec[k++];
			r->ttl_at = (uint32_t)(rr.rdata - 6);
			r->ttl = rr.ttl;
			min_ttl = min32(min_ttl, rr.ttl);
			if (s == SK_DNS_SEC_AN && rr.type == q->qtype)
				has_qtype = true;
			if (s == SK_DNS_SEC_AN && rr.rclass == SK_DNS_CLASS_IN &&
			    (rr.type == SK_DNS_T_A || rr.type == SK_DNS_T_AAAA)) {
				r->fam = rr.type == SK_DNS_T_A ? AF_INET : AF_INET6;
				n_bind++;
			}
			if (s == SK_DNS_SEC_NS && rr.type == SK_DNS_T_SOA && rr.rdlen >= SOA_RDATA_MIN) {
				uint32_t mn = rd32(msg + rr.end - 4);
				has_soa = true;
				soa_min = min32(soa_min, mn);
				r->ttl = min32(rr.ttl, mn);   /* RFC 2308 §3 */
			}
		}
	}
	/* The bindings a hit hands back must be the ones the fresh answer bound. */
	const bool negative = v->rcode == SK_DNS_RC_NXDOMAIN || !has_qtype;
	uint32_t ttl;
	if (negative)
		ttl = has_soa ? min32(min32(min_ttl, soa_min), SK_DNS_CACHE_NEG_TTL_MAX) : 0;
	else
		ttl = min32(min_ttl, SK_BIND_TTL_MAX);
	const size_t size = sizeof(struct entry) + n_rr * sizeof(struct crec) + blen;
	if (k != n_rr || n_bind != v->n_bind || ttl == 0 || ttl == UINT32_MAX || size > c->max_bytes / 8) {
		free(rec);
		return 0;
	}

	const uint64_t hash = key_hash(c, &q->qname, q->qtype, q->qclass);
	struct entry *old = find(c, hash, &q->qname, q->qtype, q->qclass);
	if (old)
		entry_remove(c, old);
	while (c->lru.tail && (c->count >= c->max_entries || c->bytes + size > c->max_bytes)) {
		entry_remove(c, entry_of(c->lru.tail));
		c->st.evictions++;
	}
	struct entry *e = malloc(size);
	if (!e) {
		free(rec);
		return -ENOMEM;
	}
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->born_ms = now_ms;
	e->expires_ms = now_ms + (uint64_t)ttl * 1000u;
	e->size = size;
	e->qtype = q->qtype;
	e->qclass = q->qclass;
	e->rcode = v->rcode;
	e->qlen = m.qname.len;
	e->n_rec = (uint16_t)n_rr;
	e->len = (uint32_t)blen;
	e->rec = (struct crec *)(void *)e->data;
	e->msg = (uint8_t *)(e->rec + n_rr);
	if (n_rr)
		memcpy(e->rec, rec, n_rr * sizeof(*rec));
	free(rec);
	memcpy(e->msg, msg, blen);
	e->msg[10] = e->msg[11] = 0;   /* ARCOUNT: no OPT in the body */
	/* The question is stored in lower case (it is uncompressed at offset 12: the first name written). */
	for (size_t i = 0; i < e->qlen; i++)
		e->msg[SK_DNS_HDR_LEN + i] = lower(e->msg[SK_DNS_HDR_LEN + i]);
	for (size_t i = 0; i < n_rr; i++)
		wr32(e->msg + e->rec[i].ttl_at, e->rec[i].ttl);
	struct entry **b = &c->buckets[hash & c->mask].head;
	e->hnext = *b;
	*b = e;
	sk_dlist_push_front(&c->lru, &e->lru);
	c->count++;
	c->bytes += size;
	c->st.inserts++;
	return 1;
}

bool sk_dns_cache_get(struct sk_dns_cache *c, uint64_t gen, const struct sk_dns_fquery *q, bool client_tcp,
		      uint64_t now_ms, uint8_t *out, size_t cap, struct sk_dns_cache_hit *h)
{
	memset(h, 0, sizeof(*h));
	check_gen(c, gen);
	const uint64_t hash = key_hash(c, &q->qname, q->qtype, q->qclass);
	struct entry *e = find(c, hash, &q->qname, q->qtype, q->qclass);
	if (e && now_ms >= e->expires_ms) {
		entry_remove(c, e);
		c->st.expired++;
		e = NULL;
	}
	if (!e) {
		c->st.misses++;
		return false;
	}
	c->st.hits++;
	sk_dlist_move_front(&c->lru, &e->lru);
	h->rcode = e->rcode;
	size_t limit = client_tcp ? SK_DNS_MSG_MAX : q->udp_limit;
	if (limit > cap)
		limit = cap;
	struct sk_dns_writer w;
	sk_dns_w_init(&w, out, limit);
	sk_dns_w_bytes(&w, e->msg, e->len);
	if (q->edns)
		sk_dns_w_opt(&w, SK_DNS_EDNS_SIZE, q->do_bit, 0);
	if (w.overflow) {
		/* What the filter sends when a fresh answer does not fit: empty, TC=1, nothing bound. */
		int n = sk_dns_filter_local_answer(q, e->rcode, true, out, cap);
		h->truncated = true;
		h->len = n < 0 ? 0 : (size_t)n;
		return n >= 0;
	}
	const uint16_t flags = (uint16_t)(SK_DNS_F_QR | SK_DNS_F_RA | (q->flags & (SK_DNS_F_RD | SK_DNS_F_CD)) |
					  (unsigned)e->rcode);
	out[0] = (uint8_t)(q->id >> 8);
	out[1] = (uint8_t)q->id;
	out[2] = (uint8_t)(flags >> 8);
	out[3] = (uint8_t)flags;
	out[10] = 0;
	out[11] = q->edns ? 1 : 0;
	memcpy(out + SK_DNS_HDR_LEN, q->qname.wire, e->qlen);   /* the client's spelling */
	const uint64_t age_s = (now_ms - e->born_ms) / 1000u;
	for (size_t i = 0; i < e->n_rec; i++) {
		const struct crec *r = &e->rec[i];
		const uint32_t ttl = r->ttl > age_s ? (uint32_t)(r->ttl - age_s) : 0;
		wr32(out + r->ttl_at, ttl);
		if (r->fam && h->n_bind < SK_DNS_MAX_BINDINGS) {
			struct sk_dns_binding *b = &h->bind[h->n_bind++];
			memset(&b->addr, 0, sizeof(b->addr));
			b->addr.family = r->fam;
			memcpy(b->addr.bytes, e->msg + r->ttl_at + 6, r->fam == AF_INET ? 4 : 16);
			b->ttl = ttl;
		}
	}
	h->len = w.len;
	return true;
}

void sk_dns_cache_stats(const struct sk_dns_cache *c, struct sk_dns_cache_stats *st)
{
	*st = c->st;
	st->entries = c->count;
	st->bytes = c->bytes;
}

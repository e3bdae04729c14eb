/* sidecar/dns/codec.c — see dns_codec.h. Every offset is checked against the buffer length before the
 * byte it names is read; lengths are size_t so no sum of two 16-bit wire fields can wrap. */
#include "sidecar/dns/codec.h"

#include <errno.h>
#include <string.h>

static uint16_t rd16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static uint32_t rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static uint8_t lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c; }

enum sk_dns_perr sk_dns_name_read(const uint8_t *buf, size_t len, size_t *off, struct sk_dns_name *out)
{
	size_t pos = *off, after = 0, olen = 0;
	/* Every pointer must land strictly before the previous jump target (or the name's start): jump
	 * targets strictly decrease, so a walk ends after at most `pos` jumps and no loop can exist. */
	size_t limit = pos;
	bool jumped = false;

	for (;;) {
		if (pos >= len)
			return SK_DNS_E_SHORT;
		uint8_t c = buf[pos];
		if ((c & 0xc0) == 0xc0) {
			if (pos + 1 >= len)
				return SK_DNS_E_SHORT;
			size_t target = ((size_t)(c & 0x3f) << 8) | buf[pos + 1];
			if (target >= limit || target < SK_DNS_HDR_LEN)
				return SK_DNS_E_PTR_FORWARD;
			if (!jumped) {
				after = pos + 2;
				jumped = true;
			}
			limit = target;
			pos = target;
			continue;
		}
		if (c & 0xc0)
			return SK_DNS_E_LABEL_TYPE;
		if (c == 0) {
			out->wire[olen++] = 0;
			out->len = (uint8_t)olen;
			*off = jumped ? after : pos + 1;
			return SK_DNS_OK;
		}
		if (pos + 1 + c > len)
			return SK_DNS_E_SHORT;
		/* +1 length byte, +1 for the root label that must still fit */
		if (olen + 1 + c + 1 > SK_DNS_NAME_WIRE_MAX)
			return SK_DNS_E_NAME_LONG;
		memcpy(out->wire + olen, buf + pos, (size_t)c + 1);
		olen += (size_t)c + 1;
		pos += (size_t)c + 1;
	}
}

static enum sk_dns_perr parse_opt(struct sk_dns_msg *m, const struct sk_dns_rr *rr)
{
	if (m->has_opt || rr->name.len != 1)
		return SK_DNS_E_OPT;
	size_t p = rr->rdata, end = rr->rdata + rr->rdlen;
	while (p < end) {
		if (end - p < 4)
			return SK_DNS_E_RDATA;
		size_t olen = rd16(m->buf + p + 2);
		if (end - p - 4 < olen)
			return SK_DNS_E_RDATA;
		p += 4 + olen;
	}
	m->has_opt = true;
	m->udp_size = rr->rclass;
	m->ext_rcode = (uint8_t)(rr->ttl >> 24);
	m->edns_version = (uint8_t)(rr->ttl >> 16);
	m->do_bit = (rr->ttl & 0x8000u) != 0;
	return SK_DNS_OK;
}

/* Reads one record at *off (bounded by len); validates what the filter relies on. */
static enum sk_dns_perr read_rr(const uint8_t *buf, size_t len, size_t *off, struct sk_dns_rr *rr)
{
	size_t p = *off;
	enum sk_dns_perr e = sk_dns_name_read(buf, len, &p, &rr->name);
	if (e)
		return e;
	if (len - p < 10)
		return SK_DNS_E_SHORT;
	rr->type = rd16(buf + p);
	rr->rclass = rd16(buf + p + 2);
	rr->ttl = rd32(buf + p + 4);
	rr->rdlen = rd16(buf + p + 8);
	p += 10;
	if (len - p < rr->rdlen)
		return SK_DNS_E_SHORT;
	rr->rdata = p;
	rr->end = p + rr->rdlen;
	if (rr->type == SK_DNS_T_A && rr->rclass == SK_DNS_CLASS_IN && rr->rdlen != 4)
		return SK_DNS_E_RDATA;
	if (rr->type == SK_DNS_T_AAAA && rr->rclass == SK_DNS_CLASS_IN && rr->rdlen != 16)
		return SK_DNS_E_RDATA;
	*off = rr->end;
	return SK_DNS_OK;
}

enum sk_dns_perr sk_dns_parse(const uint8_t *buf, size_t len, struct sk_dns_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->buf = buf;
	m->len = len;
	if (len < SK_DNS_HDR_LEN)
		return SK_DNS_E_SHORT;
	m->hdr.id = rd16(buf);
	m->hdr.flags = rd16(buf + 2);
	m->hdr.qdcount = rd16(buf + 4);
	m->hdr.ancount = rd16(buf + 6);
	m->hdr.nscount = rd16(buf + 8);
	m->hdr.arcount = rd16(buf + 10);

	size_t off = SK_DNS_HDR_LEN;
	for (unsigned i = 0; i < m->hdr.qdcount; i++) {
		if (off >= len)
			return SK_DNS_E_COUNTS;
		struct sk_dns_name n;
		enum sk_dns_perr e = sk_dns_name_read(buf, len, &off, &n);
		if (e)
			return e;
		if (len - off < 4)
			return SK_DNS_E_SHORT;
		if (i == 0) {
			m->has_q = true;
			m->qname = n;
			m->qtype = rd16(buf + off);
			m->qclass = rd16(buf + off + 2);
		}
		off += 4;
	}
	m->qend = off;

	const uint16_t counts[3] = { m->hdr.ancount, m->hdr.nscount, m->hdr.arcount };
	for (int s = 0; s < 3; s++) {
		m->sec[s] = off;
		for (unsigned i = 0; i < counts[s]; i++) {
			if (off >= len)
				return SK_DNS_E_COUNTS;
			struct sk_dns_rr rr;
			enum sk_dns_perr e = read_rr(buf, len, &off, &rr);
			if (e)
				return e;
			if (rr.type == SK_DNS_T_OPT) {
				if (s != SK_DNS_SEC_AR)
					return SK_DNS_E_OPT;
				e = parse_opt(m, &rr);
				if (e)
					return e;
			}
		}
	}
	m->end = off;
	return SK_DNS_OK;
}

bool sk_dns_rr_next(const struct sk_dns_msg *m, size_t *off, unsigned *left, struct sk_dns_rr *rr)
{
	if (*left == 0)
		return false;
	/* The message was validated by sk_dns_parse, so this cannot fail; checked anyway so a caller
	 * that mixes views and offsets gets "no more records" instead of a bad read. Bounded by len, not
	 * end, exactly as the parse was: a compression target's labels may run on into trailing bytes. */
	if (read_rr(m->buf, m->len, off, rr) != SK_DNS_OK) {
		*left = 0;
		return false;
	}
	(*left)--;
	return true;
}

int sk_dns_name_text(const struct sk_dns_name *n, char *out)
{
	size_t p = 0, o = 0;
	while (p < n->len && n->wire[p] != 0) {
		uint8_t l = n->wire[p++];
		if (o)
			out[o++] = '.';
		for (uint8_t i = 0; i < l; i++) {
			uint8_t c = n->wire[p++];
			/* A '.' inside a label would make "a.b" (one label) read as two labels in text. */
			if (c <= 0x20 || c >= 0x7f || c == '.' || c == '\\') {
				out[0] = '\0';
				return -EINVAL;
			}
			out[o++] = (char)lower(c);
		}
	}
	out[o] = '\0';
	return 0;
}

int sk_dns_name_from_text(const char *text, struct sk_dns_name *out)
{
	size_t tl = strlen(text), o = 0, i = 0;
	if (tl && text[tl - 1] == '.')
		tl--;
	while (i < tl) {
		size_t j = i;
		while (j < tl && text[j] != '.')
			j++;
		size_t l = j - i;
		if (l == 0 || l > SK_DNS_LABEL_MAX || o + 1 + l + 1 > SK_DNS_NAME_WIRE_MAX)
			return -EINVAL;
		out->wire[o++] = (uint8_t)l;
		memcpy(out->wire + o, text + i, l);
		o += l;
		i = j + 1;
		if (j < tl && i == tl)   /* "a..": a trailing empty label after the stripped dot */
			return -EINVAL;
	}
	out->wire[o++] = 0;
	out->len = (uint8_t)o;
	return 0;
}

bool sk_dns_name_equal(const struct sk_dns_name *a, const struct sk_dns_name *b)
{
	if (a->len != b->len)
		return false;
	if (memcmp(a->wire, b->wire, a->len) == 0)   /* the usual case: the same name, same case */
		return true;
	/* Length bytes are < 64, so lower-casing them is the identity: one loop compares both. */
	for (size_t i = 0; i < a->len; i++)
		if (lower(a->wire[i]) != lower(b->wire[i]))
			return false;
	return true;
}

unsigned sk_dns_name_labels(const struct sk_dns_name *n)
{
	unsigned k = 0;
	for (size_t p = 0; p < n->len && n->wire[p]; p += (size_t)n->wire[p] + 1)
		k++;
	return k;
}

/* ---- writer ---- */

void sk_dns_w_init(struct sk_dns_writer *w, uint8_t *buf, size_t cap)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
}

void sk_dns_w_bytes(struct sk_dns_writer *w, const void *p, size_t n)
{
	if (w->overflow || w->cap - w->len < n) {
		w->overflow = true;
		return;
	}
	if (n)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void sk_dns_w_u16(struct sk_dns_writer *w, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	sk_dns_w_bytes(w, b, 2);
}

void sk_dns_w_u32(struct sk_dns_writer *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	sk_dns_w_bytes(w, b, 4);
}

void sk_dns_w_set_u16(struct sk_dns_writer *w, size_t at, uint16_t v)
{
	if (w->overflow || at + 2 > w->len)
		return;
	w->buf[at] = (uint8_t)(v >> 8);
	w->buf[at + 1] = (uint8_t)v;
}

void sk_dns_w_header(struct sk_dns_writer *w, const struct sk_dns_header *h)
{
	sk_dns_w_u16(w, h->id);
	sk_dns_w_u16(w, h->flags);
	sk_dns_w_u16(w, h->qdcount);
	sk_dns_w_u16(w, h->ancount);
	sk_dns_w_u16(w, h->nscount);
	sk_dns_w_u16(w, h->arcount);
}

void sk_dns_w_name(struct sk_dns_writer *w, const struct sk_dns_name *n, bool compress)
{
	size_t starts[128];
	unsigned ns = 0;
	for (size_t p = 0; p < n->len && n->wire[p]; p += (size_t)n->wire[p] + 1)
		starts[ns++] = p;

	/* Longest suffix of n already in the output: decode each candidate once; only the suffix of
	 * the same wire length can equal it. */
	size_t best_label = ns, best_ptr = 0;
	if (compress && !w->overflow) {
		for (unsigned c = 0; c < w->n_comp; c++) {
			struct sk_dns_name prev;
			size_t off = w->comp[c];
			if (sk_dns_name_read(w->buf, w->len, &off, &prev) != SK_DNS_OK)
				continue;
			for (unsigned k = 0; k < best_label; k++) {
				if (n->len - starts[k] != prev.len)
					continue;
				struct sk_dns_name suf;
				suf.len = prev.len;
				memcpy(suf.wire, n->wire + starts[k], prev.len);
				if (sk_dns_name_equal(&suf, &prev)) {
					best_label = k;
					best_ptr = w->comp[c];
				}
				break;
			}
		}
	}
	for (unsigned k = 0; k < best_label; k++) {
		size_t at = w->len;
		sk_dns_w_bytes(w, n->wire + starts[k], (size_t)n->wire[starts[k]] + 1);
		if (compress && !w->overflow && at < 0x3fff && w->n_comp < SK_DNS_W_COMP_MAX)
			w->comp[w->n_comp++] = (uint16_t)at;
	}
	if (best_label < ns)
		sk_dns_w_u16(w, (uint16_t)(0xc000u | best_ptr));
	else
		sk_dns_w_bytes(w, "", 1);
}

void sk_dns_w_opt(struct sk_dns_writer *w, uint16_t udp_size, bool do_bit, uint8_t ext_rcode)
{
	sk_dns_w_bytes(w, "", 1);
	sk_dns_w_u16(w, SK_DNS_T_OPT);
	sk_dns_w_u16(w, udp_size);
	sk_dns_w_u32(w, ((uint32_t)ext_rcode << 24) | (do_bit ? 0x8000u : 0));
	sk_dns_w_u16(w, 0);
}

/* Reads a name that must lie inside rdata [*p, end); pointers may still reach earlier in the message. */
static bool rdata_name(const struct sk_dns_msg *m, size_t *p, size_t end, struct sk_dns_name *out)
{
	return *p < end && sk_dns_name_read(m->buf, end, p, out) == SK_DNS_OK;
}

bool sk_dns_rr_target(const struct sk_dns_msg *m, const struct sk_dns_rr *rr, struct sk_dns_name *out)
{
	size_t p = rr->rdata;
	return rdata_name(m, &p, rr->end, out) && p == rr->end;
}

bool sk_dns_w_copy_rr(struct sk_dns_writer *w, const struct sk_dns_msg *m, const struct sk_dns_rr *rr,
		      uint32_t ttl)
{
	sk_dns_w_name(w, &rr->name, true);
	sk_dns_w_u16(w, rr->type);
	sk_dns_w_u16(w, rr->rclass);
	sk_dns_w_u32(w, ttl);
	size_t rdlen_at = w->len;
	sk_dns_w_u16(w, 0);
	size_t start = w->len;

	size_t p = rr->rdata, end = rr->end;
	struct sk_dns_name n;
	switch (rr->type) {
	case SK_DNS_T_NS:
	case SK_DNS_T_CNAME:
	case SK_DNS_T_PTR:
	case SK_DNS_T_DNAME:
		if (!rdata_name(m, &p, end, &n))
			return false;
		sk_dns_w_name(w, &n, rr->type != SK_DNS_T_DNAME);
		break;
	case SK_DNS_T_SOA:
		for (int i = 0; i < 2; i++) {
			if (!rdata_name(m, &p, end, &n))
				return false;
			sk_dns_w_name(w, &n, true);
		}
		if (end - p != 20)
			return false;
		sk_dns_w_bytes(w, m->buf + p, 20);
		p = end;
		break;
	case SK_DNS_T_MX:
	case SK_DNS_T_SRV: {
		size_t fixed = rr->type == SK_DNS_T_MX ? 2 : 6;
		if (end - p < fixed)
			return false;
		sk_dns_w_bytes(w, m->buf + p, fixed);
		p += fixed;
		if (!rdata_name(m, &p, end, &n))
			return false;
		sk_dns_w_name(w, &n, rr->type == SK_DNS_T_MX);
		break;
	}
	default:
		sk_dns_w_bytes(w, m->buf + p, end - p);
		p = end;
		break;
	}
	if (p != end)
		return false;
	size_t rdlen = w->len - start;
	if (rdlen > 0xffff) {
		w->overflow = true;
		return true;
	}
	sk_dns_w_set_u16(w, rdlen_at, (uint16_t)rdlen);
	return true;
}

int sk_dns_build_response(const struct sk_dns_msg *m, int rcode, uint8_t *out, size_t cap)
{
	struct sk_dns_writer w;
	sk_dns_w_init(&w, out, cap);
	struct sk_dns_header h = {
		.id = m->hdr.id,
		.flags = (uint16_t)(SK_DNS_F_QR | (m->hdr.flags & (0x7800u | SK_DNS_F_RD | SK_DNS_F_CD)) |
				    SK_DNS_F_RA | ((unsigned)rcode & 0xfu)),
		.qdcount = m->has_q ? 1 : 0,
		.arcount = m->has_opt ? 1 : 0,
	};
	sk_dns_w_header(&w, &h);
	if (m->has_q) {
		sk_dns_w_name(&w, &m->qname, true);
		sk_dns_w_u16(&w, m->qtype);
		sk_dns_w_u16(&w, m->qclass);
	}
	if (m->has_opt)
		sk_dns_w_opt(&w, SK_DNS_EDNS_SIZE, m->do_bit, (uint8_t)((unsigned)rcode >> 4));
	return w.overflow ? -ENOSPC : (int)w.len;
}

int sk_dns_build_formerr(const uint8_t *query, size_t len, uint8_t *out, size_t cap)
{
	if (len < 2)
		return -EINVAL;
	if (cap < SK_DNS_HDR_LEN)
		return -ENOSPC;
	uint16_t qflags = len >= 4 ? rd16(query + 2) : 0;
	memset(out, 0, SK_DNS_HDR_LEN);
	out[0] = query[0];
	out[1] = query[1];
	uint16_t f = (uint16_t)(SK_DNS_F_QR | (qflags & (0x7800u | SK_DNS_F_RD)) | SK_DNS_F_RA |
				SK_DNS_RC_FORMERR);
	out[2] = (uint8_t)(f >> 8);
	out[3] = (uint8_t)f;
	return SK_DNS_HDR_LEN;
}

int sk_dns_build_query(uint16_t id, uint16_t flags, const struct sk_dns_name *name, uint16_t qtype,
		       uint16_t qclass, bool edns, bool do_bit, uint8_t *out, size_t cap)
{
	struct sk_dns_writer w;
	sk_dns_w_init(&w, out, cap);
	struct sk_dns_header h = {
		.id = id,
		.flags = (uint16_t)(flags & (SK_DNS_F_RD | SK_DNS_F_CD)),
		.qdcount = 1,
		.arcount = edns ? 1 : 0,
	};
	sk_dns_w_header(&w, &h);
	sk_dns_w_name(&w, name, false);
	sk_dns_w_u16(&w, qtype);
	sk_dns_w_u16(&w, qclass);
	if (edns)
		sk_dns_w_opt(&w, SK_DNS_EDNS_SIZE, do_bit, 0);
	return w.overflow ? -ENOSPC : (int)w.len;
}

const char *sk_dns_perr_name(enum sk_dns_perr e)
{
	switch (e) {
	case SK_DNS_OK: return "ok";
	case SK_DNS_E_SHORT: return "short";
	case SK_DNS_E_LABEL_TYPE: return "label_type";
	case SK_DNS_E_PTR_FORWARD: return "bad_pointer";
	case SK_DNS_E_NAME_LONG: return "name_long";
	case SK_DNS_E_RDATA: return "bad_rdata";
	case SK_DNS_E_COUNTS: return "bad_counts";
	case SK_DNS_E_OPT: return "bad_opt";
	}
	return "unknown";
}

const char *sk_dns_type_name(uint16_t t)
{
	switch (t) {
	case SK_DNS_T_A: return "A";
	case SK_DNS_T_NS: return "NS";
	case SK_DNS_T_CNAME: return "CNAME";
	case SK_DNS_T_SOA: return "SOA";
	case SK_DNS_T_NULL: return "NULL";
	case SK_DNS_T_PTR: return "PTR";
	case SK_DNS_T_MX: return "MX";
	case SK_DNS_T_TXT: return "TXT";
	case SK_DNS_T_AAAA: return "AAAA";
	case SK_DNS_T_SRV: return "SRV";
	case SK_DNS_T_DNAME: return "DNAME";
	case SK_DNS_T_OPT: return "OPT";
	case SK_DNS_T_SVCB: return "SVCB";
	case SK_DNS_T_HTTPS: return "HTTPS";
	case SK_DNS_T_IXFR: return "IXFR";
	case SK_DNS_T_AXFR: return "AXFR";
	case SK_DNS_T_ANY: return "ANY";
	}
	return "other";
}

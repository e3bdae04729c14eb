/* sidecar/proxy/tls_hello.c — the TLS ClientHello parser (see tls_hello.h).
 *
 * The handshake message is read straight out of the record layer through a small cursor (struct
 * hs_stream) that steps over record headers, so a hello split across any number of records needs no
 * reassembly buffer. Every field is checked as soon as its bytes are present: a prefix that can no
 * longer become a valid hello is MALFORMED at once, and NEED_MORE means "valid so far". A decision other
 * than NEED_MORE never changes when more bytes arrive (the fuzz target checks this).
 *
 * The forge-supervisor design had an off-by-one SNI parser; here every byte is read through hs_read(),
 * which checks `pos < len` and the record bounds, and every length is checked against its container
 * before anything is read under it. */
#include "sidecar/proxy/tls_hello.h"

#include <stdbool.h>
#include <string.h>

#include "policy/addr.h"

#define TLS_CT_CHANGE_CIPHER_SPEC 20
#define TLS_CT_ALERT 21
#define TLS_CT_HANDSHAKE 22
#define TLS_CT_APPLICATION_DATA 23
#define TLS_HS_CLIENT_HELLO 1
#define TLS_HS_SERVER_HELLO 2
#define TLS_REC_HDR 5
#define TLS_REC_MAX ((1u << 14) + 2048)   /* the largest record any TLS version allows on the wire */
#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ALPN 0x0010
#define TLS_EXT_ECH 0xfe0d                /* encrypted_client_hello (RFC 9849) */
#define TLS_EXT_ESNI_DRAFT 0xffce         /* draft encrypted_server_name: same problem, outer name is a decoy */
#define SNI_HOST_NAME 0
#define NAME_BUF 256                      /* longest name we look at: SK_DOMAIN_MAX + trailing dot + NUL */

/* A read cursor over the handshake bytes carried by consecutive handshake records of buf[0..len). */
struct hs_stream {
	const uint8_t *buf;
	size_t len;
	size_t pos;                /* next unread byte of buf */
	size_t rec_left;           /* handshake payload bytes of the current record not read yet */
	enum sk_hello_result fail; /* why the last read failed: NEED_MORE or MALFORMED */
};

static bool stream_fail(struct hs_stream *s, enum sk_hello_result r)
{
	s->fail = r;
	return false;
}

/* Opens the record starting at s->pos. Header bytes are judged one by one as they arrive so a wrong
 * prefix is never answered with NEED_MORE. */
static bool next_record(struct hs_stream *s)
{
	const uint8_t *h = s->buf + s->pos;
	size_t avail = s->len - s->pos;

	/* Anything but a handshake record before the hello is complete (alert, CCS, early data) is a
	 * protocol violation; a middlebox that let it through could be made to see a different hello. */
	if (avail >= 1 && h[0] != TLS_CT_HANDSHAKE)
		return stream_fail(s, SK_HELLO_MALFORMED);
	if (avail >= 2 && h[1] != 3)
		return stream_fail(s, SK_HELLO_MALFORMED);
	if (avail >= 3 && h[2] > 4)    /* record versions 0x0300..0x0304; clients use 0x0301 */
		return stream_fail(s, SK_HELLO_MALFORMED);
	if (avail >= 4 && ((size_t)h[3] << 8) > TLS_REC_MAX)
		return stream_fail(s, SK_HELLO_MALFORMED);
	if (avail < TLS_REC_HDR)
		return stream_fail(s, SK_HELLO_NEED_MORE);
	size_t n = (size_t)h[3] << 8 | h[4];
	if (n == 0 || n > TLS_REC_MAX)  /* empty handshake records are forbidden (RFC 8446 §5.1) */
		return stream_fail(s, SK_HELLO_MALFORMED);
	s->pos += TLS_REC_HDR;
	s->rec_left = n;
	return true;
}

/* Reads n handshake bytes into dst (or skips them when dst is NULL), crossing record boundaries. */
static bool hs_read(struct hs_stream *s, uint8_t *dst, size_t n)
{
	while (n > 0) {
		if (s->rec_left == 0 && !next_record(s))
			return false;
		size_t k = s->len - s->pos;
		if (k == 0)
			return stream_fail(s, SK_HELLO_NEED_MORE);
		if (k > s->rec_left)
			k = s->rec_left;
		if (k > n)
			k = n;
		if (dst) {
			memcpy(dst, s->buf + s->pos, k);
			dst += k;
		}
		s->pos += k;
		s->rec_left -= k;
		n -= k;
	}
	return true;
}

/* The ClientHello body being parsed: the stream plus how many bytes of the message are left, so that
 * no field can claim bytes beyond the 24-bit handshake length. */
struct hello {
	struct hs_stream s;
	size_t msg_left;
	unsigned host_names;       /* host_name entries seen, over all server_name extensions */
	bool multi;                /* a second server_name extension */
	bool ech;
	size_t name_len;           /* of the first host_name */
	/* The first host_name, when name_len < NAME_BUF: a NAME_BUF array of the caller's own, not a member,
	 * so that a write past it lands in a sanitizer's red zone rather than in the next field. */
	char *name;
	/* The ALPN protocol list (RFC 7301 §3.1, without its outer length) when the caller asked for it:
	 * alpn_cap bytes of the caller's own; alpn_len SIZE_MAX when the list did not fit. */
	uint8_t *alpn;
	size_t alpn_cap, alpn_len;
	uint64_t seen[65536 / 64]; /* extension types seen, for the duplicate check */
};

static bool take(struct hello *h, uint8_t *dst, size_t n)
{
	if (n > h->msg_left)
		return stream_fail(&h->s, SK_HELLO_MALFORMED);
	if (!hs_read(&h->s, dst, n))
		return false;
	h->msg_left -= n;
	return true;
}

static bool take_u8(struct hello *h, size_t *v)
{
	uint8_t b;

	if (!take(h, &b, 1))
		return false;
	*v = b;
	return true;
}

/* A 16-bit length that must not exceed max; the high byte alone can already prove it too big. */
static bool take_len16(struct hello *h, size_t max, size_t *v)
{
	size_t hi, lo;

	if (!take_u8(h, &hi))
		return false;
	if ((hi << 8) > max)
		return stream_fail(&h->s, SK_HELLO_MALFORMED);
	if (!take_u8(h, &lo))
		return false;
	*v = hi << 8 | lo;
	if (*v > max)
		return stream_fail(&h->s, SK_HELLO_MALFORMED);
	return true;
}

/* server_name (RFC 6066 §3): a non-empty list of entries; only host_name (type 0) is defined, and its
 * name is 1..2^16-1 bytes. Several host_name entries are reported, not silently reduced to the first:
 * the upstream might pick another one. */
static bool parse_server_name(struct hello *h, size_t ext_len)
{
	size_t list_len, type, name_len;

	if (ext_len < 2)
		return stream_fail(&h->s, SK_HELLO_MALFORMED);
	if (!take_len16(h, ext_len - 2, &list_len))
		return false;
	if (list_len != ext_len - 2 || list_len == 0)
		return stream_fail(&h->s, SK_HELLO_MALFORMED);
	while (list_len > 0) {
		if (!take_u8(h, &type))
			return false;
		list_len--;
		/* Unknown name types have no defined framing we could skip safely. */
		if (type != SNI_HOST_NAME || list_len < 2)
			return stream_fail(&h->s, SK_HELLO_MALFORMED);
		if (!take_len16(h, list_len - 2, &name_len))
			return false;
		list_len -= 2;
		if (name_len == 0)
			return stream_fail(&h->s, SK_HELLO_MALFORMED);
		bool keep = h->host_names == 0 && name_len < NAME_BUF;
		if (!take(h, keep ? (uint8_t *)h->name : NULL, name_len))
			return false;
		if (h->host_names == 0)
			h->name_len = name_len;
		if (keep)
			h->name[name_len] = '\0';
		h->host_names++;
		list_len -= name_len;
	}
	return true;
}

/* Fewest wire bytes the whole hello can take, given what has been read: the rest of the handshake
 * message plus a header for every further record it needs at the largest allowed record size. */
static size_t wire_lower_bound(const struct hs_stream *s, size_t hs_left)
{
	size_t need = s->pos + hs_left;

	if (hs_left > s->rec_left) {
		size_t more = hs_left - s->rec_left;
		need += TLS_REC_HDR * ((more + TLS_REC_MAX - 1) / TLS_REC_MAX);
	}
	return need;
}

static enum sk_hello_result parse_hello(struct hello *h, size_t cap)
{
	uint8_t b[4];
	size_t n, ext_total;

	/* The handshake header is read in pieces so that a wrong type byte is refused immediately. */
	if (!hs_read(&h->s, b, 1))
		return h->s.fail;
	if (b[0] != TLS_HS_CLIENT_HELLO)
		return SK_HELLO_MALFORMED;
	if (!hs_read(&h->s, b + 1, 3))
		return h->s.fail;
	h->msg_left = (size_t)b[1] << 16 | (size_t)b[2] << 8 | b[3];
	if (wire_lower_bound(&h->s, h->msg_left) > cap)
		return SK_HELLO_TOO_BIG;

	/* legacy_version: 0x0300..0x0303 in practice (TLS 1.3 freezes it at 0x0303); 0x0304 tolerated. */
	if (!take_u8(h, &n))
		return h->s.fail;
	if (n != 3)
		return SK_HELLO_MALFORMED;
	if (!take_u8(h, &n))
		return h->s.fail;
	if (n > 4)
		return SK_HELLO_MALFORMED;
	if (!take(h, NULL, 32))                 /* random */
		return h->s.fail;
	if (!take_u8(h, &n))                    /* legacy_session_id <0..32> */
		return h->s.fail;
	if (n > 32)
		return SK_HELLO_MALFORMED;
	if (!take(h, NULL, n))
		return h->s.fail;
	if (!take_len16(h, h->msg_left, &n))    /* cipher_suites <2..2^16-2>, 2 bytes each */
		return h->s.fail;
	if (n < 2 || n % 2 != 0)
		return SK_HELLO_MALFORMED;
	if (!take(h, NULL, n))
		return h->s.fail;
	if (!take_u8(h, &n))                    /* legacy_compression_methods <1..2^8-1> */
		return h->s.fail;
	if (n < 1)
		return SK_HELLO_MALFORMED;
	if (!take(h, NULL, n))
		return h->s.fail;

	/* Before TLS 1.3 the extensions block may be absent altogether; if present it must fill the rest
	 * of the message exactly, so there is no trailing region one side parses and the other ignores. */
	if (h->msg_left > 0) {
		if (h->msg_left < 2)
			return SK_HELLO_MALFORMED;
		if (!take_len16(h, h->msg_left - 2, &ext_total))
			return h->s.fail;
		if (ext_total != h->msg_left)
			return SK_HELLO_MALFORMED;
	}
	while (h->msg_left > 0) {
		size_t hi, lo, type, ext_len;

		if (h->msg_left < 4)
			return SK_HELLO_MALFORMED;
		if (!take_u8(h, &hi) || !take_u8(h, &lo))
			return h->s.fail;
		type = hi << 8 | lo;
		if (h->seen[type / 64] & (UINT64_C(1) << (type % 64))) {
			/* RFC 8446 §4.2: duplicates are illegal; two server_name extensions get their own
			 * verdict since they are the classic way to make two parsers pick different names. */
			if (type != TLS_EXT_SERVER_NAME)
				return SK_HELLO_MALFORMED;
			h->multi = true;
		}
		h->seen[type / 64] |= UINT64_C(1) << (type % 64);
		if (!take_len16(h, h->msg_left - 2, &ext_len))
			return h->s.fail;
		if (type == TLS_EXT_SERVER_NAME) {
			/* Consumes exactly ext_len: the list length must equal ext_len - 2. */
			if (!parse_server_name(h, ext_len))
				return h->s.fail;
			continue;
		}
		if (type == TLS_EXT_ALPN && h->alpn) {
			/* The list must fill the extension exactly; it is kept as the server will read it. */
			size_t list_len;
			if (ext_len < 2)
				return SK_HELLO_MALFORMED;
			if (!take_len16(h, ext_len - 2, &list_len))
				return h->s.fail;
			if (list_len != ext_len - 2)
				return SK_HELLO_MALFORMED;
			bool keep = list_len <= h->alpn_cap;
			if (!take(h, keep ? h->alpn : NULL, list_len))
				return h->s.fail;
			h->alpn_len = keep ? list_len : SIZE_MAX;
			continue;
		}
		if (type == TLS_EXT_ECH || type == TLS_EXT_ESNI_DRAFT)
			h->ech = true;
		if (!take(h, NULL, ext_len))
			return h->s.fail;
	}

	/* The hello must end its record: a client sends nothing else before the server answers, and
	 * bytes we would not inspect must not ride along in the same record. */
	if (h->s.rec_left != 0)
		return SK_HELLO_MALFORMED;
	return SK_HELLO_OK;
}

/* Digits and dots only: an IPv4 literal in any spelling ("1.2.3.4", "127.1", "1.2.3.4."). */
static bool all_numeric(const char *s, size_t n)
{
	bool digit = false;

	for (size_t i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digit = true;
		else if (s[i] != '.')
			return false;
	}
	return digit;
}

/* What the proxy learns from a structurally valid hello. */
static enum sk_hello_result judge(const struct hello *h, char *sni)
{
	struct sk_addr ip;
	bool wild;
	const char *why;
	char norm[SK_DOMAIN_MAX + 1];

	if (h->multi || h->host_names > 1)
		return SK_HELLO_MULTI_SNI;
	bool have = h->host_names == 1 && h->name_len < NAME_BUF && !memchr(h->name, '\0', h->name_len);
	if (h->ech) {
		/* The outer name is the ECH provider's public_name; keep it for the audit line only. */
		if (have && sk_domain_normalize(h->name, h->name_len, 0, norm, &wild, &why) == 0)
			memcpy(sni, norm, strlen(norm) + 1);
		return SK_HELLO_ECH;
	}
	if (h->host_names == 0)
		return SK_HELLO_NO_SNI;
	if (!have)
		return SK_HELLO_BAD_NAME;
	if (sk_addr_parse(h->name, &ip) == 0 || all_numeric(h->name, h->name_len)) {
		/* Only digits, dots, hex and colons got here: safe to echo into the audit line. */
		if (h->name_len <= SK_DOMAIN_MAX)
			memcpy(sni, h->name, h->name_len + 1);
		return SK_HELLO_SNI_IP;
	}
	if (sk_domain_normalize(h->name, h->name_len, 0, norm, &wild, &why) != 0)
		return SK_HELLO_BAD_NAME;
	memcpy(sni, norm, strlen(norm) + 1);
	return SK_HELLO_OK;
}

bool sk_tls_content_type(uint8_t b)
{
	return b >= TLS_CT_CHANGE_CIPHER_SPEC && b <= TLS_CT_APPLICATION_DATA;
}

static enum sk_hello_result parse_at(const uint8_t *buf, size_t len, size_t cap, char *sni, size_t *used,
				     struct sk_hello_alpn *alpn)
{
	struct hello h;
	enum sk_hello_result r;

	sni[0] = '\0';
	*used = 0;
	if (len == 0)
		return cap == 0 ? SK_HELLO_TOO_BIG : SK_HELLO_NEED_MORE;
	/* An SSLv2-compatible hello starts with 0x80: not TLS in the sense the proxy can inspect. Any other
	 * TLS content type first (an alert, change_cipher_spec or application data record before the hello,
	 * which some servers skip) is TLS that is not a hello: malformed, never "not TLS". */
	if (!sk_tls_content_type(buf[0]))
		return SK_HELLO_NOT_TLS;
	if (buf[0] != TLS_CT_HANDSHAKE)
		return SK_HELLO_MALFORMED;
	char name[NAME_BUF];
	memset(&h, 0, sizeof(h));
	h.name = name;
	if (alpn) {
		alpn->len = 0;
		alpn->too_long = false;
		h.alpn = alpn->list;
		h.alpn_cap = sizeof(alpn->list);
	}
	h.s.buf = buf;
	h.s.len = len;
	r = parse_hello(&h, cap);
	if (r == SK_HELLO_NEED_MORE && len >= cap)
		return SK_HELLO_TOO_BIG;
	if (r != SK_HELLO_OK)
		return r;
	*used = h.s.pos;   /* the hello ends its record (parse_hello checked) */
	if (alpn) {
		alpn->too_long = h.alpn_len == SIZE_MAX;
		alpn->len = alpn->too_long ? 0 : h.alpn_len;
	}
	return judge(&h, sni);
}

enum sk_hello_result sk_tls_hello_parse(const uint8_t *buf, size_t len, size_t cap, char *sni)
{
	size_t used;
	return parse_at(buf, len, cap, sni, &used, NULL);
}

enum sk_hello_result sk_tls_hello_parse_alpn(const uint8_t *buf, size_t len, size_t cap, char *sni,
					     struct sk_hello_alpn *alpn)
{
	size_t used;
	return parse_at(buf, len, cap, sni, &used, alpn);
}

/* The record header at buf, judged byte by byte as for the first hello: a TLS content type, major version
 * 3, minor 0..4, a length 1..TLS_REC_MAX. */
static enum sk_tls_next record_header(const uint8_t *buf, size_t len, size_t *rec_len)
{
	if (len >= 1 && !sk_tls_content_type(buf[0]))
		return SK_TLS_NEXT_BAD;
	if (len >= 2 && buf[1] != 3)
		return SK_TLS_NEXT_BAD;
	if (len >= 3 && buf[2] > 4)
		return SK_TLS_NEXT_BAD;
	if (len >= 4 && ((size_t)buf[3] << 8) > TLS_REC_MAX)
		return SK_TLS_NEXT_BAD;
	if (len < TLS_REC_HDR)
		return SK_TLS_NEXT_MORE;
	*rec_len = (size_t)buf[3] << 8 | buf[4];
	if (*rec_len == 0 || *rec_len > TLS_REC_MAX)
		return SK_TLS_NEXT_BAD;
	return SK_TLS_NEXT_PASS;
}

enum sk_tls_next sk_tls_client_record(const uint8_t *buf, size_t len, size_t cap, size_t *used,
				      enum sk_hello_result *hello, char *sni)
{
	size_t n = 0;
	enum sk_tls_next k = record_header(buf, len, &n);

	*used = 0;
	sni[0] = '\0';
	if (k != SK_TLS_NEXT_PASS)
		return k;
	switch (buf[0]) {
	case TLS_CT_HANDSHAKE:
		/* Before the server's ServerHello the only handshake message a client sends is a ClientHello:
		 * anything else in a handshake record is judged (and refused) as a hello that does not parse. */
		*hello = parse_at(buf, len, cap, sni, used, NULL);
		if (*hello == SK_HELLO_NEED_MORE)
			return SK_TLS_NEXT_MORE;
		return SK_TLS_NEXT_HELLO;
	case TLS_CT_CHANGE_CIPHER_SPEC:
		/* RFC 8446 §5: exactly one byte, 0x01 (middlebox compatibility mode, before a second hello). */
		if (n != 1 || (len > TLS_REC_HDR && buf[TLS_REC_HDR] != 1))
			return SK_TLS_NEXT_BAD;
		if (len <= TLS_REC_HDR)
			return SK_TLS_NEXT_MORE;
		break;
	case TLS_CT_ALERT:
		if (n != 2)
			return SK_TLS_NEXT_BAD;
		break;
	default:
		break;   /* application_data: 0-RTT early data, encrypted, carries no hello in clear */
	}
	*used = TLS_REC_HDR + n;
	return SK_TLS_NEXT_PASS;
}

/* SHA-256("HelloRetryRequest"): the random of a ServerHello that is a HelloRetryRequest (RFC 8446 §4.1.3). */
static const uint8_t hrr_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
};

enum sk_server_first sk_tls_server_first(const uint8_t *buf, size_t len)
{
	size_t pos = 0;

	/* Middlebox-compatibility change_cipher_spec records may come first (after an HRR, before the real
	 * ServerHello of the second hello): step over complete ones. */
	while (len - pos >= TLS_REC_HDR + 1 && buf[pos] == TLS_CT_CHANGE_CIPHER_SPEC && buf[pos + 1] == 3 &&
	       buf[pos + 3] == 0 && buf[pos + 4] == 1 && buf[pos + 5] == 1)
		pos += TLS_REC_HDR + 1;
	if (pos == len)
		return SK_SERVER_FIRST_MORE;
	if (buf[pos] != TLS_CT_HANDSHAKE)
		return SK_SERVER_FIRST_OTHER;

	struct hs_stream s = { .buf = buf + pos, .len = len - pos };
	uint8_t b[4 + 2 + 32];   /* msg_type, length, legacy_version, random */
	/* The header first: another message, or a ServerHello too short to hold a random, is decided
	 * without waiting for bytes that may never come. */
	if (!hs_read(&s, b, 4))
		return s.fail == SK_HELLO_NEED_MORE ? SK_SERVER_FIRST_MORE : SK_SERVER_FIRST_OTHER;
	size_t msg_len = (size_t)b[1] << 16 | (size_t)b[2] << 8 | b[3];
	/* legacy_version, random, legacy_session_id's length, cipher_suite, legacy_compression_method */
	if (b[0] != TLS_HS_SERVER_HELLO || msg_len < 2 + 32 + 1 + 2 + 1)
		return SK_SERVER_FIRST_OTHER;
	if (!hs_read(&s, b + 4, sizeof(b) - 4))
		return s.fail == SK_HELLO_NEED_MORE ? SK_SERVER_FIRST_MORE : SK_SERVER_FIRST_OTHER;
	return memcmp(b + 6, hrr_random, sizeof(hrr_random)) == 0 ? SK_SERVER_FIRST_HRR
								  : SK_SERVER_FIRST_HELLO;
}

const char *sk_hello_result_name(enum sk_hello_result r)
{
	switch (r) {
	case SK_HELLO_OK: return "ok";
	case SK_HELLO_NEED_MORE: return "need_more";
	case SK_HELLO_NOT_TLS: return "not_tls";
	case SK_HELLO_MALFORMED: return "malformed";
	case SK_HELLO_NO_SNI: return "no_sni";
	case SK_HELLO_MULTI_SNI: return "multi_sni";
	case SK_HELLO_SNI_IP: return "sni_ip";
	case SK_HELLO_BAD_NAME: return "bad_name";
	case SK_HELLO_ECH: return "ech";
	case SK_HELLO_TOO_BIG: return "too_big";
	}
	return "unknown";
}

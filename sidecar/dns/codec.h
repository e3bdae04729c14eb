/* sidecar/dns/codec.h — the DNS message codec (RFC 1035, EDNS0 RFC 6891): parses a message into a
 * validated view, walks its resource records, decompresses names, and builds the few messages the DNS
 * filter sends (local negative answers, the canonical query toward upstream, rewritten answers).
 *
 * Invariants every parser here keeps, whatever the bytes: no read outside buf[0..len); a compression
 * pointer may only point strictly before the label that holds it (which also makes loops impossible);
 * labels are 0..63 bytes (the 0x40/0x80 label types are refused); a name is at most 255 wire bytes once
 * decompressed; section counts must be matched by real records. Pure functions over caller buffers: no
 * I/O, no allocation. */
#ifndef SK_SIDECAR_DNS_CODEC_H
#define SK_SIDECAR_DNS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SK_DNS_HDR_LEN 12
#define SK_DNS_NAME_WIRE_MAX 255   /* RFC 1035 §3.1, including the root label's length byte */
#define SK_DNS_LABEL_MAX 63
#define SK_DNS_NAME_TEXT_MAX 254   /* dotted text without trailing dot, + NUL */
#define SK_DNS_UDP_MIN 512         /* what a client without EDNS accepts */
#define SK_DNS_EDNS_SIZE 1232      /* our advertised/accepted UDP payload (DNS flag day 2020) */
#define SK_DNS_MSG_MAX 65535       /* TCP framing limit */

enum sk_dns_type {
	SK_DNS_T_A = 1, SK_DNS_T_NS = 2, SK_DNS_T_CNAME = 5, SK_DNS_T_SOA = 6, SK_DNS_T_NULL = 10,
	SK_DNS_T_PTR = 12, SK_DNS_T_MX = 15, SK_DNS_T_TXT = 16, SK_DNS_T_AAAA = 28, SK_DNS_T_SRV = 33,
	SK_DNS_T_DNAME = 39, SK_DNS_T_OPT = 41, SK_DNS_T_SVCB = 64, SK_DNS_T_HTTPS = 65,
	SK_DNS_T_IXFR = 251, SK_DNS_T_AXFR = 252, SK_DNS_T_ANY = 255,
};
#define SK_DNS_CLASS_IN 1

enum sk_dns_rcode {
	SK_DNS_RC_NOERROR = 0, SK_DNS_RC_FORMERR = 1, SK_DNS_RC_SERVFAIL = 2, SK_DNS_RC_NXDOMAIN = 3,
	SK_DNS_RC_NOTIMP = 4, SK_DNS_RC_REFUSED = 5,
};

/* Header flag bits (host order of the 16-bit flags word). */
#define SK_DNS_F_QR 0x8000u   /* response */
#define SK_DNS_F_AA 0x0400u   /* authoritative */
#define SK_DNS_F_TC 0x0200u   /* truncated: client should retry over TCP */
#define SK_DNS_F_RD 0x0100u   /* recursion desired (echoed) */
#define SK_DNS_F_RA 0x0080u   /* recursion available */
#define SK_DNS_F_AD 0x0020u   /* authentic data */
#define SK_DNS_F_CD 0x0010u   /* checking disabled (echoed) */
#define SK_DNS_OPCODE(f) (((f) >> 11) & 0xfu)
#define SK_DNS_RCODE(f) ((f) & 0xfu)

/* Why a parse failed; each maps to FORMERR-or-drop in the filter. */
enum sk_dns_perr {
	SK_DNS_OK = 0,
	SK_DNS_E_SHORT,        /* fewer than 12 bytes, or a section runs past the end */
	SK_DNS_E_LABEL_TYPE,   /* 0x40/0x80 label type (extended/reserved) */
	SK_DNS_E_PTR_FORWARD,  /* a compression pointer at or after its own position (incl. loops) */
	SK_DNS_E_NAME_LONG,    /* name over 255 wire bytes */
	SK_DNS_E_RDATA,        /* rdata inconsistent with its type (A not 4 bytes, bad OPT, ...) */
	SK_DNS_E_COUNTS,       /* section counts larger than the records present */
	SK_DNS_E_OPT,          /* OPT outside additional, more than one, or with a non-root owner */
};

struct sk_dns_header {
	uint16_t id, flags, qdcount, ancount, nscount, arcount;
};

/* A decompressed name in wire form (labels with length bytes, ending with the root's 0). */
struct sk_dns_name {
	uint8_t wire[SK_DNS_NAME_WIRE_MAX];
	uint8_t len;            /* bytes used in wire, >= 1 */
};

struct sk_dns_rr {
	struct sk_dns_name name;
	uint16_t type, rclass;
	uint32_t ttl;
	uint16_t rdlen;
	size_t rdata;           /* offset of rdata in the message */
	size_t end;             /* offset just after this record */
};

enum sk_dns_section { SK_DNS_SEC_AN = 0, SK_DNS_SEC_NS, SK_DNS_SEC_AR };

/* A validated view of a message. Borrows buf: it must outlive the view. */
struct sk_dns_msg {
	const uint8_t *buf;
	size_t len;
	struct sk_dns_header hdr;
	bool has_q;             /* qdcount >= 1; q is the first question */
	struct sk_dns_name qname;
	uint16_t qtype, qclass;
	size_t qend;            /* offset after the whole question section */
	size_t sec[3];          /* offset of the first record of answer/authority/additional */
	size_t end;             /* offset after the last record; bytes after it are ignored */
	/* EDNS0 (RFC 6891), from the OPT record if present */
	bool has_opt;
	uint16_t udp_size;      /* requestor's payload size (raw; clamp before use) */
	uint8_t ext_rcode, edns_version;
	bool do_bit;
};

/* Reads a possibly compressed name at *off into out; *off moves past the name as it appears at *off
 * (a pointer counts as 2 bytes). Returns SK_DNS_OK or why it failed. */
enum sk_dns_perr sk_dns_name_read(const uint8_t *buf, size_t len, size_t *off, struct sk_dns_name *out);

/* Parses and validates a whole message: header, every question and every record of the three sections
 * (counts must be honoured; trailing bytes after the last record are ignored). */
enum sk_dns_perr sk_dns_parse(const uint8_t *buf, size_t len, struct sk_dns_msg *m);

/* Iterates records of a parsed (validated) message: *off starts at m->sec[s] and `*left` at that
 * section's count; returns true and fills rr while records remain. */
bool sk_dns_rr_next(const struct sk_dns_msg *m, size_t *off, unsigned *left, struct sk_dns_rr *rr);

/* Dotted, lower-cased text of a name ("" for the root), into out (SK_DNS_NAME_TEXT_MAX bytes).
 * Returns -EINVAL when a label holds a byte that cannot appear in a host name written as text ('.',
 * space, control, non-ASCII, '\\'): such a name means something else on the wire than its text says. */
int sk_dns_name_text(const struct sk_dns_name *n, char *out);
/* Wire form of a dotted text name (no escapes; trailing dot optional). Returns 0 or -EINVAL. */
int sk_dns_name_from_text(const char *text, struct sk_dns_name *out);
/* Case-insensitive (ASCII) equality of two wire names. */
bool sk_dns_name_equal(const struct sk_dns_name *a, const struct sk_dns_name *b);
/* Number of labels, root excluded. */
unsigned sk_dns_name_labels(const struct sk_dns_name *n);

/* Writer over a caller buffer with name compression toward names already written. Once a write does
 * not fit, `overflow` sticks and every later write is a no-op; check it at the end. */
#define SK_DNS_W_COMP_MAX 64
struct sk_dns_writer {
	uint8_t *buf;
	size_t cap, len;
	bool overflow;
	uint16_t comp[SK_DNS_W_COMP_MAX];   /* offsets of label starts usable as compression targets */
	unsigned n_comp;
};
void sk_dns_w_init(struct sk_dns_writer *w, uint8_t *buf, size_t cap);
void sk_dns_w_header(struct sk_dns_writer *w, const struct sk_dns_header *h);
void sk_dns_w_u16(struct sk_dns_writer *w, uint16_t v);
void sk_dns_w_u32(struct sk_dns_writer *w, uint32_t v);
void sk_dns_w_bytes(struct sk_dns_writer *w, const void *p, size_t n);
/* Writes a name, compressed against earlier names when `compress`, else in full (RFC 3597: names
 * in rdata of types the codec does not know must not be compressed). */
void sk_dns_w_name(struct sk_dns_writer *w, const struct sk_dns_name *n, bool compress);
/* OPT pseudo-record advertising udp_size, with the DO bit; no options. */
void sk_dns_w_opt(struct sk_dns_writer *w, uint16_t udp_size, bool do_bit, uint8_t ext_rcode);
/* Rewrites the 16-bit count at header offset `field_off` (4 qd, 6 an, 8 ns, 10 ar). */
void sk_dns_w_set_u16(struct sk_dns_writer *w, size_t at, uint16_t v);

/* Copies one record of m into w, re-encoding the names inside rdata of the types whose rdata names may
 * be compressed (NS, CNAME, PTR, DNAME, SOA, MX, SRV) so the output never points into m's buffer.
 * ttl replaces the record's TTL. Returns false if the rdata was malformed for its type (nothing useful
 * is written then; the writer may be rolled back by the caller through w->len). */
bool sk_dns_w_copy_rr(struct sk_dns_writer *w, const struct sk_dns_msg *m, const struct sk_dns_rr *rr,
		      uint32_t ttl);

/* For an answer-section record of type CNAME/DNAME: its target name. Returns false if malformed. */
bool sk_dns_rr_target(const struct sk_dns_msg *m, const struct sk_dns_rr *rr, struct sk_dns_name *out);

/* Builds a local response to the query m (which must have has_q, or the response carries no question):
 * the query's ID, opcode, RD and CD echoed, QR and RA set, the given rcode (values above 15 go to the OPT
 * extended rcode), the question echoed, and an OPT record when the query had one (EDNS-aware clients
 * expect it). No SOA: we are not authoritative for the zone; NXDOMAIN with RA set is final for glibc and
 * musl stubs (unlike REFUSED, which musl treats as "try the next server"). Returns the length, or -ENOSPC. */
int sk_dns_build_response(const struct sk_dns_msg *m, int rcode, uint8_t *out, size_t cap);
/* A FORMERR answer to a message too broken to parse beyond its header: echoes ID and opcode, no
 * sections. Needs len >= 2 (the ID); returns the length written, or -EINVAL/-ENOSPC. */
int sk_dns_build_formerr(const uint8_t *query, size_t len, uint8_t *out, size_t cap);

/* A fresh query for (name, qtype, qclass) with the given ID and flags (RD/CD), and an OPT record with
 * our payload size when edns. */
int sk_dns_build_query(uint16_t id, uint16_t flags, const struct sk_dns_name *name, uint16_t qtype,
		       uint16_t qclass, bool edns, bool do_bit, uint8_t *out, size_t cap);

const char *sk_dns_perr_name(enum sk_dns_perr e);    /* "ok", "short", "label_type", ... */
const char *sk_dns_type_name(uint16_t t);            /* "A", "AAAA", ..., "other" */

#endif

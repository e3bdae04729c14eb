/* sidecar/core/secret_swap.h — the placeholder swap of `secrets:` (docs/policy.md "Secrets"). Owns:
 * deciding, for one request, where each secret's placeholder may be replaced by its value and doing it
 * (an HTTP/1 head in one call, an HTTP/2 header in one call), finding a placeholder or a value anywhere
 * else (credential_misuse), and masking values a response echoes. Pure: no I/O, no loop; the values come
 * from the store (secret_store.h), the verdicts go to the caller's audit line.
 *
 * What is looked for, always case-insensitively (DNS names arrive lower-cased), for each secret: its
 * placeholder, and its value when known, each raw, percent-decoded, in base64 or base64url at any of the
 * three alignments, and in hex. Values shorter than SK_SWAP_ENCODED_MIN bytes are looked for raw only (an
 * encoding of a few bytes turns up by chance). The swap itself replaces the exact placeholder: raw (Bearer,
 * an API key header) and inside `Basic` credentials (base64 of `user:placeholder` or `placeholder:`,
 * decoded, swapped, encoded again). A placeholder left after that (another spelling) is misuse.
 *
 * Rules, per secret: the swap happens only in a header listed in `in`, on a request toward a listed host
 * and a path matching `paths`. Anything else that carries the placeholder — another header, the request
 * line's path or query, a request to another host or path — is misuse, and so is the value itself
 * anywhere in a request (the agent never holds it). No message or verdict here carries a value.
 *
 * Wiring (the inspected connections; values from sk_sidecar_secrets, the set {policy->secrets,
 * policy->n_secrets, values}, host = the SNI the connection was allowed for):
 *   - HTTP/1 (proxy/inspect_h1): one sk_swap_h1_head per allowed head, sending out instead on SWAPPED;
 *     MISUSE, MALFORMED and NOMEM deny the request (audit reason credential_misuse, the where token and
 *     sk_swap_misuse_text for the log, never the head);
 *   - HTTP/2 (inspect/h2_filter): the judge passes ":path" through sk_swap_h2_header, and the header hook
 *     (sk_h2_header_fn) calls it per field: SWAPPED → return 1 with new_value and *never_index set,
 *     MISUSE/NOMEM → < 0 (the stream refused, a deny line), NONE → 0;
 *   - request bodies: one sk_swap_body per request (HTTP/1) or stream (HTTP/2), each piece through
 *     sk_swap_body_scan (the first SK_SWAP_BODY_SCAN bytes);
 *   - responses from a host a secret lists (sk_swap_host_listed): one sk_swap_mask per connection
 *     (HTTP/1) or stream (HTTP/2), every content byte through sk_swap_mask_run; HTTP/2 header fields,
 *     which cannot be masked in place, checked with sk_swap_mask_finds; the requests toward it asking
 *     for whole, identity-coded bodies (sk_swap_h1_body_form, sk_swap_h2_body_form). */
#ifndef SK_SIDECAR_CORE_SECRET_SWAP_H
#define SK_SIDECAR_CORE_SECRET_SWAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "policy/policy.h"
#include "sidecar/core/secret_store.h"

#define SK_SWAP_ENCODED_MIN 8

/* The secrets of the policy in force and their values (values NULL: none known; only placeholders are
 * looked for). Borrowed. */
struct sk_swap_set {
	const struct sk_secret *secrets;
	size_t n;
	const struct sk_secret_value *values;   /* n entries or NULL */
};

enum sk_swap_result {
	SK_SWAP_NONE = 0,     /* nothing to change and no misuse: send as it is (out untouched) */
	SK_SWAP_SWAPPED,      /* out holds what to send instead */
	SK_SWAP_MISUSE,       /* deny (credential_misuse); m says which secret and where */
	SK_SWAP_MALFORMED,    /* refused: obsolete line folding, a bare CR, no end of head, a header line
	                       * without ':' — a head whose header boundaries a server could read otherwise */
	SK_SWAP_NOMEM,        /* fail closed: deny */
};

enum sk_swap_where {
	SK_SWAP_AT_HEADER = 0,  /* a header the secret is not allowed in (or the value itself, any header) */
	SK_SWAP_AT_PATH,        /* the request line (method, path, version) */
	SK_SWAP_AT_QUERY,       /* the request target's query */
	SK_SWAP_AT_HOST,        /* an allowed header, toward a host the secret does not list */
	SK_SWAP_AT_PATH_RULE,   /* an allowed header and host, on a path none of the secret's paths match */
	SK_SWAP_AT_BODY,        /* the body bytes the caller scanned */
	SK_SWAP_AT_DNS,         /* a DNS query name */
	SK_SWAP_AT_PLAIN_HTTP,  /* a plain-HTTP request (never a swap target) */
};

struct sk_swap_misuse {
	size_t secret;          /* index into the set */
	enum sk_swap_where where;
	bool value;             /* the real value was seen, not the placeholder */
	char header[64];        /* AT_HEADER/HOST/PATH_RULE: the header's name (lower case, cut), else "" */
};

/* One HTTP/1 request head head[0..len) (request line to the empty line, CRLF or LF; nothing after it)
 * going to host (normalised, as the connection was allowed: SNI = Host). SWAPPED: out gets the whole
 * head rewritten (each swapped header's value replaced, every other byte as it was). The caller sends
 * out, or head on NONE, and denies on MISUSE, MALFORMED and NOMEM. */
enum sk_swap_result sk_swap_h1_head(const struct sk_swap_set *s, const char *host, const uint8_t *head,
				    size_t len, struct sk_strbuf *out, struct sk_swap_misuse *m);

/* One HTTP/2 header field (name lower case as HPACK gives it; pseudo-headers too: ":path" is judged as
 * the request target) of a request toward host whose :path is path[0..plen) (as sent, query included).
 * SWAPPED: out gets the new value and *never_index is set: the field must be sent never-indexed so the
 * value stays out of every HPACK table. */
enum sk_swap_result sk_swap_h2_header(const struct sk_swap_set *s, const char *host, const char *path,
				      size_t plen, const char *name, size_t nlen, const char *value, size_t vlen,
				      struct sk_strbuf *out, bool *never_index, struct sk_swap_misuse *m);

/* Whether buf[0..len) carries any secret's placeholder or value in any spelling above (the body prefix
 * the sidecar read, a DNS name as text, a plain-HTTP head). true fills m (where = `where`, header ""). A
 * failed allocation counts as found (fail closed). */
bool sk_swap_scan(const struct sk_swap_set *s, const uint8_t *buf, size_t len, enum sk_swap_where where,
		  struct sk_swap_misuse *m);

/* "placeholder of secret github in header x-foo" etc. into out (never a value): for logs and tests. */
const char *sk_swap_misuse_text(const struct sk_swap_set *s, const struct sk_swap_misuse *m, char *out,
				size_t cap);
/* The where as an audit token: "header", "path", "query", "host", "path_rule", "body", "dns", "plain_http". */
const char *sk_swap_where_name(enum sk_swap_where w);

/* Masking a response stream that echoes values: every known value (raw, as the gateway masks) becomes '*'
 * bytes of its length, across chunk boundaries (each value has its own streaming matcher, chained; what
 * one holds back is at most its value's length minus one). Guarantee: no raw value reaches out, whatever
 * the cut; lengths are kept (Content-Length holds). Encoded echoes are not masked. The mask owns a copy of
 * each value (wiped on free): the store's may rotate mid-stream, and the old value must still be masked. */
struct sk_swap_mask {
	struct sk_secret_redact *r;   /* owned, one per value */
	char **val;                   /* owned copies, r[i].secret */
	size_t n;
};
/* 0 or -ENOMEM (m then empty: the caller must not relay a response it cannot mask). */
int sk_swap_mask_init(struct sk_swap_mask *m, const struct sk_swap_set *s);
/* Adds one value (copied; a value already masked is not added twice). 0 or -ENOMEM (m unchanged). The
 * new matcher starts at the current point of the stream: bytes already released were not searched for it. */
int sk_swap_mask_add(struct sk_swap_mask *m, const char *val, size_t len);
/* Appends the bytes released for in[0..len) to out; final releases what is held. 0 or -ENOMEM. */
int sk_swap_mask_run(struct sk_swap_mask *m, const uint8_t *in, size_t len, bool final, struct sk_strbuf *out);
/* Whether p[0..n), taken on its own (the stream's state untouched), holds a value the mask would mask: a
 * field that cannot be masked in place (an HTTP/2 header, HPACK-coded) is refused instead. -ENOMEM counts
 * as found. */
bool sk_swap_mask_finds(const struct sk_swap_mask *m, const uint8_t *p, size_t n);
/* Bytes the matchers hold back now (released by a later run or the final one). */
size_t sk_swap_mask_held(const struct sk_swap_mask *m);
void sk_swap_mask_free(struct sk_swap_mask *m);

/* Whether a secret lists host (normalised, as the connection was allowed): the server that may receive
 * its value, so the one whose responses must be masked. */
bool sk_swap_host_listed(const struct sk_swap_set *s, const char *host);

/* A request head toward such a host must ask for the response in the one form the mask searches: whole
 * and identity-coded (the gateway's rule, gateway/http.h). head[0..len) (as for sk_swap_h1_head) with
 * Accept-Encoding's value replaced by "identity" and Range, If-Range, A-IM, Want-Digest,
 * Want-Content-Digest and Want-Repr-Digest lines removed: SWAPPED with out the new head, or NONE (nothing
 * to change; out untouched), MALFORMED (no line end), NOMEM. */
enum sk_swap_result sk_swap_h1_body_form(const uint8_t *head, size_t len, struct sk_strbuf *out);
/* The same for one HTTP/2 field (name lower case): 0 keep, 1 replace the value with "identity"
 * (accept-encoding), 2 drop the field. */
int sk_swap_h2_body_form(const char *name, size_t nlen);

/* The misuse scan of a request body, streamed: the first SK_SWAP_BODY_SCAN bytes of each body, piece by
 * piece, with the tail of what came before (as long as the longest spelling looked for, less one byte) so
 * an occurrence cut by a TLS record, a chunk or a DATA frame is found whole. Bytes past the prefix are not
 * looked at. Zeroed is ready; sk_swap_body_reset between bodies. */
#define SK_SWAP_BODY_SCAN 65536
struct sk_swap_body {
	uint64_t seen;       /* body bytes scanned so far */
	uint8_t *tail;       /* owned: the last bytes scanned (wiped: they may hold part of a value) */
	size_t tlen, tcap;
	bool done;           /* found, or past the prefix: nothing more to scan */
};
/* true: a placeholder or value in the body (m filled, where = SK_SWAP_AT_BODY); allocation failure counts
 * as found (fail closed). */
bool sk_swap_body_scan(struct sk_swap_body *b, const struct sk_swap_set *s, const uint8_t *p, size_t n,
		       struct sk_swap_misuse *m);
void sk_swap_body_reset(struct sk_swap_body *b);   /* also frees */

#endif

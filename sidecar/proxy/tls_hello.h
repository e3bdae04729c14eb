/* sidecar/proxy/tls_hello.h — the TLS ClientHello parser: extracts the SNI host name from the first bytes a
 * client sends, across several TLS records and TCP segments, never reading past `len`; and the record
 * walk that keeps judging the client's hellos until the handshake can carry no new one (a second hello
 * after a HelloRetryRequest), with the look at the server's first record that says when that is.
 * Pure functions over a buffer: no I/O, no allocation. */
#ifndef SK_SIDECAR_TLS_HELLO_H
#define SK_SIDECAR_TLS_HELLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/domain.h"

enum sk_hello_result {
	SK_HELLO_OK = 0,       /* sni holds the normalised name */
	SK_HELLO_NEED_MORE,    /* the hello is incomplete: read more (up to the cap) and call again */
	SK_HELLO_NOT_TLS,      /* first byte is not a TLS content type (0x14..0x17) */
	SK_HELLO_MALFORMED,    /* a length or a field is inconsistent, or a record is not a handshake (an
				* alert, change_cipher_spec or application_data record first is TLS, but no hello) */
	SK_HELLO_NO_SNI,       /* a well-formed hello without server_name */
	SK_HELLO_MULTI_SNI,    /* several server_name extensions or several host_name entries */
	SK_HELLO_SNI_IP,       /* the SNI is an IP literal */
	SK_HELLO_BAD_NAME,     /* the SNI is not a valid domain name (sk_domain_normalize refused it) */
	SK_HELLO_ECH,          /* encrypted_client_hello present: the outer SNI is not the real name */
	SK_HELLO_TOO_BIG,      /* the handshake message is longer than the caller's cap */
};

/* Parses buf[0..len). `cap` is the most bytes the caller will ever buffer; a hello that cannot fit
 * returns TOO_BIG rather than NEED_MORE. On OK, sni (SK_DOMAIN_MAX + 1 bytes) holds the name.
 * For the audit line only: on SNI_IP sni holds the literal as sent (digits, dots, hex, colons), on ECH
 * the normalised outer (public) name if it is a valid name; otherwise sni is "".
 * Any result other than NEED_MORE is final: more bytes never change it (bytes after the hello's last
 * record are ignored). Precedence: NOT_TLS, MALFORMED / TOO_BIG, MULTI_SNI, ECH, NO_SNI, SNI_IP,
 * BAD_NAME. */
enum sk_hello_result sk_tls_hello_parse(const uint8_t *buf, size_t len, size_t cap, char *sni);

/* The agent's ALPN offer, for an inspected connection: the server is offered only what the agent offered
 * (the bridge would otherwise agree on a protocol the agent cannot speak). */
struct sk_hello_alpn {
	uint8_t list[512];   /* the protocol_name_list as on the wire, without its 2-byte length */
	size_t len;          /* 0: the hello had no ALPN extension (or too_long) */
	bool too_long;       /* the list did not fit list[] */
};

/* sk_tls_hello_parse, also reading the ALPN extension into *alpn (set only on OK and the other results
 * of a structurally valid hello; a malformed ALPN extension is MALFORMED). */
enum sk_hello_result sk_tls_hello_parse_alpn(const uint8_t *buf, size_t len, size_t cap, char *sni,
					     struct sk_hello_alpn *alpn);

const char *sk_hello_result_name(enum sk_hello_result r);  /* "ok", "need_more", "not_tls", ... */

/* A TLS record's content type: change_cipher_spec, alert, handshake, application_data (0x14..0x17). A
 * first byte in this range is TLS to the classifier, whatever follows (servers skip an alert or a CCS
 * before the hello, and take other legacy record versions). */
bool sk_tls_content_type(uint8_t b);

/* The next client record after a hello was allowed, while the handshake could still carry a new
 * ClientHello (the server has not answered with a ServerHello that is not a HelloRetryRequest). */
enum sk_tls_next {
	SK_TLS_NEXT_MORE = 0,  /* too few bytes to judge the record: read more */
	SK_TLS_NEXT_PASS,      /* change_cipher_spec (exactly 0x01), an alert, or application_data (0-RTT):
				* no hello in clear; *used bytes (header and payload) may pass, even beyond len */
	SK_TLS_NEXT_HELLO,     /* a handshake record: judged as a ClientHello, in *hello with sni as for
				* sk_tls_hello_parse; on SK_HELLO_OK or SK_HELLO_ECH *used is the hello's bytes */
	SK_TLS_NEXT_BAD,       /* not a record a client may send here (no TLS content type, another major
				* version, a bad length, a malformed change_cipher_spec or alert) */
};
enum sk_tls_next sk_tls_client_record(const uint8_t *buf, size_t len, size_t cap, size_t *used,
				      enum sk_hello_result *hello, char *sni);

/* What the server's first record(s) after a ClientHello are (leading change_cipher_spec records skipped). */
enum sk_server_first {
	SK_SERVER_FIRST_MORE = 0, /* a prefix: read more */
	SK_SERVER_FIRST_HELLO,    /* a ServerHello that is not an HRR: no new ClientHello can follow in clear */
	SK_SERVER_FIRST_HRR,      /* a HelloRetryRequest: the client sends a second ClientHello */
	SK_SERVER_FIRST_OTHER,    /* anything else (an alert, not TLS): the handshake is not known to be past
				   * its hellos */
};
enum sk_server_first sk_tls_server_first(const uint8_t *buf, size_t len);

#endif

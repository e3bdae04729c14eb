/* sidecar/tls_hello.h — the TLS ClientHello parser: extracts the SNI host name from the first bytes a
 * client sends, across several TLS records and TCP segments, never reading past `len`.
 * Pure function over a buffer: no I/O, no allocation. */
#ifndef SK_SIDECAR_TLS_HELLO_H
#define SK_SIDECAR_TLS_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "policy/domain.h"

enum sk_hello_result {
	SK_HELLO_OK = 0,       /* sni holds the normalised name */
	SK_HELLO_NEED_MORE,    /* the hello is incomplete: read more (up to the cap) and call again */
	SK_HELLO_NOT_TLS,      /* first byte is not a TLS handshake record (0x16) */
	SK_HELLO_MALFORMED,    /* a length or a field is inconsistent, or a record is not a handshake */
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

const char *sk_hello_result_name(enum sk_hello_result r);  /* "ok", "need_more", "not_tls", ... */

#endif

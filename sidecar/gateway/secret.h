/* sidecar/gateway/secret.h — the gateway's secrets (part of gateway.h's component). Owns: the small-file cache
 * of an api's secret (valueFile) and caller token, re-read when the file is rotated (no restart), wiped
 * before it is freed, never logged; and the streaming redaction matcher that masks the secret wherever an
 * upstream echoes it. No sockets, no loop. */
#ifndef SK_SIDECAR_GW_SECRET_H
#define SK_SIDECAR_GW_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/err.h"

#define SK_GW_SECRET_MAX 16384    /* a key file larger than this is refused (502), not truncated */

/* A small file cached until its identity or mtime changes (stat per request: rotation needs no restart,
 * and a Kubernetes Secret update swaps the ..data symlink, which changes the inode we stat). */
struct sk_gw_file {
	char *path;
	char *val;        /* owned, wiped before free */
	size_t len;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
};
/* Returns the file's value (trimmed of trailing whitespace; borrowed from the cache, valid until the next
 * call or sk_gw_file_clear), re-reading it when the path, inode, size, mtime or ctime changed. A value
 * with a control byte inside is refused: it would split the header line. Errors name the file, never
 * its bytes. */
int sk_gw_file_get(struct sk_gw_file *f, const char *path, const char **val, size_t *len, struct sk_err *err);
void sk_gw_file_clear(struct sk_gw_file *f);   /* wipes and frees the cached value */
void sk_gw_wipe_free(char *p, size_t n);        /* explicit_bzero(p, n), then free; NULL ok */

/* Replaces every occurrence of the secret in a stream with '*' bytes of the same length (so
 * Content-Length still holds), across write boundaries, whatever the secret's length (issue 16 item 7:
 * a fixed 256-byte hold window let longer secrets through). A streaming Knuth-Morris-Pratt matcher: the
 * bytes held back are always the longest secret prefix the stream ends with, so they are never copied
 * (they equal secret[0..n_hold)) and each input byte costs O(1) amortised; overlapping occurrences are
 * masked as one run. */
struct sk_gw_redact {
	const char *secret;        /* borrowed; NULL or "" disables */
	size_t slen;
	uint32_t *fail;            /* owned (sk_gw_redact_init): KMP failure function, slen + 1 entries */
	size_t n_hold;             /* stream bytes held back; they are secret[0..n_hold) */
	size_t masked;             /* how many of them, from the front, belong to an occurrence already */
};
/* Sets r up for secret[0..slen) (borrowed: it must outlive r). 0, or -ENOMEM (r then disabled: the caller
 * must not stream a response it cannot redact). slen 0 disables. */
int sk_gw_redact_init(struct sk_gw_redact *r, const char *secret, size_t slen);
void sk_gw_redact_free(struct sk_gw_redact *r);   /* wipes and frees the table; r disabled; NULL-safe */
/* Processes in[0..len): writes released bytes to out (room for len + r->n_hold needed) and returns how
 * many; at the end call with len 0 and final = true to release what is held (a secret prefix that never
 * completed is released as it was). A disabled r copies in to out. */
size_t sk_gw_redact_run(struct sk_gw_redact *r, const uint8_t *in, size_t len, bool final, uint8_t *out);

#endif

/* sidecar/core/secret_store.h — the one secret store of the sidecar, shared by the API gateway (`apis:`) and
 * the placeholder swap (`secrets:`). Owns: the small-file cache of a secret (an api's valueFile
 * and caller token, a secret's valueFile), re-read when the file is rotated (no restart), wiped before it
 * is freed, never logged; the table of `secrets:` values following the policy in force (sk_secret_store);
 * and the streaming redaction matcher that masks a secret wherever an upstream echoes it. No sockets, no
 * loop. */
#ifndef SK_SIDECAR_CORE_SECRET_STORE_H
#define SK_SIDECAR_CORE_SECRET_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/err.h"

struct sk_policy;

#define SK_SECRET_MAX 16384    /* a key file larger than this is refused (502), not truncated */

/* A small file cached until its identity or mtime changes (stat per request: rotation needs no restart,
 * and a Kubernetes Secret update swaps the ..data symlink, which changes the inode we stat). */
struct sk_secret_file {
	char *path;
	char *val;        /* owned, wiped before free */
	size_t len;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
};
/* Returns the file's value (trimmed of trailing whitespace; borrowed from the cache, valid until the next
 * call or sk_secret_file_clear), re-reading it when the path, inode, size, mtime or ctime changed. A value
 * with a control byte inside is refused: it would split the header line. Errors name the file, never
 * its bytes. */
int sk_secret_file_get(struct sk_secret_file *f, const char *path, const char **val, size_t *len, struct sk_err *err);
void sk_secret_file_clear(struct sk_secret_file *f);   /* wipes and frees the cached value */
void sk_secret_wipe_free(char *p, size_t n);        /* explicit_bzero(p, n), then free; NULL ok */

/* Replaces every occurrence of the secret in a stream with '*' bytes of the same length (so
 * Content-Length still holds), across write boundaries, whatever the secret's length (a fixed
 * 256-byte hold window once let longer secrets through). A streaming Knuth-Morris-Pratt matcher: the
 * bytes held back are always the longest secret prefix the stream ends with, so they are never copied
 * (they equal secret[0..n_hold)) and each input byte costs O(1) amortised; overlapping occurrences are
 * masked as one run. */
struct sk_secret_redact {
	const char *secret;        /* borrowed; NULL or "" disables */
	size_t slen;
	uint32_t *fail;            /* owned (sk_secret_redact_init): KMP failure function, slen + 1 entries */
	size_t n_hold;             /* stream bytes held back; they are secret[0..n_hold) */
	size_t masked;             /* how many of them, from the front, belong to an occurrence already */
};
/* Sets r up for secret[0..slen) (borrowed: it must outlive r). 0, or -ENOMEM (r then disabled: the caller
 * must not stream a response it cannot redact). slen 0 disables. */
int sk_secret_redact_init(struct sk_secret_redact *r, const char *secret, size_t slen);
void sk_secret_redact_free(struct sk_secret_redact *r);   /* wipes and frees the table; r disabled; NULL-safe */
/* Processes in[0..len): writes released bytes to out (room for len + r->n_hold needed) and returns how
 * many; at the end call with len 0 and final = true to release what is held (a secret prefix that never
 * completed is released as it was). A disabled r copies in to out. */
size_t sk_secret_redact_run(struct sk_secret_redact *r, const uint8_t *in, size_t len, bool final, uint8_t *out);

/* The values of a policy's `secrets:`, by index: files[i] caches p->secrets[i].valueFile. Zeroed is empty.
 * Owned by whoever keeps the policy (struct sk_sidecar); one loop thread, no locking. */
struct sk_secret_store {
	struct sk_secret_file *files;
	size_t n;
};
/* One secret's value as the swap sees it: borrowed from the store (valid until its next sync or free);
 * val NULL when the file could not be read (the placeholder is then never swapped, and still looked for). */
struct sk_secret_value {
	const char *val;
	size_t len;
};
/* Brings the store to p (n_secrets entries, a rotated file re-read, a dropped one wiped) and fills
 * vals[0..p->n_secrets). Every readable value is filled even when one is not; then returns the first
 * failure's -errno with err naming that file (never its bytes). 0 when all were read. */
int sk_secret_store_sync(struct sk_secret_store *st, const struct sk_policy *p, struct sk_secret_value *vals,
			 struct sk_err *err);
void sk_secret_store_free(struct sk_secret_store *st);   /* wipes every value; st empty again */

#endif

/* sidecar/core/secret_store.c — secret files, the secrets table and the redaction matcher; see secret_store.h. */
#include "sidecar/core/secret_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/policy.h"

int sk_secret_redact_init(struct sk_secret_redact *r, const char *secret, size_t slen)
{
	memset(r, 0, sizeof(*r));
	if (!secret || slen == 0)
		return 0;
	if (slen >= UINT32_MAX || !(r->fail = malloc((slen + 1) * sizeof(*r->fail))))
		return -ENOMEM;
	const uint8_t *s = (const uint8_t *)secret;
	r->fail[0] = r->fail[1] = 0;
	for (size_t i = 1; i < slen; i++) {
		uint32_t k = r->fail[i];
		while (k > 0 && s[k] != s[i])
			k = r->fail[k];
		if (s[k] == s[i])
			k++;
		r->fail[i + 1] = k;
	}
	r->secret = secret;
	r->slen = slen;
	return 0;
}

void sk_secret_redact_free(struct sk_secret_redact *r)
{
	if (!r)
		return;
	if (r->fail) {
		/* The table tells how the secret overlaps itself: wiped like the secret. */
		explicit_bzero(r->fail, (r->slen + 1) * sizeof(*r->fail));
		free(r->fail);
	}
	memset(r, 0, sizeof(*r));
}

/* Releases the first n bytes of the held window secret[0..q) (+ c as byte q): the first m are masked. */
static size_t redact_release(const uint8_t *s, size_t q, size_t m, int c, size_t n, uint8_t *out)
{
	/* m <= q always, so stars <= top; the guard only spells that out for the compiler, which otherwise
	 * warns of a huge memcpy once this is inlined into a smaller unit. */
	size_t stars = m < n ? m : n, top = n < q ? n : q, lit = top > stars ? top - stars : 0;
	memset(out, '*', stars);
	memcpy(out + stars, s + stars, lit);
	if (n > q)
		out[q] = (uint8_t)c;
	return n;
}

size_t sk_secret_redact_run(struct sk_secret_redact *r, const uint8_t *in, size_t len, bool final, uint8_t *out)
{
	const uint8_t *s = (const uint8_t *)r->secret;
	size_t sl = r->slen, o = 0;
	if (!s || sl == 0 || !r->fail) {
		if (len)
			memcpy(out, in, len);
		return len;
	}
	size_t q = r->n_hold, m = r->masked;
	for (size_t i = 0; i < len; i++) {
		if (q == 0) {
			/* Nothing held: everything up to the next byte that could start the secret goes as is. */
			const uint8_t *p = memchr(in + i, s[0], len - i);
			size_t n = p ? (size_t)(p - (in + i)) : len - i;
			memcpy(out + o, in + i, n);
			o += n;
			i += n;
			if (!p)
				break;
		}
		uint8_t c = in[i];
		size_t nq = q;
		while (nq > 0 && s[nq] != c)
			nq = r->fail[nq];
		if (s[nq] == c)
			nq++;
		/* The window secret[0..q) + c shrinks to its last nq bytes: the front ones leave. */
		size_t rel = q + 1 - nq;
		o += redact_release(s, q, m, c, rel, out + o);
		m = m > rel ? m - rel : 0;
		q = nq;
		if (q == sl) {
			/* An occurrence: all of it is masked; the part that may start the next one stays held. */
			size_t keep = r->fail[sl];
			memset(out + o, '*', sl - keep);
			o += sl - keep;
			q = m = keep;
		}
	}
	if (final) {
		o += redact_release(s, q, m, 0, q, out + o);
		q = m = 0;
	}
	r->n_hold = q;
	r->masked = m;
	return o;
}

void sk_secret_wipe_free(char *p, size_t n)
{
	if (p) {
		explicit_bzero(p, n);
		free(p);
	}
}

void sk_secret_file_clear(struct sk_secret_file *f)
{
	sk_secret_wipe_free(f->val, f->len);
	f->val = NULL;
	f->len = 0;
	free(f->path);
	f->path = NULL;
}

/* Returns the file's value (trimmed of trailing whitespace; borrowed from the cache), re-reading it when
 * the path, inode, size, mtime or ctime changed. A value with a control byte inside is refused: it would
 * split the header line. */
int sk_secret_file_get(struct sk_secret_file *f, const char *path, const char **val, size_t *len, struct sk_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return sk_err_sys(err, errno, "stat %s", path);
	if (f->path && f->val && !strcmp(f->path, path) && f->dev == st.st_dev && f->ino == st.st_ino &&
	    f->size == st.st_size && f->mtim.tv_sec == st.st_mtim.tv_sec && f->mtim.tv_nsec == st.st_mtim.tv_nsec &&
	    f->ctim.tv_sec == st.st_ctim.tv_sec && f->ctim.tv_nsec == st.st_ctim.tv_nsec) {
		*val = f->val;
		*len = f->len;
		return 0;
	}
	sk_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sk_err_sys(err, errno, "open %s", path);
	if (fstat(fd, &st) < 0)
		return sk_err_sys(err, errno, "stat %s", path);
	if (!S_ISREG(st.st_mode) || st.st_size > SK_SECRET_MAX)
		return sk_err_set(err, EINVAL, "%s: not a regular file of at most %d bytes", path, SK_SECRET_MAX);
	char *v = malloc((size_t)st.st_size + 1);
	if (!v)
		return sk_err_set(err, ENOMEM, "read %s", path);
	size_t n = 0;
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, v + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	while (n > 0 && (v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	v[n] = 0;
	bool ok = n > 0;
	for (size_t i = 0; i < n && ok; i++)
		ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
	if (!ok) {
		sk_secret_wipe_free(v, (size_t)st.st_size + 1);
		/* The message names the file, never its bytes. */
		return sk_err_set(err, EINVAL, "%s: empty or contains control bytes", path);
	}
	sk_secret_file_clear(f);
	f->path = strdup(path);
	if (!f->path) {
		sk_secret_wipe_free(v, n + 1);
		return sk_err_set(err, ENOMEM, "read %s", path);
	}
	f->val = v;
	f->len = n;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtim = st.st_mtim;
	f->ctim = st.st_ctim;
	*val = v;
	*len = n;
	return 0;
}

int sk_secret_store_sync(struct sk_secret_store *st, const struct sk_policy *p, struct sk_secret_value *vals,
			 struct sk_err *err)
{
	size_t n = p->n_secrets;
	for (size_t i = n; i < st->n; i++)
		sk_secret_file_clear(&st->files[i]);
	if (n > st->n) {
		struct sk_secret_file *f = realloc(st->files, n * sizeof(*f));
		if (!f) {
			for (size_t i = 0; i < n; i++)
				vals[i] = (struct sk_secret_value){ NULL, 0 };
			return sk_err_set(err, ENOMEM, "secrets: grow the store to %zu", n);
		}
		memset(f + st->n, 0, (n - st->n) * sizeof(*f));
		st->files = f;
	}
	st->n = n;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		struct sk_err e = { 0 };
		vals[i] = (struct sk_secret_value){ NULL, 0 };
		const char *path = p->secrets[i].value_file;
		int r = path ? sk_secret_file_get(&st->files[i], path, &vals[i].val, &vals[i].len, &e)
			     : sk_err_set(&e, EINVAL, "secret %s: no valueFile", p->secrets[i].name ? p->secrets[i].name : "?");
		if (r < 0) {
			vals[i] = (struct sk_secret_value){ NULL, 0 };
			if (!first) {
				first = r;
				(void)sk_err_set(err, -r, "secret %s: %s", p->secrets[i].name ? p->secrets[i].name : "?", e.msg);
			}
		}
	}
	return first;
}

void sk_secret_store_free(struct sk_secret_store *st)
{
	for (size_t i = 0; i < st->n; i++)
		sk_secret_file_clear(&st->files[i]);
	free(st->files);
	st->files = NULL;
	st->n = 0;
}

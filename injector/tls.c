/* injector/tls.c — see tls.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/err.h"
#include "injector/tls.h"

struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct sk_tls {
	pthread_mutex_t lock;      /* guards ctx, loaded and tried */
	SSL_CTX *ctx;
	char *cert_path, *key_path;
	struct file_id loaded[2];  /* what ctx was built from: cert, key */
	struct file_id tried[2];   /* the last change that failed to load (reported once) */
};

static int file_stat(const char *path, struct file_id *id)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return errno ? -errno : -EIO;
	*id = (struct file_id){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
	return 0;
}

static bool same(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* OpenSSL's first queued error as text (the queue is per thread and emptied here). */
static const char *ossl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();
	if (!e)
		(void)snprintf(buf, len, "unknown error");
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	return buf;
}

static SSL_CTX *build(const char *cert, const char *key, struct sk_err *err)
{
	char why[256];
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		sk_err_set(err, ENOMEM, "TLS context: %s", ossl_reason(why, sizeof(why)));
		return NULL;
	}
	/* TLS 1.2 is the floor Kubernetes' API server client accepts by default; nothing older is offered */
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
	if (SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) {
		sk_err_set(err, EINVAL, "TLS ciphers: %s", ossl_reason(why, sizeof(why)));
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		sk_err_set(err, EINVAL, "certificate '%s': %s", cert, ossl_reason(why, sizeof(why)));
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		sk_err_set(err, EINVAL, "key '%s': %s", key, ossl_reason(why, sizeof(why)));
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		sk_err_set(err, EINVAL, "key '%s' does not match certificate '%s'", key, cert);
		ERR_clear_error();
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int sk_tls_open(const char *cert_path, const char *key_path, struct sk_tls **out, struct sk_err *err)
{
	struct sk_tls *t = calloc(1, sizeof(*t));
	int r;
	if (!t)
		return sk_err_set(err, ENOMEM, "TLS: out of memory");
	pthread_mutex_init(&t->lock, NULL);
	t->cert_path = strdup(cert_path);
	t->key_path = strdup(key_path);
	if (!t->cert_path || !t->key_path) {
		r = sk_err_set(err, ENOMEM, "TLS: out of memory");
		goto fail;
	}
	if ((r = file_stat(cert_path, &t->loaded[0])) < 0) {
		sk_err_sys(err, -r, "certificate '%s'", cert_path);
		goto fail;
	}
	if ((r = file_stat(key_path, &t->loaded[1])) < 0) {
		sk_err_sys(err, -r, "key '%s'", key_path);
		goto fail;
	}
	if (!(t->ctx = build(cert_path, key_path, err))) {
		r = -EINVAL;
		goto fail;
	}
	*out = t;
	return 0;
fail:
	sk_tls_free(t);
	return r;
}

void sk_tls_free(struct sk_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t->cert_path);
	free(t->key_path);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

SSL_CTX *sk_tls_ctx(struct sk_tls *t)
{
	pthread_mutex_lock(&t->lock);
	SSL_CTX *ctx = t->ctx;
	SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&t->lock);
	return ctx;
}

int sk_tls_maybe_reload(struct sk_tls *t, struct sk_err *err)
{
	struct file_id now[2] = { 0 };
	/* a file missing for a moment (a rename in progress) is a change not yet complete: keep serving */
	if (file_stat(t->cert_path, &now[0]) < 0 || file_stat(t->key_path, &now[1]) < 0)
		return 0;
	pthread_mutex_lock(&t->lock);
	bool unchanged = same(&now[0], &t->loaded[0]) && same(&now[1], &t->loaded[1]);
	bool reported = same(&now[0], &t->tried[0]) && same(&now[1], &t->tried[1]);
	pthread_mutex_unlock(&t->lock);
	if (unchanged || reported)
		return 0;
	/* built outside the lock: handshakes keep taking the old context meanwhile */
	SSL_CTX *ctx = build(t->cert_path, t->key_path, err);
	pthread_mutex_lock(&t->lock);
	if (ctx) {
		SSL_CTX *old = t->ctx;
		t->ctx = ctx;
		memcpy(t->loaded, now, sizeof(now));
		pthread_mutex_unlock(&t->lock);
		SSL_CTX_free(old);
		return 1;
	}
	memcpy(t->tried, now, sizeof(now));
	pthread_mutex_unlock(&t->lock);
	return -EINVAL;
}

bool sk_tls_valid_now(struct sk_tls *t)
{
	SSL_CTX *ctx = sk_tls_ctx(t);
	X509 *x = SSL_CTX_get0_certificate(ctx);
	bool ok = x && X509_cmp_current_time(X509_get0_notAfter(x)) > 0 &&
		  X509_cmp_current_time(X509_get0_notBefore(x)) < 0;
	SSL_CTX_free(ctx);
	return ok;
}

void sk_tls_describe(struct sk_tls *t, char *buf, unsigned len)
{
	SSL_CTX *ctx = sk_tls_ctx(t);
	X509 *x = SSL_CTX_get0_certificate(ctx);
	char subj[256] = "?", until[64] = "?";
	if (x) {
		X509_NAME_oneline(X509_get_subject_name(x), subj, sizeof(subj));
		BIO *b = BIO_new(BIO_s_mem());
		if (b && ASN1_TIME_print(b, X509_get0_notAfter(x)) == 1) {
			int n = BIO_read(b, until, sizeof(until) - 1);
			until[n > 0 ? n : 0] = '\0';
		}
		BIO_free(b);
	}
	(void)snprintf(buf, len, "%s, until %s", subj, until);
	SSL_CTX_free(ctx);
}

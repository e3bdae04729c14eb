/* sidecar/inspect/bridge.c — see bridge.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/strbuf.h"
#include "sidecar/inspect/bridge.h"
#include "sidecar/inspect/filter.h"
#include "sidecar/inspect/leaf.h"
#include "sidecar/inspect/ossl.h"
#include "sidecar/inspect/upstream.h"

struct sk_bridge_env {
	SSL_CTX *ctx;                 /* the agent-facing side */
	struct sk_leaf_cache *leaves;
	struct sk_upstream *upstream;
	BIO_METHOD *prefix_bio;       /* the agent's side: bytes the caller already read, then the fd */
};

/* Connection states; each moves only forward. */
enum bridge_state {
	B_UPSTREAM_HS,   /* → B_CLIENT_HS when SSL_connect completes, → B_FAILED (alert to the agent) */
	B_CLIENT_HS,     /* → B_RELAY when SSL_accept completes, → B_FAILED */
	B_RELAY,         /* → B_DONE when both directions are closed, → B_FAILED */
	B_DONE,
	B_FAILED,
};

/* One direction of the relay: read from `from`, write to `to`, one buffer between. */
struct dir {
	SSL *from, *to;
	int to_fd;
	unsigned char buf[SK_BRIDGE_BUF];
	size_t off, len;          /* buf[off, len) still to write (a chunk the filter passed) */
	struct sk_strbuf q;       /* then q[q_off, q.len): what filters emitted toward `to` */
	size_t q_off;
	bool eof;                 /* from said it is done */
	bool eof_clean;           /* ... with a close_notify */
	bool closed;              /* the end was passed on to `to` */
	unsigned reads;           /* in this step, up to SK_BRIDGE_STEP_READS */
	uint64_t bytes;
};

struct sk_bridge {
	struct sk_bridge_env *env;
	enum bridge_state state;
	int client_fd, upstream_fd;
	SSL *client, *up;
	char sni[256];
	char alpn[256];                /* the protocol the server chose ("" none) */
	const char *reason;
	int fail_code;
	char fail_msg[SK_ERR_MSG_MAX];
	struct sk_pt_filter *filter;
	struct sk_pt_filter *(*select_filter)(void *ctx, const char *alpn);
	void *ctx;
	struct sk_pt_out out;          /* the filter's scratch, emptied after each call */
	bool closing;                  /* a filter's close_after or FAIL: no more reads, flush, then close */
	const char *fail_reason;       /* a FAIL: the reason the bridge fails with once flushed */
	unsigned char *prefix;         /* owned: the agent's bytes the caller read, served first */
	size_t prefix_len, prefix_off;
	struct dir c2u, u2c;
	uint32_t want_client, want_up;  /* collected during one step */
};

/* ---- the agent-facing context ---- */

/* The agent's hello must name the host the caller judged (the peeked hello and the read one are the same
 * bytes, so a difference means a bug or a race, and either is refused). No SNI at all is an agent talking
 * to an address; then `sni` is that address. */
static int on_servername(SSL *ssl, int *alert, void *arg)
{
	(void)arg;
	struct sk_bridge *b = SSL_get_app_data(ssl);
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	if (b && name && strcasecmp(name, b->sni) != 0) {
		b->reason = "client_sni_mismatch";
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

/* The agent gets exactly the protocol the server chose, or none if the server chose none. */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		   unsigned inlen, void *arg)
{
	(void)arg;
	struct sk_bridge *b = SSL_get_app_data(ssl);
	size_t want = b ? strlen(b->alpn) : 0;
	if (!want)
		return SSL_TLSEXT_ERR_NOACK;
	for (unsigned i = 0; i < inlen;) {
		unsigned n = in[i];
		if (i + 1 + n > inlen)
			break;
		if (n == want && memcmp(in + i + 1, b->alpn, n) == 0) {
			*out = in + i + 1;
			*outlen = (unsigned char)n;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + n;
	}
	b->reason = "alpn_mismatch";
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* ---- the agent's fd as a BIO: what the caller's peek already read, then the socket ---- */

static int prefix_read(BIO *bio, char *out, int n)
{
	struct sk_bridge *b = BIO_get_data(bio);
	BIO_clear_retry_flags(bio);
	if (n <= 0)
		return 0;
	if (b->prefix_off < b->prefix_len) {
		size_t k = b->prefix_len - b->prefix_off < (size_t)n ? b->prefix_len - b->prefix_off : (size_t)n;
		memcpy(out, b->prefix + b->prefix_off, k);
		b->prefix_off += k;
		return (int)k;
	}
	ssize_t r = recv(b->client_fd, out, (size_t)n, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_read(bio);
	return (int)r;
}

static int prefix_write(BIO *bio, const char *in, int n)
{
	struct sk_bridge *b = BIO_get_data(bio);
	BIO_clear_retry_flags(bio);
	ssize_t r = send(b->client_fd, in, (size_t)n, MSG_NOSIGNAL);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_write(bio);
	return (int)r;
}

static long prefix_ctrl(BIO *bio, int cmd, long num, void *ptr)
{
	(void)bio;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int prefix_create(BIO *bio)
{
	BIO_set_init(bio, 1);
	return 1;
}

int sk_bridge_env_new(struct sk_leaf_cache *leaves, struct sk_upstream *upstream, struct sk_bridge_env **out,
		      struct sk_err *err)
{
	char why[256];
	struct sk_bridge_env *e = calloc(1, sizeof(*e));
	if (!e)
		return sk_err_set(err, ENOMEM, "TLS bridge: out of memory");
	e->leaves = leaves;
	e->upstream = upstream;
	e->prefix_bio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "stockade agent fd");
	if (!e->prefix_bio || BIO_meth_set_read(e->prefix_bio, prefix_read) != 1 ||
	    BIO_meth_set_write(e->prefix_bio, prefix_write) != 1 || BIO_meth_set_ctrl(e->prefix_bio, prefix_ctrl) != 1 ||
	    BIO_meth_set_create(e->prefix_bio, prefix_create) != 1 || !(e->ctx = SSL_CTX_new(TLS_server_method()))) {
		BIO_meth_free(e->prefix_bio);
		free(e);
		return sk_err_set(err, ENOMEM, "TLS bridge context: %s", sk_ossl_reason(why, sizeof(why)));
	}
	SSL_CTX_set_min_proto_version(e->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(e->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(e->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_tlsext_servername_callback(e->ctx, on_servername);
	SSL_CTX_set_alpn_select_cb(e->ctx, on_alpn, NULL);
	/* resumed sessions are the agent's own, to this sidecar: nothing they skip is checked per connection */
	(void)SSL_CTX_set_session_id_context(e->ctx, (const unsigned char *)"stockade-inspect", 16);
	*out = e;
	return 0;
}

void sk_bridge_env_free(struct sk_bridge_env *env)
{
	if (!env)
		return;
	SSL_CTX_free(env->ctx);
	BIO_meth_free(env->prefix_bio);
	free(env);
}

/* ---- one bridge ---- */

/* The agent's ALPN offer narrowed to the configured list (in the agent's order): the server must not
 * choose what the agent cannot speak. */
static size_t narrow_alpn(const struct sk_upstream *u, const unsigned char *offer, size_t offer_len,
			  unsigned char *out, size_t cap)
{
	size_t conf_len = 0, n = 0;
	const unsigned char *conf = sk_upstream_alpn(u, &conf_len);
	for (size_t i = 0; i < offer_len;) {
		size_t len = offer[i];
		if (len == 0 || i + 1 + len > offer_len)
			break;
		for (size_t j = 0; j < conf_len; j += 1 + conf[j]) {
			if (conf[j] == len && memcmp(conf + j + 1, offer + i + 1, len) == 0 && n + 1 + len <= cap) {
				memcpy(out + n, offer + i, 1 + len);
				n += 1 + len;
				break;
			}
		}
		i += 1 + len;
	}
	return n;
}

int sk_bridge_new(struct sk_bridge_env *env, const struct sk_bridge_cfg *cfg, int client_fd, int upstream_fd,
		  struct sk_bridge **out, struct sk_err *err)
{
	if (!cfg->sni || !*cfg->sni || strlen(cfg->sni) >= sizeof(((struct sk_bridge *)0)->sni))
		return sk_err_set(err, EINVAL, "TLS bridge: no usable server name");
	struct sk_bridge *b = calloc(1, sizeof(*b));
	if (!b)
		return sk_err_set(err, ENOMEM, "TLS bridge: out of memory");
	b->env = env;
	b->client_fd = client_fd;
	b->upstream_fd = upstream_fd;
	(void)snprintf(b->sni, sizeof(b->sni), "%s", cfg->sni);
	b->filter = cfg->filter;
	b->select_filter = cfg->select_filter;
	b->ctx = cfg->ctx;
	if (cfg->client_prefix_len) {
		if (!(b->prefix = malloc(cfg->client_prefix_len))) {
			free(b);
			return sk_err_set(err, ENOMEM, "TLS bridge: out of memory");
		}
		memcpy(b->prefix, cfg->client_prefix, cfg->client_prefix_len);
		b->prefix_len = cfg->client_prefix_len;
	}
	unsigned char alpn[256];
	size_t alpn_len = 0;
	if (cfg->client_alpn_known && cfg->client_alpn)
		alpn_len = narrow_alpn(env->upstream, cfg->client_alpn, cfg->client_alpn_len, alpn, sizeof(alpn));
	b->up = sk_upstream_ssl(env->upstream, b->sni, upstream_fd, cfg->client_alpn_known ? alpn : NULL, alpn_len,
				err);
	if (!b->up) {
		free(b->prefix);
		free(b);
		return -EINVAL;
	}
	SSL_set_connect_state(b->up);
	b->c2u.to = b->up;
	b->c2u.to_fd = upstream_fd;
	b->u2c.from = b->up;
	b->u2c.to_fd = client_fd;
	*out = b;
	return 0;
}

void sk_bridge_free(struct sk_bridge *b)
{
	if (!b)
		return;
	SSL_free(b->client);
	SSL_free(b->up);
	sk_pt_out_free(&b->out);
	sk_strbuf_free(&b->c2u.q);
	sk_strbuf_free(&b->u2c.q);
	free(b->prefix);
	free(b);
}

const char *sk_bridge_reason(const struct sk_bridge *b)
{
	return b->state == B_FAILED ? b->reason : NULL;
}

const char *sk_bridge_alpn(const struct sk_bridge *b)
{
	return b->alpn;
}

struct sk_bridge_stats sk_bridge_stats(const struct sk_bridge *b)
{
	return (struct sk_bridge_stats){ .to_upstream = b->c2u.bytes, .to_client = b->u2c.bytes };
}

static int fail(struct sk_bridge *b, const char *reason, int code, struct sk_err *err)
{
	b->state = B_FAILED;
	if (!b->reason)
		b->reason = reason;
	b->fail_code = code;
	(void)snprintf(b->fail_msg, sizeof(b->fail_msg), "%s", err ? err->msg : b->reason);
	ERR_clear_error();
	return -code;
}

/* The fd of ssl: where a WANT_READ / WANT_WRITE is waited for. */
static void want(struct sk_bridge *b, SSL *ssl, int ssl_error)
{
	uint32_t ev = ssl_error == SSL_ERROR_WANT_WRITE ? EPOLLOUT : EPOLLIN;
	if (ssl == b->client)
		b->want_client |= ev;
	else
		b->want_up |= ev;
}

static bool is_want(int e)
{
	return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/* An agent whose server failed gets a fatal handshake_failure before its hello is read: what it has sent
 * is drained first, so closing does not turn into a reset that could overtake the alert. */
static void alert_client(struct sk_bridge *b)
{
	static const unsigned char alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, SSL_AD_HANDSHAKE_FAILURE };
	unsigned char sink[4096];
	for (int i = 0; i < 16 && recv(b->client_fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	/* best effort on a fresh socket with an empty send buffer; the caller closes it either way */
	(void)send(b->client_fd, alert, sizeof(alert), MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(b->client_fd, SHUT_WR);
}

static int step_upstream_hs(struct sk_bridge *b, struct sk_err *err)
{
	int r = SSL_connect(b->up);
	if (r != 1) {
		int e = SSL_get_error(b->up, r);
		if (is_want(e)) {
			want(b, b->up, e);
			return 1;
		}
		int code = -sk_upstream_failure(b->up, e, err);
		alert_client(b);
		return fail(b, strncmp(err->msg, "upstream_cert_invalid", 21) == 0 ? "upstream_cert_invalid"
										    : "upstream_tls",
			    code, err);
	}
	const unsigned char *sel = NULL;
	unsigned sel_len = 0;
	SSL_get0_alpn_selected(b->up, &sel, &sel_len);
	if (sel && sel_len)
		(void)snprintf(b->alpn, sizeof(b->alpn), "%.*s", (int)sel_len, (const char *)sel);

	char why[256];
	X509 *leaf = NULL;
	if (sk_leaf_get(b->env->leaves, b->sni, 0, &leaf, err) < 0) {
		alert_client(b);
		return fail(b, "client_tls", EINVAL, err);
	}
	b->client = SSL_new(b->env->ctx);
	BIO *cbio = b->client ? BIO_new(b->env->prefix_bio) : NULL;
	if (cbio) {
		BIO_set_data(cbio, b);
		SSL_set_bio(b->client, cbio, cbio);   /* the SSL owns it from here */
	}
	if (!cbio || SSL_use_certificate(b->client, leaf) != 1 ||
	    SSL_use_PrivateKey(b->client, sk_leaf_key(b->env->leaves)) != 1) {
		X509_free(leaf);
		sk_err_set(err, ENOMEM, "client_tls: setting up '%s': %s", b->sni, sk_ossl_reason(why, sizeof(why)));
		alert_client(b);
		return fail(b, "client_tls", ENOMEM, err);
	}
	X509_free(leaf);   /* the SSL holds its own reference */
	SSL_set_app_data(b->client, b);
	SSL_set_accept_state(b->client);
	b->c2u.from = b->client;
	b->u2c.to = b->client;
	b->state = B_CLIENT_HS;
	return 1;
}

static int step_client_hs(struct sk_bridge *b, struct sk_err *err)
{
	char why[256];
	int r = SSL_accept(b->client);
	if (r == 1) {
		/* an agent that offered no ALPN speaks HTTP/1.1 (or whatever it speaks without): a server that
		 * chose h2 would not understand it */
		const unsigned char *sel = NULL;
		unsigned sel_len = 0;
		SSL_get0_alpn_selected(b->client, &sel, &sel_len);
		if (b->alpn[0] && !sel_len && strcmp(b->alpn, "http/1.1") != 0) {
			sk_err_set(err, EPROTO, "alpn_mismatch: the server chose %s, the agent offered no ALPN",
				   b->alpn);
			return fail(b, "alpn_mismatch", EPROTO, err);
		}
		if (b->select_filter && !(b->filter = b->select_filter(b->ctx, b->alpn))) {
			sk_err_set(err, EPROTO, "alpn_mismatch: no filter reads the protocol '%s'", b->alpn);
			return fail(b, "alpn_mismatch", EPROTO, err);
		}
		b->state = B_RELAY;
		return 1;
	}
	int e = SSL_get_error(b->client, r);
	if (is_want(e)) {
		want(b, b->client, e);
		return 1;
	}
	if (b->reason && strcmp(b->reason, "client_sni_mismatch") == 0)
		sk_err_set(err, EPROTO, "client_sni_mismatch: the hello names '%s', judged for '%s'",
			   SSL_get_servername(b->client, TLSEXT_NAMETYPE_host_name), b->sni);
	else if (b->reason)
		sk_err_set(err, EPROTO, "alpn_mismatch: the agent did not offer %s, which the server chose",
			   b->alpn);
	else if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
		sk_err_set(err, EPROTO, "client_tls: connection closed during the handshake");
	else
		sk_err_set(err, EPROTO, "client_tls: %s", sk_ossl_reason(why, sizeof(why)));
	/* the server's connection is good: end it cleanly so its session stays resumable */
	(void)SSL_shutdown(b->up);
	return fail(b, "client_tls", EPROTO, err);
}

static struct dir *other_dir(struct sk_bridge *b, struct dir *d)
{
	return d == &b->c2u ? &b->u2c : &b->c2u;
}

/* Queues n bytes toward d's `to`, behind what it is already owed. A side that was closed gets nothing
 * (its end already went out). */
static int enqueue(struct dir *d, const char *p, size_t n)
{
	if (!n || d->closed)
		return 0;
	return sk_strbuf_put(&d->q, p, n);
}

/* Acts on the filter's verdict for what d read (n bytes in d->buf; 0 for the end of `from`). */
static int apply_verdict(struct sk_bridge *b, struct dir *d, enum sk_pt_verdict v, size_t n, struct sk_err *err)
{
	struct sk_pt_out *o = &b->out;
	if (v == SK_PT_PASS) {
		d->off = 0;
		d->len = n;
	} else if (v == SK_PT_EMIT && enqueue(d, o->to_peer.p, o->to_peer.len) < 0) {
		sk_err_set(err, ENOMEM, "client_data_refused: out of memory queueing the filter's output");
		return fail(b, "client_data_refused", ENOMEM, err);
	}
	if (enqueue(other_dir(b, d), o->to_sender.p, o->to_sender.len) < 0) {
		sk_err_set(err, ENOMEM, "client_data_refused: out of memory queueing the filter's answer");
		return fail(b, "client_data_refused", ENOMEM, err);
	}
	if (v == SK_PT_FAIL) {
		b->closing = true;
		b->fail_reason = o->reason ? o->reason : "client_data_refused";
	}
	if (o->close_after)
		b->closing = true;
	sk_pt_out_reset(o);
	return 1;
}

/* Shows the filter what d just read (n bytes) or, n == 0 and d->eof, that `from` ended. */
static int filter_chunk(struct sk_bridge *b, struct dir *d, bool from_client, size_t n, struct sk_err *err)
{
	struct sk_pt_filter *f = b->filter;
	if (!f) {
		d->off = 0;
		d->len = n;
		return 1;
	}
	sk_pt_out_reset(&b->out);
	enum sk_pt_verdict v;
	if (n == 0)
		v = f->ops->closed ? f->ops->closed(f, from_client, &b->out) : SK_PT_PASS;
	else if (from_client)
		v = f->ops->from_client(f, d->buf, n, &b->out);
	else
		v = f->ops->from_server(f, d->buf, n, &b->out);
	return apply_verdict(b, d, v, n, err);
}

/* Writes p[*off, len) to d->to. 1: all written; 0: it would block (want set); < 0 failed. */
static int write_out(struct sk_bridge *b, struct dir *d, bool from_client, const unsigned char *p, size_t len,
		     size_t *off, bool *moved, struct sk_err *err)
{
	char why[256];
	while (*off < len) {
		size_t n = 0;
		if (SSL_write_ex(d->to, p + *off, len - *off, &n) != 1) {
			int e = SSL_get_error(d->to, 0);
			if (is_want(e)) {
				want(b, d->to, e);
				return 0;
			}
			sk_err_set(err, EPROTO, "%s: write: %s", from_client ? "upstream_tls" : "client_tls",
				   e == SSL_ERROR_SYSCALL && !ERR_peek_error() ? "connection closed"
									     : sk_ossl_reason(why, sizeof(why)));
			return fail(b, from_client ? "upstream_tls" : "client_tls", EPROTO, err);
		}
		*off += n;
		d->bytes += n;
		*moved = true;
	}
	return 1;
}

static bool dir_flushed(const struct dir *d)
{
	return d->off == d->len && d->q_off == d->q.len;
}

/* Moves one direction as far as it goes; true when anything moved. < 0 via *rc on a failure. */
static bool pump(struct sk_bridge *b, struct dir *d, bool from_client, int *rc, struct sk_err *err)
{
	char why[256];
	bool moved = false;
	for (;;) {
		int w = write_out(b, d, from_client, d->buf, d->len, &d->off, &moved, err);
		if (w <= 0) {
			*rc = w < 0 ? w : *rc;
			return moved;
		}
		d->off = d->len = 0;
		w = write_out(b, d, from_client, (const unsigned char *)d->q.p, d->q.len, &d->q_off, &moved, err);
		if (w <= 0) {
			*rc = w < 0 ? w : *rc;
			return moved;
		}
		d->q_off = 0;
		sk_strbuf_reset(&d->q);
		if (d->eof) {
			if (d->closed)
				return moved;
			if (!d->eof_clean) {
				/* a bare close passed on as a bare close: the other end sees the truncation too */
				(void)shutdown(d->to_fd, SHUT_WR);
				d->closed = true;
				return true;
			}
			int r = SSL_shutdown(d->to);
			if (r < 0 && is_want(SSL_get_error(d->to, r))) {
				want(b, d->to, SSL_get_error(d->to, r));
				return moved;
			}
			ERR_clear_error();
			d->closed = true;
			return true;
		}
		if (b->closing)
			return moved;   /* the filter ended the stream: nothing more is read */
		if (d->reads >= SK_BRIDGE_STEP_READS) {
			/* yield to the loop's other connections; `to` was just writable, so this fires at once */
			want(b, d->to, SSL_ERROR_WANT_WRITE);
			return moved;
		}
		d->reads++;
		size_t n = 0;
		if (SSL_read_ex(d->from, d->buf, sizeof(d->buf), &n) != 1) {
			int e = SSL_get_error(d->from, 0);
			if (is_want(e)) {
				want(b, d->from, e);
				return moved;
			}
			unsigned long reason = ERR_GET_REASON(ERR_peek_error());
			if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !ERR_peek_error()) ||
			    reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
				d->eof = true;
				d->eof_clean = e == SSL_ERROR_ZERO_RETURN;
				ERR_clear_error();
				moved = true;
				/* the filter may owe the other side a last word (a head cut short) */
				if ((*rc = filter_chunk(b, d, from_client, 0, err)) < 0)
					return moved;
				continue;
			}
			sk_err_set(err, EPROTO, "%s: read: %s", from_client ? "client_tls" : "upstream_tls",
				   sk_ossl_reason(why, sizeof(why)));
			*rc = fail(b, from_client ? "client_tls" : "upstream_tls", EPROTO, err);
			return moved;
		}
		moved = true;
		if ((*rc = filter_chunk(b, d, from_client, n, err)) < 0)
			return moved;
	}
}

/* A filter ended the stream (close_after or FAIL) and everything it queued is out: close_notify both ways
 * (best effort on a failure, whose fds the caller closes at once). 1 while a close_notify waits to be
 * written, 0 done, < 0 the filter's failure. */
static int finish_closing(struct sk_bridge *b, struct sk_err *err)
{
	struct dir *ds[2] = { &b->c2u, &b->u2c };
	for (int i = 0; i < 2; i++) {
		struct dir *d = ds[i];
		if (d->closed)
			continue;
		int r = SSL_shutdown(d->to);
		if (r < 0 && is_want(SSL_get_error(d->to, r)) && !b->fail_reason) {
			want(b, d->to, SSL_get_error(d->to, r));
			continue;
		}
		ERR_clear_error();
		d->closed = true;
	}
	if (b->fail_reason) {
		sk_err_set(err, EPERM, "%s: the plaintext filter stopped the connection", b->fail_reason);
		return fail(b, b->fail_reason, EPERM, err);
	}
	if (!b->c2u.closed || !b->u2c.closed)
		return 1;
	b->state = B_DONE;
	return 0;
}

static int step_relay(struct sk_bridge *b, struct sk_err *err)
{
	int rc = 1;
	bool moved;
	b->c2u.reads = b->u2c.reads = 0;
	do {
		b->want_client = b->want_up = 0;
		moved = pump(b, &b->c2u, true, &rc, err);
		if (rc < 0)
			return rc;
		moved = pump(b, &b->u2c, false, &rc, err) || moved;
		if (rc < 0)
			return rc;
	} while (moved);
	if (b->closing && dir_flushed(&b->c2u) && dir_flushed(&b->u2c))
		return finish_closing(b, err);
	if (b->c2u.closed && b->u2c.closed) {
		b->state = B_DONE;
		return 0;
	}
	return 1;
}

int sk_bridge_step(struct sk_bridge *b, int fd, uint32_t events, struct sk_bridge_want *w, struct sk_err *err)
{
	(void)fd;
	(void)events;   /* OpenSSL reads and writes as far as each fd allows: trying everything is exact */
	int rc = 1;
	b->want_client = b->want_up = 0;
	if (b->state == B_UPSTREAM_HS)
		rc = step_upstream_hs(b, err);
	if (rc > 0 && b->state == B_CLIENT_HS)
		rc = step_client_hs(b, err);
	if (rc > 0 && b->state == B_RELAY)
		rc = step_relay(b, err);
	if (b->state == B_DONE)
		rc = 0;
	if (b->state == B_FAILED) {
		if (rc >= 0)   /* a later call: the same failure again */
			rc = sk_err_set(err, b->fail_code, "%s", b->fail_msg);
		b->want_client = b->want_up = 0;
	}
	w->client = b->want_client;
	w->upstream = b->want_up;
	return rc;
}

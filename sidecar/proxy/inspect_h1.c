/* sidecar/proxy/inspect_h1.c — the HTTP/1 filter of an inspected connection (inspect_h1.h). */
#include "sidecar/proxy/inspect_h1.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "common/strbuf.h"
#include "policy/addr.h"
#include "sidecar/proxy/http_track.h"

/* What the agent is owed, in the order of its requests: a server's response, or an answer of ours. */
struct owed {
	bool local;
	bool head_method;    /* a HEAD request: its response has no body whatever it says */
	uint32_t request;    /* its number (the audit line of a refused response) */
	bool close;          /* local: the connection ends after it */
	char *answer;        /* local: owned */
	size_t len;
};

/* Where the server's response stream is (enough framing to know where one response ends). */
enum resp_state {
	RS_HEAD = 0,     /* a status line and fields, up to the blank line (collected in `line`) */
	RS_BODY,         /* `remaining` bytes of a Content-Length body */
	RS_CHUNK_SIZE,   /* a chunk-size line (in `line`) */
	RS_CHUNK_DATA,   /* `remaining` bytes of chunk data */
	RS_CHUNK_CRLF,   /* the line end after chunk data */
	RS_TRAILERS,     /* trailer lines up to the empty one */
	RS_UNTIL_CLOSE,  /* a body delimited by the server's close, or framing we cannot follow: nothing
			  * of ours can go after it any more */
	RS_WS,           /* the connection switched to a websocket: the server's frames */
};

/* A websocket upgrade (RFC 6455 §4): none, its request forwarded and its response awaited, switched. */
enum ws_state { WS_NONE = 0, WS_WAIT, WS_OPEN };

/* The frame framing of one direction of a websocket (RFC 6455 §5.2), followed byte by byte. */
struct ws_dir {
	uint8_t hdr[14];   /* the frame header collected so far */
	uint8_t hlen, need;
	uint64_t left;     /* payload bytes of the current frame still to come */
	bool frag;         /* inside a fragmented message (a continuation frame is owed) */
};

struct h1 {
	struct sk_pt_filter f;   /* first */
	char sni[256];
	bool sni_is_ip;
	struct sk_addr sni_ip;
	char rule_label[64];
	struct sk_h1_hooks hooks;
	struct sk_http_track track;
	struct sk_strbuf pend, pend2;   /* the agent's bytes not yet decided (an unfinished head or line) */
	uint32_t request;
	bool ended;              /* a refusal closes the connection: nothing more of the agent's is read */
	bool unjudged;           /* mode audit after a framing error: everything passes */
	/* the owed queue, a ring */
	struct owed *q;
	size_t q_head, q_len, q_cap;
	/* responses */
	enum resp_state rs;
	struct sk_strbuf line;
	struct sk_strbuf swapped;       /* the head the rewrite hook sent instead (judge_head's 2) */
	uint64_t remaining;
	/* one call's output: while everything so far goes on unchanged from the start of the input, only
	 * its end is counted (a PASS); once not, it is copied into to_peer */
	bool contig;
	size_t fwd_end;
	/* the body of the request being sent: its misuse scan (hooks.body) */
	struct sk_swap_body scan;
	char method[16];
	/* masking (sk_h1_filter_mask): the response bytes not sent yet, in order (mpend); the spans of it
	 * that are content the mask has not released yet (their bytes in mpend are the raw ones, rewritten
	 * as the mask releases them); a head in progress, from head_at, held until it is judged whole */
	bool masking;
	bool head_held;
	struct sk_swap_mask mask;
	struct sk_strbuf mpend, mtmp;
	struct span { size_t off, len; } *spans;
	size_t nspans, capspans, span_done;
	size_t head_at;
	/* websocket (inspect_h1.h) */
	enum ws_state ws;
	char ws_accept[32];      /* the Sec-WebSocket-Accept the server must answer */
	bool ws_ext;             /* the server agreed an extension: RSV bits may be set */
	bool ws_declined;        /* declined with the agent's bytes held: they are judged now */
	const char *ws_fail;     /* the server's 101 or frames broke the protocol: the connection fails */
	struct ws_dir wc, wsv;   /* the agent's frames, the server's */
};

static struct h1 *h1_of(struct sk_pt_filter *f)
{
	return (struct h1 *)f;
}

/* ---- output of one call ---- */

static void out_begin(struct h1 *h)
{
	h->contig = true;
	h->fwd_end = 0;
}

/* data[from, to) goes on. */
static void out_range(struct h1 *h, struct sk_pt_out *o, const uint8_t *data, size_t from, size_t to)
{
	if (from == to)
		return;
	if (h->contig && from == h->fwd_end) {
		h->fwd_end = to;
		return;
	}
	if (h->contig) {
		h->contig = false;
		(void)sk_strbuf_put(&o->to_peer, data, h->fwd_end);
	}
	(void)sk_strbuf_put(&o->to_peer, data + from, to - from);
}

/* Bytes of ours go on at this point of the stream (to_peer: the server→agent direction inserting an
 * answer between responses). */
static void out_insert(struct h1 *h, struct sk_pt_out *o, const uint8_t *data, const char *p, size_t n)
{
	if (h->contig) {
		h->contig = false;
		(void)sk_strbuf_put(&o->to_peer, data, h->fwd_end);
	}
	(void)sk_strbuf_put(&o->to_peer, p, n);
}

/* PASS when everything went on unchanged and nothing else was said. */
static enum sk_pt_verdict out_end(struct h1 *h, struct sk_pt_out *o, bool whole_chunk, size_t len,
				  const uint8_t *data)
{
	if (h->contig && whole_chunk && h->fwd_end == len && o->to_sender.len == 0 && !o->close_after)
		return SK_PT_PASS;
	if (h->contig)
		(void)sk_strbuf_put(&o->to_peer, data, h->fwd_end);
	if (sk_strbuf_ok(&o->to_peer) < 0 || sk_strbuf_ok(&o->to_sender) < 0) {
		sk_strbuf_reset(&o->to_peer);
		sk_strbuf_reset(&o->to_sender);
		o->reason = "client_data_refused";
		return SK_PT_FAIL;
	}
	return SK_PT_EMIT;
}

/* ---- what the agent is owed ---- */

static struct owed *q_front(struct h1 *h)
{
	return h->q_len ? &h->q[h->q_head] : NULL;
}

static void q_pop(struct h1 *h)
{
	free(h->q[h->q_head].answer);
	h->q[h->q_head] = (struct owed){ 0 };
	h->q_head = (h->q_head + 1) % h->q_cap;
	h->q_len--;
}

static int q_push(struct h1 *h, struct owed e)
{
	if (h->q_len == h->q_cap) {
		if (h->q_cap >= SK_H1_PIPELINE_MAX)
			return -ENOSPC;
		size_t ncap = h->q_cap ? h->q_cap * 2 : 8;
		struct owed *nq = calloc(ncap, sizeof(*nq));
		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < h->q_len; i++)
			nq[i] = h->q[(h->q_head + i) % h->q_cap];
		free(h->q);
		h->q = nq;
		h->q_head = 0;
		h->q_cap = ncap;
	}
	h->q[(h->q_head + h->q_len) % h->q_cap] = e;
	h->q_len++;
	return 0;
}

/* Between two responses, our answers at the front of the queue go out (into buf); true when one of them
 * ends the connection. */
static bool flush_local(struct h1 *h, struct sk_strbuf *buf, bool *closed)
{
	bool any = false;
	while (h->rs == RS_HEAD && h->line.len == 0 && q_front(h) && q_front(h)->local) {
		struct owed *e = q_front(h);
		(void)sk_strbuf_put(buf, e->answer, e->len);
		any = true;
		if (e->close) {
			*closed = true;
			q_pop(h);
			return any;
		}
		q_pop(h);
	}
	return any;
}

/* ---- the agent's requests ---- */

static bool host_is_sni(const struct h1 *h, const struct sk_http_head *hd)
{
	if (hd->host_is_ip)
		return h->sni_is_ip && sk_addr_equal(&hd->ip, &h->sni_ip);
	return !h->sni_is_ip && strcasecmp(hd->host, h->sni) == 0;
}

/* The request-target without its query (a path as sent: the audit line's and the answer's). */
static void target_path(const uint8_t *head, size_t n, char *out, size_t cap)
{
	const uint8_t *eol = memchr(head, '\r', n);
	size_t line = eol ? (size_t)(eol - head) : n;
	const uint8_t *sp1 = memchr(head, ' ', line);
	out[0] = '\0';
	if (!sp1)
		return;
	const uint8_t *start = sp1 + 1;
	size_t rest = line - (size_t)(start - head);
	const uint8_t *sp2 = memchr(start, ' ', rest);
	size_t len = sp2 ? (size_t)(sp2 - start) : rest;
	const uint8_t *qm = memchr(start, '?', len);
	if (qm)
		len = (size_t)(qm - start);
	if (len >= cap)
		len = cap - 1;
	memcpy(out, start, len);
	out[len] = '\0';
}

/* Queues a refusal (answer owned by the entry; NULL: out of memory, the connection just ends). */
static int owe_answer(struct h1 *h, char *answer, size_t len, bool close)
{
	if (!answer) {
		answer = strdup("");
		len = 0;
		close = true;
		if (!answer)
			return -ENOMEM;
	}
	int rc = q_push(h, (struct owed){ .local = true, .close = close, .answer = answer, .len = len });
	if (rc < 0)
		free(answer);
	if (close)
		h->ended = true;
	return rc;
}

/* A Connection: close answer made keep-alive (the request had no body: framing allows going on). */
static char *keep_alive_copy(const struct sk_req_denial *d, size_t *len)
{
	static const char hdr[] = "Connection: close\r\n";
	if (!d || !d->answer)
		return NULL;
	const char *at = strstr(d->answer, hdr);
	char *a = malloc(d->answer_len + 1);
	if (!a)
		return NULL;
	if (!at) {
		memcpy(a, d->answer, d->answer_len + 1);
		*len = d->answer_len;
		return a;
	}
	size_t pre = (size_t)(at - d->answer), skip = sizeof(hdr) - 1;
	memcpy(a, d->answer, pre);
	memcpy(a + pre, at + skip, d->answer_len - pre - skip + 1);
	*len = d->answer_len - skip;
	return a;
}

static const char *host_text(const struct sk_http_head *hd, char ip[SK_ADDR_STRLEN])
{
	if (!hd->host_is_ip)
		return hd->host;
	sk_addr_format(&hd->ip, ip);
	return ip;
}

/* ---- websocket (RFC 6455) ---- */

/* The next field line named `name` of the head p[0..n) from *pos on (0: the start line is skipped), its
 * value trimmed in *v, *vlen; false when there is none more. */
static bool field_next(const char *p, size_t n, size_t *pos, const char *name, const char **v, size_t *vlen)
{
	size_t nl = strlen(name);
	if (*pos == 0) {
		const char *e = memchr(p, '\n', n);
		if (!e)
			return false;
		*pos = (size_t)(e + 1 - p);
	}
	while (*pos < n) {
		const char *s = p + *pos, *e = memchr(s, '\n', n - *pos);
		if (!e)
			return false;
		*pos = (size_t)(e + 1 - p);
		if ((size_t)(e - s) > nl && strncasecmp(s, name, nl) == 0 && s[nl] == ':') {
			const char *b = s + nl + 1, *ve = e;
			while (b < ve && (*b == ' ' || *b == '\t'))
				b++;
			while (ve > b && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*v = b;
			*vlen = (size_t)(ve - b);
			return true;
		}
	}
	return false;
}

/* Whether the comma-separated list v[0..vl) holds the token tok (case-insensitive). */
static bool token_has(const char *v, size_t vl, const char *tok)
{
	size_t tl = strlen(tok);
	for (size_t i = 0; i < vl;) {
		while (i < vl && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t b = i;
		while (i < vl && v[i] != ',')
			i++;
		size_t e = i;
		while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - b == tl && strncasecmp(v + b, tok, tl) == 0)
			return true;
	}
	return false;
}

/* A Sec-WebSocket-Key: the base64 of 16 bytes (24 characters, the last two "=="). */
static bool ws_key_ok(const char *k, size_t n)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	if (n != 24 || k[22] != '=' || k[23] != '=')
		return false;
	for (size_t i = 0; i < 22; i++)
		if (!k[i] || !strchr(b64, k[i]))
			return false;
	return true;
}

/* The upgrade request head p[0..n) as RFC 6455 §4.1 has a client send it: GET over HTTP/1.1, Upgrade
 * exactly websocket, Connection naming upgrade, one Sec-WebSocket-Key, one Sec-WebSocket-Version 13.
 * NULL when it is one (h->ws_accept then holds the answer the server owes, §4.2.2), else the reason. */
static const char *ws_request(struct h1 *h, const uint8_t *head, size_t n, const struct sk_http_head *hd)
{
	const char *p = (const char *)head, *v = NULL, *key = NULL;
	size_t pos, vl = 0, keys = 0, vers = 0;
	bool conn_up = false, v13 = false;
	if (hd->upgrade != SK_HTTP_UPGRADE_WEBSOCKET || strcmp(hd->method, "GET") != 0 || hd->version_minor != 1)
		return "http_upgrade_unsupported";
	for (pos = 0; field_next(p, n, &pos, "upgrade", &v, &vl);)
		if (vl != 9 || strncasecmp(v, "websocket", 9) != 0)
			return "http_upgrade_unsupported";
	for (pos = 0; field_next(p, n, &pos, "connection", &v, &vl);)
		conn_up = conn_up || token_has(v, vl, "upgrade");
	for (pos = 0; field_next(p, n, &pos, "sec-websocket-version", &v, &vl);) {
		vers++;
		v13 = vl == 2 && memcmp(v, "13", 2) == 0;
	}
	for (pos = 0; field_next(p, n, &pos, "sec-websocket-key", &v, &vl);) {
		keys++;
		key = ws_key_ok(v, vl) ? v : NULL;
	}
	if (!conn_up || vers != 1 || !v13 || keys != 1 || !key)
		return "http_upgrade_unsupported";
	if (h->masking)
		return "websocket_secret_host";   /* frames are not searched for secrets: refused, fail closed */
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	uint8_t in[24 + sizeof(guid)], md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	memcpy(in, key, 24);
	memcpy(in + 24, guid, sizeof(guid) - 1);
	if (EVP_Digest(in, 24 + sizeof(guid) - 1, md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20)
		return "http_upgrade_unsupported";
	_Static_assert(sizeof(h->ws_accept) > 28, "base64 of a SHA-1 and its NUL");
	(void)EVP_EncodeBlock((unsigned char *)h->ws_accept, md, 20);
	return NULL;
}

/* The server's 101 (head p[0..n)) to the upgrade: Upgrade websocket, Connection upgrade, and exactly one
 * Sec-WebSocket-Accept equal to the one its key asks for. NULL when it is, else the reason. */
static const char *ws_response(struct h1 *h, const char *p, size_t n)
{
	const char *v = NULL;
	size_t pos, vl = 0, accepts = 0;
	bool up = false, conn = false, ok = false;
	for (pos = 0; field_next(p, n, &pos, "sec-websocket-accept", &v, &vl);) {
		accepts++;
		ok = vl == strlen(h->ws_accept) && memcmp(v, h->ws_accept, vl) == 0;
	}
	for (pos = 0; field_next(p, n, &pos, "upgrade", &v, &vl);)
		up = vl == 9 && strncasecmp(v, "websocket", 9) == 0;
	for (pos = 0; field_next(p, n, &pos, "connection", &v, &vl);)
		conn = conn || token_has(v, vl, "upgrade");
	pos = 0;
	h->ws_ext = field_next(p, n, &pos, "sec-websocket-extensions", &v, &vl);
	return accepts == 1 && ok && up && conn ? NULL : "websocket_bad_accept";
}

/* Follows the frames of one direction over p[0..n) (RFC 6455 §5): the agent's masked, the server's not;
 * opcodes known, control frames whole and at most 125 bytes, continuations only inside a fragmented
 * message, no RSV bit unless an extension was agreed, a 64-bit length with its top bit clear. The bytes
 * themselves pass as they are. -EPROTO on a frame that breaks these. */
static int ws_scan(struct ws_dir *d, bool client, bool ext, const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (d->left) {
			uint64_t take = n - i < d->left ? n - i : d->left;
			d->left -= take;
			i += (size_t)take;
			continue;
		}
		d->hdr[d->hlen++] = p[i++];
		if (d->hlen == 2) {
			uint8_t b0 = d->hdr[0], b1 = d->hdr[1], op = b0 & 0x0f, len7 = b1 & 0x7f;
			bool fin = b0 & 0x80, masked = b1 & 0x80;
			if (((b0 & 0x70) && !ext) || masked != client)
				return -EPROTO;
			if (op >= 8) {
				if ((op != 8 && op != 9 && op != 10) || !fin || len7 > 125)
					return -EPROTO;
			} else if (op == 0) {
				if (!d->frag)
					return -EPROTO;
				d->frag = !fin;
			} else if (op == 1 || op == 2) {
				if (d->frag)
					return -EPROTO;
				d->frag = !fin;
			} else {
				return -EPROTO;
			}
			d->need = (uint8_t)(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (masked ? 4 : 0));
		}
		if (d->hlen >= 2 && d->hlen == d->need) {
			uint8_t len7 = d->hdr[1] & 0x7f;
			uint64_t len = len7;
			if (len7 == 126) {
				len = (uint64_t)d->hdr[2] << 8 | d->hdr[3];
			} else if (len7 == 127) {
				len = 0;
				for (int k = 2; k < 10; k++)
					len = len << 8 | d->hdr[k];
				if (len >> 63)
					return -EPROTO;
			}
			d->left = len;
			d->hlen = 0;
			d->need = 0;
		}
	}
	return 0;
}

/* A direction broke the frame rules: its audit line; true when it is enforced (the connection fails),
 * false in mode audit (that direction is not followed any more). */
static bool ws_bad(struct h1 *h, struct ws_dir *d)
{
	if (h->hooks.refuse && !h->hooks.refuse(h->hooks.ctx, h->request, "websocket_bad_frame", NULL, NULL)) {
		d->left = UINT64_MAX;
		return false;
	}
	return true;
}

/* One complete head: 1 goes on, 2 goes on as h->swapped, 0 refused (its bytes dropped), < 0 the filter
 * cannot go on. */
static int judge_head(struct h1 *h, const uint8_t *head, size_t n, const struct sk_http_head *hd)
{
	h->request++;
	char path[SK_AUDIT_PATH_MAX], ip[SK_ADDR_STRLEN];
	int sent = 1;
	bool body = hd->te_count > 0 || (hd->cl_count > 0 && hd->content_length > 0);
	/* a refused upgrade ends the connection: the tracker waits for a 101 that will not come */
	bool close_after = body || hd->version_minor == 0 || hd->upgrade;
	target_path(head, n, path, sizeof(path));
	if (!host_is_sni(h, hd) &&
	    (!h->hooks.refuse || h->hooks.refuse(h->hooks.ctx, h->request, "host_sni_mismatch", hd->method, path))) {
		size_t len = 0;
		char *a = sk_req_answer(421, "Misdirected Request", "host_sni_mismatch", h->rule_label, hd->method,
					host_text(hd, ip), path, close_after, &len);
		return owe_answer(h, a, len, close_after) < 0 ? -ENOMEM : 0;
	}
	const char *ws_why = hd->upgrade ? ws_request(h, head, n, hd) : NULL;
	if (ws_why) {
		/* a switched protocol we cannot follow would be read by no one: refused rather than passed */
		if (h->hooks.refuse && !h->hooks.refuse(h->hooks.ctx, h->request, ws_why, hd->method, path)) {
			h->unjudged = true;   /* mode audit: the switched protocol passes unread */
			goto allowed;
		}
		size_t len = 0;
		char *a = sk_req_answer(403, "Forbidden", ws_why, h->rule_label, hd->method, host_text(hd, ip), path,
					true, &len);
		return owe_answer(h, a, len, true) < 0 ? -ENOMEM : 0;
	}
	if (h->hooks.judge) {
		const struct sk_req_denial *d = NULL;
		const char *why = h->hooks.judge(h->hooks.ctx, h->request, head, n, hd, &d);
		if (why) {
			size_t len = 0;
			char *a = NULL;
			if (!close_after)
				a = keep_alive_copy(d, &len);
			else if (d && d->answer && (a = malloc(d->answer_len + 1)))
				memcpy(a, d->answer, (len = d->answer_len) + 1);
			return owe_answer(h, a, len, close_after || !a) < 0 ? -ENOMEM : 0;
		}
	}
	if (h->hooks.rewrite) {
		const char *why = NULL;
		sk_strbuf_reset(&h->swapped);
		int rc = h->hooks.rewrite(h->hooks.ctx, h->request, head, n, hd, &h->swapped, &why);
		if (rc < 0) {
			size_t len = 0;
			char *a = sk_req_answer(403, "Forbidden", why ? why : "credential_misuse", h->rule_label,
						hd->method, host_text(hd, ip), path, true, &len);
			return owe_answer(h, a, len, true) < 0 ? -ENOMEM : 0;
		}
		if (rc == 1) {
			if (sk_strbuf_ok(&h->swapped) < 0)
				return -ENOMEM;
			sent = 2;
		}
		/* the hook turns masking on for a host a secret lists (one a reload added since the connection
		 * began too): frames toward it would not be searched, so the upgrade is refused after all */
		if (hd->upgrade && h->masking &&
		    (!h->hooks.refuse || h->hooks.refuse(h->hooks.ctx, h->request, "websocket_secret_host", hd->method, path))) {
			size_t len = 0;
			char *a = sk_req_answer(403, "Forbidden", "websocket_secret_host", h->rule_label, hd->method,
						host_text(hd, ip), path, true, &len);
			return owe_answer(h, a, len, true) < 0 ? -ENOMEM : 0;
		}
	}
allowed:
	if (q_push(h, (struct owed){ .head_method = strcmp(hd->method, "HEAD") == 0, .request = h->request }) < 0)
		return -ENOSPC;
	if (h->scan.seen || h->scan.tail || h->scan.done)
		sk_swap_body_reset(&h->scan);
	_Static_assert(sizeof(h->method) == sizeof(hd->method), "the head's method, copied whole");
	memcpy(h->method, hd->method, sizeof(h->method));   /* NUL-terminated by the parser */
	if (hd->upgrade && !h->unjudged)
		h->ws = WS_WAIT;   /* what the agent sends next is held until the server answers (from_server) */
	return sent;
}

/* The body hook refused the request being sent: its head and part of its body went on, so nothing more
 * of the agent's does, and the connection ends. The agent gets the 403 in its turn when the server has
 * not begun answering the request; else (an early response under way) the connection just closes. */
static int refuse_body(struct h1 *h, bool *close_now)
{
	h->ended = true;
	struct owed *last = h->q_len ? &h->q[(h->q_head + h->q_len - 1) % h->q_cap] : NULL;
	bool begun = h->q_len == 1 && (h->rs != RS_HEAD || h->line.len > 0);
	if (!last || last->local || begun) {
		*close_now = true;
		return 0;
	}
	h->q_len--;   /* the server's answer to it is not awaited any more: ours takes its place */
	*last = (struct owed){ 0 };
	size_t len = 0;
	char *a = sk_req_answer(403, "Forbidden", "credential_misuse", h->rule_label, h->method, h->sni, "", true, &len);
	return owe_answer(h, a, len, true);
}

/* A framing error or an oversized head: refused with a 400 that ends the connection. */
static int refuse_framing(struct h1 *h, const char *why, const struct sk_http_head *hd)
{
	h->request++;
	const char *method = hd && hd->method[0] ? hd->method : NULL;
	if (h->hooks.refuse && !h->hooks.refuse(h->hooks.ctx, h->request, why, method, NULL)) {
		h->unjudged = true;   /* mode audit: framing is lost, nothing more can be judged */
		return 1;
	}
	size_t len = 0;
	char *a = sk_req_answer(400, "Bad Request", why, h->rule_label, method, h->sni, "", true, &len);
	return owe_answer(h, a, len, true) < 0 ? -ENOMEM : 0;
}

static enum sk_pt_verdict client_run(struct h1 *h, const uint8_t *buf, size_t len, struct sk_pt_out *o);

/* The agent's bytes data[*off..dlen) wait for more (a head not yet whole, or bytes held behind an upgrade):
 * past a head's bound they are refused http_head_too_big (passed, in mode audit). false: the filter cannot
 * go on (o->reason set). */
static bool wait_for_more(struct h1 *h, struct sk_pt_out *o, const uint8_t *data, size_t *off, size_t dlen)
{
	if (dlen - *off <= SK_H1_HEAD_MAX)
		return true;
	if (refuse_framing(h, "http_head_too_big", NULL) < 0) {
		o->reason = "client_data_refused";
		return false;
	}
	if (h->unjudged)
		out_range(h, o, data, *off, dlen);
	*off = dlen;
	return true;
}

static enum sk_pt_verdict from_client(struct sk_pt_filter *f, const uint8_t *buf, size_t len, struct sk_pt_out *o)
{
	struct h1 *h = h1_of(f);
	if (h->ws == WS_OPEN) {
		/* the agent's frames: followed, passed as they are */
		if (ws_scan(&h->wc, true, h->ws_ext, buf, len) < 0 && ws_bad(h, &h->wc)) {
			o->reason = "websocket_bad_frame";
			return SK_PT_FAIL;
		}
		return SK_PT_PASS;
	}
	return client_run(h, buf, len, o);
}

/* The agent's bytes buf[0..len) after those held in h->pend (len 0: the held ones alone): what goes to
 * the server into o->to_peer, our answers due now into o->to_sender. */
static enum sk_pt_verdict client_run(struct h1 *h, const uint8_t *buf, size_t len, struct sk_pt_out *o)
{
	if (h->unjudged)
		return SK_PT_PASS;
	if (h->ended)
		return SK_PT_EMIT;   /* refused and closing: nothing more goes on */
	const uint8_t *data = buf;
	size_t dlen = len;
	bool whole = h->pend.len == 0;
	if (!whole) {
		if (sk_strbuf_put(&h->pend, buf, len) < 0) {
			o->reason = "client_data_refused";
			return SK_PT_FAIL;
		}
		data = (const uint8_t *)h->pend.p;
		dlen = h->pend.len;
	}
	out_begin(h);
	size_t off = 0;
	bool stop = false;
	while (off < dlen && !stop && !h->ended) {
		size_t n = 0;
		/* zeroed: after an ERROR the tracker fills it only as far as it parsed, and the answer and the
		 * audit line read its method */
		struct sk_http_head hd = { 0 };
		const char *why = NULL;
		int rc;
		enum sk_track_state st = h->track.st;
		switch (sk_http_track_next(&h->track, data + off, dlen - off, &n, &hd, &why)) {
		case SK_TRACK_FORWARD:
			if ((st == SK_TS_BODY || st == SK_TS_CHUNK_DATA) && h->hooks.body && !h->scan.done &&
			    h->hooks.body(h->hooks.ctx, h->request, h->method, &h->scan, data + off, n) < 0) {
				bool close_now = false;
				if (refuse_body(h, &close_now) < 0) {
					o->reason = "client_data_refused";
					return SK_PT_FAIL;
				}
				if (close_now)
					o->close_after = true;
				off = dlen;
				stop = true;
				break;
			}
			out_range(h, o, data, off, off + n);
			off += n;
			break;
		case SK_TRACK_HEAD:
			rc = judge_head(h, data + off, n, &hd);
			if (rc < 0) {
				o->reason = "client_data_refused";
				return SK_PT_FAIL;
			}
			if (rc == 2)
				out_insert(h, o, data, h->swapped.p, h->swapped.len);
			else if (rc > 0)
				out_range(h, o, data, off, off + n);
			off += n;
			if (h->unjudged) {
				out_range(h, o, data, off, dlen);
				off = dlen;
			}
			break;
		case SK_TRACK_NEED_MORE:
			if (!wait_for_more(h, o, data, &off, dlen))
				return SK_PT_FAIL;
			stop = true;
			break;
		case SK_TRACK_HOLD:
			/* a websocket upgrade awaits its answer: what follows is held (frames after a 101, the
			 * next request after a decline: from_server decides) */
			if (h->ws == WS_WAIT) {
				if (!wait_for_more(h, o, data, &off, dlen))
					return SK_PT_FAIL;
				stop = true;
				break;
			}
			/* a hold without an upgrade we forwarded: a tracker out of step, refused */
			__attribute__((fallthrough));
		case SK_TRACK_OPAQUE:
		case SK_TRACK_ERROR:
			/* OPAQUE cannot come (the filter follows the frames itself after a 101) */
			if (refuse_framing(h, why ? why : "http_malformed", &hd) < 0) {
				o->reason = "client_data_refused";
				return SK_PT_FAIL;
			}
			if (h->unjudged)
				out_range(h, o, data, off, dlen);
			off = dlen;
			stop = true;
			break;
		}
	}
	/* what is left waits for more (a head split over records): kept, sent once judged */
	size_t left = h->ended || h->unjudged ? 0 : dlen - off;
	bool closed = false;
	(void)flush_local(h, &o->to_sender, &closed);
	if (closed)
		o->close_after = true;
	enum sk_pt_verdict v = out_end(h, o, whole, len, data);
	sk_strbuf_reset(&h->pend2);
	if (left && sk_strbuf_put(&h->pend2, data + off, left) < 0) {
		o->reason = "client_data_refused";
		return SK_PT_FAIL;
	}
	struct sk_strbuf t = h->pend;
	h->pend = h->pend2;
	h->pend2 = t;
	return v;
}

/* ---- the server's responses ---- */

/* The status code of a complete response head, or -1. */
static int status_of(const char *p, size_t n)
{
	if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
		return -1;
	int s = 0;
	for (int i = 9; i < 12; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		s = s * 10 + (p[i] - '0');
	}
	return s;
}

/* The value of field `name` in a response head (the last one), or NULL; *vlen its length. */
static const char *field(const char *p, size_t n, const char *name, size_t *vlen)
{
	const char *found = NULL;
	size_t nl = strlen(name);
	for (const char *l = memchr(p, '\n', n); l && (size_t)(l + 1 - p) < n;) {
		const char *s = l + 1, *e = memchr(s, '\n', n - (size_t)(s - p));
		if (!e)
			break;
		if ((size_t)(e - s) > nl && strncasecmp(s, name, nl) == 0 && s[nl] == ':') {
			const char *v = s + nl + 1, *ve = e;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			found = v;
			*vlen = (size_t)(ve - v);
		}
		l = e;
	}
	return found;
}

/* A complete response head in h->line: where its body goes. */
static void response_head(struct h1 *h)
{
	const char *p = h->line.p;
	size_t n = h->line.len;
	int status = status_of(p, n);
	if (status == 101 && h->ws == WS_WAIT) {
		struct owed *e = q_front(h);
		uint32_t request = e && !e->local ? e->request : h->request;
		const char *why = ws_response(h, p, n);
		if (why && (!h->hooks.refuse || h->hooks.refuse(h->hooks.ctx, request, why, "GET", NULL))) {
			h->ws_fail = why;   /* the agent never sees this 101: the connection fails */
			h->rs = RS_UNTIL_CLOSE;
			return;
		}
		if (e && !e->local)
			q_pop(h);
		h->ws = WS_OPEN;
		h->rs = RS_WS;
		sk_http_track_upgrade_result(&h->track, true);
		return;
	}
	if (status < 0 || status == 101) {
		h->rs = RS_UNTIL_CLOSE;   /* not a response we can follow: nothing of ours after it */
		return;
	}
	if (status < 200)
		return;   /* interim: the final response is still owed */
	struct owed *e = q_front(h);
	bool head_method = e && !e->local && e->head_method;
	if (e && !e->local)
		q_pop(h);
	h->rs = RS_HEAD;
	if (h->ws == WS_WAIT) {
		/* a declined upgrade: the connection stays HTTP; what the agent sent behind the upgrade request
		 * was held, and is judged as the next requests (ws_declined) */
		h->ws = WS_NONE;
		sk_http_track_upgrade_result(&h->track, false);
		h->ws_declined = h->pend.len > 0;   /* judged now, at the end of from_server */
	}
	if (head_method || status == 204 || status == 304)
		return;
	size_t vl = 0;
	const char *te = field(p, n, "transfer-encoding", &vl);
	if (te) {
		h->rs = vl >= 7 && strncasecmp(te + vl - 7, "chunked", 7) == 0 ? RS_CHUNK_SIZE : RS_UNTIL_CLOSE;
		return;
	}
	const char *cl = field(p, n, "content-length", &vl);
	if (!cl) {
		h->rs = RS_UNTIL_CLOSE;
		return;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < vl; i++) {
		if (cl[i] < '0' || cl[i] > '9' || v > UINT64_MAX / 10 - 1) {
			h->rs = RS_UNTIL_CLOSE;
			return;
		}
		v = v * 10 + (uint64_t)(cl[i] - '0');
	}
	h->remaining = v;
	h->rs = v ? RS_BODY : RS_HEAD;
}

/* The byte at index k of what is collected followed by p (-1 before the start). */
static int at(const struct h1 *h, const uint8_t *p, size_t old, long k)
{
	if (k < 0)
		return -1;
	return (size_t)k < old ? (unsigned char)h->line.p[k] : p[(size_t)k - old];
}

/* Collects a line (or, whole_head, a head up to its empty line) into h->line; returns the bytes consumed
 * from p[0..n). *done when it is complete. */
static size_t collect(struct h1 *h, const uint8_t *p, size_t n, bool whole_head, bool *done)
{
	size_t old = h->line.len;
	*done = false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\n')
			continue;
		long k = (long)(old + i);
		int c1 = at(h, p, old, k - 1), c2 = at(h, p, old, k - 2);
		if (!whole_head || c1 == '\n' || (c1 == '\r' && c2 == '\n')) {
			(void)sk_strbuf_put(&h->line, p, i + 1);
			*done = true;
			return i + 1;
		}
	}
	(void)sk_strbuf_put(&h->line, p, n);
	if (h->line.len > SK_H1_HEAD_MAX || sk_strbuf_ok(&h->line) < 0) {
		h->rs = RS_UNTIL_CLOSE;   /* beyond what we follow: nothing of ours after it */
		sk_strbuf_reset(&h->line);
	}
	return n;
}

/* ---- masking (sk_h1_filter_mask) ---- */

/* Response bytes that are not content (chunk framing): in order, not searched. */
static void m_frame(struct h1 *h, const void *p, size_t n)
{
	(void)sk_strbuf_put(&h->mpend, p, n);
}

/* The mask released r[0..k): written over the oldest content bytes it had not released. */
static void m_fill(struct h1 *h, const uint8_t *r, size_t k)
{
	while (k && h->nspans) {
		struct span *sp = &h->spans[0];
		size_t take = sp->len - h->span_done < k ? sp->len - h->span_done : k;
		memcpy(h->mpend.p + sp->off + h->span_done, r, take);
		h->span_done += take;
		r += take;
		k -= take;
		if (h->span_done == sp->len) {
			memmove(h->spans, h->spans + 1, (h->nspans - 1) * sizeof(*h->spans));
			h->nspans--;
			h->span_done = 0;
		}
	}
}

/* Content bytes: kept in order, searched by the mask. -ENOMEM. */
static int m_content(struct h1 *h, const uint8_t *p, size_t n, bool final)
{
	if (n) {
		if (h->nspans == h->capspans) {
			size_t cap = h->capspans ? h->capspans * 2 : 8;
			struct span *ns = realloc(h->spans, cap * sizeof(*ns));
			if (!ns)
				return -ENOMEM;
			h->spans = ns;
			h->capspans = cap;
		}
		h->spans[h->nspans++] = (struct span){ h->mpend.len, n };
		(void)sk_strbuf_put(&h->mpend, p, n);
	}
	if (!n && !final)
		return 0;
	if (!n && !sk_swap_mask_held(&h->mask) && !h->nspans)
		return 0;
	sk_strbuf_reset(&h->mtmp);
	if (sk_swap_mask_run(&h->mask, p, n, final, &h->mtmp) < 0 || sk_strbuf_ok(&h->mpend) < 0)
		return -ENOMEM;
	m_fill(h, (const uint8_t *)h->mtmp.p, h->mtmp.len);
	return 0;
}

/* What is final goes to the agent: everything before the first byte the mask holds, and before a head
 * not judged yet. */
static void m_release(struct h1 *h, struct sk_pt_out *o)
{
	size_t n = h->nspans ? h->spans[0].off + h->span_done : h->mpend.len;
	if (h->head_held && h->head_at < n)
		n = h->head_at;
	if (!n)
		return;
	(void)sk_strbuf_put(&o->to_peer, h->mpend.p, n);
	memmove(h->mpend.p, h->mpend.p + n, h->mpend.len - n);
	explicit_bzero(h->mpend.p + h->mpend.len - n, n);
	h->mpend.len -= n;
	if (h->nspans && n > h->spans[0].off) {
		/* the released part of the first span leaves it: its offset stays within mpend (subtracting n
		 * alone wrapped it below 0, and m_fill's pointer overflowed before span_done brought it back) */
		size_t k = n - h->spans[0].off;
		h->spans[0].off += k;
		h->spans[0].len -= k;
		h->span_done -= k;
	}
	for (size_t i = 0; i < h->nspans; i++)
		h->spans[i].off -= n;
	h->head_at = h->head_at > n ? h->head_at - n : 0;
}

/* Whether the mask can search the body of the response head p[0..n) (status): whole and identity-coded. */
static bool maskable(const char *p, size_t n, int status)
{
	if (status == 206 || status == 226)
		return false;   /* a part may begin inside a value; a delta carries none of it whole */
	for (size_t off = 0; off < n;) {
		const char *l = p + off, *e = memchr(l, '\n', n - off);
		size_t ll = e ? (size_t)(e - l) : n - off;
		off += ll + 1;
		bool ce = ll > 17 && !strncasecmp(l, "content-encoding:", 17);
		bool te = ll > 18 && !strncasecmp(l, "transfer-encoding:", 18);
		if (!ce && !te)
			continue;
		/* every listed coding must be identity (or, for Transfer-Encoding, chunked) */
		const char *v = l + (ce ? 17 : 18), *ve = l + ll;
		while (v < ve) {
			while (v < ve && (*v == ' ' || *v == '\t' || *v == ',' || *v == '\r'))
				v++;
			const char *t = v;
			while (v < ve && *v != ',' && *v != ';' && *v != ' ' && *v != '\t' && *v != '\r')
				v++;
			size_t tl = (size_t)(v - t);
			while (v < ve && *v != ',')
				v++;   /* parameters */
			if (!tl || (tl == 8 && !strncasecmp(t, "identity", 8)) || (te && tl == 7 && !strncasecmp(t, "chunked", 7)))
				continue;
			return false;
		}
	}
	return true;
}

/* A whole response head was collected (masked connection): refused when its body cannot be searched.
 * true: refused, the connection ends after our 502. */
static bool m_judge_head(struct h1 *h, int status, uint32_t request)
{
	h->head_held = false;
	if (status < 200 || maskable(h->line.p, h->line.len, status))
		return false;
	if (h->hooks.refuse && !h->hooks.refuse(h->hooks.ctx, request, "upstream_encoding", NULL, NULL))
		return false;   /* mode audit: it goes on (unsearchable) */
	/* nothing of this head reached the agent: it is dropped, our answer goes instead */
	explicit_bzero(h->mpend.p + h->head_at, h->mpend.len - h->head_at);
	h->mpend.len = h->head_at;
	h->nspans = 0;
	h->span_done = 0;
	sk_strbuf_reset(&h->mtmp);
	(void)sk_swap_mask_run(&h->mask, NULL, 0, true, &h->mtmp);   /* resets the matchers; bytes dropped */
	sk_strbuf_reset(&h->mtmp);
	size_t len = 0;
	char *a = sk_req_answer(502, "Bad Gateway", "upstream_encoding", h->rule_label, NULL, h->sni, "", true, &len);
	if (a)
		m_frame(h, a, len);
	free(a);
	return true;
}

struct sk_swap_mask *sk_h1_filter_mask(struct sk_pt_filter *f)
{
	struct h1 *h = h1_of(f);
	h->masking = true;
	return &h->mask;
}

/* ---- the server's responses ---- */

static enum sk_pt_verdict from_server(struct sk_pt_filter *f, const uint8_t *buf, size_t len, struct sk_pt_out *o)
{
	struct h1 *h = h1_of(f);
	out_begin(h);
	size_t off = 0;
	bool closed = false;
	struct sk_strbuf ours = { 0 };
	int mrc = 0;
	while (off < len && !closed && mrc == 0 && !h->ws_fail) {
		if (flush_local(h, &ours, &closed)) {
			if (h->masking)
				m_frame(h, ours.p, ours.len);
			else
				out_insert(h, o, buf, ours.p, ours.len);
			sk_strbuf_reset(&ours);
			if (closed)
				break;
		}
		size_t n = len - off;
		bool done = false, content = true;
		switch (h->rs) {
		case RS_HEAD:
			if (h->ws == WS_WAIT && !h->masking) {
				/* the answer to an upgrade: held whole until judged (a bad 101 reaches no one) */
				n = collect(h, buf + off, len - off, true, &done);
				off += n;
				n = 0;
				if (h->rs != RS_HEAD) {
					h->ws_fail = "client_data_refused";   /* a head beyond what we follow */
					break;
				}
				if (!done)
					break;
				out_insert(h, o, buf, h->line.p, h->line.len);
				response_head(h);
				sk_strbuf_reset(&h->line);
				if (h->ws == WS_OPEN && h->pend.len) {
					/* what the agent sent after its upgrade request: its first frames */
					if (ws_scan(&h->wc, true, h->ws_ext, (const uint8_t *)h->pend.p, h->pend.len) < 0 &&
					    ws_bad(h, &h->wc)) {
						h->ws_fail = "websocket_bad_frame";
						break;
					}
					(void)sk_strbuf_put(&o->to_sender, h->pend.p, h->pend.len);
					sk_strbuf_reset(&h->pend);
				}
				break;
			}
			if (h->masking && h->line.len == 0) {
				h->head_held = true;
				h->head_at = h->mpend.len;
			}
			n = collect(h, buf + off, len - off, true, &done);
			if (h->rs != RS_HEAD)
				h->head_held = false;   /* a head beyond what we follow: it goes on as it is, masked */
			if (done && h->masking) {
				/* the head's bytes go into the mask first: the refusal drops them all */
				mrc = m_content(h, buf + off, n, false);
				off += n;
				n = 0;
				int status = status_of(h->line.p, h->line.len);
				struct owed *e = q_front(h);
				uint32_t request = e && !e->local ? e->request : h->request;
				if (m_judge_head(h, status, request)) {
					closed = true;
					sk_strbuf_reset(&h->line);
					break;
				}
			}
			if (done) {
				response_head(h);
				sk_strbuf_reset(&h->line);
			}
			break;
		case RS_BODY:
		case RS_CHUNK_DATA:
			if (n > h->remaining)
				n = (size_t)h->remaining;
			h->remaining -= n;
			if (!h->remaining)
				h->rs = h->rs == RS_BODY ? RS_HEAD : RS_CHUNK_CRLF;
			break;
		case RS_CHUNK_SIZE:
		case RS_CHUNK_CRLF:
		case RS_TRAILERS:
			content = h->rs == RS_TRAILERS;
			if (h->masking && !content && h->line.len == 0) {
				/* framing the mask does not search (a value there would be masked out of place):
				 * held until the line is whole, and refused if it carries one */
				h->head_held = true;
				h->head_at = h->mpend.len;
			}
			n = collect(h, buf + off, len - off, false, &done);
			if (h->masking && !content && (done || h->rs == RS_UNTIL_CLOSE)) {
				h->head_held = false;
				/* bytes before a chunk's CRLF (data past its size) right after content the mask holds
				 * back would join it unsearched: fail closed as for a value in the framing */
				bool overrun = h->rs == RS_CHUNK_CRLF && sk_swap_mask_held(&h->mask) &&
					       !(h->line.len == 1 || (h->line.len == 2 && h->line.p[0] == '\r'));
				if (done && (overrun || sk_swap_mask_finds(&h->mask, (const uint8_t *)h->line.p, h->line.len))) {
					sk_strbuf_reset(&h->line);
					mrc = -EPROTO;
					break;
				}
			}
			if (!done)
				break;
			if (h->rs == RS_CHUNK_CRLF) {
				h->rs = RS_CHUNK_SIZE;
			} else if (h->rs == RS_TRAILERS) {
				if (h->line.len <= 2)
					h->rs = RS_HEAD;
			} else {
				char *end = NULL;
				unsigned long long v = strtoull(h->line.p, &end, 16);
				if (end == h->line.p)
					h->rs = RS_UNTIL_CLOSE;
				else if (v == 0)
					h->rs = RS_TRAILERS;
				else {
					h->remaining = v;
					h->rs = RS_CHUNK_DATA;
				}
			}
			sk_strbuf_reset(&h->line);
			break;
		case RS_UNTIL_CLOSE:
			break;
		case RS_WS:
			if (ws_scan(&h->wsv, false, h->ws_ext, buf + off, n) < 0 && ws_bad(h, &h->wsv))
				h->ws_fail = "websocket_bad_frame";
			break;
		}
		if (h->ws_fail)
			break;
		if (!h->masking) {
			out_range(h, o, buf, off, off + n);
		} else if (n) {
			if (content)
				mrc = m_content(h, buf + off, n, false);
			else
				m_frame(h, buf + off, n);
		}
		off += n;
		/* between two responses: the last one is released whole (nothing can straddle into the next) */
		if (h->masking && mrc == 0 && h->rs == RS_HEAD && h->line.len == 0)
			mrc = m_content(h, NULL, 0, true);
	}
	if (!closed && flush_local(h, &ours, &closed)) {
		if (h->masking)
			m_frame(h, ours.p, ours.len);
		else
			out_insert(h, o, buf, ours.p, ours.len);
	}
	sk_strbuf_free(&ours);
	if (h->ws_fail) {
		/* nothing of it goes on (the agent has not seen the 101 or gets no more frames) */
		sk_strbuf_reset(&o->to_peer);
		sk_strbuf_reset(&o->to_sender);
		o->reason = h->ws_fail;
		return SK_PT_FAIL;
	}
	if (closed)
		o->close_after = true;
	if (!h->masking && h->ws_declined) {
		/* the agent's bytes held behind a declined upgrade: judged as requests now, as they would have
		 * been had they come after this answer; what they send goes toward the server (to_sender), our
		 * answers to the agent after what this chunk carried */
		h->ws_declined = false;
		enum sk_pt_verdict v = out_end(h, o, true, len, buf);
		if (v == SK_PT_PASS)
			(void)sk_strbuf_put(&o->to_peer, buf, len);
		struct sk_pt_out tmp = { 0 };
		enum sk_pt_verdict cv = client_run(h, NULL, 0, &tmp);
		if (cv == SK_PT_FAIL || v == SK_PT_FAIL) {
			sk_pt_out_free(&tmp);
			sk_strbuf_reset(&o->to_peer);
			sk_strbuf_reset(&o->to_sender);
			o->reason = "client_data_refused";
			return SK_PT_FAIL;
		}
		/* a PASS of the held bytes is impossible (they were in pend); EMIT carries them in tmp */
		(void)sk_strbuf_put(&o->to_sender, tmp.to_peer.p, tmp.to_peer.len);
		(void)sk_strbuf_put(&o->to_peer, tmp.to_sender.p, tmp.to_sender.len);
		o->close_after = o->close_after || tmp.close_after;
		sk_pt_out_free(&tmp);
		if (sk_strbuf_ok(&o->to_peer) < 0 || sk_strbuf_ok(&o->to_sender) < 0) {
			sk_strbuf_reset(&o->to_peer);
			sk_strbuf_reset(&o->to_sender);
			o->reason = "client_data_refused";
			return SK_PT_FAIL;
		}
		return SK_PT_EMIT;
	}
	if (!h->masking)
		return out_end(h, o, true, len, buf);
	m_release(h, o);
	if (mrc < 0 || sk_strbuf_ok(&h->mpend) < 0 || sk_strbuf_ok(&o->to_peer) < 0) {
		/* a response that cannot be masked is not relayed */
		sk_strbuf_reset(&o->to_peer);
		o->reason = mrc == -EPROTO ? "secret_in_response_header" : "client_data_refused";
		return SK_PT_FAIL;
	}
	return SK_PT_EMIT;
}

static enum sk_pt_verdict on_closed(struct sk_pt_filter *f, bool client_side, struct sk_pt_out *o)
{
	struct h1 *h = h1_of(f);
	if (client_side) {
		sk_strbuf_reset(&h->pend);   /* a head cut short never goes on */
		return SK_PT_PASS;
	}
	if (!h->masking)
		return SK_PT_PASS;
	/* the server's end: what the mask held goes, masked (a head cut short too: the agent sees it cut) */
	if (h->head_held && (h->rs == RS_CHUNK_SIZE || h->rs == RS_CHUNK_CRLF)) {
		/* but a chunk line cut short is framing, never searched: dropped, not released */
		explicit_bzero(h->mpend.p + h->head_at, h->mpend.len - h->head_at);
		h->mpend.len = h->head_at;
	}
	h->head_held = false;
	if (m_content(h, NULL, 0, true) < 0) {
		o->reason = "client_data_refused";
		return SK_PT_FAIL;
	}
	m_release(h, o);
	if (sk_strbuf_ok(&o->to_peer) < 0) {
		o->reason = "client_data_refused";
		return SK_PT_FAIL;
	}
	return SK_PT_EMIT;
}

static void h1_free(struct sk_pt_filter *f)
{
	struct h1 *h = h1_of(f);
	if (!h)
		return;
	while (h->q_len)
		q_pop(h);
	free(h->q);
	sk_strbuf_free(&h->pend);
	sk_strbuf_free(&h->pend2);
	sk_strbuf_free(&h->line);
	sk_strbuf_free(&h->swapped);
	sk_swap_body_reset(&h->scan);
	sk_swap_mask_free(&h->mask);
	if (h->mpend.p)
		explicit_bzero(h->mpend.p, h->mpend.cap);
	sk_strbuf_free(&h->mpend);
	if (h->mtmp.p)
		explicit_bzero(h->mtmp.p, h->mtmp.cap);
	sk_strbuf_free(&h->mtmp);
	free(h->spans);
	free(h);
}

static const struct sk_pt_filter_ops h1_ops = {
	.name = "http1", .from_client = from_client, .from_server = from_server, .closed = on_closed, .free = h1_free,
};

int sk_h1_filter_new(const char *sni, const char *rule_label, const struct sk_h1_hooks *hooks,
		     struct sk_pt_filter **out, struct sk_err *err)
{
	if (!sni || !*sni || strlen(sni) >= sizeof(((struct h1 *)0)->sni))
		return sk_err_set(err, EINVAL, "HTTP/1 filter: no usable server name");
	struct h1 *h = calloc(1, sizeof(*h));
	if (!h)
		return sk_err_set(err, ENOMEM, "HTTP/1 filter: out of memory");
	h->f.ops = &h1_ops;
	(void)snprintf(h->sni, sizeof(h->sni), "%s", sni);
	h->sni_is_ip = sk_addr_parse(sni, &h->sni_ip) == 0;
	(void)snprintf(h->rule_label, sizeof(h->rule_label), "%s", rule_label ? rule_label : "");
	if (hooks)
		h->hooks = *hooks;
	sk_http_track_init(&h->track);
	*out = &h->f;
	return 0;
}

uint32_t sk_h1_filter_requests(const struct sk_pt_filter *f)
{
	return ((const struct h1 *)f)->request;
}

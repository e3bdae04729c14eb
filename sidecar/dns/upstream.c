/* sidecar/dns/upstream.c — see dns_upstream.h. */
#include "sidecar/dns/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>


static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

int sk_resolv_parse(const char *text, size_t len, const char *what, struct sk_dns_upstreams *out,
		    struct sk_err *err)
{
	size_t added = 0, i = 0;
	while (i < len) {
		size_t eol = i;
		while (eol < len && text[eol] != '\n')
			eol++;
		size_t p = i;
		i = eol + 1;
		while (p < eol && is_space(text[p]))
			p++;
		static const char kw[] = "nameserver";
		if (eol - p <= sizeof(kw) - 1 || memcmp(text + p, kw, sizeof(kw) - 1) != 0 ||
		    !is_space(text[p + sizeof(kw) - 1]))
			continue;
		p += sizeof(kw) - 1;
		while (p < eol && is_space(text[p]))
			p++;
		size_t e = p;
		while (e < eol && !is_space(text[e]) && text[e] != '#' && text[e] != ';')
			e++;
		char tok[64];
		if (e == p || e - p >= sizeof(tok))
			continue;
		memcpy(tok, text + p, e - p);
		tok[e - p] = '\0';
		struct sk_dns_server s = { .port = 53 };
		if (strchr(tok, '%') || sk_addr_parse(tok, &s.addr) < 0)
			continue;   /* zone ids and garbage: glibc skips them too */
		if (added == SK_RESOLV_MAXNS || out->n == SK_DNS_UPSTREAM_MAX)
			break;
		out->v[out->n++] = s;
		added++;
	}
	if (added == 0)
		return sk_err_set(err, ENOENT, "%s: no usable nameserver line", what);
	return (int)added;
}

int sk_resolv_load(const char *path, struct sk_dns_upstreams *out, struct sk_err *err)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return sk_err_sys(err, errno, "open %s", path);
	char buf[16384];
	size_t n = fread(buf, 1, sizeof(buf), f);
	bool failed = ferror(f) != 0;
	(void)fclose(f);
	if (failed)
		return sk_err_sys(err, EIO, "read %s", path);
	return sk_resolv_parse(buf, n, path, out, err);
}

int sk_dns_server_parse(const char *s, struct sk_dns_server *out)
{
	char host[64];
	const char *port = NULL;
	size_t sl = strlen(s);
	if (sl == 0 || sl >= sizeof(host) + 8)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || (size_t)(close - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0')
			return -EINVAL;
	} else {
		const char *colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL;   /* bare IPv6: every colon is the address's */
		size_t hl = colon ? (size_t)(colon - s) : sl;
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		host[hl] = '\0';
		if (colon)
			port = colon + 1;
	}
	out->port = 53;
	if (port) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(port, &end, 10);
		if (errno || end == port || *end || v == 0 || v > 65535 || port[0] == '+' || port[0] == '-')
			return -EINVAL;
		out->port = (uint16_t)v;
	}
	return sk_addr_parse(host, &out->addr) < 0 ? -EINVAL : 0;
}

int sk_dns_upstreams_from_policy(const struct sk_policy *p, const char *resolv_path,
				 struct sk_dns_upstreams *out, struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < p->dns.n_upstream; i++) {
		const char *u = p->dns.upstream[i];
		if (strcmp(u, "resolv.conf") == 0) {
			int r = sk_resolv_load(resolv_path, out, err);
			if (r < 0)
				return sk_err_prefix(err, "dns upstream %zu", i + 1);
			continue;
		}
		if (out->n == SK_DNS_UPSTREAM_MAX)
			return sk_err_set(err, E2BIG, "dns upstream %zu: more than %d upstreams", i + 1,
					  SK_DNS_UPSTREAM_MAX);
		if (sk_dns_server_parse(u, &out->v[out->n]) < 0)
			return sk_err_set(err, EINVAL, "dns upstream %zu: not an address[:port]: %s", i + 1, u);
		out->n++;
	}
	if (p->dns.n_upstream == 0) {
		int r = sk_resolv_load(resolv_path, out, err);
		if (r < 0)
			return sk_err_prefix(err, "dns upstream (default)");
	}
	if (out->n == 0)
		return sk_err_set(err, ENOENT, "dns upstream: none configured");
	return 0;
}

/* ---- pending-query table ---- */

#define ID_BATCH 128

struct id_slot {
	struct sk_dns_pending *p;
};

struct sk_dns_ptable {
	struct id_slot *by_id;           /* 65536 slots: O(1) match, and a free ID is found in a few draws */
	struct sk_dns_pending *head, *tail;   /* by deadline, earliest first */
	size_t count, cap;
	struct sk_dns_pt_cfg cfg;
	uint16_t ids[ID_BATCH];
	size_t ids_left;
};

int sk_dns_ptable_new(size_t cap, const struct sk_dns_pt_cfg *cfg, struct sk_dns_ptable **out,
		      struct sk_err *err)
{
	*out = NULL;
	if (cap == 0 || cap > 32768 || cfg->servers.n == 0 || cfg->servers.n > SK_DNS_UPSTREAM_MAX)
		return sk_err_set(err, EINVAL, "dns pending table: bad capacity or server count");
	struct sk_dns_ptable *t = calloc(1, sizeof(*t));
	if (!t)
		return sk_err_set(err, ENOMEM, "dns pending table: out of memory");
	t->by_id = calloc(65536, sizeof(struct id_slot));
	if (!t->by_id) {
		free(t);
		return sk_err_set(err, ENOMEM, "dns pending table: out of memory");
	}
	t->cap = cap;
	t->cfg = *cfg;
	if (!t->cfg.attempt_timeout_ms)
		t->cfg.attempt_timeout_ms = 1500;
	if (!t->cfg.tcp_timeout_ms)
		t->cfg.tcp_timeout_ms = 4000;
	if (!t->cfg.max_attempts) {
		unsigned n = (unsigned)cfg->servers.n;
		t->cfg.max_attempts = n < 2 ? 2 : n > 4 ? 4 : n;
	}
	*out = t;
	return 0;
}

static void list_unlink(struct sk_dns_ptable *t, struct sk_dns_pending *p)
{
	if (!p->in_list)
		return;
	if (p->prev)
		p->prev->next = p->next;
	else
		t->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		t->tail = p->prev;
	p->prev = p->next = NULL;
	p->in_list = false;
}

/* Deadlines are mostly now + a constant, so they arrive in order: walking back from the tail is O(1)
 * in the common case. */
static void list_insert(struct sk_dns_ptable *t, struct sk_dns_pending *p)
{
	struct sk_dns_pending *after = t->tail;
	while (after && after->deadline_ms > p->deadline_ms)
		after = after->prev;
	p->prev = after;
	p->next = after ? after->next : t->head;
	if (p->next)
		p->next->prev = p;
	else
		t->tail = p;
	if (after)
		after->next = p;
	else
		t->head = p;
	p->in_list = true;
}

void sk_dns_ptable_free(struct sk_dns_ptable *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < 65536; i++)
		free(t->by_id[i].p);
	free(t->by_id);
	free(t);
}

size_t sk_dns_ptable_count(const struct sk_dns_ptable *t)
{
	return t->count;
}

static int next_random(struct sk_dns_ptable *t, uint16_t *id)
{
	if (t->ids_left == 0) {
		if (getrandom(t->ids, sizeof(t->ids), 0) != (ssize_t)sizeof(t->ids))
			return -EIO;
		t->ids_left = ID_BATCH;
	}
	*id = t->ids[--t->ids_left];
	return 0;
}

struct sk_dns_pending *sk_dns_pend_start(struct sk_dns_ptable *t, const struct sk_dns_fquery *q, void *ctx,
					 uint64_t now_ms)
{
	if (t->count >= t->cap)
		return NULL;
	uint16_t id = 0;
	bool found = false;
	/* At most half the ID space is ever in use (cap <= 32768), so each draw succeeds with p >= 1/2. */
	for (int tries = 0; tries < 64 && !found; tries++) {
		if (next_random(t, &id) < 0)
			return NULL;
		found = t->by_id[id].p == NULL;
	}
	if (!found)
		return NULL;
	struct sk_dns_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->id = id;
	p->server = 0;
	p->sent_mask = 1;
	p->attempts = 1;
	p->started_ms = now_ms;
	p->deadline_ms = now_ms + t->cfg.attempt_timeout_ms;
	p->q = *q;
	p->ctx = ctx;
	t->by_id[id].p = p;
	t->count++;
	list_insert(t, p);
	return p;
}

static uint16_t rd16(const uint8_t *b) { return (uint16_t)((b[0] << 8) | b[1]); }

/* A response with one question, p's ID and p's question (names compared case-insensitively). */
static bool answer_shape_ok(const struct sk_dns_pending *p, const uint8_t *ans, size_t len)
{
	if (len < SK_DNS_HDR_LEN || !(ans[2] & 0x80) || rd16(ans + 4) != 1 || rd16(ans) != p->id)
		return false;
	size_t off = SK_DNS_HDR_LEN;
	struct sk_dns_name n;
	if (sk_dns_name_read(ans, len, &off, &n) != SK_DNS_OK || len - off < 4)
		return false;
	return sk_dns_name_equal(&n, &p->q.qname) && rd16(ans + off) == p->q.qtype && rd16(ans + off + 2) == p->q.qclass;
}

bool sk_dns_pend_answers(const struct sk_dns_ptable *t, const struct sk_dns_pending *p, unsigned server,
			 const uint8_t *ans, size_t len)
{
	if (!p || len < SK_DNS_HDR_LEN || t->by_id[p->id].p != p)
		return false;   /* not (or no longer) in flight */
	if (server >= t->cfg.servers.n || !(p->sent_mask & (1u << server)))
		return false;
	return answer_shape_ok(p, ans, len);
}

void sk_dns_pend_to_tcp(struct sk_dns_ptable *t, struct sk_dns_pending *p, uint64_t now_ms)
{
	list_unlink(t, p);
	p->tcp = true;
	p->deadline_ms = now_ms + t->cfg.tcp_timeout_ms;
	list_insert(t, p);
}

void sk_dns_pend_done(struct sk_dns_ptable *t, struct sk_dns_pending *p)
{
	list_unlink(t, p);
	if (t->by_id[p->id].p == p)
		t->by_id[p->id].p = NULL;
	t->count--;
	free(p);
}

uint64_t sk_dns_pend_next_deadline(const struct sk_dns_ptable *t)
{
	return t->head ? t->head->deadline_ms : UINT64_MAX;
}

enum sk_dns_expiry sk_dns_pend_expire(struct sk_dns_ptable *t, uint64_t now_ms, struct sk_dns_pending **pp)
{
	struct sk_dns_pending *p = t->head;
	*pp = NULL;
	if (!p || p->deadline_ms > now_ms)
		return SK_DNS_EXP_NONE;
	list_unlink(t, p);
	*pp = p;
	if (p->tcp || p->attempts >= t->cfg.max_attempts)
		return SK_DNS_EXP_GIVE_UP;
	p->attempts++;
	p->server = (uint8_t)((p->server + 1) % t->cfg.servers.n);
	p->sent_mask |= (uint8_t)(1u << p->server);
	p->deadline_ms = now_ms + t->cfg.attempt_timeout_ms;
	list_insert(t, p);
	return SK_DNS_EXP_RETRY;
}

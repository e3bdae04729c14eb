/* sidecar/core/audit.c — NDJSON audit lines; see audit.h. */
#include "sidecar/core/audit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/json_str.h"
#include "sidecar/core/denials.h"

struct out {
	char *buf;
	size_t cap, len;  /* len may pass cap: then the line was cut (never with cap >= SK_AUDIT_LINE_MAX) */
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t room = o->cap - o->len;
		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

/* s as a JSON string, its first max bytes. */
static void put_json_str_n(struct out *o, const char *s, size_t max)
{
	char e[6];
	put(o, "\"", 1);
	/* control bytes and anything non-ASCII become \u00XX: the line stays valid JSON (and valid UTF-8) even
	 * when an agent feeds raw bytes through a parser bug */
	for (size_t i = 0; i < max && s[i]; i++)
		put(o, e, sk_json_escape_byte((unsigned char)s[i], e));
	put(o, "\"", 1);
}

static void put_json_str(struct out *o, const char *s) { put_json_str_n(o, s, SK_AUDIT_STR_MAX); }

size_t sk_audit_json_str(char *buf, size_t cap, const char *s)
{
	struct out o = { .buf = buf, .cap = cap, .len = 0 };
	put_json_str(&o, s);
	if (cap > 0)
		buf[o.len < cap ? o.len : cap - 1] = '\0';
	return o.len;
}

/* ,"key": */
static void put_key(struct out *o, const char *key)
{
	puts_(o, ",\"");
	puts_(o, key);
	puts_(o, "\":");
}

static void put_field_str_n(struct out *o, const char *key, const char *v, size_t max)
{
	put_key(o, key);
	if (v)
		put_json_str_n(o, v, max);
	else
		puts_(o, "null");
}

static void put_field_str(struct out *o, const char *key, const char *v)
{
	put_field_str_n(o, key, v, SK_AUDIT_STR_MAX);
}

static void put_field_u64(struct out *o, const char *key, uint64_t v)
{
	char num[32];
	(void)snprintf(num, sizeof(num), "%" PRIu64, v);
	put_key(o, key);
	puts_(o, num);
}

static void put_field_int(struct out *o, const char *key, int v)
{
	char num[16];
	(void)snprintf(num, sizeof(num), "%d", v);
	put_key(o, key);
	puts_(o, num);
}

void sk_audit_endpoint(const struct sk_addr *a, uint16_t port, char out[SK_ADDR_STRLEN + 8])
{
	char ip[SK_ADDR_STRLEN];
	sk_addr_format(a, ip);
	if (a->family == AF_INET6)
		(void)snprintf(out, SK_ADDR_STRLEN + 8, "[%s]:%u", ip, port);
	else
		(void)snprintf(out, SK_ADDR_STRLEN + 8, "%s:%u", ip, port);
}

size_t sk_audit_format(const struct sk_audit_rec *r, const char *policy, const struct timespec *wall, char *buf,
		       size_t cap)
{
	struct out o = { .buf = buf, .cap = cap, .len = 0 };
	struct tm tm;
	char ts[96], ep[SK_ADDR_STRLEN + 8], head[48];
	time_t sec = wall->tv_sec;
	gmtime_r(&sec, &tm);
	(void)snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((wall->tv_nsec / 1000000L) % 1000));
	if (policy && !policy[0])
		policy = NULL;
	(void)snprintf(head, sizeof(head), "{\"v\":%d,\"ts\":", SK_AUDIT_VERSION);
	puts_(&o, head);
	put_json_str(&o, ts);
	put_field_str(&o, "event", r->event);
	put_field_str(&o, "policy", policy);
	if (r->reload) {
		/* A reload: which policy was in force before, what asked for it, and how it ended. */
		put_field_str(&o, "previous", r->reload->previous);
		put_field_str(&o, "trigger", r->reload->trigger);
		put_field_str(&o, "result", r->reload->result);
		put_field_str(&o, "reason", r->reason);
		goto end;
	}
	if (r->guardrail) {
		/* A guardrail narrowing: which guardrails, what changed (as long as a gateway path), and whether
		 * the sidecar could change it. */
		put_field_str(&o, "guardrails", r->guardrail->guardrails);
		put_field_str_n(&o, "change", r->guardrail->change, SK_AUDIT_PATH_MAX);
		put_field_str(&o, "reason", r->reason);
		goto end;
	}
	if (r->api) {
		/* A gateway request: its own fields instead of a proxied connection's. */
		put_field_str(&o, "api", r->api);
		put_field_str(&o, "method", r->method);
		put_field_str_n(&o, "path", r->path, SK_AUDIT_PATH_MAX);
		put_field_int(&o, "status", r->status);
	} else {
		if (r->src)
			sk_audit_endpoint(r->src, r->src_port, ep);
		put_field_str(&o, "src", r->src ? ep : NULL);
		if (r->dst)
			sk_audit_endpoint(r->dst, r->dst_port, ep);
		put_field_str(&o, "dst", r->dst ? ep : NULL);
		put_field_str(&o, "name", r->name);
		put_field_str(&o, "proto", r->proto);
		if (r->qtype)
			put_field_str(&o, "qtype", r->qtype);
		if (r->rule >= 0 && r->rule_name)
			put_field_str(&o, "rule", r->rule_name);
		else if (r->rule >= 0)
			put_field_u64(&o, "rule", (uint64_t)r->rule);
		else
			puts_(&o, ",\"rule\":null");
	}
	put_field_str(&o, "decision", r->decision);
	put_field_str(&o, "reason", r->reason);
	if (r->binding)
		put_field_str(&o, "binding", r->binding);
	if (r->late)
		puts_(&o, ",\"late\":true");
	if (r->inspected)
		puts_(&o, ",\"inspected\":true");
	if (r->request > 0)
		put_field_u64(&o, "request", r->request);
	if (!r->api && r->method) {
		/* a plain-HTTP request its rule's request rules decided (sidecar/proxy/requests_gate.h) */
		put_field_str(&o, "method", r->method);
		put_field_str_n(&o, "path", r->path, SK_AUDIT_PATH_MAX);
	}
	put_field_u64(&o, "bytes_in", r->bytes_in);
	put_field_u64(&o, "bytes_out", r->bytes_out);
	put_field_u64(&o, "duration_ms", r->duration_ms);
end:
	puts_(&o, "}");
	if (o.len >= cap && cap > 0) {
		/* Cut line: cannot happen with cap >= SK_AUDIT_LINE_MAX; keep it parseable anyway, and keep the
		 * fields every line has when they fit (v, ts, event, policy are bounded: about 90 bytes). */
		o.len = 0;
		puts_(&o, head);
		put_json_str(&o, ts);
		put_field_str(&o, "event", "audit_line_cut");
		put_field_str(&o, "policy", policy);
		puts_(&o, "}");
		if (o.len >= cap) {
			static const char cut[] = "{\"event\":\"audit_line_cut\"}";
			size_t n = sizeof(cut) - 1 < cap ? sizeof(cut) - 1 : cap - 1;
			memcpy(buf, cut, n);
			buf[n] = '\0';
			return n;
		}
	}
	if (cap > 0)
		buf[o.len] = '\0';
	return o.len;
}

void sk_audit_init(struct sk_audit *a, int fd, struct sk_denials *denials)
{
	a->fd = fd;
	a->policy[0] = '\0';
	a->denials = denials;
	a->lines = a->write_errors = 0;
	a->batch = false;
	a->blen = 0;
}

static void write_all(struct sk_audit *a, const char *buf, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(a->fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			a->write_errors++;
			return;
		}
		off += (size_t)w;
	}
}

void sk_audit_set_policy(struct sk_audit *a, const char *hash)
{
	(void)snprintf(a->policy, sizeof(a->policy), "%s", hash ? hash : "");
}

void sk_audit_batch(struct sk_audit *a) { a->batch = true; }

void sk_audit_flush(struct sk_audit *a)
{
	if (a->blen == 0)
		return;
	write_all(a, a->bbuf, a->blen);
	a->blen = 0;
}

void sk_audit_emit(struct sk_audit *a, const struct sk_audit_rec *r)
{
	char line[SK_AUDIT_LINE_MAX + 1];
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	size_t n = sk_audit_format(r, a->policy, &wall, line, SK_AUDIT_LINE_MAX);
	bool deny = r->decision && strcmp(r->decision, "allow") != 0;
	if (deny && a->denials)
		sk_denials_push(a->denials, line, n);
	line[n++] = '\n';
	a->lines++;
	if (!a->batch) {
		write_all(a, line, n);
		return;
	}
	if (a->blen + n > sizeof(a->bbuf))
		sk_audit_flush(a);
	memcpy(a->bbuf + a->blen, line, n);
	a->blen += n;
}

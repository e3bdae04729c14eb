/* policy/format.c — the model as text: names of protocols and modes, a rule's label, a rule and a budget
 * as one line (`check`, `explain`, audit), and the hash of the netns part that the init's marker carries. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/hash.h"
#include "common/util.h"
#include "policy/addr.h"
#include "policy/policy.h"
#include "policy/requests.h"
#include "policy/schema.h"

const char *sk_rule_label(const struct sk_policy *p, int idx, char buf[24])
{
	if (idx < 0)
		return NULL;
	if (p && (size_t)idx < p->n_rules && p->rules[idx].name)
		return p->rules[idx].name;
	(void)snprintf(buf, 24, "%d", idx);
	return buf;
}

const char *sk_proto_name(enum sk_proto p)
{
	switch (p) {
	case SK_PROTO_ANY:
		return "any";
	case SK_PROTO_TLS:
		return "tls";
	case SK_PROTO_HTTP:
		return "http";
	case SK_PROTO_TCP:
		return "tcp";
	case SK_PROTO_UDP:
		return "udp";
	}
	return "?";
}

const char *sk_mode_name(enum sk_mode m)
{
	switch (m) {
	case SK_MODE_ENFORCE:
		return "enforce";
	case SK_MODE_AUDIT:
		return "audit";
	}
	return "?";
}

/* Appends printf output to out[*o..outsz), never overflowing; *o saturates at outsz - 1. */
static void sb_printf(char *out, size_t outsz, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void sb_printf(char *out, size_t outsz, size_t *o, const char *fmt, ...)
{
	if (*o + 1 >= outsz)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + *o, outsz - *o, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*o = (size_t)n >= outsz - *o ? outsz - 1 : *o + (size_t)n;
}

static void ports_text(char *out, size_t outsz, size_t *o, const uint16_t *ports, size_t n)
{
	if (!n) {
		sb_printf(out, outsz, o, "any");
		return;
	}
	sb_printf(out, outsz, o, "[");
	for (size_t i = 0; i < n; i++)
		sb_printf(out, outsz, o, "%s%u", i ? "," : "", ports[i]);
	sb_printf(out, outsz, o, "]");
}

char *sk_rule_format(const struct sk_rule *r, char *out, size_t outsz)
{
	size_t o = 0;
	if (!outsz)
		return out;
	out[0] = 0;
	if (r->kind == SK_RULE_HOST) {
		sb_printf(out, outsz, &o, "host %s%s ports ", r->wildcard ? "*." : "", r->host ? r->host : "?");
	} else {
		char c[SK_ADDR_STRLEN + 4];
		sk_cidr_format(&r->cidr, c);
		sb_printf(out, outsz, &o, "cidr %s ports ", c);
	}
	ports_text(out, outsz, &o, r->ports, r->n_ports);
	if (r->proto != SK_PROTO_ANY)
		sb_printf(out, outsz, &o, " protocol %s", sk_proto_name(r->proto));
	if (r->direct)
		sb_printf(out, outsz, &o, " direct");
	if (r->inspect)
		sb_printf(out, outsz, &o, " inspect");
	if (r->requests && r->requests->access != SK_ACCESS_NONE)
		sb_printf(out, outsz, &o, " access %s", sk_schema_accesses[r->requests->access - 1]);
	else if (r->requests)
		sb_printf(out, outsz, &o, " requests %zu", r->requests->n);
	return out;
}

static void size_text(char *out, size_t outsz, size_t *o, uint64_t v)
{
	static const char *const units[] = { "", "Ki", "Mi", "Gi", "Ti" };
	size_t u = 0;
	while (u + 1 < SK_ARRAY_SIZE(units) && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	sb_printf(out, outsz, o, "%llu%s", (unsigned long long)v, units[u]);
}

char *sk_budget_format(const struct sk_budget *b, char *out, size_t outsz)
{
	size_t o = 0;
	if (!outsz)
		return out;
	out[0] = 0;
	if (!b->window_ms) {
		sb_printf(out, outsz, &o, "none");
		return out;
	}
	if (b->sent) {
		sb_printf(out, outsz, &o, "sent ");
		size_text(out, outsz, &o, b->sent);
		sb_printf(out, outsz, &o, " ");
	}
	if (b->received) {
		sb_printf(out, outsz, &o, "received ");
		size_text(out, outsz, &o, b->received);
		sb_printf(out, outsz, &o, " ");
	}
	if (b->connections)
		sb_printf(out, outsz, &o, "connections %llu ", (unsigned long long)b->connections);
	if (b->queries)
		sb_printf(out, outsz, &o, "queries %llu ", (unsigned long long)b->queries);
	uint64_t s = b->window_ms / 1000;
	if (s % 3600 == 0)
		sb_printf(out, outsz, &o, "window %lluh", (unsigned long long)(s / 3600));
	else if (s % 60 == 0)
		sb_printf(out, outsz, &o, "window %llum", (unsigned long long)(s / 60));
	else
		sb_printf(out, outsz, &o, "window %llus", (unsigned long long)s);
	return out;
}

static void fnv_str(uint64_t *h, const char *s)
{
	*h = sk_fnv1a64_add_str(*h, s);
}

/* The decimal digits of v, as printf's %u / %zu would write them. */
static void fnv_u64(uint64_t *h, uint64_t v)
{
	char d[21];
	size_t n = 0;
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*h = sk_fnv1a64_byte(*h, (uint8_t)d[--n]);
}

/* The canonical form hashed (FNV-1a 64) is this text, one item per line, every line ending in '\n':
 *   stockade-netns v1
 *   agent <uid>
 *   sidecar <uid>
 *   exempt <uid>,<uid>,...            (sorted ascending, as loaded; empty after the space when none)
 *   ports proxy=<p> dns=<p> admin=<p> api=<p>
 *   loopback allow | loopback deny | loopback ports <p>,<p>,...   (sorted)
 *   rule <n> <sk_rule_format text>    for each CIDR rule that is direct or protocol udp, in file order,
 *                                     n = its index among all rules (e.g. "rule 7 cidr 10.96.0.0/12
 *                                     ports [8125] protocol udp direct")
 * Everything here is already normalised by the loader (sorted ports and uids, CIDRs without host bits),
 * so two files that differ only in spelling, key order or comments hash the same. Host rules never reach
 * the kernel (a host rule cannot be direct or udp), and neither do mode, dns, apis, blockPrivate or tls
 * (tls.echGrease is read by the proxy only, so a live reload may change it). */
void sk_policy_netns_hash(const struct sk_policy *p, char out[17])
{
	uint64_t h = SK_FNV64_OFFSET;
	char line[256];
	fnv_str(&h, "stockade-netns v1\n");
	(void)snprintf(line, sizeof(line), "agent %u\nsidecar %u\nexempt ", p->agent_uid, p->sidecar_uid);
	fnv_str(&h, line);
	for (size_t i = 0; i < p->n_exempt_uids; i++) {
		(void)snprintf(line, sizeof(line), "%s%u", i ? "," : "", p->exempt_uids[i]);
		fnv_str(&h, line);
	}
	(void)snprintf(line, sizeof(line), "\nports proxy=%u dns=%u admin=%u api=%u\n", p->ports.proxy, p->ports.dns,
		 p->ports.admin, p->ports.api);
	fnv_str(&h, line);
	switch (p->loopback) {
	case SK_LOOPBACK_ALLOW:
		fnv_str(&h, "loopback allow\n");
		break;
	case SK_LOOPBACK_DENY:
		fnv_str(&h, "loopback deny\n");
		break;
	case SK_LOOPBACK_PORTS:
		fnv_str(&h, "loopback ports ");
		for (size_t i = 0; i < p->n_loopback_ports; i++) {
			(void)snprintf(line, sizeof(line), "%s%u", i ? "," : "", p->loopback_ports[i]);
			fnv_str(&h, line);
		}
		fnv_str(&h, "\n");
		break;
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_rule *r = &p->rules[i];
		if (r->kind != SK_RULE_CIDR || !(r->direct || r->proto == SK_PROTO_UDP))
			continue;
		/* The same text as "rule %zu cidr %s ports [%u,...] protocol %s direct\n", written piecewise
		 * without printf: a 10 000-CIDR policy spent more time here than loading its rules. */
		fnv_str(&h, "rule ");
		fnv_u64(&h, i);
		fnv_str(&h, " cidr ");
		if (r->cidr.net.family == AF_INET) {
			for (int k = 0; k < 4; k++) {
				if (k)
					fnv_str(&h, ".");
				fnv_u64(&h, r->cidr.net.bytes[k]);
			}
			fnv_str(&h, "/");
			fnv_u64(&h, r->cidr.prefix);
		} else {
			char c[SK_ADDR_STRLEN + 4];
			sk_cidr_format(&r->cidr, c);
			fnv_str(&h, c);
		}
		fnv_str(&h, r->n_ports ? " ports [" : " ports any");
		for (size_t j = 0; j < r->n_ports; j++) {
			if (j)
				fnv_str(&h, ",");
			fnv_u64(&h, r->ports[j]);
		}
		if (r->n_ports)
			fnv_str(&h, "]");
		if (r->proto != SK_PROTO_ANY) {
			fnv_str(&h, " protocol ");
			fnv_str(&h, sk_proto_name(r->proto));
		}
		fnv_str(&h, r->direct ? " direct\n" : "\n");
	}
	(void)snprintf(out, 17, "%016llx", (unsigned long long)h);
}

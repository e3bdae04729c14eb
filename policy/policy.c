/* policy/policy.c — the policy model's life cycle: diagnostics, defaults, format detection, the
 * sk_policy_load_* entry points (text → tree → validated model → matcher), freeing, names, and the
 * netns-part hash. Parsing lives in load_yaml.c/load_json.c, validation in validate.c and forge.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/read_file.h"
#include "common/util.h"
#include "policy/load-internal.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "policy/requests.h"
#include "policy/schema.h"

void sk_diags_add(struct sk_diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		msg = NULL;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct sk_diag *v = realloc(d->v, cap * sizeof(*v));
		if (!v) {
			free(msg);
			return;  /* out of memory: the load still fails, it just says less */
		}
		d->v = v;
		d->cap = cap;
	}
	struct sk_diag *g = &d->v[d->n++];
	g->file = strdup(file ? file : "<buffer>");
	g->line = line;
	g->col = col;
	g->msg = msg;
}

void sk_diags_free(struct sk_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].msg);
	}
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
}

void sk_diags_print(const struct sk_diags *d, void *stdio_file)
{
	FILE *f = stdio_file;
	/* every caller prints to stderr or a log, after the failure these describe: nothing left to report a
	 * failed write to */
	for (size_t i = 0; i < d->n; i++) {
		const struct sk_diag *g = &d->v[i];
		const char *file = g->file ? g->file : "<buffer>", *msg = g->msg ? g->msg : "out of memory";
		if (g->line)
			(void)fprintf(f, "%s:%u:%u: %s\n", file, g->line, g->col, msg);
		else
			(void)fprintf(f, "%s: %s\n", file, msg);
	}
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void sk_policy_free(struct sk_policy *p)
{
	if (!p)
		return;
	if (p->matcher)
		sk_matcher_free(p->matcher);
	free(p->source);
	free(p->exempt_uids);
	for (size_t i = 0; i < p->n_rules; i++) {
		free(p->rules[i].host);
		free(p->rules[i].ports);
		free(p->rules[i].name);
		sk_requests_free(p->rules[i].requests);
	}
	free(p->rules);
	free_strv(p->dns.upstream, p->dns.n_upstream);
	free(p->dns.allow_types);
	free(p->loopback_ports);
	for (size_t i = 0; i < p->n_apis; i++) {
		struct sk_api *a = &p->apis[i];
		free(a->name);
		free(a->upstream);
		free(a->header_name);
		free(a->value_file);
		free(a->caller_token_file);
		free(a->ca_file);
		free_strv(a->methods, a->n_methods);
		free_strv(a->path_prefixes, a->n_path_prefixes);
	}
	free(p->apis);
	free_strv(p->seccomp.allow, p->seccomp.n_allow);
	free_strv(p->seccomp.deny, p->seccomp.n_deny);
	free(p->seccomp.allow_pos);
	free(p->seccomp.deny_pos);
	free_strv(p->import_notes, p->n_import_notes);
	free(p);
}

/* docs/policy.md defaults. dns.upstream and dns.allowTypes are filled by the validator when absent, so
 * that a present key replaces the default instead of adding to it. */
void sk_policy_set_defaults(struct sk_policy *p)
{
	p->version = 1;
	p->mode = SK_MODE_ENFORCE;
	p->agent_uid = 1000;
	p->sidecar_uid = 1337;
	p->ports = (struct sk_ports){ .proxy = 15001, .dns = 15053, .admin = 15000, .api = 15080 };
	p->dns.deny = SK_DNS_DENY_NXDOMAIN;
	p->dns.max_query_length = 253;
	p->block_private = true;
	p->loopback = SK_LOOPBACK_ALLOW;
	p->tls.ech_grease_allow = false;  /* tls.echGrease: deny */
}

struct sk_rule *sk_policy_add_rule(struct sk_load_ctx *c, struct sk_policy *p)
{
	/* The array only ever grows here, from empty, so its capacity is the power of two at or above
	 * n_rules: it doubles when n_rules reaches one (one realloc per rule was a copy, or an mremap
	 * system call, per rule of a long policy). */
	struct sk_rule *v = p->rules;
	const size_t n = p->n_rules;
	if (n == 0 || (n & (n - 1)) == 0) {
		v = realloc(p->rules, (n ? 2 * n : 1) * sizeof(*v));
		if (!v) {
			sk_ctx_error(c, 1, 1, "out of memory");
			return NULL;
		}
		p->rules = v;
	}
	struct sk_rule *r = &v[p->n_rules++];
	memset(r, 0, sizeof(*r));
	return r;
}

void sk_policy_add_note(struct sk_policy *p, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	char **v = realloc(p->import_notes, (p->n_import_notes + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return;
	}
	p->import_notes = v;
	v[p->n_import_notes++] = s;
}

static const char *skip_bom_ws(const char *buf, size_t len, size_t *off)
{
	size_t o = 0;
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		o = 3;
	while (o < len && (buf[o] == ' ' || buf[o] == '\t' || buf[o] == '\n' || buf[o] == '\r'))
		o++;
	*off = o;
	return buf + o;
}

/* Sorts the diagnostics one load added by position, so they read top to bottom like the file.
 * Ties keep insertion order. */
static void sort_diags(struct sk_diags *d, size_t from)
{
	size_t n = d->n - from;
	if (n < 2)
		return;
	struct sk_diag *v = d->v + from;
	/* Insertion sort: stable, and a policy has few errors (fuzzers included, it stays cheap enough). */
	for (size_t i = 1; i < n; i++) {
		struct sk_diag t = v[i];
		size_t j = i;
		while (j > 0 && (v[j - 1].line > t.line || (v[j - 1].line == t.line && v[j - 1].col > t.col))) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = t;
	}
}

int sk_policy_load_buffer_ex(const char *name, const char *buf, size_t len, int format, unsigned flags,
			     struct sk_policy **out, struct sk_diags *diags)
{
	struct sk_load_ctx c = { .file = name ? name : "<buffer>", .diags = diags, .flags = flags };
	const size_t first_diag = diags->n;
	struct sk_node *tree = NULL;
	struct sk_policy *p = NULL;
	int ret = -EINVAL;

	*out = NULL;
	if (format < -1 || format > SK_FORMAT_FORGE) {
		sk_ctx_error(&c, 0, 0, "unknown policy format %d", format);
		return -EINVAL;
	}
	size_t off;
	const char *first = skip_bom_ws(buf, len, &off);
	const bool json = format == SK_FORMAT_JSON || format == SK_FORMAT_FORGE || (format == -1 && off < len && *first == '{');
	tree = json ? sk_json_parse(&c, buf, len) : sk_yaml_parse(&c, buf, len);
	if (!tree)
		goto out;
	enum sk_policy_format fmt = !json ? SK_FORMAT_YAML
		: (format == SK_FORMAT_FORGE || (format == -1 && sk_forge_detect(tree))) ? SK_FORMAT_FORGE
		: SK_FORMAT_JSON;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->source = strdup(c.file))) {
		sk_ctx_error(&c, 0, 0, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	p->format = fmt;
	if (!(flags & SK_LOAD_NO_CONTENT_HASH))
		(void)snprintf(p->content_hash, sizeof(p->content_hash), "%016llx",
			       (unsigned long long)sk_fnv1a64(buf, len));
	sk_policy_set_defaults(p);
	if (fmt == SK_FORMAT_FORGE)
		sk_forge_import(&c, tree, p);
	else
		sk_validate_policy(&c, tree, p);
	if (c.n_errors)
		goto out;
	/* Only a fully valid model gets a matcher: a half-validated policy must never decide anything. */
	int r = (flags & SK_LOAD_NO_MATCHER) ? 0 : sk_matcher_build(p);
	if (r < 0) {
		sk_ctx_error(&c, 0, 0, "building the matcher: %s", strerror(-r));
		ret = r;
		goto out;
	}
	*out = sk_steal_pointer(&p);
	ret = 0;
out:
	sort_diags(diags, first_diag);
	sk_node_free(tree);
	sk_policy_free(p);
	return ret;
}

int sk_policy_load_buffer(const char *name, const char *buf, size_t len, int format, struct sk_policy **out,
			  struct sk_diags *diags)
{
	return sk_policy_load_buffer_ex(name, buf, len, format, 0, out, diags);
}

int sk_policy_load_file_ex(const char *path, int format, unsigned flags, struct sk_policy **out,
			   struct sk_diags *diags)
{
	size_t len = 0;
	struct sk_err err = { 0 };
	*out = NULL;
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	/* "-" is standard input (`stockade-policy check -`, `stockade-init --policy - --dry-run`) */
	sk_autofree char *buf = sk_read_file(path, SK_POLICY_MAX_BYTES, &len, &err);
	if (!buf) {
		/* line 0: printed as "FILE: cannot read: ..." — there is no position to give */
		sk_diags_add(diags, name, 0, 0, "cannot read: %s", strerror(err.code));
		return -err.code;
	}
	return sk_policy_load_buffer_ex(name, buf, len, format, flags, out, diags);
}

int sk_policy_load_file(const char *path, int format, struct sk_policy **out, struct sk_diags *diags)
{
	return sk_policy_load_file_ex(path, format, 0, out, diags);
}

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

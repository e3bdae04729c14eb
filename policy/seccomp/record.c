/* policy/seccomp/record.c — the kernel's seccomp audit record read into fields, the pod from a cgroup
 * path, the NDJSON line of one refusal. See record.h. */
#include "policy/seccomp/record.h"

#include <errno.h>
#include <inttypes.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_str.h"
#include "common/util.h"

#define X32_SYSCALL_BIT 0x40000000u

static bool starts(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n >= l && !memcmp(s, lit, l);
}

/* The /dev/kmsg prefix "PRI,SEQ,USEC,FLAGS[,...];": digits first, no space before the ';' (the text the
 * kernel logs starts after it, so nothing a message says can pose as the prefix). Returns the body's
 * offset, or 0 when there is no such prefix. */
static size_t kmsg_prefix(const char *s, size_t n)
{
	if (n == 0 || s[0] < '0' || s[0] > '9')
		return 0;
	for (size_t i = 1; i < n && i < 96; i++) {
		if (s[i] == ';')
			return i + 1;
		if (s[i] == ' ' || (unsigned char)s[i] < 0x20)
			return 0;
	}
	return 0;
}

enum field { F_PID, F_UID, F_COMM, F_EXE, F_ARCH, F_SYSCALL, F_CODE, F_SIG, F_COMPAT, F_N };
static const char *const field_names[F_N] = { "pid", "uid", "comm", "exe", "arch", "syscall", "code", "sig",
					      "compat" };
#define REQUIRED ((1u << F_PID) | (1u << F_COMM) | (1u << F_ARCH) | (1u << F_SYSCALL) | (1u << F_CODE))

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* An untrusted string as audit_log_untrustedstring writes it: "quoted" when every byte is 0x21..0x7e
 * without '"', else bare upper-case hex; "(null)" bare for a string the kernel did not have. */
static bool read_string(const char *v, size_t n, bool quoted, char *out, size_t cap)
{
	if (quoted) {
		if (n >= cap)
			return false;
		for (size_t i = 0; i < n; i++)
			if (v[i] < 0x21 || v[i] > 0x7e || v[i] == '"')
				return false;
		memcpy(out, v, n);
		out[n] = '\0';
		return true;
	}
	if (n == 6 && !memcmp(v, "(null)", 6)) {
		out[0] = '\0';
		return true;
	}
	if (n == 0 || n % 2 || n / 2 >= cap)
		return false;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(v[i]), lo = hexval(v[i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0)   /* a NUL would cut the string short */
			return false;
		out[i / 2] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	return true;
}

/* Unsigned number in base 10 or 16 (no sign, no prefix), at most max. */
static bool read_unsigned(const char *v, size_t n, int base, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = base == 16 ? hexval(v[i]) : (v[i] >= '0' && v[i] <= '9' ? v[i] - '0' : -1);
		if (d < 0 || x > (max - (uint64_t)d) / (uint64_t)base)
			return false;
		x = x * (uint64_t)base + (uint64_t)d;
	}
	*out = x;
	return true;
}

static bool read_int32(const char *v, size_t n, int32_t *out)
{
	bool neg = n > 0 && v[0] == '-';
	uint64_t x = 0;
	if (!read_unsigned(v + neg, n - neg, 10, neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX, &x))
		return false;
	*out = neg ? (int32_t)(-(int64_t)x) : (int32_t)x;
	return true;
}

static bool read_field(enum field f, const char *v, size_t n, bool quoted, struct sk_scmp_record *r)
{
	uint64_t x = 0;
	if (quoted && f != F_COMM && f != F_EXE)
		return false;
	switch (f) {
	case F_PID:
		if (!read_unsigned(v, n, 10, UINT32_MAX, &x) || x == 0)
			return false;
		r->pid = (uint32_t)x;
		return true;
	case F_UID:
		if (!read_unsigned(v, n, 10, UINT32_MAX, &x))
			return false;
		r->uid = (uint32_t)x;
		r->has_uid = true;
		return true;
	case F_COMM:
		return read_string(v, n, quoted, r->comm, sizeof(r->comm));
	case F_EXE:
		return read_string(v, n, quoted, r->exe, sizeof(r->exe));
	case F_ARCH:
		if (n > 8 || !read_unsigned(v, n, 16, UINT32_MAX, &x))
			return false;
		r->arch = (uint32_t)x;
		return true;
	case F_SYSCALL:
		return read_int32(v, n, &r->syscall);
	case F_CODE:
		if (n < 3 || n > 10 || v[0] != '0' || v[1] != 'x' || !read_unsigned(v + 2, n - 2, 16, UINT32_MAX, &x))
			return false;
		r->code = (uint32_t)x;
		return true;
	case F_SIG:
		return read_int32(v, n, &r->sig);
	case F_COMPAT:
		if (n != 1 || (v[0] != '0' && v[0] != '1'))
			return false;
		r->compat = v[0] == '1';
		return true;
	case F_N:
		break;
	}
	return false;
}

enum sk_scmp_rec_result sk_scmp_record_parse(const char *line, size_t len, struct sk_scmp_record *out)
{
	const char *nl = memchr(line, '\n', len);
	size_t n = nl ? (size_t)(nl - line) : len;
	size_t at = kmsg_prefix(line, n);
	const char *s = line + at;
	size_t left = n - at;
	if (starts(s, left, "audit: type=1326 audit(")) {
		s += strlen("audit: type=1326 audit(");
	} else if (at == 0 && starts(s, left, "type=SECCOMP msg=audit(")) {
		s += strlen("type=SECCOMP msg=audit(");
	} else {
		return SK_SCMP_REC_OTHER;
	}
	const char *end = line + n;
	if (memchr(line, '\0', n))
		return SK_SCMP_REC_BAD;
	/* auditd's enriched format appends interpreted fields after a 0x1d; the kernel's own text ends there */
	const char *gs = memchr(s, 0x1d, (size_t)(end - s));
	if (gs)
		end = gs;

	struct sk_scmp_record r;
	memset(&r, 0, sizeof(r));
	size_t sl = 0;
	while (s + sl < end && ((s[sl] >= '0' && s[sl] <= '9') || s[sl] == '.' || s[sl] == ':'))
		sl++;
	if (sl == 0 || sl >= sizeof(r.stamp) || (size_t)(end - s) < sl + 3 || memcmp(s + sl, "): ", 3) != 0)
		return SK_SCMP_REC_BAD;
	memcpy(r.stamp, s, sl);
	s += sl + 3;

	unsigned seen = 0;
	while (s < end) {
		if (*s == ' ') {
			s++;
			continue;
		}
		const char *k = s;
		while (s < end && ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			s++;
		if (s == k || s == end || *s != '=')
			return SK_SCMP_REC_BAD;
		size_t kl = (size_t)(s - k);
		s++;
		const char *v = s;
		bool quoted = s < end && *s == '"';
		size_t vl;
		if (quoted) {
			v = ++s;
			const char *q = memchr(s, '"', (size_t)(end - s));
			if (!q)
				return SK_SCMP_REC_BAD;
			vl = (size_t)(q - v);
			s = q + 1;
			if (s < end && *s != ' ')
				return SK_SCMP_REC_BAD;
		} else {
			while (s < end && *s != ' ')
				s++;
			vl = (size_t)(s - v);
		}
		for (unsigned f = 0; f < F_N; f++) {
			if (strlen(field_names[f]) != kl || memcmp(field_names[f], k, kl) != 0)
				continue;
			if (seen & (1u << f) || !read_field((enum field)f, v, vl, quoted, &r))
				return SK_SCMP_REC_BAD;
			seen |= 1u << f;
		}
	}
	if ((seen & REQUIRED) != REQUIRED)
		return SK_SCMP_REC_BAD;
	*out = r;
	return SK_SCMP_REC_OK;
}

const char *sk_scmp_record_action(uint32_t code)
{
	switch (code & 0xffff0000u) {
	case 0x80000000u: return "kill_process";
	case 0x00000000u: return "kill_thread";
	case 0x00030000u: return "trap";
	case 0x00050000u: return "errno";
	case 0x7fc00000u: return "user_notif";
	case 0x7ff00000u: return "trace";
	case 0x7ffc0000u: return "log";
	case 0x7fff0000u: return "allow";
	default: return "unknown";
	}
}

const char *sk_scmp_record_arch(uint32_t arch, int32_t syscall)
{
	switch (arch) {
	case SCMP_ARCH_X86_64: return ((uint32_t)syscall & X32_SYSCALL_BIT) && syscall > 0 ? "x32" : "x86_64";
	case SCMP_ARCH_X86: return "x86";
	case SCMP_ARCH_AARCH64: return "aarch64";
	case SCMP_ARCH_ARM: return "arm";
	default: return NULL;
	}
}

/* ---- the pod from /proc/PID/cgroup ---- */

/* 8-4-4-4-12 hex digits, the separators '-' (cgroupfs) or '_' (the systemd driver: '-' is its path
 * separator); written out with '-'. */
static bool read_pod_uid(const char *s, size_t n, char out[37])
{
	if (n < 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? (s[i] != '-' && s[i] != '_') : hexval(s[i]) < 0)
			return false;
		out[i] = dash ? '-' : s[i];
	}
	out[36] = '\0';
	return true;
}

/* A container's segment: "<runtime>-<id>.scope" (systemd) or "<id>" (cgroupfs), id 12..64 hex digits. */
static bool read_container(const char *s, size_t n, char out[65])
{
	static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-", "containerd-", "libpod-" };
	if (n > 6 && !memcmp(s + n - 6, ".scope", 6))
		n -= 6;
	for (size_t i = 0; i < SK_ARRAY_SIZE(prefixes); i++)
		if (starts(s, n, prefixes[i])) {
			s += strlen(prefixes[i]);
			n -= strlen(prefixes[i]);
			break;
		}
	if (n < 12 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0)
			return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/* One cgroup path: the segment that names the pod ("pod<uid>" or "...-pod<uid>.slice" after a kubepods
 * segment), and the container's segment right after it. */
static bool path_pod(const char *p, size_t n, struct sk_scmp_pod *out)
{
	bool kube = false;
	const char *end = p + n;
	while (p < end) {
		const char *seg = p;
		while (p < end && *p != '/')
			p++;
		size_t sl = (size_t)(p - seg);
		if (p < end)
			p++;
		if (sl >= 8 && (starts(seg, sl, "kubepods") || memmem(seg, sl, "-kubepods", 9)))
			kube = true;
		if (!kube || sl < 39)
			continue;
		const char *u = NULL;
		if (starts(seg, sl, "pod"))
			u = seg + 3;
		else {
			const char *m = memmem(seg, sl, "-pod", 4);
			u = m ? m + 4 : NULL;
		}
		size_t ul = u ? sl - (size_t)(u - seg) : 0;
		/* the UID is the segment's end, but for the systemd driver's ".slice" */
		if (ul == 42 && !memcmp(u + 36, ".slice", 6))
			ul = 36;
		if (ul != 36 || !read_pod_uid(u, ul, out->uid))
			continue;
		const char *c = p;
		while (p < end && *p != '/')
			p++;
		if (!read_container(c, (size_t)(p - c), out->container))
			out->container[0] = '\0';
		return true;
	}
	return false;
}

bool sk_scmp_cgroup_pod(const char *text, size_t len, struct sk_scmp_pod *out)
{
	memset(out, 0, sizeof(*out));
	/* cgroup v2's line first (the unified hierarchy is the one the kubelet places pods in when there is
	 * one), then the v1 lines in order */
	for (int pass = 0; pass < 2; pass++) {
		const char *s = text, *end = text + len;
		while (s < end) {
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			const char *le = nl ? nl : end;
			const char *c1 = memchr(s, ':', (size_t)(le - s));
			const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
			bool v2 = c1 && c1 == s + 1 && s[0] == '0' && c2 == c1 + 1;
			if (c2 && v2 == (pass == 0) && path_pod(c2 + 1, (size_t)(le - c2 - 1), out))
				return true;
			memset(out, 0, sizeof(*out));
			s = le + (nl != NULL);
		}
	}
	return false;
}

/* ---- the NDJSON line ---- */

int sk_scmp_record_json(const struct sk_scmp_record *r, const struct sk_scmp_pod *pod, struct sk_strbuf *b)
{
	const char *arch = sk_scmp_record_arch(r->arch, r->syscall);
	uint32_t token = arch && !strcmp(arch, "x32") ? SCMP_ARCH_X32 : r->arch;
	/* libseccomp names a number only on an architecture it knows; NULL otherwise */
	sk_autofree char *name = arch ? seccomp_syscall_resolve_num_arch(token, r->syscall) : NULL;

	(void)sk_strbuf_puts(b, "{\"kind\":\"seccomp\",\"stamp\":");
	(void)sk_json_str_buf(b, r->stamp);
	(void)sk_strbuf_printf(b, ",\"pid\":%" PRIu32, r->pid);
	if (r->has_uid)
		(void)sk_strbuf_printf(b, ",\"uid\":%" PRIu32, r->uid);
	(void)sk_strbuf_puts(b, ",\"comm\":");
	(void)sk_json_str_buf(b, r->comm);
	if (r->exe[0]) {
		(void)sk_strbuf_puts(b, ",\"exe\":");
		(void)sk_json_str_buf(b, r->exe);
	}
	if (arch)
		(void)sk_strbuf_printf(b, ",\"arch\":\"%s\"", arch);
	else
		(void)sk_strbuf_printf(b, ",\"arch\":\"0x%08" PRIx32 "\"", r->arch);
	(void)sk_strbuf_puts(b, ",\"syscall\":");
	if (name)
		(void)sk_json_str_buf(b, name);
	else
		(void)sk_strbuf_puts(b, "null");
	(void)sk_strbuf_printf(b, ",\"syscall_nr\":%" PRId32 ",\"compat\":%s,\"action\":\"%s\",\"code\":\"0x%" PRIx32
			       "\",\"sig\":%" PRId32, r->syscall, r->compat ? "true" : "false",
			       sk_scmp_record_action(r->code), r->code, r->sig);
	if (pod && pod->uid[0])
		(void)sk_strbuf_printf(b, ",\"pod_uid\":\"%s\"", pod->uid);
	if (pod && pod->container[0])
		(void)sk_strbuf_printf(b, ",\"container_id\":\"%s\"", pod->container);
	(void)sk_strbuf_puts(b, "}\n");
	return sk_strbuf_ok(b);
}

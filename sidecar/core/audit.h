/* sidecar/core/audit.h — the audit trail (docs/operating.md, "Reading decisions"; every line is described by
 * docs/audit.schema.json): one NDJSON object per line on stdout. Every line starts with v (the schema
 * version, SK_AUDIT_VERSION), ts (RFC 3339 UTC, ms), event and policy (the content hash of the policy in
 * force, struct sk_policy.content_hash), so a line names the exact policy that decided it.
 *  - proxy decisions (event "conn": an allowed connection, written when it ends; "deny"), and the DNS
 *    filter's denials ("dns"): src, dst, name, proto, rule, decision, reason, bytes_in, bytes_out,
 *    duration_ms (+ binding when the name↔IP check ran, late, request);
 *  - the API gateway's requests (event "api"): api, method, path, status, decision, reason, bytes_in,
 *    bytes_out, duration_ms, without the connection fields;
 *  - policy reloads (event "reload"): previous, trigger, result, reason.
 * Every string is JSON-escaped (the name and reason can come from the agent) and non-ASCII bytes are
 * escaped as \u00XX, so each line is valid JSON whatever the bytes. One writer, one escaper and one set of
 * counters for all of them, and a batch keeps the lines in the order they were emitted. Every deny (and
 * audit-mode would_deny) is also pushed into the denials ring served by the admin port. Each line is one
 * write(2), so lines never interleave. */
#ifndef SK_SIDECAR_AUDIT_H
#define SK_SIDECAR_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "policy/addr.h"

struct sk_denials;

/* The "v" of every line: bumped when a field changes meaning or goes away (adding one does not). */
#define SK_AUDIT_VERSION 1
#define SK_AUDIT_LINE_MAX 4096
#define SK_AUDIT_STR_MAX 300      /* longest source string copied into a line (names are <= 253 bytes) */
#define SK_AUDIT_PATH_MAX 512     /* ... but a gateway path, up to 511 bytes */
/* Room for any string sk_audit_json_str writes: every byte escaped as \u00XX, the quotes, a NUL. */
#define SK_AUDIT_JSON_STR_MAX (SK_AUDIT_STR_MAX * 6 + 3)

struct sk_audit_rec {
	const char *event;          /* "conn" (an allowed connection, written when it ends) | "deny" */
	const struct sk_addr *src;  /* may be NULL → null */
	uint16_t src_port;
	const struct sk_addr *dst;  /* original destination; may be NULL → null */
	uint16_t dst_port;
	const char *name;           /* SNI / Host / bound name; NULL → null */
	const char *proto;          /* proxy: "tls" | "http" | "tcp" | NULL; dns: "udp" | "tcp" */
	const char *qtype;          /* dns: the question's type ("AAAA", "TXT", "TYPE65280"); NULL omits it */
	int rule;                   /* policy rule index; < 0 → null */
	const char *rule_name;      /* the rule's name: when it has one: written as "rule":"NAME" instead of
	                             * the index (stable across edits above it); NULL writes the index */
	const char *decision;       /* "allow" | "deny" | "would_deny" (mode audit) */
	const char *reason;         /* short token: "rule", "no_match", "loop", "peek_timeout", ... */
	const char *binding;        /* "ok" | "resolved" | "mismatch" | "unchecked"; NULL omits the field */
	bool late;                  /* the client's first flight came after a silent start (server-first
	                             * connect): "late":true; false omits the field */
	bool inspected;             /* the proxy terminated the agent's TLS (an inspect: true rule) and read
	                             * it: "inspected":true; false omits the field */
	uint32_t request;           /* plain HTTP: the 1-based request the line is about when it is not the
	                             * first (a later request denied): "request":N; 0 omits the field */
	uint64_t bytes_in;          /* upstream → agent */
	uint64_t bytes_out;         /* agent → upstream (replayed peeked bytes included) */
	uint64_t duration_ms;
	/* The gateway's request (event "api"). api != NULL makes the line a gateway line: api, method, path
	 * (NULL → null) and status are written after event, and src, dst, name, proto and rule are left out
	 * (they describe a proxied connection). NULL, as every proxy record leaves it, changes nothing. */
	const char *api;            /* the api name from the target; "" when it named none */
	const char *method;         /* also on a proxy line: the plain-HTTP request its request rules denied */
	const char *path;           /* query values dropped (sk_gw_audit_path); cut at SK_AUDIT_PATH_MAX */
	int status;                 /* the HTTP status the agent got */
	/* A policy reload (event "reload"): reload != NULL makes the line a reload line: previous, trigger
	 * and result are written after policy (which, as on every line, is the hash in force after it), and
	 * reason; nothing of a connection. */
	const struct sk_audit_reload *reload;
	/* A guardrail narrowing (event "guardrail"): guardrail != NULL makes the line one: guardrails, change
	 * and reason (narrowed | kept); nothing of a connection. */
	const struct sk_audit_guardrail *guardrail;
};

struct sk_audit_guardrail {
	const char *guardrails;     /* content hash of the guardrails file */
	const char *change;         /* "FILE:LINE:COL: what exceeded which guardrail: what was done" */
};

struct sk_audit_reload {
	const char *previous;       /* content hash in force before */
	const char *trigger;        /* "sighup" | "file_changed" */
	const char *result;         /* "ok" | "failed" (the reloads metric's word) */
};

#define SK_AUDIT_BATCH_MAX 65536

struct sk_audit {
	int fd;                     /* borrowed; usually STDOUT_FILENO */
	char policy[17];            /* content hash of the policy in force ("" = none yet: written as null) */
	struct sk_denials *denials; /* borrowed; may be NULL */
	uint64_t lines, write_errors;
	/* Batching (sk_audit_batch): whole lines collected during one loop round, written by
	 * sk_audit_flush at its end — one write(2) a round instead of one a connection. */
	bool batch;
	size_t blen;
	char bbuf[SK_AUDIT_BATCH_MAX];
};

void sk_audit_init(struct sk_audit *a, int fd, struct sk_denials *denials);
/* The policy every later line names (its content_hash); the sidecar sets it at start and on every swap. */
void sk_audit_set_policy(struct sk_audit *a, const char *hash);
/* Formats one object without a trailing newline into buf (cap >= SK_AUDIT_LINE_MAX is enough for every
 * line the proxy and the gateway write: strings are cut to bounded lengths before escaping, and a gateway
 * line has no name; a record with every string at its cap would be replaced by an "audit_line_cut"
 * object). policy: the hash the line names (NULL or "" → null). Returns its length. */
size_t sk_audit_format(const struct sk_audit_rec *r, const char *policy, const struct timespec *wall, char *buf,
		       size_t cap);
/* Formats with the current wall clock, writes the line, pushes denials. Never fails the caller: a
 * failed write is counted in write_errors (the connection decision stands either way). */
void sk_audit_emit(struct sk_audit *a, const struct sk_audit_rec *r);
/* From now on lines are collected and written by sk_audit_flush (which the sidecar runs at the end of
 * every loop round and at exit); a write only ever carries whole lines. Without it every line is
 * written at once. */
void sk_audit_batch(struct sk_audit *a);
void sk_audit_flush(struct sk_audit *a);
/* s (its first SK_AUDIT_STR_MAX bytes) as a JSON string with its quotes, escaped as in audit lines: '"'
 * and '\\' with a backslash, control bytes and every byte >= 0x7f as \u00XX, so the result is ASCII, valid
 * JSON and valid UTF-8 whatever s holds. Writes at most cap - 1 bytes and a NUL (cap 0: nothing) and
 * returns the full length, as snprintf does; cap >= SK_AUDIT_JSON_STR_MAX is always enough. For other
 * JSON writers (the gateway's error bodies). */
size_t sk_audit_json_str(char *buf, size_t cap, const char *s);
/* "a.b.c.d:port" or "[v6]:port". */
void sk_audit_endpoint(const struct sk_addr *a, uint16_t port, char out[SK_ADDR_STRLEN + 8]);

#endif

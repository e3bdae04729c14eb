/* sidecar/audit.h — the audit trail (DESIGN.md §5.5): one NDJSON object per line on stdout for every
 * proxy decision, with the fields ts (RFC 3339 UTC, ms), event, src, dst, name, proto, rule, decision,
 * reason, bytes_in, bytes_out, duration_ms (+ binding when the name↔IP check ran). Every string is
 * JSON-escaped (the name and reason can come from the agent) and non-ASCII bytes are escaped as \u00XX,
 * so each line is valid JSON whatever the bytes. Every deny (and audit-mode would_deny) is also pushed
 * into the denials ring served by the admin port. Each line is one write(2), so lines never interleave. */
#ifndef SK_SIDECAR_AUDIT_H
#define SK_SIDECAR_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "policy/addr.h"

struct sk_denials;

#define SK_AUDIT_LINE_MAX 4096

struct sk_audit_rec {
	const char *event;          /* "conn" (an allowed connection, written when it ends) | "deny" */
	const struct sk_addr *src;  /* may be NULL → null */
	uint16_t src_port;
	const struct sk_addr *dst;  /* original destination; may be NULL → null */
	uint16_t dst_port;
	const char *name;           /* SNI / Host / bound name; NULL → null */
	const char *proto;          /* "tls" | "http" | "h2c" | "tcp" | NULL */
	int rule;                   /* policy rule index; < 0 → null */
	const char *decision;       /* "allow" | "deny" | "would_deny" (mode audit) */
	const char *reason;         /* short token: "rule", "no_match", "loop", "peek_timeout", ... */
	const char *binding;        /* "ok" | "resolved" | "mismatch" | "unchecked"; NULL omits the field */
	bool late;                  /* the client's first flight came after a silent start (server-first
	                             * connect): "late":true; false omits the field */
	uint32_t request;           /* plain HTTP: the 1-based request the line is about when it is not the
	                             * first (a later request denied): "request":N; 0 omits the field */
	uint64_t bytes_in;          /* upstream → agent */
	uint64_t bytes_out;         /* agent → upstream (replayed peeked bytes included) */
	uint64_t duration_ms;
};

#define SK_AUDIT_BATCH_MAX 65536

struct sk_audit {
	int fd;                     /* borrowed; usually STDOUT_FILENO */
	struct sk_denials *denials; /* borrowed; may be NULL */
	uint64_t lines, write_errors;
	/* Batching (sk_audit_batch): whole lines collected during one loop round, written by
	 * sk_audit_flush at its end — one write(2) a round instead of one a connection. */
	bool batch;
	size_t blen;
	char bbuf[SK_AUDIT_BATCH_MAX];
};

void sk_audit_init(struct sk_audit *a, int fd, struct sk_denials *denials);
/* Formats one object without a trailing newline into buf (cap >= SK_AUDIT_LINE_MAX is always enough:
 * strings are cut to bounded lengths before escaping). Returns its length. */
size_t sk_audit_format(const struct sk_audit_rec *r, const struct timespec *wall, char *buf, size_t cap);
/* Formats with the current wall clock, writes the line, pushes denials. Never fails the caller: a
 * failed write is counted in write_errors (the connection decision stands either way). */
void sk_audit_emit(struct sk_audit *a, const struct sk_audit_rec *r);
/* From now on lines are collected and written by sk_audit_flush (which the sidecar runs at the end of
 * every loop round and at exit); a write only ever carries whole lines. Without it every line is
 * written at once. */
void sk_audit_batch(struct sk_audit *a);
void sk_audit_flush(struct sk_audit *a);
/* "a.b.c.d:port" or "[v6]:port". */
void sk_audit_endpoint(const struct sk_addr *a, uint16_t port, char out[SK_ADDR_STRLEN + 8]);

#endif

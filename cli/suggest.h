/* cli/suggest.h — `stockade-policy suggest`: from the sidecar's audit lines (NDJSON, docs/operating.md) to
 * the egress rules that would have allowed what was denied. The fastest way from `mode: audit` to an
 * `enforce` policy: run the agent in audit mode, feed its log here, review the rules.
 *
 * Which lines count: proxy lines (event conn or deny) whose decision is would_deny or deny for a reason a
 * rule changes — no_match (a host rule, or a cidr rule when no name was seen) and private (a cidr rule:
 * private addresses are allowed only by a cidr rule that names them). Every other reason (link_local:
 * metadata endpoints are never suggested; malformed traffic, limits, name/address mismatches) is counted
 * and reported as a comment, never turned into a rule. DNS lines are not rules (the connection that
 * follows carries the port); a name seen only there is listed in a comment.
 *
 * Grouping: one rule per (host or address, protocol), the ports of every line merged. A name that is an
 * IP literal (an SNI or Host header naming an address) never becomes a host rule: it becomes a cidr rule
 * (/32 or /128) with a comment saying why. Output order is stable: host rules by name, then cidr rules by
 * address, each by protocol.
 *
 * Request rules (docs/policy.md "Request rules"): a request_denied line (a request no request rule of its
 * rule allowed) is not a new egress rule but an entry to add to that rule's `requests`: one per (rule,
 * method), the paths of every line merged (already normalised by the sidecar), written as YAML comments
 * naming the rule, and as "requests" in JSON. A request_bad_path line (a path servers read differently)
 * is never suggested.
 *
 * Seccomp refusals (`stockade-policy seccomp-log` lines, "kind":"seccomp"): each syscall named is a
 * `seccomp.allow` entry when the generator takes it (it refuses the never-allowed ones and those allowed
 * only with argument conditions): those are listed in a comment with the generator's reason, never
 * suggested. A line whose syscall has no name (another architecture) is counted as skipped. */
#ifndef SK_CLI_SUGGEST_H
#define SK_CLI_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/addr.h"

struct sk_suggest_rule {
	char *host;              /* a host rule: the normalised name; NULL for a cidr rule */
	struct sk_cidr cidr;     /* a cidr rule: one address (/32, /128) */
	char proto[8];           /* "tls", "http", "tcp" */
	uint16_t *ports;         /* sorted, unique */
	size_t n_ports;
	unsigned count;          /* lines folded into this rule */
	const char *why;         /* static: the comment a cidr rule carries, NULL for a host rule */
};

/* Paths a rule's request rules denied for one method: a `requests` entry to add to the rule. */
struct sk_suggest_req {
	char *rule;              /* the rule's label on the line: its name, or its index as text */
	char *host;              /* the name of the first line, for the comment */
	char method[16];
	char **paths;            /* sorted, unique */
	size_t n_paths;
	unsigned count;          /* lines folded into it */
};

struct sk_suggest_skip {
	char reason[40];
	unsigned count;
};

/* One syscall the seccomp lines named. */
struct sk_suggest_sys {
	char *name;
	unsigned count;
	char *refused;           /* NULL: a seccomp.allow entry; else why the generator refuses it (finish) */
};

struct sk_suggest {
	struct sk_suggest_rule *rules;
	size_t n_rules;
	struct sk_suggest_skip *skips;  /* denials no rule changes, by reason */
	size_t n_skips;
	struct sk_suggest_req *reqs;    /* request_denied lines, by (rule, method) */
	size_t n_reqs;
	char **dns_only;         /* names denied in DNS lines: printed when no rule covers them */
	size_t n_dns_only;
	struct sk_suggest_sys *sys;     /* seccomp refusals by syscall, sorted by name after finish */
	size_t n_sys;
	unsigned lines, used, not_json, not_denials;
};

/* Reads one line (no newline needed; blank lines are ignored). Returns 0, or -ENOMEM. */
int sk_suggest_line(struct sk_suggest *s, const char *line, size_t len);
/* Reads every line of f. 0, -ENOMEM or -EIO. */
int sk_suggest_read(struct sk_suggest *s, FILE *f);
/* Sorts the rules into output order and runs each syscall through the generator (call once, after the last
 * line). 0 or -ENOMEM. */
int sk_suggest_finish(struct sk_suggest *s);
/* The rules as a YAML `egress:` list with comments (owned string, NULL on out of memory). */
char *sk_suggest_yaml(const struct sk_suggest *s);
/* The same as JSON: {"egress": [...], "skipped": {...}, "dnsOnly": [...], "lines": N, "used": N}, and
 * "seccomp": {"allow": [...], "refused": {NAME: why}} when seccomp lines were read. */
char *sk_suggest_json(const struct sk_suggest *s);
void sk_suggest_free(struct sk_suggest *s);

#endif

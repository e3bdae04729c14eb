/* policy/policy.h — the policy model: one immutable snapshot of a loaded, validated, normalised policy
 * (docs/policy.md). Owns: the model types, the load entry points (load.c: YAML, JSON, forge-supervisor
 * egress_allowlist.json), freeing (build.c), the model as text and the netns-part hash (format.c).
 * Diagnostics with file:line:col are diag.h's, the matcher match.h's, domain names domain.h's,
 * addresses and CIDRs addr.h's.
 *
 * Ownership: sk_policy_load_* returns an owned snapshot; free it with sk_policy_free(). Everything reached
 * from a snapshot is owned by it and never mutated after load (reload swaps the whole snapshot). */
#ifndef SK_POLICY_POLICY_H
#define SK_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "policy/addr.h"
#include "policy/diag.h"

enum sk_mode { SK_MODE_ENFORCE = 0, SK_MODE_AUDIT };

/* Protocol of a rule (what it allows) and of a connection (what was seen). A rule of protocol
 * ANY matches every connection; TCP matches every TCP connection (tls, http or other); TLS only a TLS
 * ClientHello; HTTP only HTTP/1.x; UDP only UDP. */
enum sk_proto { SK_PROTO_ANY = 0, SK_PROTO_TLS, SK_PROTO_HTTP, SK_PROTO_TCP, SK_PROTO_UDP };

enum sk_rule_kind { SK_RULE_HOST = 0, SK_RULE_CIDR };

enum sk_dns_deny { SK_DNS_DENY_NXDOMAIN = 0, SK_DNS_DENY_REFUSED };

enum sk_loopback { SK_LOOPBACK_ALLOW = 0, SK_LOOPBACK_DENY, SK_LOOPBACK_PORTS };

enum sk_policy_format { SK_FORMAT_YAML = 0, SK_FORMAT_JSON, SK_FORMAT_FORGE };

/* Where a value came from, for messages and `explain`. line/col are 1-based; 0 = unknown. */
struct sk_pos {
	unsigned line, col;
};

/* An exfiltration budget (docs/policy.md "Budgets"): how much one rule may carry per window, counted per
 * rule (a wildcard rule's subdomains share one budget) in a fixed window that starts at the rule's first
 * use. A limit of 0 means that dimension is not limited. window_ms == 0: no budget at all. */
struct sk_budget {
	uint64_t sent;         /* bytes agent → upstream (the exfiltration direction) */
	uint64_t received;     /* bytes upstream → agent */
	uint64_t connections;  /* connections accepted under the rule */
	uint64_t queries;      /* DNS queries sent upstream for names under the rule (wildcard rules only) */
	uint64_t window_ms;    /* 1 s .. 24 h */
	bool from_default;     /* copied from budgets.default (the rule has no budget: of its own) */
};
/* Rules with a budget, at most (the sidecar's counter table has one entry each: docs/policy.md). */
#define SK_BUDGET_MAX_RULES 4096
#define SK_BUDGET_MAX_WINDOW_MS (24ull * 3600 * 1000)

struct sk_rule {
	enum sk_rule_kind kind;
	char *host;            /* HOST: normalised (lower case, no trailing dot, A-labels); for a wildcard
	                        * the suffix WITHOUT "*." (e.g. "githubusercontent.com") */
	bool wildcard;         /* HOST: "*.suffix" — any subdomain of suffix, never the apex itself */
	struct sk_cidr cidr;   /* CIDR: network address (host bits zero) + prefix */
	uint16_t *ports;       /* sorted, unique; n_ports == 0 means any port */
	size_t n_ports;
	enum sk_proto proto;
	bool direct;           /* CIDR only: compiled into the kernel fast path (nft sets), bypasses the proxy */
	struct sk_pos pos;     /* position of the rule's mapping in the file */
	struct sk_budget budget;  /* window_ms == 0: none (own, or budgets.default where it applies) */
	char *name;            /* optional `name:` ([a-z0-9-]{1,63}, unique), NULL if unset: the stable rule
	                        * label of metrics and audit lines (sk_rule_label) */
	bool inspect;          /* host rules: TLS is to be terminated to read its requests (requests.h) */
	struct sk_requests *requests;  /* owned; NULL: no request rules, every request on an allowed
	                                * connection passes (policy/requests.h) */
};

struct sk_requests;

struct sk_api {
	char *name;            /* [a-z0-9-]{1,63}, unique */
	char *upstream;        /* https URL without trailing slash */
	char *header_name;     /* HTTP field name (token) */
	char *value_file;      /* path of the secret header value */
	char *caller_token_file; /* optional, NULL if unset */
	char *ca_file;         /* optional, NULL = system CA bundle */
	double rate;           /* requests per second; 0 = unlimited */
	double burst;          /* bucket size; 0 = max(1, rate) */
	char **methods;        /* upper-case; n_methods == 0 = any */
	size_t n_methods;
	char **path_prefixes;  /* each starting with '/'; n == 0 = any */
	size_t n_path_prefixes;
	struct sk_pos pos;
};

struct sk_policy_dns {
	char **upstream;       /* "resolv.conf" or IP literals with optional port ("10.0.0.10", "[fd00::a]:53") */
	size_t n_upstream;
	enum sk_dns_deny deny;
	unsigned max_query_length;  /* 1..253, default 253 */
	uint16_t *allow_types;      /* qtype numbers, sorted, unique */
	size_t n_allow_types;
};

struct sk_policy_seccomp {
	char **allow;          /* extra syscalls to allow; the loader checks the spelling only, the seccomp
	                        * generator whether each exists and may be allowed (`stockade-policy check`) */
	size_t n_allow;
	char **deny;           /* extra syscalls to deny */
	size_t n_deny;
	struct sk_pos *allow_pos, *deny_pos;  /* where each name is written, for the generator's errors */
};

/* tls: what the proxy accepts in a ClientHello beyond the strict default. */
struct sk_policy_tls {
	char *upstream_ca_file; /* tls.upstreamCAFile: the PEM bundle inspected connections verify servers
	                         * against (NULL: the system's); owned */
	bool ech_grease_allow; /* tls.echGrease: allow — a hello with an encrypted_client_hello extension
	                        * passes when its outer SNI is allowed and bound (default false: deny) */
};

struct sk_ports {
	uint16_t proxy, dns, admin, api;   /* defaults 15001, 15053, 15000, 15080; pairwise distinct */
};

struct sk_matcher;  /* match.h; built by the loader, owned by the policy */

struct sk_policy {
	char *source;          /* file path it was loaded from ("<buffer>" for in-memory) */
	char content_hash[17]; /* FNV-1a 64 of the bytes loaded, 16 lower-case hex digits: names this policy
	                        * in every audit line, the reload log and stockade_policy_info */
	enum sk_policy_format format;
	int version;           /* 1 */
	enum sk_mode mode;
	uint32_t agent_uid;    /* default 1000; != 0, != sidecar_uid */
	uint32_t sidecar_uid;  /* default 1337; != 0 */
	uint32_t *exempt_uids; /* sorted, unique; none may be 0, agent or sidecar */
	size_t n_exempt_uids;
	struct sk_ports ports;
	struct sk_rule *rules; /* in file order: first match wins */
	size_t n_rules;
	struct sk_policy_dns dns;
	bool block_private;    /* default true */
	enum sk_loopback loopback;  /* default allow */
	uint16_t *loopback_ports;   /* LOOPBACK_PORTS: sorted, unique */
	size_t n_loopback_ports;
	struct sk_api *apis;
	size_t n_apis;
	struct sk_policy_seccomp seccomp;
	struct sk_policy_tls tls;
	struct sk_budget budget_default;  /* budgets.default; window_ms == 0: none. Already copied into every
	                                   * proxied rule without a budget of its own (from_default) */
	struct sk_matcher *matcher; /* owned; never NULL in a loaded policy (unless SK_LOAD_NO_MATCHER) */
	/* Where mode, blockPrivate and exemptUids are written ({0, 0}: not written, the default): the guardrails'
	 * messages (guardrails.h) name the policy's position as well as the guardrail's. */
	struct sk_pos mode_pos, block_private_pos, exempt_pos;
	char **import_notes;   /* forge import: one line per mapped field, for `check` output */
	size_t n_import_notes;
};

/* Loads and validates a policy. Format: forced by `format` unless it is -1, in which case it is
 * detected (JSON if the first non-blank byte is '{', forge shape if a JSON object has any of the keys
 * "profile", "allowed_domains", "all_domains", "tool_domains", "allow_private_ips"; YAML otherwise).
 * On failure returns -EINVAL (or -errno for I/O) and appends every error found to diags (not only the
 * first); *out stays NULL. On success *out is an owned snapshot with the matcher built. A path of "-" reads
 * standard input to its end, named "<stdin>" in diagnostics and in the snapshot's source. */
SK_MUST_USE int sk_policy_load_file(const char *path, int format, struct sk_policy **out, struct sk_diags *diags);
SK_MUST_USE int sk_policy_load_buffer(const char *name, const char *buf, size_t len, int format,
			  struct sk_policy **out, struct sk_diags *diags);
void sk_policy_free(struct sk_policy *p);

/* Load flags (added by the loaders; the plain entry points use 0). */
enum sk_load_flags {
	SK_LOAD_NO_FILE_CHECKS = 1 << 0,   /* skip the readability check of apis' valueFile/callerToken/caFile
	                                    * (fuzzers, unit tests, checking a policy off-node) */
	SK_LOAD_NO_MATCHER = 1 << 1,       /* leave matcher NULL (every sk_match_* then fails closed): for
	                                    * stockade-init, which programs nftables and never matches a name;
	                                    * building it was a twentieth of a 10 000-rule init */
	SK_LOAD_NO_CONTENT_HASH = 1 << 2,  /* leave content_hash empty: for stockade-init, which names nothing by
	                                    * it (its marker carries the netns hash); hashing a 700 KB policy a
	                                    * byte at a time was 4M instructions */
};
SK_MUST_USE int sk_policy_load_file_ex(const char *path, int format, unsigned flags, struct sk_policy **out,
			   struct sk_diags *diags);
SK_MUST_USE int sk_policy_load_buffer_ex(const char *name, const char *buf, size_t len, int format, unsigned flags,
			     struct sk_policy **out, struct sk_diags *diags);
/* One rule as text, e.g. "host api.github.com ports [443]", "host *.example.com ports any protocol tls",
 * "cidr 10.96.0.0/12 ports [8125] protocol udp direct". Truncates to outsz. Returns out. */
char *sk_rule_format(const struct sk_rule *r, char *out, size_t outsz);

/* A budget as text, e.g. "sent 10Mi received 2Gi connections 500 window 10m" (sizes in the largest
 * binary unit that divides them exactly). "none" when b has no window. Truncates to outsz. Returns out. */
char *sk_budget_format(const struct sk_budget *b, char *out, size_t outsz);

/* Hash of the netns part of the policy (UIDs, ports, loopback, exemptUids, direct and udp rules), as 16
 * lower-case hex digits + NUL. Stable across processes and versions of the same policy content; the init
 * writes it into its marker and the sidecar compares it (readiness, reload refusal). */
void sk_policy_netns_hash(const struct sk_policy *p, char out[17]);

/* The rule label metrics and audit lines carry for rule index idx of p: the rule's name when it has one,
 * else its index as decimal text; NULL for idx < 0 (no rule decided). Points into p or into buf. */
const char *sk_rule_label(const struct sk_policy *p, int idx, char buf[24]);

const char *sk_proto_name(enum sk_proto p);   /* "any", "tls", ... */
const char *sk_mode_name(enum sk_mode m);

#endif

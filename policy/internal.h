/* policy/internal.h — private to the policy library's loaders (diag.c, tree.c, load_yaml.c, load_json.c,
 * tree_get.c, build.c, validate*.c, forge.c, load.c; and tests). Both text formats are first turned into
 * the same small position-annotated tree (mapping / sequence / scalar, each with line:col), so one
 * validator serves YAML and JSON and every message carries the position of the key or value it is about.
 *
 * Ownership: a tree returned by a loader is owned by the caller (sk_node_free). Nodes own their text and
 * children. The load context borrows the file name and the diags it appends to.
 *
 * The layers, each calling only those below it: diag.c (the diagnostics, the error counter, quoting) <
 * tree.c (nodes) < load_yaml.c, load_json.c (text → tree) and tree_get.c (typed reads of nodes, with
 * messages) < build.c (defaults, adding rules, freeing) < validate_<section>.c < validate.c (the walk)
 * and forge.c (tree → model) < load.c (the entry points). The validator's own declarations are in
 * validate-internal.h. */
#ifndef SK_POLICY_INTERNAL_H
#define SK_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"

/* Deeper documents are refused before recursion can exhaust the stack (fuzzers find this first). */
#define SK_TREE_MAX_DEPTH 64
/* Bounds the work a hostile file can cause; no sane policy comes close. */
#define SK_TREE_MAX_NODES 1000000
/* Diagnostics kept per load (later ones are counted, not stored). */
#define SK_MAX_ERRORS 100
/* Files larger than this are refused as unreadable (EFBIG). */
#define SK_POLICY_MAX_BYTES (16u << 20)

/* A load flag for tests only (tests include this header): every fast path of the loaders off. The YAML
 * text goes to libyaml's event parser, and the validator checks each value through its general,
 * message-writing functions instead of its quiet checks first; a suite loads the same text both ways and
 * compares the models and the messages. Far above enum sk_load_flags' bits. */
#define SK_LOAD_GENERAL_PATHS (1u << 24)

enum sk_node_kind { SK_NODE_MAP = 0, SK_NODE_SEQ, SK_NODE_SCALAR };

/* What a scalar is, after YAML core-schema resolution of plain scalars or from the JSON token type. */
enum sk_scalar_kind { SK_SCALAR_STR = 0, SK_SCALAR_NUM, SK_SCALAR_BOOL, SK_SCALAR_NULL };

struct sk_node {
	enum sk_node_kind kind;
	enum sk_scalar_kind skind;   /* SCALAR only */
	unsigned line, col;          /* 1-based start of the node (for a map entry's key: the key) */
	char *text;                  /* SCALAR: NUL-terminated text (JSON strings decoded; numbers raw) */
	struct sk_node **items;      /* SEQ: n items; MAP: 2*n, key then value */
	size_t n, cap;
	struct sk_arena *pool;       /* non-NULL: node, text and items live in this arena (tree.c) */
	bool owns_pool;              /* the root of a pooled tree: freeing it frees the whole arena */
};

struct sk_load_ctx {
	const char *file;            /* borrows: name used in messages */
	struct sk_diags *diags;      /* borrows: every error is appended here */
	unsigned flags;              /* enum sk_load_flags */
	size_t n_errors;             /* errors added through this context */
	size_t n_nodes;              /* nodes built so far (SK_TREE_MAX_NODES) */
	struct sk_arena *arena;      /* owned while a loader builds a tree: sk_node_new allocates from it */
	struct sk_node *node_next, *node_end;  /* the arena's current block of unused nodes (tree.c) */
};

/* diag.c. Adds a diagnostic at line:col of the file being loaded and counts it; past SK_MAX_ERRORS only
 * counts (one line says reporting stopped). */
void sk_ctx_error(struct sk_load_ctx *c, unsigned line, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Writes a printable, quoted, length-bounded rendering of s into out (never raw control bytes: names
 * from a hostile file end up in logs and terminals). Returns out. */
char *sk_quote(const char *s, char *out, size_t outsz);
#define SK_QUOTE_MAX 96
/* Sorts the diagnostics from index `from` on (one load's) by position, ties in insertion order. */
void sk_diags_sort_from(struct sk_diags *d, size_t from);

/* tree.c. Returns owned node or NULL (out of memory). Between sk_tree_begin and sk_tree_end the nodes,
 * their text and their item arrays come from one arena (a long policy is ~10 nodes per rule; one malloc
 * and one free each would be most of the load). Freeing a pooled node other than the root does nothing;
 * freeing the root frees the whole tree at once. */
struct sk_node *sk_node_new(struct sk_load_ctx *c, enum sk_node_kind kind, unsigned line, unsigned col);
/* Starts an arena for the tree about to be built (without one, nodes are malloc'd one by one). 0 or -ENOMEM. */
int sk_tree_begin(struct sk_load_ctx *c);
/* Ends it: root (may be NULL, e.g. after a syntax error) takes the arena over and returns it; with NULL
 * the arena and every node in it are freed, so no node from it may be used afterwards. */
struct sk_node *sk_tree_end(struct sk_load_ctx *c, struct sk_node *root);
/* size bytes from the tree's arena (between sk_tree_begin and sk_tree_end), freed with it; NULL when out
 * of memory or no tree is being built. */
void *sk_tree_alloc(struct sk_load_ctx *c, size_t size);
/* Sets n's text to a NUL-terminated copy of s[0..len) (from the node's arena when pooled). 0 or -ENOMEM. */
int sk_node_set_text(struct sk_node *n, const char *s, size_t len);
/* Appends child (taking ownership, also on failure). Returns 0 or -ENOMEM. */
int sk_node_push(struct sk_node *parent, struct sk_node *child);
void sk_node_free(struct sk_node *n);
/* MAP: the value of the first entry whose key is the scalar `key`, or NULL. Borrowed. */
struct sk_node *sk_node_get(const struct sk_node *map, const char *key);
/* "a mapping", "a list", "a string 'x'", "a number 12", "a boolean", "null": for "got ..." messages. */
const char *sk_node_describe(const struct sk_node *n, char *buf, size_t bufsz);

/* load_yaml.c / load_json.c: parse text into a tree. On a syntax error they add the diagnostic and
 * return NULL. The returned root may be any node kind; the validator checks it is a mapping. */
struct sk_node *sk_yaml_parse(struct sk_load_ctx *c, const char *buf, size_t len);
/* The two halves of sk_yaml_parse, for tests: the plain-block fast path (returns 1 and the tree, or 0
 * having added nothing when the text is outside the corner of YAML it reads) and libyaml's event parser. */
int sk_yaml_parse_simple(struct sk_load_ctx *c, const char *buf, size_t len, struct sk_node **out);
struct sk_node *sk_yaml_parse_events(struct sk_load_ctx *c, const char *buf, size_t len);
struct sk_node *sk_json_parse(struct sk_load_ctx *c, const char *buf, size_t len);

/* validate.c: fills p (already holding defaults) from the native-format tree; errors go to c. */
void sk_validate_policy(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p);
/* forge.c: fills p from a forge-supervisor egress_allowlist.json tree, recording import notes. */
void sk_forge_import(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p);
/* forge.c: does this JSON object look like a forge-supervisor file (policy.h's detection rule)? */
bool sk_forge_detect(const struct sk_node *root);

/* build.c: docs/policy.md's defaults (dns.upstream and dns.allowTypes excepted: the validator fills
 * those when absent, so that a present key replaces the default instead of adding to it). */
void sk_policy_set_defaults(struct sk_policy *p);
/* build.c: fills dns.upstream [resolv.conf] and dns.allowTypes [A AAAA CNAME HTTPS SVCB] where unset.
 * 0 or -ENOMEM. */
int sk_policy_dns_defaults(struct sk_policy *p);
/* build.c: grows p->rules by one zeroed rule; returns it or NULL (reported as out of memory). */
struct sk_rule *sk_policy_add_rule(struct sk_load_ctx *c, struct sk_policy *p);
/* build.c: appends a formatted import note to p (forge). */
void sk_policy_add_note(struct sk_policy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* build.c, for the validator and forge.c. Appends a host rule for `pattern` ("name" or "*.suffix");
 * validates and normalises the name and reports errors at node n under `path`. Ports are copied.
 * Returns 0, or <0 after reporting. */
int sk_add_host_rule(struct sk_load_ctx *c, struct sk_policy *p, const struct sk_node *n, const char *path,
		     const uint16_t *ports, size_t n_ports);
/* build.c, for the validator and forge.c. Parses a CIDR string, reporting (at n, under path) host bits
 * set with the network that was meant. Returns 0 or <0 after reporting. */
int sk_parse_cidr_at(struct sk_load_ctx *c, const struct sk_node *n, const char *path, struct sk_cidr *out);

#endif

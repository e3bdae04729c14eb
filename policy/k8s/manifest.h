/* policy/k8s/manifest.h — Kubernetes manifests as cJSON trees: a YAML or JSON stream in (every document, in
 * order), block YAML or JSON out. What `stockade-policy inject` reads and writes around inject.h.
 *
 * YAML is read the way kubectl reads it (sigs.k8s.io/yaml, YAML 1.1): plain scalars resolve to null, bool
 * (true/false/yes/no/on/off/y/n), int (decimal, 0x hex, leading-0 octal), float, else string; quoted and
 * !!str-tagged ones stay strings. Refused with file:line:col: syntax errors, aliases and merge keys (not
 * expanded: refusing is simpler than bounding them), duplicate keys, non-scalar keys, integers beyond 2^53
 * (cJSON holds doubles), nesting deeper than SK_MANIFEST_MAX_DEPTH. Written YAML reads back (by this reader
 * and by kubectl) as the same tree. */
#ifndef SK_POLICY_MANIFEST_H
#define SK_POLICY_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;
struct sk_err;

#define SK_MANIFEST_MAX_DEPTH 64
#define SK_MANIFEST_MAX_NODES 1000000

/* Parses buf (YAML stream, or JSON when its first non-blank byte is '{' or '['; several JSON values may
 * follow each other) into *out, a new cJSON array holding one item per non-empty document (owned by the
 * caller). *is_json says which reader ran. `name` is used in messages ("app.yaml:3:5: ..."). 0, -EINVAL
 * (err filled) or -ENOMEM. */
int sk_manifest_parse(const char *name, const char *buf, size_t len, struct cJSON **out, bool *is_json,
		      struct sk_err *err);

/* What names a document: its kind, metadata.name and metadata.namespace, each NULL when absent or not a
 * string (borrowed from doc). The one reader of them, for messages and lookups over a stream. */
struct sk_manifest_id {
	const char *kind, *name, *ns;
};
void sk_manifest_id(const struct cJSON *doc, struct sk_manifest_id *id);

/* One document as block YAML (no leading "---"), or NULL on allocation failure. Returns owned. */
char *sk_manifest_yaml(const struct cJSON *doc);

#endif

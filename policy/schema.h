/* policy/schema.h — the shape of a native policy as data: every mapping's keys, each key's type and
 * bounds, enums and patterns. The validator (validate*.c) takes its key lists and enum names from these
 * tables, and `stockade-policy schema` emits them as a JSON Schema (docs/policy.schema.json, and the
 * chart's values.schema.json policy.spec), so an editor, `helm lint` and `stockade-policy check` agree on
 * which keys exist. The schema is the shape only: cross-field rules (host names that are IP literals,
 * direct rules on metadata ranges, ports that collide, unique names) stay the validator's, so a document
 * the schema accepts may still fail `check`, never the other way round.
 *
 * Everything here is static and immutable. */
#ifndef SK_POLICY_SCHEMA_H
#define SK_POLICY_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sk_schema_type {
	SK_SCH_OBJ = 0,   /* a mapping: obj */
	SK_SCH_LIST,      /* a sequence of item (obj / values / bounds describe the items) */
	SK_SCH_STR,       /* min/max bound the length (max 0: none), pattern when set */
	SK_SCH_INT,       /* a whole number in min..max */
	SK_SCH_NUM,       /* a number in min..max */
	SK_SCH_BOOL,
	SK_SCH_ENUM,      /* one of values */
	SK_SCH_LOOPBACK,  /* "allow", "deny" or a list of ports (loopback:) */
	SK_SCH_SIZE,      /* a byte count: a whole number, or a string "<n>Ki|Mi|Gi|Ti" (budgets) */
	SK_SCH_DURATION,  /* a string "<n>s|m|h" (budgets) */
};

struct sk_schema_obj;

struct sk_schema_field {
	const char *key;
	enum sk_schema_type type;
	enum sk_schema_type item;          /* LIST: the items' type */
	const struct sk_schema_obj *obj;   /* OBJ, or LIST of OBJ */
	const char *const *values;         /* ENUM (or LIST of ENUM): NULL-terminated */
	long long min, max;                /* INT/NUM range; STR length; LIST: min = minItems */
	long long item_min, item_max;      /* LIST of INT/STR: the items' range / length */
	const char *pattern;               /* STR (or LIST of STR): ECMA-262 regex the value must match */
	bool required;
	const char *desc;
};

struct sk_schema_obj {
	const char *name;                  /* for messages and the generator */
	const struct sk_schema_field *fields;
	size_t n_fields;
	const char *const *one_of;         /* NULL or NULL-terminated keys of which exactly one must be set */
	const char *desc;
};

extern const struct sk_schema_obj sk_schema_policy, sk_schema_rule, sk_schema_uid, sk_schema_ports,
	sk_schema_dns, sk_schema_tls, sk_schema_seccomp, sk_schema_api, sk_schema_api_header, sk_schema_api_rate,
	sk_schema_budget, sk_schema_budgets, sk_schema_request, sk_schema_secret;

/* Enum spellings, in the order of the model's enums (enum sk_proto, sk_mode, sk_dns_deny; echGrease
 * deny = 0, allow = 1). NULL-terminated. */
extern const char *const sk_schema_protos[], *const sk_schema_modes[], *const sk_schema_dns_denies[],
	*const sk_schema_ech_grease[];
/* Request rules' methods (bit i of a method set is entry i) and access shorthands (enum sk_access - 1). */
extern const char *const sk_schema_methods[], *const sk_schema_accesses[];

/* DNS record types dns.allowTypes may name (matched case-insensitively). */
struct sk_schema_qtype {
	const char *name;
	uint16_t type;
};
extern const struct sk_schema_qtype sk_schema_qtypes[];
extern const size_t sk_schema_n_qtypes;

/* The field of o named key, or NULL. */
const struct sk_schema_field *sk_schema_field(const struct sk_schema_obj *o, const char *key);
/* Number of entries of a NULL-terminated list. */
size_t sk_schema_count(const char *const *v);

/* The JSON Schema (draft 2020-12) of a policy file: owned, NUL-terminated, pretty-printed with two-space
 * indentation and a stable key order. NULL on out of memory. */
char *sk_policy_schema_json(void);

#endif

/* policy/schema.c — the policy's shape as tables (schema.h) and their JSON Schema form. Adding a key to
 * a section here is what makes the validator accept it (check_keys reads these lists) and what puts it
 * into docs/policy.schema.json and the chart's values schema (scripts/gen-policy-schema). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/schema.h"

const char *const sk_schema_protos[] = { "any", "tls", "http", "tcp", "udp", NULL };
const char *const sk_schema_modes[] = { "enforce", "audit", NULL };
const char *const sk_schema_dns_denies[] = { "nxdomain", "refused", NULL };
const char *const sk_schema_ech_grease[] = { "deny", "allow", NULL };
/* Bit i of a request rule's method set is sk_schema_methods[i] (policy/requests.h). CONNECT is not one:
 * the proxy is transparent and denies every tunnel. */
const char *const sk_schema_methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", NULL };
const char *const sk_schema_accesses[] = { "read-only", "read-write", NULL };

const struct sk_schema_qtype sk_schema_qtypes[] = {
	{ "A", 1 },       { "NS", 2 },      { "CNAME", 5 },   { "SOA", 6 },    { "NULL", 10 },  { "PTR", 12 },
	{ "HINFO", 13 },  { "MX", 15 },     { "TXT", 16 },    { "AAAA", 28 },  { "SRV", 33 },   { "NAPTR", 35 },
	{ "DS", 43 },     { "RRSIG", 46 },  { "NSEC", 47 },   { "DNSKEY", 48 }, { "NSEC3", 50 }, { "TLSA", 52 },
	{ "SVCB", 64 },   { "HTTPS", 65 },  { "SPF", 99 },    { "AXFR", 252 }, { "ANY", 255 },  { "CAA", 257 },
};
const size_t sk_schema_n_qtypes = SK_ARRAY_SIZE(sk_schema_qtypes);

#define PORT_MAX 65535
#define UID_MAX 4294967294LL
/* A DNS name or *.name as far as a pattern can say it (docs/policy.md, Names): ASCII labels of letters,
 * digits and '-', so no scheme, path, port, '_' or spaces. An IP literal passes the pattern; the validator
 * refuses it with a pointer to cidr:. */
#define HOST_PATTERN "^(\\*\\.)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.?$"
#define CIDR_PATTERN "^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$"
#define NAME_PATTERN "^[a-z0-9-]{1,63}$"

const struct sk_schema_obj sk_schema_uid = {
	"uid section",
	(const struct sk_schema_field[]){
		{ .key = "uid", .type = SK_SCH_INT, .min = 1, .max = UID_MAX, .required = true,
		  .desc = "a non-root uid" },
	},
	1, NULL, NULL,
};

const struct sk_schema_obj sk_schema_ports = {
	"ports",
	(const struct sk_schema_field[]){
		{ .key = "proxy", .type = SK_SCH_INT, .min = 1, .max = PORT_MAX, .desc = "the transparent proxy (15001)" },
		{ .key = "dns", .type = SK_SCH_INT, .min = 1, .max = PORT_MAX, .desc = "the DNS filter (15053)" },
		{ .key = "admin", .type = SK_SCH_INT, .min = 1, .max = PORT_MAX, .desc = "probes and metrics (15000)" },
		{ .key = "api", .type = SK_SCH_INT, .min = 1, .max = PORT_MAX, .desc = "the API gateway (15080)" },
	},
	4, NULL, "the sidecar's ports, pairwise distinct",
};

const struct sk_schema_obj sk_schema_budget = {
	"budget",
	(const struct sk_schema_field[]){
		{ .key = "sent", .type = SK_SCH_SIZE, .desc = "bytes the agent may send per window (10Mi)" },
		{ .key = "received", .type = SK_SCH_SIZE, .desc = "bytes the agent may receive per window" },
		{ .key = "connections", .type = SK_SCH_INT, .min = 1, .max = 1LL << 40,
		  .desc = "connections per window" },
		{ .key = "queries", .type = SK_SCH_INT, .min = 1, .max = 1LL << 40,
		  .desc = "DNS names under a wildcard rule's zone per window" },
		{ .key = "window", .type = SK_SCH_DURATION, .required = true, .desc = "the window: 1s to 24h (10m)" },
	},
	5, NULL, "an exfiltration budget: how much a rule may carry per window (docs/policy.md, Budgets)",
};

const struct sk_schema_obj sk_schema_budgets = {
	"budgets",
	(const struct sk_schema_field[]){
		{ .key = "default", .type = SK_SCH_OBJ, .obj = &sk_schema_budget,
		  .desc = "for every proxied rule without a budget of its own" },
	},
	1, NULL, "budgets for rules that name none",
};

const struct sk_schema_obj sk_schema_request = {
	"request rule",
	(const struct sk_schema_field[]){
		{ .key = "methods", .type = SK_SCH_LIST, .item = SK_SCH_ENUM, .values = sk_schema_methods, .min = 1,
		  .required = true, .desc = "HTTP methods, upper case (GET, HEAD, POST, ...)" },
		{ .key = "paths", .type = SK_SCH_LIST, .item = SK_SCH_STR, .min = 1, .item_min = 1, .item_max = 1024,
		  .pattern = "^/", .required = true,
		  .desc = "path globs: '*' within one segment, '**' any number of whole segments; the query is not matched" },
	},
	2, NULL, "requests this rule allows: a method among methods and a path matching one of paths",
};

const struct sk_schema_obj sk_schema_rule = {
	"egress rule",
	(const struct sk_schema_field[]){
		{ .key = "host", .type = SK_SCH_STR, .min = 1, .max = 255, .pattern = HOST_PATTERN,
		  .desc = "a DNS name (api.example.com) or *.suffix (any subdomain, not the apex)" },
		{ .key = "cidr", .type = SK_SCH_STR, .min = 1, .max = 64, .pattern = CIDR_PATTERN,
		  .desc = "an address or network (10.0.0.0/8, fd00::/8), host bits zero" },
		{ .key = "ports", .type = SK_SCH_LIST, .item = SK_SCH_INT, .min = 1, .item_min = 1,
		  .item_max = PORT_MAX, .desc = "destination ports; leave the key out for any port" },
		{ .key = "protocol", .type = SK_SCH_ENUM, .values = sk_schema_protos,
		  .desc = "what the rule allows: tls, http, tcp, udp (cidr rules only) or any (default)" },
		{ .key = "direct", .type = SK_SCH_BOOL,
		  .desc = "cidr rules only: decided by nftables in the kernel, around the proxy" },
		{ .key = "budget", .type = SK_SCH_OBJ, .obj = &sk_schema_budget,
		  .desc = "how much this rule may carry per window" },
		{ .key = "name", .type = SK_SCH_STR, .min = 1, .max = 63, .pattern = NAME_PATTERN,
		  .desc = "a stable name, unique in the policy: the rule label of metrics and audit lines" },
		{ .key = "inspect", .type = SK_SCH_BOOL,
		  .desc = "host rules: the sidecar terminates TLS to decide each request (enforced once TLS "
			  "termination lands; until then a TLS connection under requests or access is denied)" },
		{ .key = "requests", .type = SK_SCH_LIST, .item = SK_SCH_OBJ, .obj = &sk_schema_request, .min = 1,
		  .desc = "per-request rules, first match wins; a request none matches is answered 403" },
		{ .key = "access", .type = SK_SCH_ENUM, .values = sk_schema_accesses,
		  .desc = "shorthand for requests: read-only (GET, HEAD, OPTIONS on any path) or read-write (any "
			  "method); not with requests" },
	},
	10, (const char *const[]){ "host", "cidr", NULL }, "one allowed destination: exactly one of host and cidr",
};

const struct sk_schema_obj sk_schema_dns = {
	"dns",
	(const struct sk_schema_field[]){
		{ .key = "upstream", .type = SK_SCH_LIST, .item = SK_SCH_STR, .min = 1, .item_min = 1, .item_max = 64,
		  .pattern = "^(resolv\\.conf|[0-9.]+(:[0-9]{1,5})?|[0-9A-Fa-f:]+|\\[[0-9A-Fa-f:]+\\](:[0-9]{1,5})?)$",
		  .desc = "resolv.conf or resolver addresses with optional port (10.0.0.10:53, [fd00::a]:53)" },
		{ .key = "deny", .type = SK_SCH_ENUM, .values = sk_schema_dns_denies,
		  .desc = "the answer to a denied name (nxdomain)" },
		{ .key = "maxQueryLength", .type = SK_SCH_INT, .min = 1, .max = 253,
		  .desc = "longest name answered (253)" },
		{ .key = "allowTypes", .type = SK_SCH_LIST, .item = SK_SCH_STR, .pattern = NULL /* from qtypes */,
		  .desc = "record types answered (A, AAAA, CNAME, HTTPS, SVCB)" },
	},
	4, NULL, "the DNS filter",
};

const struct sk_schema_obj sk_schema_tls = {
	"tls",
	(const struct sk_schema_field[]){
		{ .key = "echGrease", .type = SK_SCH_ENUM, .values = sk_schema_ech_grease,
		  .desc = "allow: a hello with an encrypted_client_hello extension passes on its outer SNI (deny)" },
		{ .key = "upstreamCAFile", .type = SK_SCH_STR,
		  .desc = "PEM trust bundle the servers of inspected rules are verified against (the system's)" },
	},
	2, NULL, "what the proxy accepts in a ClientHello beyond the strict default",
};

const struct sk_schema_obj sk_schema_seccomp = {
	"seccomp",
	(const struct sk_schema_field[]){
		{ .key = "allow", .type = SK_SCH_LIST, .item = SK_SCH_STR, .item_min = 1, .item_max = 64,
		  .pattern = "^[a-z0-9_]+$", .desc = "syscalls to allow beyond the default profile" },
		{ .key = "deny", .type = SK_SCH_LIST, .item = SK_SCH_STR, .item_min = 1, .item_max = 64,
		  .pattern = "^[a-z0-9_]+$", .desc = "syscalls to remove from the default profile" },
	},
	2, NULL, "the agent's seccomp profile (stockade-policy check runs the names through the generator)",
};

const struct sk_schema_obj sk_schema_api_header = {
	"api header",
	(const struct sk_schema_field[]){
		{ .key = "name", .type = SK_SCH_STR, .min = 1, .pattern = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
		  .required = true, .desc = "the HTTP header the gateway adds (x-api-key)" },
		{ .key = "valueFile", .type = SK_SCH_STR, .min = 1, .required = true,
		  .desc = "the file holding the secret value (mounted into the sidecar only)" },
	},
	2, NULL, NULL,
};

const struct sk_schema_obj sk_schema_api_rate = {
	"api rateLimit",
	(const struct sk_schema_field[]){
		{ .key = "rps", .type = SK_SCH_NUM, .min = 0, .max = 1000000000, .desc = "requests per second (0: unlimited)" },
		{ .key = "burst", .type = SK_SCH_NUM, .min = 0, .max = 1000000000, .desc = "bucket size (max(1, rps))" },
	},
	2, NULL, NULL,
};

const struct sk_schema_obj sk_schema_api = {
	"api",
	(const struct sk_schema_field[]){
		{ .key = "name", .type = SK_SCH_STR, .min = 1, .max = 63, .pattern = NAME_PATTERN, .required = true,
		  .desc = "unique; the agent calls http://localhost:15080/NAME/..." },
		{ .key = "upstream", .type = SK_SCH_STR, .min = 9, .pattern = "^[Hh][Tt][Tt][Pp][Ss]://[^?#@\\s]+$",
		  .required = true, .desc = "https://host[:port][/path], no credentials, query or fragment" },
		{ .key = "header", .type = SK_SCH_OBJ, .obj = &sk_schema_api_header, .required = true,
		  .desc = "the secret header the gateway adds" },
		{ .key = "callerToken", .type = SK_SCH_STR, .min = 1, .desc = "file of a token the agent must present" },
		{ .key = "caFile", .type = SK_SCH_STR, .min = 1, .desc = "CA bundle for the upstream (system default)" },
		{ .key = "rateLimit", .type = SK_SCH_OBJ, .obj = &sk_schema_api_rate, .desc = "token bucket" },
		{ .key = "methods", .type = SK_SCH_LIST, .item = SK_SCH_STR, .item_min = 1, .item_max = 32,
		  .pattern = "^[A-Za-z]+$", .desc = "HTTP methods allowed (any)" },
		{ .key = "pathPrefixes", .type = SK_SCH_LIST, .item = SK_SCH_STR, .item_min = 1, .pattern = "^/",
		  .desc = "request paths allowed (any)" },
	},
	8, NULL, "an API gateway route: the sidecar adds the secret, the agent never sees it",
};

const struct sk_schema_obj sk_schema_secret = {
	"secret",
	(const struct sk_schema_field[]){
		{ .key = "name", .type = SK_SCH_STR, .min = 1, .max = 63, .pattern = NAME_PATTERN, .required = true,
		  .desc = "unique; names the secret in audit lines and metrics" },
		{ .key = "valueFile", .type = SK_SCH_STR, .min = 1, .required = true,
		  .desc = "the file holding the real value (mounted into the sidecar only; re-read when rotated)" },
		{ .key = "placeholder", .type = SK_SCH_STR, .min = 16, .max = 128, .pattern = "^[A-Za-z0-9._-]+$",
		  .desc = "what the agent sends instead (stockade-secret-NAME); unique, none inside another" },
		{ .key = "hosts", .type = SK_SCH_LIST, .item = SK_SCH_STR, .min = 1, .item_min = 1, .item_max = 253,
		  .required = true, .desc = "host names the value may go to, each under an inspect: true rule" },
		{ .key = "paths", .type = SK_SCH_LIST, .item = SK_SCH_STR, .min = 1, .item_min = 1, .item_max = 1024,
		  .pattern = "^/", .desc = "path globs as in request rules (any path)" },
		{ .key = "in", .type = SK_SCH_LIST, .item = SK_SCH_STR, .min = 1, .item_min = 1, .item_max = 64,
		  .pattern = "^[!#$%&'*+.^_`|~0-9a-z-]+$",
		  .desc = "lower-case header names where the placeholder is swapped (authorization)" },
	},
	6, NULL, "a credential the agent never holds: the sidecar swaps its placeholder for the value",
};

const struct sk_schema_obj sk_schema_policy = {
	"policy",
	(const struct sk_schema_field[]){
		{ .key = "version", .type = SK_SCH_INT, .min = 1, .max = 1, .required = true, .desc = "always 1" },
		{ .key = "mode", .type = SK_SCH_ENUM, .values = sk_schema_modes,
		  .desc = "enforce (default) or audit: log would_deny and let the connection through" },
		{ .key = "agent", .type = SK_SCH_OBJ, .obj = &sk_schema_uid, .desc = "the agent's uid (1000)" },
		{ .key = "sidecar", .type = SK_SCH_OBJ, .obj = &sk_schema_uid, .desc = "the sidecar's uid (1337)" },
		{ .key = "exemptUids", .type = SK_SCH_LIST, .item = SK_SCH_INT, .item_min = 1, .item_max = UID_MAX,
		  .desc = "uids left alone by the redirect (not the agent's or the sidecar's)" },
		{ .key = "ports", .type = SK_SCH_OBJ, .obj = &sk_schema_ports, .desc = "the sidecar's ports" },
		{ .key = "egress", .type = SK_SCH_LIST, .item = SK_SCH_OBJ, .obj = &sk_schema_rule,
		  .desc = "allowed destinations, first match wins" },
		{ .key = "dns", .type = SK_SCH_OBJ, .obj = &sk_schema_dns, .desc = "the DNS filter" },
		{ .key = "blockPrivate", .type = SK_SCH_BOOL,
		  .desc = "deny private addresses unless a cidr rule inside them names them (true)" },
		{ .key = "loopback", .type = SK_SCH_LOOPBACK, .desc = "the agent's loopback: allow (default), deny or ports" },
		{ .key = "apis", .type = SK_SCH_LIST, .item = SK_SCH_OBJ, .obj = &sk_schema_api,
		  .desc = "API gateway routes" },
		{ .key = "secrets", .type = SK_SCH_LIST, .item = SK_SCH_OBJ, .obj = &sk_schema_secret,
		  .desc = "credentials swapped into inspected requests" },
		{ .key = "seccomp", .type = SK_SCH_OBJ, .obj = &sk_schema_seccomp, .desc = "seccomp profile changes" },
		{ .key = "tls", .type = SK_SCH_OBJ, .obj = &sk_schema_tls, .desc = "ClientHello settings" },
		{ .key = "budgets", .type = SK_SCH_OBJ, .obj = &sk_schema_budgets, .desc = "default budgets" },
	},
	15, NULL, "a stockade policy (docs/policy.md)",
};

const struct sk_schema_field *sk_schema_field(const struct sk_schema_obj *o, const char *key)
{
	/* compared in line, no strcmp call: every key of a long policy comes through here, and keys are
	 * short words */
	for (size_t i = 0; i < o->n_fields; i++) {
		const char *a = o->fields[i].key, *b = key;
		if (*a != *b)
			continue;
		while (*a && *a == *b) {
			a++;
			b++;
		}
		if (*a == *b)
			return &o->fields[i];
	}
	return NULL;
}

size_t sk_schema_count(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* ---- JSON Schema ---------------------------------------------------------------------------------- */

static cJSON *enum_of(const char *const *values)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; a && values[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(values[i]));
	return a;
}

/* dns.allowTypes: the names of the qtype table, any letter case (the validator compares with strcasecmp). */
static char *qtype_pattern(void)
{
	size_t cap = 16;
	for (size_t i = 0; i < sk_schema_n_qtypes; i++)
		cap += strlen(sk_schema_qtypes[i].name) * 4 + 1;
	char *p = malloc(cap), *o = p;
	if (!p)
		return NULL;
	o += sprintf(o, "^(");
	for (size_t i = 0; i < sk_schema_n_qtypes; i++) {
		if (i)
			*o++ = '|';
		for (const char *c = sk_schema_qtypes[i].name; *c; c++) {
			if (*c >= 'A' && *c <= 'Z')
				o += sprintf(o, "[%c%c]", *c, *c - 'A' + 'a');
			else
				*o++ = *c;
		}
	}
	(void)sprintf(o, ")$");
	return p;
}

static cJSON *object_schema(const struct sk_schema_obj *o);

/* The schema of one value of type t with the field's bounds (items use item_min/item_max). */
static cJSON *value_schema(const struct sk_schema_field *f, enum sk_schema_type t, bool item)
{
	cJSON *s = NULL;
	long long lo = item ? f->item_min : f->min, hi = item ? f->item_max : f->max;
	switch (t) {
	case SK_SCH_OBJ:
		return object_schema(f->obj);
	case SK_SCH_LIST:
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "type", "array");
		cJSON_AddItemToObject(s, "items", value_schema(f, f->item, true));
		if (f->min > 0)
			cJSON_AddNumberToObject(s, "minItems", (double)f->min);
		return s;
	case SK_SCH_STR: {
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "type", "string");
		if (lo > 0)
			cJSON_AddNumberToObject(s, "minLength", (double)lo);
		if (hi > 0)
			cJSON_AddNumberToObject(s, "maxLength", (double)hi);
		char *qp = !f->pattern && !strcmp(f->key, "allowTypes") ? qtype_pattern() : NULL;
		if (f->pattern || qp)
			cJSON_AddStringToObject(s, "pattern", qp ? qp : f->pattern);
		free(qp);
		return s;
	}
	case SK_SCH_INT:
	case SK_SCH_NUM:
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "type", t == SK_SCH_INT ? "integer" : "number");
		cJSON_AddNumberToObject(s, "minimum", (double)lo);
		cJSON_AddNumberToObject(s, "maximum", (double)hi);
		return s;
	case SK_SCH_BOOL:
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "type", "boolean");
		return s;
	case SK_SCH_ENUM:
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "type", "string");
		cJSON_AddItemToObject(s, "enum", enum_of(f->values));
		return s;
	case SK_SCH_SIZE: {
		s = cJSON_CreateObject();
		cJSON *one = cJSON_AddArrayToObject(s, "oneOf");
		cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();
		cJSON_AddItemToArray(one, a);
		cJSON_AddItemToArray(one, b);
		cJSON_AddStringToObject(a, "type", "integer");
		cJSON_AddNumberToObject(a, "minimum", 1);
		cJSON_AddStringToObject(b, "type", "string");
		cJSON_AddStringToObject(b, "pattern", "^[0-9]{1,19}(Ki|Mi|Gi|Ti)?$");
		return s;
	}
	case SK_SCH_DURATION:
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "type", "string");
		cJSON_AddStringToObject(s, "pattern", "^[0-9]{1,19}[smh]$");
		return s;
	case SK_SCH_LOOPBACK: {
		static const char *const modes[] = { "allow", "deny", NULL };
		s = cJSON_CreateObject();
		cJSON *one = cJSON_AddArrayToObject(s, "oneOf");
		cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject(), *it = cJSON_CreateObject();
		cJSON_AddItemToArray(one, a);
		cJSON_AddItemToArray(one, b);
		cJSON_AddStringToObject(a, "type", "string");
		cJSON_AddItemToObject(a, "enum", enum_of(modes));
		cJSON_AddStringToObject(b, "type", "array");
		cJSON_AddStringToObject(it, "type", "integer");
		cJSON_AddNumberToObject(it, "minimum", 1);
		cJSON_AddNumberToObject(it, "maximum", PORT_MAX);
		cJSON_AddItemToObject(b, "items", it);
		cJSON_AddNumberToObject(b, "minItems", 1);
		return s;
	}
	}
	return s;
}

static cJSON *object_schema(const struct sk_schema_obj *o)
{
	cJSON *s = cJSON_CreateObject(), *props = cJSON_CreateObject(), *req = cJSON_CreateArray();
	cJSON_AddStringToObject(s, "type", "object");
	if (o->desc)
		cJSON_AddStringToObject(s, "description", o->desc);
	cJSON_AddBoolToObject(s, "additionalProperties", 0);
	for (size_t i = 0; i < o->n_fields; i++) {
		const struct sk_schema_field *f = &o->fields[i];
		cJSON *v = value_schema(f, f->type, false);
		if (v && f->desc && f->type != SK_SCH_OBJ)
			cJSON_AddStringToObject(v, "description", f->desc);
		cJSON_AddItemToObject(props, f->key, v);
		if (f->required)
			cJSON_AddItemToArray(req, cJSON_CreateString(f->key));
	}
	cJSON_AddItemToObject(s, "properties", props);
	if (cJSON_GetArraySize(req) > 0)
		cJSON_AddItemToObject(s, "required", req);
	else
		cJSON_Delete(req);
	if (o->one_of) {
		cJSON *one = cJSON_AddArrayToObject(s, "oneOf");
		for (size_t i = 0; one && o->one_of[i]; i++) {
			cJSON *alt = cJSON_CreateObject(), *r = cJSON_CreateArray();
			cJSON_AddItemToArray(r, cJSON_CreateString(o->one_of[i]));
			cJSON_AddItemToObject(alt, "required", r);
			cJSON_AddItemToArray(one, alt);
		}
	}
	return s;
}

char *sk_policy_schema_json(void)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "$schema", "https://json-schema.org/draft/2020-12/schema");
	cJSON_AddStringToObject(root, "title", "stockade policy");
	cJSON_AddStringToObject(root, "$comment", "Generated by `stockade-policy schema` from policy/schema.c; "
				"do not edit (scripts/gen-policy-schema).");
	cJSON *body = object_schema(&sk_schema_policy);
	/* Move the body's members into the root, after the header keys. */
	while (body && body->child) {
		cJSON *it = body->child;
		cJSON_DetachItemViaPointer(body, it);
		cJSON_AddItemToObject(root, it->string, it);
	}
	cJSON_Delete(body);
	char *s = cJSON_Print(root);
	cJSON_Delete(root);
	return s;
}

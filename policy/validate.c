/* policy/validate.c — the one validator behind both native formats: walks the position-annotated tree
 * (internal.h) section by section, checks and normalises every field of docs/policy.md into struct
 * sk_policy, and reports every problem it finds as "path: what is wrong, expected what" at the key's or
 * value's line:col. It keeps going after an error so one run shows them all; the caller discards the
 * model if any. This file: the top-level walk and the small sections (version, mode, agent, sidecar,
 * exemptUids, ports, blockPrivate, loopback, tls); egress, dns, budgets, apis and seccomp each have a
 * validate_<section>.c, the typed reads of nodes are tree_get.c's (validate-internal.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}


static uint32_t get_uid_at(struct sk_load_ctx *c, const struct sk_node *n, const char *path, bool *ok)
{
	unsigned long long v = 0;
	if (sk_get_uint(c, n, path, 0, 4294967294ULL, "a uid 1..4294967294", &v) < 0) {
		*ok = false;
		return 0;
	}
	if (v == 0) {
		err_at(c, n, "%s: uid 0 is root, expected a non-root uid", path);
		*ok = false;
	}
	return (uint32_t)v;
}

/* agent: {uid: N} / sidecar: {uid: N}. Returns the uid node for later cross-checks. */
static const struct sk_node *validate_uid_section(struct sk_load_ctx *c, const struct sk_node *n, const char *name,
						  uint32_t *uid, bool *ok)
{
	char path[PATHSZ];
	if (!sk_want_map(c, n, name)) {
		*ok = false;
		return NULL;
	}
	sk_check_keys(c, n, name, &sk_schema_uid);
	const struct sk_node *u = sk_need(c, n, name, "uid", "uid: N");
	if (!u) {
		*ok = false;
		return NULL;
	}
	sk_path_key(path, sizeof(path), name, "uid");
	uint32_t v = get_uid_at(c, u, path, ok);
	if (*ok)
		*uid = v;
	return u;
}

static void validate_ports(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	const struct sk_schema_obj *o = &sk_schema_ports;
	const char *keys[4];
	if (!sk_want_map(c, n, "ports"))
		return;
	sk_check_keys(c, n, "ports", o);
	for (size_t i = 0; i < 4; i++)
		keys[i] = o->fields[i].key;  /* proxy, dns, admin, api: the order of the slots below */
	uint16_t *slot[] = { &p->ports.proxy, &p->ports.dns, &p->ports.admin, &p->ports.api };
	const struct sk_node *where[4] = { 0 };
	char path[PATHSZ];
	for (size_t i = 0; i < 4; i++) {
		const struct sk_node *v = sk_node_get(n, keys[i]);
		unsigned long long port;
		sk_pathf(path, sizeof(path), "ports.%s", keys[i]);
		if (v && sk_get_uint(c, v, path, 1, 65535, "a port 1..65535", &port) == 0) {
			*slot[i] = (uint16_t)port;
			where[i] = v;
		}
	}
	for (size_t i = 0; i < 4; i++)
		for (size_t j = i + 1; j < 4; j++) {
			if (*slot[i] != *slot[j])
				continue;
			/* Report at the value the user wrote (the other one may be a default). */
			const struct sk_node *at = where[j] ? where[j] : where[i] ? where[i] : n;
			const size_t self = where[j] ? j : i, other = where[j] ? i : j;
			err_at(c, at, "ports.%s: %u collides with ports.%s, expected four different ports", keys[self],
			       *slot[i], keys[other]);
		}
}

static void validate_exempt(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	char path[PATHSZ];
	if (!sk_want_seq(c, n, "exemptUids", "uids"))
		return;
	if (!n->n)
		return;
	p->exempt_uids = calloc(n->n, sizeof(*p->exempt_uids));
	if (!p->exempt_uids) {
		err_at(c, n, "exemptUids: out of memory");
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < n->n; i++) {
		bool ok = true;
		sk_pathf(path, sizeof(path), "exemptUids[%zu]", i);
		uint32_t u = get_uid_at(c, n->items[i], path, &ok);
		if (!ok)
			continue;
		if (u == p->agent_uid || u == p->sidecar_uid) {
			err_at(c, n->items[i], "%s: %u is the %s uid, expected a uid other than agent and sidecar",
			       path, u, u == p->agent_uid ? "agent" : "sidecar");
			continue;
		}
		p->exempt_uids[k++] = u;
	}
	qsort(p->exempt_uids, k, sizeof(uint32_t), cmp_u32);
	size_t o = 0;
	for (size_t i = 0; i < k; i++)
		if (!o || p->exempt_uids[i] != p->exempt_uids[o - 1])
			p->exempt_uids[o++] = p->exempt_uids[i];
	p->n_exempt_uids = o;
}


static void validate_loopback(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	char q[SK_QUOTE_MAX], d[SK_QUOTE_MAX + 16];
	if (n->kind == SK_NODE_SEQ) {
		if (sk_get_port_list(c, n, "loopback", &p->loopback_ports, &p->n_loopback_ports) == 0)
			p->loopback = SK_LOOPBACK_PORTS;
		return;
	}
	if (n->kind == SK_NODE_SCALAR && n->skind == SK_SCALAR_STR) {
		if (!strcmp(n->text, "allow"))
			p->loopback = SK_LOOPBACK_ALLOW;
		else if (!strcmp(n->text, "deny"))
			p->loopback = SK_LOOPBACK_DENY;
		else
			err_at(c, n, "loopback: %s is not a loopback mode, expected allow, deny or a list of ports",
			       sk_quote(n->text, q, sizeof(q)));
		return;
	}
	err_at(c, n, "loopback: expected allow, deny or a list of ports, got %s", sk_node_describe(n, d, sizeof(d)));
}

/* tls: {echGrease: allow | deny, upstreamCAFile: PATH}. Proxy-only (not in the netns hash): a live reload
 * may change echGrease; the inspection's trust bundle is read once, at sidecar start. */
static void validate_tls(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	const char *const *grease = sk_schema_ech_grease;
	if (!sk_want_map(c, n, "tls"))
		return;
	sk_check_keys(c, n, "tls", &sk_schema_tls);
	const struct sk_node *v;
	if ((v = sk_node_get(n, "echGrease"))) {
		int g = sk_get_enum(c, v, "tls.echGrease", "valid setting", grease, sk_schema_count(grease),
				 "allow or deny");
		if (g >= 0)
			p->tls.ech_grease_allow = g == 1;
	}
	if ((v = sk_node_get(n, "upstreamCAFile"))) {
		free(p->tls.upstream_ca_file);
		p->tls.upstream_ca_file = sk_get_file(c, v, "tls.upstreamCAFile");
	}
}

/* ---- top level ------------------------------------------------------------------------------------------- */

void sk_validate_policy(struct sk_load_ctx *c, const struct sk_node *root, struct sk_policy *p)
{
	const char *const *modes = sk_schema_modes;
	char d[SK_QUOTE_MAX + 16];
	if (root->kind != SK_NODE_MAP) {
		err_at(c, root, "policy: expected a mapping starting with version: 1, got %s",
		       sk_node_describe(root, d, sizeof(d)));
		return;
	}
	sk_check_keys(c, root, "policy", &sk_schema_policy);
	const struct sk_node *v;
	if ((v = sk_need(c, root, "policy", "version", "version: 1"))) {
		unsigned long long ver;
		if (sk_get_uint(c, v, "version", 0, 1ULL << 31, "1", &ver) == 0 && ver != 1)
			err_at(c, v, "version: unsupported version %llu, expected 1", ver);
	}
	if ((v = sk_node_get(root, "mode"))) {
		int m = sk_get_enum(c, v, "mode", "mode", modes, sk_schema_count(modes), "enforce or audit");
		if (m >= 0)
			p->mode = (enum sk_mode)m;
		p->mode_pos = (struct sk_pos){ v->line, v->col };
	}
	bool agent_ok = true, sidecar_ok = true;
	if ((v = sk_node_get(root, "agent")))
		validate_uid_section(c, v, "agent", &p->agent_uid, &agent_ok);
	const struct sk_node *su = NULL;
	if ((v = sk_node_get(root, "sidecar")))
		su = validate_uid_section(c, v, "sidecar", &p->sidecar_uid, &sidecar_ok);
	/* The sidecar's UID is exempt from redirection: an agent sharing it would bypass everything. */
	if (agent_ok && sidecar_ok && p->agent_uid == p->sidecar_uid) {
		const struct sk_node *at = su ? su : sk_node_get(sk_node_get(root, "agent"), "uid");
		err_at(c, at ? at : root, "sidecar.uid: same as agent.uid (%u), expected a different uid", p->agent_uid);
	}
	if ((v = sk_node_get(root, "exemptUids"))) {
		validate_exempt(c, v, p);
		p->exempt_pos = (struct sk_pos){ v->line, v->col };
	}
	if ((v = sk_node_get(root, "ports")))
		validate_ports(c, v, p);
	if ((v = sk_node_get(root, "egress")))
		sk_validate_egress(c, v, p);
	if ((v = sk_node_get(root, "dns")))
		sk_validate_dns(c, v, p);
	if ((v = sk_node_get(root, "blockPrivate"))) {
		sk_get_bool(c, v, "blockPrivate", &p->block_private);
		p->block_private_pos = (struct sk_pos){ v->line, v->col };
	}
	if ((v = sk_node_get(root, "loopback")))
		validate_loopback(c, v, p);
	if ((v = sk_node_get(root, "apis")))
		sk_validate_apis(c, v, p);
	if ((v = sk_node_get(root, "seccomp")))
		sk_validate_seccomp(c, v, p);
	if ((v = sk_node_get(root, "tls")))
		validate_tls(c, v, p);
	if ((v = sk_node_get(root, "budgets")))
		sk_validate_budgets(c, v, p);
	sk_apply_default_budget(c, root, p);
	sk_check_bypass_rules(c, sk_node_get(root, "egress"), p);
	if (sk_policy_dns_defaults(p) < 0)
		err_at(c, root, "out of memory");
}

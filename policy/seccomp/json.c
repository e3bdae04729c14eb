/* policy/seccomp/json.c — a profile's JSON form (cJSON): OCI runtime-spec "linux.seccomp" / Kubernetes
 * Localhost profile out, OCI or Docker (archMap) in, and loading one from a file. See seccomp.h. */
#include "policy/seccomp/seccomp.h"

#include <errno.h>
#include <inttypes.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/read_file.h"
#include "common/util.h"
#include "policy/seccomp/internal.h"

/* ---- JSON out ---- */

static cJSON *entry_new(const struct sk_scmp_rule *r)
{
	cJSON *e = cJSON_CreateObject();
	if (!e)
		return NULL;
	cJSON *names = cJSON_AddArrayToObject(e, "names");
	bool ok = names && cJSON_AddStringToObject(e, "action", sk_scmp_action_name(r->action));
	if (ok && r->errno_ret >= 0)
		ok = cJSON_AddNumberToObject(e, "errnoRet", r->errno_ret) != NULL;
	if (ok && r->n_args) {
		cJSON *args = cJSON_AddArrayToObject(e, "args");
		ok = args != NULL;
		for (size_t i = 0; ok && i < r->n_args; i++) {
			cJSON *a = cJSON_CreateObject();
			ok = a && cJSON_AddItemToArray(args, a);
			if (!ok) {
				cJSON_Delete(a);
				break;
			}
			ok = cJSON_AddNumberToObject(a, "index", r->args[i].index) &&
			     cJSON_AddNumberToObject(a, "value", (double)r->args[i].value) &&
			     cJSON_AddNumberToObject(a, "valueTwo", (double)r->args[i].value_two) &&
			     cJSON_AddStringToObject(a, "op", sk_scmp_op_name(r->args[i].op));
		}
	}
	if (!ok) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

char *sk_scmp_profile_to_json(const struct sk_scmp_profile *p, struct sk_err *err)
{
	cJSON *root = cJSON_CreateObject();
	char *text = NULL;
	bool *done = calloc(p->n_rules ? p->n_rules : 1, sizeof(*done));
	if (!root || !done)
		goto oom;
	if (!cJSON_AddStringToObject(root, "defaultAction", sk_scmp_action_name(p->default_action)))
		goto oom;
	if (p->default_errno >= 0 && !cJSON_AddNumberToObject(root, "defaultErrnoRet", p->default_errno))
		goto oom;
	if (p->log_denials) {
		cJSON *flags = cJSON_AddArrayToObject(root, "flags");
		cJSON *f = cJSON_CreateString("SECCOMP_FILTER_FLAG_LOG");
		if (!flags || !f || !cJSON_AddItemToArray(flags, f)) {
			cJSON_Delete(f);
			goto oom;
		}
	}
	cJSON *arches = cJSON_AddArrayToObject(root, "architectures");
	if (!arches)
		goto oom;
	for (size_t i = 0; i < p->n_arches; i++) {
		char name[40];
		sk_scmp_arch_to_oci(p->arches[i], name, sizeof(name));
		cJSON *s = cJSON_CreateString(name);
		if (!s || !cJSON_AddItemToArray(arches, s)) {
			cJSON_Delete(s);
			goto oom;
		}
	}
	cJSON *calls = cJSON_AddArrayToObject(root, "syscalls");
	if (!calls)
		goto oom;
	/* Unconditional rules with one action share an entry ("names": [...]); each conditional rule gets its
	 * own entry, so its conditions stay ANDed in every runtime. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < p->n_rules; i++) {
			const struct sk_scmp_rule *r = &p->rules[i];
			if (done[i] || (pass == 0) != (r->n_args == 0))
				continue;
			cJSON *e = entry_new(r);
			if (!e || !cJSON_AddItemToArray(calls, e)) {
				cJSON_Delete(e);
				goto oom;
			}
			cJSON *names = cJSON_GetObjectItemCaseSensitive(e, "names");
			for (size_t j = i; j < p->n_rules; j++) {
				if (done[j] || (j != i && (p->rules[j].n_args || r->n_args || !sk_scmp_same_action(r, &p->rules[j]))))
					continue;
				cJSON *s = cJSON_CreateString(p->rules[j].name);
				if (!s || !cJSON_AddItemToArray(names, s)) {
					cJSON_Delete(s);
					goto oom;
				}
				done[j] = true;
			}
		}
	text = cJSON_Print(root);
	if (!text)
		goto oom;
	cJSON_Delete(root);
	free(done);
	return text;
oom:
	cJSON_Delete(root);
	free(done);
	sk_err_sys(err, ENOMEM, "seccomp: write JSON");
	return NULL;
}

/* ---- JSON in ---- */

static int get_u64(const cJSON *o, const char *key, uint64_t *out, bool required, const char *where,
		   struct sk_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return sk_err_set(err, EINVAL, "%s: missing \"%s\"", where, key);
		*out = 0;
		return 0;
	}
	/* cJSON holds numbers as doubles: integers above 2^53 would be silently rounded, so refuse them. */
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble)
		return sk_err_set(err, EINVAL, "%s: \"%s\" must be an integer in 0..2^53", where, key);
	*out = (uint64_t)v->valuedouble;
	return 0;
}

static int parse_action(const cJSON *o, const char *key, enum sk_scmp_action *out, const char *where,
			struct sk_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsString(v))
		return sk_err_set(err, EINVAL, "%s: \"%s\" must be a string", where, key);
	if (sk_scmp_action_from_name(v->valuestring, out) < 0)
		return sk_err_set(err, EINVAL, "%s: unknown action \"%s\"", where, v->valuestring);
	return 0;
}

static int parse_errno(const cJSON *o, const char *key, int *out, const char *where, struct sk_err *err)
{
	uint64_t v = 0;
	int r = get_u64(o, key, &v, false, where, err);
	if (r < 0)
		return r;
	if (v > 4095)
		return sk_err_set(err, EINVAL, "%s: \"%s\" out of range", where, key);
	*out = cJSON_GetObjectItemCaseSensitive(o, key) && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, key))
		       ? (int)v
		       : -1;
	return 0;
}

/* Docker's "includes"/"excludes": this tool runs the agent with no capabilities, so an entry that needs a
 * capability never applies; "arches" (Go names: amd64, arm64, ...) select by architecture. */
static bool entry_applies(const cJSON *e, const struct sk_scmp_profile *p)
{
	const cJSON *inc = cJSON_GetObjectItemCaseSensitive(e, "includes");
	if (cJSON_IsObject(inc)) {
		const cJSON *caps = cJSON_GetObjectItemCaseSensitive(inc, "caps");
		if (cJSON_IsArray(caps) && cJSON_GetArraySize(caps) > 0)
			return false;
		const cJSON *ar = cJSON_GetObjectItemCaseSensitive(inc, "arches");
		if (cJSON_IsArray(ar) && cJSON_GetArraySize(ar) > 0) {
			const cJSON *a;
			bool hit = false;
			cJSON_ArrayForEach(a, ar) {
				uint32_t t = cJSON_IsString(a) ? sk_scmp_arch_from_name(a->valuestring) : 0;
				for (size_t i = 0; t && i < p->n_arches; i++)
					hit |= p->arches[i] == t;
			}
			if (!hit)
				return false;
		}
	}
	const cJSON *exc = cJSON_GetObjectItemCaseSensitive(e, "excludes");
	if (cJSON_IsObject(exc)) {
		const cJSON *ar = cJSON_GetObjectItemCaseSensitive(exc, "arches");
		const cJSON *a;
		cJSON_ArrayForEach(a, ar) {
			uint32_t t = cJSON_IsString(a) ? sk_scmp_arch_from_name(a->valuestring) : 0;
			if (t && t == seccomp_arch_native())
				return false;
		}
	}
	return true;
}

static int parse_entry(const cJSON *e, size_t idx, struct sk_scmp_profile *p, const char *name,
		       struct sk_err *err)
{
	char where[300];
	(void)snprintf(where, sizeof(where), "%s: syscalls[%zu]", name, idx);
	if (!cJSON_IsObject(e))
		return sk_err_set(err, EINVAL, "%s: must be an object", where);
	if (!entry_applies(e, p))
		return 0;
	enum sk_scmp_action act = SK_SCMP_ERRNO;
	int errno_ret = -1, r;
	if ((r = parse_action(e, "action", &act, where, err)) < 0 ||
	    (r = parse_errno(e, "errnoRet", &errno_ret, where, err)) < 0)
		return r;
	struct sk_scmp_arg args[6] = { 0 };
	size_t n_args = 0;
	const cJSON *ja = cJSON_GetObjectItemCaseSensitive(e, "args");
	if (ja && !cJSON_IsNull(ja)) {
		if (!cJSON_IsArray(ja))
			return sk_err_set(err, EINVAL, "%s: \"args\" must be an array", where);
		const cJSON *a;
		cJSON_ArrayForEach(a, ja) {
			char aw[340];
			(void)snprintf(aw, sizeof(aw), "%s.args[%zu]", where, n_args);
			if (n_args >= SK_ARRAY_SIZE(args))
				return sk_err_set(err, EINVAL, "%s: more than 6 conditions", aw);
			uint64_t index = 0;
			struct sk_scmp_arg *x = &args[n_args];
			if (!cJSON_IsObject(a))
				return sk_err_set(err, EINVAL, "%s: must be an object", aw);
			if ((r = get_u64(a, "index", &index, true, aw, err)) < 0 ||
			    (r = get_u64(a, "value", &x->value, false, aw, err)) < 0 ||
			    (r = get_u64(a, "valueTwo", &x->value_two, false, aw, err)) < 0)
				return r;
			if (index > 5)
				return sk_err_set(err, EINVAL, "%s: index %" PRIu64 " out of range 0..5", aw, index);
			x->index = (unsigned)index;
			const cJSON *op = cJSON_GetObjectItemCaseSensitive(a, "op");
			if (!cJSON_IsString(op) || sk_scmp_op_from_name(op->valuestring, &x->op) < 0)
				return sk_err_set(err, EINVAL, "%s: unknown or missing \"op\"", aw);
			n_args++;
		}
	}
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(e, "names");
	const cJSON *one = cJSON_GetObjectItemCaseSensitive(e, "name");
	if (cJSON_IsString(one))
		return sk_scmp_profile_add_rule(p, one->valuestring, act, errno_ret, args, n_args, err);
	if (!cJSON_IsArray(names))
		return sk_err_set(err, EINVAL, "%s: needs \"names\" (array) or \"name\"", where);
	const cJSON *n;
	cJSON_ArrayForEach(n, names) {
		if (!cJSON_IsString(n) || !*n->valuestring)
			return sk_err_set(err, EINVAL, "%s: names must be non-empty strings", where);
		if ((r = sk_scmp_profile_add_rule(p, n->valuestring, act, errno_ret, args, n_args, err)) < 0)
			return r;
	}
	return 0;
}

static int parse_arches(const cJSON *root, struct sk_scmp_profile *p, const char *name, struct sk_err *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures");
	const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "archMap");
	bool has_list = list && !cJSON_IsNull(list) && cJSON_GetArraySize(list) > 0;
	bool has_map = map && !cJSON_IsNull(map) && cJSON_GetArraySize(map) > 0;
	const cJSON *a;
	int r;
	if (has_list && has_map)
		return sk_err_set(err, EINVAL, "%s: both \"architectures\" and \"archMap\"", name);
	if (has_list) {
		if (!cJSON_IsArray(list))
			return sk_err_set(err, EINVAL, "%s: \"architectures\" must be an array", name);
		cJSON_ArrayForEach(a, list) {
			uint32_t t = cJSON_IsString(a) ? sk_scmp_arch_from_name(a->valuestring) : 0;
			if (!t)
				return sk_err_set(err, EINVAL, "%s: unknown architecture %s", name,
						  cJSON_IsString(a) ? a->valuestring : "(not a string)");
			if ((r = sk_scmp_profile_add_arch(p, t, err)) < 0)
				return r;
		}
		return 0;
	}
	if (!has_map)
		return 0;
	/* archMap (Docker): dockerd keeps the native entry and its sub-architectures; so do we. */
	if (!cJSON_IsArray(map))
		return sk_err_set(err, EINVAL, "%s: \"archMap\" must be an array", name);
	cJSON_ArrayForEach(a, map) {
		const cJSON *arch = cJSON_GetObjectItemCaseSensitive(a, "architecture");
		uint32_t t = cJSON_IsString(arch) ? sk_scmp_arch_from_name(arch->valuestring) : 0;
		if (!t)
			return sk_err_set(err, EINVAL, "%s: archMap: unknown or missing architecture", name);
		if (t != seccomp_arch_native())
			continue;
		if ((r = sk_scmp_profile_add_arch(p, t, err)) < 0)
			return r;
		const cJSON *s;
		cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(a, "subArchitectures")) {
			uint32_t st = cJSON_IsString(s) ? sk_scmp_arch_from_name(s->valuestring) : 0;
			if (!st)
				return sk_err_set(err, EINVAL, "%s: archMap: unknown sub-architecture", name);
			if ((r = sk_scmp_profile_add_arch(p, st, err)) < 0)
				return r;
		}
	}
	return 0;
}

/* The OCI "flags": SECCOMP_FILTER_FLAG_LOG is kept; the others runtimes know (SPEC_ALLOW, TSYNC…) change
 * nothing a profile's readers compare, and are accepted; anything else is a typo, refused. */
static int parse_flags(const cJSON *root, struct sk_scmp_profile *p, const char *name, struct sk_err *err)
{
	static const char *const known[] = { "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
					     "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV" };
	const cJSON *flags = cJSON_GetObjectItemCaseSensitive(root, "flags"), *f;
	if (!flags || cJSON_IsNull(flags))
		return 0;
	if (!cJSON_IsArray(flags))
		return sk_err_set(err, EINVAL, "%s: \"flags\" must be an array of strings", name);
	cJSON_ArrayForEach(f, flags) {
		size_t i = 0;
		while (i < sizeof(known) / sizeof(known[0]) && !(cJSON_IsString(f) && !strcmp(f->valuestring, known[i])))
			i++;
		if (i == sizeof(known) / sizeof(known[0]))
			return sk_err_set(err, EINVAL, "%s: \"flags\": expected SECCOMP_FILTER_FLAG_LOG, _SPEC_ALLOW, "
					  "_TSYNC or _WAIT_KILLABLE_RECV", name);
		p->log_denials |= i == 0;
	}
	return 0;
}

int sk_scmp_profile_parse(const char *name, const char *buf, size_t len, struct sk_scmp_profile **out,
			  struct sk_err *err)
{
	*out = NULL;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		size_t off = end && end >= buf ? (size_t)(end - buf) : 0;
		return sk_err_set(err, EINVAL, "%s: invalid JSON near byte %zu", name, off);
	}
	int r;
	struct sk_scmp_profile *p = calloc(1, sizeof(*p));
	if (!p) {
		cJSON_Delete(root);
		return sk_err_sys(err, ENOMEM, "%s", name);
	}
	if (!cJSON_IsObject(root)) {
		r = sk_err_set(err, EINVAL, "%s: the profile must be a JSON object", name);
		goto out;
	}
	if ((r = parse_action(root, "defaultAction", &p->default_action, name, err)) < 0 ||
	    (r = parse_errno(root, "defaultErrnoRet", &p->default_errno, name, err)) < 0 ||
	    (r = parse_flags(root, p, name, err)) < 0 ||
	    (r = parse_arches(root, p, name, err)) < 0)
		goto out;
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(root, "syscalls");
	if (calls && !cJSON_IsNull(calls)) {
		if (!cJSON_IsArray(calls)) {
			r = sk_err_set(err, EINVAL, "%s: \"syscalls\" must be an array", name);
			goto out;
		}
		size_t i = 0;
		const cJSON *e;
		cJSON_ArrayForEach(e, calls) {
			if ((r = parse_entry(e, i++, p, name, err)) < 0)
				goto out;
		}
	}
	r = 0;
out:
	cJSON_Delete(root);
	if (r < 0)
		sk_scmp_profile_free(p);
	else
		*out = p;
	return r;
}

int sk_scmp_profile_load_file(const char *path, struct sk_scmp_profile **out, struct sk_err *err)
{
	*out = NULL;
	size_t len = 0;
	sk_autofree char *buf = sk_read_file(path, 16u << 20, &len, err);
	if (!buf)
		return -err->code;
	return sk_scmp_profile_parse(path, buf, len, out, err);
}


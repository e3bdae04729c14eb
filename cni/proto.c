/* cni/proto.c — see proto.h. */
#include "cni/proto.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const versions[] = { "0.4.0", "1.0.0", "1.1.0" };

bool sk_cni_version_supported(const char *v)
{
	for (size_t i = 0; v && i < SK_ARRAY_SIZE(versions); i++)
		if (strcmp(v, versions[i]) == 0)
			return true;
	return false;
}

int sk_cni_cmd_parse(const char *s)
{
	static const char *const names[] = { "ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC" };
	for (size_t i = 0; s && i < SK_ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

static int copy_val(char *dst, size_t cap, const char *v, size_t n, const char *key, struct sk_err *err)
{
	if (n >= cap)
		return sk_err_set(err, EINVAL, "CNI_ARGS: %s is longer than %zu bytes", key, cap - 1);
	memcpy(dst, v, n);
	dst[n] = 0;
	return 0;
}

int sk_cni_env_parse(const char *(*getenv_fn)(const char *), struct sk_cni_env *out, struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	const char *cmd = getenv_fn("CNI_COMMAND");
	int c = sk_cni_cmd_parse(cmd);
	if (c < 0)
		return sk_err_set(err, EINVAL, "CNI_COMMAND %s%s%s", cmd ? "'" : "", cmd ? cmd : "is not set",
				  cmd ? "' is not ADD, DEL, CHECK, VERSION, STATUS or GC" : "");
	out->cmd = (enum sk_cni_cmd)c;
	out->container_id = getenv_fn("CNI_CONTAINERID");
	out->netns = getenv_fn("CNI_NETNS");
	out->ifname = getenv_fn("CNI_IFNAME");
	if (out->netns && !out->netns[0])
		out->netns = NULL;
	bool per_container = c == SK_CNI_ADD || c == SK_CNI_DEL || c == SK_CNI_CHECK;
	if (per_container && (!out->container_id || !out->container_id[0]))
		return sk_err_set(err, EINVAL, "CNI_CONTAINERID is not set");
	if (per_container && (!out->ifname || !out->ifname[0]))
		return sk_err_set(err, EINVAL, "CNI_IFNAME is not set");
	if ((c == SK_CNI_ADD || c == SK_CNI_CHECK) && !out->netns)
		return sk_err_set(err, EINVAL, "CNI_NETNS is not set");

	const char *args = getenv_fn("CNI_ARGS");
	for (const char *p = args; p && *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		if (n > 0) {
			if (!eq || eq == p)
				return sk_err_set(err, EINVAL, "CNI_ARGS: '%.*s' is not KEY=VALUE", (int)(n > 64 ? 64 : n), p);
			size_t kl = (size_t)(eq - p), vl = n - kl - 1;
			int rc = 0;
			if (kl == 17 && memcmp(p, "K8S_POD_NAMESPACE", kl) == 0)
				rc = copy_val(out->pod_ns, sizeof(out->pod_ns), eq + 1, vl, "K8S_POD_NAMESPACE", err);
			else if (kl == 12 && memcmp(p, "K8S_POD_NAME", kl) == 0)
				rc = copy_val(out->pod_name, sizeof(out->pod_name), eq + 1, vl, "K8S_POD_NAME", err);
			else if (kl == 11 && memcmp(p, "K8S_POD_UID", kl) == 0)
				rc = copy_val(out->pod_uid, sizeof(out->pod_uid), eq + 1, vl, "K8S_POD_UID", err);
			if (rc < 0)
				return rc;
		}
		p = end ? end + 1 : p + n;
	}
	return 0;
}

static int opt_str(const cJSON *root, const char *key, bool required, const char **out, struct sk_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	*out = NULL;
	if (!v) {
		if (required)
			return sk_err_set(err, EINVAL, "network configuration: %s is missing", key);
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return sk_err_set(err, EINVAL, "network configuration: %s is not a non-empty string", key);
	*out = v->valuestring;
	return 0;
}

int sk_cni_conf_parse(const char *buf, size_t len, struct sk_cni_conf *out, struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *root = cJSON_ParseWithLength(buf, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return sk_err_set(err, EINVAL, "network configuration: not a JSON object");
	}
	out->root = root;
	int rc;
	if ((rc = opt_str(root, "cniVersion", true, &out->version, err)) < 0 ||
	    (rc = opt_str(root, "name", true, &out->name, err)) < 0 ||
	    (rc = opt_str(root, "type", true, &out->type, err)) < 0 ||
	    (rc = opt_str(root, "kubeconfig", false, &out->kubeconfig, err)) < 0 ||
	    (rc = opt_str(root, "systemNamespace", false, &out->system_ns, err)) < 0)
		goto fail;
	if (!out->system_ns)
		out->system_ns = SK_CNI_SYSTEM_NS_DEFAULT;
	if (!sk_cni_version_supported(out->version)) {
		rc = sk_err_set(err, EPROTO, "cniVersion %s is not supported (0.4.0, 1.0.0, 1.1.0)", out->version);
		goto fail;
	}
	const cJSON *prev = cJSON_GetObjectItemCaseSensitive(root, "prevResult");
	if (prev && !cJSON_IsObject(prev)) {
		rc = sk_err_set(err, EINVAL, "network configuration: prevResult is not an object");
		goto fail;
	}
	out->prev = prev;
	return 0;
fail:
	sk_cni_conf_free(out);
	return rc;
}

void sk_cni_conf_free(struct sk_cni_conf *c)
{
	cJSON_Delete(c->root);
	memset(c, 0, sizeof(*c));
}

char *sk_cni_result(const struct sk_cni_conf *c)
{
	cJSON *r = c->prev ? cJSON_Duplicate(c->prev, true) : cJSON_CreateObject();
	if (!r)
		return NULL;
	if (!cJSON_GetObjectItemCaseSensitive(r, "cniVersion")) {
		cJSON *v = cJSON_CreateString(c->version);
		if (!v || !cJSON_InsertItemInArray(r, 0, v)) {
			cJSON_Delete(v);
			cJSON_Delete(r);
			return NULL;
		}
		/* InsertItemInArray does not name the item */
		v->string = strdup("cniVersion");
		if (!v->string) {
			cJSON_Delete(r);
			return NULL;
		}
	}
	char *s = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	return s;
}

char *sk_cni_version_json(const char *version)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *a = cJSON_CreateStringArray(versions, (int)SK_ARRAY_SIZE(versions));
	char *s = NULL;
	if (o && a && cJSON_AddStringToObject(o, "cniVersion", version ? version : SK_CNI_DEFAULT_VERSION) &&
	    cJSON_AddItemToObject(o, "supportedVersions", a)) {
		a = NULL;
		s = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(a);
	cJSON_Delete(o);
	return s;
}

char *sk_cni_error_json(const char *version, int code, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;
	if (o && cJSON_AddStringToObject(o, "cniVersion", version ? version : SK_CNI_DEFAULT_VERSION) &&
	    cJSON_AddNumberToObject(o, "code", code) && cJSON_AddStringToObject(o, "msg", msg ? msg : ""))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

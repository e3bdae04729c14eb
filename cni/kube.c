/* cni/kube.c — see kube.h. */
#include "cni/kube.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/curl_dl.h"
#include "common/read_file.h"
#include "policy/k8s/manifest.h"

#define KUBECONFIG_MAX (1u << 20)

static const cJSON *obj(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsObject(v) ? v : NULL;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The entry of list `key` (clusters, users, contexts) named name, or the first one when name is NULL;
 * returns the entry's inner object (`cluster`, `user`, `context`). */
static const cJSON *named(const cJSON *doc, const char *key, const char *inner, const char *name)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, key), *e;
	cJSON_ArrayForEach(e, list) {
		const char *n = str(e, "name");
		if (!name || (n && strcmp(n, name) == 0))
			return obj(e, inner);
	}
	return NULL;
}

static char *dup_line(const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	const char *nl = memchr(s, '\n', n);
	if (nl)
		n = (size_t)(nl - s);
	return strndup(s, n);
}

static int b64_decode(const char *in, char **out, size_t *out_len)
{
	size_t n = strlen(in);
	char *clean = malloc(n + 1);
	if (!clean)
		return -ENOMEM;
	size_t m = 0, pad = 0;
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)in[i]))
			clean[m++] = in[i];
	clean[m] = 0;
	if (m == 0 || m % 4 != 0 || m > INT32_MAX) {
		free(clean);
		return -EINVAL;
	}
	pad = (clean[m - 1] == '=') + (m > 1 && clean[m - 2] == '=');
	char *buf = malloc(m / 4 * 3 + 1);
	int r = buf ? EVP_DecodeBlock((unsigned char *)buf, (const unsigned char *)clean, (int)m) : -1;
	free(clean);
	if (!buf)
		return -ENOMEM;
	if (r < 0 || (size_t)r < pad) {
		free(buf);
		return -EINVAL;
	}
	*out_len = (size_t)r - pad;
	buf[*out_len] = 0;
	*out = buf;
	return 0;
}

int sk_kubeconfig_load(const char *path, struct sk_kubeconfig *out, struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	size_t len = 0;
	char *buf = sk_read_file(path, KUBECONFIG_MAX, &len, err);
	if (!buf)
		return err && err->code ? -err->code : -EIO;
	int rc;
	cJSON *docs = NULL;
	bool is_json;
	rc = sk_manifest_parse(path, buf, len, &docs, &is_json, err);
	free(buf);
	if (rc < 0)
		return rc;
	const cJSON *doc = cJSON_GetArrayItem(docs, 0);
	const char *cur = str(doc, "current-context");
	const cJSON *ctx = cur ? named(doc, "contexts", "context", cur) : NULL;
	if (cur && !ctx) {
		rc = sk_err_set(err, EINVAL, "kubeconfig %s: current-context %s is not among its contexts", path, cur);
		goto out;
	}
	const cJSON *cluster = named(doc, "clusters", "cluster", ctx ? str(ctx, "cluster") : NULL);
	const cJSON *user = named(doc, "users", "user", ctx ? str(ctx, "user") : NULL);
	const char *server = str(cluster, "server");
	if (!server || strncmp(server, "https://", 8) != 0) {
		rc = sk_err_set(err, EINVAL, "kubeconfig %s: the cluster has no https:// server", path);
		goto out;
	}
	const cJSON *insecure = cJSON_GetObjectItemCaseSensitive(cluster, "insecure-skip-tls-verify");
	if (cJSON_IsTrue(insecure) || (cJSON_IsString(insecure) && strcmp(insecure->valuestring, "true") == 0)) {
		rc = sk_err_set(err, EINVAL, "kubeconfig %s: insecure-skip-tls-verify is refused", path);
		goto out;
	}
	out->server = strdup(server);
	if (out->server) {
		size_t sl = strlen(out->server);
		while (sl > 8 && out->server[sl - 1] == '/')
			out->server[--sl] = 0;
	}
	const char *ca_data = str(cluster, "certificate-authority-data"), *ca_file = str(cluster, "certificate-authority");
	if (ca_data && (rc = b64_decode(ca_data, &out->ca_pem, &out->ca_pem_len)) < 0) {
		rc = sk_err_set(err, -rc, "kubeconfig %s: certificate-authority-data is not base64", path);
		goto out;
	}
	if (ca_file && !(out->ca_file = strdup(ca_file))) {
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	const char *token = str(user, "token"), *token_file = str(user, "tokenFile");
	if (token) {
		out->token = dup_line(token, strlen(token));
	} else if (token_file) {
		size_t tl = 0;
		char *t = sk_read_file(token_file, 65536, &tl, err);
		if (!t) {
			rc = sk_err_prefix(err, "kubeconfig %s: tokenFile", path);
			goto out;
		}
		out->token = dup_line(t, tl);
		free(t);
	} else {
		rc = sk_err_set(err, EINVAL, "kubeconfig %s: the user has no token or tokenFile", path);
		goto out;
	}
	if (!out->server || !out->token) {
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (!out->token[0]) {
		rc = sk_err_set(err, EINVAL, "kubeconfig %s: the token is empty", path);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(docs);
	if (rc < 0)
		sk_kubeconfig_free(out);
	return rc;
}

void sk_kubeconfig_free(struct sk_kubeconfig *kc)
{
	if (kc->token)
		memset(kc->token, 0, strlen(kc->token));
	free(kc->server);
	free(kc->ca_pem);
	free(kc->ca_file);
	free(kc->token);
	memset(kc, 0, sizeof(*kc));
}

struct body {
	char *buf;
	size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct body *b = userdata;
	size_t add = size * n;
	if (b->len + add > SK_KUBE_MAX_BODY)
		return 0;  /* libcurl fails the transfer */
	char *nb = realloc(b->buf, b->len + add + 1);
	if (!nb)
		return 0;
	memcpy(nb + b->len, p, add);
	b->buf = nb;
	b->len += add;
	b->buf[b->len] = 0;
	return add;
}

/* Kubernetes names are DNS labels/subdomains: nothing to escape, so refuse anything else in a path */
static bool name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 253)
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* One GET of /api/v1/namespaces/NS/RESOURCE/NAME. */
static int kube_get(struct sk_curl *cu, const struct sk_kubeconfig *kc, const char *resource, const char *ns,
		    const char *name, char **body, size_t *len, struct sk_err *err)
{
	*body = NULL;
	*len = 0;
	if (!name_ok(ns) || !name_ok(name))
		return sk_err_set(err, EINVAL, "%s %s/%s: not a Kubernetes name", resource, ns ? ns : "", name ? name : "");
	int rc = sk_curl_load(cu, SK_CURL_SONAME, err);
	if (rc < 0)
		return rc;
	char *url = NULL, *auth = NULL;
	struct curl_slist *hdr = NULL;
	CURL *c = NULL;
	struct body b = { 0 };
	if (asprintf(&url, "%s/api/v1/namespaces/%s/%s/%s", kc->server, ns, resource, name) < 0) {
		url = NULL;
		goto nomem;
	}
	if (asprintf(&auth, "Authorization: Bearer %s", kc->token) < 0) {
		auth = NULL;
		goto nomem;
	}
	struct curl_slist *h1 = cu->slist_append(NULL, auth);
	struct curl_slist *h2 = h1 ? cu->slist_append(h1, "Accept: application/json") : NULL;
	hdr = h2 ? h2 : h1;
	if (!h2 || !(c = cu->easy_init()))
		goto nomem;
	cu->easy_setopt(c, CURLOPT_URL, url);
	cu->easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	cu->easy_setopt(c, CURLOPT_WRITEDATA, &b);
	cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	cu->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  /* the token goes to the API server and nowhere else */
	cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(c, CURLOPT_NOPROXY, "*");        /* the node's proxy settings are not the API server's */
	/* the runtime waits for ADD on the pod's start: bounded well inside kubelet's runtime timeout */
	cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	cu->easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	if (kc->ca_pem) {
		struct curl_blob blob = { .data = kc->ca_pem, .len = kc->ca_pem_len, .flags = CURL_BLOB_COPY };
		cu->easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
	} else if (kc->ca_file) {
		cu->easy_setopt(c, CURLOPT_CAINFO, kc->ca_file);
	}
	CURLcode cc = cu->easy_perform(c);
	long status = 0;
	cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK) {
		bool unreachable = cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
				   cc == CURLE_COULDNT_RESOLVE_HOST;
		rc = sk_err_set(err, unreachable ? EAGAIN : EIO, "GET %s: %s", url, cu->easy_strerror(cc));
		goto out;
	}
	if (status != 200) {
		cJSON *st = b.buf ? cJSON_ParseWithLength(b.buf, b.len) : NULL;
		const char *msg = str(st, "message");
		rc = sk_err_set(err, status == 404 ? ENOENT : EIO, "GET %s: HTTP %ld%s%s", url, status, msg ? ": " : "",
				msg ? msg : "");
		cJSON_Delete(st);
		goto out;
	}
	*body = b.buf;
	*len = b.len;
	b.buf = NULL;
	rc = 0;
	goto out;
nomem:
	rc = sk_err_set(err, ENOMEM, "out of memory");
out:
	if (c)
		cu->easy_cleanup(c);
	cu->slist_free_all(hdr);
	if (auth)
		memset(auth, 0, strlen(auth));
	free(auth);
	free(url);
	free(b.buf);
	return rc;
}

int sk_kube_get_pod(struct sk_curl *cu, const struct sk_kubeconfig *kc, const char *ns, const char *name, char **body,
		    size_t *len, struct sk_err *err)
{
	return kube_get(cu, kc, "pods", ns, name, body, len, err);
}

int sk_kube_get_configmap(struct sk_curl *cu, const struct sk_kubeconfig *kc, const char *ns, const char *name,
			  char **body, size_t *len, struct sk_err *err)
{
	return kube_get(cu, kc, "configmaps", ns, name, body, len, err);
}

int sk_kube_configmap_policy(const char *json, size_t len, struct sk_kube_pod *pod, struct sk_err *err)
{
	cJSON *cm = cJSON_ParseWithLength(json, len);
	const char *pol = str(obj(cm, "data"), SK_KUBE_POLICY_KEY);
	int rc = 0;
	if (!pol || !pol[0]) {
		rc = sk_err_set(err, EINVAL, "configmap %s: no %s", pod->policy_configmap, SK_KUBE_POLICY_KEY);
	} else {
		free(pod->policy);
		pod->policy_len = strlen(pol);
		if (!(pod->policy = strdup(pol)))
			rc = sk_err_set(err, ENOMEM, "out of memory");
	}
	cJSON_Delete(cm);
	return rc;
}

/* The ConfigMap of the pod's stockade-policy volume (the one stockade-init and the sidecar mount), or NULL. */
static const char *policy_volume(const cJSON *spec)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(spec, "volumes")) {
		const char *n = str(v, "name");
		if (n && strcmp(n, SK_KUBE_POLICY_VOLUME) == 0)
			return str(obj(v, "configMap"), "name");
	}
	return NULL;
}

int sk_kube_pod_decide(const char *json, size_t len, const char *want_uid, struct sk_kube_pod *out,
		       struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *pod = cJSON_ParseWithLength(json, len);
	int rc = 0;
	const cJSON *meta = obj(pod, "metadata");
	if (!meta || !obj(pod, "spec")) {
		rc = sk_err_set(err, EINVAL, "pod: not a pod object (no metadata or spec)");
		goto out;
	}
	const char *uid = str(meta, "uid");
	if (want_uid && want_uid[0] && (!uid || strcmp(uid, want_uid) != 0)) {
		rc = sk_err_set(err, ESTALE, "pod: uid %s is not the sandbox's %s (the pod was replaced)", uid ? uid : "(none)",
				want_uid);
		goto out;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj(pod, "spec"), "hostNetwork"))) {
		out->kind = SK_KUBE_POD_HOST_NETWORK;
		goto out;
	}
	const char *wrapped = str(obj(meta, "labels"), SK_KUBE_LABEL_WRAPPED);
	if (!wrapped || strcmp(wrapped, "true") != 0) {
		out->kind = SK_KUBE_POD_UNWRAPPED;
		goto out;
	}
	const char *pol = str(obj(meta, "annotations"), SK_KUBE_ANN_NETNS_POLICY);
	if (!pol || !pol[0]) {
		/* no policy of its own: the ConfigMap its policy volume mounts (the injector's pods), read next */
		const char *cm = policy_volume(obj(pod, "spec"));
		if (!cm || !cm[0]) {
			rc = sk_err_set(err, EINVAL, "pod: labelled %s=true but has no %s annotation and no %s "
					"ConfigMap volume", SK_KUBE_LABEL_WRAPPED, SK_KUBE_ANN_NETNS_POLICY,
					SK_KUBE_POLICY_VOLUME);
			goto out;
		}
		out->kind = SK_KUBE_POD_WRAPPED;
		if (!(out->policy_configmap = strdup(cm)))
			rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	out->kind = SK_KUBE_POD_WRAPPED;
	out->policy_len = strlen(pol);
	out->policy = strdup(pol);
	if (!out->policy)
		rc = sk_err_set(err, ENOMEM, "out of memory");
out:
	cJSON_Delete(pod);
	return rc;
}

void sk_kube_pod_free(struct sk_kube_pod *p)
{
	free(p->policy);
	free(p->policy_configmap);
	memset(p, 0, sizeof(*p));
}

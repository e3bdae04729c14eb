/* injector/review.c — see review.h. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "injector/jsonpatch.h"
#include "injector/review.h"
#include "policy/domain.h"
#include "policy/k8s/inject.h"
#include "policy/guardrails.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"

#define REVIEW_API "admission.k8s.io/v1"
#define SA_VOLUME_PREFIX "kube-api-access-"

/* cJSON records a failed parse in a static of its own (cJSON_GetErrorPtr), whoever the caller: workers
 * parse one at a time so that write never races. Parsing is a small part of a request. */
static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;

const char *sk_review_verdict_name(enum sk_review_verdict v)
{
	switch (v) {
	case SK_REVIEW_SKIPPED: return "skipped";
	case SK_REVIEW_UNCHANGED: return "unchanged";
	case SK_REVIEW_PATCHED: return "patched";
	case SK_REVIEW_REFUSED: return "refused";
	}
	return "?";
}

void sk_review_out_free(struct sk_review_out *out)
{
	free(out->body);
	out->body = NULL;
	out->body_len = 0;
}

/* ---- the text, before cJSON sees it ---- */

static void line_col(const char *buf, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int at_err(struct sk_err *err, const char *buf, size_t off, const char *what)
{
	unsigned line, col;
	line_col(buf, off, &line, &col);
	return sk_err_set(err, EINVAL, "request body:%u:%u: %s", line, col, what);
}

/* Length of the UTF-8 sequence at s (at most n bytes), or 0 when it is not well formed (overlong forms,
 * surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

/* What cJSON lets through: raw control bytes inside strings (and NUL anywhere), invalid UTF-8. */
static int prescan(const char *buf, size_t len, struct sk_err *err)
{
	const unsigned char *s = (const unsigned char *)buf;
	bool in_str = false, esc = false;
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		if (c < 0x20 && (in_str || (c != ' ' && c != '\t' && c != '\n' && c != '\r')))
			return at_err(err, buf, i, "a control byte (JSON needs it escaped, and only inside a string)");
		size_t n = utf8_len(s + i, len - i);
		if (!n)
			return at_err(err, buf, i, "not UTF-8");
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		}
		i += n;
	}
	return 0;
}

/* ---- the tree ---- */

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Duplicate keys (which cJSON keeps, answering lookups with the first while Go's decoder keeps the last),
 * inexact numbers, depth. `path` names the place for messages. */
static int check_tree(const cJSON *x, unsigned depth, char *path, size_t pathsz, struct sk_err *err)
{
	if (depth > SK_REVIEW_MAX_DEPTH)
		return sk_err_set(err, EINVAL, "request body: %s: nested deeper than %d", path, SK_REVIEW_MAX_DEPTH);
	if (cJSON_IsNumber(x)) {
		if (!isfinite(x->valuedouble) || fabs(x->valuedouble) >= 9007199254740992.0)
			return sk_err_set(err, EINVAL, "request body: %s: number out of range (expected |n| < 2^53)",
					  path);
		return 0;
	}
	if (!cJSON_IsObject(x) && !cJSON_IsArray(x))
		return 0;
	size_t n = 0, plen = strlen(path);
	for (const cJSON *c = x->child; c; c = c->next)
		n++;
	if (cJSON_IsObject(x) && n > 1) {
		const char **keys = malloc(n * sizeof(*keys));
		if (!keys)
			return sk_err_set(err, ENOMEM, "request body: out of memory");
		size_t i = 0;
		for (const cJSON *c = x->child; c; c = c->next)
			keys[i++] = c->string;
		qsort(keys, n, sizeof(*keys), cmp_keys);
		for (i = 1; i < n; i++) {
			if (!strcmp(keys[i - 1], keys[i])) {
				int r = sk_err_set(err, EINVAL, "request body: %s: key '%.64s' appears twice", path, keys[i]);
				free(keys);
				return r;
			}
		}
		free(keys);
	}
	unsigned i = 0;
	for (const cJSON *c = x->child; c; c = c->next, i++) {
		if (cJSON_IsObject(x))
			(void)snprintf(path + plen, pathsz - plen, ".%s", c->string);
		else
			(void)snprintf(path + plen, pathsz - plen, "[%u]", i);
		int r = check_tree(c, depth + 1, path, pathsz, err);
		path[plen] = '\0';
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- fields with exact types ---- */

enum need { OPTIONAL, REQUIRED };

static int field(const cJSON *o, const char *at, const char *k, int type, enum need need, const cJSON **out,
		 struct sk_err *err)
{
	static const char *const names[] = { [cJSON_String] = "a string", [cJSON_Object] = "an object",
					     [cJSON_Array] = "an array", [cJSON_True] = "a boolean" };
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (need == REQUIRED)
			return sk_err_set(err, EINVAL, "request body: %s.%s: missing (expected %s)", at, k, names[type]);
		return 0;
	}
	bool ok = type == cJSON_True ? cJSON_IsBool(v) : (v->type & 0xff) == type;
	if (!ok)
		return sk_err_set(err, EINVAL, "request body: %s.%s: expected %s", at, k, names[type]);
	*out = v;
	return 0;
}

/* The string of an item field() returned (REQUIRED ones are never NULL; "" keeps the analyzer sure). */
static const char *sv(const cJSON *v)
{
	return v && v->valuestring ? v->valuestring : "";
}

static bool str_eq(const cJSON *v, const char *want)
{
	return v && !strcmp(v->valuestring, want);
}

/* For log lines: printable ASCII only, cut to fit. */
static void sanitise(char *dst, size_t dstsz, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < dstsz; i++)
		dst[i] = (src[i] > 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

/* ---- the response ---- */

static char *base64(const char *in, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	const unsigned char *s = (const unsigned char *)in;
	size_t i = 0;
	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

/* patch: the JSON Patch text (NULL: none); message: the refusal (NULL: allowed). */
static int respond(struct sk_review_out *out, const char *patch, const char *message, struct sk_err *err)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "apiVersion", REVIEW_API);
	cJSON_AddStringToObject(root, "kind", "AdmissionReview");
	cJSON *resp = cJSON_AddObjectToObject(root, "response");
	cJSON_AddStringToObject(resp, "uid", out->uid);
	cJSON_AddBoolToObject(resp, "allowed", message == NULL);
	if (message) {
		cJSON *st = cJSON_AddObjectToObject(resp, "status");
		cJSON_AddNumberToObject(st, "code", 403);
		cJSON_AddStringToObject(st, "reason", "Forbidden");
		cJSON_AddStringToObject(st, "message", message);
	}
	char *b64 = patch ? base64(patch, strlen(patch)) : NULL;
	if (patch) {
		cJSON_AddStringToObject(resp, "patchType", "JSONPatch");
		cJSON_AddStringToObject(resp, "patch", b64 ? b64 : "");
	}
	/* cJSON's builders skip what they cannot allocate: a response missing a part is not sent */
	bool whole = resp && cJSON_GetObjectItemCaseSensitive(resp, "uid") &&
		     cJSON_GetObjectItemCaseSensitive(resp, "allowed") && (!patch || (b64 && cJSON_GetObjectItemCaseSensitive(resp, "patch"))) &&
		     (!message || cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(resp, "status"), "message"));
	out->body = whole ? cJSON_PrintUnformatted(root) : NULL;
	free(b64);
	cJSON_Delete(root);
	if (!out->body)
		return sk_err_set(err, ENOMEM, "response: out of memory");
	out->body_len = strlen(out->body);
	return 0;
}

/* ---- the pod ---- */

static bool sa_volume(const cJSON *v)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(v, "name");
	if (!cJSON_IsString(n) || strncmp(n->valuestring, SA_VOLUME_PREFIX, strlen(SA_VOLUME_PREFIX)))
		return false;
	const cJSON *src;
	cJSON_ArrayForEach(src, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "projected"),
								  "sources")) {
		if (cJSON_GetObjectItemCaseSensitive(src, "serviceAccountToken"))
			return true;
	}
	return false;
}

/* The ServiceAccount admission plugin runs before the webhooks and gives a pod that does not say
 * automountServiceAccountToken a projected token volume (kube-api-access-XXXXX) mounted into every
 * container. The wrap defaults that field to false, as the chart and `inject` do, so the token goes too:
 * else the agent would hold an API credential that the same pod applied through `inject` has not. */
static void undo_sa_token(cJSON *pod)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
	const cJSON *am = cJSON_GetObjectItemCaseSensitive(spec, "automountServiceAccountToken");
	cJSON *vols = cJSON_GetObjectItemCaseSensitive(spec, "volumes");
	if ((am && !cJSON_IsNull(am)) || !cJSON_IsArray(vols))
		return;
	for (cJSON *v = vols->child, *next; v; v = next) {
		next = v->next;
		if (!sa_volume(v))
			continue;
		const char *name = cJSON_GetObjectItemCaseSensitive(v, "name")->valuestring;
		static const char *const lists[] = { "initContainers", "containers", "ephemeralContainers" };
		for (size_t l = 0; l < 3; l++) {
			cJSON *c;
			cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[l])) {
				cJSON *mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
				if (!cJSON_IsArray(mounts))
					continue;
				for (cJSON *m = mounts->child, *mn; m; m = mn) {
					mn = m->next;
					const cJSON *mname = cJSON_GetObjectItemCaseSensitive(m, "name");
					if (cJSON_IsString(mname) && !strcmp(mname->valuestring, name))
						cJSON_Delete(cJSON_DetachItemViaPointer(mounts, m));
				}
				if (!mounts->child)
					cJSON_DeleteItemFromObjectCaseSensitive(c, "volumeMounts");
			}
		}
		cJSON_Delete(cJSON_DetachItemViaPointer(vols, v));
	}
	if (!vols->child)
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "volumes");
}

/* The API server defaults enableServiceLinks to true before admission, so here "true" cannot be told from
 * "unset"; the wrap defaults it to false (the chart and `inject` do): the agent gets no environment naming
 * every Service of the namespace, and admission gives the pod `inject` gives. */
static void undo_service_links_default(cJSON *pod)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "enableServiceLinks")))
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "enableServiceLinks");
}

static int wrap_pod(const cJSON *pod, const struct sk_review_cfg *cfg, struct sk_review_out *out,
		    struct sk_err *err)
{
	cJSON *copy = cJSON_Duplicate(pod, 1);
	if (!copy)
		return sk_err_set(err, ENOMEM, "request: out of memory");
	undo_sa_token(copy);
	undo_service_links_default(copy);
	struct sk_err ierr = { 0 };
	int r = sk_inject_doc(copy, cfg->inject, &ierr);
	if (r == -EINVAL) {
		char msg[SK_ERR_MSG_MAX + 64];
		cJSON_Delete(copy);
		out->verdict = SK_REVIEW_REFUSED;
		(void)snprintf(out->reason, sizeof(out->reason), "%s", ierr.msg);
		(void)snprintf(msg, sizeof(msg), "stockade: this pod cannot be sandboxed: %s", ierr.msg);
		return respond(out, NULL, msg, err);
	}
	if (r < 0) {
		cJSON_Delete(copy);
		return sk_err_set(err, -r, "inject: %s", ierr.msg);
	}
	cJSON *patch = sk_jsonpatch_diff(pod, copy);
	cJSON_Delete(copy);
	if (!patch)
		return sk_err_set(err, ENOMEM, "patch: out of memory");
	if (!cJSON_GetArraySize(patch)) {
		cJSON_Delete(patch);
		out->verdict = SK_REVIEW_UNCHANGED;
		return respond(out, NULL, NULL, err);
	}
	char *text = sk_jsonpatch_print(patch);
	cJSON_Delete(patch);
	if (!text)
		return sk_err_set(err, ENOMEM, "patch: out of memory");
	out->verdict = SK_REVIEW_PATCHED;
	r = respond(out, text, NULL, err);
	free(text);
	return r;
}

/* What every request carries, read with its exact types (the object is read by each handler). */
struct review_req {
	const cJSON *req, *op, *sub, *ns, *group, *version, *kind;
};

static int read_request(const cJSON *root, struct sk_review_out *out, struct review_req *q, struct sk_err *err)
{
	const cJSON *api, *kind, *uid, *rkind;
	int r;
	if (!cJSON_IsObject(root))
		return sk_err_set(err, EINVAL, "request body: expected an AdmissionReview object");
	if ((r = field(root, "(review)", "apiVersion", cJSON_String, REQUIRED, &api, err)) < 0 ||
	    (r = field(root, "(review)", "kind", cJSON_String, REQUIRED, &kind, err)) < 0)
		return r;
	if (!str_eq(api, REVIEW_API))
		return sk_err_set(err, EINVAL, "request body: apiVersion '%.64s' is not " REVIEW_API
				  " (the webhook registers admissionReviewVersions: [v1])", sv(api));
	if (!str_eq(kind, "AdmissionReview"))
		return sk_err_set(err, EINVAL, "request body: kind '%.64s' is not AdmissionReview", sv(kind));
	if ((r = field(root, "(review)", "request", cJSON_Object, REQUIRED, &q->req, err)) < 0 ||
	    (r = field(q->req, "request", "uid", cJSON_String, REQUIRED, &uid, err)) < 0)
		return r;
	size_t ulen = strlen(sv(uid));
	if (ulen == 0 || ulen > SK_REVIEW_UID_MAX)
		return sk_err_set(err, EINVAL, "request body: request.uid: expected 1 to %d characters",
				  SK_REVIEW_UID_MAX);
	for (size_t i = 0; i < ulen; i++)
		if (sv(uid)[i] <= 0x20 || sv(uid)[i] >= 0x7f)
			return sk_err_set(err, EINVAL, "request body: request.uid: expected printable ASCII");
	memcpy(out->uid, sv(uid), ulen + 1);
	if ((r = field(q->req, "request", "kind", cJSON_Object, REQUIRED, &rkind, err)) < 0 ||
	    (r = field(rkind, "request.kind", "group", cJSON_String, REQUIRED, &q->group, err)) < 0 ||
	    (r = field(rkind, "request.kind", "version", cJSON_String, REQUIRED, &q->version, err)) < 0 ||
	    (r = field(rkind, "request.kind", "kind", cJSON_String, REQUIRED, &q->kind, err)) < 0 ||
	    (r = field(q->req, "request", "operation", cJSON_String, REQUIRED, &q->op, err)) < 0 ||
	    (r = field(q->req, "request", "subResource", cJSON_String, OPTIONAL, &q->sub, err)) < 0 ||
	    (r = field(q->req, "request", "namespace", cJSON_String, OPTIONAL, &q->ns, err)) < 0)
		return r;
	if (q->ns) {
		sanitise(out->ns, sizeof(out->ns), q->ns->valuestring);
		if (!sk_dns_label(q->ns->valuestring, strlen(q->ns->valuestring)))
			return sk_err_set(err, EINVAL, "request body: request.namespace: '%.64s' is not a namespace "
					  "name", q->ns->valuestring);
	}
	return 0;
}

static int handle_tree(const cJSON *root, const struct sk_review_cfg *cfg, const char *pod_security,
		       struct sk_review_out *out, struct sk_err *err)
{
	const cJSON *api, *kind, *obj, *meta, *name;
	struct review_req q = { 0 };
	int r = read_request(root, out, &q, err);
	if (r < 0)
		return r;
	/* A subresource (binding, eviction, ephemeralcontainers...) creates no pod; anything but CREATE
	 * adds no container. Neither is registered, but they are not for the injector to refuse. */
	if ((q.sub && q.sub->valuestring[0]) || !str_eq(q.op, "CREATE")) {
		out->verdict = SK_REVIEW_SKIPPED;
		return respond(out, NULL, NULL, err);
	}
	/* Fail closed on a registration mistake: a CREATE of anything but a pod is not let through unread. */
	if (!str_eq(q.group, "") || !str_eq(q.version, "v1") || !str_eq(q.kind, "Pod")) {
		out->verdict = SK_REVIEW_REFUSED;
		(void)snprintf(out->reason, sizeof(out->reason), "request.kind is not v1 Pod");
		return respond(out, NULL, "stockade: stockade-injector wraps only v1 Pods (check the webhook's rules)",
			       err);
	}
	if (!q.ns)
		return sk_err_set(err, EINVAL, "request body: request.namespace: missing (expected a string)");
	if ((r = field(q.req, "request", "object", cJSON_Object, REQUIRED, &obj, err)) < 0 ||
	    (r = field(obj, "request.object", "apiVersion", cJSON_String, REQUIRED, &api, err)) < 0 ||
	    (r = field(obj, "request.object", "kind", cJSON_String, REQUIRED, &kind, err)) < 0 ||
	    (r = field(obj, "request.object", "metadata", cJSON_Object, OPTIONAL, &meta, err)) < 0 ||
	    (r = field(meta, "request.object.metadata", "name", cJSON_String, OPTIONAL, &name, err)) < 0)
		return r;
	if (!str_eq(api, "v1") || !str_eq(kind, "Pod"))
		return sk_err_set(err, EINVAL, "request body: request.object: expected apiVersion v1, kind Pod");
	if (!name || !name->valuestring[0])
		(void)field(meta, "request.object.metadata", "generateName", cJSON_String, OPTIONAL, &name, err);
	sanitise(out->pod, sizeof(out->pod), name ? name->valuestring : "");
	for (size_t i = 0; i < cfg->n_exclude; i++) {
		if (!strcmp(q.ns->valuestring, cfg->exclude_ns[i])) {
			out->verdict = SK_REVIEW_SKIPPED;
			return respond(out, NULL, NULL, err);
		}
	}
	/* the per-pod opt-out: only the exact "false", any other value (or none) is wrapped */
	const cJSON *anns = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
	const cJSON *opt = cJSON_IsObject(anns) ? cJSON_GetObjectItemCaseSensitive(anns, SK_REVIEW_OPT_OUT_ANNOTATION)
						: NULL;
	if (opt && cJSON_IsString(opt) && !strcmp(opt->valuestring, "false")) {
		out->verdict = SK_REVIEW_SKIPPED;
		(void)snprintf(out->reason, sizeof(out->reason), "opted out (" SK_REVIEW_OPT_OUT_ANNOTATION ": false)");
		return respond(out, NULL, NULL, err);
	}
	/* in CNI mode the wrapped pod adds no capability (the node's plugin programs its network): baseline and
	 * restricted admit it, so it is wrapped like any other */
	if (pod_security && !(cfg->inject && cfg->inject->cni)) {
		char msg[768];
		out->verdict = SK_REVIEW_REFUSED;
		(void)snprintf(out->reason, sizeof(out->reason), "namespace enforces Pod Security %s", pod_security);
		(void)snprintf(msg, sizeof(msg),
			       "stockade: namespace %s enforces Pod Security \"%s\" (label pod-security.kubernetes.io/enforce), "
			       "which forbids the NET_ADMIN capability stockade-init needs to program the pod's network "
			       "rules, so the wrapped pod could not start: label the namespace "
			       "pod-security.kubernetes.io/enforce=privileged (stockade's admission policy holds its pods to "
			       "baseline's other rules), or annotate the pod " SK_REVIEW_OPT_OUT_ANNOTATION ": \"false\" to "
			       "leave it unwrapped", out->ns, pod_security);
		return respond(out, NULL, msg, err);
	}
	return wrap_pod(obj, cfg, out, err);
}

/* The body as a JSON tree, read strictly (review.h); *root owned by the caller. */
static int parse_review(const char *body, size_t len, const struct sk_review_cfg *cfg, cJSON **root,
			struct sk_err *err)
{
	*root = NULL;
	if (len > cfg->max_body)
		return sk_err_set(err, EFBIG, "request body: %zu bytes, more than the %zu allowed", len, cfg->max_body);
	int r = prescan(body, len, err);
	if (r < 0)
		return r;
	const char *end = NULL;
	pthread_mutex_lock(&parse_lock);
	cJSON *tree = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	pthread_mutex_unlock(&parse_lock);
	if (!tree) {
		size_t off = end && end >= body && end <= body + len ? (size_t)(end - body) : 0;
		/* cJSON also fails this way when out of memory; a request this small is a syntax error */
		return at_err(err, body, off, "not JSON");
	}
	if (end) {
		for (size_t off = (size_t)(end - body); off < len; off++) {
			if (body[off] != ' ' && body[off] != '\t' && body[off] != '\n' && body[off] != '\r') {
				cJSON_Delete(tree);
				return at_err(err, body, off, "more after the AdmissionReview (expected one JSON value)");
			}
		}
	}
	char path[512] = "(review)";
	if ((r = check_tree(tree, 0, path, sizeof(path), err)) < 0) {
		cJSON_Delete(tree);
		return r;
	}
	*root = tree;
	return 0;
}

int sk_review_handle_pod_security(const char *body, size_t len, const struct sk_review_cfg *cfg,
				  const char *pod_security, struct sk_review_out *out, struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *root = NULL;
	int r = parse_review(body, len, cfg, &root, err);
	if (r == 0)
		r = handle_tree(root, cfg, pod_security, out, err);
	cJSON_Delete(root);
	if (r < 0)
		sk_review_out_free(out);
	return r;
}

int sk_review_handle(const char *body, size_t len, const struct sk_review_cfg *cfg, struct sk_review_out *out,
		     struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *root = NULL;
	int r = parse_review(body, len, cfg, &root, err);
	if (r == 0)
		r = handle_tree(root, cfg, NULL, out, err);
	cJSON_Delete(root);
	if (r < 0)
		sk_review_out_free(out);
	return r;
}

/* ---- a policy object ---- */

/* The policy text checked as `stockade-policy check` does (the files it names live in the sidecar's mounts,
 * not here: not read), diagnostics named "NAME/policy.yaml". 0 valid; 1 invalid with *message (owned) the
 * refusal; <0 out of memory. */
static int check_policy_text(const char *name, const char *text, size_t len, const struct sk_guardrails *g,
			     char **message, struct sk_err *err)
{
	char file[192];
	(void)snprintf(file, sizeof(file), "%.160s/policy.yaml", name);
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex(file, text, len, -1, SK_LOAD_NO_FILE_CHECKS, &p, &diags);
	if (r == 0 && sk_seccomp_check_policy(p, &diags) < 0)
		r = -EINVAL;
	/* Only a valid policy is held to the guardrails: an invalid one's model is not there to compare. */
	const bool exceeds = r == 0 && g && sk_guardrails_check(p, g, &diags) > 0;
	sk_policy_free(p);
	if (exceeds)
		r = -EPERM;
	if (r == 0) {
		sk_diags_free(&diags);
		return 0;
	}
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (f) {
		(void)fprintf(f, r == -EPERM ? "stockade: the policy exceeds the cluster guardrails (stockade-policy check "
				 "--guardrails says the same):\n" : "stockade: the policy is invalid (stockade-policy check says "
				 "the same):\n");
		sk_diags_print(&diags, f);
	}
	sk_diags_free(&diags);
	if (!f || fclose(f) != 0 || !buf) {
		free(buf);
		return sk_err_set(err, ENOMEM, "policy review: out of memory");
	}
	while (n > 0 && buf[n - 1] == '\n')   /* the API server prints the message as it is */
		buf[--n] = '\0';
	*message = buf;
	return 1;
}

static int policy_tree(const cJSON *root, const struct sk_review_cfg *cfg, struct sk_review_out *out,
		       struct sk_err *err)
{
	struct review_req q = { 0 };
	const cJSON *obj, *api, *kind, *meta, *name, *data, *text;
	int r = read_request(root, out, &q, err);
	if (r < 0)
		return r;
	/* DELETE and CONNECT bring no policy; a subresource is no ConfigMap's data */
	if ((q.sub && q.sub->valuestring[0]) || (!str_eq(q.op, "CREATE") && !str_eq(q.op, "UPDATE"))) {
		out->verdict = SK_REVIEW_SKIPPED;
		return respond(out, NULL, NULL, err);
	}
	if (!str_eq(q.group, "") || !str_eq(q.version, "v1") || !str_eq(q.kind, "ConfigMap")) {
		out->verdict = SK_REVIEW_REFUSED;
		(void)snprintf(out->reason, sizeof(out->reason), "request.kind is not v1 ConfigMap");
		return respond(out, NULL, "stockade: the policy review reads only v1 ConfigMaps (check the webhook's "
			       "rules)", err);
	}
	if ((r = field(q.req, "request", "object", cJSON_Object, REQUIRED, &obj, err)) < 0 ||
	    (r = field(obj, "request.object", "apiVersion", cJSON_String, REQUIRED, &api, err)) < 0 ||
	    (r = field(obj, "request.object", "kind", cJSON_String, REQUIRED, &kind, err)) < 0 ||
	    (r = field(obj, "request.object", "metadata", cJSON_Object, REQUIRED, &meta, err)) < 0 ||
	    (r = field(meta, "request.object.metadata", "name", cJSON_String, REQUIRED, &name, err)) < 0 ||
	    (r = field(obj, "request.object", "data", cJSON_Object, OPTIONAL, &data, err)) < 0 ||
	    (r = field(data, "request.object.data", SK_REVIEW_POLICY_KEY, cJSON_String, OPTIONAL, &text, err)) < 0)
		return r;
	if (!str_eq(api, "v1") || !str_eq(kind, "ConfigMap"))
		return sk_err_set(err, EINVAL, "request body: request.object: expected apiVersion v1, kind ConfigMap");
	sanitise(out->pod, sizeof(out->pod), name->valuestring);
	if (!text) {
		out->verdict = SK_REVIEW_REFUSED;
		(void)snprintf(out->reason, sizeof(out->reason), "no data." SK_REVIEW_POLICY_KEY);
		return respond(out, NULL, "stockade: a ConfigMap labelled " SK_REVIEW_POLICY_LABEL " holds its policy in "
			       "data." SK_REVIEW_POLICY_KEY ", which is missing", err);
	}
	char *message = NULL;
	r = check_policy_text(out->pod, text->valuestring, strlen(text->valuestring), cfg->guardrails, &message, err);
	if (r < 0)
		return r;
	if (r == 0) {
		out->verdict = SK_REVIEW_UNCHANGED;
		return respond(out, NULL, NULL, err);
	}
	if (!message)
		return sk_err_set(err, ENOMEM, "policy review: out of memory");
	out->verdict = SK_REVIEW_REFUSED;
	const char *first = strchr(message, '\n');
	(void)snprintf(out->reason, sizeof(out->reason), "%s", first ? first + 1 : message);
	r = respond(out, NULL, message, err);
	free(message);
	return r;
}

int sk_review_handle_policy(const char *body, size_t len, const struct sk_review_cfg *cfg, struct sk_review_out *out,
			    struct sk_err *err)
{
	memset(out, 0, sizeof(*out));
	cJSON *root = NULL;
	int r = parse_review(body, len, cfg, &root, err);
	if (r == 0)
		r = policy_tree(root, cfg, out, err);
	cJSON_Delete(root);
	if (r < 0)
		sk_review_out_free(out);
	return r;
}

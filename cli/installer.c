/* cli/installer.c — the cluster mode of the seccomp installer (installer.h): ConfigMaps to profiles, the
 * listing through the Kubernetes API (libcurl, the ServiceAccount token), and the grace period before a
 * profile file is deleted. */
#include "cli/installer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"
#include "policy/seccomp/seccomp.h"
#include "common/curl_dl.h"

int sk_inst_profile_from(const char *source, const char *policy_yaml, size_t len, const char *declared,
			 bool log_denials, struct sk_inst_profile *out, struct sk_err *err)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *pol = NULL;
	struct sk_scmp_profile *prof = NULL;
	char *file = NULL;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (len > SK_INST_MAX_POLICY) {
		sk_err_set(err, EINVAL, "data.policy.yaml is %zu bytes, more than %u", len, SK_INST_MAX_POLICY);
		goto out;
	}
	if (asprintf(&file, "%s:policy.yaml", source) < 0) {
		file = NULL;
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	/* The same two steps as `stockade-policy check`: the loader, then each seccomp name through the
	 * generator, so a refused name is reported at its line and column. Secret files are the sidecar's. */
	if (sk_policy_load_buffer_ex(file, policy_yaml, len, -1, SK_LOAD_NO_FILE_CHECKS, &pol, &diags) < 0 ||
	    sk_seccomp_check_policy(pol, &diags) < 0) {
		if (diags.n > 0)
			sk_err_set(err, EINVAL, "%s:%u:%u: %s", diags.v[0].file, diags.v[0].line, diags.v[0].col,
				   diags.v[0].msg);
		else
			sk_err_set(err, EINVAL, "%s: the policy does not load", file);
		goto out;
	}
	const char *const *allow = (const char *const *)pol->seccomp.allow;
	const char *const *deny = (const char *const *)pol->seccomp.deny;
	struct sk_seccomp_opts opts = {
		.allow = allow, .n_allow = pol->seccomp.n_allow, .deny = deny, .n_deny = pol->seccomp.n_deny,
		.log_denials = log_denials,
	};
	if (sk_seccomp_generate(&opts, &prof, err) < 0) {
		sk_err_prefix(err, "%s", file);
		goto out;
	}
	if ((rc = sk_seccomp_profile_name(allow, pol->seccomp.n_allow, deny, pol->seccomp.n_deny, out->name, err)) < 0)
		goto out;
	/* A pod names the file it needs; serving the section under another name would leave that pod without
	 * its profile while looking healthy. Refuse instead: the pod stays Pending and this line says why. */
	if (declared && strcmp(declared, out->name) != 0) {
		rc = sk_err_set(err, EINVAL, "data.profile is '%s' but the seccomp section of policy.yaml hashes to '%s' "
				"(a chart or inject of another version? docs/install.md#seccomp-profiles)", declared,
				out->name);
		goto out;
	}
	out->text = sk_cli_profile_json(prof, err);
	out->source = strdup(source);
	if (!out->text || !out->source) {
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	if (rc < 0) {
		free(out->text);
		free(out->source);
		out->text = out->source = NULL;
	}
	free(file);
	sk_scmp_profile_free(prof);
	sk_policy_free(pol);
	sk_diags_free(&diags);
	return rc;
}

static const cJSON *obj_get(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *str_get(const cJSON *o, const char *key)
{
	const cJSON *v = obj_get(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool set_has(const struct sk_inst_set *set, const char *name)
{
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->v[i].name, name))
			return true;
	return false;
}

/* One item of the list: good ones into set, bad ones to skip. -ENOMEM only. */
static int one_configmap(const cJSON *item, struct sk_inst_set *set, sk_inst_skip_fn skip, void *ctx)
{
	const cJSON *meta = obj_get(item, "metadata"), *data = obj_get(item, "data");
	const char *ns = str_get(meta, "namespace"), *name = str_get(meta, "name");
	char source[320];
	/* for messages only; two names of at most 253 fit, and a cut one still points at the ConfigMap */
	(void)snprintf(source, sizeof(source), "%s/%s", ns ? ns : "?", name ? name : "?");
	const cJSON *pol = obj_get(data, "policy.yaml");
	const cJSON *declared = obj_get(data, "profile");
	if (!cJSON_IsString(pol)) {
		skip(ctx, source, "no data.policy.yaml (the policy whose seccomp section is the profile)");
		return 0;
	}
	if (declared && !cJSON_IsString(declared)) {
		skip(ctx, source, "data.profile is not a string");
		return 0;
	}
	struct sk_err err = { 0 };
	struct sk_inst_profile p;
	int rc = sk_inst_profile_from(source, pol->valuestring, strlen(pol->valuestring),
				      declared ? declared->valuestring : NULL, set->log_denials, &p, &err);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		skip(ctx, source, err.msg);
		return 0;
	}
	if (set_has(set, p.name)) {
		/* the same section in another release: one file serves both */
		free(p.text);
		free(p.source);
		return 0;
	}
	if (set->n >= SK_INST_MAX_PROFILES) {
		char why[128];
		/* fixed text and a 4-digit number: fits */
		(void)snprintf(why, sizeof(why), "more than %d distinct profiles in the cluster: not served",
			       SK_INST_MAX_PROFILES);
		skip(ctx, source, why);
		free(p.text);
		free(p.source);
		return 0;
	}
	struct sk_inst_profile *nv = realloc(set->v, (set->n + 1) * sizeof(*nv));
	if (!nv) {
		free(p.text);
		free(p.source);
		return -ENOMEM;
	}
	set->v = nv;
	set->v[set->n++] = p;
	return 0;
}

int sk_inst_parse_list(const char *json, size_t len, struct sk_inst_set *set, char **cont, sk_inst_skip_fn skip,
		       void *ctx, struct sk_err *err)
{
	int rc = 0;
	*cont = NULL;
	cJSON *root = cJSON_ParseWithLength(json, len);
	const char *kind = str_get(root, "kind");
	const cJSON *items = obj_get(root, "items");
	/* An empty list may come with "items": null; anything else is not the answer to our request (a
	 * Status, a proxy's HTML page) and must not read as "no profile is needed". */
	if (!kind || strcmp(kind, "ConfigMapList") != 0 || !(cJSON_IsArray(items) || cJSON_IsNull(items))) {
		rc = sk_err_set(err, EINVAL, "the API answer is not a ConfigMapList%s%s", kind ? " but a " : "",
				kind ? kind : "");
		goto out;
	}
	const cJSON *item;
	cJSON_ArrayForEach(item, items)
		if ((rc = one_configmap(item, set, skip, ctx)) < 0) {
			sk_err_set(err, ENOMEM, "out of memory");
			goto out;
		}
	const char *c = str_get(obj_get(root, "metadata"), "continue");
	if (c && *c && !(*cont = strdup(c)))
		rc = sk_err_set(err, ENOMEM, "out of memory");
out:
	cJSON_Delete(root);
	return rc;
}

int sk_inst_add_default(struct sk_inst_set *set, struct sk_err *err)
{
	static const char pol[] = "version: 1\n";
	if (set_has(set, SK_SCMP_DEFAULT_NAME))
		return 0;
	struct sk_inst_profile p;
	int rc = sk_inst_profile_from(SK_INST_DEFAULT_SOURCE, pol, sizeof(pol) - 1, SK_SCMP_DEFAULT_NAME,
				      set->log_denials, &p, err);
	if (rc < 0)
		return rc;
	struct sk_inst_profile *nv = realloc(set->v, (set->n + 1) * sizeof(*nv));
	if (!nv) {
		free(p.text);
		free(p.source);
		return sk_err_set(err, ENOMEM, "out of memory");
	}
	set->v = nv;
	set->v[set->n++] = p;
	return 0;
}

void sk_inst_set_free(struct sk_inst_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->v[i].text);
		free(set->v[i].source);
	}
	free(set->v);
	set->v = NULL;
	set->n = 0;
}

int sk_inst_gc_due(struct sk_inst_gc *gc, const char *const *files, size_t n_files, const struct sk_inst_set *set,
		   time_t now, long grace, char ***due, size_t *n_due)
{
	*due = NULL;
	*n_due = 0;
	/* Forget what is needed again or gone from the directory. */
	size_t keep = 0;
	for (size_t i = 0; i < gc->n; i++) {
		bool on_disk = false;
		for (size_t j = 0; j < n_files && !on_disk; j++)
			on_disk = !strcmp(files[j], gc->v[i].name);
		if (on_disk && !set_has(set, gc->v[i].name))
			gc->v[keep++] = gc->v[i];
	}
	gc->n = keep;
	for (size_t j = 0; j < n_files; j++) {
		if (!sk_seccomp_is_profile_name(files[j]) || set_has(set, files[j]))
			continue;
		size_t i = 0;
		while (i < gc->n && strcmp(gc->v[i].name, files[j]) != 0)
			i++;
		if (i == gc->n) {
			void *nv = realloc(gc->v, (gc->n + 1) * sizeof(*gc->v));
			if (!nv)
				return -ENOMEM;
			gc->v = nv;
			/* fits: profile-shaped, checked above */
			(void)snprintf(gc->v[gc->n].name, sizeof(gc->v[gc->n].name), "%s", files[j]);
			gc->v[gc->n++].since = now;
		}
	}
	keep = 0;
	for (size_t i = 0; i < gc->n; i++) {
		if (now - gc->v[i].since < grace) {
			gc->v[keep++] = gc->v[i];
			continue;
		}
		char **nd = realloc(*due, (*n_due + 1) * sizeof(*nd));
		char *s = strdup(gc->v[i].name);
		if (!nd || !s) {
			free(s);
			if (nd)
				*due = nd;
			return -ENOMEM;
		}
		*due = nd;
		(*due)[(*n_due)++] = s;
	}
	gc->n = keep;
	return 0;
}

void sk_inst_gc_free(struct sk_inst_gc *gc)
{
	free(gc->v);
	gc->v = NULL;
	gc->n = 0;
}

int sk_inst_server_ok(const char *server)
{
	if (!strncmp(server, "https://", 8))
		return server[8] != '\0';
	static const char *const loop[] = { "http://127.0.0.1", "http://[::1]", "http://localhost" };
	for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
		size_t n = strlen(loop[i]);
		/* the host must end there: "http://127.0.0.1.evil.example" is not loopback */
		if (!strncmp(server, loop[i], n) && (server[n] == ':' || server[n] == '/' || server[n] == '\0'))
			return 1;
	}
	return 0;
}

struct body {
	char *buf;
	size_t len;
};

#define SK_INST_MAX_BODY (64u << 20)

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct body *b = userdata;
	size_t add = size * n;
	if (b->len + add > SK_INST_MAX_BODY)
		return 0;  /* libcurl fails the transfer: a page this large is not a ConfigMap list we asked for */
	char *nb = realloc(b->buf, b->len + add + 1);
	if (!nb)
		return 0;
	memcpy(nb + b->len, p, add);
	b->buf = nb;
	b->len += add;
	b->buf[b->len] = 0;
	return add;
}

/* The token file's first line, without trailing whitespace (owned), or NULL with err set. */
static char *read_token(const char *path, struct sk_err *err)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		sk_err_sys(err, errno, "open token %s", path);
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	(void)fclose(f);  /* only read */
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
		line[--n] = 0;
	if (n <= 0) {
		free(line);
		sk_err_set(err, EINVAL, "token %s is empty", path);
		return NULL;
	}
	return line;
}

/* s percent-encoded for a query value (RFC 3986 unreserved characters kept), owned; NULL on ENOMEM. */
static char *query_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(3 * strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '.' || *p == '_' || *p == '~') {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = 0;
	return out;
}

static int get_page(const struct sk_inst_api *api, const char *cont, struct body *b, struct sk_err *err)
{
	const struct sk_curl *cu = api->curl;
	CURL *c = NULL;
	int rc = -EIO;
	char *url = NULL, *auth = NULL, *sel = NULL, *cnt = NULL;
	struct curl_slist *hdr = NULL;
	char *token = read_token(api->token_file, err);
	if (!token)
		return -EACCES;
	sel = query_escape(api->selector);
	cnt = cont ? query_escape(cont) : NULL;
	if (!sel || (cont && !cnt) ||
	    asprintf(&url, "%s/api/v1/configmaps?labelSelector=%s&limit=100%s%s", api->server, sel,
		     cnt ? "&continue=" : "", cnt ? cnt : "") < 0) {
		url = NULL;
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
		auth = NULL;
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	struct curl_slist *h1 = cu->slist_append(hdr, auth);
	struct curl_slist *h2 = h1 ? cu->slist_append(h1, "Accept: application/json") : NULL;
	hdr = h2 ? h2 : h1;
	if (!h2 || !(c = cu->easy_init())) {
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	cu->easy_setopt(c, CURLOPT_URL, url);
	cu->easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	cu->easy_setopt(c, CURLOPT_WRITEDATA, b);
	cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
	cu->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  /* the token goes to the API server and nowhere else */
	cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	cu->easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	if (api->ca_file)
		cu->easy_setopt(c, CURLOPT_CAINFO, api->ca_file);
	CURLcode cc = cu->easy_perform(c);
	long status = 0;
	cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK) {
		sk_err_set(err, EIO, "GET %s/api/v1/configmaps: %s", api->server, cu->easy_strerror(cc));
		goto out;
	}
	if (status != 200) {
		/* 401/403: the token or the ClusterRole (list configmaps) is missing */
		const char *msg = NULL;
		cJSON *st = b->buf ? cJSON_ParseWithLength(b->buf, b->len) : NULL;
		msg = str_get(st, "message");
		sk_err_set(err, EIO, "GET %s/api/v1/configmaps: HTTP %ld%s%s", api->server, status, msg ? ": " : "",
			   msg ? msg : "");
		cJSON_Delete(st);
		goto out;
	}
	rc = 0;
out:
	if (c)
		cu->easy_cleanup(c);
	cu->slist_free_all(hdr);
	free(sel);
	free(cnt);
	if (token)
		memset(token, 0, strlen(token));
	if (auth)
		memset(auth, 0, strlen(auth));
	free(token);
	free(auth);
	free(url);
	return rc;
}

int sk_inst_list(const struct sk_inst_api *api, struct sk_inst_set *set, sk_inst_skip_fn skip, void *ctx,
		 struct sk_err *err)
{
	char *cont = NULL;
	int rc, pages = 0;
	do {
		struct body b = { 0 };
		char *next = NULL;
		rc = get_page(api, cont, &b, err);
		if (rc == 0)
			rc = sk_inst_parse_list(b.buf ? b.buf : "", b.len, set, &next, skip, ctx, err);
		free(b.buf);
		free(cont);
		cont = next;
		/* a server that keeps answering with a continue token must not keep us here forever */
		if (rc == 0 && cont && ++pages >= 10000)
			rc = sk_err_set(err, EIO, "the API server's list never ends (10000 pages)");
	} while (rc == 0 && cont);
	free(cont);
	return rc;
}

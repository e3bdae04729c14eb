/* cni/install.c — see install.h. */
#include "cni/install.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/log.h"
#include "common/read_file.h"

/* The plugin binary is a few MB; anything larger is not it. */
#define BINARY_MAX (256u << 20)
#define SECRET_MAX (64u << 10)

static char *host_path(const struct sk_cni_install *o, const char *path)
{
	char *s = NULL;
	const char *root = o->host_root ? o->host_root : "";
	if (asprintf(&s, "%s%s", root, path) < 0)
		return NULL;
	return s;
}

cJSON *sk_cni_install_entry(const struct sk_cni_install *o)
{
	cJSON *e = cJSON_CreateObject();
	if (!e || !cJSON_AddStringToObject(e, "type", SK_CNI_PLUGIN_TYPE) ||
	    (o->kubeconfig && !cJSON_AddStringToObject(e, "kubeconfig", o->kubeconfig)) ||
	    (o->system_ns && !cJSON_AddStringToObject(e, "systemNamespace", o->system_ns))) {
		cJSON_Delete(e);
		return NULL;
	}
	return e;
}

static bool is_ours(const cJSON *p)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");
	return cJSON_IsString(t) && strcmp(t->valuestring, SK_CNI_PLUGIN_TYPE) == 0;
}

/* A single-plugin configuration as a list: cniVersion and name move to the list, the rest is its plugin. */
static cJSON *conf_to_list(cJSON *conf, struct sk_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(conf, "cniVersion");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(conf, "name");
	if (!cJSON_IsString(v) || !cJSON_IsString(n)) {
		sk_err_set(err, EINVAL, "a single-plugin configuration needs string cniVersion and name");
		return NULL;
	}
	cJSON *list = cJSON_CreateObject();
	cJSON *plugins = NULL;
	if (!list || !cJSON_AddStringToObject(list, "cniVersion", v->valuestring) ||
	    !cJSON_AddStringToObject(list, "name", n->valuestring) ||
	    !(plugins = cJSON_AddArrayToObject(list, "plugins"))) {
		cJSON_Delete(list);
		sk_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(conf, "cniVersion");
	cJSON_DeleteItemFromObjectCaseSensitive(conf, "name");
	cJSON_AddItemToArray(plugins, conf);
	return list;
}

int sk_cni_conf_edit(cJSON **doc, const cJSON *entry, bool remove, struct sk_err *err)
{
	if (!cJSON_IsObject(*doc))
		return sk_err_set(err, EINVAL, "not a JSON object");
	int changed = 0;
	cJSON *plugins = cJSON_GetObjectItemCaseSensitive(*doc, "plugins");
	if (!plugins) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(*doc, "type");
		if (!cJSON_IsString(t))
			return sk_err_set(err, EINVAL, "neither a list (\"plugins\") nor a plugin (\"type\")");
		if (is_ours(*doc))
			return sk_err_set(err, EINVAL, "the primary configuration is stockade-cni itself");
		if (remove)
			return 0;
		cJSON *list = conf_to_list(*doc, err);
		if (!list)
			return -err->code;
		*doc = list;
		plugins = cJSON_GetObjectItemCaseSensitive(list, "plugins");
		changed = 1;
	}
	if (!cJSON_IsArray(plugins))
		return sk_err_set(err, EINVAL, "\"plugins\" is not an array");
	bool placed = remove;
	cJSON *p = plugins->child;
	while (p) {
		cJSON *next = p->next;
		if (!cJSON_IsObject(p))
			return sk_err_set(err, EINVAL, "a member of \"plugins\" is not an object");
		if (is_ours(p)) {
			if (placed) {
				cJSON_Delete(cJSON_DetachItemViaPointer(plugins, p));
				changed = 1;
			} else {
				placed = true;
				if (!cJSON_Compare(p, entry, true)) {
					cJSON *dup = cJSON_Duplicate(entry, true);
					if (!dup || !cJSON_ReplaceItemViaPointer(plugins, p, dup)) {
						cJSON_Delete(dup);
						return sk_err_set(err, ENOMEM, "out of memory");
					}
					changed = 1;
				}
			}
		}
		p = next;
	}
	if (!placed) {
		cJSON *dup = cJSON_Duplicate(entry, true);
		if (!dup || !cJSON_AddItemToArray(plugins, dup)) {
			cJSON_Delete(dup);
			return sk_err_set(err, ENOMEM, "out of memory");
		}
		changed = 1;
	}
	if (!plugins->child)
		return sk_err_set(err, EINVAL, "\"plugins\" is empty");
	return changed;
}

static bool conf_name(const char *n)
{
	static const char *const ext[] = { ".conf", ".conflist", ".json" };
	size_t l = strlen(n);
	if (n[0] == '.')
		return false;
	for (size_t i = 0; i < SK_ARRAY_SIZE(ext); i++) {
		size_t e = strlen(ext[i]);
		if (l > e && strcmp(n + l - e, ext[i]) == 0)
			return true;
	}
	return false;
}

int sk_cni_conf_pick(const char *dir, char **path, struct sk_err *err)
{
	*path = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return sk_err_sys(err, errno, "open %s", dir);
	char *best = NULL;
	int rc = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!conf_name(de->d_name) || (best && strcmp(de->d_name, best) >= 0))
			continue;
		char *c = strdup(de->d_name);
		if (!c) {
			rc = sk_err_set(err, ENOMEM, "out of memory");
			break;
		}
		free(best);
		best = c;
		errno = 0;
	}
	if (rc == 0 && errno != 0)
		rc = sk_err_sys(err, errno, "read %s", dir);
	(void)closedir(d);  /* read-only directory stream */
	if (rc == 0 && !best)
		rc = sk_err_set(err, ENOENT, "%s holds no .conf, .conflist or .json file yet", dir);
	if (rc == 0 && asprintf(path, "%s/%s", dir, best) < 0)
		rc = sk_err_set(err, ENOMEM, "out of memory");
	free(best);
	return rc;
}

/* NAME.conf / NAME.json → NAME.conflist; a .conflist stays. Owned. */
static char *list_name(const char *path)
{
	size_t l = strlen(path);
	size_t stem = l >= 9 && strcmp(path + l - 9, ".conflist") == 0 ? l
		      : l >= 5 && strcmp(path + l - 5, ".conf") == 0 ? l - 5
		      : l >= 5 && strcmp(path + l - 5, ".json") == 0 ? l - 5 : l;
	char *s = NULL;
	if (asprintf(&s, "%.*s%s", (int)stem, path, stem == l ? "" : ".conflist") < 0)
		return NULL;
	return s;
}

int sk_cni_install_conf(const struct sk_cni_install *o, bool remove, bool *changed, struct sk_err *err)
{
	*changed = false;
	sk_autofree char *dir = host_path(o, o->conf_dir);
	sk_autofree char *path = NULL;
	if (!dir)
		return sk_err_set(err, ENOMEM, "out of memory");
	int rc = sk_cni_conf_pick(dir, &path, err);
	if (rc < 0 || !path)
		return rc < 0 ? rc : sk_err_set(err, ENOENT, "%s: no configuration", dir);
	size_t len = 0;
	sk_autofree char *text = sk_read_file(path, SK_CNI_CONF_MAX, &len, err);
	if (!text)
		return -err->code;
	cJSON *doc = cJSON_ParseWithLength(text, len);
	cJSON *entry = sk_cni_install_entry(o);
	sk_autofree char *out = NULL, *target = NULL;
	if (!doc) {
		rc = sk_err_set(err, EINVAL, "%s: not JSON", path);
		goto done;
	}
	if (!entry) {
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto done;
	}
	rc = sk_cni_conf_edit(&doc, entry, remove, err);
	if (rc < 0) {
		(void)sk_err_prefix(err, "%s", path);
		goto done;
	}
	if (rc == 0) {
		rc = 0;
		goto done;
	}
	out = cJSON_Print(doc);
	target = list_name(path);
	if (!out || !target) {
		rc = sk_err_set(err, ENOMEM, "out of memory");
		goto done;
	}
	size_t ol = strlen(out);
	out[ol] = '\n';  /* cJSON_Print's buffer has the NUL's byte: a file ends with a newline */
	rc = sk_atomic_write(target, out, ol + 1, 0644, err);
	out[ol] = 0;
	if (rc < 0)
		goto done;
	*changed = true;
	if (strcmp(target, path) != 0 && unlink(path) < 0 && errno != ENOENT)
		rc = sk_err_sys(err, errno, "remove %s (now %s)", path, target);
done:
	cJSON_Delete(doc);
	cJSON_Delete(entry);
	return rc;
}

static char *base64(const unsigned char *in, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
		*w++ = tab[v >> 18 & 63];
		*w++ = tab[v >> 12 & 63];
		*w++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
		*w++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*w = 0;
	return out;
}

/* The kubeconfig's JSON text. Owned; NULL with err. */
static char *kubeconfig_text(const struct sk_cni_install *o, struct sk_err *err)
{
	size_t tl = 0, cl = 0;
	sk_autofree char *token = sk_read_file(o->token_file, SECRET_MAX, &tl, err);
	if (!token)
		return NULL;
	while (tl > 0 && (token[tl - 1] == '\n' || token[tl - 1] == '\r'))
		token[--tl] = 0;
	if (tl == 0 || strlen(token) != tl || strpbrk(token, "\n\r")) {
		sk_err_set(err, EINVAL, "%s: not one line of token", o->token_file);
		return NULL;
	}
	sk_autofree char *ca = sk_read_file(o->ca_file, SECRET_MAX, &cl, err);
	if (!ca)
		return NULL;
	if (!o->server || strncmp(o->server, "https://", 8) != 0) {
		sk_err_set(err, EINVAL, "API server URL '%s' is not https://", o->server ? o->server : "");
		return NULL;
	}
	char *ca64 = base64((const unsigned char *)ca, cl);
	cJSON *kc = cJSON_CreateObject();
	cJSON *cl_arr = cJSON_AddArrayToObject(kc, "clusters");
	cJSON *us_arr = cJSON_AddArrayToObject(kc, "users");
	cJSON *cx_arr = cJSON_AddArrayToObject(kc, "contexts");
	cJSON *c = cJSON_CreateObject(), *cc = cJSON_AddObjectToObject(c, "cluster");
	cJSON *u = cJSON_CreateObject(), *uu = cJSON_AddObjectToObject(u, "user");
	cJSON *x = cJSON_CreateObject(), *xx = cJSON_AddObjectToObject(x, "context");
	bool ok = ca64 && kc && cl_arr && us_arr && cx_arr && c && cc && u && uu && x && xx &&
		  cJSON_AddStringToObject(kc, "apiVersion", "v1") && cJSON_AddStringToObject(kc, "kind", "Config") &&
		  cJSON_AddStringToObject(kc, "current-context", "stockade-cni") &&
		  cJSON_AddStringToObject(c, "name", "cluster") && cJSON_AddStringToObject(cc, "server", o->server) &&
		  cJSON_AddStringToObject(cc, "certificate-authority-data", ca64) &&
		  cJSON_AddStringToObject(u, "name", "stockade-cni") && cJSON_AddStringToObject(uu, "token", token) &&
		  cJSON_AddStringToObject(x, "name", "stockade-cni") && cJSON_AddStringToObject(xx, "cluster", "cluster") &&
		  cJSON_AddStringToObject(xx, "user", "stockade-cni");
	/* the arrays take the items whatever happened above, so one delete frees them all */
	if (cl_arr && c)
		cJSON_AddItemToArray(cl_arr, c);
	else
		cJSON_Delete(c);
	if (us_arr && u)
		cJSON_AddItemToArray(us_arr, u);
	else
		cJSON_Delete(u);
	if (cx_arr && x)
		cJSON_AddItemToArray(cx_arr, x);
	else
		cJSON_Delete(x);
	char *s = ok ? cJSON_Print(kc) : NULL;
	cJSON_Delete(kc);
	free(ca64);
	if (!s)
		sk_err_set(err, ENOMEM, "out of memory");
	return s;
}

/* Writes data to path unless it already holds exactly that. */
static int write_if_changed(const char *path, const void *data, size_t len, mode_t mode, bool *changed,
			    struct sk_err *err)
{
	struct sk_err ignore = { 0 };
	size_t have_len = 0;
	sk_autofree char *have = sk_read_file(path, len + 1, &have_len, &ignore);
	struct stat st;
	if (have && have_len == len && memcmp(have, data, len) == 0 && stat(path, &st) == 0 &&
	    (st.st_mode & 07777) == mode) {
		*changed = false;
		return 0;
	}
	int rc = sk_atomic_write(path, data, len, mode, err);
	*changed = rc == 0;
	return rc;
}

int sk_cni_install_kubeconfig(const struct sk_cni_install *o, bool *changed, struct sk_err *err)
{
	*changed = false;
	sk_autofree char *path = host_path(o, o->kubeconfig);
	if (!path)
		return sk_err_set(err, ENOMEM, "out of memory");
	sk_autofree char *text = kubeconfig_text(o, err);
	if (!text)
		return -err->code;
	/* the parents as a node has them (0755), the kubeconfig's own directory private (0700) */
	char *last = strrchr(path, '/');
	for (char *p = path + 1; last && p <= last; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int r = mkdir(path, p == last ? 0700 : 0755);
		*p = '/';
		if (r < 0 && errno != EEXIST)
			return sk_err_sys(err, errno, "create the directories of %s", path);
	}
	size_t tl = strlen(text);
	text[tl] = '\n';  /* cJSON_Print's buffer has the NUL's byte: a file ends with a newline */
	int rc = write_if_changed(path, text, tl + 1, 0600, changed, err);
	text[tl] = 0;
	return rc;
}

int sk_cni_install_binary(const struct sk_cni_install *o, bool *changed, struct sk_err *err)
{
	*changed = false;
	sk_autofree char *dir = host_path(o, o->bin_dir);
	sk_autofree char *path = NULL;
	if (!dir || asprintf(&path, "%s/%s", dir, SK_CNI_PLUGIN_TYPE) < 0)
		return sk_err_set(err, ENOMEM, "out of memory");
	size_t len = 0;
	sk_autofree char *bin = sk_read_file(o->binary, BINARY_MAX, &len, err);
	if (!bin)
		return -err->code;
	return write_if_changed(path, bin, len, 0755, changed, err);
}

int sk_cni_install_all(const struct sk_cni_install *o, struct sk_err *err)
{
	bool ch = false;
	int rc = sk_cni_install_binary(o, &ch, err);
	if (rc == 0 && ch)
		sk_log(SK_LOG_INFO, "installed %s%s/%s", o->host_root ? o->host_root : "", o->bin_dir, SK_CNI_PLUGIN_TYPE);
	if (rc == 0 && (rc = sk_cni_install_kubeconfig(o, &ch, err)) == 0 && ch)
		sk_log(SK_LOG_INFO, "wrote kubeconfig %s%s", o->host_root ? o->host_root : "", o->kubeconfig);
	if (rc == 0 && (rc = sk_cni_install_conf(o, false, &ch, err)) == 0 && ch)
		sk_log(SK_LOG_INFO, "chained %s into %s%s", SK_CNI_PLUGIN_TYPE, o->host_root ? o->host_root : "",
		       o->conf_dir);
	return rc;
}

/* Empties the inotify queue: the events only say "look again", which sk_cni_install_conf does whole. */
static void drain(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

int sk_cni_install_watch(const struct sk_cni_install *o, int stop_fd, int refresh_ms, bool uninstall,
			 struct sk_err *err)
{
	sk_autofree char *dir = host_path(o, o->conf_dir);
	if (!dir)
		return sk_err_set(err, ENOMEM, "out of memory");
	sk_autoclose int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in < 0)
		return sk_err_sys(err, errno, "inotify");
	if (inotify_add_watch(in, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE) < 0)
		return sk_err_sys(err, errno, "watch %s", dir);
	/* A first install that fails (no primary configuration yet: the primary CNI's own DaemonSet has not
	 * written it) is retried on the next event or tick, not fatal: the DaemonSet's readiness is the log. */
	int rc = sk_cni_install_all(o, err);
	if (rc < 0)
		sk_log(SK_LOG_WARN, "%s (retrying)", err->msg);
	for (;;) {
		struct pollfd p[2] = { { .fd = in, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
		int n = poll(p, 2, refresh_ms);
		if (n < 0 && errno != EINTR)
			return sk_err_sys(err, errno, "poll");
		if (n > 0 && p[1].revents)
			break;
		if (n > 0 && p[0].revents)
			drain(in);
		struct sk_err e = { 0 };
		bool ch = false;
		/* an event or a tick: the entry first (a primary CNI's rewrite drops it), then the token */
		if (sk_cni_install_conf(o, false, &ch, &e) < 0)
			sk_log(SK_LOG_WARN, "%s", e.msg);
		else if (ch)
			sk_log(SK_LOG_INFO, "re-chained %s into %s%s", SK_CNI_PLUGIN_TYPE,
			       o->host_root ? o->host_root : "", o->conf_dir);
		if (n == 0 && (sk_cni_install_kubeconfig(o, &ch, &e) < 0 || sk_cni_install_binary(o, &ch, &e) < 0))
			sk_log(SK_LOG_WARN, "%s", e.msg);
	}
	if (!uninstall)
		return 0;
	bool ch = false;
	rc = sk_cni_install_conf(o, true, &ch, err);
	if (rc == 0 && ch)
		sk_log(SK_LOG_INFO, "removed %s from %s%s", SK_CNI_PLUGIN_TYPE, o->host_root ? o->host_root : "",
		       o->conf_dir);
	return rc == -ENOENT ? 0 : rc;
}

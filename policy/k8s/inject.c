/* policy/k8s/inject.c — the pod-spec mutation of inject.h. Mirrors helm/stockade/templates/_helpers.tpl
 * (stockade.initContainer, stockade.sidecarContainer, stockade.agentSecurityContext, stockade.podVolumes,
 * the pod-level part of stockade.podSpec); e2e/inject.test.sh renders both and compares them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "policy/domain.h"
#include "policy/k8s/inject.h"
#include "policy/policy.h"
#include "policy/seccomp/name.h"

#define INIT_NAME "stockade-init"
#define SIDECAR_NAME "stockade-sidecar"
#define INIT_PATH "/usr/local/bin/stockade-init"
#define SIDECAR_PATH "/usr/local/bin/stockade-sidecar"
#define VOL_POLICY "stockade-policy"
#define VOL_RUN "stockade-run"
#define VOL_SECRET_PREFIX "stockade-secret-"
#define VOL_AGENT_TMP "agent-tmp"   /* the pod's own once added: see give_tmp */
#define VOL_GUARDRAILS "stockade-guardrails"
#define VOL_TRUST "stockade-trust"
#define GUARDRAILS_DIR "/etc/stockade-guardrails"

static int cmp_setting(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
	int c = strncmp(x, y, nx < ny ? nx : ny);
	return c ? c : (nx > ny) - (nx < ny);
}

void sk_inject_sort_settings(const char **v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_setting);
}

/* The release this library was built as (the chart's appVersion, the Makefile's RELEASE). */
#ifndef SK_RELEASE
#define SK_RELEASE "dev"
#endif

void sk_inject_opts_default(struct sk_inject_opts *o)
{
	*o = (struct sk_inject_opts){
		/* the chart's images with an empty tag take its appVersion: the same release, so `inject`, the
		 * injector and the chart cannot drift apart when the version moves */
		.init_image = "localhost/stockade-init:" SK_RELEASE,
		.sidecar_image = "localhost/stockade-sidecar:" SK_RELEASE,
		.pull_policy = "IfNotPresent",
		.agent_uid = 1000,
		.sidecar_uid = 1337,
		.admin_port = 15000,
		.policy_configmap = "stockade-policy",
		/* the name of the default profile; `inject --policy` takes the policy's own */
		.seccomp_profile = SK_SCMP_DEFAULT_NAME,
		.log_level = "info",
		.drain_seconds = 10,
		.native = true,
		.hold_until_ready = true,
		.validate_timeout_ms = 3000,
		.ready_timeout_s = 30,
		.probe_period_s = 5,
		.probe_failures = 3,
		.trust = true,
	};
}

/* Native sidecar in effect: sidecar_first places a classic one, whatever native says. */
static bool is_native(const struct sk_inject_opts *o)
{
	return o->native && !o->sidecar_first;
}

/* ---- where the pod spec is ---- */

struct kind_path {
	const char *kind;
	const char *path[4];   /* keys from the document down to the pod template (NULL-terminated) */
	bool job;              /* its pods must complete: a classic sidecar would keep them running */
};

/* The pod "template" of a Pod is the document itself: its metadata and spec. */
static const struct kind_path kinds[] = {
	{ "Pod", { NULL }, false },
	{ "Deployment", { "spec", "template", NULL }, false },
	{ "StatefulSet", { "spec", "template", NULL }, false },
	{ "DaemonSet", { "spec", "template", NULL }, false },
	{ "ReplicaSet", { "spec", "template", NULL }, false },
	{ "Job", { "spec", "template", NULL }, true },
	{ "CronJob", { "spec", "jobTemplate", "spec", "template" }, true },
};

static const struct kind_path *find_kind(const cJSON *doc)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(doc, "kind");
	if (!cJSON_IsString(k))
		return NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(k->valuestring, kinds[i].kind))
			return &kinds[i];
	return NULL;
}

/* ---- small builders (each returns the new item, or NULL on allocation failure, which the caller's
 * final check catches: cJSON_Add* tolerate a NULL parent) ---- */

static cJSON *add_obj(cJSON *o, const char *k) { return cJSON_AddObjectToObject(o, k); }
static void add_str(cJSON *o, const char *k, const char *v) { cJSON_AddStringToObject(o, k, v); }
static void add_num(cJSON *o, const char *k, double v) { cJSON_AddNumberToObject(o, k, v); }
static void add_bool(cJSON *o, const char *k, bool v) { cJSON_AddBoolToObject(o, k, v); }

static cJSON *add_strs(cJSON *o, const char *k, const char *const *v, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, k);
	for (size_t i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

static cJSON *add_mount(cJSON *arr, const char *name, const char *path, bool ro)
{
	cJSON *m = cJSON_CreateObject();
	add_str(m, "name", name);
	add_str(m, "mountPath", path);
	if (ro)
		add_bool(m, "readOnly", true);
	cJSON_AddItemToArray(arr, m);
	return m;
}

static void add_resources(cJSON *c, const char *req_cpu, const char *req_mem, const char *lim_mem)
{
	cJSON *r = add_obj(c, "resources");
	cJSON *lim = add_obj(r, "limits");
	add_str(lim, "memory", lim_mem);
	cJSON *req = add_obj(r, "requests");
	add_str(req, "cpu", req_cpu);
	add_str(req, "memory", req_mem);
}

static void add_http_probe(cJSON *c, const char *k, const char *path, unsigned period, int timeout,
			   unsigned failures)
{
	cJSON *p = add_obj(c, k);
	cJSON *g = add_obj(p, "httpGet");
	add_str(g, "path", path);
	add_str(g, "port", "admin");
	add_num(p, "periodSeconds", period);
	if (timeout > 0)
		add_num(p, "timeoutSeconds", timeout);
	add_num(p, "failureThreshold", failures);
}

static void add_sc_base(cJSON *sc)
{
	add_bool(sc, "allowPrivilegeEscalation", false);
	add_bool(sc, "readOnlyRootFilesystem", true);
}

/* stockade.initArgs: stockade-init's arguments, appended to a (the init container's args, or the sidecar's
 * command with init_in_sidecar). */
static void add_init_args(cJSON *a, const struct sk_inject_opts *o)
{
	static const char *const args[] = { "--policy", "/etc/stockade/policy.yaml", "--marker",
					    "/run/stockade/init.marker" };
	for (size_t i = 0; a && i < sizeof(args) / sizeof(args[0]); i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(args[i]));
	if (o->seccomp_profile) {
		/* the init refuses to start the pod when this is not its policy's profile */
		cJSON_AddItemToArray(a, cJSON_CreateString("--seccomp-profile"));
		cJSON_AddItemToArray(a, cJSON_CreateString(o->seccomp_profile));
	}
}

/* stockade.initContainer */
static cJSON *build_init(const struct sk_inject_opts *o)
{
	static const char *const net_admin[] = { "NET_ADMIN" }, *const all[] = { "ALL" };
	cJSON *c = cJSON_CreateObject();
	add_str(c, "name", INIT_NAME);
	add_str(c, "image", o->init_image);
	add_str(c, "imagePullPolicy", o->pull_policy);
	add_init_args(cJSON_AddArrayToObject(c, "args"), o);
	/* root inside the pod's own network namespace: nftables needs uid 0 with NET_ADMIN, nothing else */
	cJSON *sc = add_obj(c, "securityContext");
	add_num(sc, "runAsUser", 0);
	add_num(sc, "runAsGroup", 0);
	add_bool(sc, "runAsNonRoot", false);
	add_sc_base(sc);
	cJSON *caps = add_obj(sc, "capabilities");
	add_strs(caps, "add", net_admin, 1);
	add_strs(caps, "drop", all, 1);
	add_str(add_obj(sc, "seccompProfile"), "type", "RuntimeDefault");
	add_resources(c, "10m", "8Mi", "32Mi");
	cJSON *vm = cJSON_AddArrayToObject(c, "volumeMounts");
	add_mount(vm, VOL_POLICY, "/etc/stockade", true);
	add_mount(vm, VOL_RUN, "/run/stockade", false);
	return c;
}

/* stockade.validateContainer: CNI mode's first init container, `stockade-sidecar validate` as the agent UID
 * with no capability (sidecar/admin/validate.h) */
static cJSON *build_validate(const struct sk_inject_opts *o)
{
	static const char *const all[] = { "ALL" };
	char timeout[16];
	(void)snprintf(timeout, sizeof(timeout), "%u", o->validate_timeout_ms);
	const char *const cmd[] = { SIDECAR_PATH, "validate", "--policy", "/etc/stockade/policy.yaml", "--marker",
				    "/run/stockade/init.marker", "--timeout-ms", timeout };
	cJSON *c = cJSON_CreateObject();
	add_str(c, "name", SK_INJECT_VALIDATE_NAME);
	add_str(c, "image", o->sidecar_image);
	add_str(c, "imagePullPolicy", o->pull_policy);
	add_strs(c, "command", cmd, sizeof(cmd) / sizeof(cmd[0]));
	/* the agent's UID: the redirect applies to its sockets only */
	cJSON *sc = add_obj(c, "securityContext");
	add_num(sc, "runAsUser", o->agent_uid);
	add_num(sc, "runAsGroup", o->agent_uid);
	add_bool(sc, "runAsNonRoot", true);
	add_sc_base(sc);
	add_strs(add_obj(sc, "capabilities"), "drop", all, 1);
	add_str(add_obj(sc, "seccompProfile"), "type", "RuntimeDefault");
	add_resources(c, "10m", "8Mi", "32Mi");
	cJSON *vm = cJSON_AddArrayToObject(c, "volumeMounts");
	add_mount(vm, VOL_POLICY, "/etc/stockade", true);
	add_mount(vm, VOL_RUN, "/run/stockade", false);
	return c;
}

/* The capabilities of the sidecar container's entry with init_in_sidecar: NET_ADMIN for the nftables batch,
 * SETUID and SETGID to drop to the sidecar UID, SETPCAP to empty the bounding set before that. */
static const char *const entry_caps[] = { "NET_ADMIN", "SETUID", "SETGID", "SETPCAP" };
#define N_ENTRY_CAPS (sizeof(entry_caps) / sizeof(entry_caps[0]))

/* stockade.sidecarContainer */
static cJSON *build_sidecar(const struct sk_inject_opts *o)
{
	static const char *const all[] = { "ALL" };
	char admin[64], level[64], bind[64], timeout[64], drain[16], as[32];
	/* sized for the bounds struct sk_inject_opts documents (a log level word, numbers) */
	(void)snprintf(admin, sizeof(admin), "--admin-addr=0.0.0.0:%u", (unsigned)o->admin_port);
	(void)snprintf(level, sizeof(level), "--log-level=%s", o->log_level);
	(void)snprintf(bind, sizeof(bind), "--admin-addr=127.0.0.1:%u", (unsigned)o->admin_port);
	(void)snprintf(timeout, sizeof(timeout), "--timeout-ms=%lu", (unsigned long)o->ready_timeout_s * 1000ul);
	(void)snprintf(drain, sizeof(drain), "%u", o->drain_seconds);
	(void)snprintf(as, sizeof(as), "%lu:%lu", (unsigned long)o->sidecar_uid, (unsigned long)o->sidecar_uid);
	const char *const args[] = { "--policy=/etc/stockade/policy.yaml", "--marker=/run/stockade/init.marker",
				     admin, level };
	char as_flag[40];
	(void)snprintf(as_flag, sizeof(as_flag), "--as=%s", as);
	const char *const hook[] = { SIDECAR_PATH, "wait-ready", bind, timeout, as_flag };

	cJSON *c = cJSON_CreateObject();
	add_str(c, "name", SIDECAR_NAME);
	add_str(c, "image", o->sidecar_image);
	add_str(c, "imagePullPolicy", o->pull_policy);
	if (is_native(o))
		add_str(c, "restartPolicy", "Always");
	if (o->init_in_sidecar) {
		/* stockade-init programs the netns, writes the marker, drops to the sidecar UID for good and only
		 * then execs the sidecar with the args below; on any failure the sidecar, so the agent, never runs */
		cJSON *cmd = cJSON_AddArrayToObject(c, "command");
		cJSON_AddItemToArray(cmd, cJSON_CreateString(INIT_PATH));
		add_init_args(cmd, o);
		static const char *const tail[] = { "--exec-as", NULL, "--", SIDECAR_PATH };
		for (size_t i = 0; cmd && i < sizeof(tail) / sizeof(tail[0]); i++)
			cJSON_AddItemToArray(cmd, cJSON_CreateString(tail[i] ? tail[i] : as));
	}
	cJSON *argv = add_strs(c, "args", args, 4);
	if (argv && o->trust)
		cJSON_AddItemToArray(argv, cJSON_CreateString("--trust-dir=" SK_INJECT_TRUST_DIR));
	if (argv && o->guardrails)
		cJSON_AddItemToArray(argv, cJSON_CreateString("--guardrails=" GUARDRAILS_DIR "/guardrails.yaml"));
	for (size_t i = 0; argv && i < o->n_settings; i++)
		cJSON_AddItemToArray(argv, cJSON_CreateString(o->settings[i]));
	cJSON *env = cJSON_CreateObject();
	add_str(env, "name", "STOCKADE_DRAIN_SECONDS");
	add_str(env, "value", drain);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "env"), env);
	cJSON *port = cJSON_CreateObject();
	add_str(port, "name", "admin");
	add_num(port, "containerPort", o->admin_port);
	add_str(port, "protocol", "TCP");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "ports"), port);
	cJSON *sc = add_obj(c, "securityContext");
	if (o->init_in_sidecar) {
		/* root only for the entry: the sidecar process runs as the sidecar UID with no capability */
		add_num(sc, "runAsUser", 0);
		add_num(sc, "runAsGroup", 0);
		add_bool(sc, "runAsNonRoot", false);
		add_sc_base(sc);
		cJSON *caps = add_obj(sc, "capabilities");
		add_strs(caps, "add", entry_caps, N_ENTRY_CAPS);
		add_strs(caps, "drop", all, 1);
	} else {
		/* its own UID: nftables exempts it, and no agent container may use it (refused below) */
		add_num(sc, "runAsUser", o->sidecar_uid);
		add_num(sc, "runAsGroup", o->sidecar_uid);
		add_bool(sc, "runAsNonRoot", true);
		add_sc_base(sc);
		add_strs(add_obj(sc, "capabilities"), "drop", all, 1);
	}
	add_str(add_obj(sc, "seccompProfile"), "type", "RuntimeDefault");
	/* first in containers, the hook holds the agent too: the kubelet starts containers in order, each
	 * after the one before it has started and its postStart hook returned. With init_in_sidecar the hook
	 * runs as the container's root with its capabilities: --as drops them first */
	if ((is_native(o) && o->hold_until_ready) || o->sidecar_first)
		add_strs(add_obj(add_obj(add_obj(c, "lifecycle"), "postStart"), "exec"), "command", hook,
			 o->init_in_sidecar ? 5 : 4);
	else if (is_native(o))
		add_http_probe(c, "startupProbe", "/readyz", 1, 0, o->ready_timeout_s);
	add_http_probe(c, "livenessProbe", "/healthz", o->probe_period_s, 2, o->probe_failures);
	add_http_probe(c, "readinessProbe", "/readyz", o->probe_period_s, 2, 1);
	add_resources(c, "50m", "16Mi", "64Mi");
	cJSON *vm = cJSON_AddArrayToObject(c, "volumeMounts");
	add_mount(vm, VOL_POLICY, "/etc/stockade", true);
	/* with init_in_sidecar the entry writes the marker there; the chart then says readOnly: false */
	cJSON *run = add_mount(vm, VOL_RUN, "/run/stockade", !o->init_in_sidecar);
	if (o->init_in_sidecar)
		add_bool(run, "readOnly", false);
	for (size_t i = 0; i < o->n_secrets; i++) {
		char vol[320], path[320];   /* the name is a DNS label (inject.h): no truncation */
		(void)snprintf(vol, sizeof(vol), VOL_SECRET_PREFIX "%s", o->secrets[i].name);
		(void)snprintf(path, sizeof(path), "/var/run/stockade/secrets/%s", o->secrets[i].name);
		add_mount(vm, vol, path, true);
	}
	/* the sidecar writes the agent's trust files here at start, before it is ready */
	if (o->trust)
		add_mount(vm, VOL_TRUST, SK_INJECT_TRUST_DIR, false);
	if (o->guardrails)
		add_mount(vm, VOL_GUARDRAILS, GUARDRAILS_DIR, true);
	return c;
}

/* ---- checks ---- */

static bool is_true(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static bool stockade_container(const char *name)
{
	return !strcmp(name, INIT_NAME) || !strcmp(name, SIDECAR_NAME) || !strcmp(name, SK_INJECT_VALIDATE_NAME);
}

static bool stockade_volume(const char *name)
{
	return !strcmp(name, VOL_POLICY) || !strcmp(name, VOL_RUN) || !strcmp(name, VOL_GUARDRAILS) ||
	       !strcmp(name, VOL_TRUST) || !strncmp(name, VOL_SECRET_PREFIX, strlen(VOL_SECRET_PREFIX));
}

/* Capabilities an agent must not hold: each would let it undo or step around the pod's nftables. */
static bool forbidden_cap(const char *cap)
{
	if (!strncasecmp(cap, "CAP_", 4))
		cap += 4;
	return !strcasecmp(cap, "NET_ADMIN") || !strcasecmp(cap, "NET_RAW") || !strcasecmp(cap, "SYS_ADMIN") ||
	       !strcasecmp(cap, "ALL");
}

/* A container's name, or NULL when the entry is not an object with a string name. */
static const char *cname(const cJSON *c)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
	return cJSON_IsObject(c) && cJSON_IsString(n) ? n->valuestring : NULL;
}

/* a + b into out, cut to outsz (paths are for messages; a cut one still names where it starts). */
static const char *join(char *out, size_t outsz, const char *a, const char *b)
{
	size_t la = strnlen(a, outsz - 1), lb = strnlen(b, outsz - 1 - la);
	memmove(out, a, la);
	memcpy(out + la, b, lb);
	out[la + lb] = '\0';
	return out;
}

/* Every refusal names the field path first; names from the manifest are bounded by msg's size. */
static int bad(struct sk_err *err, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(struct sk_err *err, const char *path, const char *fmt, ...)
{
	char msg[SK_ERR_MSG_MAX / 2];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sk_err_set(err, EINVAL, "%s: %s", path, msg);
}

/* A list that may be absent: NULL (absent or null) is fine, anything but an array is refused. */
static int opt_array(const cJSON *o, const char *k, const char *at, cJSON **out, struct sk_err *err)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = NULL;
	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsArray(a)) {
		char p[512];
		(void)snprintf(p, sizeof(p), "%s.%s", at, k);
		return bad(err, p, "expected a list");
	}
	*out = a;
	return 0;
}

static int opt_object(const cJSON *o, const char *k, const char *at, cJSON **out, struct sk_err *err)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = NULL;
	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsObject(a)) {
		char p[512];
		(void)snprintf(p, sizeof(p), "%s.%s", at, k);
		return bad(err, p, "expected a mapping");
	}
	*out = a;
	return 0;
}

/* One agent (user) container: refused if it could leave the sandbox, else checked for shape. */
static int check_agent(const cJSON *c, const char *at, const struct sk_inject_opts *o, struct sk_err *err)
{
	char p[320];
	const char *name = cname(c);
	cJSON *sc, *caps, *add, *mounts;
	int r;
	if ((r = opt_object(c, "securityContext", at, &sc, err)) < 0)
		return r;
	join(p, sizeof(p), at, ".securityContext");
	if (sc) {
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(sc, "runAsUser");
		if (is_true(sc, "privileged"))
			return bad(err, (join(p, sizeof(p), at, ".securityContext.privileged"), p),
				   "container '%s' is privileged; an agent container cannot be", name);
		if (is_true(sc, "allowPrivilegeEscalation"))
			return bad(err, (join(p, sizeof(p), at, ".securityContext.allowPrivilegeEscalation"), p),
				   "container '%s' may gain privileges (setuid); an agent container cannot", name);
		if (uid && !cJSON_IsNull(uid)) {
			join(p, sizeof(p), at, ".securityContext.runAsUser");
			if (!cJSON_IsNumber(uid))
				return bad(err, p, "expected a number");
			if (uid->valuedouble == 0)
				return bad(err, p, "container '%s' runs as root; an agent container cannot (its traffic "
					   "would not be redirected, and root may change the pod's nftables)", name);
			if (uid->valuedouble == (double)o->sidecar_uid)
				return bad(err, p, "container '%s' runs as the sidecar's UID, whose traffic is exempt; "
					   "an agent container cannot", name);
		}
		if ((r = opt_object(sc, "capabilities", p, &caps, err)) < 0)
			return r;
		if (caps) {
			join(p, sizeof(p), at, ".securityContext.capabilities");
			if ((r = opt_array(caps, "add", p, &add, err)) < 0)
				return r;
			join(p, sizeof(p), at, ".securityContext.capabilities.add");
			const cJSON *cap;
			cJSON_ArrayForEach(cap, add) {
				if (!cJSON_IsString(cap))
					return bad(err, p, "expected a list of capability names");
				if (forbidden_cap(cap->valuestring))
					return bad(err, p, "container '%s' adds %s; an agent container cannot hold "
						   "NET_ADMIN, NET_RAW or SYS_ADMIN", name, cap->valuestring);
			}
			cJSON *drop;
			if ((r = opt_array(caps, "drop", p, &drop, err)) < 0)
				return r;
		}
		cJSON *prof;
		if ((r = opt_object(sc, "seccompProfile", p, &prof, err)) < 0)
			return r;
	}
	if ((r = opt_array(c, "volumeMounts", at, &mounts, err)) < 0)
		return r;
	const cJSON *m;
	int i = 0;
	cJSON_ArrayForEach(m, mounts) {
		const char *vn = cname(m);
		if (vn && stockade_volume(vn)) {
			(void)snprintf(p, sizeof(p), "%s.volumeMounts[%d].name", at, i);
			return bad(err, p, "container '%s' mounts '%s', a volume only stockade's containers may mount",
				   name, vn);
		}
		i++;
	}
	return 0;
}

/* ---- mutation ---- */

static cJSON *ensure_object(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsObject(v))
		return v;
	if (v)
		cJSON_DeleteItemFromObjectCaseSensitive(o, k);
	return add_obj(o, k);
}

static void set_item(cJSON *o, const char *k, cJSON *v)
{
	if (!v)
		return;
	if (cJSON_GetObjectItemCaseSensitive(o, k))
		cJSON_ReplaceItemInObjectCaseSensitive(o, k, v);
	else
		cJSON_AddItemToObject(o, k, v);
}

static void default_item(cJSON *o, const char *k, cJSON *v)
{
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cur && !cJSON_IsNull(cur)) {
		cJSON_Delete(v);
		return;
	}
	set_item(o, k, v);
}

/* stockade.agentSecurityContext, merged into what the container already says: the values that keep the
 * sandbox are forced; the UID and the read-only root are defaults (a non-root UID of the pod's own choosing
 * gets no network unless the policy exempts it; a writable root file system does not leave the pod). */
static void harden_agent(cJSON *c, const struct sk_inject_opts *o)
{
	cJSON *sc = ensure_object(c, "securityContext");
	default_item(sc, "runAsUser", cJSON_CreateNumber(o->agent_uid));
	default_item(sc, "runAsGroup", cJSON_CreateNumber(o->agent_uid));
	set_item(sc, "runAsNonRoot", cJSON_CreateTrue());
	set_item(sc, "allowPrivilegeEscalation", cJSON_CreateFalse());
	default_item(sc, "readOnlyRootFilesystem", cJSON_CreateTrue());
	cJSON *caps = ensure_object(sc, "capabilities");
	cJSON *drop = cJSON_GetObjectItemCaseSensitive(caps, "drop");
	if (!cJSON_IsArray(drop)) {
		set_item(caps, "drop", cJSON_CreateArray());
		drop = cJSON_GetObjectItemCaseSensitive(caps, "drop");
	}
	bool has_all = false;
	const cJSON *d;
	cJSON_ArrayForEach(d, drop) {
		has_all |= cJSON_IsString(d) && !strcasecmp(d->valuestring, "ALL");
	}
	if (!has_all)
		cJSON_AddItemToArray(drop, cJSON_CreateString("ALL"));
	cJSON *prof = cJSON_CreateObject();
	if (o->seccomp_profile) {
		add_str(prof, "type", "Localhost");
		add_str(prof, "localhostProfile", o->seccomp_profile);
	} else {
		add_str(prof, "type", "RuntimeDefault");
	}
	set_item(sc, "seccompProfile", prof);
}

/* Removes the stockade-owned entries of a list (a wrapped pod being wrapped again). */
static void strip(cJSON *arr, bool (*ours)(const char *))
{
	cJSON *it = arr ? arr->child : NULL;
	while (it) {
		cJSON *next = it->next;
		const char *n = cname(it);
		if (n && ours(n))
			cJSON_Delete(cJSON_DetachItemViaPointer(arr, it));
		it = next;
	}
}

/* Checks every container of one list; `owned` entries were already stripped (wrapped) or are refused. */
static int check_list(const cJSON *arr, const char *at, const char *k, const struct sk_inject_opts *o,
		      struct sk_err *err)
{
	char p[256];
	int i = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, arr) {
		(void)snprintf(p, sizeof(p), "%s.%s[%d]", at, k, i);
		const char *n = cname(c);
		if (!n)
			return bad(err, p, "expected a container with a name");
		if (stockade_container(n))
			return bad(err, (snprintf(p, sizeof(p), "%s.%s[%d].name", at, k, i), p),
				   "'%s' is the name of a stockade container; rename this one%s", n,
				   " (or label the pod " SK_INJECT_LABEL "=true if stockade wrapped it)");
		int r = check_agent(c, p, o, err);
		if (r < 0)
			return r;
		i++;
	}
	return 0;
}

static bool str_is(const cJSON *o, const char *k, const char *want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

static bool num_is(const cJSON *o, const char *k, double want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) && v->valuedouble == want;
}

static bool has_all_dropped(const cJSON *sc)
{
	const cJSON *d;
	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sc, "capabilities"),
								 "drop")) {
		if (cJSON_IsString(d) && !strcasecmp(d->valuestring, "ALL"))
			return true;
	}
	return false;
}

/* The sidecar's entry with init_in_sidecar is stockade-init and its arguments, then "--exec-as UID:UID --
 * stockade-sidecar", and its capabilities exactly the entry's, besides dropping ALL. */
static bool entry_ok(const cJSON *side, const cJSON *ssc, const struct sk_inject_opts *o)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(side, "command");
	const cJSON *add = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ssc, "capabilities"), "add");
	int n = cJSON_GetArraySize(cmd), want = 1 + (o->seccomp_profile ? 6 : 4) + 4;
	char as[32];
	(void)snprintf(as, sizeof(as), "%lu:%lu", (unsigned long)o->sidecar_uid, (unsigned long)o->sidecar_uid);
	const cJSON *first = cJSON_GetArrayItem(cmd, 0), *flag = cJSON_GetArrayItem(cmd, n - 4),
		    *uid = cJSON_GetArrayItem(cmd, n - 3), *dashes = cJSON_GetArrayItem(cmd, n - 2),
		    *last = cJSON_GetArrayItem(cmd, n - 1);
	if (n != want || !cJSON_IsString(first) || strcmp(first->valuestring, INIT_PATH) || !cJSON_IsString(flag) ||
	    strcmp(flag->valuestring, "--exec-as") || !cJSON_IsString(uid) || strcmp(uid->valuestring, as) ||
	    !cJSON_IsString(dashes) || strcmp(dashes->valuestring, "--") || !cJSON_IsString(last) ||
	    strcmp(last->valuestring, SIDECAR_PATH) || cJSON_GetArraySize(add) != (int)N_ENTRY_CAPS)
		return false;
	for (size_t i = 0; i < N_ENTRY_CAPS; i++) {
		const cJSON *cap = cJSON_GetArrayItem(add, (int)i);
		if (!cJSON_IsString(cap) || strcmp(cap->valuestring, entry_caps[i]))
			return false;
	}
	/* the postStart hook runs with the container's root and capabilities unless it drops them first */
	const cJSON *hook = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(side, "lifecycle"), "postStart"),
			"exec"),
		"command");
	const cJSON *drop = cJSON_GetArrayItem(hook, cJSON_GetArraySize(hook) - 1);
	char as_flag[40];
	(void)snprintf(as_flag, sizeof(as_flag), "--as=%s", as);
	if (hook && (!cJSON_IsString(drop) || strcmp(drop->valuestring, as_flag)))
		return false;
	return num_is(ssc, "runAsUser", 0);
}

/* What the wrapped spec must hold for the sandbox to stand: the init first with NET_ADMIN and both
 * mounts (with init_in_sidecar: no init container, the native sidecar first with the stockade-init entry
 * and exactly its capabilities), the sidecar under its UID, every other container non-root, unescalating,
 * with no capabilities and the agent's seccomp profile, and the two volumes. */
static bool sandboxed(const cJSON *spec, const struct sk_inject_opts *o)
{
	const cJSON *inits = cJSON_GetObjectItemCaseSensitive(spec, "initContainers");
	const cJSON *conts = cJSON_GetObjectItemCaseSensitive(spec, "containers");
	const cJSON *vols = cJSON_GetObjectItemCaseSensitive(spec, "volumes");
	const cJSON *side;
	if (o->init_in_sidecar) {
		side = cJSON_GetArrayItem(inits, 0);
	} else if (o->cni) {
		const cJSON *v = cJSON_GetArrayItem(inits, 0);
		const cJSON *vsc = cJSON_GetObjectItemCaseSensitive(v, "securityContext");
		if (!str_is(v, "name", SK_INJECT_VALIDATE_NAME) || !str_is(v, "image", o->sidecar_image) ||
		    !num_is(vsc, "runAsUser", o->agent_uid) || !has_all_dropped(vsc) ||
		    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vsc, "capabilities"), "add") ||
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(v, "command")) != 8)
			return false;
		side = is_native(o)       ? cJSON_GetArrayItem(inits, 1)
		       : o->sidecar_first ? cJSON_GetArrayItem(conts, 0)
					  : cJSON_GetArrayItem(conts, cJSON_GetArraySize(conts) - 1);
	} else {
		const cJSON *init = cJSON_GetArrayItem(inits, 0);
		const cJSON *isc = cJSON_GetObjectItemCaseSensitive(init, "securityContext");
		if (!str_is(init, "name", INIT_NAME) || !str_is(init, "image", o->init_image) ||
		    !num_is(isc, "runAsUser", 0) || !has_all_dropped(isc) ||
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(init, "volumeMounts")) != 2 ||
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(init, "args")) != (o->seccomp_profile ? 6 : 4))
			return false;
		side = is_native(o)       ? cJSON_GetArrayItem(inits, 1)
		       : o->sidecar_first ? cJSON_GetArrayItem(conts, 0)
					  : cJSON_GetArrayItem(conts, cJSON_GetArraySize(conts) - 1);
	}
	const cJSON *ssc = cJSON_GetObjectItemCaseSensitive(side, "securityContext");
	if (!str_is(side, "name", SIDECAR_NAME) || !str_is(side, "image", o->sidecar_image) ||
	    !(o->init_in_sidecar ? entry_ok(side, ssc, o) : num_is(ssc, "runAsUser", o->sidecar_uid)) ||
	    !has_all_dropped(ssc) || (is_native(o) && !str_is(side, "restartPolicy", "Always")) ||
	    (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(side, "args")) !=
		    4 + (o->trust ? 1 : 0) + (o->guardrails ? 1 : 0) + o->n_settings)
		return false;
	const cJSON *lists[] = { inits, conts };
	for (size_t l = 0; l < 2; l++) {
		const cJSON *c;
		cJSON_ArrayForEach(c, lists[l]) {
			const char *n = cname(c);
			/* the one stockade-init is the one checked above: with init_in_sidecar there is none */
			if (n && !strcmp(n, INIT_NAME) &&
			    (o->init_in_sidecar || o->cni || c != cJSON_GetArrayItem(inits, 0)))
				return false;
			if (n && !strcmp(n, SK_INJECT_VALIDATE_NAME) && (!o->cni || c != cJSON_GetArrayItem(inits, 0)))
				return false;
			if (n && !strcmp(n, SIDECAR_NAME) && c != side)
				return false;
			if (n && stockade_container(n))
				continue;
			const cJSON *sc = cJSON_GetObjectItemCaseSensitive(c, "securityContext");
			const cJSON *prof = cJSON_GetObjectItemCaseSensitive(sc, "seccompProfile");
			if (!n || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "runAsNonRoot")) ||
			    !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(sc, "allowPrivilegeEscalation")) ||
			    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sc, "runAsUser")) || !has_all_dropped(sc) ||
			    !str_is(prof, "type", o->seccomp_profile ? "Localhost" : "RuntimeDefault") ||
			    (o->seccomp_profile && !str_is(prof, "localhostProfile", o->seccomp_profile)))
				return false;
		}
	}
	const cJSON *pv = cJSON_GetArrayItem(vols, 0), *rv = cJSON_GetArrayItem(vols, 1);
	return str_is(pv, "name", VOL_POLICY) &&
	       str_is(cJSON_GetObjectItemCaseSensitive(pv, "configMap"), "name", o->policy_configmap) &&
	       str_is(rv, "name", VOL_RUN) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(rv, "emptyDir"));
}

/* Wraps one pod spec (a private copy: on error the caller drops it). `at` is its path, for messages. */
/* A read-only root file system leaves a program no /tmp: Python's tempfile fails ("No usable temporary
 * directory"), as do pip, git and compilers. An agent container whose root is read-only and that mounts
 * nothing at /tmp gets the emptyDir VOL_AGENT_TMP there (a name of the pod's own, not stockade's, so a
 * second wrap keeps it as the pod's and adds nothing). Returns whether some container mounts it now. */
static bool give_tmp(cJSON *containers)
{
	bool used = false;
	cJSON *c;
	cJSON_ArrayForEach(c, containers) {
		const cJSON *sc = cJSON_GetObjectItemCaseSensitive(c, "securityContext");
		cJSON *mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
		bool has_tmp = false;
		const cJSON *m;
		cJSON_ArrayForEach(m, mounts) {
			const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "mountPath");
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
			used |= cJSON_IsString(name) && !strcmp(name->valuestring, VOL_AGENT_TMP);
			has_tmp |= cJSON_IsString(path) && (!strcmp(path->valuestring, "/tmp") ||
							    !strcmp(path->valuestring, "/tmp/"));
		}
		if (has_tmp || !is_true(sc, "readOnlyRootFilesystem"))
			continue;
		if (!cJSON_IsArray(mounts)) {
			set_item(c, "volumeMounts", cJSON_CreateArray());
			mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
		}
		add_mount(mounts, VOL_AGENT_TMP, "/tmp", false);
		used = true;
	}
	return used;
}

/* The trust variables (chart: stockade.agentEnv), in the chart's order. Node adds NODE_EXTRA_CA_CERTS to its
 * own roots, so the pod CA alone; the JVM reads no PEM, so the PKCS#12 store, whose password is public
 * (sidecar/inspect/trust.h). */
static const struct sk_inject_env trust_env[] = {
	{ "SSL_CERT_FILE", SK_INJECT_TRUST_DIR "/bundle.pem" },
	{ "REQUESTS_CA_BUNDLE", SK_INJECT_TRUST_DIR "/bundle.pem" },
	{ "CURL_CA_BUNDLE", SK_INJECT_TRUST_DIR "/bundle.pem" },
	{ "GIT_SSL_CAINFO", SK_INJECT_TRUST_DIR "/bundle.pem" },
	{ "PIP_CERT", SK_INJECT_TRUST_DIR "/bundle.pem" },
	{ "AWS_CA_BUNDLE", SK_INJECT_TRUST_DIR "/bundle.pem" },
	{ "NODE_EXTRA_CA_CERTS", SK_INJECT_TRUST_DIR "/ca.pem" },
	{ "JAVA_TOOL_OPTIONS", "-Djavax.net.ssl.trustStore=" SK_INJECT_TRUST_DIR "/truststore.p12 "
			       "-Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword=changeit" },
};
#define N_TRUST_ENV (sizeof(trust_env) / sizeof(trust_env[0]))

static cJSON *env_find(const cJSON *env, const char *name)
{
	cJSON *e;
	cJSON_ArrayForEach(e, env) {
		if (str_is(e, "name", name))
			return e;
	}
	return NULL;
}

/* A wrapped container wrapped again: the trust mount, the trust variables stockade gave it (its own value
 * exactly: one the container set itself stays) and the variables the options' placeholders name (whatever
 * their value: a real token put there since goes too) are taken out, to be put back from the options in the
 * order a first wrap gives. */
static void strip_agent_extras(cJSON *containers, const struct sk_inject_opts *o)
{
	cJSON *c;
	cJSON_ArrayForEach(c, containers) {
		cJSON *mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
		for (cJSON *m = cJSON_IsArray(mounts) ? mounts->child : NULL, *next; m; m = next) {
			next = m->next;
			if (str_is(m, "name", VOL_TRUST))
				cJSON_Delete(cJSON_DetachItemViaPointer(mounts, m));
		}
		cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
		for (cJSON *e = cJSON_IsArray(env) ? env->child : NULL, *next; e; e = next) {
			next = e->next;
			bool ours = false;
			for (size_t i = 0; !ours && i < N_TRUST_ENV; i++)
				ours = str_is(e, "name", trust_env[i].name) && str_is(e, "value", trust_env[i].value) &&
				       cJSON_GetArraySize(e) == 2;
			for (size_t i = 0; !ours && i < o->n_secret_env; i++)
				ours = str_is(e, "name", o->secret_env[i].name);
			if (ours)
				cJSON_Delete(cJSON_DetachItemViaPointer(env, e));
		}
	}
}

/* The containers' env lists are lists, and none sets a placeholder's name itself: one of the two would be
 * lost, and the container's own might be the real token. A pod stockade wrapped has the placeholder there
 * already (or an older one): it is replaced. */
static int check_env(const cJSON *arr, const char *at, const char *k, bool wrapped, const struct sk_inject_opts *o,
		     struct sk_err *err)
{
	char p[320];
	int i = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, arr) {
		cJSON *env;
		(void)snprintf(p, sizeof(p), "%s.%s[%d]", at, k, i++);
		int r = opt_array(c, "env", p, &env, err);
		if (r < 0)
			return r;
		for (size_t j = 0; !wrapped && j < o->n_secret_env; j++)
			if (env_find(env, o->secret_env[j].name))
				return bad(err, (join(p, sizeof(p), p, ".env"), p),
					   "container '%s' sets %s, which gets the credential placeholder %s "
					   "(--secret-env): remove it there", cname(c), o->secret_env[j].name,
					   o->secret_env[j].value);
	}
	return 0;
}

/* The trust mount (a directory, not a subPath: files the sidecar replaces reach the container), the trust
 * variables the container does not set itself, then the placeholders in name order (chart: the sorted keys
 * of agent.secretEnv). */
static void add_agent_extras(cJSON *c, const struct sk_inject_opts *o)
{
	if (!o->trust && !o->n_secret_env)
		return;
	cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
	if (!cJSON_IsArray(env)) {
		set_item(c, "env", cJSON_CreateArray());
		env = cJSON_GetObjectItemCaseSensitive(c, "env");
	}
	for (size_t i = 0; o->trust && i < N_TRUST_ENV; i++) {
		if (env_find(env, trust_env[i].name))
			continue;
		cJSON *e = cJSON_CreateObject();
		add_str(e, "name", trust_env[i].name);
		add_str(e, "value", trust_env[i].value);
		cJSON_AddItemToArray(env, e);
	}
	/* name order without a copy to sort: each round takes the least name above the last one */
	const char *last = NULL;
	for (size_t n = 0; n < o->n_secret_env; n++) {
		const struct sk_inject_env *next = NULL;
		for (size_t j = 0; j < o->n_secret_env; j++) {
			const struct sk_inject_env *s = &o->secret_env[j];
			if ((!last || strcmp(s->name, last) > 0) && (!next || strcmp(s->name, next->name) < 0))
				next = s;
		}
		if (!next)
			break;
		last = next->name;
		cJSON *e = cJSON_CreateObject();
		add_str(e, "name", next->name);
		add_str(e, "value", next->value);
		cJSON_AddItemToArray(env, e);
	}
	if (o->trust) {
		cJSON *mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
		if (!cJSON_IsArray(mounts)) {
			set_item(c, "volumeMounts", cJSON_CreateArray());
			mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
		}
		add_mount(mounts, VOL_TRUST, SK_INJECT_TRUST_DIR, true);
	}
}

static int wrap_spec(cJSON *spec, const char *at, bool wrapped, bool job, const struct sk_inject_opts *o,
		     struct sk_err *err)
{
	char p[256];
	cJSON *inits, *conts, *vols, *psc;
	int r;
	if (!cJSON_IsObject(spec))
		return bad(err, at, "expected a mapping (the pod spec)");
	if (is_true(spec, "hostNetwork"))
		return bad(err, (join(p, sizeof(p), at, ".hostNetwork"), p),
			   "the pod shares the node's network namespace, which stockade's nftables cannot confine");
	if (is_true(spec, "hostPID"))
		return bad(err, (join(p, sizeof(p), at, ".hostPID"), p),
			   "the pod sees the node's processes; an agent pod cannot");
	if (is_true(spec, "hostIPC"))
		return bad(err, (join(p, sizeof(p), at, ".hostIPC"), p),
			   "the pod shares the node's IPC namespace; an agent pod cannot");
	if (job && !is_native(o))
		return bad(err, at, "a Job's pod cannot have a classic sidecar: it would keep running and the Job "
			   "would never complete (use a native sidecar, Kubernetes >= 1.29)");
	if ((r = opt_array(spec, "initContainers", at, &inits, err)) < 0 ||
	    (r = opt_array(spec, "containers", at, &conts, err)) < 0 ||
	    (r = opt_array(spec, "volumes", at, &vols, err)) < 0 ||
	    (r = opt_object(spec, "securityContext", at, &psc, err)) < 0)
		return r;
	if (!conts || !cJSON_GetArraySize(conts))
		return bad(err, (join(p, sizeof(p), at, ".containers"), p), "expected at least one container");
	if (wrapped) {
		strip(inits, stockade_container);
		strip(conts, stockade_container);
		strip(vols, stockade_volume);
		strip_agent_extras(inits, o);
		strip_agent_extras(conts, o);
	}
	if ((r = check_list(inits, at, "initContainers", o, err)) < 0 ||
	    (r = check_list(conts, at, "containers", o, err)) < 0 ||
	    (r = check_env(inits, at, "initContainers", wrapped, o, err)) < 0 ||
	    (r = check_env(conts, at, "containers", wrapped, o, err)) < 0)
		return r;
	int i = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, vols) {
		const char *n = cname(v);
		(void)snprintf(p, sizeof(p), "%s.volumes[%d].name", at, i++);
		if (!n)
			return bad(err, p, "expected a volume with a name");
		if (stockade_volume(n))
			return bad(err, p, "'%s' is the name of a stockade volume; rename this one%s", n,
				   " (or label the pod " SK_INJECT_LABEL "=true if stockade wrapped it)");
	}

	/* Checked: now mutate. Pod level first (stockade.podSpec). */
	default_item(spec, "automountServiceAccountToken", cJSON_CreateFalse());
	default_item(spec, "enableServiceLinks", cJSON_CreateFalse());
	psc = ensure_object(spec, "securityContext");
	cJSON *prof = cJSON_CreateObject();
	add_str(prof, "type", "RuntimeDefault");
	default_item(psc, "seccompProfile", prof);

	cJSON *c;
	cJSON_ArrayForEach(c, inits) {
		harden_agent(c, o);
	}
	cJSON_ArrayForEach(c, conts) {
		harden_agent(c, o);
	}
	/* a volume of that name that the pod already has is its own: mounted as it is, not added again */
	bool has_tmp_vol = false;
	cJSON_ArrayForEach(c, vols) {
		const char *n = cname(c);
		has_tmp_vol |= n && !strcmp(n, VOL_AGENT_TMP);
	}
	bool need_tmp_vol = false;
	if (!has_tmp_vol) {
		need_tmp_vol |= give_tmp(inits);
		need_tmp_vol |= give_tmp(conts);
	}
	cJSON_ArrayForEach(c, inits) {
		add_agent_extras(c, o);
	}
	cJSON_ArrayForEach(c, conts) {
		add_agent_extras(c, o);
	}

	/* stockade-init first, then the native sidecar, so both run before any container of the pod's own
	 * (with init_in_sidecar the sidecar alone, its entry being stockade-init) */
	cJSON *new_inits = cJSON_CreateArray();
	if (o->cni)
		cJSON_AddItemToArray(new_inits, build_validate(o));
	else if (!o->init_in_sidecar)
		cJSON_AddItemToArray(new_inits, build_init(o));
	if (is_native(o))
		cJSON_AddItemToArray(new_inits, build_sidecar(o));
	if (inits)
		while (inits->child)
			cJSON_AddItemToArray(new_inits, cJSON_DetachItemViaPointer(inits, inits->child));
	set_item(spec, "initContainers", new_inits);
	if (o->sidecar_first)
		(void)cJSON_InsertItemInArray(conts, 0, build_sidecar(o));  /* fails only on a NULL item */
	else if (!o->native)
		cJSON_AddItemToArray(conts, build_sidecar(o));

	cJSON *new_vols = cJSON_CreateArray();
	cJSON *pv = cJSON_CreateObject();
	add_str(pv, "name", VOL_POLICY);
	add_str(add_obj(pv, "configMap"), "name", o->policy_configmap);
	cJSON_AddItemToArray(new_vols, pv);
	cJSON *rv = cJSON_CreateObject();
	add_str(rv, "name", VOL_RUN);
	cJSON *ed = add_obj(rv, "emptyDir");
	add_str(ed, "medium", "Memory");
	add_str(ed, "sizeLimit", "1Mi");
	cJSON_AddItemToArray(new_vols, rv);
	for (size_t k = 0; k < o->n_secrets; k++) {
		char vol[320];   /* the name is a DNS label (inject.h): no truncation */
		(void)snprintf(vol, sizeof(vol), VOL_SECRET_PREFIX "%s", o->secrets[k].name);
		cJSON *sv = cJSON_CreateObject();
		add_str(sv, "name", vol);
		cJSON *sec = add_obj(sv, "secret");
		add_str(sec, "secretName", o->secrets[k].secret_name);
		/* root-owned files (no fsGroup, which would hand the group to the agent too): 0444 lets the sidecar
		 * UID read them; only the sidecar mounts this volume */
		add_num(sec, "defaultMode", 0444);
		cJSON_AddItemToArray(new_vols, sv);
	}
	if (o->trust) {
		/* public certificates only (a bundle of ~200 KB twice, the PKCS#12 store): memory, bounded */
		cJSON *tv = cJSON_CreateObject();
		add_str(tv, "name", VOL_TRUST);
		cJSON *ted = add_obj(tv, "emptyDir");
		add_str(ted, "medium", "Memory");
		add_str(ted, "sizeLimit", "4Mi");
		cJSON_AddItemToArray(new_vols, tv);
	}
	if (o->guardrails) {
		/* the annotation as a file: the kubelet rewrites it when the annotation changes, and the sidecar
		 * watching it narrows its policy to the new guardrails (docs/governance.md) */
		cJSON *gv = cJSON_CreateObject();
		add_str(gv, "name", VOL_GUARDRAILS);
		cJSON *item = cJSON_CreateObject();
		add_str(item, "path", "guardrails.yaml");
		add_str(add_obj(item, "fieldRef"), "fieldPath",
			"metadata.annotations['" SK_INJECT_GUARDRAILS_ANNOTATION "']");
		cJSON_AddItemToArray(cJSON_AddArrayToObject(add_obj(gv, "downwardAPI"), "items"), item);
		cJSON_AddItemToArray(new_vols, gv);
	}
	if (vols)
		while (vols->child)
			cJSON_AddItemToArray(new_vols, cJSON_DetachItemViaPointer(vols, vols->child));
	if (need_tmp_vol) {
		cJSON *tv = cJSON_CreateObject();
		add_str(tv, "name", VOL_AGENT_TMP);
		add_obj(tv, "emptyDir");
		cJSON_AddItemToArray(new_vols, tv);
	}
	set_item(spec, "volumes", new_vols);
	/* cJSON's builders drop what they cannot allocate without saying so: check what the sandbox rests on */
	if (!sandboxed(spec, o))
		return sk_err_set(err, ENOMEM, "inject: out of memory while wrapping %s", at);
	return 0;
}

/* The profile a pod's SK_INJECT_PROFILE_ANNOTATION names, into *profile (borrowing from meta); *profile is
 * left alone without one. */
static int annotated_profile(const cJSON *meta, const char *meta_at, const struct sk_inject_opts *o,
			     const char **profile, struct sk_err *err)
{
	cJSON *anns;
	char p[256];
	int r = opt_object(meta, "annotations", meta_at, &anns, err);
	if (r < 0)
		return r;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(anns, SK_INJECT_PROFILE_ANNOTATION);
	if (!a)
		return 0;
	/* a field path for messages: meta_at is at most 160 bytes, so it fits */
	(void)snprintf(p, sizeof(p), "%s.annotations[%s]", meta_at, SK_INJECT_PROFILE_ANNOTATION);
	if (!cJSON_IsString(a) || !sk_seccomp_is_profile_name(a->valuestring))
		return bad(err, p, "expected stockade-<16 hex>.json, the seccomp profile of the pod's policy "
			   "(stockade-policy seccomp --policy FILE --print-name)");
	if (!o->seccomp_profile)
		return bad(err, p, "names a seccomp profile, but the agent containers get RuntimeDefault here "
			   "(--no-seccomp): remove the annotation or give them their profile");
	if (o->profile_fixed && strcmp(a->valuestring, o->seccomp_profile) != 0)
		return bad(err, p, "'%s' is not the policy's seccomp profile '%s'", a->valuestring, o->seccomp_profile);
	*profile = a->valuestring;
	return 0;
}

/* The policy ConfigMap a pod's SK_INJECT_POLICY_ANNOTATION names, into *name (borrowing from meta); left
 * alone without one. */
static int annotated_policy(const cJSON *meta, const char *meta_at, const struct sk_inject_opts *o, const char **name,
			    struct sk_err *err)
{
	cJSON *anns;
	char p[256];
	int r = opt_object(meta, "annotations", meta_at, &anns, err);
	if (r < 0)
		return r;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(anns, SK_INJECT_POLICY_ANNOTATION);
	if (!a)
		return 0;
	(void)snprintf(p, sizeof(p), "%s.annotations[%s]", meta_at, SK_INJECT_POLICY_ANNOTATION);
	/* a ConfigMap name: a DNS subdomain (lower case alphanumerics, '-' and '.', at most 253) */
	bool ok = cJSON_IsString(a) && a->valuestring[0] && strlen(a->valuestring) <= 253;
	for (const char *c = ok ? a->valuestring : ""; *c && ok; c++)
		ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.';
	if (!ok)
		return bad(err, p, "expected the name of a policy ConfigMap in the pod's namespace (lower case "
			   "letters, digits, '-' and '.')");
	if (o->policy_fixed && strcmp(a->valuestring, o->policy_configmap) != 0)
		return bad(err, p, "names policy ConfigMap '%s', but the pod gets '%s', the one written with it "
			   "(inject --policy): remove the annotation or leave out --policy", a->valuestring,
			   o->policy_configmap);
	*name = a->valuestring;
	return 0;
}

/* An environment variable's name as shells and env(1) take it: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* The shape policy/validate_secrets.c accepts for a placeholder: what else could the sidecar swap? */
static bool placeholder_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < SK_SECRET_PLACEHOLDER_MIN || n > SK_SECRET_PLACEHOLDER_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
		      *s == '_' || *s == '-'))
			return false;
	return true;
}

/* A pod's SK_INJECT_SECRETS_ANNOTATION and SK_INJECT_SECRET_ENV_ANNOTATION added to the options' lists:
 * the combined arrays into *sec and *env (owned by the caller, NULL when the pod has neither), pointing
 * into *buf (the annotations' text, split in place, owned by the caller). eo gets them. */
struct annotated {
	struct sk_inject_secret *sec;
	struct sk_inject_env *env;
	char *buf[2];
};

static void annotated_free(struct annotated *a)
{
	free(a->sec);
	free(a->env);
	free(a->buf[0]);
	free(a->buf[1]);
}

static bool subdomain_ok(const char *s)
{
	bool ok = s[0] && strlen(s) <= 253;
	for (; *s && ok; s++)
		ok = (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.';
	return ok;
}

static int annotated_secrets(const cJSON *meta, const char *meta_at, struct sk_inject_opts *eo, struct annotated *a,
			     struct sk_err *err)
{
	cJSON *anns;
	int r = opt_object(meta, "annotations", meta_at, &anns, err);
	if (r < 0)
		return r;
	static const char *const keys[] = { SK_INJECT_SECRETS_ANNOTATION, SK_INJECT_SECRET_ENV_ANNOTATION };
	for (int k = 0; k < 2; k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(anns, keys[k]);
		char p[256];
		if (!v)
			continue;
		(void)snprintf(p, sizeof(p), "%s.annotations[%s]", meta_at, keys[k]);
		if (!cJSON_IsString(v) || strlen(v->valuestring) > 8192)
			return bad(err, p, "expected space-separated %s (at most %d)", k ? "NAME=PLACEHOLDER" : "NAME=SECRET",
				   SK_INJECT_MAX_ANNOTATED);
		size_t n_opt = k ? eo->n_secret_env : eo->n_secrets;
		if (!(a->buf[k] = strdup(v->valuestring)) ||
		    !(k ? (void *)(a->env = calloc(n_opt + SK_INJECT_MAX_ANNOTATED, sizeof(*a->env)))
			: (void *)(a->sec = calloc(n_opt + SK_INJECT_MAX_ANNOTATED, sizeof(*a->sec)))))
			return sk_err_set(err, ENOMEM, "inject: out of memory");
		if (k && n_opt)
			memcpy(a->env, eo->secret_env, n_opt * sizeof(*a->env));
		else if (n_opt)
			memcpy(a->sec, eo->secrets, n_opt * sizeof(*a->sec));
		size_t n = n_opt;
		for (char *tok = a->buf[k], *next; *tok; tok = next) {
			size_t l = strcspn(tok, " ");
			next = tok + l;
			while (*next == ' ')
				*next++ = '\0';
			if (!l)
				continue;
			char *eq = strchr(tok, '=');
			if (!eq || n == n_opt + SK_INJECT_MAX_ANNOTATED)
				return bad(err, p, "expected space-separated %s (at most %d)",
					   k ? "NAME=PLACEHOLDER" : "NAME=SECRET", SK_INJECT_MAX_ANNOTATED);
			*eq = '\0';
			const char *name = tok, *val = eq + 1;
			if (k ? !env_name_ok(name) : !sk_dns_label(name, strlen(name)))
				return bad(err, p, "'%.64s': expected %s", name,
					   k ? "a variable name ([A-Za-z_][A-Za-z0-9_]*)" : "a name of [a-z0-9-], 1-63");
			if (k ? !placeholder_ok(val) : !subdomain_ok(val))
				return bad(err, p, "%.64s: '%.128s' is not %s", name, val,
					   k ? "a placeholder (16 to 128 of [A-Za-z0-9._-])" : "a Secret name");
			for (size_t j = 0; j < n; j++)
				if (!strcmp(k ? a->env[j].name : a->sec[j].name, name))
					return bad(err, p, "%.64s is given twice (here or in the injector's own options)", name);
			if (k)
				a->env[n++] = (struct sk_inject_env){ name, val };
			else
				a->sec[n++] = (struct sk_inject_secret){ name, val };
		}
		if (k) {
			eo->secret_env = a->env;
			eo->n_secret_env = n;
		} else {
			eo->secrets = a->sec;
			eo->n_secrets = n;
		}
	}
	return 0;
}

/* The pod template (metadata + spec) of doc, following kp->path; NULL with err when the shape is wrong. */
static cJSON *find_template(cJSON *doc, const struct kind_path *kp, char *at, size_t atsz, struct sk_err *err)
{
	cJSON *t = doc;
	size_t off = 0;
	at[0] = '\0';
	for (size_t i = 0; i < 4 && kp->path[i]; i++) {
		off += (size_t)snprintf(at + off, atsz - off, "%s%s", off ? "." : "", kp->path[i]);
		if (off >= atsz)
			off = atsz - 1;
		t = cJSON_GetObjectItemCaseSensitive(t, kp->path[i]);
		if (!cJSON_IsObject(t)) {
			bad(err, at, "expected a mapping (%s has a pod template here)", kp->kind);
			return NULL;
		}
	}
	return t;
}

int sk_inject_opts_check(const struct sk_inject_opts *o, struct sk_err *err)
{
	for (size_t i = 0; i < o->n_secret_env; i++) {
		const struct sk_inject_env *e = &o->secret_env[i];
		if (!env_name_ok(e->name))
			return sk_err_set(err, EINVAL, "--secret-env %.64s: expected NAME=PLACEHOLDER, NAME a variable "
					  "name ([A-Za-z_][A-Za-z0-9_]*)", e->name);
		if (!placeholder_ok(e->value))
			return sk_err_set(err, EINVAL, "--secret-env %.64s: the placeholder must be %d to %d characters "
					  "of [A-Za-z0-9._-], as the policy's secrets[].placeholder", e->name,
					  SK_SECRET_PLACEHOLDER_MIN, SK_SECRET_PLACEHOLDER_MAX);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(o->secret_env[j].name, e->name))
				return sk_err_set(err, EINVAL, "--secret-env %.64s: given twice", e->name);
	}
	if (o->agent_uid == 0 || o->agent_uid == o->sidecar_uid || o->sidecar_uid == 0)
		return sk_err_set(err, EINVAL, "inject: the agent and sidecar UIDs must be non-zero and differ");
	/* the chart's refusal of init.inSidecar, in inject's words */
	if (o->init_in_sidecar && !is_native(o))
		return sk_err_set(err, EINVAL, "--init-in-sidecar needs the native sidecar (not --classic-sidecar, not "
				  "--sidecar-first): a classic sidecar's failed postStart hook does not stop the kubelet "
				  "from starting the agent, so the agent could run with no rules (fail open)");
	if (o->cni && o->init_in_sidecar)
		return sk_err_set(err, EINVAL, "--cni and --init-in-sidecar: in CNI mode the node's plugin programs the "
				  "netns and no container of the pod has NET_ADMIN; choose one");
	if (o->cni && (o->validate_timeout_ms < 100 || o->validate_timeout_ms > 60000))
		return sk_err_set(err, EINVAL, "inject: the validator's timeout must be 100..60000 ms");
	return 0;
}

/* sk_inject_doc, with what the pod's annotations add kept in ann (freed by the caller on every path). */
static int inject_doc(cJSON *doc, const struct sk_inject_opts *o, struct annotated *ann, struct sk_err *err)
{
	const struct kind_path *kp = cJSON_IsObject(doc) ? find_kind(doc) : NULL;
	if (!kp)
		return SK_INJECT_PASS;
	int r = sk_inject_opts_check(o, err);
	if (r < 0)
		return r;
	char at[128], spec_at[160];
	cJSON *tmpl = find_template(doc, kp, at, sizeof(at), err);
	if (!tmpl)
		return -EINVAL;
	(void)snprintf(spec_at, sizeof(spec_at), "%s%sspec", at, at[0] ? "." : "");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
	if (!spec)
		return bad(err, spec_at, "missing: a %s needs a pod spec here", kp->kind);
	cJSON *meta_in, *labels_in;
	char meta_at[160];
	(void)snprintf(meta_at, sizeof(meta_at), "%s%smetadata", at, at[0] ? "." : "");
	if ((r = opt_object(tmpl, "metadata", at[0] ? at : "(document)", &meta_in, err)) < 0 ||
	    (r = opt_object(meta_in, "labels", meta_at, &labels_in, err)) < 0)
		return r;
	const cJSON *mark = cJSON_GetObjectItemCaseSensitive(labels_in, SK_INJECT_LABEL);
	bool wrapped = cJSON_IsString(mark) && !strcmp(mark->valuestring, "true");
	struct sk_inject_opts eo = *o;
	if ((r = annotated_profile(meta_in, meta_at, o, &eo.seccomp_profile, err)) < 0 ||
	    (r = annotated_policy(meta_in, meta_at, o, &eo.policy_configmap, err)) < 0)
		return r;
	if ((r = annotated_secrets(meta_in, meta_at, &eo, ann, err)) < 0)
		return r;
	o = &eo;

	/* Work on copies, so a refusal leaves the document as it was. */
	cJSON *nspec = cJSON_Duplicate(spec, 1);
	if (!nspec)
		return sk_err_set(err, ENOMEM, "inject: out of memory");
	r = wrap_spec(nspec, spec_at, wrapped, kp->job, o, err);
	if (r < 0) {
		cJSON_Delete(nspec);
		return r;
	}
	cJSON *meta = ensure_object(tmpl, "metadata");
	cJSON *labels = ensure_object(meta, "labels");
	set_item(labels, SK_INJECT_LABEL, cJSON_CreateString("true"));
	if (o->guardrails) {
		cJSON *anns = ensure_object(meta, "annotations");
		set_item(anns, SK_INJECT_GUARDRAILS_ANNOTATION, cJSON_CreateString(o->guardrails));
		if (!cJSON_GetObjectItemCaseSensitive(anns, SK_INJECT_GUARDRAILS_ANNOTATION))
			return sk_err_set(err, ENOMEM, "inject: out of memory");
	}
	if (o->cni && o->netns_policy) {
		/* what the node's stockade-cni loads into the netns; the pod's own value of it is never kept */
		cJSON *anns = ensure_object(meta, "annotations");
		set_item(anns, SK_INJECT_NETNS_POLICY_ANNOTATION, cJSON_CreateString(o->netns_policy));
		if (!cJSON_GetObjectItemCaseSensitive(anns, SK_INJECT_NETNS_POLICY_ANNOTATION))
			return sk_err_set(err, ENOMEM, "inject: out of memory");
	} else {
		/* without CNI mode stockade-init programs the netns; without the text the node's plugin reads the
		 * pod's policy volume's ConfigMap (cni/kube.h): either way never the pod's own text */
		cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
							SK_INJECT_NETNS_POLICY_ANNOTATION);
	}
	set_item(tmpl, "spec", nspec);
	/* An allocation that failed anywhere above left an item out; say so rather than emit a partial pod. */
	if (!cJSON_GetObjectItemCaseSensitive(labels, SK_INJECT_LABEL) ||
	    cJSON_GetObjectItemCaseSensitive(tmpl, "spec") != nspec)
		return sk_err_set(err, ENOMEM, "inject: out of memory");
	return SK_INJECT_WRAPPED;
}

int sk_inject_doc(cJSON *doc, const struct sk_inject_opts *o, struct sk_err *err)
{
	struct annotated ann = { 0 };
	int r = inject_doc(doc, o, &ann, err);
	annotated_free(&ann);
	return r;
}

/* Fields the API server fills in when an object is created without them (pkg/apis/core/v1/defaults.go):
 * a live object read back carries them although no manifest wrote them. */
static bool api_defaulted(const char *key)
{
	static const char *const keys[] = {
		"terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy", "protocol", "scheme",
		"timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold", "defaultMode",
		"restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds", "securityContext",
		"resources", "creationTimestamp", "revisionHistoryLimit", "progressDeadlineSeconds", "strategy",
		"podManagementPolicy", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds",
		"serviceAccountName", "serviceAccount",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

/* want (what wrapping gives) against have (the object as read back): equal, except that have may carry a key
 * want lacks when it is one the API server defaults. A key want has must be in have with the same value, so a
 * flag, an argument, a probe or a volume that differs is still a difference. */
static bool same_but_defaults(const cJSON *want, const cJSON *have)
{
	if (cJSON_IsObject(want) && cJSON_IsObject(have)) {
		const cJSON *w, *h;
		cJSON_ArrayForEach(w, want) {
			h = cJSON_GetObjectItemCaseSensitive(have, w->string);
			if (!h || !same_but_defaults(w, h))
				return false;
		}
		cJSON_ArrayForEach(h, have) {
			if (!cJSON_GetObjectItemCaseSensitive(want, h->string) && !api_defaulted(h->string))
				return false;
		}
		return true;
	}
	if (cJSON_IsArray(want) && cJSON_IsArray(have)) {
		const cJSON *w = want->child, *h = have->child;
		for (; w && h; w = w->next, h = h->next)
			if (!same_but_defaults(w, h))
				return false;
		return !w && !h;
	}
	return cJSON_Compare(want, have, 1);
}

int sk_inject_is_wrapped(const cJSON *doc, const struct sk_inject_opts *o, struct sk_err *err)
{
	cJSON *copy = cJSON_Duplicate(doc, 1);
	if (!copy)
		return sk_err_set(err, ENOMEM, "inject: out of memory");
	int r = sk_inject_doc(copy, o, err);
	if (r >= 0)
		r = same_but_defaults(copy, doc) ? 1 : 0;
	cJSON_Delete(copy);
	return r;
}

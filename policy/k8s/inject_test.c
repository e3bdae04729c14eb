/* policy/k8s/inject_test.c — the pod-spec mutation: each refusal names its field and leaves the document
 * as it was; wrapping is idempotent for every kind; the manifest reader resolves scalars as kubectl does
 * and the writer's YAML reads back as the same tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "policy/k8s/inject.h"
#include "policy/k8s/manifest.h"

static cJSON *yaml1(const char *text)
{
	struct sk_err err = { 0 };
	cJSON *docs = NULL;
	bool json;
	int r = sk_manifest_parse("t.yaml", text, strlen(text), &docs, &json, &err);
	if (r < 0)
		fail_msg("parse: %s", err.msg);
	assert_int_equal(cJSON_GetArraySize(docs), 1);
	cJSON *d = cJSON_DetachItemFromArray(docs, 0);
	cJSON_Delete(docs);
	return d;
}

static const char pod[] = "apiVersion: v1\n"
			  "kind: Pod\n"
			  "metadata: {name: p}\n"
			  "spec:\n"
			  "  containers:\n"
			  "    - name: app\n"
			  "      image: busybox\n";

static const cJSON *at(const cJSON *o, const char *path)
{
	/* dotted path with [n] indexes: "spec.initContainers[0].name" */
	char buf[256];
	assert_true(snprintf(buf, sizeof(buf), "%s", path) < (int)sizeof(buf));
	for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, ".")) {
		char *br = strchr(tok, '[');
		if (br)
			*br = 0;
		o = cJSON_GetObjectItemCaseSensitive(o, tok);
		while (br && o) {
			o = cJSON_GetArrayItem(o, atoi(br + 1));
			br = strchr(br + 1, '[');
		}
	}
	return o;
}

static const char *str_at(const cJSON *o, const char *path)
{
	const cJSON *v = at(o, path);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_pod_wrapped_like_the_chart(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.initContainers[0].name"), "stockade-init");
	assert_string_equal(str_at(d, "spec.initContainers[0].securityContext.capabilities.add[0]"), "NET_ADMIN");
	assert_string_equal(str_at(d, "spec.initContainers[1].name"), "stockade-sidecar");
	assert_string_equal(str_at(d, "spec.initContainers[1].restartPolicy"), "Always");
	assert_string_equal(str_at(d, "spec.initContainers[1].lifecycle.postStart.exec.command[1]"), "wait-ready");
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.containers")), 1);
	assert_int_equal(at(d, "spec.containers[0].securityContext.runAsUser")->valueint, 1000);
	assert_true(cJSON_IsTrue(at(d, "spec.containers[0].securityContext.runAsNonRoot")));
	assert_true(cJSON_IsFalse(at(d, "spec.containers[0].securityContext.allowPrivilegeEscalation")));
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.capabilities.drop[0]"), "ALL");
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.seccompProfile.type"), "Localhost");
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.seccompProfile.localhostProfile"),
			    "stockade-4696b6ca6e2d4b5e.json");  /* the default section's hashed name */
	assert_string_equal(str_at(d, "spec.volumes[0].configMap.name"), "stockade-policy");
	assert_string_equal(str_at(d, "spec.volumes[1].emptyDir.medium"), "Memory");
	assert_true(cJSON_IsFalse(at(d, "spec.automountServiceAccountToken")));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(at(d, "metadata.labels"), SK_INJECT_LABEL)->valuestring,
			    "true");
	cJSON_Delete(d);
}

static void expect_refused(const char *doc, const struct sk_inject_opts *o, const char *msg)
{
	struct sk_err err = { 0 };
	cJSON *d = yaml1(doc);
	char *before = cJSON_PrintUnformatted(d);
	assert_int_equal(sk_inject_doc(d, o, &err), -EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' lacks '%s'", err.msg, msg);
	char *after = cJSON_PrintUnformatted(d);
	assert_string_equal(before, after);  /* a refusal leaves the document as it was */
	cJSON_free(before);
	cJSON_free(after);
	cJSON_Delete(d);
}

/* The agent's profile goes to stockade-init too (which checks it is the policy's); a pod annotated
 * stockade.io/seccomp-profile gets that profile instead of the options' (what stockade-injector, which
 * cannot read the policy, relies on), in agent containers and init alike; a malformed one, one with
 * seccomp off, or one that is not `inject --policy`'s own profile are refused, naming the annotation. */
static void test_profile_annotation(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.initContainers[0].args")), 6);
	assert_string_equal(str_at(d, "spec.initContainers[0].args[4]"), "--seccomp-profile");
	assert_string_equal(str_at(d, "spec.initContainers[0].args[5]"), "stockade-4696b6ca6e2d4b5e.json");
	cJSON_Delete(d);

	static const char dep[] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
				  "    metadata: {annotations: {stockade.io/seccomp-profile: stockade-b22f410551713c70.json}}\n"
				  "    spec: {containers: [{name: a, image: x}, {name: b, image: y}]}\n";
	d = yaml1(dep);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.template.spec.containers[1].securityContext.seccompProfile.localhostProfile"),
			    "stockade-b22f410551713c70.json");
	assert_string_equal(str_at(d, "spec.template.spec.initContainers[0].args[5]"), "stockade-b22f410551713c70.json");
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);  /* idempotent, the annotation still read */
	/* the same profile as the policy's, given by inject --policy: accepted */
	o.seccomp_profile = "stockade-b22f410551713c70.json";
	o.profile_fixed = true;
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON_Delete(d);

	o.seccomp_profile = "stockade-4696b6ca6e2d4b5e.json";
	expect_refused(dep, &o, "spec.template.metadata.annotations[stockade.io/seccomp-profile]: "
		       "'stockade-b22f410551713c70.json' is not the policy's seccomp profile 'stockade-4696b6ca6e2d4b5e.json'");
	sk_inject_opts_default(&o);
	o.seccomp_profile = NULL;
	expect_refused(dep, &o, "spec.template.metadata.annotations[stockade.io/seccomp-profile]: names a seccomp "
		       "profile, but the agent containers get RuntimeDefault here");
	sk_inject_opts_default(&o);
	expect_refused("kind: Pod\nmetadata: {annotations: {stockade.io/seccomp-profile: stockade-agent.json}}\n"
		       "spec: {containers: [{name: c}]}\n", &o,
		       "metadata.annotations[stockade.io/seccomp-profile]: expected stockade-<16 hex>.json");
	expect_refused("kind: Pod\nmetadata: {annotations: {stockade.io/seccomp-profile: 1}}\n"
		       "spec: {containers: [{name: c}]}\n", &o,
		       "metadata.annotations[stockade.io/seccomp-profile]: expected stockade-<16 hex>.json");
	expect_refused("kind: Pod\nmetadata: {annotations: [x]}\nspec: {containers: [{name: c}]}\n", &o,
		       "metadata.annotations: expected a mapping");
}

static void test_classic_sidecar_goes_last_in_containers(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.native = false;
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.initContainers")), 1);
	assert_string_equal(str_at(d, "spec.containers[1].name"), "stockade-sidecar");
	assert_null(at(d, "spec.containers[1].restartPolicy"));
	assert_null(at(d, "spec.containers[1].lifecycle"));
	assert_null(at(d, "spec.containers[1].startupProbe"));
	cJSON_Delete(d);
}

/* sidecar_first: Istio's ordering, a classic sidecar first with the hook that holds the agent; it wins over
 * native (set by default), wraps idempotently, and --check tells it from the native and the classic layout. */
static void test_sidecar_first_in_containers_with_hook(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.sidecar_first = true;
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.initContainers")), 1);
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.containers")), 2);
	assert_string_equal(str_at(d, "spec.containers[0].name"), "stockade-sidecar");
	assert_null(at(d, "spec.containers[0].restartPolicy"));
	assert_null(at(d, "spec.containers[0].startupProbe"));
	assert_string_equal(str_at(d, "spec.containers[0].lifecycle.postStart.exec.command[1]"), "wait-ready");
	assert_string_equal(str_at(d, "spec.containers[0].lifecycle.postStart.exec.command[3]"), "--timeout-ms=30000");
	assert_string_equal(str_at(d, "spec.containers[1].securityContext.seccompProfile.type"), "Localhost");
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON *once = cJSON_Duplicate(d, 1);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_true(cJSON_Compare(once, d, 1));
	struct sk_inject_opts other;
	sk_inject_opts_default(&other);
	assert_int_equal(sk_inject_is_wrapped(d, &other, &err), 0);
	other.native = false;
	assert_int_equal(sk_inject_is_wrapped(d, &other, &err), 0);
	cJSON_Delete(once);
	cJSON_Delete(d);
	d = yaml1("kind: Job\nspec: {template: {spec: {containers: [{name: c}]}}}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "spec.template.spec: a Job's pod cannot have a classic sidecar"));
	cJSON_Delete(d);
}

/* Appends s (NULL: "?") and then sep to out (cut at outsz, which the callers' sizes never reach). */
static void append(char *out, size_t outsz, const char *s, const char *sep)
{
	size_t n = strlen(out);
	assert_true(snprintf(out + n, outsz - n, "%s%s", s ? s : "?", sep) < (int)(outsz - n));
}

/* The strings of a JSON array joined with spaces, compared whole. */
static void assert_joined(const cJSON *arr, const char *want)
{
	char got[1024] = "";
	const cJSON *v;
	cJSON_ArrayForEach(v, arr) {
		append(got, sizeof(got), cJSON_IsString(v) ? v->valuestring : NULL, v->next ? " " : "");
	}
	if (strcmp(got, want))
		fail_msg("got '%s', want '%s'", got, want);
}

/* The names of every container of a pod spec, init containers first: "i:a,b c:x,y". */
static void assert_names(const cJSON *spec, const char *want)
{
	char got[512] = "i:";
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "initContainers")) {
		append(got, sizeof(got), str_at(c, "name"), c->next ? "," : "");
	}
	append(got, sizeof(got), " c:", "");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers")) {
		append(got, sizeof(got), str_at(c, "name"), c->next ? "," : "");
	}
	assert_string_equal(got, want);
}

/* init_in_sidecar, the chart's init.inSidecar: no stockade-init container; the native sidecar, first, has
 * stockade-init as its entry (its arguments, --exec-as the sidecar UID, then the sidecar), runs it as root
 * with exactly NET_ADMIN, SETUID, SETGID and SETPCAP, may write the marker, and its hook drops first. */
static void test_init_in_sidecar_shape(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.init_in_sidecar = true;
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_names(at(d, "spec"), "i:stockade-sidecar c:app");
	const cJSON *side = at(d, "spec.initContainers[0]");
	assert_string_equal(str_at(side, "image"), "localhost/stockade-sidecar:" SK_RELEASE);
	assert_string_equal(str_at(side, "restartPolicy"), "Always");
	assert_joined(at(side, "command"), "/usr/local/bin/stockade-init --policy /etc/stockade/policy.yaml --marker "
		      "/run/stockade/init.marker --seccomp-profile stockade-4696b6ca6e2d4b5e.json --exec-as 1337:1337 -- "
		      "/usr/local/bin/stockade-sidecar");
	/* the sidecar's own arguments, as without the entry */
	assert_joined(at(side, "args"), "--policy=/etc/stockade/policy.yaml --marker=/run/stockade/init.marker "
		      "--admin-addr=0.0.0.0:15000 --log-level=info --trust-dir=/run/stockade-trust");
	assert_int_equal(at(side, "securityContext.runAsUser")->valueint, 0);
	assert_int_equal(at(side, "securityContext.runAsGroup")->valueint, 0);
	assert_true(cJSON_IsFalse(at(side, "securityContext.runAsNonRoot")));
	assert_true(cJSON_IsFalse(at(side, "securityContext.allowPrivilegeEscalation")));
	assert_true(cJSON_IsTrue(at(side, "securityContext.readOnlyRootFilesystem")));
	assert_joined(at(side, "securityContext.capabilities.add"), "NET_ADMIN SETUID SETGID SETPCAP");
	assert_joined(at(side, "securityContext.capabilities.drop"), "ALL");
	assert_string_equal(str_at(side, "securityContext.seccompProfile.type"), "RuntimeDefault");
	assert_joined(at(side, "lifecycle.postStart.exec.command"), "/usr/local/bin/stockade-sidecar wait-ready "
		      "--admin-addr=127.0.0.1:15000 --timeout-ms=30000 --as=1337:1337");
	assert_null(at(side, "startupProbe"));
	assert_string_equal(str_at(side, "volumeMounts[1].name"), "stockade-run");
	assert_true(cJSON_IsFalse(at(side, "volumeMounts[1].readOnly")));
	assert_true(cJSON_IsTrue(at(side, "volumeMounts[0].readOnly")));
	/* the agent as without it */
	assert_int_equal(at(d, "spec.containers[0].securityContext.runAsUser")->valueint, 1000);
	assert_string_equal(str_at(d, "spec.volumes[1].name"), "stockade-run");
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON_Delete(d);

	/* the entry follows the sidecar UID and the seccomp profile; with the startupProbe gate no hook */
	o.sidecar_uid = 2001;
	o.seccomp_profile = NULL;
	o.hold_until_ready = false;
	d = yaml1("kind: Job\nspec: {template: {spec: {initContainers: [{name: setup}], containers: [{name: c}]}}}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_names(at(d, "spec.template.spec"), "i:stockade-sidecar,setup c:c");
	side = at(d, "spec.template.spec.initContainers[0]");
	assert_joined(at(side, "command"), "/usr/local/bin/stockade-init --policy /etc/stockade/policy.yaml --marker "
		      "/run/stockade/init.marker --exec-as 2001:2001 -- /usr/local/bin/stockade-sidecar");
	assert_null(at(side, "lifecycle"));
	assert_int_equal(at(side, "startupProbe.failureThreshold")->valueint, 30);
	assert_int_equal(at(side, "securityContext.runAsUser")->valueint, 0);
	cJSON_Delete(d);
}

/* The chart refuses init.inSidecar with a classic sidecar, started first or not: its failed postStart hook
 * would not hold the agent, which could then run with no rules. inject refuses every workload the same way,
 * leaving it as it was; the options alone say so. */
static void test_init_in_sidecar_refused_without_native(void **state)
{
	(void)state;
	static const char why[] = "--init-in-sidecar needs the native sidecar (not --classic-sidecar, not "
				  "--sidecar-first): a classic sidecar's failed postStart hook does not stop the kubelet "
				  "from starting the agent, so the agent could run with no rules (fail open)";
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	o.init_in_sidecar = true;
	assert_int_equal(sk_inject_opts_check(&o, &err), 0);
	for (int i = 0; i < 2; i++) {
		sk_inject_opts_default(&o);
		o.init_in_sidecar = true;
		if (i == 0)
			o.sidecar_first = true;
		else
			o.native = false;
		err.msg[0] = '\0';
		assert_int_equal(sk_inject_opts_check(&o, &err), -EINVAL);
		assert_string_equal(err.msg, why);
		expect_refused(pod, &o, why);
		expect_refused("kind: Deployment\nspec: {template: {spec: {containers: [{name: c}]}}}\n", &o, why);
		err.msg[0] = '\0';
		cJSON *d = yaml1(pod);
		assert_int_equal(sk_inject_is_wrapped(d, &o, &err), -EINVAL);
		assert_string_equal(err.msg, why);
		cJSON_Delete(d);
		/* without it, the same options wrap */
		o.init_in_sidecar = false;
		assert_int_equal(sk_inject_opts_check(&o, &err), 0);
	}
}

/* Every kind wraps idempotently with the init in the sidecar, and a wrapped pod switches shape both ways
 * (the label says stockade's parts may be replaced): to the init in the sidecar it is what wrapping the
 * original that way gives, no stockade-init left over; and back, what the default wrap gives. */
static void test_init_in_sidecar_idempotent_and_switching(void **state)
{
	(void)state;
	static const char *const docs[] = {
		"kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n",
		"apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: [{name: c, image: i}]}}}\n",
		"kind: ReplicaSet\nspec: {template: {spec: {initContainers: [{name: i}], containers: [{name: c}]}}}\n",
		"kind: Job\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c}]}}}\n",
		"kind: CronJob\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}}\n",
	};
	struct sk_inject_opts def, in;
	sk_inject_opts_default(&def);
	sk_inject_opts_default(&in);
	in.init_in_sidecar = true;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct sk_err err = { 0 };
		cJSON *want_in = yaml1(docs[i]), *want_def = yaml1(docs[i]);
		assert_int_equal(sk_inject_doc(want_in, &in, &err), SK_INJECT_WRAPPED);
		assert_int_equal(sk_inject_doc(want_def, &def, &err), SK_INJECT_WRAPPED);
		assert_false(cJSON_Compare(want_in, want_def, 1));
		/* idempotent */
		cJSON *d = cJSON_Duplicate(want_in, 1);
		assert_int_equal(sk_inject_doc(d, &in, &err), SK_INJECT_WRAPPED);
		if (!cJSON_Compare(want_in, d, 1))
			fail_msg("doc %zu changed on a second wrap", i);
		assert_int_equal(sk_inject_is_wrapped(d, &in, &err), 1);
		assert_int_equal(sk_inject_is_wrapped(d, &def, &err), 0);
		/* to the default shape and back */
		assert_int_equal(sk_inject_doc(d, &def, &err), SK_INJECT_WRAPPED);
		if (!cJSON_Compare(want_def, d, 1))
			fail_msg("doc %zu: the default wrap of the init-in-sidecar one is not the default wrap", i);
		assert_int_equal(sk_inject_is_wrapped(d, &in, &err), 0);
		assert_int_equal(sk_inject_doc(d, &in, &err), SK_INJECT_WRAPPED);
		if (!cJSON_Compare(want_in, d, 1))
			fail_msg("doc %zu: the init-in-sidecar wrap of the default one is not the init-in-sidecar wrap", i);
		char *txt = cJSON_PrintUnformatted(d);
		assert_null(strstr(txt, "\"name\":\"stockade-init\""));
		assert_non_null(strstr(txt, "/usr/local/bin/stockade-init"));
		free(txt);
		cJSON_Delete(d);
		cJSON_Delete(want_in);
		cJSON_Delete(want_def);
	}
}

/* cJSON's builders drop what they cannot allocate without saying so; the wrap's own check (sandboxed) must
 * then refuse to report success. One allocation fails at a time, each in turn: a wrap that still reports
 * success has the whole entry (command, UID, exactly the entry's capabilities, the hook's drop) and no
 * stockade-init container; otherwise it is -ENOMEM. An item cJSON could not attach (its parent or key not
 * allocated) is lost on that path: the hooks keep the live allocations and free what is left at the end,
 * so the leak checker judges the rest of the suite. */
static struct {
	unsigned long n, fail_at;
	void *live[8192];
	size_t n_live;
} oom;

static void *oom_malloc(size_t n)
{
	if (++oom.n == oom.fail_at)
		return NULL;
	void *p = malloc(n);
	if (p && oom.n_live < sizeof(oom.live) / sizeof(oom.live[0]))
		oom.live[oom.n_live++] = p;
	return p;
}

static void oom_free(void *p)
{
	for (size_t i = 0; p && i < oom.n_live; i++)
		if (oom.live[i] == p) {
			oom.live[i] = oom.live[--oom.n_live];
			break;
		}
	free(p);
}

static void test_init_in_sidecar_allocation_failures(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.init_in_sidecar = true;
	cJSON_Hooks hooks = { oom_malloc, oom_free };
	unsigned long wrapped = 0, refused = 0;
	for (oom.fail_at = 1;; oom.fail_at++) {
		struct sk_err err = { 0 };
		cJSON *d = yaml1(pod);
		oom.n = 0;
		oom.n_live = 0;
		cJSON_InitHooks(&hooks);
		int r = sk_inject_doc(d, &o, &err);
		bool done = oom.n < oom.fail_at;   /* nothing failed: every allocation was tried */
		if (r == -ENOMEM) {
			refused++;
		} else {
			assert_int_equal(r, SK_INJECT_WRAPPED);
			wrapped++;
			const cJSON *side = at(d, "spec.initContainers[0]");
			assert_string_equal(str_at(side, "name"), "stockade-sidecar");
			assert_string_equal(str_at(side, "image"), "localhost/stockade-sidecar:" SK_RELEASE);
			assert_string_equal(str_at(side, "restartPolicy"), "Always");
			assert_joined(at(side, "command"), "/usr/local/bin/stockade-init --policy /etc/stockade/policy.yaml "
				      "--marker /run/stockade/init.marker --seccomp-profile stockade-4696b6ca6e2d4b5e.json "
				      "--exec-as 1337:1337 -- /usr/local/bin/stockade-sidecar");
			assert_int_equal(at(side, "securityContext.runAsUser")->valueint, 0);
			assert_joined(at(side, "securityContext.capabilities.add"), "NET_ADMIN SETUID SETGID SETPCAP");
			assert_joined(at(side, "securityContext.capabilities.drop"), "ALL");
			const cJSON *hook = at(side, "lifecycle.postStart.exec.command");
			const cJSON *as = cJSON_GetArrayItem(hook, cJSON_GetArraySize(hook) - 1);
			if (hook)   /* a hook left out holds nothing; one that is there runs as the sidecar UID */
				assert_string_equal(cJSON_IsString(as) ? as->valuestring : "(none)", "--as=1337:1337");
			assert_names(at(d, "spec"), "i:stockade-sidecar c:app");
		}
		cJSON_Delete(d);
		cJSON_InitHooks(NULL);
		assert_true(oom.n_live < sizeof(oom.live) / sizeof(oom.live[0]));
		while (oom.n_live)
			free(oom.live[--oom.n_live]);
		if (done) {
			assert_int_equal(r, SK_INJECT_WRAPPED);
			break;
		}
	}
	/* both outcomes happened: failures reached the builders, and some drops are harmless */
	assert_true(refused > 0);
	assert_true(wrapped > 1);
}

/* cni, the chart's cni.enabled: no NET_ADMIN container anywhere; stockade-validate first (the sidecar image,
 * `stockade-sidecar validate` as the agent UID, nothing added, both mounts), the native sidecar after it; the
 * pod carries the policy in stockade.io/netns-policy (its own value replaced), which a wrap without cni
 * removes again; without the text no annotation at all. The options refuse cni with init_in_sidecar. */
static void test_cni_shape(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.cni = true;
	o.netns_policy = "version: 1\nagent: { uid: 1000 }\n";
	struct sk_err err = { 0 };
	cJSON *d = yaml1("kind: Pod\nmetadata: {name: p, annotations: {stockade.io/netns-policy: \"mine\"}}\n"
			 "spec: {containers: [{name: app, image: x}]}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_names(at(d, "spec"), "i:stockade-validate,stockade-sidecar c:app");
	const cJSON *v = at(d, "spec.initContainers[0]");
	assert_string_equal(str_at(v, "image"), "localhost/stockade-sidecar:" SK_RELEASE);
	assert_joined(at(v, "command"), "/usr/local/bin/stockade-sidecar validate --policy /etc/stockade/policy.yaml "
		      "--marker /run/stockade/init.marker --timeout-ms 3000");
	assert_int_equal(at(v, "securityContext.runAsUser")->valueint, 1000);
	assert_int_equal(at(v, "securityContext.runAsGroup")->valueint, 1000);
	assert_true(cJSON_IsTrue(at(v, "securityContext.runAsNonRoot")));
	assert_true(cJSON_IsFalse(at(v, "securityContext.allowPrivilegeEscalation")));
	assert_null(at(v, "securityContext.capabilities.add"));
	assert_joined(at(v, "securityContext.capabilities.drop"), "ALL");
	assert_string_equal(str_at(v, "volumeMounts[1].name"), "stockade-run");
	/* no container of the pod adds a capability */
	const cJSON *lists[] = { at(d, "spec.initContainers"), at(d, "spec.containers") };
	for (size_t l = 0; l < 2; l++) {
		const cJSON *c;
		cJSON_ArrayForEach(c, lists[l]) {
			assert_null(at(c, "securityContext.capabilities.add"));
		}
	}
	const cJSON *anns = at(d, "metadata.annotations");
	const cJSON *np = cJSON_GetObjectItemCaseSensitive(anns, "stockade.io/netns-policy");
	assert_true(cJSON_IsString(np));
	assert_string_equal(np->valuestring, o.netns_policy);
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	/* the same pod wrapped without cni: stockade-init is back, the annotation gone */
	struct sk_inject_opts plain;
	sk_inject_opts_default(&plain);
	assert_int_equal(sk_inject_is_wrapped(d, &plain, &err), 0);
	assert_int_equal(sk_inject_doc(d, &plain, &err), SK_INJECT_WRAPPED);
	assert_names(at(d, "spec"), "i:stockade-init,stockade-sidecar c:app");
	assert_null(cJSON_GetObjectItemCaseSensitive(at(d, "metadata.annotations"), "stockade.io/netns-policy"));
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 0);
	cJSON_Delete(d);

	/* a container of the pod's own named stockade-validate, in a pod stockade did not wrap: a collision */
	d = yaml1("kind: Pod\nspec: {initContainers: [{name: stockade-validate, image: evil}], containers: [{name: app}]}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), -EINVAL);
	cJSON_Delete(d);

	/* without the text (stockade-injector): no annotation, a pod's own removed; the plugin reads the
	 * ConfigMap of the pod's policy volume */
	struct sk_inject_opts bare = o;
	bare.netns_policy = NULL;
	d = yaml1("kind: Pod\nmetadata: {annotations: {stockade.io/netns-policy: \"mine\"}}\n"
		  "spec: {containers: [{name: app, image: x}]}\n");
	assert_int_equal(sk_inject_doc(d, &bare, &err), SK_INJECT_WRAPPED);
	assert_names(at(d, "spec"), "i:stockade-validate,stockade-sidecar c:app");
	assert_null(cJSON_GetObjectItemCaseSensitive(at(d, "metadata.annotations"), "stockade.io/netns-policy"));
	assert_string_equal(str_at(d, "spec.volumes[0].configMap.name"), "stockade-policy");
	cJSON_Delete(d);

	struct sk_inject_opts bad = o;
	bad.init_in_sidecar = true;
	assert_int_equal(sk_inject_opts_check(&bad, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--cni and --init-in-sidecar"));
	bad = o;
	bad.validate_timeout_ms = 50;
	assert_int_equal(sk_inject_opts_check(&bad, &err), -EINVAL);
}

static void test_startup_probe_instead_of_hook(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.hold_until_ready = false;
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_null(at(d, "spec.initContainers[1].lifecycle"));
	assert_int_equal(at(d, "spec.initContainers[1].startupProbe.failureThreshold")->valueint, 30);
	cJSON_Delete(d);
}

static void test_api_secrets_and_settings(void **state)
{
	(void)state;
	static const char *const settings[] = { "--dns-upstream-sockets=64", "--peek-timeout-ms=2000" };
	static const struct sk_inject_secret secrets[] = { { "gh", "gh-token" } };
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.settings = settings;
	o.n_settings = 2;
	o.secrets = secrets;
	o.n_secrets = 1;
	o.trust = false;   /* positions without the trust files (test_trust_files) */
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.initContainers[1].args[5]"), "--peek-timeout-ms=2000");
	assert_string_equal(str_at(d, "spec.initContainers[1].volumeMounts[2].name"), "stockade-secret-gh");
	assert_string_equal(str_at(d, "spec.initContainers[1].volumeMounts[2].mountPath"),
			    "/var/run/stockade/secrets/gh");
	assert_string_equal(str_at(d, "spec.volumes[2].secret.secretName"), "gh-token");
	assert_int_equal(at(d, "spec.volumes[2].secret.defaultMode")->valueint, 0444);
	/* the agent never mounts it (its one mount is its /tmp), and a re-wrap does not duplicate it */
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.containers[0].volumeMounts")), 1);
	assert_string_equal(str_at(d, "spec.containers[0].volumeMounts[0].name"), "agent-tmp");
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	o.n_secrets = 0;
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.volumes")), 3);   /* policy, run, the agent's /tmp */
	assert_string_equal(str_at(d, "spec.volumes[2].name"), "agent-tmp");
	cJSON_Delete(d);
}

/* Every workload kind, wrapped twice, gives what wrapping once does; and is_wrapped says so. */
static void test_every_kind_idempotent(void **state)
{
	(void)state;
	static const char *const docs[] = {
		"kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n",
		"apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: [{name: c, image: i}]}}}\n",
		"kind: StatefulSet\nspec: {template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}}\n",
		"kind: DaemonSet\nspec: {template: {spec: {containers: [{name: c}], volumes: [{name: v, emptyDir: {}}]}}}\n",
		"kind: ReplicaSet\nspec: {template: {spec: {initContainers: [{name: i}], containers: [{name: c}]}}}\n",
		"kind: Job\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c}]}}}\n",
		"kind: CronJob\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}}\n",
	};
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct sk_err err = { 0 };
		cJSON *d = yaml1(docs[i]);
		assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 0);
		assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
		cJSON *once = cJSON_Duplicate(d, 1);
		assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
		if (!cJSON_Compare(once, d, 1))
			fail_msg("doc %zu changed on a second wrap", i);
		assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
		/* new options re-wrap: the sidecar image follows, nothing is duplicated */
		struct sk_inject_opts o2 = o;
		o2.sidecar_image = "example/sidecar:2";
		assert_int_equal(sk_inject_is_wrapped(d, &o2, &err), 0);
		assert_int_equal(sk_inject_doc(d, &o2, &err), SK_INJECT_WRAPPED);
		char *txt = cJSON_PrintUnformatted(d);
		assert_non_null(strstr(txt, "example/sidecar:2"));
		assert_null(strstr(txt, "localhost/stockade-sidecar"));
		assert_non_null(strstr(txt, "stockade-init"));
		assert_null(strstr(strstr(txt, "stockade-init") + 1, "\"stockade-init\""));
		free(txt);
		cJSON_Delete(once);
		cJSON_Delete(d);
	}
}

static void test_other_kinds_pass_untouched(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	cJSON *d = yaml1("kind: Service\nspec: {containers: [{name: c}]}\n");
	cJSON *before = cJSON_Duplicate(d, 1);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_PASS);
	assert_true(cJSON_Compare(before, d, 1));
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON_Delete(before);
	cJSON_Delete(d);
}

/* Each refusal: the document, the message it must start with. */
static void test_refusals_name_the_field(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *msg;
	} cases[] = {
		{ "kind: Deployment\nspec: {template: {spec: {hostNetwork: true, containers: [{name: c}]}}}\n",
		  "spec.template.spec.hostNetwork: the pod shares the node's network namespace" },
		{ "kind: Pod\nspec: {hostPID: true, containers: [{name: c}]}\n", "spec.hostPID: " },
		{ "kind: Pod\nspec: {hostIPC: true, containers: [{name: c}]}\n", "spec.hostIPC: " },
		{ "kind: Pod\nspec: {containers: [{name: a}, {name: c, securityContext: {privileged: true}}]}\n",
		  "spec.containers[1].securityContext.privileged: container 'c' is privileged" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {runAsUser: 0}}]}\n",
		  "spec.containers[0].securityContext.runAsUser: container 'c' runs as root" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {runAsUser: 1337}}]}\n",
		  "spec.containers[0].securityContext.runAsUser: container 'c' runs as the sidecar's UID" },
		{ "kind: Pod\nspec: {initContainers: [{name: i, securityContext: {runAsUser: 0}}], containers: [{name: c}]}\n",
		  "spec.initContainers[0].securityContext.runAsUser: container 'i' runs as root" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {capabilities: {add: [CHOWN, NET_ADMIN]}}}]}\n",
		  "spec.containers[0].securityContext.capabilities.add: container 'c' adds NET_ADMIN" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {capabilities: {add: [CAP_NET_RAW]}}}]}\n",
		  "spec.containers[0].securityContext.capabilities.add: container 'c' adds CAP_NET_RAW" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {capabilities: {add: [sys_admin]}}}]}\n",
		  "spec.containers[0].securityContext.capabilities.add: container 'c' adds sys_admin" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {allowPrivilegeEscalation: true}}]}\n",
		  "spec.containers[0].securityContext.allowPrivilegeEscalation: " },
		{ "kind: Pod\nspec: {containers: [{name: stockade-sidecar}]}\n",
		  "spec.containers[0].name: 'stockade-sidecar' is the name of a stockade container" },
		{ "kind: Pod\nspec: {initContainers: [{name: stockade-init}], containers: [{name: c}]}\n",
		  "spec.initContainers[0].name: 'stockade-init' is the name of a stockade container" },
		{ "kind: Pod\nspec: {containers: [{name: c}], volumes: [{name: x}, {name: stockade-run}]}\n",
		  "spec.volumes[1].name: 'stockade-run' is the name of a stockade volume" },
		{ "kind: Pod\nspec: {containers: [{name: c, volumeMounts: [{name: stockade-policy, mountPath: /x}]}]}\n",
		  "spec.containers[0].volumeMounts[0].name: container 'c' mounts 'stockade-policy'" },
		{ "kind: Pod\nspec: {containers: []}\n", "spec.containers: expected at least one container" },
		{ "kind: Pod\nspec: {containers: {name: c}}\n", "spec.containers: expected a list" },
		{ "kind: Pod\nspec: {containers: [{image: x}]}\n", "spec.containers[0]: expected a container with a name" },
		{ "kind: Pod\n", "spec: missing" },
		{ "kind: CronJob\nspec: {jobTemplate: {spec: {}}}\n", "spec.jobTemplate.spec.template: expected a mapping" },
		{ "kind: Pod\nspec: {containers: [{name: c, securityContext: {runAsUser: x}}]}\n",
		  "spec.containers[0].securityContext.runAsUser: expected a number" },
	};
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_err err = { 0 };
		cJSON *d = yaml1(cases[i].doc);
		cJSON *before = cJSON_Duplicate(d, 1);
		assert_int_equal(sk_inject_doc(d, &o, &err), -EINVAL);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)))
			fail_msg("case %zu: got '%s', want prefix '%s'", i, err.msg, cases[i].msg);
		/* a refusal leaves the document as it was */
		assert_true(cJSON_Compare(before, d, 1));
		struct sk_err err2 = { 0 };
		assert_int_equal(sk_inject_is_wrapped(d, &o, &err2), -EINVAL);
		cJSON_Delete(before);
		cJSON_Delete(d);
	}
}

static void test_job_with_classic_sidecar_refused(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.native = false;
	struct sk_err err = { 0 };
	cJSON *d = yaml1("kind: Job\nspec: {template: {spec: {containers: [{name: c}]}}}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), -EINVAL);
	assert_string_equal(err.msg, "spec.template.spec: a Job's pod cannot have a classic sidecar: it would keep "
				     "running and the Job would never complete (use a native sidecar, Kubernetes >= 1.29)");
	cJSON_Delete(d);
	d = yaml1("kind: CronJob\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "spec.jobTemplate.spec.template.spec: a Job's pod cannot have a classic"));
	cJSON_Delete(d);
	/* a Deployment may */
	d = yaml1("kind: Deployment\nspec: {template: {spec: {containers: [{name: c}]}}}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	cJSON_Delete(d);
}

/* What the pod already says is kept where it does not weaken the sandbox. */
static void test_agent_settings_kept_or_forced(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	cJSON *d = yaml1("kind: Pod\nspec:\n  automountServiceAccountToken: true\n  containers:\n"
			 "    - name: c\n      securityContext:\n        runAsUser: 2000\n        runAsNonRoot: false\n"
			 "        readOnlyRootFilesystem: false\n        capabilities: {add: [CHOWN], drop: [MKNOD]}\n"
			 "        seccompProfile: {type: Unconfined}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_true(cJSON_IsTrue(at(d, "spec.automountServiceAccountToken")));
	assert_int_equal(at(d, "spec.containers[0].securityContext.runAsUser")->valueint, 2000);
	assert_true(cJSON_IsTrue(at(d, "spec.containers[0].securityContext.runAsNonRoot")));
	assert_true(cJSON_IsFalse(at(d, "spec.containers[0].securityContext.readOnlyRootFilesystem")));
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.capabilities.add[0]"), "CHOWN");
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.capabilities.drop[0]"), "MKNOD");
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.capabilities.drop[1]"), "ALL");
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.seccompProfile.type"), "Localhost");
	cJSON_Delete(d);

	o.seccomp_profile = NULL;
	d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.containers[0].securityContext.seccompProfile.type"), "RuntimeDefault");
	assert_null(at(d, "spec.containers[0].securityContext.seccompProfile.localhostProfile"));
	cJSON_Delete(d);
}

/* ---- manifest reader / writer ---- */

static void test_yaml_resolves_like_kubectl(void **state)
{
	(void)state;
	cJSON *d = yaml1("a: yes\nb: off\nc: 0444\nd: 0x1F\ne: 1Mi\nf: '0444'\ng: ~\nh: 1.5\ni: \"true\"\nj: 1_000\n"
			 "k: !!str 12\nl: -7\n");
	assert_true(cJSON_IsTrue(at(d, "a")));
	assert_true(cJSON_IsFalse(at(d, "b")));
	assert_int_equal(at(d, "c")->valueint, 0444);
	assert_int_equal(at(d, "d")->valueint, 31);
	assert_string_equal(str_at(d, "e"), "1Mi");
	assert_string_equal(str_at(d, "f"), "0444");
	assert_true(cJSON_IsNull(at(d, "g")));
	assert_true(at(d, "h")->valuedouble == 1.5);
	assert_string_equal(str_at(d, "i"), "true");
	assert_int_equal(at(d, "j")->valueint, 1000);
	assert_string_equal(str_at(d, "k"), "12");
	assert_int_equal(at(d, "l")->valueint, -7);
	cJSON_Delete(d);
}

static void test_manifest_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "a: 1\na: 2\n", "t.yaml:2:1: duplicate key 'a', expected each key once" },
		{ "a: &x 1\nb: *x\n", "t.yaml:2:4: an alias, expected plain data" },
		{ "a: {<<: {b: 1}}\n", "t.yaml:1:5: a merge key" },
		{ "a: 9007199254740993\n", "t.yaml:1:4: an integer beyond 2^53" },
		{ "a: [1\n", "t.yaml:2:1: YAML syntax error: " },
		{ "a: !foo 1\n", "t.yaml:1:4: a custom tag" },
		{ "? [a]\n: 1\n", "t.yaml:1:3: a non-scalar key" },
		{ "{\"a\": 1,}", "t.yaml:1:10: JSON syntax error" },
		{ "{\"a\": 1e300}", "t.yaml:1:1: a number beyond 2^53" },
		{ "{\"a\": {\"b\": 1, \"c\": 2, \"b\": 3}}", "t.yaml:1:1: a duplicate key in this document" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_err err = { 0 };
		cJSON *docs = NULL;
		bool json;
		if (sk_manifest_parse("t.yaml", cases[i].text, strlen(cases[i].text), &docs, &json, &err) != -EINVAL)
			fail_msg("case %zu accepted", i);
		assert_null(docs);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)))
			fail_msg("case %zu: got '%s', want prefix '%s'", i, err.msg, cases[i].msg);
	}
	/* deep nesting is refused, not recursed into */
	char deep[400];
	memset(deep, '[', 300);
	deep[300] = 0;
	struct sk_err err = { 0 };
	cJSON *docs = NULL;
	bool json = true;
	assert_int_equal(sk_manifest_parse("t.yaml", deep + 1, 299, &docs, &json, &err), -EINVAL);
	deep[0] = 'a';
	deep[1] = ':';
	deep[2] = ' ';
	assert_int_equal(sk_manifest_parse("t.yaml", deep, 300, &docs, &json, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nesting too deep"));
}

static void test_streams_and_round_trip(void **state)
{
	(void)state;
	static const char text[] = "---\n# c\na: 1\n---\n---\nb: [x, 'y z', \"q\\\"\\n\", '', 'on', '1.0', '-', ' s']\n"
				   "c: {}\nd: []\ne: [[1, 2], {}, [], {f: g, h: [i]}]\n\"k: v\": \"\\t\\u0085\\u2028\"\n"
				   "l: 0.1\nm: -0\nn: null\n...\n";
	struct sk_err err = { 0 };
	cJSON *docs = NULL;
	bool json = true;
	assert_int_equal(sk_manifest_parse("t.yaml", text, strlen(text), &docs, &json, &err), 0);
	assert_false(json);
	assert_int_equal(cJSON_GetArraySize(docs), 2);
	for (int i = 0; i < 2; i++) {
		const cJSON *d = cJSON_GetArrayItem(docs, i);
		char *y = sk_manifest_yaml(d);
		assert_non_null(y);
		cJSON *back = NULL;
		if (sk_manifest_parse("back.yaml", y, strlen(y), &back, &json, &err) < 0)
			fail_msg("%s\n%s", err.msg, y);
		assert_int_equal(cJSON_GetArraySize(back), 1);
		if (!cJSON_Compare(d, cJSON_GetArrayItem(back, 0), 1))
			fail_msg("round trip changed doc %d:\n%s", i, y);
		cJSON_Delete(back);
		free(y);
	}
	cJSON_Delete(docs);

	/* JSON stream; a null document is dropped as an empty YAML one is (fuzz_inject finding) */
	static const char js[] = " {\"a\": 1}\n{\"b\": [true, null]} [3]null\n";
	assert_int_equal(sk_manifest_parse("t.json", js, strlen(js), &docs, &json, &err), 0);
	assert_true(json);
	assert_int_equal(cJSON_GetArraySize(docs), 3);
	cJSON_Delete(docs);
	static const char bad_utf8[] = "{\"a\": \"\xdb\xdb\"}";
	assert_int_equal(sk_manifest_parse("t.json", bad_utf8, strlen(bad_utf8), &docs, &json, &err), -EINVAL);
	assert_string_equal(err.msg, "t.json:1:1: a string that is not UTF-8 in this document, expected UTF-8 "
				     "text, each key once and integers below 2^53");
}

/* fuzz_inject findings: each tree below once wrote YAML that did not read back as itself. */
static void test_writer_edge_cases_read_back(void **state)
{
	(void)state;
	char key[1200];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNullToObject(d, key);                          /* a key past YAML's 1024-character simple key */
	cJSON_AddStringToObject(d, "nonchar", "a\xef\xbf\xbf" "b\xc2\x80"); /* U+FFFF and a C1 control: not printable */
	cJSON_AddNumberToObject(d, "bigfloat", 88888888888888880.0); /* whole, past 2^53: must stay a float */
	char ctl[170];
	memset(ctl, 0x7f, sizeof(ctl) - 1);                  /* short raw, past 1024 characters escaped */
	ctl[sizeof(ctl) - 1] = 0;
	cJSON_AddTrueToObject(d, ctl);
	char *y = sk_manifest_yaml(d);
	struct sk_err err = { 0 };
	cJSON *back = NULL;
	bool json;
	if (sk_manifest_parse("back", y, strlen(y), &back, &json, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(cJSON_Compare(d, cJSON_GetArrayItem(back, 0), 1));
	assert_non_null(strstr(y, "\"a\\uFFFFb\\u0080\""));
	cJSON_Delete(back);
	free(y);
	cJSON_Delete(d);
	/* and the plain cases stay plain */
	d = yaml1("port: 80\nneg: -3\nf: 0.5\nname: web\nq: 'yes'\nm: 1Mi\n");
	y = sk_manifest_yaml(d);
	assert_string_equal(y, "port: 80\nneg: -3\nf: 0.5\nname: web\nq: \"yes\"\nm: \"1Mi\"\n");
	back = NULL;
	cJSON_Delete(back);
	free(y);
	cJSON_Delete(d);
}

/* A read-only root leaves no /tmp (Python's tempfile: "No usable temporary directory"): an agent container
 * without a /tmp mount gets the emptyDir agent-tmp there, once; one that has /tmp or a writable root gets
 * nothing. */
static void test_agent_gets_a_writable_tmp(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.trust = false;   /* mounts counted without the trust files' (test_trust_files) */
	struct sk_err err = { 0 };
	cJSON *d = yaml1("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers: [{name: setup, image: i}]\n"
			 "  containers:\n  - {name: a, image: i}\n"
			 "  - {name: b, image: i, volumeMounts: [{name: scratch, mountPath: /tmp}]}\n"
			 "  - {name: c, image: i, securityContext: {readOnlyRootFilesystem: false}}\n"
			 "  volumes: [{name: scratch, emptyDir: {}}]\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.containers[0].volumeMounts[0].name"), "agent-tmp");
	assert_string_equal(str_at(d, "spec.containers[0].volumeMounts[0].mountPath"), "/tmp");
	assert_null(at(d, "spec.containers[0].volumeMounts[0].readOnly"));
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.containers[1].volumeMounts")), 1);
	assert_string_equal(str_at(d, "spec.containers[1].volumeMounts[0].name"), "scratch");
	assert_null(at(d, "spec.containers[2].volumeMounts"));
	/* the pod's own init container is an agent container too (after stockade-init and the sidecar) */
	assert_string_equal(str_at(d, "spec.initContainers[2].name"), "setup");
	assert_string_equal(str_at(d, "spec.initContainers[2].volumeMounts[0].name"), "agent-tmp");
	const cJSON *vols = at(d, "spec.volumes");
	int n_tmp = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, vols) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(v, "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, "agent-tmp")) {
			n_tmp++;
			assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "emptyDir")));
		}
	}
	assert_int_equal(n_tmp, 1);
	cJSON *once = cJSON_Duplicate(d, 1);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_true(cJSON_Compare(once, d, 1));   /* wrapping again adds no second mount or volume */
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON_Delete(once);
	cJSON_Delete(d);
}

/* Adds to every object of a list what the API server fills in on create (a live object read back). */
static void add_api_defaults(cJSON *containers)
{
	cJSON *c;
	cJSON_ArrayForEach(c, containers) {
		cJSON_AddStringToObject(c, "terminationMessagePath", "/dev/termination-log");
		cJSON_AddStringToObject(c, "terminationMessagePolicy", "File");
		cJSON_AddObjectToObject(c, "resources");
		static const char *const probes[] = { "livenessProbe", "readinessProbe", "startupProbe" };
		for (size_t i = 0; i < 3; i++) {
			cJSON *p = cJSON_GetObjectItemCaseSensitive(c, probes[i]);
			if (!p)
				continue;
			if (!cJSON_GetObjectItemCaseSensitive(p, "timeoutSeconds"))
				cJSON_AddNumberToObject(p, "timeoutSeconds", 1);
			cJSON_AddNumberToObject(p, "successThreshold", 1);
			cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(p, "httpGet"), "scheme", "HTTP");
		}
		cJSON *ports = cJSON_GetObjectItemCaseSensitive(c, "ports"), *port;
		cJSON_ArrayForEach(port, ports) {
			cJSON_AddStringToObject(port, "protocol", "TCP");
		}
	}
}

/* at() for a tree the test changes. */
static cJSON *mut_at(cJSON *o, const char *path)
{
	return (cJSON *)(uintptr_t)at(o, path);
}

/* `inject --check` against a live Deployment: the API server's defaults (defaultMode 420, the termination
 * message fields, a probe's scheme and thresholds, a port's protocol, the pod's dnsPolicy…) are no reason to
 * call it unwrapped; a flag that differs still is. */
static void test_check_ignores_api_server_defaults(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	cJSON *d = yaml1("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: team}\nspec:\n"
			 "  template:\n    spec:\n      containers: [{name: c, image: i, ports: [{containerPort: 80}]}]\n"
			 "      volumes: [{name: cfg, configMap: {name: cfg}}]\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON *spec = mut_at(d, "spec.template.spec");
	assert_non_null(spec);
	add_api_defaults(cJSON_GetObjectItemCaseSensitive(spec, "containers"));
	add_api_defaults(cJSON_GetObjectItemCaseSensitive(spec, "initContainers"));
	cJSON_AddStringToObject(spec, "restartPolicy", "Always");
	cJSON_AddStringToObject(spec, "dnsPolicy", "ClusterFirst");
	cJSON_AddStringToObject(spec, "schedulerName", "default-scheduler");
	cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 30);
	cJSON *v;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(spec, "volumes")) {
		cJSON *cm = cJSON_GetObjectItemCaseSensitive(v, "configMap");
		if (cm && !cJSON_GetObjectItemCaseSensitive(cm, "defaultMode"))
			cJSON_AddNumberToObject(cm, "defaultMode", 420);
	}
	cJSON_AddNumberToObject(mut_at(d, "spec"), "revisionHistoryLimit", 10);
	cJSON_AddNumberToObject(mut_at(d, "spec"), "progressDeadlineSeconds", 600);
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	/* the controls: a stockade flag, a key the API server never adds, a changed default all still count */
	struct sk_inject_opts other = o;
	other.log_level = "debug";
	assert_int_equal(sk_inject_is_wrapped(d, &other, &err), 0);
	cJSON *copy = cJSON_Duplicate(d, 1);
	cJSON_AddStringToObject(mut_at(copy, "spec.template.spec.initContainers[1]"), "workingDir", "/x");
	assert_int_equal(sk_inject_is_wrapped(copy, &o, &err), 0);
	cJSON_Delete(copy);
	copy = cJSON_Duplicate(d, 1);
	cJSON *rp = mut_at(copy, "spec.template.spec.initContainers[1].readinessProbe.periodSeconds");
	assert_non_null(rp);
	cJSON_SetNumberValue(rp, cJSON_GetNumberValue(rp) + 1);
	assert_int_equal(sk_inject_is_wrapped(copy, &o, &err), 0);
	cJSON_Delete(copy);
	cJSON_Delete(d);
}

/* stockade.io/policy on the pod names its policy ConfigMap (two policies in one namespace); a name that is
 * no ConfigMap name is refused with the field. */
static void test_policy_annotation(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	struct sk_err err = { 0 };
	static const char dep[] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
				  "    metadata: {annotations: {stockade.io/policy: team-b-policy}}\n"
				  "    spec: {containers: [{name: a, image: x}]}\n";
	cJSON *d = yaml1(dep);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.template.spec.volumes[0].name"), "stockade-policy");
	assert_string_equal(str_at(d, "spec.template.spec.volumes[0].configMap.name"), "team-b-policy");
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON_Delete(d);
	d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.volumes[0].configMap.name"), o.policy_configmap);
	cJSON_Delete(d);
	expect_refused("kind: Pod\nmetadata: {annotations: {stockade.io/policy: Team_B}}\nspec: {containers: [{name: c}]}\n",
		       &o, "metadata.annotations[stockade.io/policy]: expected the name of a policy ConfigMap");
	expect_refused("kind: Pod\nmetadata: {annotations: {stockade.io/policy: \"\"}}\nspec: {containers: [{name: c}]}\n",
		       &o, "metadata.annotations[stockade.io/policy]: expected the name of a policy ConfigMap");
	/* inject --policy writes the pod's policy ConfigMap: an annotation naming another is refused */
	o.policy_fixed = true;
	expect_refused(dep, &o, "spec.template.metadata.annotations[stockade.io/policy]: names policy ConfigMap "
		       "'team-b-policy', but the pod gets 'stockade-policy'");
}

/* With guardrails, the pod carries them as an annotation, projected by a downwardAPI volume into the
 * sidecar alone, which is told --guardrails; wrapping again changes nothing, and a new text replaces it. */
static void test_guardrails_into_the_pod(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.guardrails = "version: 1\ndeniedHosts: [pastebin.com]\n";
	o.trust = false;   /* positions without the trust files (test_trust_files) */
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	const cJSON *anns = at(d, "metadata.annotations");
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(anns, "stockade.io/guardrails");
	assert_true(cJSON_IsString(g));
	assert_string_equal(g->valuestring, o.guardrails);
	assert_string_equal(str_at(d, "spec.initContainers[1].name"), "stockade-sidecar");
	assert_string_equal(str_at(d, "spec.initContainers[1].args[4]"),
			    "--guardrails=/etc/stockade-guardrails/guardrails.yaml");
	assert_string_equal(str_at(d, "spec.initContainers[1].volumeMounts[2].name"), "stockade-guardrails");
	assert_string_equal(str_at(d, "spec.initContainers[1].volumeMounts[2].mountPath"), "/etc/stockade-guardrails");
	assert_true(cJSON_IsTrue(at(d, "spec.initContainers[1].volumeMounts[2].readOnly")));
	assert_string_equal(str_at(d, "spec.volumes[2].name"), "stockade-guardrails");
	assert_string_equal(str_at(d, "spec.volumes[2].downwardAPI.items[0].path"), "guardrails.yaml");
	assert_string_equal(str_at(d, "spec.volumes[2].downwardAPI.items[0].fieldRef.fieldPath"),
			    "metadata.annotations['stockade.io/guardrails']");
	/* only the sidecar mounts it: the init's mounts are the policy and the run dir */
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.initContainers[0].volumeMounts")), 2);
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);   /* again: no second volume */
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	int n = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, at(d, "spec.volumes")) n += !strcmp(cJSON_GetObjectItem(v, "name")->valuestring, "stockade-guardrails");
	assert_int_equal(n, 1);
	/* new guardrails: the wrapped pod is no longer as these options wrap it; wrapping updates the text */
	o.guardrails = "version: 1\n";
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 0);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	g = cJSON_GetObjectItemCaseSensitive(at(d, "metadata.annotations"), "stockade.io/guardrails");
	assert_string_equal(g->valuestring, "version: 1\n");
	cJSON_Delete(d);
}

/* The value of env NAME in container c, or NULL; and how often NAME is there. */
static const char *env_of(const cJSON *c, const char *name, int *count)
{
	const char *v = NULL;
	int n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "env")) {
		if (!strcmp(str_at(e, "name"), name)) {
			n++;
			v = str_at(e, "value");
		}
	}
	if (count)
		*count = n;
	return v;
}

/* Whether container c mounts volume vol, and where. */
static const cJSON *mount_of(const cJSON *c, const char *vol)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(c, "volumeMounts")) {
		if (!strcmp(str_at(m, "name"), vol))
			return m;
	}
	return NULL;
}

/* The trust files (on by default, as the chart's trust.enabled): the sidecar writes them with --trust-dir
 * on an in-memory emptyDir it mounts writable; every container of the pod's own (init containers too)
 * mounts the directory read-only, no subPath, and gets each trust variable it does not set itself, once;
 * stockade-init never sees it. A re-wrap changes nothing; a re-wrap without trust takes all of it away but
 * the variable the container set itself. */
static void test_trust_files(void **state)
{
	(void)state;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	assert_true(o.trust);
	struct sk_err err = { 0 };
	cJSON *d = yaml1("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
			 "  initContainers: [{name: setup, image: i}]\n"
			 "  containers:\n"
			 "  - {name: a, image: i, env: [{name: SSL_CERT_FILE, value: /mine.pem}, "
			 "{name: JAVA_TOOL_OPTIONS, value: -Xmx1g}]}\n"
			 "  - {name: b, image: i}\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	const cJSON *side = at(d, "spec.initContainers[1]");
	assert_string_equal(str_at(side, "name"), "stockade-sidecar");
	assert_string_equal(str_at(side, "args[4]"), "--trust-dir=/run/stockade-trust");
	const cJSON *sm = mount_of(side, "stockade-trust");
	assert_non_null(sm);
	assert_string_equal(str_at(sm, "mountPath"), "/run/stockade-trust");
	assert_null(at(sm, "readOnly"));   /* the sidecar writes there */
	assert_null(mount_of(at(d, "spec.initContainers[0]"), "stockade-trust"));   /* stockade-init */
	const cJSON *vol = NULL, *v;
	cJSON_ArrayForEach(v, at(d, "spec.volumes")) {
		if (!strcmp(str_at(v, "name"), "stockade-trust"))
			vol = v;
	}
	assert_non_null(vol);
	assert_string_equal(str_at(vol, "emptyDir.medium"), "Memory");
	static const char *const own[] = { "spec.initContainers[2]", "spec.containers[0]", "spec.containers[1]" };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		const cJSON *c = at(d, own[i]);
		const cJSON *m = mount_of(c, "stockade-trust");
		assert_non_null(m);
		assert_string_equal(str_at(m, "mountPath"), "/run/stockade-trust");
		assert_true(cJSON_IsTrue(at(m, "readOnly")));
		assert_null(at(m, "subPath"));
		int n;
		assert_string_equal(env_of(c, "REQUESTS_CA_BUNDLE", &n), "/run/stockade-trust/bundle.pem");
		assert_int_equal(n, 1);
		assert_string_equal(env_of(c, "CURL_CA_BUNDLE", NULL), "/run/stockade-trust/bundle.pem");
		assert_string_equal(env_of(c, "GIT_SSL_CAINFO", NULL), "/run/stockade-trust/bundle.pem");
		assert_string_equal(env_of(c, "PIP_CERT", NULL), "/run/stockade-trust/bundle.pem");
		assert_string_equal(env_of(c, "AWS_CA_BUNDLE", NULL), "/run/stockade-trust/bundle.pem");
		assert_string_equal(env_of(c, "NODE_EXTRA_CA_CERTS", NULL), "/run/stockade-trust/ca.pem");
	}
	/* the container's own values win, each once */
	int n;
	assert_string_equal(env_of(at(d, "spec.containers[0]"), "SSL_CERT_FILE", &n), "/mine.pem");
	assert_int_equal(n, 1);
	assert_string_equal(env_of(at(d, "spec.containers[0]"), "JAVA_TOOL_OPTIONS", &n), "-Xmx1g");
	assert_int_equal(n, 1);
	assert_string_equal(env_of(at(d, "spec.containers[1]"), "SSL_CERT_FILE", NULL), "/run/stockade-trust/bundle.pem");
	const char *jto = env_of(at(d, "spec.containers[1]"), "JAVA_TOOL_OPTIONS", NULL);
	assert_non_null(jto);
	assert_non_null(strstr(jto, "-Djavax.net.ssl.trustStore=/run/stockade-trust/truststore.p12"));
	assert_non_null(strstr(jto, "-Djavax.net.ssl.trustStoreType=PKCS12"));
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	char *once = cJSON_PrintUnformatted(d);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	char *twice = cJSON_PrintUnformatted(d);
	assert_string_equal(once, twice);
	cJSON_free(once);
	cJSON_free(twice);

	o.trust = false;
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 0);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	char *all = cJSON_PrintUnformatted(d);
	assert_null(strstr(all, "stockade-trust"));
	cJSON_free(all);
	assert_string_equal(env_of(at(d, "spec.containers[0]"), "SSL_CERT_FILE", NULL), "/mine.pem");
	assert_null(env_of(at(d, "spec.containers[1]"), "SSL_CERT_FILE", NULL));
	cJSON_Delete(d);

	/* a container of the pod's own cannot mount the sidecar's trust volume writable (or at all) itself */
	expect_refused("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: i, volumeMounts: "
		       "[{name: stockade-trust, mountPath: /x}]}]\n", &o, "a volume only stockade's containers may mount");
	o.trust = true;
	expect_refused("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: i}]\n"
		       "  volumes: [{name: stockade-trust, emptyDir: {}}]\n", &o, "the name of a stockade volume");
}

/* Credential placeholders: every container of the pod's own gets NAME=placeholder (in name order, after the
 * trust variables); the Secret behind it is mounted into the sidecar alone. A container that sets the name
 * itself is refused (its value might be the real token) unless stockade wrapped the pod: then replaced.
 * Malformed names and placeholders, and a name given twice, are refused as options. */
static void test_secret_env(void **state)
{
	(void)state;
	static const struct sk_inject_secret secrets[] = { { "github", "gh-token" } };
	static const struct sk_inject_env env[] = { { "ZZ_TOKEN", "stockade-secret-zzzzzz" },
						    { "GITHUB_TOKEN", "stockade-secret-github" } };
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.secrets = secrets;
	o.n_secrets = 1;
	o.secret_env = env;
	o.n_secret_env = 2;
	struct sk_err err = { 0 };
	cJSON *d = yaml1("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
			 "  initContainers: [{name: setup, image: i}]\n"
			 "  containers: [{name: a, image: i, env: [{name: HOME, value: /h}]}, {name: b, image: i}]\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	static const char *const own[] = { "spec.initContainers[2]", "spec.containers[0]", "spec.containers[1]" };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		const cJSON *c = at(d, own[i]);
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "env");
		int n = cJSON_GetArraySize(e);
		assert_true(n >= 2);
		/* the last two, in name order */
		assert_string_equal(str_at(cJSON_GetArrayItem(e, n - 2), "name"), "GITHUB_TOKEN");
		assert_string_equal(str_at(cJSON_GetArrayItem(e, n - 2), "value"), "stockade-secret-github");
		assert_string_equal(str_at(cJSON_GetArrayItem(e, n - 1), "name"), "ZZ_TOKEN");
		assert_null(mount_of(c, "stockade-secret-github"));
	}
	assert_string_equal(env_of(at(d, "spec.containers[0]"), "HOME", NULL), "/h");
	/* the Secret: in the sidecar, in no other container */
	int mounted = 0;
	const char *lists[] = { "spec.initContainers", "spec.containers" };
	for (size_t l = 0; l < 2; l++) {
		const cJSON *c;
		cJSON_ArrayForEach(c, at(d, lists[l])) {
			const cJSON *m = mount_of(c, "stockade-secret-github");
			if (!m)
				continue;
			mounted++;
			assert_string_equal(str_at(c, "name"), "stockade-sidecar");
			assert_true(cJSON_IsTrue(at(m, "readOnly")));
		}
	}
	assert_int_equal(mounted, 1);
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);

	/* wrapped: a placeholder the pod carries (or a value put there since) is replaced, not doubled */
	cJSON *real = cJSON_CreateObject();
	cJSON_AddStringToObject(real, "name", "GITHUB_TOKEN");
	cJSON_AddStringToObject(real, "value", "ghp_real");
	assert_true(cJSON_AddItemToArray((cJSON *)at(d, "spec.containers[1].env"), real));
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	int n;
	assert_string_equal(env_of(at(d, "spec.containers[1]"), "GITHUB_TOKEN", &n), "stockade-secret-github");
	assert_int_equal(n, 1);
	cJSON_Delete(d);

	/* not wrapped: a container's own value of that name is refused, naming it */
	expect_refused("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: i, env: "
		       "[{name: GITHUB_TOKEN, valueFrom: {secretKeyRef: {name: gh, key: t}}}]}]\n", &o,
		       "spec.containers[0].env: container 'a' sets GITHUB_TOKEN");

	static const struct sk_inject_env bad_name[] = { { "1TOKEN", "stockade-secret-github" } };
	static const struct sk_inject_env bad_value[] = { { "T", "short" } };
	static const struct sk_inject_env bad_chars[] = { { "T", "stockade secret github" } };
	static const struct sk_inject_env twice[] = { { "T", "stockade-secret-github" }, { "T", "stockade-secret-other1" } };
	const struct { const struct sk_inject_env *e; size_t n; const char *msg; } cases[] = {
		{ bad_name, 1, "NAME a variable name" },
		{ bad_value, 1, "the placeholder must be 16 to 128 characters" },
		{ bad_chars, 1, "the placeholder must be" },
		{ twice, 2, "given twice" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o.secret_env = cases[i].e;
		o.n_secret_env = cases[i].n;
		err = (struct sk_err){ 0 };
		assert_int_equal(sk_inject_opts_check(&o, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("'%s' lacks '%s'", err.msg, cases[i].msg);
		expect_refused(pod, &o, cases[i].msg);
	}
}

/* The injector's per-pod form of --api-secret and --secret-env: annotations adding to the options' lists
 * (the Secret mounted into the sidecar alone, the placeholder in the pod's own containers); wrapping again
 * changes nothing; a malformed item, or a name the options give too, is refused with the annotation's path. */
static void test_secret_annotations(void **state)
{
	(void)state;
	static const struct sk_inject_secret secrets[] = { { "npm", "npm-token" } };
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.secrets = secrets;
	o.n_secrets = 1;
	struct sk_err err = { 0 };
	cJSON *d = yaml1("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
			 "    stockade.io/api-secrets: 'github=gh-token'\n"
			 "    stockade.io/secret-env: 'GITHUB_TOKEN=stockade-secret-github  B_TOKEN=stockade-secret-bbbbbb'\n"
			 "spec:\n  containers: [{name: a, image: i}]\n");
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	const cJSON *side = at(d, "spec.initContainers[1]");
	assert_string_equal(str_at(side, "name"), "stockade-sidecar");
	assert_non_null(mount_of(side, "stockade-secret-npm"));
	const cJSON *m = mount_of(side, "stockade-secret-github");
	assert_non_null(m);
	assert_string_equal(str_at(m, "mountPath"), "/var/run/stockade/secrets/github");
	const cJSON *agent = at(d, "spec.containers[0]");
	assert_null(mount_of(agent, "stockade-secret-github"));
	assert_string_equal(env_of(agent, "GITHUB_TOKEN", NULL), "stockade-secret-github");
	assert_string_equal(env_of(agent, "B_TOKEN", NULL), "stockade-secret-bbbbbb");
	bool vol = false;
	const cJSON *v;
	cJSON_ArrayForEach(v, at(d, "spec.volumes")) {
		vol |= !strcmp(str_at(v, "name"), "stockade-secret-github") &&
		       !strcmp(str_at(v, "secret.secretName"), "gh-token");
	}
	assert_true(vol);
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	cJSON_Delete(d);

	static const char *const bad_ones[][2] = {
		{ "stockade.io/api-secrets: 'github'", "metadata.annotations[stockade.io/api-secrets]: expected space-separated NAME=SECRET" },
		{ "stockade.io/api-secrets: 'Git=gh-token'", "'Git': expected a name of [a-z0-9-]" },
		{ "stockade.io/api-secrets: 'github=Gh_Token'", "github: 'Gh_Token' is not a Secret name" },
		{ "stockade.io/api-secrets: 'npm=other'", "npm is given twice" },
		{ "stockade.io/secret-env: 'X=short'", "X: 'short' is not a placeholder" },
		{ "stockade.io/secret-env: '9X=stockade-secret-github'", "'9X': expected a variable name" },
		{ "stockade.io/secret-env: 'X=stockade-secret-github X=stockade-secret-github'", "X is given twice" },
		{ "stockade.io/secret-env: 7", "expected space-separated NAME=PLACEHOLDER" },
	};
	for (size_t i = 0; i < sizeof(bad_ones) / sizeof(bad_ones[0]); i++) {
		char doc[512];
		assert_true(snprintf(doc, sizeof(doc), "kind: Pod\nmetadata:\n  name: p\n  annotations:\n    %s\n"
				     "spec:\n  containers: [{name: a, image: i}]\n", bad_ones[i][0]) < (int)sizeof(doc));
		expect_refused(doc, &o, bad_ones[i][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_wrapped_like_the_chart),
		cmocka_unit_test(test_trust_files),
		cmocka_unit_test(test_secret_env),
		cmocka_unit_test(test_secret_annotations),
		cmocka_unit_test(test_profile_annotation),
		cmocka_unit_test(test_policy_annotation),
		cmocka_unit_test(test_guardrails_into_the_pod),
		cmocka_unit_test(test_classic_sidecar_goes_last_in_containers),
		cmocka_unit_test(test_sidecar_first_in_containers_with_hook),
		cmocka_unit_test(test_init_in_sidecar_shape),
		cmocka_unit_test(test_init_in_sidecar_refused_without_native),
		cmocka_unit_test(test_init_in_sidecar_idempotent_and_switching),
		cmocka_unit_test(test_init_in_sidecar_allocation_failures),
		cmocka_unit_test(test_cni_shape),
		cmocka_unit_test(test_startup_probe_instead_of_hook),
		cmocka_unit_test(test_api_secrets_and_settings),
		cmocka_unit_test(test_every_kind_idempotent),
		cmocka_unit_test(test_other_kinds_pass_untouched),
		cmocka_unit_test(test_refusals_name_the_field),
		cmocka_unit_test(test_job_with_classic_sidecar_refused),
		cmocka_unit_test(test_agent_settings_kept_or_forced),
		cmocka_unit_test(test_yaml_resolves_like_kubectl),
		cmocka_unit_test(test_manifest_refusals),
		cmocka_unit_test(test_streams_and_round_trip),
		cmocka_unit_test(test_writer_edge_cases_read_back),
		cmocka_unit_test(test_check_ignores_api_server_defaults),
		cmocka_unit_test(test_agent_gets_a_writable_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

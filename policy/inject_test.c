/* policy/inject_test.c — the pod-spec mutation: each refusal names its field and leaves the document
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
#include "policy/inject.h"
#include "policy/manifest.h"

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
	struct sk_err err = { 0 };
	cJSON *d = yaml1(pod);
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_string_equal(str_at(d, "spec.initContainers[1].args[5]"), "--peek-timeout-ms=2000");
	assert_string_equal(str_at(d, "spec.initContainers[1].volumeMounts[2].name"), "stockade-secret-gh");
	assert_string_equal(str_at(d, "spec.initContainers[1].volumeMounts[2].mountPath"),
			    "/var/run/stockade/secrets/gh");
	assert_string_equal(str_at(d, "spec.volumes[2].secret.secretName"), "gh-token");
	assert_int_equal(at(d, "spec.volumes[2].secret.defaultMode")->valueint, 0444);
	/* the agent never mounts it, and a re-wrap does not duplicate it */
	assert_null(at(d, "spec.containers[0].volumeMounts"));
	assert_int_equal(sk_inject_is_wrapped(d, &o, &err), 1);
	o.n_secrets = 0;
	assert_int_equal(sk_inject_doc(d, &o, &err), SK_INJECT_WRAPPED);
	assert_int_equal(cJSON_GetArraySize(at(d, "spec.volumes")), 2);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_wrapped_like_the_chart),
		cmocka_unit_test(test_profile_annotation),
		cmocka_unit_test(test_classic_sidecar_goes_last_in_containers),
		cmocka_unit_test(test_sidecar_first_in_containers_with_hook),
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

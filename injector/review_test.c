/* injector/review_test.c — the AdmissionReview in, the response out: a pod in scope gets a JSON Patch that,
 * applied to it, gives exactly what policy/k8s/inject.h wraps it into; a wrapped pod gets none (idempotent);
 * a pod that cannot be sandboxed is refused with inject's message; what is out of scope is allowed as it
 * is; a request that cannot be read strictly is an error naming where. */
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
#include "injector/jsonpatch.h"
#include "injector/review.h"
#include "injector/test_base64.h"
#include "policy/guardrails.h"
#include "policy/k8s/inject.h"

static struct sk_inject_opts opts;
static const char *const excl[] = { "kube-system", "stockade-system" };
static struct sk_review_cfg cfg = { &opts, excl, 2, 1u << 20, NULL };

static int setup(void **state)
{
	(void)state;
	sk_inject_opts_default(&opts);
	return 0;
}

#define POD "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"web-\",\"labels\":{\"app\":\"web\"}}," \
	    "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"busybox\"}],\"terminationGracePeriodSeconds\":30}}"

/* An AdmissionReview around `object` (JSON text), in namespace ns, with operation op. */
static char *review(const char *ns, const char *op, const char *object)
{
	char *s = NULL;
	if (asprintf(&s, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
		     "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
		     "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"operation\":\"%s\","
		     "\"namespace\":\"%s\",\"userInfo\":{\"username\":\"x\"},\"object\":%s,\"oldObject\":null,"
		     "\"dryRun\":false}}", op, ns, object) < 0)
		fail();
	return s;
}

static cJSON *response_of(const struct sk_review_out *out)
{
	cJSON *r = cJSON_ParseWithLength(out->body, out->body_len);
	assert_non_null(r);
	assert_string_equal(cJSON_GetObjectItem(r, "apiVersion")->valuestring, "admission.k8s.io/v1");
	assert_string_equal(cJSON_GetObjectItem(r, "kind")->valuestring, "AdmissionReview");
	cJSON *resp = cJSON_GetObjectItem(r, "response");
	assert_string_equal(cJSON_GetObjectItem(resp, "uid")->valuestring, "u-1");
	return r;
}

static cJSON *decode_patch(const cJSON *resp)
{
	assert_string_equal(cJSON_GetObjectItem(resp, "patchType")->valuestring, "JSONPatch");
	char *text = sk_test_base64_decode(cJSON_GetObjectItem(resp, "patch")->valuestring, NULL);
	assert_non_null(text);   /* canonical base64 */
	cJSON *p = cJSON_Parse(text);
	free(text);
	assert_non_null(p);
	return p;
}

/* The decoder the two tests above check review.c's encoder with: it must itself refuse what is not
 * canonical, or a broken encoding could pass. */
static void test_base64_decoder(void **state)
{
	(void)state;
	static const char *const ok[][2] = { { "", "" }, { "Zg==", "f" }, { "Zm8=", "fo" }, { "Zm9v", "foo" },
					     { "Zm9vYg==", "foob" }, { "Zm9vYmE=", "fooba" }, { "Zm9vYmFy", "foobar" },
					     { "+/+/", "\xfb\xff\xbf" } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t len = 99;
		char *d = sk_test_base64_decode(ok[i][0], &len);
		assert_non_null(d);
		assert_string_equal(d, ok[i][1]);
		assert_int_equal(len, strlen(ok[i][1]));
		free(d);
	}
	static const char *const bad[] = { "Zg", "Zg=", "Zg===", "=Zg=", "Z===", "Zg==Zm9v", "Zm=v", "Zh==", "Zm9=",
					   "Zm9v\n", "Zm-v", "Zm_v", " Zm9", "Zm9v====" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sk_test_base64_decode(bad[i], NULL))
			fail_msg("'%s' decoded", bad[i]);
}

/* Handles body, expecting success; returns the parsed response. */
static cJSON *handle_ok(const char *body, enum sk_review_verdict want)
{
	struct sk_review_out out;
	struct sk_err err = { 0 };
	int r = sk_review_handle(body, strlen(body), &cfg, &out, &err);
	if (r < 0)
		fail_msg("handle: %s", err.msg);
	assert_int_equal(out.verdict, want);
	cJSON *resp = response_of(&out);
	sk_review_out_free(&out);
	return resp;
}

static void test_pod_in_scope_gets_the_inject_wrap_as_a_patch(void **state)
{
	(void)state;
	char *body = review("agents", "CREATE", POD);
	cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
	cJSON *resp = cJSON_GetObjectItem(r, "response");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(resp, "allowed")));
	cJSON *patch = decode_patch(resp);
	cJSON *pod = cJSON_Parse(POD), *want = cJSON_Parse(POD);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
	assert_int_equal(sk_inject_doc(want, &opts, &err), SK_INJECT_WRAPPED);
	assert_true(cJSON_Compare(pod, want, 1));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"),
		"initContainers"), 0), "name")->valuestring, "stockade-init");
	cJSON_Delete(pod);
	cJSON_Delete(want);
	cJSON_Delete(patch);
	cJSON_Delete(r);
	free(body);
}

/* A pod naming its policy's profile (stockade.io/seccomp-profile) gets that profile, in its agent container
 * and in stockade-init's --seccomp-profile, exactly as `stockade-policy inject` wraps it; a malformed one is
 * refused naming the annotation. */
#define APOD(prof) "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"web-\"," \
	"\"annotations\":{\"stockade.io/seccomp-profile\":\"" prof "\"}}," \
	"\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"busybox\"}]}}"
static void test_profile_annotation(void **state)
{
	(void)state;
	char *body = review("agents", "CREATE", APOD("stockade-b22f410551713c70.json"));
	cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
	cJSON *patch = decode_patch(cJSON_GetObjectItem(r, "response"));
	cJSON *pod = cJSON_Parse(APOD("stockade-b22f410551713c70.json"));
	cJSON *want = cJSON_Parse(APOD("stockade-b22f410551713c70.json"));
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
	assert_int_equal(sk_inject_doc(want, &opts, &err), SK_INJECT_WRAPPED);
	assert_true(cJSON_Compare(pod, want, 1));
	const cJSON *spec = cJSON_GetObjectItem(pod, "spec");
	const cJSON *app = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 0);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(app, "securityContext"),
		"seccompProfile"), "localhostProfile")->valuestring, "stockade-b22f410551713c70.json");
	const cJSON *args = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "initContainers"), 0), "args");
	assert_string_equal(cJSON_GetArrayItem(args, 5)->valuestring, "stockade-b22f410551713c70.json");
	cJSON_Delete(pod);
	cJSON_Delete(want);
	cJSON_Delete(patch);
	cJSON_Delete(r);
	free(body);

	body = review("agents", "CREATE", APOD("stockade-agent.json"));
	r = handle_ok(body, SK_REVIEW_REFUSED);
	const char *m = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "status"),
					    "message")->valuestring;
	assert_non_null(strstr(m, "metadata.annotations[stockade.io/seccomp-profile]: expected stockade-<16 hex>.json"));
	cJSON_Delete(r);
	free(body);
}

static void test_wrapped_pod_gets_no_patch(void **state)
{
	(void)state;
	cJSON *pod = cJSON_Parse(POD);
	struct sk_err err = { 0 };
	assert_int_equal(sk_inject_doc(pod, &opts, &err), SK_INJECT_WRAPPED);
	char *text = cJSON_PrintUnformatted(pod);
	char *body = review("agents", "CREATE", text);
	cJSON *r = handle_ok(body, SK_REVIEW_UNCHANGED);
	cJSON *resp = cJSON_GetObjectItem(r, "response");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(resp, "allowed")));
	assert_null(cJSON_GetObjectItem(resp, "patch"));
	assert_null(cJSON_GetObjectItem(resp, "patchType"));
	cJSON_Delete(r);
	free(body);
	free(text);
	cJSON_Delete(pod);
}

static void expect_refused(const char *object, const char *msg_part)
{
	char *body = review("agents", "CREATE", object);
	cJSON *r = handle_ok(body, SK_REVIEW_REFUSED);
	cJSON *resp = cJSON_GetObjectItem(r, "response");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(resp, "allowed")));
	assert_null(cJSON_GetObjectItem(resp, "patch"));
	cJSON *st = cJSON_GetObjectItem(resp, "status");
	assert_int_equal((int)cJSON_GetObjectItem(st, "code")->valuedouble, 403);
	const char *m = cJSON_GetObjectItem(st, "message")->valuestring;
	if (!strstr(m, msg_part))
		fail_msg("message '%s' lacks '%s'", m, msg_part);
	assert_non_null(strstr(m, "stockade: this pod cannot be sandboxed: "));
	cJSON_Delete(r);
	free(body);
}

static void test_unsandboxable_pods_are_refused_with_the_field(void **state)
{
	(void)state;
	expect_refused("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"hostNetwork\":true,"
		       "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}", "spec.hostNetwork: ");
	expect_refused("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\","
		       "\"securityContext\":{\"privileged\":true}}]}}", "spec.containers[0].securityContext.privileged: ");
	expect_refused("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\","
		       "\"securityContext\":{\"runAsUser\":0}}]}}", "runs as root");
	expect_refused("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\","
		       "\"securityContext\":{\"capabilities\":{\"add\":[\"NET_RAW\"]}}}]}}", "adds NET_RAW");
	expect_refused("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"stockade-sidecar\","
		       "\"image\":\"x\"}]}}", "is the name of a stockade container");
}

static void test_out_of_scope_is_allowed_unchanged(void **state)
{
	(void)state;
	const char *cases[][2] = { { "kube-system", "CREATE" }, { "stockade-system", "CREATE" }, { "agents", "UPDATE" } };
	for (size_t i = 0; i < 3; i++) {
		char *body = review(cases[i][0], cases[i][1],
				    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"hostNetwork\":true,"
				    "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}");
		cJSON *r = handle_ok(body, SK_REVIEW_SKIPPED);
		cJSON *resp = cJSON_GetObjectItem(r, "response");
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(resp, "allowed")));
		assert_null(cJSON_GetObjectItem(resp, "patch"));
		cJSON_Delete(r);
		free(body);
	}
}

static void test_service_account_token_is_removed_unless_asked_for(void **state)
{
	(void)state;
#define TMPL "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{%s\"containers\":[{\"name\":\"a\",\"image\":\"x\"," \
			   "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/d\"},{\"name\":\"kube-api-access-x1y2z\"," \
			   "\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\",\"readOnly\":true}]}]," \
			   "\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":\"kube-api-access-x1y2z\",\"projected\":" \
			   "{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}}]}}]}}"
	for (int asked = 0; asked < 2; asked++) {
		char obj[2048];
		(void)snprintf(obj, sizeof(obj), TMPL, asked ? "\"automountServiceAccountToken\":true," : "");
		char *body = review("agents", "CREATE", obj);
		cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
		cJSON *patch = decode_patch(cJSON_GetObjectItem(r, "response"));
		cJSON *pod = cJSON_Parse(obj);
		struct sk_err err = { 0 };
		assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
		char *text = cJSON_PrintUnformatted(pod);
		assert_int_equal(strstr(text, "kube-api-access-x1y2z") != NULL, asked);
		assert_non_null(strstr(text, "\"name\":\"data\",\"mountPath\":\"/d\""));
		free(text);
		cJSON_Delete(pod);
		cJSON_Delete(patch);
		cJSON_Delete(r);
		free(body);
	}
}

static void test_api_server_default_of_service_links_is_undone(void **state)
{
	(void)state;
	const char *obj = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"enableServiceLinks\":true,"
			  "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}";
	char *body = review("agents", "CREATE", obj);
	cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
	cJSON *patch = decode_patch(cJSON_GetObjectItem(r, "response"));
	cJSON *pod = cJSON_Parse(obj);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "enableServiceLinks")));
	cJSON_Delete(pod);
	cJSON_Delete(patch);
	cJSON_Delete(r);
	free(body);
}

static void expect_error(const char *body, int code, const char *msg_part)
{
	struct sk_review_out out;
	struct sk_err err = { 0 };
	int r = sk_review_handle(body, strlen(body), &cfg, &out, &err);
	assert_int_equal(r, -code);
	assert_null(out.body);
	if (!strstr(err.msg, msg_part))
		fail_msg("error '%s' lacks '%s'", err.msg, msg_part);
}

static void test_malformed_requests_are_errors_naming_where(void **state)
{
	(void)state;
	expect_error("", EINVAL, "request body:1:1: not JSON");
	expect_error("{\"apiVersion\":\n  \"admission.k8s.io/v1\",}", EINVAL, "request body:2:25: not JSON");
	expect_error("{} {}", EINVAL, "request body:1:4: more after the AdmissionReview");
	expect_error("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}", EINVAL,
		     "apiVersion 'admission.k8s.io/v1beta1' is not admission.k8s.io/v1");
	expect_error("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", EINVAL,
		     "(review).request: missing (expected an object)");
	expect_error("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":7}}", EINVAL,
		     "request.uid: expected a string");
	expect_error("{\"apiVersion\":\"admission.k8s.io/v1\",\"apiVersion\":\"x\"}", EINVAL,
		     "key 'apiVersion' appears twice");
	expect_error("{\"a\":\"\x01\"}", EINVAL, "request body:1:7: a control byte");
	expect_error("{\"a\":\"\xc0\xaf\"}", EINVAL, "request body:1:7: not UTF-8");
	expect_error("{\"a\":9007199254740993}", EINVAL, "(review).a: number out of range");
	char *body = review("agents", "CREATE", "{\"apiVersion\":\"v1\",\"kind\":\"Deployment\",\"spec\":{}}");
	expect_error(body, EINVAL, "request.object: expected apiVersion v1, kind Pod");
	free(body);
	body = review("Agents", "CREATE", POD);
	expect_error(body, EINVAL, "request.namespace: 'Agents' is not a namespace name");
	free(body);
	body = review("agents", "CREATE", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\","
		      "\"securityContext\":{\"runAsUser\":\"0\"}}]}}");
	cJSON *r = handle_ok(body, SK_REVIEW_REFUSED);  /* a wrong type inside the pod is inject's to refuse */
	cJSON_Delete(r);
	free(body);
	struct sk_review_cfg small = cfg;
	small.max_body = 10;
	struct sk_review_out out;
	struct sk_err err = { 0 };
	assert_int_equal(sk_review_handle("{\"a\":\"0123456789\"}", 18, &small, &out, &err), -EFBIG);
}

static void test_deep_nesting_is_refused(void **state)
{
	(void)state;
	char buf[512];
	size_t n = 0;
	for (int i = 0; i < 150; i++)
		buf[n++] = '[';
	for (int i = 0; i < 150; i++)
		buf[n++] = ']';
	buf[n] = '\0';
	char *body = NULL;
	assert_true(asprintf(&body, "{\"x\":%s}", buf) > 0);
	expect_error(body, EINVAL, "nested deeper than");
	free(body);
}

static void test_non_pod_kind_is_refused(void **state)
{
	(void)state;
	char *body = review("agents", "CREATE", POD);
	char *k = strstr(body, "\"kind\":\"Pod\"}");
	assert_non_null(k);
	k[10] = 'x';  /* "Pod" -> "Pox" */
	cJSON *r = handle_ok(body, SK_REVIEW_REFUSED);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "allowed")));
	cJSON_Delete(r);
	free(body);
}

/* An AdmissionReview of a ConfigMap (op on kind v1 ConfigMap) holding policy (JSON-escaped already). */
static char *cm_review(const char *op, const char *policy_json_str)
{
	char *s = NULL;
	if (asprintf(&s, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
		     "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"},"
		     "\"operation\":\"%s\",\"namespace\":\"team-a\",\"object\":{\"apiVersion\":\"v1\","
		     "\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"agent-policy\",\"labels\":{\"stockade.io/policy\":"
		     "\"true\"}},\"data\":{%s%s%s}}}}", op, policy_json_str ? "\"policy.yaml\":\"" : "",
		     policy_json_str ? policy_json_str : "", policy_json_str ? "\"" : "") < 0)
		fail();
	return s;
}

static const char *status_message(const cJSON *r)
{
	const cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "status");
	const cJSON *m = cJSON_GetObjectItem(st, "message");
	return cJSON_IsString(m) ? m->valuestring : "";
}

/* An invalid policy is refused at admission with the validator's FILE:LINE:COL messages, the file named by
 * the object; a valid one is allowed; a ConfigMap without policy.yaml is refused; a DELETE is not judged. */
static void test_policy_review(void **state)
{
	(void)state;
	struct sk_review_out out;
	struct sk_err err = { 0 };
	char *b = cm_review("CREATE", "version: 1\\negress:\\n  - host: api.github.com\\n    ports: [443]\\n");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_UNCHANGED);
	cJSON *r = response_of(&out);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "allowed")));
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "patch"));
	cJSON_Delete(r);
	sk_review_out_free(&out);
	free(b);

	/* an IP where a host name goes, and an unknown key: both reported, at their line and column */
	b = cm_review("UPDATE", "version: 1\\negress:\\n  - host: 1.2.3.4\\n    ports: [443]\\n    hots: x\\n");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	r = response_of(&out);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "allowed")));
	const char *msg = status_message(r);
	assert_non_null(strstr(msg, "stockade: the policy is invalid"));
	assert_non_null(strstr(msg, "agent-policy/policy.yaml:3:"));
	assert_non_null(strstr(msg, "agent-policy/policy.yaml:5:"));
	assert_non_null(strstr(out.reason, "agent-policy/policy.yaml:"));
	cJSON_Delete(r);
	sk_review_out_free(&out);
	free(b);

	/* the seccomp section is checked as `check` checks it */
	b = cm_review("CREATE", "version: 1\\nseccomp:\\n  allow: [ptrace]\\n");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	r = response_of(&out);
	assert_non_null(strstr(status_message(r), "agent-policy/policy.yaml:3:"));
	assert_non_null(strstr(status_message(r), "seccomp.allow[0]"));
	cJSON_Delete(r);
	sk_review_out_free(&out);
	free(b);

	b = cm_review("CREATE", NULL);
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	r = response_of(&out);
	assert_non_null(strstr(status_message(r), "data.policy.yaml, which is missing"));
	cJSON_Delete(r);
	sk_review_out_free(&out);
	free(b);

	b = cm_review("DELETE", "not: [valid");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_SKIPPED);
	sk_review_out_free(&out);
	free(b);

	/* a pod sent to the policy review (a registration mistake) is refused, not let through unread */
	b = review("team-a", "CREATE", POD);
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	sk_review_out_free(&out);
	free(b);
}

/* With cluster guardrails, a valid policy that exceeds them is refused with each violation at the policy's
 * position, naming the guardrail's position and key; a policy within them, and any policy without
 * guardrails, is allowed. */
static void test_policy_review_guardrails(void **state)
{
	(void)state;
	static const char gtext[] = "version: 1\ndeniedHosts: [pastebin.com]\nblockPrivate: true\n";
	struct sk_diags gd = { 0 };
	struct sk_guardrails *g = NULL;
	assert_int_equal(sk_guardrails_load_buffer("stockade-system/stockade-guardrails", gtext, strlen(gtext), &g, &gd), 0);
	struct sk_review_cfg gcfg = cfg;
	gcfg.guardrails = g;
	struct sk_review_out out;
	struct sk_err err = { 0 };
	char *b = cm_review("CREATE", "version: 1\\nblockPrivate: false\\negress:\\n  - host: pastebin.com\\n    ports: [443]\\n");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &gcfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	cJSON *r = response_of(&out);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "allowed")));
	const char *msg = status_message(r);
	assert_non_null(strstr(msg, "stockade: the policy exceeds the cluster guardrails"));
	assert_non_null(strstr(msg, "agent-policy/policy.yaml:2:15: blockPrivate: false is not allowed by guardrail "
				    "stockade-system/stockade-guardrails:3:15 blockPrivate: true"));
	assert_non_null(strstr(msg, "agent-policy/policy.yaml:4:5: egress[0]: host pastebin.com allows pastebin.com, "
				    "denied by guardrail stockade-system/stockade-guardrails:2:15 deniedHosts[0]"));
	cJSON_Delete(r);
	sk_review_out_free(&out);

	/* the same policy without guardrails is valid */
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &cfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_UNCHANGED);
	sk_review_out_free(&out);
	free(b);

	/* within the guardrails: allowed */
	b = cm_review("UPDATE", "version: 1\\negress:\\n  - host: pypi.org\\n    ports: [443]\\n");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &gcfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_UNCHANGED);
	sk_review_out_free(&out);
	free(b);

	/* an invalid policy is reported as invalid, not measured against the guardrails */
	b = cm_review("CREATE", "version: 1\\negress:\\n  - host: 1.2.3.4\\n");
	assert_int_equal(sk_review_handle_policy(b, strlen(b), &gcfg, &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	r = response_of(&out);
	assert_non_null(strstr(status_message(r), "stockade: the policy is invalid"));
	cJSON_Delete(r);
	sk_review_out_free(&out);
	free(b);
	sk_guardrails_free(g);
	sk_diags_free(&gd);
}

/* With guardrails configured, the pod's patch carries them (annotation, downwardAPI volume, the sidecar's
 * --guardrails), and the pod patched with it is wrapped: sent again it gets no patch. */
static void test_pod_carries_the_guardrails(void **state)
{
	(void)state;
	static const char gtext[] = "version: 1\ndeniedHosts: [pastebin.com]\n";
	opts.guardrails = gtext;
	char *body = review("agents", "CREATE", POD);
	cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
	cJSON *patch = decode_patch(cJSON_GetObjectItem(r, "response"));
	cJSON *pod = cJSON_Parse(POD);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
	const cJSON *anns = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "annotations");
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(anns, "stockade.io/guardrails");
	assert_true(cJSON_IsString(g));
	assert_string_equal(g->valuestring, gtext);
	char *text = cJSON_PrintUnformatted(pod);
	assert_non_null(strstr(text, "\"--guardrails=/etc/stockade-guardrails/guardrails.yaml\""));
	assert_non_null(strstr(text, "\"fieldPath\":\"metadata.annotations['stockade.io/guardrails']\""));
	char *again = review("agents", "CREATE", text);
	cJSON_Delete(handle_ok(again, SK_REVIEW_UNCHANGED));
	free(again);
	free(text);
	cJSON_Delete(pod);
	cJSON_Delete(patch);
	cJSON_Delete(r);
	free(body);
	opts.guardrails = NULL;
}

/* The trust files and a credential placeholder through the webhook: the agent container gets the read-only
 * trust mount, SSL_CERT_FILE and the placeholder; the sidecar --trust-dir and the Secret, which no other
 * container mounts; the patched pod reviewed again is unchanged; a pod that sets the placeholder's name
 * itself is refused, naming the field. */
static void test_pod_gets_trust_and_placeholders(void **state)
{
	(void)state;
	static const struct sk_inject_secret secrets[] = { { "github", "gh-token" } };
	static const struct sk_inject_env env[] = { { "GITHUB_TOKEN", "stockade-secret-github" } };
	opts.secrets = secrets;
	opts.n_secrets = 1;
	opts.secret_env = env;
	opts.n_secret_env = 1;
	char *body = review("agents", "CREATE", POD);
	cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
	cJSON *patch = decode_patch(cJSON_GetObjectItem(r, "response"));
	cJSON *pod = cJSON_Parse(POD);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
	const cJSON *spec = cJSON_GetObjectItem(pod, "spec");
	const cJSON *side = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "initContainers"), 1);
	const cJSON *agent = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 0);
	assert_string_equal(cJSON_GetObjectItem(side, "name")->valuestring, "stockade-sidecar");
	assert_string_equal(cJSON_GetObjectItem(agent, "name")->valuestring, "app");
	char *s_text = cJSON_PrintUnformatted(side), *a_text = cJSON_PrintUnformatted(agent);
	assert_non_null(strstr(s_text, "\"--trust-dir=/run/stockade-trust\""));
	assert_non_null(strstr(s_text, "{\"name\":\"stockade-secret-github\",\"mountPath\":\"/var/run/stockade/secrets/github\",\"readOnly\":true}"));
	assert_non_null(strstr(a_text, "{\"name\":\"stockade-trust\",\"mountPath\":\"/run/stockade-trust\",\"readOnly\":true}"));
	assert_non_null(strstr(a_text, "{\"name\":\"SSL_CERT_FILE\",\"value\":\"/run/stockade-trust/bundle.pem\"}"));
	assert_non_null(strstr(a_text, "{\"name\":\"GITHUB_TOKEN\",\"value\":\"stockade-secret-github\"}"));
	assert_null(strstr(a_text, "stockade-secret-github\",\"mountPath"));
	/* the one mount of the Secret in the whole pod is the sidecar's */
	char *text = cJSON_PrintUnformatted(pod);
	const char *first = strstr(text, "\"name\":\"stockade-secret-github\",\"mountPath\"");
	assert_non_null(first);
	assert_null(strstr(first + 1, "\"name\":\"stockade-secret-github\",\"mountPath\""));
	char *again = review("agents", "CREATE", text);
	cJSON_Delete(handle_ok(again, SK_REVIEW_UNCHANGED));
	free(again);
	free(text);
	free(s_text);
	free(a_text);
	cJSON_Delete(pod);
	cJSON_Delete(patch);
	cJSON_Delete(r);
	free(body);
	expect_refused("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":"
		       "[{\"name\":\"app\",\"image\":\"busybox\",\"env\":[{\"name\":\"GITHUB_TOKEN\",\"value\":\"ghp_x\"}]}]}}",
		       "spec.containers[0].env: container 'app' sets GITHUB_TOKEN");
	opts.secrets = NULL;
	opts.n_secrets = 0;
	opts.secret_env = NULL;
	opts.n_secret_env = 0;
}

/* The per-pod Secret and placeholder annotations: the patch mounts the Secret into the sidecar and gives the
 * agent the placeholder, as `stockade-policy inject` wraps the same pod; a malformed one is refused, named. */
#define SPOD(a) "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"web-\"," \
	"\"annotations\":{" a "}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"busybox\"}]}}"
static void test_secret_annotations(void **state)
{
	(void)state;
	static const char pod_json[] = SPOD("\"stockade.io/api-secrets\":\"github=gh-token\","
					    "\"stockade.io/secret-env\":\"GITHUB_TOKEN=stockade-secret-github\"");
	char *body = review("agents", "CREATE", pod_json);
	cJSON *r = handle_ok(body, SK_REVIEW_PATCHED);
	cJSON *patch = decode_patch(cJSON_GetObjectItem(r, "response"));
	cJSON *pod = cJSON_Parse(pod_json), *want = cJSON_Parse(pod_json);
	struct sk_err err = { 0 };
	assert_int_equal(sk_jsonpatch_apply(&pod, patch, &err), 0);
	assert_int_equal(sk_inject_doc(want, &opts, &err), SK_INJECT_WRAPPED);
	assert_true(cJSON_Compare(pod, want, 1));
	char *text = cJSON_PrintUnformatted(pod);
	assert_non_null(strstr(text, "{\"name\":\"stockade-secret-github\",\"mountPath\":\"/var/run/stockade/secrets/github\",\"readOnly\":true}"));
	assert_non_null(strstr(text, "{\"name\":\"GITHUB_TOKEN\",\"value\":\"stockade-secret-github\"}"));
	free(text);
	cJSON_Delete(pod);
	cJSON_Delete(want);
	cJSON_Delete(patch);
	cJSON_Delete(r);
	free(body);
	expect_refused(SPOD("\"stockade.io/secret-env\":\"GITHUB_TOKEN\""),
		       "metadata.annotations[stockade.io/secret-env]: expected space-separated NAME=PLACEHOLDER");
}

/* stockade.io/inject: "false" on the pod: not wrapped, as Istio's opt-out; any other value is wrapped. */
static void test_pod_opt_out(void **state)
{
	(void)state;
	static const char out_pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"db\","
				      "\"annotations\":{\"stockade.io/inject\":\"false\"}},\"spec\":{\"containers\":"
				      "[{\"name\":\"db\",\"image\":\"postgres\"}]}}";
	char *body = review("agents", "CREATE", out_pod);
	cJSON *r = handle_ok(body, SK_REVIEW_SKIPPED);
	cJSON *resp = cJSON_GetObjectItem(r, "response");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(resp, "allowed")));
	assert_null(cJSON_GetObjectItem(resp, "patch"));
	cJSON_Delete(r);
	free(body);
	static const char in_pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
				     "\"annotations\":{\"stockade.io/inject\":\"no\"}},\"spec\":{\"containers\":"
				     "[{\"name\":\"a\",\"image\":\"x\"}]}}";
	body = review("agents", "CREATE", in_pod);
	cJSON_Delete(handle_ok(body, SK_REVIEW_PATCHED));
	free(body);
}

/* Through the webhook registered for namespaces enforcing Pod Security baseline: the pod is refused with
 * the namespace's level and what to do; an opted-out pod is still let through unwrapped. */
static void test_pod_security_refusal_states_the_level(void **state)
{
	(void)state;
	struct sk_review_out out;
	struct sk_err err = { 0 };
	char *body = review("agents", "CREATE", POD);
	assert_int_equal(sk_review_handle_pod_security(body, strlen(body), &cfg, "baseline", &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_REFUSED);
	cJSON *r = response_of(&out);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "allowed")));
	assert_non_null(strstr(status_message(r), "stockade: namespace agents enforces Pod Security \"baseline\""));
	assert_non_null(strstr(status_message(r), "pod-security.kubernetes.io/enforce=privileged"));
	cJSON_Delete(r);
	sk_review_out_free(&out);
	free(body);
	body = review("kube-system", "CREATE", POD);   /* excluded namespaces stay out of it */
	assert_int_equal(sk_review_handle_pod_security(body, strlen(body), &cfg, "restricted", &out, &err), 0);
	assert_int_equal(out.verdict, SK_REVIEW_SKIPPED);
	sk_review_out_free(&out);
	free(body);
}

/* In CNI mode (--cni) the wrapped pod has no NET_ADMIN container, so a namespace enforcing baseline or
 * restricted gets it wrapped, not refused: stockade-validate first, no capability added anywhere. */
static void test_pod_security_cni_mode_wraps(void **state)
{
	(void)state;
	struct sk_inject_opts copts = opts;
	copts.cni = true;
	struct sk_review_cfg ccfg = cfg;
	ccfg.inject = &copts;
	static const char *const levels[] = { "baseline", "restricted" };
	for (size_t i = 0; i < 2; i++) {
		struct sk_review_out out;
		struct sk_err err = { 0 };
		char *body = review("agents", "CREATE", POD);
		assert_int_equal(sk_review_handle_pod_security(body, strlen(body), &ccfg, levels[i], &out, &err), 0);
		assert_int_equal(out.verdict, SK_REVIEW_PATCHED);
		cJSON *r = response_of(&out);
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "response"), "allowed")));
		cJSON_Delete(r);
		sk_review_out_free(&out);
		free(body);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_security_cni_mode_wraps),
		cmocka_unit_test(test_pod_in_scope_gets_the_inject_wrap_as_a_patch),
		cmocka_unit_test(test_pod_gets_trust_and_placeholders),
		cmocka_unit_test(test_secret_annotations),
		cmocka_unit_test(test_profile_annotation),
		cmocka_unit_test(test_wrapped_pod_gets_no_patch),
		cmocka_unit_test(test_unsandboxable_pods_are_refused_with_the_field),
		cmocka_unit_test(test_out_of_scope_is_allowed_unchanged),
		cmocka_unit_test(test_service_account_token_is_removed_unless_asked_for),
		cmocka_unit_test(test_api_server_default_of_service_links_is_undone),
		cmocka_unit_test(test_malformed_requests_are_errors_naming_where),
		cmocka_unit_test(test_deep_nesting_is_refused),
		cmocka_unit_test(test_non_pod_kind_is_refused),
		cmocka_unit_test(test_base64_decoder),
		cmocka_unit_test(test_policy_review),
		cmocka_unit_test(test_policy_review_guardrails),
		cmocka_unit_test(test_pod_carries_the_guardrails),
		cmocka_unit_test(test_pod_opt_out),
		cmocka_unit_test(test_pod_security_refusal_states_the_level),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

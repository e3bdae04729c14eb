/* cni/kube_test.c — the pod decision on JSON fixtures (wrapped, unwrapped, hostNetwork, a wrapped pod
 * without its annotation, a replaced pod) and the kubeconfig reader (current-context, CA data, token
 * file, the refusals). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/kube.h"

#define POD(labels, annotations, spec)                                                                       \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a-0\",\"namespace\":\"agents\","       \
	"\"uid\":\"u-1\",\"labels\":{" labels "},\"annotations\":{" annotations "}},\"spec\":{" spec             \
	"\"containers\":[{\"name\":\"agent\",\"image\":\"x\"}]}}"

static int decide(const char *json, const char *uid, struct sk_kube_pod *p, struct sk_err *err)
{
	return sk_kube_pod_decide(json, strlen(json), uid, p, err);
}

static void test_wrapped(void **state)
{
	(void)state;
	static const char pod[] = POD("\"stockade.io/wrapped\":\"true\"",
				      "\"stockade.io/netns-policy\":\"version: 1\\nmode: enforce\\n\"", "");
	struct sk_kube_pod p;
	struct sk_err err = { 0 };
	assert_int_equal(decide(pod, "u-1", &p, &err), 0);
	assert_int_equal(p.kind, SK_KUBE_POD_WRAPPED);
	assert_string_equal(p.policy, "version: 1\nmode: enforce\n");
	assert_int_equal(p.policy_len, strlen(p.policy));
	sk_kube_pod_free(&p);
	/* no K8S_POD_UID in CNI_ARGS: not compared */
	assert_int_equal(decide(pod, "", &p, &err), 0);
	assert_int_equal(p.kind, SK_KUBE_POD_WRAPPED);
	sk_kube_pod_free(&p);
}

static void test_unwrapped(void **state)
{
	(void)state;
	static const char *const pods[] = {
		POD("\"app\":\"web\"", "", ""),
		POD("\"stockade.io/wrapped\":\"false\"", "\"stockade.io/netns-policy\":\"x\"", ""),
		"{\"metadata\":{\"name\":\"a\"},\"spec\":{}}",
	};
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		struct sk_kube_pod p;
		struct sk_err err = { 0 };
		assert_int_equal(decide(pods[i], NULL, &p, &err), 0);
		assert_int_equal(p.kind, SK_KUBE_POD_UNWRAPPED);
		assert_null(p.policy);
	}
}

static void test_host_network(void **state)
{
	(void)state;
	static const char pod[] = POD("\"stockade.io/wrapped\":\"true\"", "", "\"hostNetwork\":true,");
	struct sk_kube_pod p;
	struct sk_err err = { 0 };
	assert_int_equal(decide(pod, "u-1", &p, &err), 0);
	assert_int_equal(p.kind, SK_KUBE_POD_HOST_NETWORK);
	assert_null(p.policy);
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct { const char *json, *uid; int rc; const char *msg; } cases[] = {
		{ POD("\"stockade.io/wrapped\":\"true\"", "", ""), "u-1", -EINVAL, "no stockade.io/netns-policy" },
		{ POD("\"stockade.io/wrapped\":\"true\"", "\"stockade.io/netns-policy\":\"\"", ""), "u-1", -EINVAL,
		  "no stockade.io/netns-policy" },
		{ POD("\"stockade.io/wrapped\":\"true\"", "\"stockade.io/netns-policy\":7", ""), "u-1", -EINVAL,
		  "no stockade.io/netns-policy" },
		{ POD("\"stockade.io/wrapped\":\"true\"", "\"stockade.io/netns-policy\":\"v\"", ""), "u-2", -ESTALE,
		  "uid u-1 is not the sandbox's u-2" },
		{ "not json", NULL, -EINVAL, "not a pod object" },
		{ "{\"kind\":\"Status\",\"message\":\"x\"}", NULL, -EINVAL, "not a pod object" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sk_kube_pod p;
		struct sk_err err = { 0 };
		assert_int_equal(decide(cases[i].json, cases[i].uid, &p, &err), cases[i].rc);
		assert_non_null(strstr(err.msg, cases[i].msg));
		assert_null(p.policy);
	}
}

/* A wrapped pod without the annotation (stockade-injector's): the ConfigMap its stockade-policy volume
 * mounts, then that ConfigMap's policy.yaml; a volume of another name or without a ConfigMap is no policy. */
static void test_policy_from_configmap(void **state)
{
	(void)state;
	static const char pod[] = POD("\"stockade.io/wrapped\":\"true\"", "",
				      "\"volumes\":[{\"name\":\"stockade-run\",\"emptyDir\":{}},"
				      "{\"name\":\"stockade-policy\",\"configMap\":{\"name\":\"agent-policy\"}}],");
	struct sk_kube_pod p;
	struct sk_err err = { 0 };
	assert_int_equal(decide(pod, "u-1", &p, &err), 0);
	assert_int_equal(p.kind, SK_KUBE_POD_WRAPPED);
	assert_null(p.policy);
	assert_string_equal(p.policy_configmap, "agent-policy");
	static const char cm[] = "{\"kind\":\"ConfigMap\",\"data\":{\"policy.yaml\":\"version: 1\\n\"}}";
	assert_int_equal(sk_kube_configmap_policy(cm, strlen(cm), &p, &err), 0);
	assert_string_equal(p.policy, "version: 1\n");
	assert_int_equal(p.policy_len, 11);
	static const char nokey[] = "{\"kind\":\"ConfigMap\",\"data\":{\"other\":\"x\"}}";
	assert_int_equal(sk_kube_configmap_policy(nokey, strlen(nokey), &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "configmap agent-policy: no policy.yaml"));
	assert_int_equal(sk_kube_configmap_policy("nope", 4, &p, &err), -EINVAL);
	sk_kube_pod_free(&p);
	/* the annotation wins over the volume */
	static const char both[] = POD("\"stockade.io/wrapped\":\"true\"", "\"stockade.io/netns-policy\":\"a\"",
				       "\"volumes\":[{\"name\":\"stockade-policy\",\"configMap\":{\"name\":\"cm\"}}],");
	assert_int_equal(decide(both, "u-1", &p, &err), 0);
	assert_string_equal(p.policy, "a");
	assert_null(p.policy_configmap);
	sk_kube_pod_free(&p);
	static const char *const none[] = {
		POD("\"stockade.io/wrapped\":\"true\"", "", "\"volumes\":[{\"name\":\"other\",\"configMap\":{\"name\":\"cm\"}}],"),
		POD("\"stockade.io/wrapped\":\"true\"", "", "\"volumes\":[{\"name\":\"stockade-policy\",\"emptyDir\":{}}],"),
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		assert_int_equal(decide(none[i], "u-1", &p, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "no stockade.io/netns-policy annotation and no stockade-policy"));
		assert_null(p.policy_configmap);
		sk_kube_pod_free(&p);
	}
}

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/sk_kube_test_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	return path;
}

static void test_kubeconfig(void **state)
{
	(void)state;
	char *tok = write_tmp("file-token\n");
	char text[2048];
	/* "LS0tCg==" is "---\n" */
	(void)snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\ncurrent-context: b\n"
		 "clusters:\n- name: one\n  cluster:\n    server: https://10.0.0.1:6443\n"
		 "- name: two\n  cluster:\n    server: https://127.0.0.1:8443/\n    certificate-authority-data: LS0tCg==\n"
		 "users:\n- name: u1\n  user:\n    token: t1\n- name: u2\n  user:\n    tokenFile: %s\n"
		 "contexts:\n- name: a\n  context: {cluster: one, user: u1}\n- name: b\n  context: {cluster: two, user: u2}\n",
		 tok);
	char *kc_path = write_tmp(text);
	struct sk_kubeconfig kc;
	struct sk_err err = { 0 };
	assert_int_equal(sk_kubeconfig_load(kc_path, &kc, &err), 0);
	assert_string_equal(kc.server, "https://127.0.0.1:8443");
	assert_int_equal(kc.ca_pem_len, 4);
	assert_memory_equal(kc.ca_pem, "---\n", 4);
	assert_null(kc.ca_file);
	assert_string_equal(kc.token, "file-token");
	sk_kubeconfig_free(&kc);
	unlink(kc_path);
	free(kc_path);
	unlink(tok);
	free(tok);
}

static void test_kubeconfig_refusals(void **state)
{
	(void)state;
	static const struct { const char *text, *msg; } cases[] = {
		{ "clusters:\n- name: c\n  cluster: {server: 'http://x'}\nusers:\n- name: u\n  user: {token: t}\n",
		  "no https:// server" },
		{ "clusters:\n- name: c\n  cluster: {server: 'https://x', insecure-skip-tls-verify: true}\n"
		  "users:\n- name: u\n  user: {token: t}\n", "insecure-skip-tls-verify" },
		{ "clusters:\n- name: c\n  cluster: {server: 'https://x'}\nusers:\n- name: u\n  user: {}\n",
		  "no token or tokenFile" },
		{ "current-context: z\nclusters:\n- name: c\n  cluster: {server: 'https://x'}\n", "current-context z" },
		{ "clusters:\n- name: c\n  cluster: {server: 'https://x', certificate-authority-data: '@@@'}\n"
		  "users:\n- name: u\n  user: {token: t}\n", "not base64" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = write_tmp(cases[i].text);
		struct sk_kubeconfig kc;
		struct sk_err err = { 0 };
		assert_true(sk_kubeconfig_load(path, &kc, &err) < 0);
		assert_non_null(strstr(err.msg, cases[i].msg));
		assert_null(kc.server);
		unlink(path);
		free(path);
	}
	struct sk_kubeconfig kc;
	struct sk_err err = { 0 };
	assert_int_equal(sk_kubeconfig_load("/nonexistent/kubeconfig", &kc, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrapped),         cmocka_unit_test(test_unwrapped),
		cmocka_unit_test(test_host_network),    cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_kubeconfig),      cmocka_unit_test(test_kubeconfig_refusals),
		cmocka_unit_test(test_policy_from_configmap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

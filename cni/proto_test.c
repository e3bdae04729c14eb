/* cni/proto_test.c — the CNI protocol: configuration parsing, the CNI_* environment and CNI_ARGS
 * (malformed included), prevResult passed through as it came, the error object's shape and codes, and
 * the versions offered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "cni/proto.h"

/* the fake environment: pairs of name, value; tests set it before calling sk_cni_env_parse */
static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	for (size_t i = 0; fake_env && fake_env[i]; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

static const char prev_conf[] =
	"{\"cniVersion\":\"1.0.0\",\"name\":\"k8s-pod-network\",\"type\":\"stockade-cni\","
	"\"kubeconfig\":\"/etc/stockade/cni.kubeconfig\","
	"\"prevResult\":{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"/var/run/netns/x\"}],"
	"\"ips\":[{\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\",\"interface\":0}],\"dns\":{}}}";

static void test_conf_fields(void **state)
{
	(void)state;
	struct sk_cni_conf c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_conf_parse(prev_conf, strlen(prev_conf), &c, &err), 0);
	assert_string_equal(c.version, "1.0.0");
	assert_string_equal(c.name, "k8s-pod-network");
	assert_string_equal(c.type, "stockade-cni");
	assert_string_equal(c.kubeconfig, "/etc/stockade/cni.kubeconfig");
	assert_string_equal(c.system_ns, "stockade-system");
	assert_non_null(c.prev);
	sk_cni_conf_free(&c);
}

static void test_conf_refusals(void **state)
{
	(void)state;
	static const struct { const char *json; int rc; const char *msg; } cases[] = {
		{ "not json", -EINVAL, "not a JSON object" },
		{ "[1]", -EINVAL, "not a JSON object" },
		{ "{\"name\":\"n\",\"type\":\"t\"}", -EINVAL, "cniVersion is missing" },
		{ "{\"cniVersion\":\"1.0.0\",\"type\":\"t\"}", -EINVAL, "name is missing" },
		{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", -EINVAL, "type is missing" },
		{ "{\"cniVersion\":1,\"name\":\"n\",\"type\":\"t\"}", -EINVAL, "cniVersion is not" },
		{ "{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"t\"}", -EPROTO, "0.3.1 is not supported" },
		{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"kubeconfig\":7}", -EINVAL, "kubeconfig" },
		{ "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"prevResult\":[]}", -EINVAL, "prevResult" },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(cases); i++) {
		struct sk_cni_conf c;
		struct sk_err err = { 0 };
		assert_int_equal(sk_cni_conf_parse(cases[i].json, strlen(cases[i].json), &c, &err), cases[i].rc);
		assert_non_null(strstr(err.msg, cases[i].msg));
		assert_null(c.root);
	}
}

/* The result is prevResult itself: same members in the same order, so the same bytes as cJSON prints
 * the input's prevResult. */
static void test_prev_result_passes_through(void **state)
{
	(void)state;
	struct sk_cni_conf c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_conf_parse(prev_conf, strlen(prev_conf), &c, &err), 0);
	char *out = sk_cni_result(&c);
	char *want = cJSON_PrintUnformatted(c.prev);
	assert_non_null(out);
	assert_string_equal(out, want);
	assert_string_equal(out, "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":"
				 "\"/var/run/netns/x\"}],\"ips\":[{\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\","
				 "\"interface\":0}],\"dns\":{}}");
	free(out);
	free(want);
	sk_cni_conf_free(&c);
}

static void test_result_without_prev(void **state)
{
	(void)state;
	static const char conf[] = "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"stockade-cni\"}";
	struct sk_cni_conf c;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_conf_parse(conf, strlen(conf), &c, &err), 0);
	char *out = sk_cni_result(&c);
	assert_string_equal(out, "{\"cniVersion\":\"1.1.0\"}");
	free(out);
	sk_cni_conf_free(&c);
	/* a prevResult without cniVersion gets the configuration's, first; the rest unchanged */
	static const char conf2[] = "{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"type\":\"t\",\"prevResult\":{\"ips\":[]}}";
	assert_int_equal(sk_cni_conf_parse(conf2, strlen(conf2), &c, &err), 0);
	out = sk_cni_result(&c);
	assert_string_equal(out, "{\"cniVersion\":\"0.4.0\",\"ips\":[]}");
	free(out);
	sk_cni_conf_free(&c);
}

static void test_env_add(void **state)
{
	(void)state;
	static const char args[] =
		"IgnoreUnknown=1;K8S_POD_NAMESPACE=agents;K8S_POD_NAME=a-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=1234-5678";
	static const char *const env[] = {
		"CNI_COMMAND", "ADD", "CNI_CONTAINERID", "abc", "CNI_NETNS", "/var/run/netns/p", "CNI_IFNAME", "eth0",
		"CNI_ARGS", args, NULL,
	};
	fake_env = env;
	struct sk_cni_env e;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_env_parse(fake_getenv, &e, &err), 0);
	assert_int_equal(e.cmd, SK_CNI_ADD);
	assert_string_equal(e.container_id, "abc");
	assert_string_equal(e.netns, "/var/run/netns/p");
	assert_string_equal(e.ifname, "eth0");
	assert_string_equal(e.pod_ns, "agents");
	assert_string_equal(e.pod_name, "a-0");
	assert_string_equal(e.pod_uid, "1234-5678");
}

static void test_env_refusals(void **state)
{
	(void)state;
	static const char *const no_cmd[] = { "CNI_CONTAINERID", "a", NULL };
	static const char *const bad_cmd[] = { "CNI_COMMAND", "add", NULL };
	static const char *const no_netns[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "a", "CNI_IFNAME", "eth0", NULL };
	static const char *const no_id[] = { "CNI_COMMAND", "DEL", "CNI_IFNAME", "eth0", NULL };
	static const char *const bad_args[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "a", "CNI_IFNAME", "eth0",
						"CNI_NETNS", "/n", "CNI_ARGS", "K8S_POD_NAMESPACE=a;garbage", NULL };
	static const char *const empty_key[] = { "CNI_COMMAND", "ADD", "CNI_CONTAINERID", "a", "CNI_IFNAME", "eth0",
						 "CNI_NETNS", "/n", "CNI_ARGS", "=x", NULL };
	static const struct { const char *const *env; const char *msg; } cases[] = {
		{ no_cmd, "CNI_COMMAND is not set" }, { bad_cmd, "'add' is not ADD" },
		{ no_netns, "CNI_NETNS is not set" }, { no_id, "CNI_CONTAINERID is not set" },
		{ bad_args, "'garbage' is not KEY=VALUE" }, { empty_key, "'=x' is not KEY=VALUE" },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(cases); i++) {
		fake_env = cases[i].env;
		struct sk_cni_env e;
		struct sk_err err = { 0 };
		assert_int_equal(sk_cni_env_parse(fake_getenv, &e, &err), -EINVAL);
		assert_non_null(strstr(err.msg, cases[i].msg));
	}
	/* a value longer than a Kubernetes name can be */
	char args[400] = "K8S_POD_NAME=";
	memset(args + strlen(args), 'a', 300);
	args[313] = 0;
	const char *const long_env[] = { "CNI_COMMAND", "DEL", "CNI_CONTAINERID", "a", "CNI_IFNAME", "eth0",
					  "CNI_ARGS", args, NULL };
	fake_env = long_env;
	struct sk_cni_env e;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_env_parse(fake_getenv, &e, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "K8S_POD_NAME is longer"));
}

static void test_env_del_without_netns(void **state)
{
	(void)state;
	static const char *const env[] = { "CNI_COMMAND", "DEL", "CNI_CONTAINERID", "a", "CNI_IFNAME", "eth0",
					   "CNI_NETNS", "", "CNI_ARGS", ";;", NULL };
	fake_env = env;
	struct sk_cni_env e;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_env_parse(fake_getenv, &e, &err), 0);
	assert_int_equal(e.cmd, SK_CNI_DEL);
	assert_null(e.netns);
	/* VERSION, STATUS and GC need none of the per-container variables */
	static const char *const ver[] = { "CNI_COMMAND", "VERSION", NULL };
	fake_env = ver;
	assert_int_equal(sk_cni_env_parse(fake_getenv, &e, &err), 0);
	assert_int_equal(e.cmd, SK_CNI_VERSION);
}

static void test_error_json(void **state)
{
	(void)state;
	char *s = sk_cni_error_json("1.0.0", SK_CNI_E_RETRY, "GET pod: \"refused\"");
	cJSON *o = cJSON_Parse(s);
	assert_non_null(o);
	assert_int_equal(cJSON_GetArraySize(o), 3);
	assert_string_equal(cJSON_GetObjectItem(o, "cniVersion")->valuestring, "1.0.0");
	assert_int_equal(cJSON_GetObjectItem(o, "code")->valueint, 11);
	assert_string_equal(cJSON_GetObjectItem(o, "msg")->valuestring, "GET pod: \"refused\"");
	cJSON_Delete(o);
	free(s);
	s = sk_cni_error_json(NULL, SK_CNI_E_VERSION, "x");
	assert_string_equal(s, "{\"cniVersion\":\"1.1.0\",\"code\":1,\"msg\":\"x\"}");
	free(s);
	/* the codes are the spec's */
	assert_int_equal(SK_CNI_E_ENV, 4);
	assert_int_equal(SK_CNI_E_IO, 5);
	assert_int_equal(SK_CNI_E_DECODE, 6);
	assert_int_equal(SK_CNI_E_CONFIG, 7);
	assert_int_equal(SK_CNI_E_UNAVAILABLE, 50);
}

static void test_versions(void **state)
{
	(void)state;
	assert_true(sk_cni_version_supported("0.4.0"));
	assert_true(sk_cni_version_supported("1.0.0"));
	assert_true(sk_cni_version_supported("1.1.0"));
	assert_false(sk_cni_version_supported("0.3.1"));
	assert_false(sk_cni_version_supported("1.0"));
	assert_false(sk_cni_version_supported(NULL));
	char *s = sk_cni_version_json("1.0.0");
	assert_string_equal(s, "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\",\"1.1.0\"]}");
	free(s);
	assert_int_equal(sk_cni_cmd_parse("STATUS"), SK_CNI_STATUS);
	assert_int_equal(sk_cni_cmd_parse("GC"), SK_CNI_GC);
	assert_int_equal(sk_cni_cmd_parse("Add"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf_fields),
		cmocka_unit_test(test_conf_refusals),
		cmocka_unit_test(test_prev_result_passes_through),
		cmocka_unit_test(test_result_without_prev),
		cmocka_unit_test(test_env_add),
		cmocka_unit_test(test_env_refusals),
		cmocka_unit_test(test_env_del_without_netns),
		cmocka_unit_test(test_error_json),
		cmocka_unit_test(test_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

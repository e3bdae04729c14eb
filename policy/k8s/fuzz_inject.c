/* policy/k8s/fuzz_inject.c — libFuzzer target: the manifest reader (YAML or JSON stream) and the pod-spec
 * mutation over whatever it reads. Invariants, checked on every document:
 *  - parsing never crashes and either fails with a message or yields documents;
 *  - the writer's YAML reads back as the same tree;
 *  - inject either refuses with -EINVAL (the document unchanged, a message starting with a field path;
 *    never -ENOMEM, which is also what a wrap failing its own sandbox check returns) or wraps,
 *    and wrapping the result again changes nothing (idempotence), which is_wrapped confirms. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "policy/k8s/inject.h"
#include "policy/k8s/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BROKEN() (fprintf(stderr, "fuzz_inject: invariant at line %d broken\n", __LINE__), abort())

static void check_doc(cJSON *d, const struct sk_inject_opts *o)
{
	char *y = sk_manifest_yaml(d);
	if (!y)
		BROKEN();
	cJSON *back = NULL;
	bool json;
	struct sk_err err = { 0 };
	if (sk_manifest_parse("back", y, strlen(y), &back, &json, &err) < 0 || cJSON_GetArraySize(back) != 1 ||
	    !cJSON_Compare(d, cJSON_GetArrayItem(back, 0), 1))
		BROKEN();
	cJSON_Delete(back);
	free(y);

	cJSON *before = cJSON_Duplicate(d, 1);
	int r = sk_inject_doc(d, o, &err);
	if (r < 0) {
		/* -ENOMEM would also be what a wrap that fails its own sandbox check returns: a bug here */
		if (r != -EINVAL || !cJSON_Compare(before, d, 1) || !err.msg[0] || err.msg[0] == ':')
			BROKEN();
	} else if (r == SK_INJECT_WRAPPED) {
		cJSON *once = cJSON_Duplicate(d, 1);
		if (sk_inject_doc(d, o, &err) != SK_INJECT_WRAPPED || !cJSON_Compare(once, d, 1) ||
		    sk_inject_is_wrapped(d, o, &err) != 1)
			BROKEN();
		cJSON_Delete(once);
	} else if (!cJSON_Compare(before, d, 1)) {
		BROKEN();
	}
	cJSON_Delete(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* byte 0 picks the options: native or classic sidecar, hook or probe, seccomp or not, API secret,
	 * classic sidecar first, the init in the sidecar (refused unless native), no trust files, placeholders */
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.native = !(data[0] & 1);
	o.hold_until_ready = !(data[0] & 2);
	if (data[0] & 4)
		o.seccomp_profile = NULL;
	o.sidecar_first = (data[0] & 16) != 0;
	o.init_in_sidecar = (data[0] & 32) != 0;
	static const char *const settings[] = { "--peek-timeout-ms=2000" };
	static const struct sk_inject_secret secrets[] = { { "gh", "gh-token" } };
	static const struct sk_inject_env env[] = { { "GH_TOKEN", "stockade-secret-github" },
						    { "A_TOKEN", "stockade-secret-another" } };
	if (data[0] & 8) {
		o.settings = settings;
		o.n_settings = 1;
		o.secrets = secrets;
		o.n_secrets = 1;
	}
	o.trust = !(data[0] & 64);
	if (data[0] & 128) {
		o.secret_env = env;
		o.n_secret_env = 2;
	}
	cJSON *docs = NULL;
	bool json;
	struct sk_err err = { 0 };
	if (sk_manifest_parse("fuzz", (const char *)data + 1, size - 1, &docs, &json, &err) < 0) {
		if (!err.msg[0])
			BROKEN();
		return 0;
	}
	cJSON *d;
	cJSON_ArrayForEach(d, docs) {
		check_doc(d, &o);
	}
	cJSON_Delete(docs);
	return 0;
}

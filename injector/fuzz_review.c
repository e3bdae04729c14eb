/* injector/fuzz_review.c — libFuzzer target: the AdmissionReview reader and response builder (review.h),
 * its JSON Patch (jsonpatch.h) and the request head parser (http.h). Byte 0 picks what the rest is:
 *  0: a whole request body; 1: a pod object, put into a well-formed review; 2: an HTTP request head.
 * Invariants:
 *  - a body is answered (0) or refused as unreadable (-EINVAL, message starting "request body"), never
 *    -ENOMEM; an answer is an admission.k8s.io/v1 AdmissionReview echoing the request's uid, allowed unless
 *    refused, with a patch exactly when patched;
 *  - a patch applies to the pod it was computed for, the result is wrapped as the options say
 *    (sk_inject_is_wrapped), and that pod sent again gets no patch (idempotence);
 *  - the head parser reads only len bytes (ASan) and a complete head lies within them. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "injector/http.h"
#include "injector/jsonpatch.h"
#include "injector/review.h"
#include "injector/test_base64.h"
#include "policy/k8s/inject.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BROKEN() (fprintf(stderr, "fuzz_review: invariant at line %d broken\n", __LINE__), abort())

static const char head[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
			   "\"uid\":\"f-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
			   "\"operation\":\"CREATE\",\"namespace\":\"agents\",\"object\":";

static char *envelope(const char *obj, size_t n, size_t *len)
{
	size_t hl = strlen(head);
	char *b = malloc(hl + n + 3);
	if (!b)
		abort();
	memcpy(b, head, hl);
	memcpy(b + hl, obj, n);
	b[hl + n] = '}';
	b[hl + n + 1] = '}';
	b[hl + n + 2] = '\0';
	*len = hl + n + 2;
	return b;
}

static cJSON *decode_patch(const char *s)
{
	char *out = sk_test_base64_decode(s, NULL);
	if (!out)
		BROKEN();   /* not canonical base64 (or out of memory: a fuzzer's abort either way) */
	cJSON *p = cJSON_Parse(out);
	free(out);
	if (!p)
		BROKEN();
	return p;
}

/* Handles one body and checks the answer; returns the verdict, or -1 when refused as unreadable. With
 * patched_out, a patched pod's result is returned there (owned). */
static int check_body(const char *body, size_t len, const struct sk_review_cfg *cfg, cJSON **patched_out)
{
	struct sk_review_out out;
	struct sk_err err = { 0 };
	int r = sk_review_handle(body, len, cfg, &out, &err);
	if (r < 0) {
		if ((r != -EINVAL && r != -EFBIG) || strncmp(err.msg, "request body", 12))
			BROKEN();
		return -1;
	}
	cJSON *resp = cJSON_ParseWithLength(out.body, out.body_len);
	cJSON *rr = cJSON_GetObjectItemCaseSensitive(resp, "response");
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(rr, "uid");
	const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(rr, "allowed");
	const cJSON *patch = cJSON_GetObjectItemCaseSensitive(rr, "patch");
	if (!resp || !cJSON_IsString(uid) || strcmp(uid->valuestring, out.uid) || !cJSON_IsBool(allowed) ||
	    cJSON_IsTrue(allowed) != (out.verdict != SK_REVIEW_REFUSED) ||
	    (patch != NULL) != (out.verdict == SK_REVIEW_PATCHED))
		BROKEN();
	if (patch && patched_out) {
		cJSON *req = cJSON_ParseWithLength(body, len);
		cJSON *pod = cJSON_DetachItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(req, "request"),
								     "object");
		cJSON *ops = decode_patch(patch->valuestring);
		if (!pod || sk_jsonpatch_apply(&pod, ops, &err) < 0 || sk_inject_is_wrapped(pod, cfg->inject, &err) != 1)
			BROKEN();
		*patched_out = pod;
		cJSON_Delete(ops);
		cJSON_Delete(req);
	}
	int v = (int)out.verdict;
	cJSON_Delete(resp);
	sk_review_out_free(&out);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);
	o.native = !(data[0] & 0x10);
	o.seccomp_profile = data[0] & 0x20 ? NULL : o.seccomp_profile;
	static const char *const excl[] = { "kube-system" };
	struct sk_review_cfg cfg = { &o, excl, 1, 1u << 20, NULL };
	const char *rest = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0] & 3) {
	case 0:
		(void)check_body(rest, n, &cfg, NULL);
		break;
	case 1: {
		size_t len;
		char *body = envelope(rest, n, &len);
		cJSON *pod = NULL;
		if (check_body(body, len, &cfg, &pod) == SK_REVIEW_PATCHED) {
			char *text = cJSON_PrintUnformatted(pod);
			char *again = envelope(text, strlen(text), &len);
			if (check_body(again, len, &cfg, NULL) != SK_REVIEW_UNCHANGED)
				BROKEN();
			free(again);
			free(text);
		}
		cJSON_Delete(pod);
		free(body);
		break;
	}
	default: {
		struct sk_http_req req;
		char *copy = malloc(n ? n : 1);  /* exactly n bytes, so ASan sees any read past them */
		if (!copy)
			abort();
		memcpy(copy, rest, n);
		int r = sk_http_parse(copy, n, &req);
		if (r == 1 && (req.head_len > n || req.head_len < 4))
			BROKEN();
		if (r < 0 && r != -400 && r != -414 && r != -431 && r != -501 && r != -505)
			BROKEN();
		free(copy);
		break;
	}
	}
	return 0;
}

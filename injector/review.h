/* injector/review.h — one admission request in, one admission response out: the AdmissionReview
 * (admission.k8s.io/v1) the API server POSTs to stockade-injector's /mutate, read strictly, and the
 * AdmissionReview it answers with, carrying a JSON Patch from policy/k8s/inject.h's mutation of the pod.
 *
 * What it owns: the strictness of the reading (a size cap, JSON with no duplicate key, valid UTF-8, integers
 * exact (|n| <= 2^53), nesting at most SK_REVIEW_MAX_DEPTH, and the fields it reads with their exact types;
 * any other apiVersion than admission.k8s.io/v1 is refused, since the webhook registers only v1); which
 * requests it wraps (CREATE of a v1 Pod, not a subresource, outside the excluded namespaces); undoing the
 * ServiceAccount admission plugin's token volume on a pod that did not ask for a token, and the API
 * server's enableServiceLinks: true default (so admission and `stockade-policy inject` give the same pod); and the verdicts. It does no I/O: the server (server.h)
 * hands it a body and sends back what it returns.
 *
 * Fail closed: a pod that is in scope and cannot be sandboxed is refused (allowed: false, HTTP 200, with
 * inject's message naming the field); a request that cannot be read is an error (HTTP 400), which the API
 * server, with failurePolicy: Fail, turns into a refusal too. Idempotent: a pod already wrapped as these
 * options would wrap it is allowed with no patch. */
#ifndef SK_INJECTOR_REVIEW_H
#define SK_INJECTOR_REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct sk_inject_opts;
struct sk_guardrails;

#define SK_REVIEW_MAX_DEPTH 100
#define SK_REVIEW_UID_MAX 128

struct sk_review_cfg {
	const struct sk_inject_opts *inject;   /* borrows */
	const char *const *exclude_ns;         /* borrows: namespaces never wrapped (kube-system, stockade's own) */
	size_t n_exclude;
	size_t max_body;                       /* bytes; a longer body is refused before it is parsed */
	const struct sk_guardrails *guardrails; /* borrows; NULL: none. The policy review refuses a policy that
	                                         * exceeds them (policy/guardrails.h) */
};

enum sk_review_verdict {
	SK_REVIEW_SKIPPED,    /* not in scope (operation, subresource, excluded namespace): allowed, no patch */
	SK_REVIEW_UNCHANGED,  /* in scope and already wrapped: allowed, no patch */
	SK_REVIEW_PATCHED,    /* allowed with a JSON Patch wrapping the pod */
	SK_REVIEW_REFUSED,    /* allowed: false, the pod cannot be sandboxed */
};

struct sk_review_out {
	enum sk_review_verdict verdict;
	char *body;            /* owned: the AdmissionReview response (JSON), to send with HTTP 200 */
	size_t body_len;
	char uid[SK_REVIEW_UID_MAX + 1];
	char ns[64], pod[128];  /* for the log line: namespace, name or generateName (sanitised, cut) */
	char reason[SK_ERR_MSG_MAX];     /* SK_REVIEW_REFUSED: inject's message (also in the response) */
};

/* Reads body and fills out. 0 (out->body owned by the caller: sk_review_out_free), or -EINVAL when the
 * request cannot be read (err says where and what was expected: answer HTTP 400), -EFBIG over max_body
 * (413), -ENOMEM (500). Borrows everything. */
int sk_review_handle(const char *body, size_t len, const struct sk_review_cfg *cfg, struct sk_review_out *out,
		     struct sk_err *err);

/* A pod annotated SK_REVIEW_OPT_OUT_ANNOTATION: "false" is not wrapped (SKIPPED), as Istio's
 * sidecar.istio.io/inject: "false": the admission policy still judges it where it is bound. */
#define SK_REVIEW_OPT_OUT_ANNOTATION "stockade.io/inject"

/* As sk_review_handle, for a namespace whose Pod Security `enforce` level is pod_security ("baseline",
 * "restricted": the webhook registration's namespaceSelector knows it, the injector has no API access): a
 * pod in scope is refused with a message stating the level and what to do, instead of being wrapped and then
 * refused by Pod Security for the init's NET_ADMIN with a message that does not say why it is there. */
int sk_review_handle_pod_security(const char *body, size_t len, const struct sk_review_cfg *cfg,
				  const char *pod_security, struct sk_review_out *out, struct sk_err *err);
void sk_review_out_free(struct sk_review_out *out);

/* The policy review (POST /validate-policy): a CREATE or UPDATE of a v1 ConfigMap labelled
 * SK_REVIEW_POLICY_LABEL is allowed when data[SK_REVIEW_POLICY_KEY] passes the validator
 * `stockade-policy check` runs (the files it names are not read: they live in the sidecar's mounts), and
 * refused otherwise with every FILE:LINE:COL diagnostic, the file named NAME/policy.yaml; a valid policy that
 * exceeds cfg->guardrails is refused with each violation, naming the guardrail (FILE:LINE:COL and key) it
 * exceeds, as `stockade-policy check --guardrails` does: an invalid policy never enters the cluster, so `kubectl apply` and `helm install`/`upgrade` fail before anything changes.
 * Verdicts: SKIPPED (not CREATE/UPDATE), UNCHANGED (valid: allowed), REFUSED. Errors as sk_review_handle. */
#define SK_REVIEW_POLICY_LABEL "stockade.io/policy"
#define SK_REVIEW_POLICY_KEY "policy.yaml"
int sk_review_handle_policy(const char *body, size_t len, const struct sk_review_cfg *cfg, struct sk_review_out *out,
			    struct sk_err *err);

const char *sk_review_verdict_name(enum sk_review_verdict v);

#endif

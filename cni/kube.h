/* cni/kube.h — what stockade-cni asks the API server and how it reads the answer. Owns the kubeconfig
 * reader (server, the CA as data or file, the bearer token as a token or a tokenFile; the file the
 * plugin's DaemonSet writes, mode 0600, outside the CNI configuration directory), the one GET of
 * /api/v1/namespaces/NS/pods/NAME over libcurl (common/curl_dl.h) and the decision on the pod's JSON,
 * which is pure: wrapped (label stockade.io/wrapped: "true"), unwrapped or hostNetwork, and for a
 * wrapped pod the policy it carries.
 *
 * No annotation the chart or the injector wrote carried the ruleset's inputs (stockade-init reads a
 * policy file from the pod's ConfigMap volume), so this defines one: stockade.io/netns-policy holds the
 * policy document (YAML or JSON, what `stockade-init --policy` takes); only its netns part (uids, ports,
 * direct rules) shapes the table. The chart (cni.enabled) and `inject --cni --policy` write it; a pod the
 * injector wraps has none, and its policy volume's ConfigMap is read instead (RBAC get configmaps). */
#ifndef SK_CNI_KUBE_H
#define SK_CNI_KUBE_H

#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

#define SK_KUBE_LABEL_WRAPPED "stockade.io/wrapped"
#define SK_KUBE_ANN_NETNS_POLICY "stockade.io/netns-policy"
/* Without the annotation: the ConfigMap of the pod's volume of this name, its key policy.yaml (what the
 * chart, `inject` and stockade-injector mount for stockade-init and the sidecar) */
#define SK_KUBE_POLICY_VOLUME "stockade-policy"
#define SK_KUBE_POLICY_KEY "policy.yaml"
/* A pod object larger than this is not one we can trust to read (the API server caps objects at ~1.5 MB) */
#define SK_KUBE_MAX_BODY (4u << 20)

struct sk_kubeconfig {
	char *server;      /* https://host:port, no trailing slash */
	char *ca_pem;      /* certificate-authority-data decoded, or NULL */
	size_t ca_pem_len;
	char *ca_file;     /* certificate-authority, or NULL */
	char *token;       /* token, or the first line of tokenFile */
};

/* Reads the kubeconfig at path (YAML or JSON): the current-context's cluster and user (the first of each
 * when there is no current-context). Refuses insecure-skip-tls-verify, a server that is not https://,
 * and a user without a token (client certificates are not read). -errno, err says what. */
SK_MUST_USE int sk_kubeconfig_load(const char *path, struct sk_kubeconfig *out, struct sk_err *err);
void sk_kubeconfig_free(struct sk_kubeconfig *kc);

struct sk_curl;

/* GETs the pod, loading libcurl into *cu (the caller's, zeroed) on first use. *body is owned (NUL-terminated). -EAGAIN when the server cannot be reached (the
 * runtime may retry), -ENOENT on 404, -EIO on any other failure; err names the URL and the cause. */
SK_MUST_USE int sk_kube_get_pod(struct sk_curl *cu, const struct sk_kubeconfig *kc, const char *ns, const char *name, char **body,
				size_t *len, struct sk_err *err);

enum sk_kube_pod_kind { SK_KUBE_POD_UNWRAPPED = 0, SK_KUBE_POD_HOST_NETWORK, SK_KUBE_POD_WRAPPED };

struct sk_kube_pod {
	enum sk_kube_pod_kind kind;
	char *policy;      /* owned: the netns-policy annotation of a wrapped pod, else NULL */
	size_t policy_len;
	char *policy_configmap;  /* owned: a wrapped pod without the annotation: its policy volume's ConfigMap
	                          * (policy NULL until sk_kube_configmap_policy) */
};

/* GETs a ConfigMap, as sk_kube_get_pod does a pod. */
SK_MUST_USE int sk_kube_get_configmap(struct sk_curl *cu, const struct sk_kubeconfig *kc, const char *ns,
				      const char *name, char **body, size_t *len, struct sk_err *err);
/* Takes the policy of a wrapped pod without the annotation from its ConfigMap's JSON (data.policy.yaml) into
 * pod->policy. -EINVAL when the key is missing or empty. */
SK_MUST_USE int sk_kube_configmap_policy(const char *json, size_t len, struct sk_kube_pod *pod, struct sk_err *err);

/* Decides from the pod object (JSON). want_uid, when non-empty, must be the pod's metadata.uid (CNI_ARGS'
 * K8S_POD_UID: a pod deleted and recreated under the same name is another pod). A wrapped pod without the
 * annotation gets policy_configmap from its stockade-policy volume; with neither (or an empty annotation)
 * it is -EINVAL: it must not start unprogrammed. */
SK_MUST_USE int sk_kube_pod_decide(const char *json, size_t len, const char *want_uid, struct sk_kube_pod *out,
				   struct sk_err *err);
void sk_kube_pod_free(struct sk_kube_pod *p);

#endif

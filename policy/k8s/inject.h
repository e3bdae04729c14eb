/* policy/k8s/inject.h — wraps a workload's pod spec in stockade, as a cJSON tree: the same init container,
 * sidecar, agent hardening and volumes that helm/stockade/templates/_helpers.tpl (stockade.podSpec)
 * renders, applied to a pod spec someone else wrote (`stockade-policy inject`, and later admission).
 *
 * What it owns: which kinds carry a pod spec and where; what cannot be sandboxed (refused with the field
 * path, e.g. "spec.template.spec.hostNetwork: ..."); the stockade-owned names (containers stockade-init,
 * stockade-sidecar; volumes stockade-policy, stockade-run, stockade-secret-*), whether or not these options
 * use them all (stockade-init is no container of its own with init_in_sidecar). It parses no text: the
 * caller hands it a document tree (manifest.h reads YAML/JSON streams).
 *
 * Idempotent: a pod template labelled stockade.io/wrapped=true has its stockade-owned parts removed and
 * put back from the options, so wrapping twice gives what wrapping once does (and re-wrapping with new
 * options updates them). Without that label, a stockade-owned name in the pod is a collision, refused. */
#ifndef SK_POLICY_INJECT_H
#define SK_POLICY_INJECT_H

#include <stdbool.h>
#include <stdint.h>

struct cJSON;
struct sk_err;

/* Label put on the pod template; the chart puts the same one on its own pods. */
#define SK_INJECT_LABEL "stockade.io/wrapped"
/* Annotation on a pod (template) naming the Localhost seccomp profile of its policy, stockade-<16 hex>.json,
 * instead of the options' (stockade-injector cannot read the pod's policy; docs/install.md#seccomp-profiles).
 * Anything else there is refused; stockade-init refuses a profile that is not its policy's. */
#define SK_INJECT_PROFILE_ANNOTATION "stockade.io/seccomp-profile"

/* Annotation on a pod (template) naming the policy ConfigMap in its namespace, instead of the options'
 * policy_configmap: two policies in one namespace (docs/governance.md). A DNS subdomain name, else refused. */
#define SK_INJECT_POLICY_ANNOTATION "stockade.io/policy"
/* Annotation carrying the cluster guardrails' text into the pod (opts.guardrails), projected by a
 * downwardAPI volume into the sidecar alone, which narrows its policy to them (docs/governance.md). */
#define SK_INJECT_GUARDRAILS_ANNOTATION "stockade.io/guardrails"

/* CNI mode (opts.cni): the annotation carrying the policy the node's stockade-cni builds the pod's netns
 * table from (cni/kube.h), and the first init container that proves the table is there. */
#define SK_INJECT_NETNS_POLICY_ANNOTATION "stockade.io/netns-policy"
#define SK_INJECT_VALIDATE_NAME "stockade-validate"
/* Annotations on a pod (template) adding to the options' secrets and placeholders, for stockade-injector,
 * whose options are cluster-wide: "NAME=SECRET ..." (each Secret of the pod's namespace mounted into the
 * sidecar alone at /var/run/stockade/secrets/NAME/, as --api-secret) and "NAME=PLACEHOLDER ..." (as
 * --secret-env). At most SK_INJECT_MAX_ANNOTATED each; a malformed item, or a name the options give too, is
 * refused with the annotation's path. */
#define SK_INJECT_SECRETS_ANNOTATION "stockade.io/api-secrets"
#define SK_INJECT_SECRET_ENV_ANNOTATION "stockade.io/secret-env"
#define SK_INJECT_MAX_ANNOTATED 32

/* A Secret for the API gateway, mounted into the sidecar only (chart: sidecar.apiSecrets[]). */
struct sk_inject_secret {
	const char *name;              /* borrows: mounted at /var/run/stockade/secrets/<name>/; a DNS label
	                                * (at most 63 of [a-z0-9-], as the CLI checks) */
	const char *secret_name;       /* borrows */
};

/* An environment variable given to every container of the pod's own: a credential placeholder (chart:
 * agent.secretEnv), which the sidecar swaps for the real value on the wire (policy `secrets:`). */
struct sk_inject_env {
	const char *name;              /* borrows: a C identifier; unique among the options' */
	const char *value;             /* borrows */
};

/* Where the sidecar writes the agent's trust files (--trust-dir) and the pod's own containers mount them
 * read-only (chart: stockade.trustDir). */
#define SK_INJECT_TRUST_DIR "/run/stockade-trust"

struct sk_inject_opts {
	const char *init_image;        /* borrows: "repository:tag" */
	const char *sidecar_image;     /* borrows */
	const char *pull_policy;       /* borrows: imagePullPolicy of both stockade containers */
	uint32_t agent_uid;            /* runAsUser/runAsGroup given to agent containers that set none */
	uint32_t sidecar_uid;
	uint16_t admin_port;           /* the only port in the pod spec; proxy/dns/api live in the policy */
	const char *policy_configmap;  /* borrows: ConfigMap holding policy.yaml */
	const char *seccomp_profile;   /* borrows: Localhost profile for agent containers; NULL: RuntimeDefault.
	                                * Also given to stockade-init (--seccomp-profile), which checks it is
	                                * the policy's. A pod's SK_INJECT_PROFILE_ANNOTATION replaces it... */
	bool profile_fixed;            /* ...unless it is the policy's own (`inject --policy`): an annotation
	                                * naming another profile is then refused */
	const char *log_level;         /* borrows: sidecar --log-level: error, warn, info or debug */
	unsigned drain_seconds;        /* STOCKADE_DRAIN_SECONDS */
	bool native;                   /* native sidecar (K8s >= 1.29): initContainers + restartPolicy Always */
	bool hold_until_ready;         /* native only: postStart wait-ready hook (else a startupProbe) */
	bool sidecar_first;            /* a classic sidecar first in containers with the postStart hook, so the
	                                * kubelet starts the agent in the same sync once the hook returns (one
	                                * relist sooner than a native sidecar); overrides native. Jobs refused */
	bool init_in_sidecar;          /* no init container: the native sidecar's entry is stockade-init --exec-as
	                                * sidecar_uid -- stockade-sidecar, root with NET_ADMIN, SETUID, SETGID,
	                                * SETPCAP until it drops (the chart's init.inSidecar). Native only: with
	                                * sidecar_first or !native every workload is refused (fail open) */
	bool cni;                      /* CNI mode (the chart's cni.enabled): no NET_ADMIN container; the node's
	                                * stockade-cni programs the netns from SK_INJECT_NETNS_POLICY_ANNOTATION
	                                * (netns_policy), and SK_INJECT_VALIDATE_NAME (the sidecar image, as
	                                * agent_uid, no capability) is the first init container. Not with
	                                * init_in_sidecar */
	const char *netns_policy;      /* borrows: the policy text the annotation carries; NULL: no annotation,
	                                * the plugin reads the ConfigMap of the pod's policy volume */
	unsigned validate_timeout_ms;  /* stockade-validate --timeout-ms (the chart's cni.validateTimeoutMs) */
	unsigned ready_timeout_s;      /* wait-ready bound / startupProbe failureThreshold */
	unsigned probe_period_s;       /* liveness/readiness periodSeconds */
	unsigned probe_failures;       /* liveness failureThreshold */
	const char *const *settings;   /* borrows: "--name=value" sidecar flags after the fixed ones, in this
	                                * order (the chart's sidecar.settings, which it sorts by name) */
	size_t n_settings;
	const struct sk_inject_secret *secrets;  /* borrows */
	size_t n_secrets;
	bool policy_fixed;             /* policy_configmap is the one `inject --policy` writes: a pod whose
	                                * SK_INJECT_POLICY_ANNOTATION names another is refused */
	const char *guardrails;        /* borrows: the cluster guardrails' text, or NULL: put into the pod as
	                                * SK_INJECT_GUARDRAILS_ANNOTATION, a downwardAPI volume
	                                * stockade-guardrails and the sidecar's --guardrails */
	bool trust;                    /* the chart's trust.enabled: the sidecar gets --trust-dir on the emptyDir
	                                * stockade-trust, every container of the pod's own mounts it read-only
	                                * at SK_INJECT_TRUST_DIR and gets the trust variables (SSL_CERT_FILE...)
	                                * it does not set itself */
	const struct sk_inject_env *secret_env;  /* borrows: appended to every container of the pod's own, in
	                                * name order; a container that sets one of these names itself is
	                                * refused (unless wrapped by stockade: the value is then replaced) */
	size_t n_secret_env;
};

/* Sorts "--name=value" sidecar flags by name, as the chart's range over sidecar.settings orders them (so
 * `inject` and stockade-injector give the chart's pod whatever order the flags came in). */
void sk_inject_sort_settings(const char **v, size_t n);

/* The chart's defaults (helm/stockade/values.yaml, release "stockade", images tagged with appVersion). */
void sk_inject_opts_default(struct sk_inject_opts *o);

enum sk_inject_result {
	SK_INJECT_PASS = 0,     /* not a workload kind: left as it was */
	SK_INJECT_WRAPPED = 1,  /* a workload, now wrapped (it may have been already: the tree is then unchanged) */
};

/* Options that cannot wrap any pod: 0, or -EINVAL with err saying why. The message names inject's flags,
 * which stockade-injector's settings share. sk_inject_doc checks them too. */
int sk_inject_opts_check(const struct sk_inject_opts *o, struct sk_err *err);

/* Wraps the workload `doc` (a whole object: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or
 * CronJob) in place. Returns an sk_inject_result, or -EINVAL with err naming the field path and why the
 * pod cannot be sandboxed (doc is then unchanged), or -ENOMEM. Borrows doc and o. */
int sk_inject_doc(struct cJSON *doc, const struct sk_inject_opts *o, struct sk_err *err);

/* 1 when `doc` is not a workload or is wrapped exactly as these options would wrap it, 0 when wrapping
 * would change it, <0 (err filled) when it cannot be wrapped at all. Borrows both. */
int sk_inject_is_wrapped(const struct cJSON *doc, const struct sk_inject_opts *o, struct sk_err *err);

#endif

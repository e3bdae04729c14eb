/* cni/proto.h — the CNI protocol as stockade-cni speaks it (spec 0.4.0, 1.0.0, 1.1.0), pure: the stdin
 * network configuration (cniVersion, name, type, prevResult and the plugin's own options), the CNI_*
 * environment (command, container id, netns path, ifname, CNI_ARGS' K8S_POD_* keys), and the three things
 * the plugin prints: the result (prevResult passed through unchanged), the VERSION answer and the error
 * object {"cniVersion","code","msg"}. Owns nothing beyond the structs it fills; no I/O. */
#ifndef SK_CNI_PROTO_H
#define SK_CNI_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

struct cJSON;

/* The error codes of the spec (section "Error") the plugin uses. */
enum sk_cni_code {
	SK_CNI_E_VERSION = 1,       /* incompatible CNI version */
	SK_CNI_E_FIELD = 2,         /* unsupported field in the network configuration */
	SK_CNI_E_UNKNOWN = 3,       /* container unknown or does not exist */
	SK_CNI_E_ENV = 4,           /* invalid necessary environment variables */
	SK_CNI_E_IO = 5,            /* I/O failure */
	SK_CNI_E_DECODE = 6,        /* failed to decode content */
	SK_CNI_E_CONFIG = 7,        /* invalid network configuration */
	SK_CNI_E_RETRY = 11,        /* try again later (the API server is unreachable) */
	SK_CNI_E_UNAVAILABLE = 50,  /* STATUS: the plugin is not available */
};

enum sk_cni_cmd { SK_CNI_ADD = 0, SK_CNI_DEL, SK_CNI_CHECK, SK_CNI_VERSION, SK_CNI_STATUS, SK_CNI_GC };

#define SK_CNI_DEFAULT_VERSION "1.1.0"
#define SK_CNI_SYSTEM_NS_DEFAULT "stockade-system"

/* The CNI_* environment. Strings borrow from the environment, except the K8S_POD_* copies. */
struct sk_cni_env {
	enum sk_cni_cmd cmd;
	const char *container_id, *netns, *ifname;
	char pod_ns[254], pod_name[254], pod_uid[64];   /* "" when CNI_ARGS does not carry them */
};

/* Reads the environment through getenv_fn (getenv in the program, a table in tests). ADD, DEL and CHECK
 * need CNI_CONTAINERID and CNI_IFNAME, ADD and CHECK CNI_NETNS too (DEL without it is a netns already gone).
 * CNI_ARGS is "K=V;K=V": a pair without '=' or a value too long is -EINVAL; unknown keys are ignored, as
 * the spec says of CNI_ARGS. */
SK_MUST_USE int sk_cni_env_parse(const char *(*getenv_fn)(const char *), struct sk_cni_env *out, struct sk_err *err);

/* The stdin configuration. */
struct sk_cni_conf {
	struct cJSON *root;          /* owned: the whole document */
	const char *version;         /* cniVersion (borrows root) */
	const char *name, *type;     /* borrow root */
	const struct cJSON *prev;    /* prevResult or NULL (borrows root) */
	const char *kubeconfig;      /* "kubeconfig": the file the DaemonSet writes (borrows root) */
	const char *system_ns;       /* "systemNamespace": stockade's own pods, never wrapped */
};

/* Parses buf. cniVersion, name and type are required strings; cniVersion must be supported
 * (err->code SK_CNI_E_VERSION is then returned as -EPROTO); kubeconfig a string when present. -EINVAL
 * (not JSON, a field of the wrong type) or -EPROTO; err says which field. */
SK_MUST_USE int sk_cni_conf_parse(const char *buf, size_t len, struct sk_cni_conf *out, struct sk_err *err);
void sk_cni_conf_free(struct sk_cni_conf *c);

bool sk_cni_version_supported(const char *v);
/* "ADD" → SK_CNI_ADD...; -EINVAL for anything else. */
int sk_cni_cmd_parse(const char *s);

/* The result an ADD or CHECK prints: prevResult as it came (its members and their order unchanged;
 * cniVersion added first when it has none), or {"cniVersion":V} when there is none. Owned; NULL on ENOMEM. */
char *sk_cni_result(const struct sk_cni_conf *c);
/* {"cniVersion":V,"supportedVersions":[...]} for VERSION. Owned; NULL on ENOMEM. */
char *sk_cni_version_json(const char *version);
/* {"cniVersion":V,"code":code,"msg":msg}. V NULL: SK_CNI_DEFAULT_VERSION. Owned; NULL on ENOMEM. */
char *sk_cni_error_json(const char *version, int code, const char *msg);

#endif

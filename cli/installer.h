/* cli/installer.h — the cluster mode of `stockade-policy seccomp-install` (cmd_install.c): which profiles the
 * cluster's policies need, read from the ConfigMaps labelled stockade.dev/seccomp-profile=true through the
 * Kubernetes API, and which profile files on the node have been unneeded long enough to delete.
 *
 * A ConfigMap publishes one profile: data["policy.yaml"] is a policy (helm/stockade renders one holding only
 * its seccomp section), data["profile"] optionally the file name it must hash to (policy/seccomp/name.h). Each
 * is loaded with the real policy loader and generated with the real generator before it counts; a bad one is
 * reported through the skip callback and never written.
 *
 * Ownership: a struct sk_inst_set and a struct sk_inst_gc own everything they hold; free them with
 * sk_inst_set_free() / sk_inst_gc_free(). */
#ifndef SK_CLI_INSTALLER_H
#define SK_CLI_INSTALLER_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/err.h"
#include "policy/seccomp/name.h"

/* At most this many distinct profiles per round: anyone who may create a labelled ConfigMap in some
 * namespace must not be able to fill every node's disk. The rest are skipped, each reported. */
#define SK_INST_MAX_PROFILES 1024
/* data["policy.yaml"] larger than this is refused (the API's own ConfigMap limit is 1 MiB). */
#define SK_INST_MAX_POLICY (1u << 20)

struct sk_inst_profile {
	char name[SK_SCMP_NAME_SIZE];  /* stockade-<hash>.json */
	char *text;                    /* the profile file text (JSON + newline) */
	char *source;                  /* "namespace/name" of the first ConfigMap that asked for it */
};

struct sk_inst_set {
	struct sk_inst_profile *v;
	size_t n;
	bool log_denials;              /* set by the caller: every profile added carries SECCOMP_FILTER_FLAG_LOG */
};

/* Called for each ConfigMap that is skipped: source "namespace/name", why (a sentence naming the problem,
 * with the policy's file:line:col when the loader or generator refused it). */
typedef void (*sk_inst_skip_fn)(void *ctx, const char *source, const char *why);

/* Builds the profile a ConfigMap asks for into *out (owned fields): loads policy_yaml (named
 * "SOURCE:policy.yaml" in messages), runs its seccomp section through the generator, names it, and checks
 * that declared (NULL: not given) equals the name; log_denials is the generator's (the name does not
 * depend on it). 0, -EINVAL with err set when the ConfigMap is bad,
 * -ENOMEM. */
int sk_inst_profile_from(const char *source, const char *policy_yaml, size_t len, const char *declared,
			 bool log_denials, struct sk_inst_profile *out, struct sk_err *err);

/* Parses one page of a ConfigMapList (the API's JSON) and adds each good ConfigMap's profile to set (a
 * name already there is not added twice); bad ones go to skip. *cont receives the list's
 * metadata.continue (owned) or NULL on the last page. 0, or -EINVAL when json is not a ConfigMapList (the
 * whole listing is then unusable: the caller must not delete anything on its strength), -ENOMEM. */
int sk_inst_parse_list(const char *json, size_t len, struct sk_inst_set *set, char **cont, sk_inst_skip_fn skip,
		       void *ctx, struct sk_err *err);

/* Adds the default profile (that of a policy without a seccomp section, SK_SCMP_DEFAULT_NAME, source
 * SK_INST_DEFAULT_SOURCE) to set unless it is there. Every round serves it whatever the ConfigMaps say: it
 * is what stockade-injector and `stockade-policy inject` put into a pod when no policy names another
 * (docs/install.md#seccomp-profiles), so it must be on every node before such a pod is scheduled, and it is
 * never collected. 0, -ENOMEM, or -EINVAL if the built-in name and the computed one disagree (a build bug:
 * the round then serves nothing rather than a pod's profile under a wrong name). */
#define SK_INST_DEFAULT_SOURCE "(built-in default)"
int sk_inst_add_default(struct sk_inst_set *set, struct sk_err *err);

void sk_inst_set_free(struct sk_inst_set *set);

/* The files in the directory that no ConfigMap asks for any more, and since when (in this process: a
 * restarted installer starts counting again, which can only delay a deletion). */
struct sk_inst_gc {
	struct {
		char name[SK_SCMP_NAME_SIZE];
		time_t since;
	} *v;
	size_t n;
};

/* Given the file names in the directory (any; only profile-shaped ones, sk_seccomp_is_profile_name, are
 * considered) and the profiles needed now, updates gc and returns in *due (owned array of owned names) the
 * files absent from set for at least grace seconds; they are dropped from gc (the caller deletes them). A
 * file needed again is forgotten. 0 or -ENOMEM. */
int sk_inst_gc_due(struct sk_inst_gc *gc, const char *const *files, size_t n_files, const struct sk_inst_set *set,
		   time_t now, long grace, char ***due, size_t *n_due);

void sk_inst_gc_free(struct sk_inst_gc *gc);

/* Where and how to reach the API server. */
struct sk_curl;
struct sk_inst_api {
	const struct sk_curl *curl;  /* libcurl, loaded (common/curl_dl.h: dlopen'd, so stockade-policy's other
	                              * subcommands and the policy image carry none of it) */
	const char *server;      /* "https://host:port"; "http://" only to 127.0.0.1, [::1] or localhost (tests) */
	const char *token_file;  /* bearer token, re-read for every request (the kubelet rotates it) */
	const char *ca_file;     /* the API server's CA; NULL: the system's */
	const char *selector;    /* label selector, e.g. "stockade.dev/seccomp-profile=true" */
};

/* 1 when server is an https URL, or an http one to a loopback host. */
int sk_inst_server_ok(const char *server);

/* Lists every labelled ConfigMap (following metadata.continue, 100 a page) into set. 0, or < 0 with err
 * set (connection, HTTP status, a body that is not a ConfigMapList): the set is then incomplete. */
int sk_inst_list(const struct sk_inst_api *api, struct sk_inst_set *set, sk_inst_skip_fn skip, void *ctx,
		 struct sk_err *err);

#endif

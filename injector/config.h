/* injector/config.h — every setting of stockade-injector in one table (config.c): its flag, its
 * STOCKADE_* environment variable, type, range, default and help; `--help` is generated from it. The rows
 * are common/settings.h's and are read by it, as stockade-sidecar's are: flags win over the environment, an
 * empty variable counts as unset, a malformed value is a startup error naming the flag or variable (exit 2).
 *
 * The wrap settings (images, UIDs, admin port, policy ConfigMap, seccomp profile, classic sidecar...) are
 * those of `stockade-policy inject` (the same defaults, sk_inject_opts_default) and land in `inject`. */
#ifndef SK_INJECTOR_CONFIG_H
#define SK_INJECTOR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/log.h"
#include "policy/k8s/inject.h"

struct sk_err;

#define SK_INJECTOR_MAX_EXCLUDE 32
#define SK_INJECTOR_MAX_STRINGS 30
#define SK_INJECTOR_MAX_EXTRA 64   /* sidecar settings, API secrets: as many as `inject` takes */

struct sk_injector_config {
	const char *listen;            /* --listen: PORT, HOST:PORT or [V6]:PORT */
	const char *tls_cert, *tls_key;  /* --tls-cert, --tls-key: PEM files, re-read when they change */
	uint32_t threads;              /* --threads: connections served at once */
	uint32_t max_queue;            /* --max-queue: accepted connections waiting for a thread */
	uint32_t request_timeout_ms;   /* --request-timeout-ms: handshake + one request, start to end */
	uint32_t idle_timeout_ms;      /* --idle-timeout-ms: a kept-alive connection's wait for the next */
	uint32_t max_body;             /* --max-body-bytes */
	uint32_t max_requests;         /* --max-requests-per-conn */
	uint32_t reload_ms;            /* --cert-check-ms: how often the certificate files are stat'ed */
	enum sk_log_level log_level;
	enum sk_log_format log_format;
	const char *guardrails;        /* --guardrails: the cluster guardrails file (docs/governance.md), or NULL */
	const char *exclude_list;      /* --exclude-namespaces, comma-separated */
	const char *exclude[SK_INJECTOR_MAX_EXCLUDE];
	size_t n_exclude;
	bool no_seccomp, classic, startup_probe, sidecar_first, init_in_sidecar, no_trust;
	const char *settings_list;     /* --sidecar-settings: space-separated NAME=VALUE */
	const char *secrets_list;      /* --api-secrets: space-separated NAME=SECRET */
	const char *secret_env_list;   /* --secret-env: space-separated NAME=PLACEHOLDER */
	char *setting_flags[SK_INJECTOR_MAX_EXTRA];   /* owned: "--NAME=VALUE", inject.settings points here */
	struct sk_inject_secret secrets[SK_INJECTOR_MAX_EXTRA];  /* pointing into the owned copy of the list */
	struct sk_inject_env secret_env[SK_INJECTOR_MAX_EXTRA];  /* likewise */
	struct sk_inject_opts inject;
	bool help, version;
	char *owned[SK_INJECTOR_MAX_STRINGS];  /* private: copies the strings above point into */
};

/* Parses argv and envp (NULL-terminated "K=V", may be NULL) over the defaults. 0, or -EINVAL/-ENOMEM with
 * err naming the flag or variable and what was expected (cfg is then freed). Release with
 * sk_injector_config_free. */
int sk_injector_config_parse(int argc, char *const argv[], char *const envp[], struct sk_injector_config *cfg,
			     struct sk_err *err);
void sk_injector_config_free(struct sk_injector_config *cfg);
void sk_injector_config_usage(FILE *out, const char *prog);

#endif

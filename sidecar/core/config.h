/* sidecar/core/config.h — every run-time setting of stockade-sidecar, in one table (config.c): its flag
 * (`--peek-timeout-ms`), its STOCKADE_* environment variable, its type (integer with a range, boolean,
 * path, address, log level or format), its default, its help text and the field of struct sk_config it lands in.
 * Flags win over the environment; an empty variable counts as unset (Kubernetes renders optional values as
 * ""), an empty flag value is an error. A malformed value, from a flag or the environment, is a startup
 * error naming the flag or variable and what was expected (main exits SK_EXIT_USAGE); nothing falls back
 * to a default silently. `--help` and `--help-settings-md` (the table in docs/operating.md, checked by
 * config_test) are generated from the table. How the table is read (these conventions, the messages) is
 * common/settings.h's, shared with stockade-injector; this file owns the rows and struct sk_config.
 *
 * The servers read no environment: main copies cfg.proxy / cfg.api / cfg.dns into struct sk_sidecar
 * (sidecar.h), and the proxy, gateway and DNS server take their values from there. Strings in a config
 * point at its own copies (or at static defaults) and live until sk_config_free. */
#ifndef SK_SIDECAR_CONFIG_H
#define SK_SIDECAR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/err.h"
#include "common/log.h"
#include "common/settings.h"

#define SK_DEFAULT_MARKER "/run/stockade/init.marker"  /* where the Helm chart mounts it */
#define SK_DEFAULT_DRAIN_SECONDS 10u

/* The transparent proxy's limits (proxy.c). */
struct sk_proxy_limits {
	size_t peek_cap;               /* --peek-max-bytes: most bytes read before deciding */
	uint32_t peek_timeout_ms;      /* --peek-timeout-ms: first bytes deadline */
	uint32_t connect_timeout_ms;   /* --connect-timeout-ms: upstream connect */
	uint32_t idle_timeout_ms;      /* --idle-timeout-ms: relay with no byte either way; 0 = none */
	uint32_t max_conns;            /* --max-conns: all proxied connections at once */
	uint32_t max_per_src;          /* --max-conns-per-source: per source address */
	int pipe_size;                 /* --pipe-size: F_SETPIPE_SZ for relay pipes */
};

/* The API gateway's limits (gateway.c). */
struct sk_gateway_limits {
	uint32_t connect_timeout_ms;   /* --api-connect-timeout-ms */
	uint32_t idle_timeout_ms;      /* --api-idle-timeout-ms: < 1 B/s this long → 504; rounded up to whole
	                                * seconds (CURLOPT_LOW_SPEED_TIME) */
	uint32_t total_timeout_ms;     /* --api-total-timeout-ms; 0 = none */
	uint32_t head_timeout_ms;      /* --api-head-timeout-ms (also the keep-alive idle time) */
	uint32_t max_conns;            /* --api-max-conns: agent connections at once */
};

/* The DNS filter's settings (dns/server.c). */
struct sk_dns_settings {
	const char *resolv_conf;       /* --resolv-conf: where the upstream resolvers come from */
	uint32_t bindings;             /* --dns-bindings: name↔IP binding table capacity */
	uint32_t probe_ms;             /* --dns-probe-ms: ". NS" liveness probe period; 0 = off */
	uint32_t upstream_sockets;     /* --dns-upstream-sockets: upstream UDP sockets open at once */
	bool strict_chain;             /* --dns-strict-chain (dns_filter.h) */
};

#define SK_CONFIG_MAX_STRINGS 9    /* string settings (their owned copies) */

struct sk_config {
	const char *policy_path;     /* --policy; required unless help/version */
	const char *guardrails_path; /* --guardrails: cluster guardrails narrowing every load; NULL = none */
	const char *marker_path;     /* --marker */
	enum sk_log_level log_level; /* --log-level */
	enum sk_log_format log_format; /* --log-format */
	const char *admin_addr;      /* --admin-addr; NULL = all interfaces, the policy's admin port */
	unsigned drain_seconds;      /* --drain-seconds */
	const char *inspect_ca_cert; /* --inspect-ca-cert: an operator's inspection CA; NULL = generated */
	const char *inspect_ca_key;  /* --inspect-ca-key */
	const char *trust_dir;       /* --trust-dir: the agent's trust files (inspect/trust.h); NULL = none */
	const char *trust_bundle;    /* --trust-bundle: the system bundle for bundle.pem; NULL = the default */
	struct sk_proxy_limits proxy;
	struct sk_gateway_limits api;
	struct sk_dns_settings dns;
	bool help, version;          /* --help / --version: main prints and exits 0 */
	bool help_settings_md;       /* --help-settings-md: main prints the settings as markdown, exits 0 */
	char *owned[SK_CONFIG_MAX_STRINGS];  /* private: the copies the string fields above point into */
};

/* Sets every setting to its table default (policy_path NULL). */
void sk_config_defaults(struct sk_config *cfg);
/* Parses argv (argv[0] is the program) and envp (NULL-terminated "K=V" strings, may be NULL) over the
 * defaults. On error returns -EINVAL (or -ENOMEM) with a message naming the flag or variable and what was
 * expected; cfg is then freed. Release with sk_config_free. */
int sk_config_parse(int argc, char *const argv[], char *const envp[], struct sk_config *cfg, struct sk_err *err);
void sk_config_free(struct sk_config *cfg);
/* --help: every setting with its flag, variable, range and default. This and the next leave a failed write
 * to out's error indicator: the caller checks fflush and ferror. */
void sk_config_usage(FILE *out, const char *prog);
/* --help-settings-md: the markdown table of docs/operating.md ("## Settings"). */
void sk_config_settings_md(FILE *out);

/* The table defaults of one group, for servers built without a parsed config (unit tests). */
void sk_proxy_limits_default(struct sk_proxy_limits *l);
void sk_gateway_limits_default(struct sk_gateway_limits *l);
void sk_dns_settings_default(struct sk_dns_settings *d);

/* The table, read-only, for config_test's table test. Its rows are common/settings.h's; the one kind of the
 * sidecar's own is the admin address (checked by sk_config_admin_sockaddr, kept as text). */
extern const struct sk_setting_kind sk_config_kind_addr;
#define SK_SET_ADDR (&sk_config_kind_addr)
const struct sk_setting *sk_config_settings(size_t *n);

/* Resolves an admin address: "PORT", ":PORT", "HOST:PORT", "[V6]:PORT", "HOST" or "[V6]" (numeric hosts
 * only: this runs before DNS is trustworthy). A missing host means all interfaces ("::", dual-stack);
 * a missing port means default_port. Returns 0 or -EINVAL. */
int sk_config_admin_sockaddr(const char *addr, uint16_t default_port, struct sockaddr_storage *ss,
			     socklen_t *len, struct sk_err *err);

#endif

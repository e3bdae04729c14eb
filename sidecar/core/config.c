/* sidecar/core/config.c — see config.h. */
#include "sidecar/core/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define F(field) offsetof(struct sk_config, field), sizeof(((struct sk_config *)0)->field)

/* THE table: every setting of the sidecar. Defaults are text, parsed like any value (config_test checks
 * each parses). Order is --help's and docs/operating.md's. */
static const struct sk_setting settings[] = {
	/* general */
	{ "policy", "STOCKADE_POLICY", SK_SET_PATH, 0, 0, NULL,
	  "policy file (YAML or JSON); required", F(policy_path), false },
	{ "guardrails", "STOCKADE_GUARDRAILS", SK_SET_PATH, 0, 0, NULL,
	  "cluster guardrails (docs/governance.md): every load and reload narrows the policy to them, one audit "
	  "line per change; re-read when the file changes (unset: none)", F(guardrails_path), false },
	{ "marker", "STOCKADE_MARKER", SK_SET_PATH, 0, 0, SK_DEFAULT_MARKER,
	  "stockade-init's marker file; /readyz wants it with the running policy's netns hash", F(marker_path), false },
	{ "log-level", "STOCKADE_LOG_LEVEL", SK_SET_LEVEL, 0, 0, "info",
	  "stderr log lines written: error, warn, info or debug (audit lines on stdout are never filtered)",
	  F(log_level), false },
	{ "log-format", "STOCKADE_LOG_FORMAT", SK_SET_LOGFMT, 0, 0, "text",
	  "stderr log lines as text (\"stockade-sidecar: message\") or json (one object a line: ts, level, prog, msg)",
	  F(log_format), false },
	{ "admin-addr", "STOCKADE_ADMIN_ADDR", SK_SET_ADDR, 0, 0, NULL,
	  "admin listener: PORT, HOST:PORT, [V6]:PORT, HOST or [V6] (unset: all interfaces, the policy's admin port)",
	  F(admin_addr), false },
	{ "drain-seconds", "STOCKADE_DRAIN_SECONDS", SK_SET_UINT, 0, 3600, "10",
	  "seconds open connections and API requests may run on after SIGTERM", F(drain_seconds), false },
	/* proxy */
	{ "peek-timeout-ms", "STOCKADE_PEEK_TIMEOUT_MS", SK_SET_UINT, 1, 600000, "5000",
	  "proxy: deadline for a connection's first bytes", F(proxy.peek_timeout_ms), false },
	{ "peek-max-bytes", "STOCKADE_PEEK_MAX_BYTES", SK_SET_UINT, 512, 1u << 20, "16384",
	  "proxy: most bytes read before deciding", F(proxy.peek_cap), false },
	{ "connect-timeout-ms", "STOCKADE_CONNECT_TIMEOUT_MS", SK_SET_UINT, 1, 600000, "10000",
	  "proxy: upstream connect deadline", F(proxy.connect_timeout_ms), false },
	{ "idle-timeout-ms", "STOCKADE_IDLE_TIMEOUT_MS", SK_SET_UINT, 0, 86400000, "3600000",
	  "proxy: a relay with no byte either way this long is closed; 0 = never", F(proxy.idle_timeout_ms), false },
	{ "max-conns", "STOCKADE_MAX_CONNS", SK_SET_UINT, 1, 1000000, "16384",
	  "proxy: connections at once", F(proxy.max_conns), false },
	{ "max-conns-per-source", "STOCKADE_MAX_CONNS_PER_SOURCE", SK_SET_UINT, 1, 1000000, "8192",
	  "proxy: connections at once from one source address", F(proxy.max_per_src), false },
	{ "pipe-size", "STOCKADE_PIPE_SIZE", SK_SET_UINT, 4096, 1u << 20, "65536",
	  "proxy: relay pipe size in bytes (F_SETPIPE_SZ)", F(proxy.pipe_size), false },
	/* TLS inspection */
	{ "inspect-ca-cert", "STOCKADE_INSPECT_CA_CERT", SK_SET_PATH, 0, 0, NULL,
	  "inspection: the operator's CA certificate (PEM) leaves are signed with; unset: a CA generated at start, "
	  "its key in memory only", F(inspect_ca_cert), false },
	{ "inspect-ca-key", "STOCKADE_INSPECT_CA_KEY", SK_SET_PATH, 0, 0, NULL,
	  "inspection: that CA's private key (PEM); given with --inspect-ca-cert, read once at start",
	  F(inspect_ca_key), false },
	{ "trust-dir", "STOCKADE_TRUST_DIR", SK_SET_PATH, 0, 0, NULL,
	  "inspection: a directory the agent mounts read-only, written at start with the CA's ca.pem, bundle.pem "
	  "(system bundle + CA) and truststore.p12 (password changeit); unset: none", F(trust_dir), false },
	{ "trust-bundle", "STOCKADE_TRUST_BUNDLE", SK_SET_PATH, 0, 0, NULL,
	  "inspection: the system bundle put before the CA in bundle.pem; unset: /etc/ssl/certs/ca-certificates.crt "
	  "if present", F(trust_bundle), false },
	/* API gateway */
	{ "api-connect-timeout-ms", "STOCKADE_API_CONNECT_TIMEOUT_MS", SK_SET_UINT, 1, 600000, "10000",
	  "gateway: upstream connect deadline (then 504)", F(api.connect_timeout_ms), false },
	{ "api-idle-timeout-ms", "STOCKADE_API_IDLE_TIMEOUT_MS", SK_SET_UINT, 1000, 86400000, "300000",
	  "gateway: under 1 byte/s this long ends a transfer with 504 (whole seconds, rounded up)",
	  F(api.idle_timeout_ms), false },
	{ "api-total-timeout-ms", "STOCKADE_API_TOTAL_TIMEOUT_MS", SK_SET_UINT, 0, 86400000, "3600000",
	  "gateway: a whole request's deadline; 0 = none", F(api.total_timeout_ms), false },
	{ "api-head-timeout-ms", "STOCKADE_API_HEAD_TIMEOUT_MS", SK_SET_UINT, 100, 600000, "30000",
	  "gateway: the agent's request head deadline (408), also the keep-alive idle time",
	  F(api.head_timeout_ms), false },
	{ "api-max-conns", "STOCKADE_API_MAX_CONNS", SK_SET_UINT, 1, 100000, "512",
	  "gateway: agent connections at once", F(api.max_conns), false },
	/* DNS filter */
	{ "resolv-conf", "STOCKADE_RESOLV_CONF", SK_SET_PATH, 0, 0, "/etc/resolv.conf",
	  "DNS: the resolv.conf whose nameservers the policy's dns.upstream entry `resolv.conf` stands for", F(dns.resolv_conf), false },
	{ "dns-bindings", "STOCKADE_DNS_BINDINGS", SK_SET_UINT, 1, 1u << 24, "100000",
	  "DNS: name-to-address bindings kept for the proxy's check", F(dns.bindings), false },
	{ "dns-probe-ms", "STOCKADE_DNS_PROBE_MS", SK_SET_UINT, 0, 3600000, "5000",
	  "DNS: period of the upstream liveness probe behind /readyz; 0 = off", F(dns.probe_ms), false },
	{ "dns-upstream-sockets", "STOCKADE_DNS_UPSTREAM_SOCKETS", SK_SET_UINT, 1, 65536, "1024",
	  "DNS: upstream UDP sockets open at once (one per query and server); beyond it SERVFAIL",
	  F(dns.upstream_sockets), false },
	{ "dns-strict-chain", "STOCKADE_DNS_STRICT_CHAIN", SK_SET_BOOL, 0, 0, "false",
	  "DNS: strip A/AAAA records whose owner the policy does not itself allow (breaks names that CNAME to a CDN)", F(dns.strict_chain), false },
};

#undef F

/* The admin address, checked by the resolver main uses (kept as text: the policy gives the default port). */
static int check_addr(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	(void)s;
	if (sk_config_admin_sockaddr(value, 1, &ss, &len, err) < 0)
		return sk_err_prefix(err, "%s", what);
	return 0;
}

const struct sk_setting_kind sk_config_kind_addr = { "ADDR", "PORT, HOST:PORT or [V6]:PORT", "address", NULL,
						     check_addr };

static const struct sk_settings_switch switches[] = {
	{ "--help", offsetof(struct sk_config, help) },
	{ "-h", offsetof(struct sk_config, help) },
	{ "--help-settings-md", offsetof(struct sk_config, help_settings_md) },
	{ "--version", offsetof(struct sk_config, version) },
};

static const struct sk_settings table = {
	.rows = settings, .n = SK_ARRAY_SIZE(settings), .switches = switches, .n_switches = SK_ARRAY_SIZE(switches),
	.owned_off = offsetof(struct sk_config, owned), .max_strings = SK_CONFIG_MAX_STRINGS, .terse_empty = false,
};

const struct sk_setting *sk_config_settings(size_t *n)
{
	*n = SK_ARRAY_SIZE(settings);
	return settings;
}

void sk_config_usage(FILE *out, const char *prog)
{
	/* the writes below leave a failure to out's error indicator, which the caller checks (config.h) */
	char exp[96];
	(void)fprintf(out, "usage: %s --policy FILE [options]\n"
		"Every option can also be set by its environment variable; the flag wins, an empty variable\n"
		"counts as unset, a malformed value is an error (exit 2).\n", prog);
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		const struct sk_setting *s = &settings[i];
		if (!s->flag)
			continue;
		char lhs[64];
		(void)snprintf(lhs, sizeof(lhs), "--%s %s", s->flag, sk_setting_metavar(s));
		sk_setting_expected(s, exp, sizeof(exp));
		(void)fprintf(out, "  %-32s env %s\n      %s\n      (%s; default %s)\n", lhs, s->env, s->help, exp,
			s->def ? s->def : "unset");
	}
	(void)fprintf(out, "  %-32s print the version and exit\n", "--version");
	(void)fprintf(out, "  %-32s print this and exit\n", "--help");
	(void)fprintf(out, "  %-32s print the settings as a markdown table and exit\n", "--help-settings-md");
	(void)fprintf(out, "test only (environment, not for production):\n");
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++)
		if (!settings[i].flag)
			(void)fprintf(out, "  %s %s\n      %s\n", settings[i].env, sk_setting_metavar(&settings[i]),
				      settings[i].help);
	(void)fprintf(out, "signals: SIGHUP reloads the policy (also on change of the file); SIGTERM/SIGINT drain and exit.\n");
}

void sk_config_settings_md(FILE *out)
{
	sk_settings_md(out, &table);
}

void sk_config_free(struct sk_config *cfg)
{
	sk_settings_free(&table, cfg);
	memset(cfg, 0, sizeof(*cfg));
}

void sk_config_defaults(struct sk_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	sk_settings_defaults(&table, cfg);
}

void sk_proxy_limits_default(struct sk_proxy_limits *l)
{
	struct sk_config c;
	sk_config_defaults(&c);
	*l = c.proxy;
}

void sk_gateway_limits_default(struct sk_gateway_limits *l)
{
	struct sk_config c;
	sk_config_defaults(&c);
	*l = c.api;
}

void sk_dns_settings_default(struct sk_dns_settings *d)
{
	struct sk_config c;
	sk_config_defaults(&c);
	*d = c.dns;   /* resolv_conf points at the table's static default */
}

int sk_config_parse(int argc, char *const argv[], char *const envp[], struct sk_config *cfg, struct sk_err *err)
{
	int r;
	sk_config_defaults(cfg);
	if ((r = sk_settings_parse(&table, argc, argv, envp, cfg, err)) < 0)
		goto fail;
	if (cfg->help || cfg->version || cfg->help_settings_md)
		return 0;
	if (!cfg->policy_path) {
		r = sk_err_set(err, EINVAL, "--policy FILE (or STOCKADE_POLICY) is required");
		goto fail;
	}
	return 0;
fail:
	sk_config_free(cfg);
	return r;
}

static int parse_port(const char *s, uint16_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || errno || *end || v == 0 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

int sk_config_admin_sockaddr(const char *addr, uint16_t default_port, struct sockaddr_storage *ss,
			     socklen_t *len, struct sk_err *err)
{
	char host[64] = "";
	const char *port_s = NULL;
	uint16_t port = default_port;
	size_t n = strlen(addr);

	if (n == 0 || n >= 80)
		return sk_err_set(err, EINVAL, "admin address '%.80s': expected PORT, HOST:PORT or [V6]:PORT", addr);
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || (size_t)(close - addr - 1) >= sizeof(host) ||
		    (close[1] != '\0' && close[1] != ':'))
			return sk_err_set(err, EINVAL, "admin address '%s': bad bracketed IPv6 address", addr);
		memcpy(host, addr + 1, (size_t)(close - addr - 1));
		host[close - addr - 1] = '\0';
		if (close[1] == ':')
			port_s = close + 2;
	} else if (strspn(addr, "0123456789") == n) {
		port_s = addr;
	} else {
		const char *colon = strchr(addr, ':');
		if (colon && strchr(colon + 1, ':'))
			return sk_err_set(err, EINVAL, "admin address '%s': IPv6 needs brackets, e.g. [::1]:15000", addr);
		size_t hl = colon ? (size_t)(colon - addr) : n;
		if (hl >= sizeof(host))
			return sk_err_set(err, EINVAL, "admin address '%s': host too long", addr);
		memcpy(host, addr, hl);
		host[hl] = '\0';
		if (colon)
			port_s = colon + 1;
	}
	if (port_s && parse_port(port_s, &port) < 0)
		return sk_err_set(err, EINVAL, "admin address '%s': port must be 1..65535", addr);

	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	if (host[0] == '\0') {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
	} else if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
	} else {
		return sk_err_set(err, EINVAL, "admin address '%s': '%s' is not a numeric IP address", addr, host);
	}
	return 0;
}

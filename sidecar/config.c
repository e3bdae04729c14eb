/* sidecar/config.c — see config.h. */
#include "sidecar/config.h"

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

const struct sk_setting *sk_config_settings(size_t *n)
{
	*n = SK_ARRAY_SIZE(settings);
	return settings;
}

static const char *metavar(const struct sk_setting *s)
{
	switch (s->type) {
	case SK_SET_UINT: return "N";
	case SK_SET_BOOL: return "BOOL";
	case SK_SET_PATH: return "PATH";
	case SK_SET_ADDR: return "ADDR";
	case SK_SET_LEVEL: return "LEVEL";
	case SK_SET_LOGFMT: return "FORMAT";
	}
	return "VALUE";
}

/* What a value must be, as error messages and the docs say it. */
static void expected(const struct sk_setting *s, char *buf, size_t len)
{
	switch (s->type) {
	case SK_SET_UINT:
		(void)snprintf(buf, len, "an integer in %llu..%llu", (unsigned long long)s->min, (unsigned long long)s->max);
		return;
	case SK_SET_BOOL: (void)snprintf(buf, len, "true or false (also 1/0, yes/no, on/off)"); return;
	case SK_SET_PATH: (void)snprintf(buf, len, "a path"); return;
	case SK_SET_ADDR: (void)snprintf(buf, len, "PORT, HOST:PORT or [V6]:PORT"); return;
	case SK_SET_LEVEL: (void)snprintf(buf, len, "one of error, warn, info, debug"); return;
	case SK_SET_LOGFMT: (void)snprintf(buf, len, "one of text, json"); return;
	}
	buf[0] = '\0';
}

void sk_config_usage(FILE *out, const char *prog)
{
	/* the writes below leave a failure to out's error indicator, which the caller checks (config.h) */
	char exp[80];
	(void)fprintf(out, "usage: %s --policy FILE [options]\n"
		"Every option can also be set by its environment variable; the flag wins, an empty variable\n"
		"counts as unset, a malformed value is an error (exit 2).\n", prog);
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		const struct sk_setting *s = &settings[i];
		if (!s->flag)
			continue;
		char lhs[64];
		(void)snprintf(lhs, sizeof(lhs), "--%s %s", s->flag, metavar(s));
		expected(s, exp, sizeof(exp));
		(void)fprintf(out, "  %-32s env %s\n      %s\n      (%s; default %s)\n", lhs, s->env, s->help, exp,
			s->def ? s->def : "unset");
	}
	(void)fprintf(out, "  %-32s print the version and exit\n", "--version");
	(void)fprintf(out, "  %-32s print this and exit\n", "--help");
	(void)fprintf(out, "  %-32s print the settings as a markdown table and exit\n", "--help-settings-md");
	(void)fprintf(out, "test only (environment, not for production):\n");
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++)
		if (!settings[i].flag)
			(void)fprintf(out, "  %s %s\n      %s\n", settings[i].env, metavar(&settings[i]), settings[i].help);
	(void)fprintf(out, "signals: SIGHUP reloads the policy (also on change of the file); SIGTERM/SIGINT drain and exit.\n");
}

void sk_config_settings_md(FILE *out)
{
	/* as above: the caller checks out's error indicator */
	char exp[80];
	(void)fprintf(out, "| flag | environment | accepts | default | meaning |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		const struct sk_setting *s = &settings[i];
		expected(s, exp, sizeof(exp));
		if (s->type == SK_SET_UINT)
			(void)snprintf(exp, sizeof(exp), "%llu..%llu", (unsigned long long)s->min, (unsigned long long)s->max);
		else if (s->type == SK_SET_BOOL)
			(void)snprintf(exp, sizeof(exp), "true, false");
		else if (s->type == SK_SET_LEVEL)
			(void)snprintf(exp, sizeof(exp), "error, warn, info, debug");
		else if (s->type == SK_SET_LOGFMT)
			(void)snprintf(exp, sizeof(exp), "text, json");
		else if (s->type == SK_SET_ADDR)
			(void)snprintf(exp, sizeof(exp), "address");
		(void)fprintf(out, "| %s%s%s | `%s` | %s | %s%s%s | %s |\n", s->flag ? "`--" : "(test only)",
			s->flag ? s->flag : "", s->flag ? "`" : "", s->env, exp, s->def ? "`" : "",
			s->def ? s->def : "unset", s->def ? "`" : "", s->help);
	}
}

/* Points *slot at value: a static default as is (copy false), anything else as the config's own copy. */
static int set_string(struct sk_config *cfg, const char **slot, const char *value, bool copy, const char *what,
		      struct sk_err *err)
{
	if (!copy) {
		*slot = value;
		return 0;
	}
	size_t k, free_k = SK_CONFIG_MAX_STRINGS;
	for (k = 0; k < SK_CONFIG_MAX_STRINGS; k++) {
		if (cfg->owned[k] && cfg->owned[k] == *slot)
			break;  /* replace our previous copy (a flag after its variable) */
		if (!cfg->owned[k] && free_k == SK_CONFIG_MAX_STRINGS)
			free_k = k;
	}
	if (k == SK_CONFIG_MAX_STRINGS)
		k = free_k;
	if (k == SK_CONFIG_MAX_STRINGS)
		return sk_err_set(err, ENOMEM, "%s: too many string settings", what);
	char *c = strdup(value);
	if (!c)
		return sk_err_set(err, ENOMEM, "%s: out of memory", what);
	free(cfg->owned[k]);
	cfg->owned[k] = c;
	*slot = c;
	return 0;
}

static int parse_uint(const struct sk_setting *s, const char *value, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || errno || *end || v < s->min || v > s->max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_bool(const char *value, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" }, *const no[] = { "false", "0", "no", "off" };
	for (size_t i = 0; i < SK_ARRAY_SIZE(yes); i++) {
		if (strcmp(value, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(value, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Applies one setting; `what` names its source for messages ("--policy", "STOCKADE_POLICY"). */
static int apply(struct sk_config *cfg, const struct sk_setting *s, const char *value, bool copy,
		 const char *what, struct sk_err *err)
{
	char *field = (char *)cfg + s->off;
	char exp[80];
	expected(s, exp, sizeof(exp));
	if (value[0] == '\0')
		return sk_err_set(err, EINVAL, "%s: empty value (expected %s)", what, exp);
	switch (s->type) {
	case SK_SET_UINT: {
		uint64_t v;
		if (parse_uint(s, value, &v) < 0)
			return sk_err_set(err, EINVAL, "%s: '%s' is not %s", what, value, exp);
		if (s->size == sizeof(uint64_t)) {
			memcpy(field, &v, sizeof(v));
		} else {
			uint32_t u = (uint32_t)v;  /* the table test checks max fits the field (and an int) */
			memcpy(field, &u, sizeof(u));
		}
		return 0;
	}
	case SK_SET_BOOL: {
		bool b;
		if (parse_bool(value, &b) < 0)
			return sk_err_set(err, EINVAL, "%s: '%s' is not %s", what, value, exp);
		memcpy(field, &b, sizeof(b));
		return 0;
	}
	case SK_SET_LEVEL: {
		enum sk_log_level l;
		if (!sk_log_level_parse(value, &l))
			return sk_err_set(err, EINVAL, "%s: '%s' is not %s", what, value, exp);
		memcpy(field, &l, sizeof(l));
		return 0;
	}
	case SK_SET_LOGFMT: {
		enum sk_log_format f;
		if (!sk_log_format_parse(value, &f))
			return sk_err_set(err, EINVAL, "%s: '%s' is not %s", what, value, exp);
		memcpy(field, &f, sizeof(f));
		return 0;
	}
	case SK_SET_ADDR: {
		struct sockaddr_storage ss;
		socklen_t len;
		if (sk_config_admin_sockaddr(value, 1, &ss, &len, err) < 0)
			return sk_err_prefix(err, "%s", what);
		break;
	}
	case SK_SET_PATH:
		break;
	}
	const char *slot_val;
	memcpy(&slot_val, field, sizeof(slot_val));
	int r = set_string(cfg, &slot_val, value, copy, what, err);
	if (r == 0)
		memcpy(field, &slot_val, sizeof(slot_val));
	return r;
}

void sk_config_free(struct sk_config *cfg)
{
	for (size_t k = 0; k < SK_CONFIG_MAX_STRINGS; k++)
		free(cfg->owned[k]);
	memset(cfg, 0, sizeof(*cfg));
}

void sk_config_defaults(struct sk_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		struct sk_err e = { 0 };
		if (settings[i].def)
			(void)apply(cfg, &settings[i], settings[i].def, false, settings[i].env, &e);  /* valid: config_test */
	}
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

static const char *env_get(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

int sk_config_parse(int argc, char *const argv[], char *const envp[], struct sk_config *cfg, struct sk_err *err)
{
	int r = 0;
	sk_config_defaults(cfg);

	/* Environment first, so flags applied after it win. An empty variable counts as unset: Kubernetes
	 * renders optional values as "" and that must not be an error. */
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		const char *v = env_get(envp, settings[i].env);
		if (v && *v && (r = apply(cfg, &settings[i], v, true, settings[i].env, err)) < 0)
			goto fail;
	}

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cfg->help = true;
			continue;
		}
		if (strcmp(a, "--help-settings-md") == 0) {
			cfg->help_settings_md = true;
			continue;
		}
		if (strcmp(a, "--version") == 0) {
			cfg->version = true;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			r = sk_err_set(err, EINVAL, "unexpected argument '%s' (see --help)", a);
			goto fail;
		}
		const char *name = a + 2, *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		size_t k;
		for (k = 0; k < SK_ARRAY_SIZE(settings); k++)
			if (settings[k].flag && strlen(settings[k].flag) == nlen &&
			    strncmp(settings[k].flag, name, nlen) == 0)
				break;
		if (k == SK_ARRAY_SIZE(settings)) {
			r = sk_err_set(err, EINVAL, "unknown flag '--%.*s' (see --help)", (int)nlen, name);
			goto fail;
		}
		const char *value = eq ? eq + 1 : NULL;
		if (!value && settings[k].type == SK_SET_BOOL) {
			value = "true";   /* a bare boolean flag; it never takes the next argument */
		} else if (!value) {
			if (i + 1 >= argc) {
				r = sk_err_set(err, EINVAL, "--%s: missing value", settings[k].flag);
				goto fail;
			}
			value = argv[++i];
		}
		char what[64];
		(void)snprintf(what, sizeof(what), "--%s", settings[k].flag);
		if ((r = apply(cfg, &settings[k], value, true, what, err)) < 0)
			goto fail;
	}

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

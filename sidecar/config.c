/* sidecar/config.c — see config.h. */
#include "sidecar/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };

const char *sk_log_level_name(enum sk_log_level l)
{
	return (unsigned)l < 4 ? level_names[l] : "?";
}

void sk_config_usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s --policy FILE [options]\n"
		"  --policy FILE       policy file (YAML or JSON)              env STOCKADE_POLICY\n"
		"  --marker PATH       stockade-init's marker file             env STOCKADE_MARKER (default %s)\n"
		"  --log-level LEVEL   error|warn|info|debug (default info)    env STOCKADE_LOG_LEVEL\n"
		"  --admin-addr ADDR   admin listener: PORT, HOST:PORT, [V6]:PORT (default all interfaces,\n"
		"                      the policy's admin port)                env STOCKADE_ADMIN_ADDR\n"
		"  --version           print the version and exit\n"
		"  --help              print this and exit\n"
		"environment only:\n"
		"  STOCKADE_DRAIN_SECONDS  grace period for open connections on SIGTERM (default %u)\n"
		"signals: SIGHUP reloads the policy (also on change of the file); SIGTERM/SIGINT drain and exit.\n",
		prog, SK_DEFAULT_MARKER, SK_DEFAULT_DRAIN_SECONDS);
}

void sk_config_free(struct sk_config *cfg)
{
	free(cfg->policy_path);
	free(cfg->marker_path);
	free(cfg->admin_addr);
	free(cfg->test_block_file);
	memset(cfg, 0, sizeof(*cfg));
}

static const char *env_get(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

static int set_string(char **slot, const char *value, const char *what, struct sk_err *err)
{
	if (value[0] == '\0')
		return sk_err_set(err, EINVAL, "%s: empty value", what);
	char *c = strdup(value);
	if (!c)
		return sk_err_set(err, ENOMEM, "%s: out of memory", what);
	free(*slot);
	*slot = c;
	return 0;
}

static int set_level(enum sk_log_level *slot, const char *value, const char *what, struct sk_err *err)
{
	for (unsigned i = 0; i < SK_ARRAY_SIZE(level_names); i++) {
		if (strcmp(value, level_names[i]) == 0) {
			*slot = (enum sk_log_level)i;
			return 0;
		}
	}
	return sk_err_set(err, EINVAL, "%s: '%s' is not one of error, warn, info, debug", what, value);
}

static int set_drain(unsigned *slot, const char *value, const char *what, struct sk_err *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || errno || *end || v > 3600)
		return sk_err_set(err, EINVAL, "%s: '%s' is not a number of seconds in 0..3600", what, value);
	*slot = (unsigned)v;
	return 0;
}

/* Applies one named setting; `what` names its source for messages ("--policy", "STOCKADE_POLICY"). */
static int apply(struct sk_config *cfg, const char *key, const char *value, const char *what, struct sk_err *err)
{
	if (strcmp(key, "policy") == 0)
		return set_string(&cfg->policy_path, value, what, err);
	if (strcmp(key, "marker") == 0)
		return set_string(&cfg->marker_path, value, what, err);
	if (strcmp(key, "log-level") == 0)
		return set_level(&cfg->log_level, value, what, err);
	if (strcmp(key, "admin-addr") == 0) {
		struct sockaddr_storage ss;
		socklen_t len;
		int r = sk_config_admin_sockaddr(value, 1, &ss, &len, err);
		if (r < 0)
			return sk_err_prefix(err, "%s", what);
		return set_string(&cfg->admin_addr, value, what, err);
	}
	if (strcmp(key, "test-block-file") == 0)
		return set_string(&cfg->test_block_file, value, what, err);
	if (strcmp(key, "drain-seconds") == 0)
		return set_drain(&cfg->drain_seconds, value, what, err);
	return sk_err_set(err, EINVAL, "%s: unknown setting", what);
}

static const struct {
	const char *key, *env;
	bool flag;  /* also settable as --key */
} settings[] = {
	{ "policy", "STOCKADE_POLICY", true },
	{ "marker", "STOCKADE_MARKER", true },
	{ "log-level", "STOCKADE_LOG_LEVEL", true },
	{ "admin-addr", "STOCKADE_ADMIN_ADDR", true },
	{ "drain-seconds", "STOCKADE_DRAIN_SECONDS", false },
	{ "test-block-file", "STOCKADE_TEST_BLOCK_FILE", false },
};

int sk_config_parse(int argc, char *const argv[], char *const envp[], struct sk_config *cfg, struct sk_err *err)
{
	int r = 0;
	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = SK_LOG_INFO;
	cfg->drain_seconds = SK_DEFAULT_DRAIN_SECONDS;

	/* Environment first, so flags applied after it win. An empty variable counts as unset: Kubernetes
	 * renders optional values as "" and that must not be an error. */
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		const char *v = env_get(envp, settings[i].env);
		if (v && *v && (r = apply(cfg, settings[i].key, v, settings[i].env, err)) < 0)
			goto fail;
	}

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cfg->help = true;
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
			if (settings[k].flag && strlen(settings[k].key) == nlen && strncmp(settings[k].key, name, nlen) == 0)
				break;
		if (k == SK_ARRAY_SIZE(settings)) {
			r = sk_err_set(err, EINVAL, "unknown flag '--%.*s' (see --help)", (int)nlen, name);
			goto fail;
		}
		const char *value = eq ? eq + 1 : NULL;
		if (!value) {
			if (i + 1 >= argc) {
				r = sk_err_set(err, EINVAL, "--%s: missing value", settings[k].key);
				goto fail;
			}
			value = argv[++i];
		}
		char what[64];
		snprintf(what, sizeof(what), "--%s", settings[k].key);
		if ((r = apply(cfg, settings[k].key, value, what, err)) < 0)
			goto fail;
	}

	if (cfg->help || cfg->version)
		return 0;
	if (!cfg->policy_path) {
		r = sk_err_set(err, EINVAL, "--policy FILE (or STOCKADE_POLICY) is required");
		goto fail;
	}
	if (!cfg->marker_path && (r = set_string(&cfg->marker_path, SK_DEFAULT_MARKER, "marker", err)) < 0)
		goto fail;
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

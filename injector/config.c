/* injector/config.c — see config.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/settings.h"
#include "common/util.h"
#include "injector/config.h"
#include "policy/domain.h"
#include "policy/seccomp/name.h"

/* The injector's own kinds: all text, checked, put into the pod as given. */
static int check_token(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
static int check_pull(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
static int check_slevel(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
static int check_names(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
static int check_profile(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
static int check_pairs(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
static int check_envpairs(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);

/* printable ASCII, no spaces: goes into the pod as it is (image, ConfigMap) */
static const struct sk_setting_kind token = { "NAME", "printable ASCII, no spaces", NULL, NULL, check_token };
static const struct sk_setting_kind pull = { "POLICY", "Always, IfNotPresent or Never", NULL, NULL, check_pull };
/* the sidecar's --log-level, kept as text */
static const struct sk_setting_kind slevel = { "LEVEL", "one of error, warn, info, debug", NULL, NULL, check_slevel };
/* comma-separated namespace names */
static const struct sk_setting_kind names = { "NS,...", "namespace names, comma-separated", NULL, NULL,
					      check_names };
/* a seccomp profile name of the installer's shape, stockade-<16 hex>.json */
static const struct sk_setting_kind profile = { "NAME", "stockade-<16 hex>.json", NULL, NULL, check_profile };
/* space-separated NAME=VALUE: NAME a DNS label, VALUE printable ASCII (a label if min is 1) */
static const struct sk_setting_kind pairs = { "N=V ...", "space-separated NAME=VALUE", NULL, NULL, check_pairs };
/* space-separated NAME=PLACEHOLDER: an environment variable and a credential placeholder (sk_inject_opts_check
 * checks both shapes) */
static const struct sk_setting_kind envpairs = { "N=P ...", "space-separated NAME=PLACEHOLDER", NULL, NULL,
						 check_envpairs };

#define F(field) offsetof(struct sk_injector_config, field), sizeof(((struct sk_injector_config *)0)->field)

/* Order is --help's. */
static const struct sk_setting settings[] = {
	{ "listen", "STOCKADE_LISTEN", SK_SET_PATH, 0, 0, "8443", "address to serve HTTPS on: PORT, HOST:PORT, [V6]:PORT",
	  F(listen), false },
	{ "tls-cert", "STOCKADE_TLS_CERT", SK_SET_PATH, 0, 0, NULL, "serving certificate chain (PEM); required",
	  F(tls_cert), false },
	{ "tls-key", "STOCKADE_TLS_KEY", SK_SET_PATH, 0, 0, NULL, "its private key (PEM); required", F(tls_key), false },
	{ "cert-check-ms", "STOCKADE_CERT_CHECK_MS", SK_SET_UINT, 100, 3600000, "1000",
	  "how often the two files are checked for a change (rotation without restart)", F(reload_ms), false },
	{ "threads", "STOCKADE_THREADS", SK_SET_UINT, 1, 256, "4", "connections served at once", F(threads), false },
	{ "max-queue", "STOCKADE_MAX_QUEUE", SK_SET_UINT, 1, 65536, "64",
	  "accepted connections waiting for a thread; more are closed at once", F(max_queue), false },
	{ "request-timeout-ms", "STOCKADE_REQUEST_TIMEOUT_MS", SK_SET_UINT, 100, 600000, "10000",
	  "the TLS handshake and each request, head and body, must arrive within this", F(request_timeout_ms), false },
	{ "idle-timeout-ms", "STOCKADE_IDLE_TIMEOUT_MS", SK_SET_UINT, 0, 600000, "5000",
	  "a kept-alive connection waits this long for its next request (0: one request a connection)",
	  F(idle_timeout_ms), false },
	{ "max-body-bytes", "STOCKADE_MAX_BODY_BYTES", SK_SET_UINT, 1024, 64u << 20, "4194304",
	  "largest AdmissionReview accepted (413 beyond)", F(max_body), false },
	{ "max-requests-per-conn", "STOCKADE_MAX_REQUESTS_PER_CONN", SK_SET_UINT, 1, 1000000, "1000",
	  "requests served on one connection before it is closed", F(max_requests), false },
	{ "log-level", "STOCKADE_LOG_LEVEL", SK_SET_LEVEL, 0, 0, "info", "error, warn, info or debug", F(log_level), false },
	{ "log-format", "STOCKADE_LOG_FORMAT", SK_SET_LOGFMT, 0, 0, "text", "text or json", F(log_format), false },
	{ "exclude-namespaces", "STOCKADE_EXCLUDE_NAMESPACES", &names, 0, 0, "kube-system",
	  "namespaces whose pods are never wrapped, comma-separated (the chart adds its own)", F(exclude_list), false },
	{ "guardrails", "STOCKADE_GUARDRAILS", SK_SET_PATH, 0, 0, NULL,
	  "cluster guardrails (docs/governance.md), read at start: the policy review refuses a policy that "
	  "exceeds them, naming the guardrail", F(guardrails), false },
	/* the wrap: what `stockade-policy inject` takes as options */
	{ "init-image", "STOCKADE_INIT_IMAGE", &token, 0, 0, NULL, "stockade-init image", F(inject.init_image), false },
	{ "sidecar-image", "STOCKADE_SIDECAR_IMAGE", &token, 0, 0, NULL, "stockade-sidecar image",
	  F(inject.sidecar_image), false },
	{ "pull-policy", "STOCKADE_PULL_POLICY", &pull, 0, 0, NULL,
	  "imagePullPolicy of the stockade containers: Always, IfNotPresent or Never", F(inject.pull_policy), false },
	{ "agent-uid", "STOCKADE_AGENT_UID", SK_SET_UINT, 1, UINT32_MAX - 1, NULL,
	  "UID given to agent containers that set none (the policy's agent_uid)", F(inject.agent_uid), false },
	{ "sidecar-uid", "STOCKADE_SIDECAR_UID", SK_SET_UINT, 1, UINT32_MAX - 1, NULL,
	  "the sidecar's UID (the policy's sidecar_uid); no agent container may use it", F(inject.sidecar_uid), false },
	{ "admin-port", "STOCKADE_ADMIN_PORT", SK_SET_UINT, 1, 65535, NULL, "the sidecar's admin port (the policy's)",
	  F(inject.admin_port), false },
	{ "policy-configmap", "STOCKADE_POLICY_CONFIGMAP", &token, 0, 0, NULL,
	  "ConfigMap holding policy.yaml, in the pod's namespace", F(inject.policy_configmap), false },
	{ "seccomp-profile", "STOCKADE_SECCOMP_PROFILE", &profile, 0, 0, NULL,
	  "Localhost seccomp profile of agent containers: stockade-<16 hex>.json, the name of a seccomp section "
	  "(stockade-policy seccomp --policy FILE --print-name); the default is a policy's without one, which "
	  "every stockade-system installer serves", F(inject.seccomp_profile), false },
	{ "no-seccomp", "STOCKADE_NO_SECCOMP", SK_SET_BOOL, 0, 0, "false", "RuntimeDefault instead of the Localhost profile",
	  F(no_seccomp), false },
	{ "classic-sidecar", "STOCKADE_CLASSIC_SIDECAR", SK_SET_BOOL, 0, 0, "false",
	  "sidecar in containers (Kubernetes < 1.29); pods of Jobs are then refused", F(classic), false },
	{ "startup-probe", "STOCKADE_STARTUP_PROBE", SK_SET_BOOL, 0, 0, "false",
	  "gate the agent on a startupProbe instead of the postStart wait-ready hook", F(startup_probe), false },
	{ "sidecar-log-level", "STOCKADE_SIDECAR_LOG_LEVEL", &slevel, 0, 0, NULL, "the sidecar's --log-level",
	  F(inject.log_level), false },
	{ "ready-timeout", "STOCKADE_READY_TIMEOUT", SK_SET_UINT, 1, 3600, NULL,
	  "seconds the sidecar may take to become ready", F(inject.ready_timeout_s), false },
	{ "sidecar-first", "STOCKADE_SIDECAR_FIRST", SK_SET_BOOL, 0, 0, "false",
	  "classic sidecar first in containers, its postStart hook holding the agent (inject --sidecar-first); "
	  "pods of Jobs are then refused", F(sidecar_first), false },
	{ "init-in-sidecar", "STOCKADE_INIT_IN_SIDECAR", SK_SET_BOOL, 0, 0, "false",
	  "no init container: the native sidecar's entry is stockade-init, which applies the rules and execs the "
	  "sidecar as its UID (inject --init-in-sidecar); refused with --classic-sidecar or --sidecar-first",
	  F(init_in_sidecar), false },
	{ "cni", "STOCKADE_CNI", SK_SET_BOOL, 0, 0, "false",
	  "CNI mode (inject --cni): no NET_ADMIN container; the node's stockade-cni programs the netns from the "
	  "pod's policy ConfigMap, stockade-validate first proves it did; refused with --init-in-sidecar",
	  F(inject.cni), false },
	{ "sidecar-settings", "STOCKADE_SIDECAR_SETTINGS", &pairs, 0, 0, NULL,
	  "extra sidecar flags, space-separated NAME=VALUE, each given as --NAME=VALUE in this order (inject's "
	  "--sidecar-setting)", F(settings_list), false },
	{ "api-secrets", "STOCKADE_API_SECRETS", &pairs, 1, 0, NULL,
	  "Secrets mounted into the sidecar, space-separated NAME=SECRET, at /var/run/stockade/secrets/NAME/ "
	  "(inject's --api-secret); the Secret must be in the pod's namespace", F(secrets_list), false },
	{ "secret-env", "STOCKADE_SECRET_ENV", &envpairs, 0, 0, NULL,
	  "credential placeholders, space-separated NAME=PLACEHOLDER, given to every container of the pod's own "
	  "(inject's --secret-env); a container that sets NAME itself is refused", F(secret_env_list), false },
	{ "no-trust", "STOCKADE_NO_TRUST", SK_SET_BOOL, 0, 0, "false",
	  "no trust files: by default the sidecar writes the inspection CA's (--trust-dir) on an emptyDir the "
	  "pod's own containers mount read-only at " SK_INJECT_TRUST_DIR ", with SSL_CERT_FILE... (inject --no-trust)",
	  F(no_trust), false },
};
#undef F

static const struct sk_settings_switch switches[] = {
	{ "--help", offsetof(struct sk_injector_config, help) },
	{ "-h", offsetof(struct sk_injector_config, help) },
	{ "--version", offsetof(struct sk_injector_config, version) },
};

static const struct sk_settings table = {
	.rows = settings, .n = SK_ARRAY_SIZE(settings), .switches = switches, .n_switches = SK_ARRAY_SIZE(switches),
	.owned_off = offsetof(struct sk_injector_config, owned), .max_strings = SK_INJECTOR_MAX_STRINGS,
	.terse_empty = true,
};

void sk_injector_config_usage(FILE *out, const char *prog)
{
	struct sk_inject_opts d;
	sk_inject_opts_default(&d);
	/* a failed write sticks to out's error indicator: the caller checks it (main.c) */
	(void)fprintf(out, "usage: %s --tls-cert FILE --tls-key FILE [options]\n"
		"Serves the Kubernetes mutating admission webhook that wraps pods in stockade (POST /mutate),\n"
		"and GET /healthz, /readyz for probes, over HTTPS (TLS 1.2+).\n"
		"Every option can also be set by its environment variable; the flag wins, an empty variable\n"
		"counts as unset, a malformed value is an error (exit 2).\n", prog);
	for (size_t i = 0; i < SK_ARRAY_SIZE(settings); i++) {
		const struct sk_setting *s = &settings[i];
		char lhs[64], def[96];
		(void)snprintf(lhs, sizeof(lhs), "--%s %s", s->flag, sk_setting_metavar(s));
		if (s->def)
			(void)snprintf(def, sizeof(def), "%s", s->def);
		else if (s->off == offsetof(struct sk_injector_config, inject.init_image))
			(void)snprintf(def, sizeof(def), "%s", d.init_image);
		else if (s->off == offsetof(struct sk_injector_config, inject.sidecar_image))
			(void)snprintf(def, sizeof(def), "%s", d.sidecar_image);
		else if (s->off == offsetof(struct sk_injector_config, inject.pull_policy))
			(void)snprintf(def, sizeof(def), "%s", d.pull_policy);
		else if (s->off == offsetof(struct sk_injector_config, inject.agent_uid))
			(void)snprintf(def, sizeof(def), "%u", (unsigned)d.agent_uid);
		else if (s->off == offsetof(struct sk_injector_config, inject.sidecar_uid))
			(void)snprintf(def, sizeof(def), "%u", (unsigned)d.sidecar_uid);
		else if (s->off == offsetof(struct sk_injector_config, inject.admin_port))
			(void)snprintf(def, sizeof(def), "%u", (unsigned)d.admin_port);
		else if (s->off == offsetof(struct sk_injector_config, inject.policy_configmap))
			(void)snprintf(def, sizeof(def), "%s", d.policy_configmap);
		else if (s->off == offsetof(struct sk_injector_config, inject.seccomp_profile))
			(void)snprintf(def, sizeof(def), "%s", d.seccomp_profile);
		else if (s->off == offsetof(struct sk_injector_config, inject.log_level))
			(void)snprintf(def, sizeof(def), "%s", d.log_level);
		else if (s->off == offsetof(struct sk_injector_config, inject.ready_timeout_s))
			(void)snprintf(def, sizeof(def), "%u", d.ready_timeout_s);
		else
			(void)snprintf(def, sizeof(def), "unset");
		(void)fprintf(out, "  %-34s env %s\n      %s (default %s)\n", lhs, s->env, s->help, def);
	}
	(void)fprintf(out, "  %-34s print the version and exit\n  %-34s print this and exit\n", "--version", "--help");
	(void)fprintf(out, "signals: SIGTERM/SIGINT stop accepting, finish the requests in flight and exit.\n");
}

void sk_injector_config_free(struct sk_injector_config *cfg)
{
	sk_settings_free(&table, cfg);
	for (size_t k = 0; k < SK_INJECTOR_MAX_EXTRA; k++)
		free(cfg->setting_flags[k]);
	memset(cfg, 0, sizeof(*cfg));
}

static bool one_of(const char *v, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v, set[i]))
			return true;
	return false;
}

static int check_token(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	(void)s;
	for (const char *p = value; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return sk_err_set(err, EINVAL, "%s: '%s': expected printable ASCII, no spaces", what, value);
	return 0;
}

static int check_pull(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	static const char *const pulls[] = { "Always", "IfNotPresent", "Never" };
	return one_of(value, pulls, SK_ARRAY_SIZE(pulls)) ? 0 : sk_setting_refuse(s, value, what, err);
}

static int check_slevel(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	static const char *const levels[] = { "error", "warn", "info", "debug" };
	return one_of(value, levels, SK_ARRAY_SIZE(levels)) ? 0 : sk_setting_refuse(s, value, what, err);
}

static int check_names(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	size_t n = 0;
	(void)s;
	for (const char *p = value;; n++) {
		size_t l = strcspn(p, ",");
		if (!sk_dns_label(p, l) || n == SK_INJECTOR_MAX_EXCLUDE)
			return sk_err_set(err, EINVAL, "%s: '%s': expected at most %d namespace names "
					  "([a-z0-9-], 1-63), comma-separated", what, value, SK_INJECTOR_MAX_EXCLUDE);
		if (!p[l])
			return 0;
		p += l + 1;
	}
}

static int check_pairs(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	size_t n = 0;
	for (const char *p = value; *p;) {
		size_t l = strcspn(p, " "), k = strcspn(p, "=");
		const char *v = p + k + 1;
		size_t vl = k < l ? l - k - 1 : 0;
		bool ok = l > 0 && k < l && sk_dns_label(p, k) && vl > 0 && n < SK_INJECTOR_MAX_EXTRA;
		for (size_t j = 0; ok && j < vl; j++)
			ok = v[j] > 0x20 && v[j] < 0x7f;
		if (ok && s->min == 1)
			ok = sk_dns_label(v, vl);
		if (!ok)
			return sk_err_set(err, EINVAL, "%s: '%s': expected at most %d space-separated NAME=%s (NAME of "
					  "[a-z0-9-], 1-63%s)", what, value, SK_INJECTOR_MAX_EXTRA,
					  s->min == 1 ? "SECRET" : "VALUE", s->min == 1 ? ", SECRET too" : "");
		n++;
		p += l;
		while (*p == ' ')
			p++;
	}
	return 0;
}

static int check_envpairs(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	size_t n = 0;
	(void)s;
	for (const char *p = value; *p;) {
		size_t l = strcspn(p, " "), k = strcspn(p, "=");
		if (!l || k >= l - 1 || n == SK_INJECTOR_MAX_EXTRA)
			return sk_err_set(err, EINVAL, "%s: '%s': expected at most %d space-separated NAME=PLACEHOLDER",
					  what, value, SK_INJECTOR_MAX_EXTRA);
		n++;
		p += l;
		while (*p == ' ')
			p++;
	}
	return 0;
}

static int check_profile(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	(void)s;
	/* Only the installer's names: it serves nothing else, so another name leaves every wrapped pod
	 * unable to start (or, were the file there by other means, unconfined by what stockade checks). */
	if (!sk_seccomp_is_profile_name(value))
		return sk_err_set(err, EINVAL, "%s: '%s': expected stockade-<16 hex>.json, a profile the "
				  "stockade-system installer serves (stockade-policy seccomp --policy FILE "
				  "--print-name)", what, value);
	return 0;
}

/* The list setting split into cfg->exclude (pointing into the owned copy, which is split in place). */
static void split_exclude(struct sk_injector_config *cfg)
{
	char *s = NULL;
	for (size_t k = 0; k < SK_INJECTOR_MAX_STRINGS; k++)
		if (cfg->owned[k] && cfg->owned[k] == cfg->exclude_list)
			s = cfg->owned[k];
	if (!s) {
		/* the static default: kube-system alone */
		cfg->exclude[0] = "kube-system";
		cfg->n_exclude = 1;
		return;
	}
	cfg->n_exclude = 0;
	for (char *tok = s, *comma; tok && cfg->n_exclude < SK_INJECTOR_MAX_EXCLUDE; tok = comma) {
		comma = strchr(tok, ',');
		if (comma)
			*comma++ = '\0';
		cfg->exclude[cfg->n_exclude++] = tok;
	}
	cfg->exclude_list = NULL;  /* now split: the array is the setting */
}

/* The two NAME=VALUE lists into inject's arrays (validated by apply: well-formed, at most the maximum). The
 * secrets point into the owned copy of their list, split in place; the settings are owned "--N=V" copies. */
static int split_pairs(struct sk_injector_config *cfg, struct sk_err *err)
{
	size_t n = 0;
	for (const char *p = cfg->settings_list ? cfg->settings_list : ""; *p;) {
		size_t l = strcspn(p, " ");
		if (asprintf(&cfg->setting_flags[n], "--%.*s", (int)l, p) < 0) {
			cfg->setting_flags[n] = NULL;
			return sk_err_set(err, ENOMEM, "--sidecar-settings: out of memory");
		}
		n++;
		p += l;
		while (*p == ' ')
			p++;
	}
	sk_inject_sort_settings((const char **)cfg->setting_flags, n);
	cfg->inject.settings = (const char *const *)cfg->setting_flags;
	cfg->inject.n_settings = n;
	char *s = NULL;
	for (size_t k = 0; k < SK_INJECTOR_MAX_STRINGS; k++)
		if (cfg->owned[k] && cfg->owned[k] == cfg->secrets_list)
			s = cfg->owned[k];
	n = 0;
	for (char *tok = s, *next; tok && *tok; tok = next) {
		size_t l = strcspn(tok, " ");
		next = tok + l;
		while (*next == ' ')
			*next++ = '\0';
		char *eq = strchr(tok, '=');
		*eq = '\0';
		cfg->secrets[n].name = tok;
		cfg->secrets[n].secret_name = eq + 1;
		n++;
	}
	cfg->inject.secrets = cfg->secrets;
	cfg->inject.n_secrets = n;
	cfg->secrets_list = NULL;  /* now split: the array is the setting */
	char *e = NULL;
	for (size_t k = 0; k < SK_INJECTOR_MAX_STRINGS; k++)
		if (cfg->owned[k] && cfg->owned[k] == cfg->secret_env_list)
			e = cfg->owned[k];
	n = 0;
	for (char *tok = e, *next; tok && *tok; tok = next) {
		size_t l = strcspn(tok, " ");
		next = tok + l;
		while (*next == ' ')
			*next++ = '\0';
		char *eq = strchr(tok, '=');   /* there: check_envpairs */
		*eq = '\0';
		cfg->secret_env[n].name = tok;
		cfg->secret_env[n].value = eq + 1;
		n++;
	}
	cfg->inject.secret_env = cfg->secret_env;
	cfg->inject.n_secret_env = n;
	cfg->secret_env_list = NULL;
	return 0;
}

int sk_injector_config_parse(int argc, char *const argv[], char *const envp[], struct sk_injector_config *cfg,
			     struct sk_err *err)
{
	int r;
	memset(cfg, 0, sizeof(*cfg));
	sk_inject_opts_default(&cfg->inject);
	sk_settings_defaults(&table, cfg);  /* valid: injector_config_test */
	if ((r = sk_settings_parse(&table, argc, argv, envp, cfg, err)) < 0)
		goto fail;
	split_exclude(cfg);
	if ((r = split_pairs(cfg, err)) < 0)
		goto fail;
	cfg->inject.sidecar_first = cfg->sidecar_first;
	cfg->inject.init_in_sidecar = cfg->init_in_sidecar;
	if (cfg->no_seccomp)
		cfg->inject.seccomp_profile = NULL;
	cfg->inject.native = !cfg->classic;
	cfg->inject.hold_until_ready = !cfg->startup_probe;
	cfg->inject.trust = !cfg->no_trust;
	if (cfg->help || cfg->version)
		return 0;
	if (!cfg->tls_cert || !cfg->tls_key) {
		r = sk_err_set(err, EINVAL, "--tls-cert FILE and --tls-key FILE (or STOCKADE_TLS_CERT, STOCKADE_TLS_KEY) "
			       "are required");
		goto fail;
	}
	if (cfg->inject.agent_uid == cfg->inject.sidecar_uid) {
		r = sk_err_set(err, EINVAL, "--agent-uid and --sidecar-uid must differ (both %u)",
			       (unsigned)cfg->inject.agent_uid);
		goto fail;
	}
	/* a shape no pod can take (--init-in-sidecar with a classic sidecar): refuse to start, not every pod */
	if ((r = sk_inject_opts_check(&cfg->inject, err)) < 0)
		goto fail;
	return 0;
fail:
	sk_injector_config_free(cfg);
	return r;
}

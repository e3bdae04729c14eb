/* cni/main.c — stockade-cni, the chained CNI plugin (docs/install.md "CNI mode (preview)"). The
 * runtime runs it after creating the pod's network namespace and before any container: ADD reads the pod
 * from the API server and, for a wrapped pod, loads the same table inet stockade stockade-init would
 * (init/ruleset.h, init/nft.h) into the pod's netns and reads it back; DEL removes it; CHECK compares.
 * Every failure prints the CNI error object on stdout and exits 1, so the sandbox is not created: fail
 * closed. The netns is entered on a thread of its own (setns moves only the calling thread), so nothing
 * after it can run in the pod's namespace by mistake, and nothing before it in the node's. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cni/install.h"
#include "cni/kube.h"
#include "cni/proto.h"
#include "common/curl_dl.h"
#include "common/err.h"
#include "common/log.h"
#include "common/netns_mark.h"
#include "common/settings.h"
#include "common/util.h"
#include "init/nft.h"
#include "init/ruleset.h"
#include "policy/diag.h"
#include "policy/policy.h"

#define STDIN_MAX (1u << 20)

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* The answer of a failed command: the error object on stdout (the runtime reads it), the message on
 * stderr too (the runtime's log). */
static int fail(const char *version, int code, const struct sk_err *err)
{
	char *s = sk_cni_error_json(version, code, err->msg);
	(void)fprintf(stderr, "stockade-cni: %s\n", err->msg);
	if (!s || puts(s) < 0 || fflush(stdout) != 0)
		(void)fprintf(stderr, "stockade-cni: could not write the error object\n");
	free(s);
	return SK_EXIT_FAIL;
}

static int print_owned(char *s, const char *version)
{
	if (!s) {
		struct sk_err err = { 0 };
		(void)sk_err_set(&err, ENOMEM, "out of memory");
		return fail(version, SK_CNI_E_IO, &err);
	}
	int ok = puts(s) >= 0 && fflush(stdout) == 0;
	free(s);
	return ok ? SK_EXIT_OK : SK_EXIT_RUNTIME;
}

static char *read_stdin(size_t *len, struct sk_err *err)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 >= cap) {
			if (cap >= STDIN_MAX) {
				free(buf);
				sk_err_set(err, EFBIG, "stdin: configuration larger than %u bytes", STDIN_MAX);
				return NULL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, stdin);
		n += r;
		if (r == 0) {
			if (ferror(stdin)) {
				free(buf);
				sk_err_sys(err, EIO, "read stdin");
				return NULL;
			}
			buf[n] = 0;
			*len = n;
			return buf;
		}
	}
	free(buf);
	sk_err_set(err, ENOMEM, "out of memory");
	return NULL;
}

/* What runs inside the pod's netns. */
struct netns_job {
	int fd;                        /* the netns, opened by the caller */
	enum sk_cni_cmd cmd;
	const struct sk_ruleset *rs;   /* ADD, CHECK */
	const struct sk_marker *mark;  /* ADD, CHECK: what lo's alias says (common/netns_mark.h) */
	int rc;
	struct sk_err err;
};

static void *netns_run(void *arg)
{
	struct netns_job *j = arg;
	struct sk_nft *nft = NULL;
	if (setns(j->fd, CLONE_NEWNET) < 0) {
		j->rc = sk_err_sys(&j->err, errno, "enter the pod's network namespace");
		return NULL;
	}
	j->rc = sk_nft_open(&nft, &j->err);
	if (j->rc < 0)
		return NULL;
	switch (j->cmd) {
	case SK_CNI_ADD:
		j->rc = sk_nft_apply(nft, j->rs, NULL, &j->err);
		if (j->rc == 0 && (j->rc = sk_nft_verify(nft, j->rs, &j->err)) < 0)
			(void)sk_err_prefix(&j->err, "verification after commit");
		/* the marker only after a verified load: the pod's validator trusts it */
		if (j->rc == 0)
			j->rc = sk_netns_mark_set(j->mark, &j->err);
		break;
	case SK_CNI_CHECK: {
		j->rc = sk_nft_verify(nft, j->rs, &j->err);
		if (j->rc == -ENOENT)
			(void)sk_err_set(&j->err, ENOENT, "table %s %s is missing", SK_RS_FAMILY_NAME, SK_RS_TABLE);
		struct sk_marker have;
		if (j->rc == 0 && (j->rc = sk_netns_mark_get(&have, &j->err)) == 0 &&
		    strcmp(have.hash, j->mark->hash) != 0)
			j->rc = sk_err_set(&j->err, EINVAL, "lo's marker says netns hash %s, the pod's policy %s",
					   have.hash, j->mark->hash);
		break;
	}
	default:
		j->rc = sk_nft_remove(nft, &j->err);
		if (j->rc == 0 || j->rc == -ENOENT) {
			int r = sk_netns_mark_set(NULL, &j->err);
			j->rc = r < 0 ? r : j->rc;
		}
		break;
	}
	sk_nft_close(nft);
	return NULL;
}

/* Runs cmd in the netns at path on a thread of its own: the thread that entered the namespace ends with
 * the work, and this one never leaves the node's namespace. -ENOENT when the netns is gone. */
static int in_netns(const char *path, enum sk_cni_cmd cmd, const struct sk_ruleset *rs, const struct sk_marker *mark,
		    struct sk_err *err)
{
	struct netns_job j = { .cmd = cmd, .rs = rs, .mark = mark };
	j.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (j.fd < 0)
		return sk_err_sys(err, errno, "open netns %s", path);
	pthread_t t;
	int e = pthread_create(&t, NULL, netns_run, &j);
	if (e != 0) {
		(void)close(j.fd);
		return sk_err_sys(err, e, "start the netns thread");
	}
	(void)pthread_join(t, NULL);  /* fails only for a thread not joinable: this one is */
	(void)close(j.fd);            /* read-only descriptor */
	if (j.rc < 0) {
		*err = j.err;
		return sk_err_prefix(err, "netns %s", path);
	}
	return 0;
}

/* The ruleset of a wrapped pod from its annotation, loaded as stockade-init loads a policy file. */
static int build_ruleset(const struct sk_kube_pod *pod, struct sk_ruleset **rs, struct sk_marker *mark,
			 struct sk_err *err)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *pol = NULL;
	int rc = sk_policy_load_buffer_ex(SK_KUBE_ANN_NETNS_POLICY, pod->policy, pod->policy_len, -1,
					  SK_LOAD_NO_FILE_CHECKS | SK_LOAD_NO_MATCHER | SK_LOAD_NO_CONTENT_HASH,
					  &pol, &diags);
	if (rc < 0) {
		char *text = NULL;
		size_t tl = 0;
		FILE *m = open_memstream(&text, &tl);
		if (m) {
			sk_diags_print(&diags, m);
			(void)fclose(m);  /* a memory stream; text is what it holds */
		}
		while (text && tl > 0 && text[tl - 1] == '\n')
			text[--tl] = 0;
		rc = sk_err_set(err, -rc, "annotation %s: invalid policy: %s", SK_KUBE_ANN_NETNS_POLICY,
				text && text[0] ? text : "(no diagnostic)");
		free(text);
		sk_diags_free(&diags);
		return rc;
	}
	sk_diags_free(&diags);
	rc = sk_ruleset_build(pol, rs, err);
	if (rc == 0) {
		sk_policy_netns_hash(pol, mark->hash);
		mark->rules = (unsigned)(*rs)->n_rules;
		mark->sets = SK_RS_N_SETS;
		mark->elements = (unsigned)sk_ruleset_n_elems(*rs);
	}
	sk_policy_free(pol);
	return rc;
}

static int code_of(int rc)
{
	switch (-rc) {
	case EAGAIN: return SK_CNI_E_RETRY;
	case ENOENT: return SK_CNI_E_UNKNOWN;
	case EINVAL: return SK_CNI_E_CONFIG;
	default: return SK_CNI_E_IO;
	}
}

/* ADD and CHECK: the pod's decision, then the netns work for a wrapped pod. */
static int add_or_check(const struct sk_cni_conf *conf, const struct sk_cni_env *env, int *code, struct sk_err *err)
{
	*code = SK_CNI_E_CONFIG;
	if (!conf->kubeconfig)
		return sk_err_set(err, EINVAL, "network configuration: kubeconfig is missing");
	*code = SK_CNI_E_ENV;
	if (!env->pod_ns[0] || !env->pod_name[0])
		return sk_err_set(err, EINVAL, "CNI_ARGS: K8S_POD_NAMESPACE and K8S_POD_NAME are required");
	/* stockade's own pods (the injector, this plugin's DaemonSet) are never wrapped, and must start even
	 * when the API server is not answering */
	if (strcmp(env->pod_ns, conf->system_ns) == 0)
		return 0;
	struct sk_kubeconfig kc;
	struct sk_curl cu = { 0 };
	struct sk_kube_pod pod = { 0 };
	struct sk_ruleset *rs = NULL;
	char *body = NULL;
	size_t len = 0;
	int rc = sk_kubeconfig_load(conf->kubeconfig, &kc, err);
	if (rc < 0) {
		*code = SK_CNI_E_CONFIG;
		return rc;
	}
	rc = sk_kube_get_pod(&cu, &kc, env->pod_ns, env->pod_name, &body, &len, err);
	if (rc < 0) {
		sk_kubeconfig_free(&kc);
		*code = code_of(rc);
		return rc;
	}
	*code = SK_CNI_E_DECODE;
	rc = sk_kube_pod_decide(body, len, env->pod_uid, &pod, err);
	free(body);
	body = NULL;
	if (rc < 0 || pod.kind != SK_KUBE_POD_WRAPPED)
		goto out;
	if (!pod.policy) {
		/* the injector's pods: the policy ConfigMap their volume mounts */
		if ((rc = sk_kube_get_configmap(&cu, &kc, env->pod_ns, pod.policy_configmap, &body, &len, err)) < 0) {
			*code = code_of(rc);
			goto out;
		}
		rc = sk_kube_configmap_policy(body, len, &pod, err);
		free(body);
		if (rc < 0)
			goto out;
	}
	*code = SK_CNI_E_CONFIG;
	struct sk_marker mark = { 0 };
	if ((rc = build_ruleset(&pod, &rs, &mark, err)) < 0)
		goto out;
	*code = SK_CNI_E_IO;
	rc = in_netns(env->netns, env->cmd, rs, &mark, err);
	if (rc == 0 && rs && env->cmd == SK_CNI_ADD)
		(void)fprintf(stderr, "stockade-cni: pod %s/%s: loaded and verified table %s %s: %zu rules\n",
			      env->pod_ns, env->pod_name, SK_RS_FAMILY_NAME, SK_RS_TABLE, rs->n_rules);
out:
	sk_kubeconfig_free(&kc);
	sk_ruleset_free(rs);
	sk_kube_pod_free(&pod);
	return rc;
}

/* `stockade-cni install`: the settings of the DaemonSet's container, flags only (the chart writes them). */
struct install_cfg {
	const char *host_root, *conf_dir, *bin_dir, *binary, *kubeconfig, *server, *ca_file, *token_file, *system_ns;
	uint32_t refresh_s;
	bool once, uninstall, help;
	char *owned[9];
};

#define F(field) offsetof(struct install_cfg, field), sizeof(((struct install_cfg *)0)->field)
static const struct sk_setting install_rows[] = {
	{ "host-root", NULL, SK_SET_PATH, 0, 0, "/host", "where the node's / is mounted", F(host_root), false },
	{ "conf-dir", NULL, SK_SET_PATH, 0, 0, "/etc/cni/net.d", "the node's CNI configuration directory", F(conf_dir), false },
	{ "bin-dir", NULL, SK_SET_PATH, 0, 0, "/opt/cni/bin", "the node's CNI bin directory", F(bin_dir), false },
	{ "binary", NULL, SK_SET_PATH, 0, 0, "/proc/self/exe", "the plugin to copy there", F(binary), false },
	{ "kubeconfig", NULL, SK_SET_PATH, 0, 0, "/var/lib/stockade/cni.kubeconfig",
	  "the plugin's kubeconfig on the node (mode 0600, outside the configuration directory)", F(kubeconfig), false },
	{ "server", NULL, SK_SET_PATH, 0, 0, NULL,
	  "API server URL (default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)", F(server), false },
	{ "ca-file", NULL, SK_SET_PATH, 0, 0, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
	  "the API server's CA", F(ca_file), false },
	{ "token-file", NULL, SK_SET_PATH, 0, 0, "/var/run/secrets/kubernetes.io/serviceaccount/token",
	  "the service account token the plugin uses", F(token_file), false },
	{ "system-namespace", NULL, SK_SET_PATH, 0, 0, NULL, "stockade's namespace (the entry's systemNamespace)",
	  F(system_ns), false },
	{ "refresh-seconds", NULL, SK_SET_UINT, 1, 86400, "60", "seconds between two token and binary checks",
	  F(refresh_s), false },
	{ "once", NULL, SK_SET_BOOL, 0, 0, NULL, "install and exit (no watch loop)", F(once), false },
	{ "uninstall", NULL, SK_SET_BOOL, 0, 0, NULL,
	  "with --once: remove the entry and exit; in the loop: remove it on SIGTERM", F(uninstall), false },
};
#undef F

static const struct sk_settings_switch install_switches[] = {
	{ "--help", offsetof(struct install_cfg, help) },
	{ "-h", offsetof(struct install_cfg, help) },
};

static const struct sk_settings install_table = {
	.rows = install_rows, .n = SK_ARRAY_SIZE(install_rows), .switches = install_switches,
	.n_switches = SK_ARRAY_SIZE(install_switches), .owned_off = offsetof(struct install_cfg, owned),
	.max_strings = SK_ARRAY_SIZE(((struct install_cfg *)0)->owned),
};

static void install_cfg_free(struct install_cfg *c) { sk_settings_free(&install_table, c); }

static int install_main(int argc, char **argv)
{
	__attribute__((cleanup(install_cfg_free))) struct install_cfg cfg = { 0 };
	struct sk_err err = { 0 };
	sk_log_init("stockade-cni install", SK_LOG_INFO);
	sk_settings_defaults(&install_table, &cfg);
	if (sk_settings_parse(&install_table, argc, argv, NULL, &cfg, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		return SK_EXIT_USAGE;
	}
	if (cfg.help) {
		(void)printf("usage: stockade-cni install [--once] [--uninstall] [OPTION...]\n");
		for (size_t i = 0; i < SK_ARRAY_SIZE(install_rows); i++)
			(void)printf("  --%-18s %s%s%s\n", install_rows[i].flag, install_rows[i].help,
				     install_rows[i].def ? "; default " : "", install_rows[i].def ? install_rows[i].def : "");
		return fflush(stdout) == 0 ? SK_EXIT_OK : SK_EXIT_RUNTIME;
	}
	sk_autofree char *server = NULL;
	if (!cfg.server) {
		const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
		if (!h || !*h || !p || !*p) {
			sk_log(SK_LOG_ERROR, "--server is not set and KUBERNETES_SERVICE_HOST/PORT are not either");
			return SK_EXIT_USAGE;
		}
		if (asprintf(&server, strchr(h, ':') ? "https://[%s]:%s" : "https://%s:%s", h, p) < 0)
			return SK_EXIT_RUNTIME;
	}
	struct sk_cni_install o = {
		.host_root = cfg.host_root, .conf_dir = cfg.conf_dir, .bin_dir = cfg.bin_dir, .binary = cfg.binary,
		.kubeconfig = cfg.kubeconfig, .server = cfg.server ? cfg.server : server, .ca_file = cfg.ca_file,
		.token_file = cfg.token_file, .system_ns = cfg.system_ns,
	};
	if (cfg.once) {
		bool ch = false;
		int rc = cfg.uninstall ? sk_cni_install_conf(&o, true, &ch, &err) : sk_cni_install_all(&o, &err);
		if (rc < 0) {
			sk_log(SK_LOG_ERROR, "%s", err.msg);
			return SK_EXIT_FAIL;
		}
		return SK_EXIT_OK;
	}
	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sk_autoclose int sfd = -1;
	if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0 || (sfd = signalfd(-1, &ss, SFD_CLOEXEC)) < 0) {
		sk_log(SK_LOG_ERROR, "signalfd: %s", strerror(errno));
		return SK_EXIT_RUNTIME;
	}
	if (sk_cni_install_watch(&o, sfd, (int)cfg.refresh_s * 1000, cfg.uninstall, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		return SK_EXIT_FAIL;
	}
	return SK_EXIT_OK;
}

int main(int argc, char **argv)
{
	/* the runtime runs the plugin with CNI_COMMAND and no argument; the DaemonSet runs `install` */
	if (argc > 1 && strcmp(argv[1], "install") == 0)
		return install_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("stockade-cni %s\n", SK_VERSION);
		return SK_EXIT_OK;
	}
	struct sk_err err = { 0 };
	struct sk_cni_env env;
	if (sk_cni_env_parse(env_get, &env, &err) < 0)
		return fail(NULL, SK_CNI_E_ENV, &err);
	size_t len = 0;
	sk_autofree char *in = read_stdin(&len, &err);
	if (!in)
		return fail(NULL, SK_CNI_E_IO, &err);

	if (env.cmd == SK_CNI_VERSION) {
		/* stdin carries {"cniVersion": V} only: answer in V when we speak it */
		cJSON *o = cJSON_ParseWithLength(in, len);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "cniVersion");
		const char *ver = cJSON_IsString(v) && sk_cni_version_supported(v->valuestring) ? v->valuestring
											  : SK_CNI_DEFAULT_VERSION;
		int ex = print_owned(sk_cni_version_json(ver), ver);
		cJSON_Delete(o);
		return ex;
	}

	struct sk_cni_conf conf;
	int rc = sk_cni_conf_parse(in, len, &conf, &err);
	if (rc < 0)
		return fail(NULL, rc == -EPROTO ? SK_CNI_E_VERSION : SK_CNI_E_CONFIG, &err);
	int ex = SK_EXIT_OK, code = SK_CNI_E_IO;
	switch (env.cmd) {
	case SK_CNI_ADD:
	case SK_CNI_CHECK:
		if (add_or_check(&conf, &env, &code, &err) < 0)
			ex = fail(conf.version, code, &err);
		else if (env.cmd == SK_CNI_ADD)
			ex = print_owned(sk_cni_result(&conf), conf.version);
		break;
	case SK_CNI_DEL:
		/* the netns gone (or never given) leaves nothing to remove: DEL succeeds, as often as asked */
		if (env.netns && access(env.netns, F_OK) == 0 && in_netns(env.netns, SK_CNI_DEL, NULL, NULL, &err) < 0 &&
		    err.code != ENOENT)
			ex = fail(conf.version, SK_CNI_E_IO, &err);
		break;
	case SK_CNI_STATUS: {
		struct sk_kubeconfig kc;
		if (!conf.kubeconfig) {
			(void)sk_err_set(&err, EINVAL, "network configuration: kubeconfig is missing");
			ex = fail(conf.version, SK_CNI_E_UNAVAILABLE, &err);
		} else if (sk_kubeconfig_load(conf.kubeconfig, &kc, &err) < 0) {
			ex = fail(conf.version, SK_CNI_E_UNAVAILABLE, &err);
		} else {
			sk_kubeconfig_free(&kc);
		}
		break;
	}
	case SK_CNI_GC:      /* nothing outlives a netns: its table goes with it */
	case SK_CNI_VERSION: /* answered above */
		break;
	}
	sk_cni_conf_free(&conf);
	return ex;
}

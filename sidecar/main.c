/* sidecar/main.c — stockade-sidecar: builds the struct sk_sidecar, starts its servers on one loop (each
 * registered with the sidecar, which owns them: sidecar.c), runs it, and turns errors into exit codes. Every setting (flag or STOCKADE_* variable) is parsed by config.c;
 * the servers get theirs through struct sk_sidecar. Audit lines go to stdout, log lines (common/log.h, at
 * --log-level) to stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "policy/guardrails.h"
#include "policy/policy.h"
#include "sidecar/admin/admin.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/config.h"
#include "sidecar/core/denials.h"
#include "sidecar/gateway/gateway.h"
#include "sidecar/dns/server.h"
#include "sidecar/dns/upstream.h"  /* the upstreams as text for the readiness reason */
#include "sidecar/admin/lifecycle.h"
#include "sidecar/core/loop.h"
#include "sidecar/core/metrics.h"
#include "sidecar/proxy/proxy.h"
#include "sidecar/core/reload.h"  /* sk_reload_log_diags */
#include "sidecar/core/sidecar.h"
#include "sidecar/admin/validate.h"  /* the validate subcommand (CNI mode's first init container) */
#include "sidecar/admin/wait_ready.h"  /* the wait-ready subcommand (postStart hook) */
#include "sidecar/inspect/bridge.h"
#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/trust.h"
#include "sidecar/inspect/leaf.h"
#include "sidecar/inspect/upstream.h"

extern char **environ;

struct run {
	struct sk_sidecar *sc;
	const struct sk_config *cfg;
	struct sk_io sig;
	struct sk_timer drain;
	bool draining;
	struct sk_lifecycle *lc;  /* admin port, heartbeat, policy watcher (lifecycle.h); owned by sc */
};

/* Every connection needs 2 sockets (+2 pipes while bytes are in flight); the default soft limit of 1024
 * would cap the proxy at a few hundred connections. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int load_policy(const char *path, struct sk_policy **out)
{
	struct sk_diags diags = { 0 };
	int rc = sk_policy_load_file(path, -1, out, &diags);
	if (rc < 0) {
		sk_log(SK_LOG_ERROR, "policy %s rejected:", path);
		if (sk_log_enabled(SK_LOG_ERROR))
			sk_reload_log_diags(&diags, NULL);
	}
	sk_diags_free(&diags);
	return rc;
}

static void drain_tick(struct sk_loop *l, struct sk_timer *t)
{
	struct run *r = t->ctx;
	(void)r;
	sk_loop_stop(l);
}

static void on_signal(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)events;
	struct run *r = io->ctx;
	struct signalfd_siginfo si;
	while (read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			/* the one reload path, shared with the file watcher (reload.c: same checks and logs) */
			(void)sk_lifecycle_reload(r->lc, "SIGHUP");
		} else if (!r->draining) {
			/* SIGTERM/SIGINT: stop accepting, let open work finish within the grace; the admin port
			 * keeps answering, /readyz now says "draining" */
			r->draining = true;
			sk_lifecycle_set_draining(r->lc);
			char what[64];
			(void)snprintf(what, sizeof(what), "draining for up to %us", r->cfg->drain_seconds);
			sk_sidecar_log_active(r->sc, what);
			sk_sidecar_stop_accepting(r->sc);
			(void)sk_timer_arm(l, &r->drain, (uint64_t)r->cfg->drain_seconds * 1000u);
		} else {
			sk_loop_stop(l);   /* a second signal: exit now */
		}
	}
}

static int run_loop(struct run *r, struct sk_err *err)
{
	struct sk_loop *l = r->sc->loop;
	while (true) {
		int rc = sk_loop_run_once(l, r->draining ? 200 : -1, err);
		if (rc < 0)
			return rc;
		/* Done when every server's in-flight work is (an API response streaming while no proxied
		 * connection is open must not be cut), or the grace is over. */
		if (r->draining && (sk_sidecar_active(r->sc) == 0 || !sk_timer_armed(&r->drain)))
			return 0;
	}
}

/* sc->dns_upstreams: the policy's upstreams as the DNS server will resolve them, as text for the
 * readiness reason ("dns_upstream unreachable 10.96.0.10:53"). Left "" when they do not resolve: the
 * DNS server's start then fails with the message that matters. */
static void describe_upstreams(struct sk_sidecar *sc)
{
	struct sk_dns_upstreams ups = { 0 };
	struct sk_err err = { 0 };
	sc->dns_upstreams[0] = '\0';
	if (sk_dns_upstreams_from_policy(sc->policy, sc->dns_cfg.resolv_conf, &ups, &err) < 0)
		return;
	size_t at = 0, cap = sizeof(sc->dns_upstreams);
	for (size_t i = 0; i < ups.n && at + 1 < cap; i++) {
		char a[SK_ADDR_STRLEN];
		sk_addr_format(&ups.v[i].addr, a);
		bool v6 = ups.v[i].addr.family == AF_INET6;
		int w = snprintf(sc->dns_upstreams + at, cap - at, "%s%s%s%s:%u", i ? "," : "", v6 ? "[" : "", a,
				 v6 ? "]" : "", ups.v[i].port);
		if (w < 0)
			break;
		at += (size_t)w;   /* past cap - 1 only when cut: the loop ends */
	}
}

static void audit_flush_cb(void *ctx) { sk_audit_flush(ctx); }

/* TLS inspection's shared parts (inspect/): the pod's CA, its leaves, the verified upstream context and
 * the bridge env over them; freed after the servers. */
struct inspect {
	struct sk_ca *ca;
	struct sk_leaf_cache *leaves;
	struct sk_upstream *upstream;
	struct sk_bridge_env *env;
};

static void inspect_free(struct inspect *in)
{
	sk_bridge_env_free(in->env);
	sk_upstream_free(in->upstream);
	sk_leaf_cache_free(in->leaves);
	sk_ca_free(in->ca);
}

/* The CA (the operator's, or generated with its key in memory only), the process made non-dumpable so no
 * other UID in the pod reads that key out of /proc/PID/mem, and what every bridge shares. The server is
 * offered http/1.1 only: the HTTP/1 filter is the one that reads inspected connections so far. */
static int inspect_start(struct sk_sidecar *sc, const struct sk_config *cfg, struct inspect *in, struct sk_err *err)
{
	if (!cfg->inspect_ca_cert != !cfg->inspect_ca_key)
		return sk_err_set(err, EINVAL, "--inspect-ca-cert and --inspect-ca-key go together");
	int rc = sk_process_harden(err);
	if (rc < 0)
		return rc;
	rc = cfg->inspect_ca_cert ? sk_ca_load(cfg->inspect_ca_cert, cfg->inspect_ca_key, &in->ca, err)
				  : sk_ca_generate(NULL, &in->ca, err);
	if (rc < 0)
		return rc;
	struct sk_upstream_opts o = { .ca_file = sc->policy->tls.upstream_ca_file, .alpn = "h2,http/1.1" };
	if ((rc = sk_leaf_cache_new(in->ca, 0, &in->leaves, err)) < 0 || (rc = sk_upstream_new(&o, &in->upstream, err)) < 0 ||
	    (rc = sk_bridge_env_new(in->leaves, in->upstream, &in->env, err)) < 0)
		return rc;
	sc->inspect_env = in->env;
	sc->inspect_ca_pem = sk_ca_pem(in->ca, &sc->inspect_ca_pem_len);
	return 0;
}

/* The agent's trust files (--trust-dir) from the pod CA's certificate, written before the sidecar is ready:
 * the agent (or a workload init container) starts only after a native sidecar's postStart hook, so it
 * finds them in place. Without a CA (inspection failed to start) there is nothing to trust: none written,
 * and an inspect rule's TLS is denied anyway. A directory that cannot be written is a deployment error. */
static int trust_files_write(const struct sk_config *cfg, const struct sk_sidecar *sc, struct sk_err *err)
{
	if (!cfg->trust_dir || !sc->inspect_ca_pem)
		return 0;
	int rc = sk_trust_write(cfg->trust_dir, cfg->trust_bundle, sc->inspect_ca_pem, sc->inspect_ca_pem_len, err);
	if (rc < 0)
		return rc;
	sk_log(SK_LOG_INFO, "trust files written to %s (ca.pem, bundle.pem, truststore.p12)", cfg->trust_dir);
	return 0;
}

/* --help, --help-settings-md and --version print to stdout, leaving the error indicator to stick: a failed
 * write (a closed pipe, a full disk) is an error, not a success (docs/operating.md is made from this output). */
static int stdout_done(const char *what)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return SK_EXIT_OK;
	sk_log(SK_LOG_ERROR, "%s: write stdout: %s", what, strerror(errno ? errno : EIO));
	return SK_EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
	struct sk_config cfg;
	struct sk_err err = { 0 };
	struct sk_sidecar sc = { 0 };
	struct run r = { .sc = &sc, .cfg = &cfg };
	struct inspect in = { 0 };
	sigset_t mask;
	int code = SK_EXIT_RUNTIME;

	/* `stockade-sidecar wait-ready ...`: the postStart hook; polls the running sidecar's /readyz. */
	if (argc >= 2 && strcmp(argv[1], "wait-ready") == 0)
		return sk_wait_ready_main(argc - 1, argv + 1);
	/* `stockade-sidecar validate ...`: CNI mode's stockade-validate init container (validate.h) */
	if (argc >= 2 && strcmp(argv[1], "validate") == 0)
		return sk_validate_main(argc - 1, argv + 1);
	sk_log_init("stockade-sidecar", SK_LOG_INFO);
	if (sk_config_parse(argc, argv, environ, &cfg, &err) < 0) {
		/* The settings reader already points at --help where a flag is unknown or out of place. */
		const char *hint = strstr(err.msg, "(see --help)") ? "" : " (see --help)";
		sk_log(SK_LOG_ERROR, "%s%s", err.msg, hint);
		return SK_EXIT_USAGE;
	}
	sk_log_init("stockade-sidecar", cfg.log_level);
	sk_log_set_format(cfg.log_format);
	if (cfg.help_settings_md) {
		sk_config_settings_md(stdout);
		sk_config_free(&cfg);
		return stdout_done("--help-settings-md");
	}
	if (cfg.help) {
		sk_config_usage(stdout, "stockade-sidecar");
		printf("subcommand: stockade-sidecar wait-ready --help (the postStart hook: waits for /readyz 200)\n");
		printf("subcommand: stockade-sidecar validate --help (CNI mode: proves the node's redirect is in place)\n");
		sk_config_free(&cfg);
		return stdout_done("--help");
	}
	if (cfg.version) {
		printf("stockade-sidecar %s\n", SK_VERSION);
		sk_config_free(&cfg);
		return stdout_done("--version");
	}
	/* Every other tool reads "-" as stdin; the sidecar re-reads its policy on each change, which a pipe
	 * cannot give twice. */
	if (!strcmp(cfg.policy_path, "-")) {
		sk_log(SK_LOG_ERROR, "--policy -: the sidecar reloads its policy from the file when it changes, "
				     "expected a file path, not stdin (see --help)");
		sk_config_free(&cfg);
		return SK_EXIT_USAGE;
	}
	sc.limits = cfg.proxy;       /* the servers' settings; strings borrow from cfg, freed last */
	sc.api_limits = cfg.api;
	sc.dns_cfg = cfg.dns;
	if (load_policy(cfg.policy_path, &sc.policy) < 0) {
		sk_config_free(&cfg);
		return SK_EXIT_POLICY;
	}
	/* secrets: read once at start so an unreadable valueFile is in the log before the first request */
	(void)sk_sidecar_secrets(&sc);
	describe_upstreams(&sc);
	/* without it a write to a peer that has closed kills the whole sidecar */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		sk_log(SK_LOG_ERROR, "ignore SIGPIPE: %s", strerror(errno));
		goto out;
	}
	raise_nofile();
	if (inspect_start(&sc, &cfg, &in, &err) < 0) {
		/* an operator's CA that does not load is a configuration error; otherwise the sidecar runs and
		 * an inspect rule's TLS is denied (inspect_unavailable), never passed through */
		sk_log(cfg.inspect_ca_cert ? SK_LOG_ERROR : SK_LOG_WARN, "TLS inspection: %s", err.msg);
		if (cfg.inspect_ca_cert)
			goto out;
		sc.inspect_env = NULL;
		sc.inspect_ca_pem = NULL;
		err = (struct sk_err){ 0 };
	}
	if (trust_files_write(&cfg, &sc, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		goto out;
	}

	if (sk_loop_new(&sc.loop, &err) < 0 || sk_metrics_new(&sc.metrics, &err) < 0 ||
	    sk_denials_new(SK_ADMIN_DENIALS_DEFAULT, &sc.denials, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		goto out;
	}
	/* initialised here, where the loop is: every `goto out` below cancels it */
	sk_timer_init(&r.drain, drain_tick, &r);
	sk_audit_init(&sc.audit, STDOUT_FILENO, sc.denials);
	sk_audit_set_policy(&sc.audit, sc.policy->content_hash);
	if (cfg.guardrails_path) {
		/* Narrowed before any server starts: no connection is ever decided by the policy as written. What
		 * the kernel already holds (exemptUids, direct and udp rules) cannot be narrowed here: a pod
		 * started with them against the guardrails does not start (admission refuses such a policy). */
		struct sk_gr_changes changes = { 0 };
		char ghash[17] = "";
		size_t kept = 0;
		if (sk_reload_guard(sc.policy, cfg.guardrails_path, NULL, &changes, ghash, &err) < 0) {
			sk_log(SK_LOG_ERROR, "%s", err.msg);
			sk_gr_changes_free(&changes);
			code = SK_EXIT_POLICY;
			goto out;
		}
		sk_reload_audit_guardrails(&sc.audit, ghash, &changes);
		for (size_t i = 0; i < changes.d.n; i++)
			kept += changes.kind[i] == SK_GR_KEPT;
		sk_gr_changes_free(&changes);
		if (kept) {
			sk_log(SK_LOG_ERROR, "policy %s: %zu part%s in the kernel exceed%s the guardrails %s (listed above); "
			       "refusing to start", cfg.policy_path, kept, kept == 1 ? "" : "s", kept == 1 ? "s" : "",
			       cfg.guardrails_path);
			sk_audit_flush(&sc.audit);
			code = SK_EXIT_POLICY;
			goto out;
		}
	}
	/* One audit write a loop round, not one a connection. */
	sk_audit_batch(&sc.audit);
	sk_loop_set_turn_end(sc.loop, audit_flush_cb, &sc.audit);

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		sk_err_sys(&err, errno, "signalfd");
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		goto out;
	}
	sk_io_init(&r.sig, sfd, on_signal, &r);
	if (sk_loop_add(sc.loop, &r.sig, EPOLLIN, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		close(sfd);
		goto out;
	}

	/* Start order matters (sidecar.c frees in reverse): the DNS server attaches its binding table and
	 * fallback resolution to sc for the proxy; the admin reads both servers' listeners. */
	struct sk_dns_srv *dns = NULL;
	if (sk_proxy_new(&sc, false, &sc.proxy, &err) < 0 ||
	    sk_sidecar_add_server(&sc, &sk_server_proxy, sc.proxy, &err) < 0 ||
	    sk_dns_server_start(&sc, &dns, &err) < 0 ||
	    sk_sidecar_add_server(&sc, &sk_server_dns, dns, &err) < 0 ||
	    sk_lifecycle_start(&sc, &cfg, &r.lc, &err) < 0 ||
	    sk_sidecar_add_server(&sc, &sk_server_admin, r.lc, &err) < 0 ||
	    sk_gateway_start(&sc, &sc.gateway, &err) < 0 ||
	    sk_sidecar_add_server(&sc, &sk_server_api, sc.gateway, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		sk_loop_del(sc.loop, &r.sig);
		close(sfd);
		goto out;
	}
	sk_log(SK_LOG_INFO, "version %s: proxy on 127.0.0.1:%u and [::1]:%u, mode %s, %zu rules",
	       SK_VERSION, sc.policy->ports.proxy, sc.policy->ports.proxy, sk_mode_name(sc.policy->mode),
		sc.policy->n_rules);

	if (run_loop(&r, &err) < 0)
		sk_log(SK_LOG_ERROR, "%s", err.msg);
	else
		code = SK_EXIT_OK;
	sk_loop_del(sc.loop, &r.sig);
	close(sfd);
out:
	sk_sidecar_free_servers(&sc);
	inspect_free(&in);           /* after the proxy: no bridge borrows it any more */
	sk_audit_flush(&sc.audit);   /* the lines the shutdown itself wrote */
	if (sc.loop)
		sk_timer_cancel(sc.loop, &r.drain);
	sk_denials_free(sc.denials);
	sk_metrics_free(sc.metrics);
	sk_budget_table_fini(&sc.budgets);   /* after the proxy: no relay holds an entry any more */
	sk_sidecar_free_secrets(&sc);
	sk_policy_free(sc.policy);
	sk_loop_free(sc.loop);
	sk_config_free(&cfg);
	return code;
}

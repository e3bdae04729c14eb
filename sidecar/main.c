/* sidecar/main.c — stockade-sidecar: builds the struct sk_sidecar, starts its servers on one loop, runs
 * it, and turns errors into exit codes. Every setting (flag or STOCKADE_* variable) is parsed by config.c;
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
#include "policy/policy.h"
#include "sidecar/audit.h"
#include "sidecar/config.h"
#include "sidecar/denials.h"
#include "sidecar/gateway.h"
#include "sidecar/dns_server.h"  /* dns */
#include "sidecar/lifecycle.h"
#include "sidecar/loop.h"
#include "sidecar/metrics.h"
#include "sidecar/proxy.h"
#include "sidecar/sidecar.h"
#include "sidecar/wait_ready.h"  /* the wait-ready subcommand (postStart hook) */

extern char **environ;

struct run {
	struct sk_sidecar *sc;
	const struct sk_config *cfg;
	struct sk_io sig;
	struct sk_timer drain;
	bool draining;
	struct sk_lifecycle *lc;  /* admin port, heartbeat, policy watcher (lifecycle.h) */
	struct sk_dns_srv *dns;   /* dns: the DNS filter (dns_server.h) */
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
			sk_diags_print(&diags, stderr);
	}
	sk_diags_free(&diags);
	return rc;
}

/* SIGHUP: a bad new policy is rejected with a log line and the last good one stays; a change to the
 * netns part (UIDs, ports, direct rules) needs a new pod, so it is refused too.
 * (inotify on the mounted file plugs in here as well.) */
static void reload(struct run *r)
{
	/* admin: one reload path for SIGHUP and inotify (reload.c: same checks, file:line:col log, metrics) */
	if (r->lc) {
		(void)sk_lifecycle_reload(r->lc, "SIGHUP");
		return;
	}
	struct sk_policy *p = NULL;
	bool ok = false;
	if (load_policy(r->cfg->policy_path, &p) == 0) {
		char h_old[17], h_new[17];
		sk_policy_netns_hash(r->sc->policy, h_old);
		sk_policy_netns_hash(p, h_new);
		if (strcmp(h_old, h_new) != 0) {
			sk_log(SK_LOG_ERROR, "reload refused: the netns part of the policy changed (%s -> %s); "
			       "it needs a new pod", h_old, h_new);
			sk_policy_free(p);
		} else {
			sk_policy_free(sk_sidecar_swap_policy(r->sc, p));
			sk_log(SK_LOG_INFO, "policy reloaded from %s", r->cfg->policy_path);
			ok = true;
		}
	}
	if (r->sc->metrics)
		sk_metrics_reload(r->sc->metrics, ok);
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
			reload(r);
		} else if (!r->draining) {
			/* SIGTERM/SIGINT: stop accepting, let open connections finish within the grace. */
			r->draining = true;
			if (r->lc)
				sk_lifecycle_set_draining(r->lc);  /* admin: /readyz now says "draining" */
			sk_log(SK_LOG_INFO, "draining %zu connections and %zu API connections for up to %us",
			       sk_proxy_active(r->sc->proxy), sk_gateway_active(r->sc->gateway),
				r->cfg->drain_seconds);
			sk_proxy_stop_accepting(r->sc->proxy);
			sk_gateway_stop_accepting(r->sc->gateway);  /* gateway */
			sk_dns_server_stop_accepting(r->dns);  /* dns */
			/* (the admin, DNS and API servers stop accepting here too) */
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
		/* Done when every server's in-flight work is: proxied connections AND gateway requests (an API
		 * response streaming while no proxied connection is open must not be cut), or the grace is over. */
		if (r->draining && ((sk_proxy_active(r->sc->proxy) == 0 && sk_gateway_active(r->sc->gateway) == 0) ||
				    !sk_timer_armed(&r->drain)))
			return 0;
	}
}

static void audit_flush_cb(void *ctx) { sk_audit_flush(ctx); }

int main(int argc, char **argv)
{
	struct sk_config cfg;
	struct sk_err err = { 0 };
	struct sk_sidecar sc = { 0 };
	struct run r = { .sc = &sc, .cfg = &cfg };
	sigset_t mask;
	int code = SK_EXIT_RUNTIME;

	/* `stockade-sidecar wait-ready ...`: the postStart hook; polls the running sidecar's /readyz. */
	if (argc >= 2 && strcmp(argv[1], "wait-ready") == 0)
		return sk_wait_ready_main(argc - 1, argv + 1);
	sk_log_init("stockade-sidecar", SK_LOG_INFO);
	if (sk_config_parse(argc, argv, environ, &cfg, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s (see --help)", err.msg);
		return SK_EXIT_USAGE;
	}
	sk_log_init("stockade-sidecar", cfg.log_level);
	if (cfg.help_settings_md) {
		sk_config_settings_md(stdout);
		sk_config_free(&cfg);
		return SK_EXIT_OK;
	}
	if (cfg.help) {
		sk_config_usage(stdout, "stockade-sidecar");
		printf("subcommand: stockade-sidecar wait-ready --help (the postStart hook: waits for /readyz 200)\n");
		sk_config_free(&cfg);
		return SK_EXIT_OK;
	}
	if (cfg.version) {
		printf("stockade-sidecar %s\n", SK_VERSION);
		sk_config_free(&cfg);
		return SK_EXIT_OK;
	}
	sc.limits = cfg.proxy;       /* the servers' settings; strings borrow from cfg, freed last */
	sc.api_limits = cfg.api;
	sc.dns_cfg = cfg.dns;
	if (load_policy(cfg.policy_path, &sc.policy) < 0) {
		sk_config_free(&cfg);
		return SK_EXIT_POLICY;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();

	if (sk_loop_new(&sc.loop, &err) < 0 || sk_metrics_new(&sc.metrics) < 0 ||
	    sk_denials_new(256, &sc.denials) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg[0] ? err.msg : "out of memory");
		goto out;
	}
	sk_audit_init(&sc.audit, STDOUT_FILENO, sc.denials);
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
	sk_timer_init(&r.drain, drain_tick, &r);
	if (sk_loop_add(sc.loop, &r.sig, EPOLLIN, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		close(sfd);
		goto out;
	}

	if (sk_proxy_new(&sc, false, &sc.proxy, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		close(sfd);
		goto out;
	}
	/* dns: the DNS filter; attaches its binding table to sc for the proxy. */
	if (sk_dns_server_start(&sc, &r.dns, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		close(sfd);
		goto out;
	}
	/* admin: admin port, heartbeat and policy watcher (lifecycle.h) */
	if (sk_lifecycle_start(&sc, &cfg, &r.lc, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		close(sfd);
		goto out;
	}
	/* API gateway: starts here (loopback api port; libcurl multi on the same loop). */
	if (sk_gateway_start(&sc, &sc.gateway, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
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
	sk_lifecycle_free(r.lc);  /* admin */
	sk_gateway_free(sc.gateway);  /* gateway */
	sk_dns_server_free(r.dns);  /* dns */
	sk_proxy_free(sc.proxy);
	sk_audit_flush(&sc.audit);   /* the lines the shutdown itself wrote */
	if (sc.loop)
		sk_timer_cancel(sc.loop, &r.drain);
	sk_denials_free(sc.denials);
	sk_metrics_free(sc.metrics);
	sk_policy_free(sc.policy);
	sk_loop_free(sc.loop);
	sk_config_free(&cfg);
	return code;
}

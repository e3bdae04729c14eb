/* sidecar/admin/lifecycle.c — see lifecycle.h. */
#include "sidecar/admin/lifecycle.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "policy/policy.h"
#include "sidecar/admin/admin.h"
#include "sidecar/core/denials.h"
#include "sidecar/admin/health.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/reload.h"

struct sk_lifecycle {
	struct sk_sidecar *sc;
	const struct sk_config *cfg;
	struct sk_health health;
	bool health_started;
	struct sk_admin *admin;
	struct sk_reload *reload;
	struct sk_reload_hooks reload_hooks;
	bool draining;
	int proxy_fds[2];
	/* The readiness watch: the checks /readyz runs, every SK_READY_WATCH_MS, so a change is logged when
	 * it happens and not only when someone asks (a pod stuck before its probes has no one asking). */
	struct sk_timer ready_watch;
	bool ready_watch_armed;
	bool ready_known, ready_last;
	char reason_last[512];
};

#define SK_READY_WATCH_MS 1000u

static void gather(void *ctx, struct sk_admin_view *v)
{
	struct sk_lifecycle *lc = ctx;
	struct sk_sidecar *sc = lc->sc;
	v->metrics = sc->metrics;
	v->denials = sc->denials;
	v->policy = sc->policy;
	v->health = &lc->health;
	v->budgets = sk_sidecar_budgets(sc);
	v->now_ms = sk_monotonic_ms();
	bool px = sc->proxy && sc->proxy_listen_fd;
	lc->proxy_fds[0] = px ? sc->proxy_listen_fd(sc->proxy, AF_INET) : -1;
	lc->proxy_fds[1] = px ? sc->proxy_listen_fd(sc->proxy, AF_INET6) : -1;
	v->ready.proxy_fds = lc->proxy_fds;
	v->ready.n_proxy_fds = 2;
	v->ready.dns_fds = sc->dns_fds;
	v->ready.n_dns_fds = sc->n_dns_fds;
	v->ready.marker_path = lc->cfg->marker_path;
	v->ready.dns_upstream_ok = sc->dns_upstream_ok;
	v->ready.dns_upstreams = sc->dns_upstreams;
	v->ready.draining = lc->draining;
	v->ca_pem = sc->inspect_ca_pem;
	v->ca_pem_len = sc->inspect_ca_pem_len;
}

/* Logs one line when readiness or its reason changes: "readiness: not ready: dns_upstream unreachable
 * 10.96.0.10:53 (no answer yet)" (a JSON line under --log-format json). The first state is info (a
 * starting sidecar is briefly unready by nature); a later fall to unready is a warning. */
static void ready_watch_tick(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_lifecycle *lc = t->ctx;
	struct sk_admin_view v = { 0 };
	gather(lc, &v);
	v.ready.policy = v.policy;
	char reason[sizeof(lc->reason_last)];
	bool ready = sk_ready_reason(&v.ready, reason, sizeof(reason));
	if (!lc->ready_known || ready != lc->ready_last || strcmp(reason, lc->reason_last) != 0) {
		if (ready)
			sk_log(SK_LOG_INFO, "readiness: ready");
		else
			sk_log(lc->ready_known ? SK_LOG_WARN : SK_LOG_INFO, "readiness: not ready: %s", reason);
		lc->ready_known = true;
		lc->ready_last = ready;
		memcpy(lc->reason_last, reason, sizeof(reason));
	}
	/* Re-arming fails only on ENOMEM: the watch then stops logging; /readyz still answers. */
	(void)sk_timer_arm(l, t, SK_READY_WATCH_MS);
}

static const struct sk_policy *current_policy(void *ctx)
{
	struct sk_lifecycle *lc = ctx;
	return lc->sc->policy;
}

static void install_policy(void *ctx, struct sk_policy *next)
{
	struct sk_lifecycle *lc = ctx;
	sk_policy_free(sk_sidecar_swap_policy(lc->sc, next));
}

int sk_lifecycle_reload(struct sk_lifecycle *lc, const char *why)
{
	return sk_reload_now(lc->reload, why);
}

void sk_lifecycle_set_draining(struct sk_lifecycle *lc)
{
	lc->draining = true;
}

static int start_admin(struct sk_lifecycle *lc, struct sk_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const char *addr = lc->cfg->admin_addr;
	char dflt[16];
	(void)snprintf(dflt, sizeof(dflt), "%u", lc->sc->policy->ports.admin);
	int r = sk_config_admin_sockaddr(addr ? addr : dflt, lc->sc->policy->ports.admin, &ss, &len, err);
	if (r < 0)
		return r;
	r = sk_admin_start(lc->sc->loop, (struct sockaddr *)&ss, len, gather, lc, &lc->admin, err);
	if (r == -EAFNOSUPPORT && !addr) {
		/* No IPv6 in this pod: all IPv4 interfaces are what the kubelet probes then. */
		struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(lc->sc->policy->ports.admin) };
		s4.sin_addr.s_addr = htonl(INADDR_ANY);
		r = sk_admin_start(lc->sc->loop, (struct sockaddr *)&s4, sizeof(s4), gather, lc, &lc->admin, err);
	}
	if (r < 0)
		return sk_err_prefix(err, "admin port %s", addr ? addr : dflt);
	return 0;
}

int sk_lifecycle_start(struct sk_sidecar *sc, const struct sk_config *cfg, struct sk_lifecycle **out,
		       struct sk_err *err)
{
	int r;
	struct sk_lifecycle *lc = calloc(1, sizeof(*lc));
	if (!lc)
		return sk_err_sys(err, ENOMEM, "lifecycle: allocate");
	lc->sc = sc;
	lc->cfg = cfg;
	if (!sc->metrics && (r = sk_metrics_new(&sc->metrics, err)) < 0)
		goto fail;
	if (!sc->denials && (r = sk_denials_new(SK_ADMIN_DENIALS_DEFAULT, &sc->denials, err)) < 0)
		goto fail;
	if ((r = sk_health_start(&lc->health, sc->loop, err)) < 0)
		goto fail;
	lc->health_started = true;
	if ((r = start_admin(lc, err)) < 0)
		goto fail;
	sk_timer_init(&lc->ready_watch, ready_watch_tick, lc);
	/* the first look soon after start, once the servers have had a loop round */
	if ((r = sk_timer_arm(sc->loop, &lc->ready_watch, 50)) < 0) {
		r = sk_err_sys(err, -r, "readiness watch: arm timer");
		goto fail;
	}
	lc->ready_watch_armed = true;
	lc->reload_hooks = (struct sk_reload_hooks){ .current = current_policy, .install = install_policy,
						     .metrics = sc->metrics, .audit = &sc->audit,
						     .log = NULL, .guardrails = cfg->guardrails_path };
	if ((r = sk_reload_start(sc->loop, cfg->policy_path, &lc->reload_hooks, lc, &lc->reload, err)) < 0)
		goto fail;
	*out = lc;
	return 0;
fail:
	sk_lifecycle_free(lc);
	return r;
}

void sk_lifecycle_free(struct sk_lifecycle *lc)
{
	if (!lc)
		return;
	sk_reload_free(lc->reload);
	sk_admin_free(lc->admin);
	if (lc->ready_watch_armed)
		sk_timer_cancel(lc->sc->loop, &lc->ready_watch);
	if (lc->health_started)
		sk_health_stop(&lc->health, lc->sc->loop);
	free(lc);
}

/* The admin port's entry in the sidecar's server list (core/server.h); main.c registers it. No
 * stop_accepting: kubelet must still read "draining" from /readyz through the drain. */
static void server_free(void *s) { sk_lifecycle_free(s); }
const struct sk_server_ops sk_server_admin = { "admin", NULL, NULL, server_free };

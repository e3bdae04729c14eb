/* sidecar/core/sidecar.c — the process object's own functions (sidecar.h): the policy swap, the budget table
 * following the policy in force, the binding hooks, and the list of running servers (server.h):
 * registration, the drain's two questions (stop accepting, anything still in flight?) and the teardown.
 * It knows no server: each room defines its own struct sk_server_ops and main.c registers them. */
#include "sidecar/core/sidecar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "policy/policy.h"

void sk_sidecar_attach_bindings(struct sk_sidecar *sc, struct sk_bind_table *t, const struct sk_bind_hooks *hooks)
{
	sc->bindings = t;
	sc->bind = *hooks;
}

/* Makes the budget table follow the policy in force (a failed sync is logged and leaves every budgeted
 * rule refused: budget.h). */
static void budgets_follow(struct sk_sidecar *sc)
{
	struct sk_err err = { 0 };
	if (sk_budget_table_sync(&sc->budgets, sc->policy, &err) < 0)
		sk_log(SK_LOG_ERROR, "%s: rules with a budget are refused until a policy loads", err.msg);
	sc->budgets_gen = sc->policy_gen;
	sc->budgets_synced = true;
}

struct sk_budget_table *sk_sidecar_budgets(struct sk_sidecar *sc)
{
	/* A swap syncs the table at once; this catches the first policy, which main (and a unit test) sets
	 * on the struct before anything runs, and any policy set there since. */
	if (!sc->budgets_synced || sc->budgets_gen != sc->policy_gen)
		budgets_follow(sc);
	return &sc->budgets;
}

struct sk_policy *sk_sidecar_swap_policy(struct sk_sidecar *sc, struct sk_policy *p)
{
	struct sk_policy *old = sc->policy;
	sc->policy = p;
	sc->policy_gen++;
	/* From the next line on, the audit trail names the policy that decides it. */
	sk_audit_set_policy(&sc->audit, p ? p->content_hash : NULL);
	/* The budget table follows here, not in the first verdict after the reload: the DNS server and the
	 * admin port read it as well. */
	if (p)
		budgets_follow(sc);
	/* the new policy's secret files are read now, so an unreadable one is logged with the reload */
	(void)sk_sidecar_secrets(sc);
	return old;
}

const struct sk_secret_value *sk_sidecar_secrets(struct sk_sidecar *sc)
{
	const struct sk_policy *p = sc->policy;
	if (!p || !p->n_secrets)
		return NULL;
	if (p->n_secrets > sc->secret_values_cap) {
		struct sk_secret_value *v = realloc(sc->secret_values, p->n_secrets * sizeof(*v));
		if (!v)
			return NULL;
		sc->secret_values = v;
		sc->secret_values_cap = p->n_secrets;
	}
	uint64_t now = sc->loop ? sk_loop_now_ms(sc->loop) : 0;
	if (sc->loop && sc->secret_synced && sc->secret_sync_ms == now && sc->secret_sync_gen == sc->policy_gen)
		return sc->secret_values;   /* this turn's look at the files holds */
	struct sk_err err = { 0 };
	sc->secret_synced = false;
	if (sk_secret_store_sync(&sc->secret_store, p, sc->secret_values, &err) < 0) {
		if (strcmp(err.msg, sc->secret_err) != 0) {
			sk_log(SK_LOG_ERROR, "%s: its placeholder is not swapped until the file can be read", err.msg);
			(void)snprintf(sc->secret_err, sizeof(sc->secret_err), "%s", err.msg);
		}
	} else {
		sc->secret_err[0] = '\0';
		sc->secret_synced = true;
		sc->secret_sync_ms = now;
		sc->secret_sync_gen = sc->policy_gen;
	}
	return sc->secret_values;
}

void sk_sidecar_free_secrets(struct sk_sidecar *sc)
{
	sk_secret_store_free(&sc->secret_store);
	free(sc->secret_values);
	sc->secret_values = NULL;
	sc->secret_values_cap = 0;
	sc->secret_synced = false;
}

int sk_sidecar_add_server(struct sk_sidecar *sc, const struct sk_server_ops *ops, void *srv, struct sk_err *err)
{
	if (!srv)
		return 0;   /* a server that did not start (NULL) has nothing to stop or free */
	if (sc->n_servers == SK_SIDECAR_SERVERS_MAX) {
		ops->free(srv);
		return sk_err_set(err, ENOSPC, "sidecar: more than %d servers (%s)", SK_SIDECAR_SERVERS_MAX, ops->name);
	}
	sc->servers[sc->n_servers++] = (struct sk_server){ .ops = ops, .srv = srv };
	return 0;
}

void sk_sidecar_stop_accepting(struct sk_sidecar *sc)
{
	for (size_t i = 0; i < sc->n_servers; i++)
		if (sc->servers[i].ops->stop_accepting)
			sc->servers[i].ops->stop_accepting(sc->servers[i].srv);
}

size_t sk_sidecar_active(const struct sk_sidecar *sc)
{
	size_t n = 0;
	for (size_t i = 0; i < sc->n_servers; i++)
		if (sc->servers[i].ops->active)
			n += sc->servers[i].ops->active(sc->servers[i].srv);
	return n;
}

void sk_sidecar_log_active(const struct sk_sidecar *sc, const char *what)
{
	char buf[256];
	size_t off = 0;
	for (size_t i = 0; i < sc->n_servers && off < sizeof(buf); i++) {
		const struct sk_server *s = &sc->servers[i];
		if (!s->ops->active)
			continue;
		int w = snprintf(buf + off, sizeof(buf) - off, "%s%s %zu", off ? ", " : "", s->ops->name,
				 s->ops->active(s->srv));
		if (w < 0)
			break;
		off += (size_t)w;
	}
	sk_log(SK_LOG_INFO, "%s (in flight: %s)", what, off ? buf : "nothing");
}

void sk_sidecar_free_servers(struct sk_sidecar *sc)
{
	/* last started, first freed: a server may use one started before it (the proxy's fallback
	 * resolution is the DNS server's; the admin reads the proxy's and DNS server's listeners) */
	while (sc->n_servers > 0) {
		struct sk_server *s = &sc->servers[--sc->n_servers];
		s->ops->free(s->srv);
		s->srv = NULL;
	}
}

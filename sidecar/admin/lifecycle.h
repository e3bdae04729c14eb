/* sidecar/admin/lifecycle.h — plugs the admin port, heartbeat and policy hot reload into a running sidecar, so
 * main.c needs one call to start them and one to free them (main keeps the signalfd: SIGHUP calls
 * sk_lifecycle_reload, SIGTERM sk_lifecycle_set_draining). Owns the glue between those modules and
 * struct sk_sidecar: what /readyz looks at (proxy listeners, DNS listeners, marker, upstream flag, drain)
 * and how a reloaded policy is installed. */
#ifndef SK_SIDECAR_LIFECYCLE_H
#define SK_SIDECAR_LIFECYCLE_H

#include "common/err.h"
#include "sidecar/core/config.h"
#include "sidecar/core/sidecar.h"

struct sk_lifecycle;

/* Needs sc->loop and sc->policy; creates sc->metrics / sc->denials if they are NULL (sc owns them).
 * Starts the heartbeat, the admin server (cfg->admin_addr or all interfaces on the policy's admin
 * port) and the policy watcher (inotify on cfg->policy_path's directory). sc and cfg are borrowed for
 * the lifecycle's life. */
int sk_lifecycle_start(struct sk_sidecar *sc, const struct sk_config *cfg, struct sk_lifecycle **out,
		       struct sk_err *err);
/* SIGHUP: reloads the policy now (see sk_reload_now). 0 when the new one is in force. */
int sk_lifecycle_reload(struct sk_lifecycle *lc, const char *why);
/* SIGTERM: /readyz reports "draining" from now on, so the endpoint is taken out of rotation. */
void sk_lifecycle_set_draining(struct sk_lifecycle *lc);
void sk_lifecycle_free(struct sk_lifecycle *lc);

/* The admin port's entry for the sidecar's server list (core/server.h): srv is a struct sk_lifecycle
 * (admin port, heartbeat, policy watcher). */
extern const struct sk_server_ops sk_server_admin;

#endif

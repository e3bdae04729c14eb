/* sidecar/lifecycle.h — plugs the admin port, heartbeat, hot reload and signals into a running sidecar,
 * so main.c needs one call to start them and one to free them. Owns the glue between those modules and
 * struct sk_sidecar: what /readyz looks at (proxy listeners, DNS listeners, marker, upstream flag), how a
 * reloaded policy is installed, what SIGTERM stops and counts. */
#ifndef SK_SIDECAR_LIFECYCLE_H
#define SK_SIDECAR_LIFECYCLE_H

#include "common/err.h"
#include "sidecar/config.h"
#include "sidecar/sidecar.h"

struct sk_lifecycle;

/* Needs sc->loop and sc->policy; creates sc->metrics / sc->denials if they are NULL (sc owns them).
 * Starts the heartbeat, the admin server (cfg->admin_addr or all interfaces on the policy's admin
 * port), the policy watcher (cfg->policy_path) and the signal handling (cfg->drain_seconds). sc and cfg
 * are borrowed for the lifecycle's life. */
int sk_lifecycle_start(struct sk_sidecar *sc, const struct sk_config *cfg, struct sk_lifecycle **out,
		       struct sk_err *err);
void sk_lifecycle_free(struct sk_lifecycle *lc);

#endif

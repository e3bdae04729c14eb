/* sidecar/signals.h — the sidecar's signals, read through a signalfd in the event loop (so handlers never
 * run in signal context). Owns: SIGHUP → reload; SIGTERM/SIGINT → drain (stop accepting, wait for open
 * connections up to the grace period, then stop the loop so main exits 0; a second one stops at once);
 * SIGPIPE ignored (a peer closing mid-write must not kill the proxy). */
#ifndef SK_SIDECAR_SIGNALS_H
#define SK_SIDECAR_SIGNALS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "sidecar/loop.h"

struct sk_signal_hooks {
	void (*reload)(void *ctx);          /* SIGHUP */
	void (*stop_accepting)(void *ctx);  /* first SIGTERM/SIGINT: close the listeners */
	size_t (*active)(void *ctx);        /* connections still open (relays, DNS over TCP, API calls) */
};

struct sk_signals;

/* Blocks SIGHUP, SIGTERM and SIGINT for the process and reads them from a signalfd on l; ignores SIGPIPE.
 * hooks and ctx are borrowed. */
int sk_signals_start(struct sk_loop *l, unsigned drain_seconds, const struct sk_signal_hooks *hooks, void *ctx,
		     struct sk_signals **out, struct sk_err *err);
void sk_signals_free(struct sk_signals *s);
bool sk_signals_draining(const struct sk_signals *s);

#endif

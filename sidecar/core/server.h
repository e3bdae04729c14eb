/* sidecar/core/server.h — the one interface every server in the sidecar (proxy, DNS filter, admin port with
 * its heartbeat and policy watcher, API gateway) offers to the process around it: stop accepting, how
 * much in-flight work a drain must wait for, and free. Each server starts with its own function (its
 * arguments differ) and then main.c registers it with the sidecar (sidecar.c), which owns the list from
 * then on: main.c only wires, the drain and the teardown are written once. */
#ifndef SK_SIDECAR_SERVER_H
#define SK_SIDECAR_SERVER_H

#include <stddef.h>

struct sk_server_ops {
	const char *name;                       /* for logs: "proxy", "dns", "admin", "api" */
	/* Stop taking new connections; what is open carries on. NULL: the server keeps accepting through
	 * the drain (the admin port: kubelet must still read "draining" from /readyz). */
	void (*stop_accepting)(void *srv);
	/* In-flight work the drain waits for (connections, API requests). NULL: none worth waiting for. */
	size_t (*active)(const void *srv);
	void (*free)(void *srv);                /* closes everything; called once, never with NULL */
};

struct sk_server {
	const struct sk_server_ops *ops;
	void *srv;
};

#define SK_SIDECAR_SERVERS_MAX 8

/* Each server's entry is defined in its own room, next to the functions it names (sk_server_proxy in
 * proxy/proxy.h, sk_server_dns in dns/server.h, sk_server_admin in admin/lifecycle.h, sk_server_api in
 * gateway/gateway.h); main.c registers them. */

#endif

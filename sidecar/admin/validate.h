/* sidecar/admin/validate.h — `stockade-sidecar validate`: the first init container of a CNI-mode pod
 * (`stockade-validate`), run as the agent UID with no capability. In CNI mode the node's stockade-cni
 * programs the netns before any container starts, but a pod created before the plugin was chained on its
 * node gets no table at all (istio/istio#14327); this refuses to let such a pod go on, as istio-validation
 * and linkerd-network-validator do. nft cannot be listed without CAP_NET_ADMIN, so it proves the redirect by
 * behaviour, the way init/ruleset.c's nat chain treats the agent's flows:
 *  - TCP from the agent UID to a TEST-NET-1 address (192.0.2.1, which nothing routes) must arrive at a
 *    listener of its own on 127.0.0.1:<proxy port> with that address as SO_ORIGINAL_DST;
 *  - UDP to 192.0.2.1:53 must arrive at 127.0.0.1:<dns port> (its random payload, from its socket);
 *  - lo's alias (common/netns_mark.h, which only the plugin can have written) must carry the netns hash of
 *    the pod's policy, so a table built from another policy does not pass.
 * Then it writes the marker file the sidecar's /readyz reads (common/marker.h), and exits: its listeners
 * are closed with an RST, leaving no TIME_WAIT on the sidecar's ports. Any failure is one line naming it. */
#ifndef SK_SIDECAR_VALIDATE_H
#define SK_SIDECAR_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/marker.h"
#include "common/util.h"

#define SK_VALIDATE_TIMEOUT_MS 3000u
#define SK_VALIDATE_PROBE_ADDR "192.0.2.1"  /* TEST-NET-1, RFC 5737 */
#define SK_VALIDATE_PROBE_PORT_MIN 20000u   /* the TCP probe's destination port: random, from here up */

struct sk_validate {
	const char *policy_path;
	const char *marker_path;   /* NULL: no marker written */
	uint32_t timeout_ms;       /* for each probe */
	uint32_t agent_uid;        /* filled from the policy */
	uint16_t proxy_port, dns_port, api_port;  /* filled from the policy */
	char hash[17];             /* filled: the policy's netns hash */
};

/* Loads the policy into o's filled fields. -EINVAL with err for a policy that does not load. */
SK_MUST_USE int sk_validate_load(struct sk_validate *o, struct sk_err *err);
/* TCP: a connection to addr:port from this process (from src_port when non-zero: the policy's API port,
 * the one port the agent's listener may answer to) must arrive at 127.0.0.1:listen_port carrying that
 * original destination. 0, or -errno with err naming what did not happen. */
SK_MUST_USE int sk_validate_tcp(const char *addr, uint16_t port, uint16_t listen_port, uint16_t src_port,
				uint32_t timeout_ms, struct sk_err *err);
/* UDP: a datagram to addr:port must arrive at 127.0.0.1:listen_port (SO_ORIGINAL_DST is TCP only, and
 * IP_ORIGDSTADDR reports the address after the redirect: its random payload from this socket is the proof). */
SK_MUST_USE int sk_validate_udp(const char *addr, uint16_t port, uint16_t listen_port, uint32_t timeout_ms,
				struct sk_err *err);
/* All of it, in the calling process's netns and identity; *m gets the marker written. */
SK_MUST_USE int sk_validate_run(struct sk_validate *o, struct sk_marker *m, struct sk_err *err);

/* The subcommand: argv[0] is "validate". Exit codes of enum sk_exit. */
int sk_validate_main(int argc, char **argv);

#endif

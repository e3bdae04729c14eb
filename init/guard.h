/* init/guard.h — refuses to program a network namespace that looks like a node's own (docs/architecture.md#the-init-stockade-init):
 * a ruleset that rejects every UID but the sidecar's would cut the node off. Owns the probe (read-only:
 * /proc/self/ns, /proc/1/ns, one rtnetlink link dump) and the judgement, kept apart so it is testable. */
#ifndef SK_INIT_GUARD_H
#define SK_INIT_GUARD_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define SK_GUARD_MAX_IFS 64

struct sk_netif {
	char name[IF_NAMESIZE];
	char kind[32];         /* rtnetlink IFLA_INFO_KIND ("veth", "bridge"...), "" when the driver has none */
	char parent[64];       /* IFLA_PARENT_DEV_BUS_NAME/NAME ("virtio", "pci"...), "" when none */
	bool loopback;
};

struct sk_netns_facts {
	bool netns_is_initial;     /* our netns has the initial namespace's fixed inode */
	bool init_shares_netns;    /* /proc/1/ns/net is our netns (false when unreadable) */
	bool pidns_is_initial;     /* we are in the initial PID namespace, so PID 1 is the host's init */
	struct sk_netif ifs[SK_GUARD_MAX_IFS];
	size_t n_ifs;              /* interfaces beyond SK_GUARD_MAX_IFS are counted in n_ifs_total */
	size_t n_ifs_total;
};

/* Gathers the facts about the current network namespace. Changes nothing. */
int sk_guard_probe(struct sk_netns_facts *f, struct sk_err *err);

/* Writes every reason the namespace looks like a host's, "; "-separated, into why; returns how many
 * (0: it looks like a pod's). Pure function of f. */
size_t sk_guard_judge(const struct sk_netns_facts *f, char *why, size_t len);

#endif

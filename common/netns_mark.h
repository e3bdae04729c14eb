/* common/netns_mark.h — the marker of a netns the node programmed (stockade-cni): in CNI mode no container
 * of the pod loads the table, so no volume can carry stockade-init's marker file; the plugin writes the
 * same facts (common/marker.h's hash and counts) as the alias of the netns's loopback device instead,
 * "stockade hash=<16 hex> rules=N sets=N elements=N". Any process in the netns reads it over rtnetlink
 * without a capability (RTM_GETLINK), and only CAP_NET_ADMIN in the netns — which no container of a CNI-mode
 * pod has — can change it, so `stockade-sidecar validate` can trust it as far as it trusts the node. */
#ifndef SK_COMMON_NETNS_MARK_H
#define SK_COMMON_NETNS_MARK_H

#include <stddef.h>

#include "common/err.h"
#include "common/marker.h"
#include "common/util.h"

/* The alias text of m into buf (IFALIASZ = 256 is plenty); the version is not part of it. */
void sk_netns_mark_format(const struct sk_marker *m, char *buf, size_t len);
/* Parses an alias; -EINVAL when it is not one of ours (m's hash then empty). Pure. */
SK_MUST_USE int sk_netns_mark_parse(const char *alias, struct sk_marker *m);

/* In the calling thread's netns: sets lo's alias to m (NULL: clears it). Needs CAP_NET_ADMIN. */
SK_MUST_USE int sk_netns_mark_set(const struct sk_marker *m, struct sk_err *err);
/* Reads lo's alias into m: -ENOENT when lo has no alias, -EINVAL when it is not ours (err says which). */
SK_MUST_USE int sk_netns_mark_get(struct sk_marker *m, struct sk_err *err);

#endif

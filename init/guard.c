/* init/guard.c — the host-namespace guard. See guard.h.
 *
 * Signals, each enough on its own (a pod's namespace shows none of them; a node's shows at least one):
 *  - the netns is the kernel's initial one (fixed inode PROC_NET_INIT_INO on kernels that have it);
 *  - the host's init is in it (PID 1 shares our netns and our PID namespace is the initial one);
 *  - a non-loopback interface has a parent device (a NIC on a bus: PCI, virtio...) or no link kind at
 *    all (every virtual driver — veth, ipvlan, macvlan, tunnels — reports one; real NICs do not);
 *  - a bridge (cni0, docker0, an OVS bridge): CNI puts those on the node, never in a pod.
 * A pod that really owns a NIC (SR-IOV VF via Multus) needs --force; the message says why. */
#include "init/guard.h"

#include <errno.h>
#include <stdarg.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <libmnl/libmnl.h>

#include "common/util.h"

#define PROC_NET_INIT_INO 0xEFFFFFF9U  /* include/linux/proc_ns.h */
#define PROC_PID_INIT_INO 0xEFFFFFFCU

static int ns_inode(const char *path, struct stat *st)
{
	return stat(path, st) == 0 ? 0 : -errno;
}

struct link_ctx {
	struct sk_netns_facts *f;
};

/* The names below are cut to their fields (the kernel bounds IFNAME to IF_NAMESIZE); a cut kind or parent
 * judges the same: sk_guard_judge looks only at emptiness and at kinds far shorter than the field. */
static int linkinfo_cb(const struct nlattr *a, void *data)
{
	struct sk_netif *nif = data;
	if (mnl_attr_get_type(a) == IFLA_INFO_KIND && mnl_attr_validate(a, MNL_TYPE_STRING) >= 0)
		(void)snprintf(nif->kind, sizeof(nif->kind), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

static int link_attr_cb(const struct nlattr *a, void *data)
{
	struct sk_netif *nif = data;
	switch (mnl_attr_get_type(a)) {
	case IFLA_IFNAME:
		if (mnl_attr_validate(a, MNL_TYPE_STRING) >= 0)
			(void)snprintf(nif->name, sizeof(nif->name), "%s", mnl_attr_get_str(a));
		break;
	case IFLA_LINKINFO:
		mnl_attr_parse_nested(a, linkinfo_cb, nif);
		break;
	case IFLA_PARENT_DEV_BUS_NAME:
		if (mnl_attr_validate(a, MNL_TYPE_STRING) >= 0)
			(void)snprintf(nif->parent, sizeof(nif->parent), "%s", mnl_attr_get_str(a));
		break;
	case IFLA_PARENT_DEV_NAME:
		if (!nif->parent[0] && mnl_attr_validate(a, MNL_TYPE_STRING) >= 0)
			(void)snprintf(nif->parent, sizeof(nif->parent), "%s", mnl_attr_get_str(a));
		break;
	default:
		break;
	}
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_ctx *c = data;
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	struct sk_netif nif = { .loopback = (ifm->ifi_flags & IFF_LOOPBACK) != 0 };
	mnl_attr_parse(nlh, sizeof(*ifm), link_attr_cb, &nif);
	c->f->n_ifs_total++;
	if (c->f->n_ifs < SK_GUARD_MAX_IFS)
		c->f->ifs[c->f->n_ifs++] = nif;
	return MNL_CB_OK;
}

static int probe_links(struct sk_netns_facts *f, struct sk_err *err)
{
	char buf[16384];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl)
		return sk_err_sys(err, errno, "guard: open rtnetlink socket");
	int rc = 0;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = sk_err_sys(err, errno, "guard: bind rtnetlink socket");
		goto out;
	}
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	struct rtgenmsg *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->rtgen_family = AF_UNSPEC;
	uint32_t seq = nlh->nlmsg_seq, portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		rc = sk_err_sys(err, errno, "guard: list interfaces");
		goto out;
	}
	struct link_ctx ctx = { f };
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0) {
			rc = sk_err_sys(err, errno, "guard: list interfaces");
			goto out;
		}
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, link_cb, &ctx);
		if (r == MNL_CB_STOP)
			break;
		if (r < 0) {
			rc = sk_err_sys(err, errno, "guard: list interfaces");
			goto out;
		}
	}
out:
	mnl_socket_close(nl);
	return rc;
}

int sk_guard_probe(struct sk_netns_facts *f, struct sk_err *err)
{
	struct stat self_net, init_net, self_pid;
	memset(f, 0, sizeof(*f));
	int rc = ns_inode("/proc/self/ns/net", &self_net);
	if (rc < 0)
		return sk_err_sys(err, -rc, "guard: stat /proc/self/ns/net");
	f->netns_is_initial = self_net.st_ino == PROC_NET_INIT_INO;
	/* unreadable /proc/1 (another user namespace, hidepid) proves nothing either way */
	if (ns_inode("/proc/1/ns/net", &init_net) == 0)
		f->init_shares_netns = init_net.st_ino == self_net.st_ino && init_net.st_dev == self_net.st_dev;
	if (ns_inode("/proc/self/ns/pid", &self_pid) == 0)
		f->pidns_is_initial = self_pid.st_ino == PROC_PID_INIT_INO;
	return probe_links(f, err);
}

static void add_reason(char *why, size_t len, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add_reason(char *why, size_t len, size_t *n, const char *fmt, ...)
{
	size_t used = strnlen(why, len);
	if (*n && used + 2 < len) {
		memcpy(why + used, "; ", 3);
		used += 2;
	}
	if (used < len) {   /* a cut reason list still names the first reasons, and n counts them all */
		va_list ap;
		va_start(ap, fmt);
		(void)vsnprintf(why + used, len - used, fmt, ap);
		va_end(ap);
	}
	(*n)++;
}

size_t sk_guard_judge(const struct sk_netns_facts *f, char *why, size_t len)
{
	size_t n = 0;
	if (len)
		why[0] = '\0';
	if (f->netns_is_initial)
		add_reason(why, len, &n, "this is the kernel's initial network namespace (the node's own)");
	if (f->init_shares_netns && f->pidns_is_initial)
		add_reason(why, len, &n, "the host's init (PID 1) is in this network namespace");
	for (size_t i = 0; i < f->n_ifs; i++) {
		const struct sk_netif *nif = &f->ifs[i];
		if (nif->loopback)
			continue;
		if (nif->parent[0])
			add_reason(why, len, &n, "interface %s is a device on bus %s (a NIC)", nif->name, nif->parent);
		else if (!nif->kind[0])
			add_reason(why, len, &n, "interface %s has no virtual link kind (a NIC)", nif->name);
		else if (!strcmp(nif->kind, "bridge") || !strcmp(nif->kind, "openvswitch"))
			add_reason(why, len, &n, "interface %s is a %s (nodes have those, pods do not)", nif->name,
				   nif->kind);
	}
	return n;
}

/* common/netns_mark.c — see netns_mark.h. */
#include "common/netns_mark.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LO_IFINDEX 1  /* lo is ifindex 1 in every netns */
#define ALIAS_MAX 256  /* ALIAS_MAX (linux/if.h, which clashes with net/if.h) */
#define NL_BUF 8192

void sk_netns_mark_format(const struct sk_marker *m, char *buf, size_t len)
{
	(void)snprintf(buf, len, "stockade hash=%.16s rules=%u sets=%u elements=%u", m->hash, m->rules, m->sets,
		       m->elements);
}

int sk_netns_mark_parse(const char *alias, struct sk_marker *m)
{
	memset(m, 0, sizeof(*m));
	char hash[17] = { 0 };
	int end = 0;
	if (sscanf(alias, "stockade hash=%16[0-9a-f] rules=%u sets=%u elements=%u%n", hash, &m->rules, &m->sets,
		   &m->elements, &end) != 4 || alias[end] != 0 || strlen(hash) != 16) {
		memset(m, 0, sizeof(*m));
		return -EINVAL;
	}
	memcpy(m->hash, hash, sizeof(m->hash));
	return 0;
}

struct get_ctx {
	char alias[ALIAS_MAX];
	bool found;
};

static int attr_cb(const struct nlattr *a, void *data)
{
	struct get_ctx *g = data;
	if (mnl_attr_get_type(a) == IFLA_IFALIAS && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
		(void)snprintf(g->alias, sizeof(g->alias), "%s", mnl_attr_get_str(a));
		g->found = true;
	}
	return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
	if (nlh->nlmsg_type == RTM_NEWLINK && ifm->ifi_index == LO_IFINDEX)
		return mnl_attr_parse(nlh, sizeof(*ifm), attr_cb, data);
	return MNL_CB_OK;
}

/* One request on a fresh NETLINK_ROUTE socket, its answers run through cb. */
static int roundtrip(struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what, struct sk_err *err)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl)
		return sk_err_sys(err, errno, "%s: netlink socket", what);
	int rc = 0;
	char buf[NL_BUF];
	struct timeval tv = { .tv_sec = 5 };
	(void)setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));  /* a bound, not a need */
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = sk_err_sys(err, errno, "%s: netlink bind", what);
		goto out;
	}
	unsigned portid = mnl_socket_get_portid(nl), seq = nlh->nlmsg_seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		rc = sk_err_sys(err, errno, "%s: netlink send", what);
		goto out;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0) {
			rc = sk_err_sys(err, errno, "%s: netlink receive", what);
			break;
		}
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (r < 0) {
			rc = sk_err_sys(err, errno, "%s", what);
			break;
		}
		/* an ack ends a request; a GET of one link is answered by one message and nothing after it */
		if (r == MNL_CB_STOP || cb)
			break;
	}
out:
	(void)mnl_socket_close(nl);  /* nothing buffered to lose */
	return rc;
}

static struct nlmsghdr *link_msg(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = LO_IFINDEX;
	return nlh;
}

int sk_netns_mark_set(const struct sk_marker *m, struct sk_err *err)
{
	char buf[512], alias[ALIAS_MAX] = "";
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, NLM_F_ACK);
	if (m)
		sk_netns_mark_format(m, alias, sizeof(alias));
	/* an empty alias removes it (the kernel's dev_set_alias with length 0) */
	mnl_attr_put(nlh, IFLA_IFALIAS, strlen(alias), alias);
	return roundtrip(nlh, NULL, NULL, m ? "set the alias of lo" : "clear the alias of lo", err);
}

int sk_netns_mark_get(struct sk_marker *m, struct sk_err *err)
{
	char buf[512];
	struct get_ctx g = { .found = false };
	struct nlmsghdr *nlh = link_msg(buf, RTM_GETLINK, 0);
	int rc = roundtrip(nlh, link_cb, &g, "read the alias of lo", err);
	if (rc < 0)
		return rc;
	if (!g.found || !g.alias[0])
		return sk_err_set(err, ENOENT, "lo has no alias: the node's stockade-cni did not program this netns");
	if (sk_netns_mark_parse(g.alias, m) < 0)
		return sk_err_set(err, EINVAL, "the alias of lo ('%.64s') is not stockade-cni's marker", g.alias);
	return 0;
}

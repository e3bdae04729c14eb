/* Multicast membership: the joins make the kernel send IGMP/MLD reports naming a group the
 * caller picked, with no socket UID on them. argv[1]:
 *   ip4       IP_ADD_MEMBERSHIP 239.83.69.67 on a UDP socket
 *   ip4-high  the same through syscall() with high garbage above level and optname (the kernel reads ints)
 *   ip4-on6   IP_ADD_MEMBERSHIP on an AF_INET6 socket (dual stack reaches ip_setsockopt)
 *   src4      IP_ADD_SOURCE_MEMBERSHIP
 *   mcast4    MCAST_JOIN_GROUP at IPPROTO_IP
 *   ip6       IPV6_JOIN_GROUP ff0e:5345:4352:4554:2d45:5846:494c:2121 ("SECRET-EXFIL!!")
 *   mcast6    MCAST_JOIN_GROUP at IPPROTO_IPV6
 *   anycast6  IPV6_JOIN_ANYCAST
 *   opts      the neighbours that must keep working: SO_REUSEADDR, TCP_NODELAY, IP_TTL, IPV6_V6ONLY,
 *             IP_MULTICAST_TTL, IPV6_MULTICAST_HOPS (errno of the first that fails) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "probe.h"

#define GROUP4 "239.83.69.67"
#define GROUP6 "ff0e:5345:4352:4554:2d45:5846:494c:2121"

static long opts(void)
{
	int t = socket(AF_INET, SOCK_STREAM, 0), u4 = socket(AF_INET, SOCK_DGRAM, 0);
	int u6 = socket(AF_INET6, SOCK_DGRAM, 0);
	int one = 1, ttl = 7;
	if (t < 0 || u4 < 0 || u6 < 0)
		return -1;
	if (setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(u4, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) < 0 ||
	    setsockopt(u6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0 ||
	    setsockopt(u4, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)) < 0 ||
	    setsockopt(u6, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &ttl, sizeof(ttl)) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "ip4";
	int ifindex = argc > 2 ? (int)if_nametoindex(argv[2]) : 0;
	struct ip_mreqn mr = { .imr_ifindex = ifindex };
	struct ipv6_mreq m6 = { .ipv6mr_interface = (unsigned)ifindex };
	struct group_req gr = { .gr_interface = (unsigned)ifindex };
	inet_pton(AF_INET, GROUP4, &mr.imr_multiaddr);
	inet_pton(AF_INET6, GROUP6, &m6.ipv6mr_multiaddr);
	if (!strcmp(m, "opts"))
		return probe_report(opts());
	if (!strcmp(m, "ip4") || !strcmp(m, "ip4-high") || !strcmp(m, "src4") || !strcmp(m, "mcast4")) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		if (!strcmp(m, "ip4"))
			return probe_report(setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)));
		if (!strcmp(m, "ip4-high"))
			return probe_report(syscall(SYS_setsockopt, s, 0x100000000ul | IPPROTO_IP,
						    0xffffffff00000000ul | IP_ADD_MEMBERSHIP, &mr, sizeof(mr)));
		if (!strcmp(m, "src4")) {
			struct ip_mreq_source ms = { .imr_multiaddr = mr.imr_multiaddr };
			inet_pton(AF_INET, "192.0.2.1", &ms.imr_sourceaddr);
			return probe_report(setsockopt(s, IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, &ms, sizeof(ms)));
		}
		struct sockaddr_in *g = (struct sockaddr_in *)&gr.gr_group;
		g->sin_family = AF_INET;
		g->sin_addr = mr.imr_multiaddr;
		return probe_report(setsockopt(s, IPPROTO_IP, MCAST_JOIN_GROUP, &gr, sizeof(gr)));
	}
	int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	if (!strcmp(m, "ip4-on6"))
		return probe_report(setsockopt(s6, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)));
	if (!strcmp(m, "ip6"))
		return probe_report(setsockopt(s6, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m6, sizeof(m6)));
	if (!strcmp(m, "anycast6"))
		return probe_report(setsockopt(s6, IPPROTO_IPV6, IPV6_JOIN_ANYCAST, &m6, sizeof(m6)));
	if (!strcmp(m, "mcast6")) {
		struct sockaddr_in6 *g = (struct sockaddr_in6 *)&gr.gr_group;
		g->sin6_family = AF_INET6;
		g->sin6_addr = m6.ipv6mr_multiaddr;
		return probe_report(setsockopt(s6, IPPROTO_IPV6, MCAST_JOIN_GROUP, &gr, sizeof(gr)));
	}
	return printf("unknown mode %s\n", m), 2;
}

/* AF_NETLINK other than NETLINK_ROUTE (argv[1]: protocol number; default NETLINK_AUDIT = 9). */
#include <linux/netlink.h>
#include <stdlib.h>
#include <sys/socket.h>
#include "probe.h"
int main(int argc, char **argv)
{
	int proto = argc > 1 ? atoi(argv[1]) : NETLINK_AUDIT;
	return probe_report(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto));
}

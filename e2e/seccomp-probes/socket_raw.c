/* Raw IP sockets (argv[1]: 4|6): forged packets and ICMP tunnels. */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include "probe.h"
int main(int argc, char **argv)
{
	int six = argc > 1 && !strcmp(argv[1], "6");
	return probe_report(socket(six ? AF_INET6 : AF_INET, SOCK_RAW, six ? IPPROTO_ICMPV6 : IPPROTO_RAW));
}

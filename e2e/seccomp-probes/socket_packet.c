/* AF_PACKET (argv[1]: raw|dgram): link-layer access, sniffing and spoofing past the nft rules. */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <string.h>
#include <sys/socket.h>
#include "probe.h"
int main(int argc, char **argv)
{
	int type = argc > 1 && !strcmp(argv[1], "dgram") ? SOCK_DGRAM : SOCK_RAW;
	return probe_report(socket(AF_PACKET, type, htons(ETH_P_ALL)));
}

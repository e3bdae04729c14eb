/* ioctl(TIOCSTI) on a pty, with the command padded in the high 32 bits (argv[1] = "high") the way a
 * 64-bit-only NE check would miss: the kernel reads cmd as an int. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "probe.h"
int main(int argc, char **argv)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return printf("setup failed\n"), 1;
	int s = open(ptsname(m), O_RDWR | O_NOCTTY);
	if (s < 0)
		return printf("setup failed\n"), 1;
	unsigned long cmd = TIOCSTI;
	if (argc > 1 && !strcmp(argv[1], "high"))
		cmd |= 0x100000000ul;
	char c = 'x';
	return probe_report(syscall(SYS_ioctl, s, cmd, &c));
}

/* e2e/seccomp-probes/probe.h — shared by the blocked-syscall probes: each probe makes one forbidden call and
 * prints "errno=N" (0 when the call succeeded). Built by e2e/seccomp.test.sh with gcc, not by the Makefile. */
#ifndef SK_SECCOMP_PROBE_H
#define SK_SECCOMP_PROBE_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static inline int probe_report(long rc)
{
	printf("errno=%d\n", rc < 0 ? errno : 0);
	fflush(stdout);
	return 0;
}
#endif

/* ptrace(PTRACE_TRACEME): the start of every ptrace-based escape and seccomp bypass on old kernels. */
#include <sys/ptrace.h>
#include "probe.h"
int main(void) { return probe_report(ptrace(PTRACE_TRACEME, 0, NULL, NULL)); }

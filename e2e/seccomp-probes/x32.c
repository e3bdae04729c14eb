/* An x32 syscall number (getpid | __X32_SYSCALL_BIT) from a 64-bit process: same AUDIT_ARCH as x86_64,
 * told apart only by bit 30, which the filter must check (bad-architecture action: kill). */
#include <sys/syscall.h>
#include <unistd.h>
#include "probe.h"
int main(void) { return probe_report(syscall(0x40000000L | SYS_getpid)); }

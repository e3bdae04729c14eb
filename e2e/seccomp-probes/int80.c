/* The i386 entry (int 0x80) from a 64-bit process: getpid as syscall 20 of the 32-bit table. A filter that
 * only checks x86_64 numbers would be bypassed; the profile's architecture check must stop it (the
 * filter's bad-architecture action kills the thread, so surviving to print means it got through). */
#include "probe.h"
int main(void)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return probe_report(-1);
	}
	return probe_report(0);
}

/* clone3 carries its flags in memory seccomp cannot read: the profile must answer ENOSYS (glibc then
 * falls back to clone, which is filtered). */
#define _GNU_SOURCE
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "probe.h"
int main(void)
{
	struct clone_args a;
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_NEWUSER;
	a.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return probe_report(pid);
}

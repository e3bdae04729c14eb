/* clone with a namespace flag (argv[1]: user|mnt|net|pid|uts|ipc|cgroup), through the raw syscall so libc
 * cannot take another path. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "probe.h"
int main(int argc, char **argv)
{
	static const struct { const char *n; long f; } t[] = {
		{ "user", CLONE_NEWUSER }, { "mnt", CLONE_NEWNS }, { "net", CLONE_NEWNET }, { "pid", CLONE_NEWPID },
		{ "uts", CLONE_NEWUTS }, { "ipc", CLONE_NEWIPC }, { "cgroup", CLONE_NEWCGROUP },
	};
	long flags = CLONE_NEWUSER;
	for (size_t i = 0; argc > 1 && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(argv[1], t[i].n))
			flags = t[i].f;
	long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return probe_report(pid);
}

/*
 * pause — the sandbox process of every pod on the e2e node: holds the pod's namespaces open and reaps
 * zombies when it is PID 1 of a shared PID namespace. Built statically into a FROM-scratch image
 * because the node has no registry to pull the upstream pause image from.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	/* The runtime stops the sandbox with SIGTERM/SIGINT; exit code 0 marks a clean stop. */
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	struct sigaction stop = { .sa_handler = on_stop };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART };

	if (argc > 1 && argv[1][0] == '-' && argv[1][1] == 'v') {
		puts("stockade-pause 1");
		return 0;
	}
	if (getpid() != 1)
		(void)fputs("pause: warning: not PID 1, zombies of other processes are not reaped\n", stderr);
	if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0) {
		perror("pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
}

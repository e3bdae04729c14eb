/* cli/seccomp_log.h — `stockade-policy seccomp-log`'s reader: the kernel's seccomp audit records from
 * /dev/kmsg or a text file (auditd's log, saved dmesg output), each refusal written as one NDJSON line
 * (policy/seccomp/record.h) with the pod and container of the process when /proc still shows it. The
 * optional stockade-system DaemonSet runs it (docs/operating.md#seccomp-refusals). */
#ifndef SK_CLI_SECCOMP_LOG_H
#define SK_CLI_SECCOMP_LOG_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"

struct sk_scmp_log_opts {
	const char *source;      /* a path; "kmsg" or a character device = /dev/kmsg's record reads */
	const char *proc;        /* the node's /proc (the DaemonSet mounts the host's at /host/proc) */
	const char *node;        /* added to each line as "node" when non-NULL */
	bool follow;             /* keep reading: kmsg blocks, a file is polled (and reopened when rotated) */
	bool from_end;           /* start after what the source holds now */
	bool pods_only;          /* print only refusals of processes found in a pod's cgroup */
	const volatile sig_atomic_t *stop;   /* set by a signal handler: return at the next wakeup */
};

struct sk_scmp_log_stats {
	unsigned long printed, bad, lost;   /* lines out, unreadable seccomp records, kmsg records overwritten */
};

/* Reads until the source ends (not following) or *stop. Unreadable records are counted and reported on
 * stderr, never printed. 0, or < 0 with err filled (the source cannot be opened or read, out cannot be
 * written: -EIO). */
int sk_scmp_log_run(const struct sk_scmp_log_opts *o, FILE *out, struct sk_scmp_log_stats *st,
		    struct sk_err *err);

#endif

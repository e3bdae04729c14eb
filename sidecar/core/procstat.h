/* sidecar/core/procstat.h — the process's own resource figures for the Prometheus process_* metrics (the
 * names every client library exports: process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds, process_start_time_seconds), read from
 * /proc/self at scrape time. Owns only the reading and parsing; metrics.c renders them. */
#ifndef SK_SIDECAR_PROCSTAT_H
#define SK_SIDECAR_PROCSTAT_H

#include <stdint.h>

#include "common/err.h"

struct sk_procstat {
	double cpu_seconds;          /* user + system */
	uint64_t resident_bytes;
	uint64_t virtual_bytes;
	uint64_t open_fds;
	uint64_t max_fds;            /* the soft RLIMIT_NOFILE */
	double start_time_seconds;   /* Unix time the process started */
};

/* Parses the text of /proc/<pid>/stat (the comm field may hold spaces and parentheses: fields are counted
 * after its last ')'). clk_tck: sysconf(_SC_CLK_TCK); page: the page size; boot_time: /proc/stat btime.
 * Fills cpu_seconds, resident_bytes, virtual_bytes and start_time_seconds. 0, or -EINVAL (err says which
 * field) when the text is not a stat line. */
int sk_procstat_parse_stat(const char *text, long clk_tck, long page, uint64_t boot_time, struct sk_procstat *out,
			   struct sk_err *err);
/* The "btime N" line of /proc/stat's text; 0 or -EINVAL. */
int sk_procstat_parse_btime(const char *text, uint64_t *out, struct sk_err *err);
/* Reads all of it for this process. 0, or -errno with err naming the file. */
int sk_procstat_read(struct sk_procstat *out, struct sk_err *err);

#endif

/* policy/seccomp/record.h — the kernel's seccomp audit record (type=1326, AUDIT_SECCOMP), one line as the
 * node shows it, read into fields; the pod UID and container id from a /proc/PID/cgroup text; and the
 * NDJSON line `stockade-policy seccomp-log` prints for one refusal (docs/operating.md#seccomp-refusals).
 *
 * Pure: no I/O, no message (the caller knows where the line came from). The lines are hostile: the
 * agent names its own threads (comm) and binaries (exe), and anyone with CAP_AUDIT_WRITE can put text into
 * other audit records. So a record is recognised only at the start of a line in one of the three forms
 * the kernel's text takes, every field the record needs must be there exactly once, and a value is read as
 * the kernel writes it (audit_log_untrustedstring: quoted when it is plain printable ASCII without '"' or
 * space, else bare hex) or the record is refused. Forms:
 *   /dev/kmsg:   "5,3327,35996200317,-;audit: type=1326 audit(1795923324.745:135): ... code=0x50000"
 *   dmesg/journal (-o cat): "audit: type=1326 audit(...): ..."
 *   auditd's log: "type=SECCOMP msg=audit(...): ..." (its enriched fields after 0x1d are not read) */
#ifndef SK_POLICY_SECCOMP_RECORD_H
#define SK_POLICY_SECCOMP_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define SK_SCMP_COMM_MAX 64      /* the kernel's is 16 (TASK_COMM_LEN); room for a hostile line to be refused */
#define SK_SCMP_EXE_MAX 4096     /* PATH_MAX */

struct sk_scmp_record {
	char stamp[32];          /* "1795923324.745:135": the audit timestamp and serial */
	uint32_t pid;            /* in the node's PID namespace */
	uint32_t uid;            /* valid when has_uid */
	bool has_uid;
	char comm[SK_SCMP_COMM_MAX];
	char exe[SK_SCMP_EXE_MAX];  /* "" when the record has none */
	uint32_t arch;           /* AUDIT_ARCH_* = libseccomp's SCMP_ARCH_* token */
	int32_t syscall;         /* as the filter saw it (x32: with bit 30) */
	uint32_t code;           /* the action, SECCOMP_RET_ACTION_FULL bits */
	int32_t sig;
	bool compat;
};

enum sk_scmp_rec_result {
	SK_SCMP_REC_OK = 0,      /* a seccomp record, every field read */
	SK_SCMP_REC_OTHER,       /* not a seccomp record: skip it */
	SK_SCMP_REC_BAD,         /* starts as a seccomp record but a field is missing, repeated or malformed */
};

/* Reads one line (up to the first '\n' or len; NUL bytes make it BAD). out is filled only on OK. */
enum sk_scmp_rec_result sk_scmp_record_parse(const char *line, size_t len, struct sk_scmp_record *out);

/* The action's name: "errno", "kill_process", "kill_thread", "trap", "trace", "log", "user_notif",
 * "allow", or "unknown". */
const char *sk_scmp_record_action(uint32_t code);
/* "x86_64", "x86", "x32", "aarch64", "arm", or NULL for another architecture. */
const char *sk_scmp_record_arch(uint32_t arch, int32_t syscall);

struct sk_scmp_pod {
	char uid[37];            /* the pod's UID, "" when the cgroup path names none */
	char container[65];      /* the container id (hex), "" when none */
};
/* Finds the Kubernetes pod and container in the text of /proc/PID/cgroup (cgroup v2's "0::" line first,
 * then any v1 line): the systemd driver's "kubepods-...-pod<uid with _>.slice/<runtime>-<id>.scope" and
 * the cgroupfs driver's "kubepods/.../pod<uid>/<id>". Fills what it finds (out zeroed first); returns true
 * when a pod UID was found. */
bool sk_scmp_cgroup_pod(const char *text, size_t len, struct sk_scmp_pod *out);

/* Appends the NDJSON line of one refusal, newline included:
 *   {"kind":"seccomp","stamp":"...","pid":N,"uid":N,"comm":"...","exe":"...","arch":"x86_64",
 *    "syscall":"unshare","syscall_nr":272,"compat":false,"action":"errno","code":"0x50000","sig":0,
 *    "pod_uid":"...","container_id":"..."}
 * uid and exe only when the record has them, pod_uid/container_id only when pod is non-NULL and found;
 * arch is the hex token when unknown, syscall null when libseccomp cannot name it on that architecture.
 * Returns 0 or -ENOMEM (sticky on b). */
int sk_scmp_record_json(const struct sk_scmp_record *r, const struct sk_scmp_pod *pod, struct sk_strbuf *b);

#endif

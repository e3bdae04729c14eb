/* Any syscall by name with every argument ~0 (pointers fault, flags are invalid), so that without the
 * filter the kernel refuses it harmlessly (EFAULT/EINVAL) and with it the filter answers EPERM. */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "probe.h"
static const struct { const char *n; long nr; } t[] = {
	{ "keyctl", SYS_keyctl }, { "add_key", SYS_add_key }, { "request_key", SYS_request_key },
	{ "userfaultfd", SYS_userfaultfd }, { "perf_event_open", SYS_perf_event_open }, { "setns", SYS_setns },
	{ "process_vm_readv", SYS_process_vm_readv }, { "process_vm_writev", SYS_process_vm_writev },
	{ "open_by_handle_at", SYS_open_by_handle_at }, { "name_to_handle_at", SYS_name_to_handle_at },
	{ "kexec_load", SYS_kexec_load }, { "init_module", SYS_init_module }, { "finit_module", SYS_finit_module },
	{ "delete_module", SYS_delete_module }, { "swapon", SYS_swapon }, { "swapoff", SYS_swapoff },
	{ "acct", SYS_acct }, { "quotactl", SYS_quotactl }, { "settimeofday", SYS_settimeofday },
	{ "clock_settime", SYS_clock_settime }, { "adjtimex", SYS_adjtimex }, { "syslog", SYS_syslog },
	{ "pivot_root", SYS_pivot_root }, { "chroot", SYS_chroot }, { "umount2", SYS_umount2 },
	{ "io_uring_enter", SYS_io_uring_enter }, { "io_uring_register", SYS_io_uring_register },
	{ "reboot", SYS_reboot }, { "lookup_dcookie", SYS_lookup_dcookie }, { "fsopen", SYS_fsopen },
	{ "open_tree", SYS_open_tree }, { "kcmp", SYS_kcmp }, { "pidfd_getfd", SYS_pidfd_getfd },
};
int main(int argc, char **argv)
{
	for (size_t i = 0; argc > 1 && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(argv[1], t[i].n))
			return probe_report(syscall(t[i].nr, -1L, -1L, -1L, -1L, -1L, -1L));
	printf("unknown probe\n");
	return 2;
}

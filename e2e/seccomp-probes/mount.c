/* mount: a file system type that does not exist, so that without the filter it fails harmlessly (ENODEV).
 * The raw syscall: <sys/mount.h> trips cppcheck on glibc's MS_NOUSER. */
#include <sys/syscall.h>
#include <unistd.h>
#include "probe.h"
int main(void) { return probe_report(syscall(SYS_mount, "none", "/", "stockade-no-such-fs", 0UL, NULL)); }

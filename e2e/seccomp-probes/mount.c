/* mount: a file system type that does not exist, so that without the filter it fails harmlessly (ENODEV). */
#include <sys/mount.h>
#include "probe.h"
int main(void) { return probe_report(mount("none", "/", "stockade-no-such-fs", 0, NULL)); }

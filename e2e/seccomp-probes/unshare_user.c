/* unshare(CLONE_NEWUSER): the door to every other namespace for an unprivileged user. */
#define _GNU_SOURCE
#include <sched.h>
#include "probe.h"
int main(void) { return probe_report(unshare(CLONE_NEWUSER)); }

/* personality(ADDR_NO_RANDOMIZE): turning off ASLR for what the agent execs next. */
#include <sys/personality.h>
#include "probe.h"
int main(void) { return probe_report(personality(ADDR_NO_RANDOMIZE)); }

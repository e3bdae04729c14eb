/* sidecar/main.c — placeholder until the sidecar lands. */
#include <stdio.h>

#include "common/err.h"

int main(void)
{
	fprintf(stderr, "stockade-sidecar: not implemented yet\n");
	return SK_EXIT_USAGE;
}

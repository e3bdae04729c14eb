/* init/main.c — placeholder until the init lands. */
#include <stdio.h>

#include "common/err.h"

int main(void)
{
	fprintf(stderr, "stockade-init: not implemented yet\n");
	return SK_EXIT_USAGE;
}

/* cli/cmd_check.c — `stockade-policy check [--no-file-checks] FILE...`: loads each policy and
 * reports "FILE: ok (N rules, mode M[, tls.echGrease allow])" (plus forge import notes) on stdout, or every diagnostic on stderr.
 * Exit 0 when every file is valid, 1 when any is not (or cannot be read), 2 on bad usage. */
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "cli/cli.h"
#include "policy/policy.h"

static int check_one(const char *path, unsigned flags)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_file_ex(path, -1, flags, &p, &diags);
	/* Read errors come back as a position-less diagnostic: "FILE: cannot read: <strerror>". */
	sk_diags_print(&diags, stderr);
	sk_diags_free(&diags);
	if (r < 0)
		return SK_EXIT_FAIL;
	/* Settings that loosen the default are named; the default ones are not, to keep the line short. */
	printf("%s: ok (%zu rule%s, mode %s%s)\n", path, p->n_rules, p->n_rules == 1 ? "" : "s", sk_mode_name(p->mode),
	       p->tls.ech_grease_allow ? ", tls.echGrease allow" : "");
	for (size_t i = 0; i < p->n_import_notes; i++)
		printf("%s: %s\n", path, p->import_notes[i]);
	sk_policy_free(p);
	return SK_EXIT_OK;
}

int sk_cmd_check(int argc, char **argv)
{
	unsigned flags = 0;
	int first = 1;
	for (; first < argc && argv[first][0] == '-' && argv[first][1]; first++) {
		if (!strcmp(argv[first], "--")) {
			first++;
			break;
		}
		if (!strcmp(argv[first], "--no-file-checks")) {
			flags |= SK_LOAD_NO_FILE_CHECKS;
			continue;
		}
		fprintf(stderr, "stockade-policy check: unknown option '%s'\n", argv[first]);
		fprintf(stderr, "usage: stockade-policy check [--no-file-checks] FILE...\n");
		return SK_EXIT_USAGE;
	}
	if (first >= argc) {
		fprintf(stderr, "usage: stockade-policy check [--no-file-checks] FILE...\n");
		return SK_EXIT_USAGE;
	}
	int rc = SK_EXIT_OK;
	for (int i = first; i < argc; i++)
		if (check_one(argv[i], flags) != SK_EXIT_OK)
			rc = SK_EXIT_FAIL;
	return rc;
}

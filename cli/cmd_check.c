/* cli/cmd_check.c — `stockade-policy check [--no-file-checks] [--guardrails G] [-o text|json] FILE...`: loads
 * each policy, runs its seccomp section through the profile generator the installer uses (so a name the
 * generator refuses fails here, at its file:line:col, not later on the node), with --guardrails checks it
 * against the cluster guardrails as admission does (policy/guardrails.h: each violation at the policy's
 * position naming the guardrail's; an invalid guardrails file is exit 2), and reports "FILE: ok (N rules, mode
 * M[, tls.echGrease allow])" (plus forge import notes) on stdout, or every diagnostic on stderr; with
 * -o json one array of per-file objects on stdout instead. Exit 0 when every file is valid, 3 when any is
 * not (or cannot be read), 2 on bad usage. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "cli/cli.h"
#include "policy/guardrails.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"
#include "policy/seccomp/seccomp.h"

/* Loads path; on success *out is the policy (caller frees), diags hold every error otherwise. */
static int load_checked(const char *path, unsigned flags, const struct sk_guardrails *g, struct sk_policy **out,
			struct sk_diags *diags)
{
	if (sk_policy_load_file_ex(path, -1, flags, out, diags) < 0)
		return -1;
	if (sk_seccomp_check_policy(*out, diags) < 0 || (g && sk_guardrails_check(*out, g, diags) > 0)) {
		sk_policy_free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

static int check_text(const char *path, unsigned flags, const struct sk_guardrails *g)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	int r = load_checked(path, flags, g, &p, &diags);
	/* Read errors come back as a position-less diagnostic: "FILE: cannot read: <strerror>". */
	sk_diags_print(&diags, stderr);
	sk_diags_free(&diags);
	if (r < 0)
		return SK_EXIT_POLICY;
	/* Settings that loosen the default are named; the default ones are not, to keep the line short. */
	printf("%s: ok (%zu rule%s, mode %s%s)\n", p->source, p->n_rules, p->n_rules == 1 ? "" : "s",
	       sk_mode_name(p->mode), p->tls.ech_grease_allow ? ", tls.echGrease allow" : "");
	for (size_t i = 0; i < p->n_import_notes; i++)
		printf("%s: %s\n", p->source, p->import_notes[i]);
	sk_policy_free(p);
	return SK_EXIT_OK;
}

static cJSON *check_json(const char *path, unsigned flags, const struct sk_guardrails *g, int *rc)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	int r = load_checked(path, flags, g, &p, &diags);
	cJSON *o = cJSON_CreateObject(), *errs = cJSON_CreateArray();
	if (!o || !errs) {
		cJSON_Delete(o);
		cJSON_Delete(errs);
		sk_diags_free(&diags);
		sk_policy_free(p);
		return NULL;
	}
	cJSON_AddStringToObject(o, "file", strcmp(path, "-") ? path : "<stdin>");
	cJSON_AddBoolToObject(o, "valid", r == 0);
	if (r == 0) {
		cJSON_AddNumberToObject(o, "rules", (double)p->n_rules);
		cJSON_AddStringToObject(o, "mode", sk_mode_name(p->mode));
		cJSON *notes = cJSON_AddArrayToObject(o, "notes");
		for (size_t i = 0; notes && i < p->n_import_notes; i++)
			cJSON_AddItemToArray(notes, cJSON_CreateString(p->import_notes[i]));
	} else {
		*rc = SK_EXIT_POLICY;
	}
	for (size_t i = 0; i < diags.n; i++) {
		cJSON *e = cJSON_CreateObject();
		if (!e)
			break;
		cJSON_AddNumberToObject(e, "line", diags.v[i].line);
		cJSON_AddNumberToObject(e, "col", diags.v[i].col);
		cJSON_AddStringToObject(e, "message", diags.v[i].msg);
		cJSON_AddItemToArray(errs, e);
	}
	cJSON_AddItemToObject(o, "errors", errs);
	sk_diags_free(&diags);
	sk_policy_free(p);
	return o;
}

int sk_cmd_check(int argc, char **argv)
{
	unsigned flags = 0;
	const char *gr_path = NULL;
	struct sk_guardrails *g = NULL;
	enum sk_cli_fmt fmt = SK_CLI_TEXT;
	const char **files = calloc((size_t)argc, sizeof(*files));
	size_t n = 0;
	bool opts_done = false;
	int rc = SK_EXIT_OK;
	if (!files) {
		(void)fprintf(stderr, "stockade-policy check: out of memory\n");
		return SK_EXIT_RUNTIME;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		int m;
		if (opts_done || a[0] != '-' || !a[1]) {
			files[n++] = a;
		} else if (!strcmp(a, "--")) {
			opts_done = true;
		} else if (!strcmp(a, "--no-file-checks")) {
			flags |= SK_LOAD_NO_FILE_CHECKS;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--policy", NULL, &v)) != 0) {
			if (m < 0)
				goto usage;
			files[n++] = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--guardrails", NULL, &v)) != 0) {
			if (m < 0)
				goto usage;
			gr_path = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--output", "-o", &v)) != 0) {
			if (m < 0 || sk_cli_format(argv[0], v, SK_CLI_FMT(SK_CLI_TEXT) | SK_CLI_FMT(SK_CLI_JSON), &fmt) < 0)
				goto usage;
		} else {
			rc = sk_cli_usage_error(argv[0], "unknown option '%s'", a);
			goto out;
		}
	}
	if (!n) {
		rc = sk_cli_usage_error(argv[0], "%s", "no policy file given");
		goto out;
	}
	if (gr_path) {
		struct sk_diags gd = { 0 };
		if (sk_guardrails_load_file(gr_path, &g, &gd) < 0) {
			/* Not the policy's fault: the guardrails are an input of their own (exit 2, like a profile). */
			sk_diags_print(&gd, stderr);
			sk_diags_free(&gd);
			rc = SK_EXIT_USAGE;
			goto out;
		}
		sk_diags_free(&gd);
	}
	if (fmt == SK_CLI_TEXT) {
		for (size_t i = 0; i < n; i++)
			if (check_text(files[i], flags, g) != SK_EXIT_OK)
				rc = SK_EXIT_POLICY;
		goto out;
	}
	cJSON *all = cJSON_CreateArray();
	for (size_t i = 0; all && i < n; i++) {
		cJSON *o = check_json(files[i], flags, g, &rc);
		if (!o) {
			cJSON_Delete(all);
			all = NULL;
		} else {
			cJSON_AddItemToArray(all, o);
		}
	}
	char *s = all ? cJSON_Print(all) : NULL;
	cJSON_Delete(all);
	if (!s) {
		(void)fprintf(stderr, "stockade-policy check: out of memory\n");
		rc = SK_EXIT_RUNTIME;
		goto out;
	}
	printf("%s\n", s);
	free(s);
	goto out;
usage:
	sk_cli_usage(argv[0], stderr);
	rc = SK_EXIT_USAGE;
out:
	sk_guardrails_free(g);
	free(files);
	return rc;
}

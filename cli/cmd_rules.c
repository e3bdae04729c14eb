/* cli/cmd_rules.c — `stockade-policy rules [-o text|json] (FILE | --policy F)`: prints the nft script
 * stockade-init would load (the same builder and printer as `stockade-init --dry-run`, init/ruleset.h),
 * or with -o json the same ruleset as data: chains, sets with their elements, rules by name with their
 * verdict and counter, and the policy's egress rules the sets came from. Exit 0, 2 usage, 3 invalid
 * policy, 5 write failure. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "init/ruleset.h"
#include "cli/cli.h"
#include "policy/policy.h"

static const char *verdict_name(enum sk_rs_verdict v)
{
	switch (v) {
	case SK_RS_ACCEPT: return "accept";
	case SK_RS_RETURN: return "return";
	case SK_RS_REDIRECT: return "redirect";
	case SK_RS_REJECT_TCP: return "reject_tcp_reset";
	case SK_RS_REJECT_ADMIN: return "reject_admin_prohibited";
	case SK_RS_DROP: return "drop";
	}
	return "?";
}

static char *ruleset_json(const struct sk_policy *p, const struct sk_ruleset *rs)
{
	char buf[512];
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "table", SK_RS_FAMILY_NAME " " SK_RS_TABLE);
	cJSON *chains = cJSON_AddArrayToObject(o, "chains");
	for (size_t i = 0; chains && i < SK_RS_N_CHAINS; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddItemToArray(chains, c);
		cJSON_AddStringToObject(c, "name", rs->chains[i].name);
		cJSON_AddStringToObject(c, "type", rs->chains[i].type);
		cJSON_AddNumberToObject(c, "priority", rs->chains[i].priority);
	}
	cJSON *sets = cJSON_AddArrayToObject(o, "sets");
	for (size_t i = 0; sets && i < SK_RS_N_SETS; i++) {
		const struct sk_rs_set *s = &rs->sets[i];
		cJSON *js = cJSON_CreateObject();
		cJSON_AddItemToArray(sets, js);
		cJSON_AddStringToObject(js, "name", s->name);
		cJSON *el = cJSON_AddArrayToObject(js, "elements");
		for (size_t k = 0; el && k < s->n_elems; k++) {
			sk_rs_elem_format(s, &s->elems[k], buf, sizeof(buf));
			cJSON_AddItemToArray(el, cJSON_CreateString(buf));
		}
	}
	cJSON *rules = cJSON_AddArrayToObject(o, "rules");
	for (size_t i = 0; rules && i < rs->n_rules; i++) {
		const struct sk_rs_rule *r = &rs->rules[i];
		cJSON *jr = cJSON_CreateObject();
		cJSON_AddItemToArray(rules, jr);
		cJSON_AddStringToObject(jr, "chain", rs->chains[r->chain].name);
		cJSON_AddStringToObject(jr, "name", r->name);
		cJSON_AddStringToObject(jr, "verdict", verdict_name(r->verdict));
		if (r->verdict == SK_RS_REDIRECT)
			cJSON_AddNumberToObject(jr, "port", r->redirect_port);
		if (r->counter != SK_RS_CNT_NONE)
			cJSON_AddStringToObject(jr, "counter", sk_rs_counter_name(r->counter));
	}
	cJSON *eg = cJSON_AddArrayToObject(o, "egress");
	for (size_t i = 0; eg && i < p->n_rules; i++) {
		cJSON *je = cJSON_CreateObject();
		cJSON_AddItemToArray(eg, je);
		cJSON_AddNumberToObject(je, "index", (double)i);
		cJSON_AddStringToObject(je, "rule", sk_rule_format(&p->rules[i], buf, sizeof(buf)));
		cJSON_AddBoolToObject(je, "kernel", p->rules[i].direct || p->rules[i].proto == SK_PROTO_UDP);
	}
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	return s;
}

int sk_cmd_rules(int argc, char **argv)
{
	const char *path = NULL;
	enum sk_cli_fmt fmt = SK_CLI_TEXT;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int m;
		if ((m = sk_cli_opt(argc, argv, &i, "--policy", NULL, &v)) != 0) {
			if (m < 0 || path)
				return sk_cli_usage_error(argv[0], "%s", "expected one policy file");
			path = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--output", "-o", &v)) != 0) {
			if (m < 0 || sk_cli_format(argv[0], v, SK_CLI_FMT(SK_CLI_TEXT) | SK_CLI_FMT(SK_CLI_JSON), &fmt) < 0)
				return sk_cli_usage_error(argv[0], "%s", "-o needs text or json");
		} else if (argv[i][0] != '-' || !argv[i][1]) {
			if (path)
				return sk_cli_usage_error(argv[0], "%s", "expected one policy file");
			path = argv[i];
		} else {
			return sk_cli_usage_error(argv[0], "unknown option '%s'", argv[i]);
		}
	}
	if (!path)
		return sk_cli_usage_error(argv[0], "%s", "no policy file given");
	struct sk_err err = { 0 };
	struct sk_diags diags = { 0 };
	struct sk_ruleset *rs = NULL;
	struct sk_policy *p = NULL;
	int ex = SK_EXIT_OK;
	if (sk_ruleset_load(path, &p, &rs, &diags, &err) < 0) {
		sk_diags_print(&diags, stderr);
		(void)fprintf(stderr, "stockade-policy rules: %s\n", err.msg);
		ex = diags.n ? SK_EXIT_POLICY : SK_EXIT_RUNTIME;
	} else if (fmt == SK_CLI_JSON) {
		char *s = ruleset_json(p, rs);
		if (!s || printf("%s\n", s) < 0 || fflush(stdout) != 0) {
			(void)fprintf(stderr, "stockade-policy rules: %s\n", s ? "write stdout failed" : "out of memory");
			ex = SK_EXIT_RUNTIME;
		}
		free(s);
	} else if (sk_ruleset_print(rs, stdout, &err) < 0 || fflush(stdout) != 0) {
		(void)fprintf(stderr, "stockade-policy rules: %s\n", err.msg[0] ? err.msg : "write stdout failed");
		ex = SK_EXIT_RUNTIME;
	}
	sk_ruleset_free(rs);
	sk_policy_free(p);
	sk_diags_free(&diags);
	return ex;
}

/* cli/cmd_explain.c — `stockade-policy explain FILE HOST PORT [--proto tls|http|tcp|udp]`: runs
 * the matcher the sidecar uses on one connection and prints the decision as one JSON line. HOST is a
 * name (normalised as the proxy would) or an IP literal; without --proto the protocol is guessed from
 * the port as a client would speak it (443 tls, 80 http, else tcp) and printed, so it is never hidden.
 * A rule with a budget adds "budget" (as text) and "budget_from" (rule or budgets.default).
 * `--policy F` may stand for FILE ("-" is stdin); -o text prints one line instead of the JSON object.
 * Exit 0 allow, 1 deny, 2 usage, 3 the policy does not load. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "policy/addr.h"
#include "cli/cli.h"
#include "policy/domain.h"
#include "policy/match.h"
#include "policy/policy.h"

static int parse_port(const char *s, uint16_t *out)
{
	size_t n = strlen(s);
	if (n < 1 || n > 5 || s[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	long v = strtol(s, NULL, 10);
	if (v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

static int parse_proto(const char *s, enum sk_proto *out)
{
	static const enum sk_proto all[] = { SK_PROTO_TLS, SK_PROTO_HTTP, SK_PROTO_TCP, SK_PROTO_UDP };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(s, sk_proto_name(all[i]))) {
			*out = all[i];
			return 0;
		}
	return -EINVAL;
}

static int print_decision(const struct sk_policy *p, const struct sk_query *q, const char *host_text,
			  const struct sk_decision *d)
{
	char text[512];
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	cJSON_AddStringToObject(o, "decision", d->allow ? "allow" : "deny");
	cJSON_AddNumberToObject(o, "rule", d->rule);
	cJSON_AddStringToObject(o, "reason", sk_reason_name(d->reason));
	cJSON_AddStringToObject(o, "host", host_text);
	cJSON_AddNumberToObject(o, "port", q->port);
	cJSON_AddStringToObject(o, "proto", sk_proto_name(q->proto));
	if (d->rule >= 0 && (size_t)d->rule < p->n_rules) {
		const struct sk_rule *r = &p->rules[d->rule];
		if (r->name)
			cJSON_AddStringToObject(o, "rule_name", r->name);
		cJSON_AddStringToObject(o, "rule_text", sk_rule_format(r, text, sizeof(text)));
		/* informational: a path too long for the buffer is shown cut */
		(void)snprintf(text, sizeof(text), "%s:%u:%u", p->source, r->pos.line, r->pos.col);
		cJSON_AddStringToObject(o, "rule_at", text);
		/* The budget the rule's connections are counted against (per rule, not per name). */
		if (r->budget.window_ms) {
			cJSON_AddStringToObject(o, "budget", sk_budget_format(&r->budget, text, sizeof(text)));
			cJSON_AddStringToObject(o, "budget_from", r->budget.from_default ? "budgets.default" : "rule");
		}
	} else {
		cJSON_AddNullToObject(o, "rule_text");
	}
	cJSON_AddStringToObject(o, "mode", sk_mode_name(p->mode));
	/* The matcher decides on the name; a TLS hello carrying ECH is then let through only with
	 * tls.echGrease: allow. Shown only when it applies, so the default output stays as it was. */
	if (q->proto == SK_PROTO_TLS && p->tls.ech_grease_allow)
		cJSON_AddStringToObject(o, "echGrease", "allow");
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return -ENOMEM;
	printf("%s\n", s);
	free(s);
	return 0;
}

static void print_text(const struct sk_policy *p, const struct sk_query *q, const char *host_text,
		       const struct sk_decision *d)
{
	char text[512];
	printf("%s %s:%u/%s", d->allow ? "allow" : "deny", host_text, q->port, sk_proto_name(q->proto));
	if (d->rule >= 0 && (size_t)d->rule < p->n_rules) {
		const struct sk_rule *r = &p->rules[d->rule];
		char label[24];
		printf(" by rule %s (%s) at %s:%u:%u", sk_rule_label(p, d->rule, label), sk_rule_format(r, text, sizeof(text)),
		       p->source, r->pos.line, r->pos.col);
	}
	if (d->reason != SK_REASON_RULE)
		printf(": %s", sk_reason_name(d->reason));
	printf(", mode %s\n", sk_mode_name(p->mode));
}

int sk_cmd_explain(int argc, char **argv)
{
	const char *pos[3];
	int n_pos = 0;
	unsigned flags = 0;
	const char *proto_arg = NULL, *policy = NULL;
	enum sk_cli_fmt fmt = SK_CLI_JSON;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int m;
		if ((m = sk_cli_opt(argc, argv, &i, "--proto", NULL, &v)) != 0) {
			if (m < 0)
				return sk_cli_usage_error(argv[0], "%s", "--proto needs a value");
			proto_arg = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--policy", NULL, &v)) != 0) {
			if (m < 0)
				return sk_cli_usage_error(argv[0], "%s", "--policy needs a file");
			policy = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--output", "-o", &v)) != 0) {
			if (m < 0 || sk_cli_format(argv[0], v, SK_CLI_FMT(SK_CLI_TEXT) | SK_CLI_FMT(SK_CLI_JSON), &fmt) < 0)
				return sk_cli_usage_error(argv[0], "%s", "-o needs text or json");
		} else if (!strcmp(argv[i], "--no-file-checks")) {
			flags |= SK_LOAD_NO_FILE_CHECKS;
		} else if (argv[i][0] == '-' && argv[i][1] && n_pos < 3) {
			return sk_cli_usage_error(argv[0], "unknown option '%s'", argv[i]);
		} else if (n_pos < 3) {
			pos[n_pos++] = argv[i];
		} else {
			return sk_cli_usage_error(argv[0], "%s", "too many arguments");
		}
	}
	/* --policy F takes the place of the first positional argument. */
	if (policy && n_pos == 2) {
		pos[2] = pos[1];
		pos[1] = pos[0];
		pos[0] = policy;
		n_pos = 3;
	} else if (policy) {
		return sk_cli_usage_error(argv[0], "%s", "with --policy, expected HOST PORT");
	}
	if (n_pos != 3)
		return sk_cli_usage_error(argv[0], "%s", "expected FILE HOST PORT");
	struct sk_query q = { 0 };
	struct sk_addr addr;
	char name[SK_DOMAIN_MAX + 1], host_text[SK_ADDR_STRLEN > SK_DOMAIN_MAX + 1 ? SK_ADDR_STRLEN : SK_DOMAIN_MAX + 1];
	if (parse_port(pos[2], &q.port) < 0) {
		(void)fprintf(stderr, "stockade-policy explain: invalid port '%s', expected 1..65535\n", pos[2]);
		return SK_EXIT_USAGE;
	}
	if (proto_arg && parse_proto(proto_arg, &q.proto) < 0) {
		(void)fprintf(stderr, "stockade-policy explain: invalid protocol '%s', expected tls, http, tcp or udp\n",
			proto_arg);
		return SK_EXIT_USAGE;
	}
	if (!proto_arg)
		q.proto = q.port == 443 ? SK_PROTO_TLS : q.port == 80 ? SK_PROTO_HTTP : SK_PROTO_TCP;
	if (sk_addr_parse(pos[1], &addr) == 0) {
		q.dst = &addr;
		sk_addr_format(&addr, host_text);
	} else {
		bool wildcard = false;
		const char *why = NULL;
		if (sk_domain_normalize(pos[1], strlen(pos[1]), 0, name, &wildcard, &why) < 0) {
			(void)fprintf(stderr, "stockade-policy explain: invalid host '%s': %s, expected a name or an IP address\n",
				pos[1], why ? why : "invalid");
			return SK_EXIT_USAGE;
		}
		q.host = name;
		(void)snprintf(host_text, sizeof(host_text), "%s", name);
	}

	struct sk_policy *p = NULL;
	int r = sk_cli_load_policy(pos[0], flags, &p);
	if (r != SK_EXIT_OK)
		return r;
	struct sk_decision d;
	sk_match(p, &q, &d);
	if (fmt == SK_CLI_TEXT) {
		print_text(p, &q, host_text, &d);
		r = 0;
	} else {
		r = print_decision(p, &q, host_text, &d);
	}
	sk_policy_free(p);
	if (r < 0) {
		(void)fprintf(stderr, "stockade-policy explain: out of memory\n");
		return SK_EXIT_RUNTIME;
	}
	return d.allow ? SK_EXIT_OK : SK_EXIT_FAIL;
}

/* cli/cmd_explain.c — `stockade-policy explain FILE HOST PORT [--proto tls|http|tcp|udp] [--method M
 * --path P]`: runs the matcher the sidecar uses on one connection and prints the decision as one JSON line.
 * When the deciding rule has request rules (requests, access), the connection alone is not the whole
 * answer: a plain-HTTP request, or one inside the TLS of an `inspect: true` rule, is decided on --method
 * and --path as the sidecar does (the path normalised, first request rule that matches); any other
 * stream under such a rule is denied (request_unreadable), as the sidecar denies it. HOST is a
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
#include "common/http_path.h"
#include "policy/addr.h"
#include "cli/cli.h"
#include "policy/domain.h"
#include "policy/match.h"
#include "policy/policy.h"
#include "policy/requests.h"

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

/* What the rule's request rules make of the connection (or of --method/--path on it). */
struct req_view {
	bool on;               /* the deciding rule has request rules */
	bool asked;            /* --method and --path were given */
	bool allow;
	const char *reason;    /* the sidecar's audit reason on a deny: request_denied, request_bad_path,
				* request_unreadable */
	const char *why;       /* a phrase for the deny */
	int idx;               /* the request rule that allows, -1 none */
	const char *method;
	char path[SK_HTTP_PATH_MAX];
};

static void judge_request(const struct sk_policy *p, const struct sk_query *q, const struct sk_decision *d,
			  const char *method, const char *path, struct req_view *rv)
{
	memset(rv, 0, sizeof(*rv));
	rv->idx = -1;
	rv->allow = true;
	if (!d->allow || d->rule < 0 || (size_t)d->rule >= p->n_rules || !p->rules[d->rule].requests)
		return;
	rv->on = true;
	rv->asked = method && path;
	rv->method = method;
	/* as sidecar/proxy/requests_gate.c's sk_req_gate_conn: plain HTTP, and TLS of an inspect rule (the
	 * sidecar terminates it and reads every request), are decided request by request */
	bool readable = q->proto == SK_PROTO_HTTP || (q->proto == SK_PROTO_TLS && p->rules[d->rule].inspect);
	if (!readable) {
		rv->allow = false;
		rv->reason = "request_unreadable";
		rv->why = q->proto == SK_PROTO_TLS ? "its requests are in TLS, and the rule does not inspect it"
						   : "a stream that is not HTTP has no requests to decide";
		return;
	}
	if (!rv->asked)
		return;
	enum sk_path_result pr = sk_http_path_normalize(path, strlen(path), q->host, rv->path, sizeof(rv->path), NULL);
	if (pr != SK_PATH_OK) {
		rv->allow = false;
		rv->reason = "request_bad_path";
		rv->why = sk_path_result_text(pr);
		(void)snprintf(rv->path, sizeof(rv->path), "%.*s", (int)strcspn(path, "?"), path);
		return;
	}
	struct sk_req_decision rd;
	sk_requests_decide(p->rules[d->rule].requests, method, rv->path, &rd);
	rv->allow = rd.allow;
	rv->idx = rd.index;
	if (!rd.allow) {
		rv->reason = "request_denied";
		rv->why = "no request rule allows it";
	}
}

/* "requests[1] POST /repos/acme/x/pulls at FILE:L:C" (or "access read-only at ...") for the request rule
 * that allows. */
static const char *request_label(const struct sk_policy *p, const struct sk_decision *d, const struct req_view *rv,
				 char *out, size_t outsz)
{
	const struct sk_requests *rq = p->rules[d->rule].requests;
	char rule[400];
	sk_req_rule_format(rq, (size_t)rv->idx, rule, sizeof(rule));
	const struct sk_pos *pos = &rq->v[rv->idx].pos;
	if (rq->access != SK_ACCESS_NONE)
		(void)snprintf(out, outsz, "%s at %s:%u:%u", rule, p->source, pos->line, pos->col);
	else
		(void)snprintf(out, outsz, "requests[%d] %s at %s:%u:%u", rv->idx, rule, p->source, pos->line, pos->col);
	return out;
}

static void add_request(cJSON *o, const struct sk_policy *p, const struct sk_decision *d, const struct req_view *rv)
{
	char text[512];
	if (!rv->on)
		return;
	const struct sk_requests *rq = p->rules[d->rule].requests;
	if (rv->asked) {
		cJSON_AddStringToObject(o, "method", rv->method);
		cJSON_AddStringToObject(o, "path", rv->path);
	}
	if (!rv->allow) {
		cJSON_AddStringToObject(o, "request_reason", rv->why);
	} else if (rv->idx >= 0) {
		const struct sk_pos *pos = &rq->v[rv->idx].pos;
		cJSON_AddNumberToObject(o, "request_rule", rv->idx);
		if (rq->access != SK_ACCESS_NONE)
			cJSON_AddStringToObject(o, "request_rule_text", sk_req_rule_format(rq, (size_t)rv->idx, text, sizeof(text)));
		else {
			char rule[400];
			(void)snprintf(text, sizeof(text), "requests[%d] %s", rv->idx,
				       sk_req_rule_format(rq, (size_t)rv->idx, rule, sizeof(rule)));
			cJSON_AddStringToObject(o, "request_rule_text", text);
		}
		(void)snprintf(text, sizeof(text), "%s:%u:%u", p->source, pos->line, pos->col);
		cJSON_AddStringToObject(o, "request_rule_at", text);
	} else {
		cJSON_AddStringToObject(o, "requests", "decided per request: give --method and --path");
	}
}

static int print_decision(const struct sk_policy *p, const struct sk_query *q, const char *host_text,
			  const struct sk_decision *d, const struct req_view *rv)
{
	char text[512];
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	cJSON_AddStringToObject(o, "decision", d->allow && rv->allow ? "allow" : "deny");
	cJSON_AddNumberToObject(o, "rule", d->rule);
	cJSON_AddStringToObject(o, "reason", rv->allow ? sk_reason_name(d->reason) : rv->reason);
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
		add_request(o, p, d, rv);
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
		       const struct sk_decision *d, const struct req_view *rv)
{
	char text[512];
	printf("%s %s:%u/%s", d->allow && rv->allow ? "allow" : "deny", host_text, q->port, sk_proto_name(q->proto));
	if (d->rule >= 0 && (size_t)d->rule < p->n_rules) {
		const struct sk_rule *r = &p->rules[d->rule];
		char label[24];
		printf(" by rule %s (%s) at %s:%u:%u", sk_rule_label(p, d->rule, label), sk_rule_format(r, text, sizeof(text)),
		       p->source, r->pos.line, r->pos.col);
	}
	if (d->reason != SK_REASON_RULE)
		printf(": %s", sk_reason_name(d->reason));
	if (rv->on && !rv->allow)
		printf(": %s%s%s%s%s: %s", rv->reason, rv->asked ? ", " : "", rv->asked ? rv->method : "",
		       rv->asked ? " " : "", rv->asked ? rv->path : "", rv->why);
	else if (rv->on && rv->idx >= 0)
		printf("; %s %s by %s", rv->method, rv->path, request_label(p, d, rv, text, sizeof(text)));
	else if (rv->on)
		printf("; requests decided one by one (give --method and --path)");
	printf(", mode %s\n", sk_mode_name(p->mode));
}

int sk_cmd_explain(int argc, char **argv)
{
	const char *pos[3];
	int n_pos = 0;
	unsigned flags = 0;
	const char *proto_arg = NULL, *policy = NULL, *method = NULL, *path = NULL;
	enum sk_cli_fmt fmt = SK_CLI_JSON;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int m;
		if ((m = sk_cli_opt(argc, argv, &i, "--proto", NULL, &v)) != 0) {
			if (m < 0)
				return sk_cli_usage_error(argv[0], "%s", "--proto needs a value");
			proto_arg = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--method", NULL, &v)) != 0) {
			if (m < 0)
				return sk_cli_usage_error(argv[0], "%s", "--method needs a value");
			method = v;
		} else if ((m = sk_cli_opt(argc, argv, &i, "--path", NULL, &v)) != 0) {
			if (m < 0)
				return sk_cli_usage_error(argv[0], "%s", "--path needs a value");
			path = v;
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
	if (!method != !path)
		return sk_cli_usage_error(argv[0], "%s", "--method and --path go together (one request)");
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
	struct req_view rv;
	judge_request(p, &q, &d, method, path, &rv);
	if (fmt == SK_CLI_TEXT) {
		print_text(p, &q, host_text, &d, &rv);
		r = 0;
	} else {
		r = print_decision(p, &q, host_text, &d, &rv);
	}
	sk_policy_free(p);
	if (r < 0) {
		(void)fprintf(stderr, "stockade-policy explain: out of memory\n");
		return SK_EXIT_RUNTIME;
	}
	return d.allow && rv.allow ? SK_EXIT_OK : SK_EXIT_FAIL;
}

/* common/settings.c — see settings.h. */
#include "common/settings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"

static int parse_uint(const struct sk_setting *s, const char *value, void *field)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(value, &end, 10);
	/* digits only: strtoull would take " 5", "+5" and "-1" (as a huge number) */
	if (value[0] < '0' || value[0] > '9' || errno || *end || v < s->min || v > s->max)
		return -EINVAL;
	switch (s->size) {
	case sizeof(uint16_t): {
		uint16_t u = (uint16_t)v;
		memcpy(field, &u, sizeof(u));
		return 0;
	}
	case sizeof(uint32_t): {
		uint32_t u = (uint32_t)v;  /* the table test checks max fits the field (and an int) */
		memcpy(field, &u, sizeof(u));
		return 0;
	}
	case sizeof(uint64_t): {
		uint64_t u = v;
		memcpy(field, &u, sizeof(u));
		return 0;
	}
	default:
		return -EINVAL;  /* a row of no width we know: refused rather than half-written */
	}
}

static int parse_bool(const struct sk_setting *s, const char *value, void *field)
{
	static const char *const yes[] = { "true", "1", "yes", "on" }, *const no[] = { "false", "0", "no", "off" };
	(void)s;
	for (size_t i = 0; i < SK_ARRAY_SIZE(yes); i++) {
		bool b = strcmp(value, yes[i]) == 0;
		if (b || strcmp(value, no[i]) == 0) {
			memcpy(field, &b, sizeof(b));
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_level(const struct sk_setting *s, const char *value, void *field)
{
	enum sk_log_level l;
	(void)s;
	if (!sk_log_level_parse(value, &l))
		return -EINVAL;
	memcpy(field, &l, sizeof(l));
	return 0;
}

static int parse_logfmt(const struct sk_setting *s, const char *value, void *field)
{
	enum sk_log_format f;
	(void)s;
	if (!sk_log_format_parse(value, &f))
		return -EINVAL;
	memcpy(field, &f, sizeof(f));
	return 0;
}

const struct sk_setting_kind sk_setting_uint = { "N", NULL, NULL, parse_uint, NULL };
const struct sk_setting_kind sk_setting_bool = { "BOOL", "true or false (also 1/0, yes/no, on/off)", "true, false",
						 parse_bool, NULL };
const struct sk_setting_kind sk_setting_path = { "PATH", "a path", NULL, NULL, NULL };
const struct sk_setting_kind sk_setting_level = { "LEVEL", "one of error, warn, info, debug",
						  "error, warn, info, debug", parse_level, NULL };
const struct sk_setting_kind sk_setting_logfmt = { "FORMAT", "one of text, json", "text, json", parse_logfmt, NULL };

const char *sk_setting_metavar(const struct sk_setting *s)
{
	return s->type->metavar;
}

void sk_setting_expected(const struct sk_setting *s, char *buf, size_t len)
{
	if (s->type->expected)
		(void)snprintf(buf, len, "%s", s->type->expected);
	else
		(void)snprintf(buf, len, "an integer in %llu..%llu", (unsigned long long)s->min,
			       (unsigned long long)s->max);
}

void sk_setting_accepts(const struct sk_setting *s, char *buf, size_t len)
{
	if (s->type->accepts)
		(void)snprintf(buf, len, "%s", s->type->accepts);
	else if (!s->type->expected)
		(void)snprintf(buf, len, "%llu..%llu", (unsigned long long)s->min, (unsigned long long)s->max);
	else
		(void)snprintf(buf, len, "%s", s->type->expected);
}

int sk_setting_refuse(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err)
{
	char exp[96];
	sk_setting_expected(s, exp, sizeof(exp));
	return sk_err_set(err, EINVAL, "%s: '%s' is not %s", what, value, exp);
}

void sk_settings_md(FILE *out, const struct sk_settings *t)
{
	/* piecewise writes: the caller checks out's error indicator (settings.h) */
	(void)fprintf(out, "| flag | environment | accepts | default | meaning |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct sk_setting *s = &t->rows[i];
		char acc[96];
		sk_setting_accepts(s, acc, sizeof(acc));
		(void)fprintf(out, "| %s%s%s | `%s` | %s | %s%s%s | %s |\n", s->flag ? "`--" : "(test only)",
			      s->flag ? s->flag : "", s->flag ? "`" : "", s->env ? s->env : "", acc, s->def ? "`" : "",
			      s->def ? s->def : "unset", s->def ? "`" : "", s->help);
	}
}

static char **owned(const struct sk_settings *t, void *cfg)
{
	return (char **)((char *)cfg + t->owned_off);
}

/* Points *slot at a copy of value owned by cfg: the copy it pointed at before, if any, is replaced (a flag
 * after its variable, a flag given twice), so a slot is used once per text setting. */
static int own(const struct sk_settings *t, void *cfg, const char **slot, const char *value, const char *what,
	       struct sk_err *err)
{
	char **o = owned(t, cfg);
	size_t k, free_k = t->max_strings;
	for (k = 0; k < t->max_strings; k++) {
		if (o[k] && o[k] == *slot)
			break;
		if (!o[k] && free_k == t->max_strings)
			free_k = k;
	}
	if (k == t->max_strings)
		k = free_k;
	if (k == t->max_strings)
		return sk_err_set(err, ENOMEM, "%s: too many string settings", what);
	char *c = strdup(value);
	if (!c)
		return sk_err_set(err, ENOMEM, "%s: out of memory", what);
	free(o[k]);
	o[k] = c;
	*slot = c;
	return 0;
}

/* Applies one value; `what` names its source for messages ("--policy", "STOCKADE_POLICY"). copy false: a
 * row's static default, pointed at as it is. */
static int apply(const struct sk_settings *t, void *cfg, const struct sk_setting *s, const char *value, bool copy,
		 const char *what, struct sk_err *err)
{
	char *field = (char *)cfg + s->off;
	if (value[0] == '\0') {
		if (t->terse_empty)
			return sk_err_set(err, EINVAL, "%s: empty value", what);
		char exp[96];
		sk_setting_expected(s, exp, sizeof(exp));
		return sk_err_set(err, EINVAL, "%s: empty value (expected %s)", what, exp);
	}
	if (s->type->parse)
		return s->type->parse(s, value, field) < 0 ? sk_setting_refuse(s, value, what, err) : 0;
	if (s->type->check) {
		int r = s->type->check(s, value, what, err);
		if (r < 0)
			return r;
	}
	const char *slot;
	memcpy(&slot, field, sizeof(slot));
	if (!copy) {
		slot = value;
	} else {
		int r = own(t, cfg, &slot, value, what, err);
		if (r < 0)
			return r;
	}
	memcpy(field, &slot, sizeof(slot));
	return 0;
}

void sk_settings_defaults(const struct sk_settings *t, void *cfg)
{
	for (size_t i = 0; i < t->n; i++) {
		struct sk_err e = { 0 };
		if (t->rows[i].def)
			(void)apply(t, cfg, &t->rows[i], t->rows[i].def, false, t->rows[i].env, &e);  /* valid: table tests */
	}
}

void sk_settings_free(const struct sk_settings *t, void *cfg)
{
	char **o = owned(t, cfg);
	for (size_t k = 0; k < t->max_strings; k++) {
		free(o[k]);
		o[k] = NULL;
	}
}

static const char *env_get(char *const envp[], const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

int sk_settings_parse(const struct sk_settings *t, int argc, char *const argv[], char *const envp[], void *cfg,
		      struct sk_err *err)
{
	int r;
	/* Environment first, so flags applied after it win. An empty variable counts as unset: Kubernetes
	 * renders optional values as "" and that must not be an error. */
	for (size_t i = 0; i < t->n; i++) {
		const char *v = t->rows[i].env ? env_get(envp, t->rows[i].env) : NULL;
		if (v && *v && (r = apply(t, cfg, &t->rows[i], v, true, t->rows[i].env, err)) < 0)
			return r;
	}

	int rest = argc;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (t->positional && (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == '\0')) {
			rest = strcmp(a, "--") == 0 ? i + 1 : i;
			break;
		}
		size_t w;
		for (w = 0; w < t->n_switches; w++)
			if (strcmp(a, t->switches[w].arg) == 0)
				break;
		if (w < t->n_switches) {
			bool on = true;
			memcpy((char *)cfg + t->switches[w].off, &on, sizeof(on));
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
			return sk_err_set(err, EINVAL, "unexpected argument '%s' (see --help)", a);
		const char *name = a + 2, *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		const struct sk_setting *s = NULL;
		for (size_t k = 0; k < t->n && !s; k++)
			if (t->rows[k].flag && strlen(t->rows[k].flag) == nlen && strncmp(t->rows[k].flag, name, nlen) == 0)
				s = &t->rows[k];
		if (!s)
			return sk_err_set(err, EINVAL, "unknown flag '--%.*s' (see --help)", (int)nlen, name);
		const char *value = eq ? eq + 1 : NULL;
		if (!value && s->type == &sk_setting_bool) {
			value = "true";   /* a bare boolean flag; it never takes the next argument */
		} else if (!value) {
			if (i + 1 >= argc)
				return sk_err_set(err, EINVAL, "--%s: missing value", s->flag);
			value = argv[++i];
		}
		char what[80];
		(void)snprintf(what, sizeof(what), "--%s", s->flag);
		if ((r = apply(t, cfg, s, value, true, what, err)) < 0)
			return r;
	}
	if (t->positional)
		memcpy((char *)cfg + t->rest_off, &rest, sizeof(rest));
	return 0;
}

/* policy/seccomp/diff.c — how a profile treats one syscall, as a line (sk_scmp_profile_describe), and what
 * two profiles allow differently (sk_scmp_profile_diff). Recognises the generator's own rule shapes (the
 * clone flag mask, the setsockopt cover) so they read as one condition. See seccomp.h. */
#include "policy/seccomp/seccomp.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "policy/seccomp/internal.h"

/* ---- describe and diff ---- */

/* Appends below fail only by running out of memory, which sticks to the buffer (common/strbuf.h): each
 * function checks once, at the end. */
static void describe_action(struct sk_strbuf *b, enum sk_scmp_action a, int errno_ret)
{
	switch (a) {
	case SK_SCMP_ALLOW: sk_strbuf_printf(b, "allow"); break;
	case SK_SCMP_ERRNO: sk_strbuf_printf(b, "errno %d", errno_ret < 0 ? EPERM : errno_ret); break;
	case SK_SCMP_TRACE: sk_strbuf_printf(b, "trace %d", errno_ret < 0 ? EPERM : errno_ret); break;
	case SK_SCMP_KILL:
	case SK_SCMP_KILL_THREAD: sk_strbuf_printf(b, "kill-thread"); break;
	case SK_SCMP_KILL_PROCESS: sk_strbuf_printf(b, "kill-process"); break;
	case SK_SCMP_TRAP: sk_strbuf_printf(b, "trap"); break;
	case SK_SCMP_LOG: sk_strbuf_printf(b, "log"); break;
	case SK_SCMP_NOTIFY: sk_strbuf_printf(b, "notify"); break;
	}
}

static void describe_args(struct sk_strbuf *b, const struct sk_scmp_rule *r)
{
	static const char *const sym[] = { "!=", "<", "<=", "==", ">=", ">" };
	for (size_t i = 0; i < r->n_args; i++) {
		const struct sk_scmp_arg *a = &r->args[i];
		if (i)
			sk_strbuf_printf(b, " && ");
		if (a->op == SK_CMP_MASKED_EQ)
			sk_strbuf_printf(b, "arg%u & %#" PRIx64 " == %#" PRIx64, a->index, a->value, a->value_two);
		else if ((unsigned)a->op < SK_ARRAY_SIZE(sym))
			sk_strbuf_printf(b, "arg%u %s %#" PRIx64, a->index, sym[a->op], a->value);
	}
}

static bool rule_is_default(const struct sk_scmp_profile *p, const struct sk_scmp_rule *r)
{
	int de = p->default_errno < 0 ? EPERM : p->default_errno, re = r->errno_ret < 0 ? EPERM : r->errno_ret;
	return r->action == p->default_action && (r->action != SK_SCMP_ERRNO || de == re);
}

/* Recognises the generator's "low 32 bits of argN differ from X" cover (32 single-bit MASKED_EQ rules, see
 * add_conditioned) so describe and diff print one readable condition instead of 32. */
static bool bitwise_ne(const struct sk_scmp_profile *p, const char *name, const struct sk_scmp_rule *like,
		       unsigned *idx, uint64_t *excluded)
{
	uint64_t seen = 0, x = 0;
	size_t n = 0;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_scmp_rule *r = &p->rules[i];
		if (strcmp(r->name, name) != 0 || !sk_scmp_same_action(r, like))
			continue;
		if (r->n_args != 1 || r->args[0].op != SK_CMP_MASKED_EQ || r->args[0].index != like->args[0].index)
			return false;
		uint64_t m = r->args[0].value;
		if (!m || (m & (m - 1)) || m > 0x80000000u || (seen & m) || (r->args[0].value_two & ~m))
			return false;
		seen |= m;
		if (!r->args[0].value_two)
			x |= m;
		n++;
	}
	if (n != 32 || seen != 0xffffffffu)
		return false;
	*idx = like->args[0].index;
	*excluded = x;
	return true;
}

/* Recognises the generator's setsockopt cover (sk_seccomp_add_setsockopt) by regenerating it, so describe and diff say
 * what it means rather than printing its ~80 prefix blocks. */
static bool is_setsockopt_cover(const struct sk_scmp_profile *p, const char *name, const struct sk_scmp_rule *like)
{
	if (strcmp(name, "setsockopt") != 0 || like->action != SK_SCMP_ALLOW)
		return false;
	struct sk_scmp_profile ref = { 0 };
	struct sk_err err = { 0 };
	bool same = sk_seccomp_add_setsockopt(&ref, &err) == 0;
	size_t k = 0;
	for (size_t i = 0; i < p->n_rules && same; i++) {
		const struct sk_scmp_rule *r = &p->rules[i];
		if (strcmp(r->name, name) != 0 || !sk_scmp_same_action(r, like))
			continue;
		same = k < ref.n_rules && r->n_args == ref.rules[k].n_args;
		for (size_t j = 0; same && j < r->n_args; j++) {
			const struct sk_scmp_arg *x = &r->args[j], *y = &ref.rules[k].args[j];
			same = x->index == y->index && x->op == y->op && x->value == y->value &&
			       x->value_two == y->value_two;
		}
		k++;
	}
	same = same && k == ref.n_rules;
	for (size_t i = 0; i < ref.n_rules; i++) {
		free(ref.rules[i].name);
		free(ref.rules[i].args);
	}
	free(ref.rules);
	return same;
}

static void describe_opt_list(struct sk_strbuf *b, const uint32_t *v, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		sk_strbuf_printf(b, i ? "," : "");
		if (j > i)
			sk_strbuf_printf(b, "%" PRIu32 "-%" PRIu32, v[i], v[j]);
		else
			sk_strbuf_printf(b, "%" PRIu32, v[i]);
		i = j + 1;
	}
}

char *sk_scmp_profile_describe(const struct sk_scmp_profile *p, const char *name)
{
	struct sk_strbuf b = { 0 };
	const struct sk_scmp_rule *uncond = NULL;
	bool any = false;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_scmp_rule *r = &p->rules[i];
		if (strcmp(r->name, name) != 0 || rule_is_default(p, r))
			continue;
		any = true;
		if (!r->n_args && !uncond)
			uncond = r;
	}
	if (!any) {
		sk_strbuf_printf(&b, "default (");
		describe_action(&b, p->default_action, p->default_errno);
		sk_strbuf_printf(&b, ")");
	} else if (uncond) {
		describe_action(&b, uncond->action, uncond->errno_ret);
	} else {
		/* Conditional rules, grouped by action in order of first appearance. */
		bool first_group = true;
		for (size_t i = 0; i < p->n_rules; i++) {
			const struct sk_scmp_rule *r = &p->rules[i];
			if (strcmp(r->name, name) != 0 || rule_is_default(p, r))
				continue;
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = !strcmp(p->rules[j].name, name) && !rule_is_default(p, &p->rules[j]) &&
				       sk_scmp_same_action(&p->rules[j], r);
			if (seen)
				continue;
			if (!first_group)
				sk_strbuf_printf(&b, "; ");
			first_group = false;
			describe_action(&b, r->action, r->errno_ret);
			sk_strbuf_printf(&b, " when ");
			uint64_t excluded;
			unsigned idx;
			if (bitwise_ne(p, name, r, &idx, &excluded)) {
				sk_strbuf_printf(&b, "(arg%u & 0xffffffff != %#" PRIx64 ")", idx, excluded);
				continue;
			}
			if (is_setsockopt_cover(p, name, r)) {
				sk_strbuf_printf(&b, "!(arg1 & 0xffffffff == %u && arg2 & 0xffffffff in {", IPPROTO_IP);
				size_t n_opts;
				const uint32_t *opts = sk_seccomp_mcast_opts(false, &n_opts);
				describe_opt_list(&b, opts, n_opts);
				sk_strbuf_printf(&b, "}) && !(arg1 & 0xffffffff == %u && arg2 & 0xffffffff in {", IPPROTO_IPV6);
				opts = sk_seccomp_mcast_opts(true, &n_opts);
				describe_opt_list(&b, opts, n_opts);
				sk_strbuf_printf(&b, "})");
				continue;
			}
			bool first = true;
			for (size_t j = i; j < p->n_rules; j++) {
				if (strcmp(p->rules[j].name, name) != 0 || !sk_scmp_same_action(&p->rules[j], r))
					continue;
				sk_strbuf_printf(&b, first ? "(" : " || (");
				describe_args(&b, &p->rules[j]);
				sk_strbuf_printf(&b, ")");
				first = false;
			}
		}
		sk_strbuf_printf(&b, "; else ");
		describe_action(&b, p->default_action, p->default_errno);
	}
	return sk_strbuf_steal(&b, NULL);   /* NULL when out of memory */
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *sk_scmp_profile_diff(const struct sk_scmp_profile *a, const struct sk_scmp_profile *b, size_t *n_diff,
			   struct sk_err *err)
{
	*n_diff = 0;
	size_t n = a->n_rules + b->n_rules, m = 0;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	if (!names) {
		sk_err_sys(err, ENOMEM, "seccomp diff");
		return NULL;
	}
	for (size_t i = 0; i < a->n_rules; i++)
		names[m++] = a->rules[i].name;
	for (size_t i = 0; i < b->n_rules; i++)
		names[m++] = b->rules[i].name;
	qsort(names, m, sizeof(*names), cmp_str);
	struct sk_strbuf out = { 0 };
	for (size_t i = 0; i < m; i++) {
		if (i && !strcmp(names[i], names[i - 1]))
			continue;
		char *da = sk_scmp_profile_describe(a, names[i]);
		char *db = sk_scmp_profile_describe(b, names[i]);
		if (!da || !db) {
			out.oom = true;
		} else if (strcmp(da, db) != 0) {
			bool a_deny = !strncmp(da, "default (", 9) && a->default_action != SK_SCMP_ALLOW;
			bool b_deny = !strncmp(db, "default (", 9) && b->default_action != SK_SCMP_ALLOW;
			if (b_deny && !strncmp(da, "allow", 5))
				sk_strbuf_printf(&out, "only A: %s: %s\n", names[i], da);
			else if (a_deny && !strncmp(db, "allow", 5))
				sk_strbuf_printf(&out, "only B: %s: %s\n", names[i], db);
			else
				sk_strbuf_printf(&out, "differs: %s: A %s | B %s\n", names[i], da, db);
			(*n_diff)++;
		}
		free(da);
		free(db);
	}
	free(names);
	char *text = sk_strbuf_steal(&out, NULL);   /* "" when nothing differs */
	if (!text)
		sk_err_sys(err, ENOMEM, "seccomp diff");
	return text;
}


/* policy/seccomp/check.c — a policy's seccomp section against the generator, name by name and then whole,
 * as diagnostics at the entries' line and column: what `stockade-policy check`, `inject --policy` and
 * stockade-injector's policy review refuse (the installer would skip a section the generator refuses, and
 * the agent would never start). */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "common/err.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"
#include "policy/seccomp/seccomp.h"

/* One generator run with a single extra name: its error, if any, is about that name. */
static int try_name(const char *name, bool allow, struct sk_err *err)
{
	const char *v[1] = { name };
	struct sk_seccomp_opts opts = { .allow = allow ? v : NULL, .n_allow = allow ? 1 : 0,
					.deny = allow ? NULL : v, .n_deny = allow ? 0 : 1 };
	struct sk_scmp_profile *prof = NULL;
	int r = sk_seccomp_generate(&opts, &prof, err);
	sk_scmp_profile_free(prof);
	return r;
}

int sk_seccomp_check_policy(const struct sk_policy *p, struct sk_diags *diags)
{
	const struct sk_policy_seccomp *s = &p->seccomp;
	size_t before = diags->n;
	for (int pass = 0; pass < 2; pass++) {
		bool allow = pass == 0;
		char **names = allow ? s->allow : s->deny;
		const struct sk_pos *pos = allow ? s->allow_pos : s->deny_pos;
		size_t n = allow ? s->n_allow : s->n_deny;
		for (size_t i = 0; i < n; i++) {
			struct sk_err err = { 0 };
			if (try_name(names[i], allow, &err) == 0)
				continue;
			/* The generator says "seccomp: allow NAME: why"; the position already names the entry. */
			const char *why = strstr(err.msg, names[i]);
			why = why && !strncmp(why + strlen(names[i]), ": ", 2) ? why + strlen(names[i]) + 2 : err.msg;
			sk_diags_add(diags, p->source, pos ? pos[i].line : 0, pos ? pos[i].col : 0,
				     "seccomp.%s[%zu]: '%s' %s, expected a syscall the profile generator accepts "
				     "(stockade-policy seccomp --%s)", allow ? "allow" : "deny", i, names[i], why,
				     allow ? "allow" : "deny");
		}
	}
	if (diags->n > before)
		return -1;
	/* Each name passes alone; the whole section is what the installer generates. */
	struct sk_seccomp_opts opts = {
		.allow = (const char *const *)s->allow, .n_allow = s->n_allow,
		.deny = (const char *const *)s->deny, .n_deny = s->n_deny,
	};
	struct sk_scmp_profile *prof = NULL;
	struct sk_err err = { 0 };
	int r = sk_seccomp_generate(&opts, &prof, &err);
	sk_scmp_profile_free(prof);
	if (r < 0) {
		sk_diags_add(diags, p->source, 0, 0, "seccomp: %s, expected a section the profile generator accepts",
			     err.msg);
		return -1;
	}
	return 0;
}

/* policy/validate_seccomp.c — the seccomp section: extra syscalls to allow and to deny, spelled right and
 * each in one list (whether a name exists and may be allowed is the seccomp generator's check). */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "policy/schema.h"
#include "policy/validate-internal.h"

static bool syscall_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static void syscall_list(struct sk_load_ctx *c, const struct sk_node *n, const char *path, char ***out,
			 struct sk_pos **pos, size_t *n_out)
{
	char ipath[PATHSZ], q[SK_QUOTE_MAX];
	if (!sk_want_seq(c, n, path, "syscall names"))
		return;
	*out = calloc(n->n ? n->n : 1, sizeof(char *));
	*pos = calloc(n->n ? n->n : 1, sizeof(**pos));
	if (!*pos || !*out) {
		free(*out);
		free(*pos);
		*out = NULL;
		*pos = NULL;
		/* a list dropped without a word would load a weaker profile (a deny list lost): fail the load */
		err_at(c, n, "%s: out of memory", path);
		return;
	}
	for (size_t i = 0; i < n->n; i++) {
		sk_path_idx(ipath, sizeof(ipath), path, i);
		const char *s = sk_get_str(c, n->items[i], ipath, "a syscall name");
		if (!s)
			continue;
		if (!syscall_name_ok(s)) {
			err_at(c, n->items[i], "%s: %s is not a syscall name, expected [a-z0-9_]+ like openat", ipath,
			       sk_quote(s, q, sizeof(q)));
			continue;
		}
		bool dup = false;
		for (size_t j = 0; j < *n_out && !dup; j++)
			dup = (*out)[j] && !strcmp((*out)[j], s);
		char *copy = dup ? NULL : strdup(s);
		if (copy) {
			(*pos)[*n_out] = (struct sk_pos){ n->items[i]->line, n->items[i]->col };
			(*out)[(*n_out)++] = copy;
		}
		else if (!dup)
			err_at(c, n->items[i], "%s: out of memory", ipath);
	}
}

void sk_validate_seccomp(struct sk_load_ctx *c, const struct sk_node *n, struct sk_policy *p)
{
	char q[SK_QUOTE_MAX];
	if (!sk_want_map(c, n, "seccomp"))
		return;
	sk_check_keys(c, n, "seccomp", &sk_schema_seccomp);
	const struct sk_node *a = sk_node_get(n, "allow"), *d = sk_node_get(n, "deny");
	if (a)
		syscall_list(c, a, "seccomp.allow", &p->seccomp.allow, &p->seccomp.allow_pos, &p->seccomp.n_allow);
	if (d)
		syscall_list(c, d, "seccomp.deny", &p->seccomp.deny, &p->seccomp.deny_pos, &p->seccomp.n_deny);
	if (!d || d->kind != SK_NODE_SEQ)
		return;
	for (size_t i = 0; i < d->n; i++) {
		const struct sk_node *x = d->items[i];
		if (x->kind != SK_NODE_SCALAR)
			continue;
		for (size_t j = 0; p->seccomp.allow && j < p->seccomp.n_allow; j++)
			if (p->seccomp.allow[j] && !strcmp(p->seccomp.allow[j], x->text)) {
				err_at(c, x, "seccomp.deny[%zu]: %s is also in seccomp.allow, expected each syscall in one "
					     "list", i, sk_quote(x->text, q, sizeof(q)));
				break;
			}
	}
}

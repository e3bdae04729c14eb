/* policy/seccomp/apply.c — see seccomp_apply.h. */
#include "policy/seccomp/apply.h"

#include <errno.h>
#include <seccomp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>

#include "common/util.h"

static int to_scmp_action(enum sk_scmp_action a, int errno_ret, uint32_t *out)
{
	int e = errno_ret < 0 ? EPERM : errno_ret;
	switch (a) {
	case SK_SCMP_ALLOW: *out = SCMP_ACT_ALLOW; return 0;
	case SK_SCMP_ERRNO: *out = SCMP_ACT_ERRNO((uint32_t)e); return 0;
	case SK_SCMP_TRACE: *out = SCMP_ACT_TRACE((uint32_t)e); return 0;
	case SK_SCMP_KILL:
	case SK_SCMP_KILL_THREAD: *out = SCMP_ACT_KILL_THREAD; return 0;
	case SK_SCMP_KILL_PROCESS: *out = SCMP_ACT_KILL_PROCESS; return 0;
	case SK_SCMP_TRAP: *out = SCMP_ACT_TRAP; return 0;
	case SK_SCMP_LOG: *out = SCMP_ACT_LOG; return 0;
	case SK_SCMP_NOTIFY: break;  /* needs a listener process; exec has none */
	}
	return -ENOTSUP;
}

static struct scmp_arg_cmp to_cmp(const struct sk_scmp_arg *a)
{
	/* libseccomp's enum starts at _SCMP_CMP_MIN = 0 with SCMP_CMP_NE = 1, ours at NE = 0. */
	struct scmp_arg_cmp c = {
		.arg = a->index,
		.op = (enum scmp_compare)((int)a->op + SCMP_CMP_NE),
		.datum_a = a->value,
		.datum_b = a->value_two,
	};
	return c;
}

static int add_rule(scmp_filter_ctx ctx, const struct sk_scmp_rule *r, uint32_t act, uint32_t def,
		    struct sk_err *err)
{
	if (act == def)
		return 0;  /* redundant, and libseccomp refuses it */
	int nr = seccomp_syscall_resolve_name(r->name);
	if (nr == __NR_SCMP_ERROR)
		return 0;  /* unknown to this libseccomp: runc skips it too */
	struct scmp_arg_cmp cmp[6];
	unsigned count[6] = { 0 };
	bool repeated = false;
	for (size_t i = 0; i < r->n_args && i < 6; i++) {
		cmp[i] = to_cmp(&r->args[i]);
		if (r->args[i].index < 6 && ++count[r->args[i].index] > 1)
			repeated = true;
	}
	unsigned n = (unsigned)(r->n_args < 6 ? r->n_args : 6);
	int rc;
	if (!repeated) {
		rc = seccomp_rule_add_array(ctx, act, nr, n, n ? cmp : NULL);
		if (rc < 0)
			return sk_err_sys(err, -rc, "seccomp: add rule %s", r->name);
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		rc = seccomp_rule_add_array(ctx, act, nr, 1, &cmp[i]);
		if (rc < 0)
			return sk_err_sys(err, -rc, "seccomp: add rule %s (condition %u)", r->name, i);
	}
	return 0;
}

int sk_seccomp_build(const struct sk_scmp_profile *p, void **ctx_out, struct sk_err *err)
{
	*ctx_out = NULL;
	uint32_t def, act;
	int rc;
	if (to_scmp_action(p->default_action, p->default_errno, &def) < 0)
		return sk_err_set(err, ENOTSUP, "seccomp: default action %s not supported",
				  sk_scmp_action_name(p->default_action));
	scmp_filter_ctx ctx = seccomp_init(def);
	if (!ctx)
		return sk_err_set(err, EINVAL, "seccomp: seccomp_init failed");
	for (size_t i = 0; i < p->n_arches; i++) {
		rc = seccomp_arch_add(ctx, p->arches[i]);
		if (rc < 0 && rc != -EEXIST) {
			sk_err_sys(err, -rc, "seccomp: add architecture %#x", p->arches[i]);
			goto fail;
		}
	}
	/* NO_NEW_PRIVS is set by sk_seccomp_apply itself, as runc does in its own code path. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0) {
		sk_err_sys(err, -rc, "seccomp: clear NNP attribute");
		goto fail;
	}
	if (p->n_rules > 32)
		(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);  /* older libseccomp: not fatal */
	if (p->log_denials && (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1)) < 0) {
		sk_err_sys(err, -rc, "seccomp: set the log flag (kernel before 4.14?)");
		goto fail;
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sk_scmp_rule *r = &p->rules[i];
		if (to_scmp_action(r->action, r->errno_ret, &act) < 0) {
			sk_err_set(err, ENOTSUP, "seccomp: %s: action %s not supported", r->name,
				   sk_scmp_action_name(r->action));
			goto fail;
		}
		if (add_rule(ctx, r, act, def, err) < 0)
			goto fail;
	}
	*ctx_out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return -(err && err->code ? err->code : EINVAL);
}

int sk_seccomp_apply(const struct sk_scmp_profile *p, struct sk_err *err)
{
	void *ctx;
	int rc = sk_seccomp_build(p, &ctx, err);
	if (rc < 0)
		return rc;
	/* NO_NEW_PRIVS first: without CAP_SYS_ADMIN the kernel refuses a filter otherwise, and it stops a
	 * setuid binary from running with privileges the filter was not written for. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		rc = sk_err_sys(err, errno, "seccomp: prctl(PR_SET_NO_NEW_PRIVS)");
		seccomp_release(ctx);
		return rc;
	}
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0)
		return sk_err_sys(err, -rc, "seccomp: load filter");
	return 0;
}

/* policy/guardrails.h — cluster guardrails: the rules no pod policy may widen (docs/governance.md). A
 * guardrails document (YAML or JSON, validated like a policy: every problem "file:line:col: message",
 * its own key table) is loaded here, a policy is checked against it (admission: stockade-injector's policy
 * review, `stockade-policy check --guardrails`) and narrowed to it (the sidecar, at every load and reload,
 * so a policy admitted before a guardrail changed still obeys the new one).
 *
 * Owns: the guardrails model and its loader, the check (each violation one diagnostic at the policy's
 * position naming the guardrail's position), and the narrowing (each change one diagnostic, same form).
 *
 * What the sidecar cannot narrow: exemptUids and direct or udp cidr rules live in the pod's nftables,
 * programmed once by stockade-init, so the sidecar reports them (SK_GR_KEPT) and leaves them; admission
 * refuses them, and a restarted pod's sidecar refuses to start with them (sk_guardrails_narrow's result).
 *
 * Ownership: sk_guardrails_load_* returns an owned model, freed with sk_guardrails_free; it is immutable
 * after load. check borrows everything; narrow mutates the policy it is given (before it is published:
 * a loaded snapshot is never changed once readers see it) and rebuilds its matcher. */
#ifndef SK_POLICY_GUARDRAILS_H
#define SK_POLICY_GUARDRAILS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "policy/policy.h"

struct sk_guardrail_host {
	char *host;            /* normalised; for a wildcard the suffix without "*." (as struct sk_rule) */
	bool wildcard;
	struct sk_pos pos;
};

struct sk_guardrail_cidr {
	struct sk_cidr cidr;
	struct sk_pos pos;
};

struct sk_guardrails {
	char *source;                      /* file name used in messages */
	char content_hash[17];             /* FNV-1a 64 of the bytes loaded (audit lines, logs) */
	struct sk_guardrail_host *denied_hosts;  /* deniedHosts: no rule may allow any of these names */
	size_t n_denied_hosts;
	struct sk_guardrail_cidr *denied_cidrs;  /* deniedCidrs: no cidr rule may overlap these */
	size_t n_denied_cidrs;
	struct sk_budget max_budget;       /* maxBudget; window_ms == 0: none. Every proxied rule must carry a
	                                    * budget at most this (each limit set here set there and not larger,
	                                    * over a window at least as long) */
	struct sk_pos max_budget_pos;
	bool block_private;                /* blockPrivate: true forces it on (false: no guardrail) */
	struct sk_pos block_private_pos;
	unsigned modes;                    /* allowedModes: bit (1 << enum sk_mode); 0: any mode */
	struct sk_pos modes_pos;
	bool inspect_denied;               /* allowInspect: false — no rule may set inspect: true */
	struct sk_pos inspect_pos;
	bool exempt_limited;               /* allowedExemptUids given: only these uids may be exempt */
	uint32_t *exempt_uids;             /* sorted, unique */
	size_t n_exempt_uids;
	struct sk_pos exempt_pos;
};

SK_MUST_USE int sk_guardrails_load_buffer(const char *name, const char *buf, size_t len, struct sk_guardrails **out,
					  struct sk_diags *diags);
/* "-" is standard input. -EINVAL with every diagnostic, or -errno when it cannot be read. */
SK_MUST_USE int sk_guardrails_load_file(const char *path, struct sk_guardrails **out, struct sk_diags *diags);
void sk_guardrails_free(struct sk_guardrails *g);

/* Every way p exceeds g, one diagnostic each at p's position (its file, the rule's or key's line:col),
 * naming the guardrail as "guardrail FILE:LINE:COL key". Returns the number of violations. */
size_t sk_guardrails_check(const struct sk_policy *p, const struct sk_guardrails *g, struct sk_diags *diags);

/* How one narrowing went. */
enum sk_gr_change {
	SK_GR_NARROWED = 0,   /* the policy was changed to obey the guardrail */
	SK_GR_KEPT,           /* in the pod's kernel rules since start: reported, left (see above) */
};
struct sk_gr_changes {
	struct sk_diags d;             /* one per change, same form as the check's */
	enum sk_gr_change *kind;       /* kind[i] for d.v[i] */
	size_t cap;
};
void sk_gr_changes_free(struct sk_gr_changes *c);

/* Narrows p to g: rules allowing a denied host, overlapping a denied cidr (proxied ones) or using inspect
 * when it is denied are removed; budgets are lowered to maxBudget (a proxied rule with none gets it);
 * blockPrivate is turned on; a mode not allowed becomes the first allowed one. Every change is one entry
 * of out. The matcher is rebuilt when a rule went. 0; -ENOMEM (p is then unusable: free it); -E2BIG when
 * more than SK_BUDGET_MAX_RULES rules would then carry a budget (the sidecar's table: refuse the policy). */
SK_MUST_USE int sk_guardrails_narrow(struct sk_policy *p, const struct sk_guardrails *g, struct sk_gr_changes *out);

#endif

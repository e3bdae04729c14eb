/* sidecar/core/budget.h — exfiltration budget accounting (docs/policy.md "Budgets"). Owns: the table of
 * counters, one entry per policy rule that has a budget, and the fixed window each entry counts in.
 * The proxy, the relay and the DNS server charge entries; nothing else writes them.
 *
 * Keyed by the rule's content, never its list index: the key is a 64-bit FNV-1a of the rule's
 * sk_rule_format text (host or cidr, ports, protocol), so a reload that keeps a rule — wherever it moves
 * in the list, whatever its new limits — keeps its counters, and a rule that is gone (or lost its budget)
 * loses them. Two rules of identical content share one entry (the second can never match anyway).
 *
 * Window: fixed, starting at the first charge after the previous window ended (docs/policy.md says why
 * not sliding). Counters are per pod, in memory: a sidecar restart starts every window afresh.
 *
 * Bounded: at most SK_BUDGET_MAX_RULES live entries (the validator refuses a policy with more), each
 * sizeof(struct sk_budget_entry) (304 bytes on x86-64: the label is inline), allocated at policy load, never on
 * a connection. An entry dropped by a reload while a relay still holds it (sk_budget_ref) stays, out of
 * the table's lookup, until the last holder lets go; there are at most as many such entries as relays.
 *
 * Single-threaded: called only from the event loop. Clock: every call takes now_ms (sk_loop_now_ms, or
 * anything monotonic a test injects). */
#ifndef SK_SIDECAR_BUDGET_H
#define SK_SIDECAR_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strbuf.h"
#include "policy/policy.h"

enum sk_budget_dim {
	SK_BUDGET_SENT = 0,    /* bytes agent → upstream */
	SK_BUDGET_RECEIVED,    /* bytes upstream → agent */
	SK_BUDGET_CONNS,       /* connections accepted */
	SK_BUDGET_QUERIES,     /* DNS queries sent upstream */
	SK_BUDGET_NDIM
};

#define SK_BUDGET_UNLIMITED UINT64_MAX
#define SK_BUDGET_LABEL_MAX 128   /* the rule's text in /metrics, cut there */

struct sk_budget_entry {
	uint64_t key;                    /* FNV-1a 64 of the rule's sk_rule_format text */
	struct sk_budget lim;            /* limits of the policy in force (0 in a dimension = unlimited) */
	uint64_t window_start_ms;        /* when the running window began */
	bool started;                    /* a window is running (it starts at the first charge) */
	bool spent_seen;                 /* the running window already reported reaching a limit */
	uint64_t used[SK_BUDGET_NDIM];   /* in the running window */
	uint64_t total[SK_BUDGET_NDIM];  /* since the sidecar started (metrics) */
	uint64_t exhausted;              /* windows in which a limit was reached */
	uint64_t refused;                /* connections cut or refused, queries refused, because of it */
	unsigned refs;                   /* relays holding it (sk_budget_ref) */
	bool live;                       /* in the policy in force; else freed at the last unref */
	int rule;                        /* first rule of the policy in force using it; -1 when not live */
	char label[SK_BUDGET_LABEL_MAX]; /* sk_rule_format text, for /metrics */
	struct sk_budget_entry *next;    /* the table's list */
};

struct sk_budget_table {
	struct sk_budget_entry *head;    /* live entries, then those kept only by their holders */
	size_t n_live, n_held;
	struct sk_budget_entry **by_rule; /* n_rules slots for the policy in force; NULL = no budget */
	size_t n_rules;
};

void sk_budget_table_init(struct sk_budget_table *t);
/* Frees every entry, held or not: only once no relay can touch one again (shutdown). */
void sk_budget_table_fini(struct sk_budget_table *t);
/* Makes the table follow policy p (startup and every reload): an entry per budgeted rule, kept (with its
 * counters, and p's limits) when its key was there before, new otherwise; entries p has no rule for leave
 * the lookup. On failure (-ENOMEM, -E2BIG past the cap) the lookup is left empty, so every budgeted rule
 * finds no entry and the proxy refuses it (fail closed); counters already there are kept. */
int sk_budget_table_sync(struct sk_budget_table *t, const struct sk_policy *p, struct sk_err *err);
/* The entry of rule i of the policy last synced, or NULL (no budget, or the sync failed). Borrowed: hold
 * it across a reload with sk_budget_ref. */
struct sk_budget_entry *sk_budget_for_rule(const struct sk_budget_table *t, int rule);
void sk_budget_ref(struct sk_budget_entry *e);
void sk_budget_unref(struct sk_budget_table *t, struct sk_budget_entry *e);

/* What dimension d has left in the window running at now_ms (a window that has ended counts as fresh);
 * SK_BUDGET_UNLIMITED when d is not limited. Never starts a window. */
uint64_t sk_budget_remaining(struct sk_budget_entry *e, enum sk_budget_dim d, uint64_t now_ms);
/* Counts n in dimension d (starting a window when none runs). The caller enforcing the budget charges at
 * most sk_budget_remaining; audit mode charges everything and may overshoot. Returns true when this
 * charge is the first of the window to reach a limit of any dimension (one event per window). */
bool sk_budget_charge(struct sk_budget_entry *e, enum sk_budget_dim d, uint64_t n, uint64_t now_ms);
/* The bytes are spent: sent or received has reached its limit. Open relays end, new connections fail. */
bool sk_budget_spent(struct sk_budget_entry *e, uint64_t now_ms);
/* A new connection may be accepted: not spent, and the connections limit not reached. */
bool sk_budget_admits(struct sk_budget_entry *e, uint64_t now_ms);
/* A connection allowed by rule `rule` of p (the policy the table last followed) asks its budget in, in one
 * call. FREE: the rule has no budget (*entry NULL). UNAVAILABLE: it has one but the table has no entry
 * (a failed sync: refuse; *entry NULL). Otherwise *entry is the rule's entry (borrowed) and: a
 * connection not yet `counted` is checked against the bytes and the connections limit, one already
 * counted (a later decision on it) against the bytes only; a refusal counts in e->refused. A new
 * connection is charged as one of the window's connections when ADMITTED, and when REFUSED too if
 * charge_refused (mode audit: it goes on). */
enum sk_budget_admission {
	SK_BUDGET_FREE = 0,
	SK_BUDGET_ADMITTED,
	SK_BUDGET_REFUSED,
	SK_BUDGET_UNAVAILABLE,
};
enum sk_budget_admission sk_budget_admit_conn(struct sk_budget_table *t, const struct sk_policy *p, int rule,
					      bool counted, bool charge_refused, uint64_t now_ms,
					      struct sk_budget_entry **entry);
const char *sk_budget_dim_name(enum sk_budget_dim d);   /* "sent", "received", "connections", "queries" */

/* Appends the table's Prometheus text for the live entries to out: per rule, bytes and counts used in the
 * window, remaining, totals, exhaustion events. Label set bounded by the policy (only rules with a
 * budget). 0 or -ENOMEM (out's own verdict: common/strbuf.h). */
SK_MUST_USE int sk_budget_render(struct sk_budget_table *t, uint64_t now_ms, struct sk_strbuf *out);

#endif

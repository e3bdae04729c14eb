/* sidecar/core/reload.h — hot reload of the policy (docs/architecture.md#life-cycle). Owns: loading a candidate snapshot and
 * deciding whether it may replace the running one, and the triggers — SIGHUP (through sk_reload_now,
 * called by signals.c) and inotify on the policy file's DIRECTORY, so Kubernetes ConfigMap updates (a new
 * timestamped dir, then an atomic rename of the `..data` symlink) are seen even though the file path
 * itself never changes.
 *
 * A candidate is rejected, and the running snapshot stays, when it fails to load (every file:line:col
 * diagnostic is logged) or when its netns hash differs from the running one (UIDs, ports, loopback,
 * exemptions, direct rules are in the kernel: only a new init, i.e. a new pod, can change them).
 *
 * With cluster guardrails (--guardrails, policy/guardrails.h) every load is narrowed to them before it is
 * put in force, each change one log line and one `guardrail` audit line; a change of the guardrails file
 * (its directory is watched too) reloads the policy, so a policy admitted before a guardrail changed is
 * narrowed at the next reload. Guardrails that do not load reject the reload (reason guardrails_invalid):
 * the policy in force was narrowed by the last good ones. */
#ifndef SK_SIDECAR_RELOAD_H
#define SK_SIDECAR_RELOAD_H

#include <stdio.h>

#include "common/err.h"
#include "sidecar/core/loop.h"

struct sk_audit;
struct sk_policy;
struct sk_metrics;

struct sk_reload_hooks {
	/* The snapshot in force (borrowed). */
	const struct sk_policy *(*current)(void *ctx);
	/* Takes ownership of next and makes it the snapshot in force; it frees the old one (nothing in
	 * the single-threaded loop holds a snapshot across callbacks, so that is safe). */
	void (*install)(void *ctx, struct sk_policy *next);
	struct sk_metrics *metrics;   /* reload ok/failed counters; may be NULL */
	struct sk_audit *audit;       /* an audit line per reload, ok or rejected; may be NULL */
	FILE *log;                    /* diagnostics; NULL = common/log.h's stderr lines (text or JSON) */
	const char *guardrails;       /* the guardrails file; NULL = none */
};

/* Writes every diagnostic of d, "file:line:col: msg" each: to log when it is not NULL, else as log lines
 * of common/log.h (error level; in JSON format one object each, in text format the bare line as ever). */
struct sk_diags;
void sk_reload_log_diags(const struct sk_diags *d, FILE *log);

/* Loads path as a candidate to replace current. log: as sk_reload_log_diags. Returns 0 with *out owned, -EINVAL (invalid: every
 * diagnostic written to log), -EPERM (netns part differs), or -errno (I/O); err says why in one line. */
int sk_reload_load(const char *path, const struct sk_policy *current, FILE *log, struct sk_policy **out,
		   struct sk_err *err);

struct sk_gr_changes;

/* Narrows p to the guardrails in file gpath: each change one log line (warn); *changes (zeroed by the
 * caller, freed with sk_gr_changes_free) holds them for sk_reload_audit_guardrails once p is in force,
 * ghash the guardrails' content hash. 0; -EINVAL (guardrails invalid: every diagnostic written to log),
 * -errno (unreadable, out of memory: p is then unusable); err says why in one line. */
int sk_reload_guard(struct sk_policy *p, const char *gpath, FILE *log, struct sk_gr_changes *changes, char ghash[17],
		    struct sk_err *err);
/* One `guardrail` audit line per change (reason narrowed or kept). */
void sk_reload_audit_guardrails(struct sk_audit *audit, const char ghash[17], const struct sk_gr_changes *changes);

struct sk_reload;

/* Watches path's directory on l. hooks and ctx are borrowed for the watcher's life. */
int sk_reload_start(struct sk_loop *l, const char *path, const struct sk_reload_hooks *hooks, void *ctx,
		    struct sk_reload **out, struct sk_err *err);
void sk_reload_free(struct sk_reload *r);
/* Reloads now (SIGHUP), whether or not the file changed; `why` goes into the log line ("SIGHUP" and
 * "file changed" become the audit line's trigger "sighup" and "file_changed"). 0 when the new policy is
 * in force, < 0 when it was rejected (and the old one stays); either way one audit line says so. */
int sk_reload_now(struct sk_reload *r, const char *why);

#endif

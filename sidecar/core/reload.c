/* sidecar/core/reload.c — see reload.h. */
#include "sidecar/core/reload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/util.h"
#include "policy/guardrails.h"
#include "policy/policy.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/metrics.h"

/* Events are coalesced: a ConfigMap swap is several directory operations in a row (new dir, new symlink,
 * rename over ..data, old dir removed) and we want one reload after the last of them. */
#define DEBOUNCE_MS 200
/* While the watched directory is gone (IN_IGNORED), try to watch it again this often. */
#define REWATCH_MS 1000
/* A policy is a few KiB; anything this large is not one and is not read whole into memory. */
#define POLICY_MAX_BYTES (4u << 20)

struct sk_reload {
	struct sk_loop *loop;
	char *path;          /* as configured; re-resolved on every load so symlink swaps are followed */
	char *dir;
	const struct sk_reload_hooks *hooks;
	void *ctx;
	struct sk_io io;     /* inotify fd */
	int wd;              /* -1 while the directory is not watched */
	char *gdir;          /* the guardrails file's directory (NULL: no guardrails), watched the same way */
	int gwd;             /* -1 while it is not watched (== wd when it is the same directory) */
	struct sk_timer debounce;
	uint64_t last_hash;  /* content hash of the last file seen, so unrelated directory events do nothing */
	bool have_hash;
};

void sk_reload_log_diags(const struct sk_diags *d, FILE *log)
{
	if (log || sk_log_get_format() == SK_LOG_TEXT) {
		sk_diags_print(d, log ? log : stderr);
		return;
	}
	for (size_t i = 0; i < d->n; i++) {
		const struct sk_diag *g = &d->v[i];
		const char *file = g->file ? g->file : "<buffer>", *msg = g->msg ? g->msg : "out of memory";
		if (g->line)
			sk_log(SK_LOG_ERROR, "%s:%u:%u: %s", file, g->line, g->col, msg);
		else
			sk_log(SK_LOG_ERROR, "%s: %s", file, msg);
	}
}

/* One line about a reload: to the hooks' FILE (tests), else through common/log.h (stderr, text or JSON),
 * "stockade-sidecar: " first either way. */
__attribute__((format(printf, 3, 4))) static void rlog(FILE *log, enum sk_log_level level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log) {   /* a test's stream: it reads what arrived */
		(void)fprintf(log, "stockade-sidecar: %s\n", msg);
		(void)fflush(log);
	} else {
		sk_log(level, "%s", msg);
	}
}

int sk_reload_load(const char *path, const struct sk_policy *current, FILE *log, struct sk_policy **out,
		   struct sk_err *err)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *next = NULL;
	int r = sk_policy_load_file(path, -1, &next, &diags);
	if (r < 0) {
		sk_reload_log_diags(&diags, log);
		size_t n = diags.n;
		sk_diags_free(&diags);
		if (r == -EINVAL)
			return sk_err_set(err, EINVAL, "policy %s: %zu error%s (listed above); keeping the policy in force",
					  path, n, n == 1 ? "" : "s");
		return sk_err_sys(err, -r, "policy %s: load; keeping the policy in force", path);
	}
	sk_diags_free(&diags);
	if (!next)
		return sk_err_set(err, EINVAL, "policy %s: loader returned no policy", path);
	if (current) {
		char was[17], now[17];
		sk_policy_netns_hash(current, was);
		sk_policy_netns_hash(next, now);
		if (strcmp(was, now) != 0) {
			sk_policy_free(next);
			return sk_err_set(err, EPERM,
					  "policy %s: netns part changed (hash %s -> %s): UIDs, ports, loopback, "
					  "exemptUids and direct/udp rules are in the kernel and need a new pod; "
					  "keeping the policy in force", path, was, now);
		}
	}
	*out = next;
	return 0;
}

int sk_reload_guard(struct sk_policy *p, const char *gpath, FILE *log, struct sk_gr_changes *changes, char ghash[17],
		    struct sk_err *err)
{
	struct sk_diags gd = { 0 };
	struct sk_guardrails *g = NULL;
	int r = sk_guardrails_load_file(gpath, &g, &gd);
	if (r < 0) {
		sk_reload_log_diags(&gd, log);
		sk_diags_free(&gd);
		if (r == -EINVAL)
			return sk_err_set(err, EINVAL, "guardrails %s: invalid (errors listed above)", gpath);
		return sk_err_sys(err, -r, "guardrails %s: load", gpath);
	}
	sk_diags_free(&gd);
	(void)snprintf(ghash, 17, "%s", g->content_hash);
	r = sk_guardrails_narrow(p, g, changes);
	sk_guardrails_free(g);
	if (r == -E2BIG)
		return sk_err_set(err, E2BIG, "guardrails %s: policy %s narrowed to maxBudget would have more than %d "
				  "rules with a budget (the sidecar's table)", gpath, p->source, SK_BUDGET_MAX_RULES);
	if (r < 0)
		return sk_err_sys(err, -r, "guardrails %s: narrowing policy %s", gpath, p->source);
	for (size_t i = 0; i < changes->d.n; i++) {
		const struct sk_diag *d = &changes->d.v[i];
		rlog(log, SK_LOG_WARN, "guardrails %s (%s) %s: %s:%u:%u: %s", gpath, ghash,
		     changes->kind[i] == SK_GR_KEPT ? "cannot narrow" : "narrowed", d->file, d->line, d->col, d->msg);
	}
	return 0;
}

void sk_reload_audit_guardrails(struct sk_audit *audit, const char ghash[17], const struct sk_gr_changes *changes)
{
	for (size_t i = 0; audit && i < changes->d.n; i++) {
		const struct sk_diag *d = &changes->d.v[i];
		char change[SK_AUDIT_PATH_MAX];
		(void)snprintf(change, sizeof(change), "%s:%u:%u: %s", d->file, d->line, d->col, d->msg);
		const struct sk_audit_guardrail gl = { .guardrails = ghash, .change = change };
		const char *reason = changes->kind[i] == SK_GR_KEPT ? "kept" : "narrowed";
		const struct sk_audit_rec rec = { .event = "guardrail", .rule = -1, .reason = reason, .guardrail = &gl };
		sk_audit_emit(audit, &rec);
	}
}

/* FNV-1a 64 over the file's bytes, continuing from h; false when it cannot be read (then a reload is
 * attempted anyway, so the failure is reported by the loader with its own message). */
static bool content_hash_from(const char *path, uint64_t h, uint64_t *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t total = 0;
	char buf[8192];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 && total < POLICY_MAX_BYTES) {
		total += (size_t)n;
		h = sk_fnv1a64_add(h, buf, (size_t)n);
	}
	close(fd);
	if (n < 0)
		return false;
	*out = h;
	return true;
}

/* The policy's bytes, then the guardrails': a change of either is worth a reload. */
static bool content_hash(const struct sk_reload *r, uint64_t *out)
{
	uint64_t h;
	if (!content_hash_from(r->path, SK_FNV64_OFFSET, &h))
		return false;
	if (r->hooks->guardrails && !content_hash_from(r->hooks->guardrails, h, &h))
		return false;
	*out = h;
	return true;
}

/* The audit line's trigger: a token from the fixed set docs/audit.schema.json lists. */
static const char *trigger_token(const char *why)
{
	return strcmp(why, "SIGHUP") == 0 ? "sighup" : "file_changed";
}

/* rc: sk_reload_load's, or SK_RELOAD_GUARDRAILS when the guardrails did not load */
#define SK_RELOAD_GUARDRAILS (-10000)
static const char *reject_reason(int rc)
{
	return rc == SK_RELOAD_GUARDRAILS ? "guardrails_invalid" : rc == -EINVAL ? "invalid"
		: rc == -EPERM ? "netns_changed" : "unreadable";
}

static void audit_reload(struct sk_reload *r, const char *why, const char *previous, int rc)
{
	if (!r->hooks->audit)
		return;
	const struct sk_audit_reload rl = { .previous = previous, .trigger = trigger_token(why),
					    .result = rc == 0 ? "ok" : "failed" };
	const struct sk_audit_rec rec = { .event = "reload", .rule = -1, .reason = rc == 0 ? "ok" : reject_reason(rc),
					  .reload = &rl };
	sk_audit_emit(r->hooks->audit, &rec);
}

int sk_reload_now(struct sk_reload *r, const char *why)
{
	FILE *log = r->hooks->log;
	struct sk_err err = { 0 };
	struct sk_policy *next = NULL;
	uint64_t h;
	if (content_hash(r, &h)) {
		r->last_hash = h;
		r->have_hash = true;
	}
	const struct sk_policy *cur = r->hooks->current(r->ctx);
	char previous[17] = "";
	if (cur)
		(void)snprintf(previous, sizeof(previous), "%s", cur->content_hash);
	int rc = sk_reload_load(r->path, cur, log, &next, &err);
	struct sk_gr_changes changes = { 0 };
	char ghash[17] = "";
	if (rc == 0 && next && r->hooks->guardrails &&
	    sk_reload_guard(next, r->hooks->guardrails, log, &changes, ghash, &err) < 0) {
		sk_policy_free(next);
		next = NULL;
		sk_gr_changes_free(&changes);
		rc = SK_RELOAD_GUARDRAILS;
	}
	if (r->hooks->metrics)
		sk_metrics_reload(r->hooks->metrics, rc == 0 && next);
	if (rc < 0 || !next) {
		rlog(log, SK_LOG_ERROR, "reload (%s) rejected: %s%s", why, err.msg,
		     rc == SK_RELOAD_GUARDRAILS ? "; keeping the policy in force" : "");
		rc = rc < 0 ? rc : -EINVAL;
		audit_reload(r, why, previous, rc);
		return rc == SK_RELOAD_GUARDRAILS ? -EINVAL : rc;
	}
	char hash[17];
	sk_policy_netns_hash(next, hash);
	rlog(log, SK_LOG_INFO, "reload (%s): policy %s in force (%zu rules, hash %s, netns hash %s)", why, r->path,
	     next->n_rules, next->content_hash, hash);
	r->hooks->install(r->ctx, next);
	audit_reload(r, why, previous, 0);
	/* after the swap: the guardrail lines name the policy now in force */
	sk_reload_audit_guardrails(r->hooks->audit, ghash, &changes);
	sk_gr_changes_free(&changes);
	return 0;
}

static void rewatch(struct sk_reload *r)
{
	/* IN_ATTRIB and IN_CLOSE_WRITE catch in-place edits; the create/move/delete events catch ConfigMap
	 * symlink swaps and editors that write a temp file and rename it. */
	const uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_ATTRIB |
			      IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
	if (r->wd < 0)
		r->wd = inotify_add_watch(r->io.fd, r->dir, mask);
	if (r->gdir && r->gwd < 0)
		r->gwd = inotify_add_watch(r->io.fd, r->gdir, mask);
}

static bool watching(const struct sk_reload *r)
{
	return r->wd >= 0 && (!r->gdir || r->gwd >= 0);
}

static void debounce_fired(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_reload *r = t->ctx;
	if (!watching(r)) {
		rewatch(r);
		if (!watching(r)) {
			(void)sk_timer_arm(l, t, REWATCH_MS);
			return;
		}
	}
	uint64_t h;
	/* Unrelated files in the directory change too (other ConfigMap keys, editors' swap files): only a
	 * change of the bytes behind our paths is worth a reload. */
	if (content_hash(r, &h) && r->have_hash && h == r->last_hash)
		return;
	(void)sk_reload_now(r, "file changed");
}

static void inotify_ready(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)events;
	struct sk_reload *r = io->ctx;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	for (;;) {
		ssize_t n = read(io->fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if ((ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) &&
			    (ev->wd == r->wd || ev->wd == r->gwd)) {
				if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
					inotify_rm_watch(io->fd, ev->wd);
				/* one directory for both files is one watch descriptor: both go */
				if (ev->wd == r->wd)
					r->wd = -1;
				if (ev->wd == r->gwd)
					r->gwd = -1;
			}
			any = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (any)
		(void)sk_timer_arm(l, &r->debounce, !watching(r) ? REWATCH_MS : DEBOUNCE_MS);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash == path ? strdup("/") : slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
}

int sk_reload_start(struct sk_loop *l, const char *path, const struct sk_reload_hooks *hooks, void *ctx,
		    struct sk_reload **out, struct sk_err *err)
{
	struct sk_reload *r = calloc(1, sizeof(*r));
	if (!r)
		return sk_err_sys(err, ENOMEM, "reload: allocate");
	r->loop = l;
	r->hooks = hooks;
	r->ctx = ctx;
	r->wd = -1;
	r->gwd = -1;
	r->path = strdup(path);
	r->dir = dir_of(path);
	if (hooks->guardrails)
		r->gdir = dir_of(hooks->guardrails);
	sk_io_init(&r->io, -1, inotify_ready, r);
	sk_timer_init(&r->debounce, debounce_fired, r);
	if (!r->path || !r->dir || (hooks->guardrails && !r->gdir)) {
		sk_reload_free(r);
		return sk_err_sys(err, ENOMEM, "reload: allocate");
	}
	r->io.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (r->io.fd < 0) {
		int e = errno;
		sk_reload_free(r);
		return sk_err_sys(err, e, "reload: inotify_init1");
	}
	rewatch(r);
	if (!watching(r)) {
		int e = errno;
		sk_err_sys(err, e, "reload: watch directory %s", r->wd < 0 ? r->dir : r->gdir);
		sk_reload_free(r);
		return -e;
	}
	int rc = sk_loop_add(l, &r->io, EPOLLIN, err);
	if (rc < 0) {
		sk_reload_free(r);
		return sk_err_prefix(err, "reload");
	}
	uint64_t h;
	if (content_hash(r, &h)) {
		r->last_hash = h;
		r->have_hash = true;
	}
	*out = r;
	return 0;
}

void sk_reload_free(struct sk_reload *r)
{
	if (!r)
		return;
	sk_timer_cancel(r->loop, &r->debounce);
	if (r->io.fd >= 0) {
		sk_loop_del(r->loop, &r->io);
		close(r->io.fd);
	}
	free(r->path);
	free(r->dir);
	free(r->gdir);
	free(r);
}

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

/* FNV-1a 64 over the file's bytes; false when it cannot be read (then a reload is attempted anyway, so
 * the failure is reported by the loader with its own message). */
static bool content_hash(const char *path, uint64_t *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	uint64_t h = SK_FNV64_OFFSET;
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

/* The audit line's trigger: a token from the fixed set docs/audit.schema.json lists. */
static const char *trigger_token(const char *why)
{
	return strcmp(why, "SIGHUP") == 0 ? "sighup" : "file_changed";
}

static const char *reject_reason(int rc)
{
	return rc == -EINVAL ? "invalid" : rc == -EPERM ? "netns_changed" : "unreadable";
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
	if (content_hash(r->path, &h)) {
		r->last_hash = h;
		r->have_hash = true;
	}
	const struct sk_policy *cur = r->hooks->current(r->ctx);
	char previous[17] = "";
	if (cur)
		(void)snprintf(previous, sizeof(previous), "%s", cur->content_hash);
	int rc = sk_reload_load(r->path, cur, log, &next, &err);
	if (r->hooks->metrics)
		sk_metrics_reload(r->hooks->metrics, rc == 0 && next);
	if (rc < 0 || !next) {
		rlog(log, SK_LOG_ERROR, "reload (%s) rejected: %s", why, err.msg);
		rc = rc < 0 ? rc : -EINVAL;
		audit_reload(r, why, previous, rc);
		return rc;
	}
	char hash[17];
	sk_policy_netns_hash(next, hash);
	rlog(log, SK_LOG_INFO, "reload (%s): policy %s in force (%zu rules, hash %s, netns hash %s)", why, r->path,
	     next->n_rules, next->content_hash, hash);
	r->hooks->install(r->ctx, next);
	audit_reload(r, why, previous, 0);
	return 0;
}

static void rewatch(struct sk_reload *r)
{
	/* IN_ATTRIB and IN_CLOSE_WRITE catch in-place edits; the create/move/delete events catch ConfigMap
	 * symlink swaps and editors that write a temp file and rename it. */
	r->wd = inotify_add_watch(r->io.fd, r->dir,
				  IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_ATTRIB |
					  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
}

static void debounce_fired(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_reload *r = t->ctx;
	if (r->wd < 0) {
		rewatch(r);
		if (r->wd < 0) {
			(void)sk_timer_arm(l, t, REWATCH_MS);
			return;
		}
	}
	uint64_t h;
	/* Unrelated files in the directory change too (other ConfigMap keys, editors' swap files): only a
	 * change of the bytes behind our path is worth a reload. */
	if (content_hash(r->path, &h) && r->have_hash && h == r->last_hash)
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
			if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
				if (r->wd >= 0 && (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
					inotify_rm_watch(io->fd, r->wd);
				r->wd = -1;
			}
			any = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (any)
		(void)sk_timer_arm(l, &r->debounce, r->wd < 0 ? REWATCH_MS : DEBOUNCE_MS);
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
	r->path = strdup(path);
	const char *slash = strrchr(path, '/');
	r->dir = slash == path ? strdup("/") : slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	sk_io_init(&r->io, -1, inotify_ready, r);
	sk_timer_init(&r->debounce, debounce_fired, r);
	if (!r->path || !r->dir) {
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
	if (r->wd < 0) {
		int e = errno;
		sk_err_sys(err, e, "reload: watch directory %s", r->dir);
		sk_reload_free(r);
		return -e;
	}
	int rc = sk_loop_add(l, &r->io, EPOLLIN, err);
	if (rc < 0) {
		sk_reload_free(r);
		return sk_err_prefix(err, "reload");
	}
	uint64_t h;
	if (content_hash(r->path, &h)) {
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
	free(r);
}

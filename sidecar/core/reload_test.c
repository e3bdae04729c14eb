/* sidecar/core/reload_test.c — candidate checks (invalid, netns change) and the directory watcher following a
 * Kubernetes ConfigMap-style `..data` symlink swap, driven by a real loop. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/match.h"
#include "policy/policy.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/loop.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/reload.h"

static const char pol_a[] = "version: 1\negress:\n  - host: a.example\n    ports: [443]\n";
static const char pol_b[] = "version: 1\negress:\n  - host: a.example\n    ports: [443]\n  - host: b.example\n";
static const char pol_bad[] = "version: 1\negress:\n  - host: a.example\n    portz: [443]\n";
static const char pol_netns[] = "version: 1\nagent: { uid: 2000 }\negress:\n  - host: a.example\n";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static struct sk_policy *load(const char *path)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_file(path, -1, &p, &d), 0);
	sk_diags_free(&d);
	return p;
}

struct tmp {
	char dir[64];
};

static void tmp_make(struct tmp *t)
{
	(void)snprintf(t->dir, sizeof(t->dir), "/tmp/reload_test.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *path)
{
	assert_int_equal(nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void tmp_remove(struct tmp *t)
{
	rm_rf(t->dir);
}

static void test_load_rejects_invalid_with_positions(void **state)
{
	(void)state;
	struct tmp t = { "" };
	tmp_make(&t);
	char p[128], q[128];
	(void)snprintf(p, sizeof(p), "%s/a.yaml", t.dir);
	(void)snprintf(q, sizeof(q), "%s/bad.yaml", t.dir);
	write_file(p, pol_a);
	write_file(q, pol_bad);
	struct sk_policy *cur = load(p), *next = NULL;
	char *logbuf = NULL;
	size_t loglen = 0;
	FILE *log = open_memstream(&logbuf, &loglen);
	struct sk_err err = { 0 };
	assert_int_equal(sk_reload_load(q, cur, log, &next, &err), -EINVAL);
	assert_int_equal(fclose(log), 0);   /* flushes the stream into logbuf */
	assert_null(next);
	char want[160];
	(void)snprintf(want, sizeof(want), "%s:4:", q);  /* the unknown key's line */
	assert_non_null(strstr(logbuf, want));
	assert_non_null(strstr(err.msg, "keeping the policy in force"));
	free(logbuf);

	assert_int_equal(sk_reload_load("/nonexistent/x.yaml", cur, stderr, &next, &err), -ENOENT);
	sk_policy_free(cur);
	tmp_remove(&t);
}

static void test_load_refuses_netns_change(void **state)
{
	(void)state;
	struct tmp t = { "" };
	tmp_make(&t);
	char p[128], q[128], r[128];
	(void)snprintf(p, sizeof(p), "%s/a.yaml", t.dir);
	(void)snprintf(q, sizeof(q), "%s/n.yaml", t.dir);
	(void)snprintf(r, sizeof(r), "%s/b.yaml", t.dir);
	write_file(p, pol_a);
	write_file(q, pol_netns);
	write_file(r, pol_b);
	struct sk_policy *cur = load(p), *next = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_reload_load(q, cur, stderr, &next, &err), -EPERM);
	assert_non_null(strstr(err.msg, "netns part changed (hash "));
	assert_non_null(strstr(err.msg, "need a new pod"));
	assert_null(next);
	assert_int_equal(sk_reload_load(r, cur, stderr, &next, &err), 0);  /* egress-only change is fine */
	assert_int_equal(next->n_rules, 2);
	sk_policy_free(next);
	sk_policy_free(cur);
	tmp_remove(&t);
}

/* ---- watcher ---- */

struct holder {
	struct sk_policy *cur;
	int installs;
	struct sk_audit *audit;  /* as the sidecar's swap does: later lines name the new policy */
};

static const struct sk_policy *h_current(void *ctx)
{
	return ((struct holder *)ctx)->cur;
}

static void h_install(void *ctx, struct sk_policy *next)
{
	struct holder *h = ctx;
	sk_policy_free(h->cur);
	h->cur = next;
	h->installs++;
	if (h->audit)
		sk_audit_set_policy(h->audit, next->content_hash);
}

#define RELOAD_LINE                                                                                      \
	"{\"v\":1,\"ts\":\"TS\",\"event\":\"reload\",\"policy\":\"%s\",\"previous\":\"%s\",\"trigger\":\"%s\","   \
	"\"result\":\"%s\",\"reason\":\"%s\"}\n"

/* kubelet's atomic writer: a new timestamped dir, a temp symlink renamed over ..data, old dir removed. */
static void configmap_swap(const char *dir, const char *stamp, const char *old_stamp, const char *content)
{
	char d[160], f[200], tmp[160], data[160], old[160];
	(void)snprintf(d, sizeof(d), "%s/%s", dir, stamp);
	assert_int_equal(mkdir(d, 0755), 0);
	(void)snprintf(f, sizeof(f), "%s/policy.yaml", d);
	write_file(f, content);
	(void)snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
	(void)snprintf(data, sizeof(data), "%s/..data", dir);
	assert_int_equal(symlink(stamp, tmp), 0);
	assert_int_equal(rename(tmp, data), 0);
	if (old_stamp) {
		(void)snprintf(old, sizeof(old), "%s/%s", dir, old_stamp);
		rm_rf(old);
	}
}

static void run_for(struct sk_loop *l, int ms)
{
	uint64_t end = sk_monotonic_ms() + (uint64_t)ms;
	struct sk_err err = { 0 };
	while (sk_monotonic_ms() < end)
		assert_true(sk_loop_run_once(l, 20, &err) >= 0);
}

static void test_watcher_follows_configmap_swap(void **state)
{
	(void)state;
	struct tmp t = { "" };
	tmp_make(&t);
	configmap_swap(t.dir, "..2026_01_01", NULL, pol_a);
	char path[128], link[128];
	(void)snprintf(path, sizeof(path), "%s/policy.yaml", t.dir);
	(void)snprintf(link, sizeof(link), "..data/policy.yaml");
	assert_int_equal(symlink(link, path), 0);

	int ap[2];
	assert_int_equal(pipe(ap), 0);
	struct sk_audit audit;
	sk_audit_init(&audit, ap[1], NULL);
	struct holder h = { .cur = load(path), .audit = &audit };
	char hash_a[17], hash_b[17];
	(void)snprintf(hash_a, sizeof(hash_a), "%s", h.cur->content_hash);
	sk_audit_set_policy(&audit, hash_a);
	struct sk_metrics *m = NULL;
	assert_int_equal(sk_metrics_new(&m, NULL), 0);
	struct sk_reload_hooks hooks = { .current = h_current, .install = h_install, .metrics = m, .audit = &audit,
					 .log = stderr };
	struct sk_loop *l = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct sk_reload *r = NULL;
	assert_int_equal(sk_reload_start(l, path, &hooks, &h, &r, &err), 0);

	/* an unrelated file in the directory changes nothing */
	char other[128];
	(void)snprintf(other, sizeof(other), "%s/other.txt", t.dir);
	write_file(other, "x");
	run_for(l, 400);
	assert_int_equal(h.installs, 0);

	configmap_swap(t.dir, "..2026_01_02", "..2026_01_01", pol_b);
	run_for(l, 600);
	assert_int_equal(h.installs, 1);
	assert_int_equal(h.cur->n_rules, 2);
	(void)snprintf(hash_b, sizeof(hash_b), "%s", h.cur->content_hash);
	assert_string_not_equal(hash_a, hash_b);

	/* a bad update is rejected; the good policy stays */
	configmap_swap(t.dir, "..2026_01_03", "..2026_01_02", pol_bad);
	run_for(l, 600);
	assert_int_equal(h.installs, 1);
	assert_int_equal(h.cur->n_rules, 2);
	/* so is a netns change */
	configmap_swap(t.dir, "..2026_01_04", "..2026_01_03", pol_netns);
	run_for(l, 600);
	assert_int_equal(h.installs, 1);
	/* and a fix goes through */
	configmap_swap(t.dir, "..2026_01_05", "..2026_01_04", pol_a);
	run_for(l, 600);
	assert_int_equal(h.installs, 2);
	assert_int_equal(h.cur->n_rules, 1);

	/* SIGHUP path: reloads even when nothing changed */
	assert_int_equal(sk_reload_now(r, "SIGHUP"), 0);
	assert_int_equal(h.installs, 3);

	struct sk_strbuf b = { 0 };
	assert_int_equal(sk_metrics_render(m, NULL, &b), 0);
	char *text = b.p;
	assert_non_null(strstr(text, "stockade_policy_reloads_total{result=\"ok\"} 3\n"));
	assert_non_null(strstr(text, "stockade_policy_reloads_total{result=\"failed\"} 2\n"));
	free(text);

	/* One audit line per reload, in order, each naming the policy in force after it and the one before. */
	close(ap[1]);
	char lines[4096] = "", want[4096];
	ssize_t n = read(ap[0], lines, sizeof(lines) - 1);
	assert_true(n > 0);
	lines[n] = '\0';
	close(ap[0]);
	int w = 0;
	w += snprintf(want + w, sizeof(want) - (size_t)w, RELOAD_LINE, hash_b, hash_a, "file_changed", "ok", "ok");
	w += snprintf(want + w, sizeof(want) - (size_t)w, RELOAD_LINE, hash_b, hash_b, "file_changed", "failed", "invalid");
	w += snprintf(want + w, sizeof(want) - (size_t)w, RELOAD_LINE, hash_b, hash_b, "file_changed", "failed",
		      "netns_changed");
	w += snprintf(want + w, sizeof(want) - (size_t)w, RELOAD_LINE, hash_a, hash_b, "file_changed", "ok", "ok");
	(void)snprintf(want + w, sizeof(want) - (size_t)w, RELOAD_LINE, hash_a, hash_a, "sighup", "ok", "ok");
	/* the timestamps vary: blank them out before comparing */
	for (char *ts = lines; (ts = strstr(ts, "\"ts\":\"")) != NULL;) {
		ts += 6;
		char *end = strchr(ts, '"');
		assert_non_null(end);
		memmove(ts + 2, end, strlen(end) + 1);
		memcpy(ts, "TS", 2);
	}
	assert_string_equal(lines, want);

	sk_reload_free(r);
	sk_loop_free(l);
	sk_metrics_free(m);
	sk_policy_free(h.cur);
	tmp_remove(&t);
}

/* Cluster guardrails: a policy in force before a guardrail changed is narrowed at the reload the change of
 * the guardrails file causes (its own directory, watched too), with one guardrail audit line per change
 * after the reload's; guardrails that do not load reject the reload and the narrowed policy stays. */
static void test_guardrails_narrow_at_reload(void **state)
{
	(void)state;
	struct tmp t = { "" }, tg = { "" };
	tmp_make(&t);
	tmp_make(&tg);
	char path[128], gpath[128];
	(void)snprintf(path, sizeof(path), "%s/policy.yaml", t.dir);
	(void)snprintf(gpath, sizeof(gpath), "%s/guardrails.yaml", tg.dir);
	write_file(path, "version: 1\negress:\n  - host: a.example\n    ports: [443]\n  - host: pastebin.com\n"
			 "    ports: [443]\n");
	write_file(gpath, "version: 1\n");
	int ap[2];
	assert_int_equal(pipe(ap), 0);
	struct sk_audit audit;
	sk_audit_init(&audit, ap[1], NULL);
	struct holder h = { .cur = load(path), .audit = &audit };
	sk_audit_set_policy(&audit, h.cur->content_hash);
	struct sk_reload_hooks hooks = { .current = h_current, .install = h_install, .audit = &audit, .log = stderr,
					 .guardrails = gpath };
	struct sk_loop *l = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct sk_reload *r = NULL;
	assert_int_equal(sk_reload_start(l, path, &hooks, &h, &r, &err), 0);
	assert_int_equal(sk_match_name(h.cur, "pastebin.com"), 1);

	/* the platform denies pastebin.com: only the guardrails file changes */
	write_file(gpath, "version: 1\ndeniedHosts: [pastebin.com]\n");
	run_for(l, 600);
	assert_int_equal(h.installs, 1);
	assert_int_equal(h.cur->n_rules, 1);
	assert_true(sk_match_name(h.cur, "pastebin.com") < 0);
	assert_int_equal(sk_match_name(h.cur, "a.example"), 0);

	/* guardrails that do not load: the reload is rejected, the narrowed policy stays */
	write_file(gpath, "version: 1\ndeniedHost: [a.example]\n");
	run_for(l, 600);
	assert_int_equal(h.installs, 1);
	assert_int_equal(h.cur->n_rules, 1);

	close(ap[1]);
	char lines[4096] = "";
	ssize_t n = read(ap[0], lines, sizeof(lines) - 1);
	assert_true(n > 0);
	lines[n] = '\0';
	close(ap[0]);
	const char *reload_ok = strstr(lines, "\"event\":\"reload\"");
	assert_non_null(reload_ok);
	assert_non_null(strstr(reload_ok, "\"reason\":\"ok\""));
	const char *gl = strstr(lines, "\"event\":\"guardrail\"");
	assert_non_null(gl);
	assert_true(gl > reload_ok);   /* after the swap: it names the policy in force */
	char want[512];
	(void)snprintf(want, sizeof(want), "\"change\":\"%s:5:5: egress[1]: host pastebin.com allows pastebin.com, "
		       "denied by guardrail %s:2:15 deniedHosts[0]: rule removed\",\"reason\":\"narrowed\"}", path, gpath);
	if (!strstr(gl, want))
		fail_msg("want %s in %s", want, gl);
	assert_non_null(strstr(lines, "\"result\":\"failed\",\"reason\":\"guardrails_invalid\"}"));

	sk_reload_free(r);
	sk_loop_free(l);
	sk_policy_free(h.cur);
	tmp_remove(&t);
	tmp_remove(&tg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_rejects_invalid_with_positions),
		cmocka_unit_test(test_load_refuses_netns_change),
		cmocka_unit_test(test_watcher_follows_configmap_swap),
		cmocka_unit_test(test_guardrails_narrow_at_reload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

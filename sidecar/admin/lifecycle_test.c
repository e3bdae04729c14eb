/* sidecar/admin/lifecycle_test.c — the glue main.c relies on, on a real loop and a real admin socket: start
 * creates what the sidecar lacks (metrics, denials) and serves the admin port; /readyz reads the sidecar's
 * inputs (no proxy listener → 503 naming it) and says "draining" after SIGTERM's call; SIGHUP's reload
 * installs a valid policy in the sidecar and leaves an invalid one out, writing an audit line each time;
 * free releases it all (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/policy.h"
#include "sidecar/core/audit.h"
#include "sidecar/core/config.h"
#include "sidecar/core/denials.h"
#include "sidecar/admin/lifecycle.h"
#include "sidecar/core/loop.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/sidecar.h"

static const char pol_a[] = "version: 1\negress:\n  - host: a.example\n    ports: [443]\n";
static const char pol_b[] = "version: 1\negress:\n  - host: a.example\n    ports: [443]\n  - host: b.example\n";
static const char pol_bad[] = "version: 1\negress:\n  - host: a.example\n    portz: [443]\n";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* A loopback port nothing listens on right now (the kernel's pick, released at once). */
static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t sl = sizeof(sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* GET path on the admin port, the loop run until the answer is whole (the server closes). */
static void get(struct sk_loop *l, uint16_t port, const char *path, char *out, size_t cap)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(c >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int rc = connect(c, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(rc == 0 || errno == EINPROGRESS);
	struct sk_err err = { 0 };
	char req[128];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	size_t sent = 0, got = 0;
	for (int i = 0; i < 400; i++) {
		assert_true(sk_loop_run_once(l, 5, &err) >= 0);
		if (sent < (size_t)n) {
			ssize_t w = send(c, req + sent, (size_t)n - sent, MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
			continue;
		}
		ssize_t r = recv(c, out + got, cap - 1 - got, 0);
		if (r == 0)
			break;
		if (r > 0)
			got += (size_t)r;
	}
	out[got] = 0;
	close(c);
}

struct fixture {
	char dir[64], policy[96], marker[96], admin[32];
	int audit_pipe[2];
	struct sk_sidecar sc;
	struct sk_config cfg;
	struct sk_lifecycle *lc;
	uint16_t port;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/lifecycle_test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	(void)snprintf(f->policy, sizeof(f->policy), "%s/policy.yaml", f->dir);
	(void)snprintf(f->marker, sizeof(f->marker), "%s/marker", f->dir);
	write_file(f->policy, pol_a);
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&f->sc.loop, &err), 0);
	struct sk_diags d = { 0 };
	assert_int_equal(sk_policy_load_file(f->policy, -1, &f->sc.policy, &d), 0);
	sk_diags_free(&d);
	assert_int_equal(pipe(f->audit_pipe), 0);
	sk_audit_init(&f->sc.audit, f->audit_pipe[1], NULL);
	for (size_t i = 0; i < 4; i++)
		f->sc.dns_fds[i] = -1;
	f->cfg.policy_path = f->policy;
	f->cfg.marker_path = f->marker;
	f->cfg.admin_addr = f->admin;
	/* Another process may take the released port before the admin server binds it: pick again then. */
	int rc = -EADDRINUSE;
	for (int attempt = 0; attempt < 20 && rc == -EADDRINUSE; attempt++) {
		f->port = free_port();
		(void)snprintf(f->admin, sizeof(f->admin), "127.0.0.1:%u", f->port);
		rc = sk_lifecycle_start(&f->sc, &f->cfg, &f->lc, &err);
	}
	assert_int_equal(rc, 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	sk_lifecycle_free(f->lc);
	sk_metrics_free(f->sc.metrics);
	sk_denials_free(f->sc.denials);
	sk_policy_free(f->sc.policy);
	sk_loop_free(f->sc.loop);
	close(f->audit_pipe[0]);
	close(f->audit_pipe[1]);
	char p[128];
	(void)snprintf(p, sizeof(p), "%s/policy.yaml", f->dir);
	(void)unlink(p);   /* rmdir below fails, and the suite with it, if anything else was left */
	assert_int_equal(rmdir(f->dir), 0);
	free(f);
	return 0;
}

static void test_start_creates_and_serves(void **state)
{
	struct fixture *f = *state;
	assert_non_null(f->sc.metrics);
	assert_non_null(f->sc.denials);
	char resp[4096];
	get(f->sc.loop, f->port, "/healthz", resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200"));
	get(f->sc.loop, f->port, "/readyz", resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 503"));
	assert_non_null(strstr(resp, "{\"check\":\"proxy_listener\""));   /* no proxy in this sidecar */
	assert_non_null(strstr(resp, "{\"check\":\"marker\""));           /* no init ran */
	assert_null(strstr(resp, "\"draining\""));
	sk_lifecycle_set_draining(f->lc);
	get(f->sc.loop, f->port, "/readyz", resp, sizeof(resp));
	assert_non_null(strstr(resp, "{\"check\":\"draining\""));
}

static void test_reload_installs_valid_keeps_invalid_out(void **state)
{
	struct fixture *f = *state;
	const struct sk_policy *before = f->sc.policy;
	assert_int_equal(f->sc.policy->n_rules, 1);
	write_file(f->policy, pol_bad);
	assert_true(sk_lifecycle_reload(f->lc, "SIGHUP") < 0);
	assert_ptr_equal(f->sc.policy, before);
	write_file(f->policy, pol_b);
	assert_int_equal(sk_lifecycle_reload(f->lc, "SIGHUP"), 0);
	assert_int_equal(f->sc.policy->n_rules, 2);
	/* one audit line per attempt: rejected, then ok */
	char buf[8192];
	ssize_t n = read(f->audit_pipe[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	char *second = strchr(buf, '\n');
	assert_non_null(second);
	assert_non_null(strstr(buf, "\"event\":\"reload\""));
	assert_non_null(strstr(second, "\"event\":\"reload\""));
	assert_non_null(strstr(second, "\"result\":\"ok\""));
	char resp[8192];
	get(f->sc.loop, f->port, "/metrics", resp, sizeof(resp));
	assert_non_null(strstr(resp, "stockade_policy_reloads_total{result=\"ok\"} 1\n"));
	assert_non_null(strstr(resp, "stockade_policy_reloads_total{result=\"failed\"} 1\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start_creates_and_serves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_installs_valid_keeps_invalid_out, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

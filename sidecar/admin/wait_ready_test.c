/* sidecar/admin/wait_ready_test.c — the postStart poller: a fake readiness source (ready after N polls, never
 * ready → timeout naming what is missing), and the real /readyz source against a tiny local server
 * (connection refused, 503 with its body, 200). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/admin/wait_ready.h"

struct fake {
	unsigned calls, ready_after;   /* ready on call number ready_after; 0 = never */
};

static int fake_src(void *ctx, char *why, size_t len)
{
	struct fake *f = ctx;
	f->calls++;
	if (f->ready_after && f->calls >= f->ready_after)
		return 1;
	(void)snprintf(why, len, "{\"check\":\"marker\",\"detail\":\"poll %u\"}", f->calls);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void ready_first_poll(void **state)
{
	(void)state;
	struct fake f = { .ready_after = 1 };
	struct sk_err err = { 0 };
	unsigned polls = 0;
	assert_int_equal(sk_wait_ready_poll(fake_src, &f, 1000, 5, &polls, &err), 0);
	assert_int_equal(polls, 1);
	assert_int_equal(err.code, 0);
}

static void ready_after_n_polls(void **state)
{
	(void)state;
	struct fake f = { .ready_after = 7 };
	struct sk_err err = { 0 };
	unsigned polls = 0;
	uint64_t t0 = now_ms();
	assert_int_equal(sk_wait_ready_poll(fake_src, &f, 10000, 2, &polls, &err), 0);
	uint64_t took = now_ms() - t0;
	assert_int_equal(polls, 7);
	assert_int_equal(f.calls, 7);
	/* 6 sleeps of 2 ms: returns the moment it is ready, not at the timeout. */
	assert_true(took >= 12);
	assert_true(took < 5000);
}

static void never_ready_times_out(void **state)
{
	(void)state;
	struct fake f = { 0 };
	struct sk_err err = { 0 };
	unsigned polls = 0;
	uint64_t t0 = now_ms();
	assert_int_equal(sk_wait_ready_poll(fake_src, &f, 60, 5, &polls, &err), -ETIMEDOUT);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 60);
	assert_true(took < 5000);
	assert_int_equal(err.code, ETIMEDOUT);
	assert_true(polls >= 2);
	assert_int_equal(polls, f.calls);
	/* The message says how long, and what the last poll found missing. */
	char want[128];
	(void)snprintf(want, sizeof(want), "not ready after 60 ms (%u polls): {\"check\":\"marker\",\"detail\":\"poll %u\"}",
		 polls, polls);
	assert_string_equal(err.msg, want);
}

/* A one-shot HTTP server on 127.0.0.1: answers every connection with `answer`, for `conns` connections. */
struct srv {
	int fd;
	const char *answer;
	int conns;
};

static void *serve(void *arg)
{
	struct srv *s = arg;
	for (int i = 0; i < s->conns; i++) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			break;
		char buf[1024];
		ssize_t n = recv(c, buf, sizeof(buf), 0);
		(void)n;
		(void)!write(c, s->answer, strlen(s->answer));
		close(c);
	}
	return NULL;
}

static int listen_any(struct sk_wait_http *h)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	socklen_t l = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	memcpy(&h->addr, &a, sizeof(a));
	h->addr_len = sizeof(a);
	(void)snprintf(h->name, sizeof(h->name), "127.0.0.1:%u", ntohs(a.sin_port));
	h->io_timeout_ms = 1000;
	return fd;
}

static void http_refused(void **state)
{
	(void)state;
	struct sk_wait_http h;
	int fd = listen_any(&h);
	close(fd);   /* nothing listens there now */
	char why[256];
	assert_int_equal(sk_wait_ready_http(&h, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "connect: Connection refused"));
	assert_non_null(strstr(why, h.name));
}

static void http_answers(void **state)
{
	(void)state;
	static const char not_ready[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
		"Content-Length: 58\r\nConnection: close\r\n\r\n"
		"{\"ready\":false,\"missing\":[{\"check\":\"marker\",\"detail\":\"x\"}]}";
	static const char ready[] = "HTTP/1.1 200 OK\r\nContent-Length: 14\r\nConnection: close\r\n\r\n{\"ready\":true}";
	struct sk_wait_http h;
	struct srv s = { .fd = listen_any(&h), .answer = not_ready, .conns = 1 };
	pthread_t t;
	char why[256];
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	assert_int_equal(sk_wait_ready_http(&h, why, sizeof(why)), 0);
	pthread_join(t, NULL);
	assert_string_equal(why, "/readyz answered \"HTTP/1.1 503 Service Unavailable\": "
			    "{\"ready\":false,\"missing\":[{\"check\":\"marker\",\"detail\":\"x\"}]}");

	/* a body with a reason: the reason leads (the event cuts long messages), the whole answer follows */
	static const char with_reason[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
		"Connection: close\r\n\r\n"
		"{\"ready\":false,\"reason\":\"dns_upstream unreachable 10.96.0.10:53 (no answer yet)\",\"missing\":[]}\n";
	s.answer = with_reason;
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	assert_int_equal(sk_wait_ready_http(&h, why, sizeof(why)), 0);
	pthread_join(t, NULL);
	assert_string_equal(why, "dns_upstream unreachable 10.96.0.10:53 (no answer yet) (/readyz answered "
			    "\"HTTP/1.1 503 Service Unavailable\": {\"ready\":false,\"reason\":\"dns_upstream unreachable "
			    "10.96.0.10:53 (no answer yet)\",\"missing\":[]})");

	s.answer = ready;
	assert_int_equal(pthread_create(&t, NULL, serve, &s), 0);
	assert_int_equal(sk_wait_ready_http(&h, why, sizeof(why)), 1);
	pthread_join(t, NULL);
	close(s.fd);
}

/* The subcommand's exit codes: usage errors 2, a timeout 1. */
static void main_exit_codes(void **state)
{
	(void)state;
	char *bad[] = { "wait-ready", "--timeout-ms=0", NULL };
	assert_int_equal(sk_wait_ready_main(2, bad), 2);
	char *unknown[] = { "wait-ready", "--bogus", NULL };
	assert_int_equal(sk_wait_ready_main(2, unknown), 2);
	struct sk_wait_http h;
	int fd = listen_any(&h);
	close(fd);
	char addr[80];
	(void)snprintf(addr, sizeof(addr), "--admin-addr=0.0.0.0:%s", strchr(h.name, ':') + 1);
	char *timeout[] = { "wait-ready", addr, "--timeout-ms", "30", "--interval-ms=5", NULL };
	assert_int_equal(sk_wait_ready_main(5, timeout), 1);
}

/* --as: started as root (the hook of a sidecar whose entry is stockade-init --exec-as), it polls as the
 * given UID with no capability; a malformed --as is a usage error before anything runs. Forked: the drop
 * is for good. */
static void main_as_drops_root(void **state)
{
	(void)state;
	char *bad[] = { "wait-ready", "--as", "0:0", NULL };
	assert_int_equal(sk_wait_ready_main(3, bad), 2);
	if (geteuid() != 0) {
		skip();   /* the drop needs root; make test runs as root */
	}
	struct sk_wait_http h;
	int fd = listen_any(&h);
	close(fd);
	char addr[80];
	(void)snprintf(addr, sizeof(addr), "--admin-addr=127.0.0.1:%s", strchr(h.name, ':') + 1);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "wait-ready", addr, "--timeout-ms=5", "--interval-ms=5", "--as=1337:1337", NULL };
		int rc = sk_wait_ready_main(5, argv);
		uid_t r, e, sv;
		/* timed out (1) as 1337, with no way back to root */
		_exit(rc == 1 && getresuid(&r, &e, &sv) == 0 && r == 1337 && e == 1337 && sv == 1337 &&
		      setresuid(0, 0, 0) < 0 ? 0 : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ready_first_poll),
		cmocka_unit_test(ready_after_n_polls),
		cmocka_unit_test(never_ready_times_out),
		cmocka_unit_test(http_refused),
		cmocka_unit_test(http_answers),
		cmocka_unit_test(main_exit_codes),
		cmocka_unit_test(main_as_drops_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

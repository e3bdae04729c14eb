/* sidecar/core/net_test.c — the shared listener: accepts, and when the process runs out of descriptors it
 * leaves the loop for a back-off instead of waking it again and again, then serves again; when putting
 * it back on the loop fails, it is not ok (readiness fails: sk_proxy_listen_fd) and keeps retrying. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sidecar/core/loop.h"
#include "sidecar/core/net.h"

struct acc {
	int n;
	int last_fd;
};

static void on_accept(struct sk_listener *ls, int fd, const struct sockaddr_storage *peer)
{
	struct acc *a = ls->ctx;
	assert_int_equal(peer->ss_family, AF_INET);
	a->n++;
	a->last_fd = fd;
	close(fd);
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_in sa = { 0 };
	socklen_t sl = sizeof(sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	return ntohs(sa.sin_port);
}

static int connect_to(uint16_t port)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(c >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int rc = connect(c, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(rc == 0 || errno == EINPROGRESS);
	return c;
}

static void test_listener_accepts_and_converts_addresses(void **state)
{
	(void)state;
	struct sk_loop *l;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct sk_addr lo;
	assert_int_equal(sk_addr_parse("127.0.0.1", &lo), 0);
	struct sk_listener ls;
	struct acc a = { 0 };
	assert_int_equal(sk_listener_open(&ls, l, &lo, 0, 16, "test", on_accept, &a, &err), 0);
	assert_true(sk_listener_ok(&ls));
	int c = connect_to(bound_port(ls.io.fd));
	for (int i = 0; i < 50 && a.n == 0; i++)
		assert_true(sk_loop_run_once(l, 10, &err) >= 0);
	assert_int_equal(a.n, 1);
	close(c);
	struct sockaddr_storage ss;
	struct sk_addr back;
	uint16_t port = 0;
	assert_int_equal(sk_sockaddr_from_addr(&lo, 4242, &ss), sizeof(struct sockaddr_in));
	sk_addr_from_sockaddr(&ss, &back, &port);
	assert_true(sk_addr_equal(&back, &lo));
	assert_int_equal(port, 4242);
	sk_listener_close(&ls);
	assert_false(sk_listener_ok(&ls));
	sk_loop_free(l);
}

static void test_out_of_descriptors_backs_off_then_serves_again(void **state)
{
	(void)state;
	struct sk_loop *l;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct sk_addr lo;
	assert_int_equal(sk_addr_parse("127.0.0.1", &lo), 0);
	struct sk_listener ls;
	struct acc a = { 0 };
	assert_int_equal(sk_listener_open(&ls, l, &lo, 0, 16, "test", on_accept, &a, &err), 0);
	int c = connect_to(bound_port(ls.io.fd));

	/* Use up every descriptor under a low limit. */
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	int held[64];
	int n_held = 0;
	for (;;) {
		int fd = dup(0);
		if (fd < 0)
			break;
		held[n_held++] = fd;
		if (n_held == 64)
			break;
	}
	assert_true(n_held > 0);
	/* A pending connection and no descriptor to take it with: the loop must not spin. */
	int callbacks = 0;
	for (int i = 0; i < 20; i++) {
		int r = sk_loop_run_once(l, 5, &err);
		assert_true(r >= 0);
		callbacks += r;
	}
	assert_true(ls.backoffs >= 1);
	assert_true(callbacks <= 6);   /* a few wakeups (the first failure, a retry), not 20 busy ones */
	assert_int_equal(a.n, 0);
	/* Descriptors come back: the retry timer puts the listener back and the connection is served. */
	for (int i = 0; i < n_held; i++)
		close(held[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	for (int i = 0; i < 100 && a.n == 0; i++)
		assert_true(sk_loop_run_once(l, 10, &err) >= 0);
	assert_int_equal(a.n, 1);
	assert_true(sk_listener_ok(&ls));
	close(c);
	sk_listener_close(&ls);
	sk_loop_free(l);
}

/* The loop's epoll descriptor, found the way an operator would (ls -l /proc/self/fd). */
static int find_epoll_fd(void)
{
	int found = -1;
	for (int fd = 0; fd < 1024; fd++) {
		char path[64], target[64];
		(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (!strcmp(target, "anon_inode:[eventpoll]")) {
			assert_int_equal(found, -1);   /* one loop in this test */
			found = fd;
		}
	}
	assert_true(found >= 0);
	return found;
}

/* Drives the listener off the loop with EMFILE, as above, and returns once it has backed off. */
static void back_off(struct sk_loop *l, struct sk_listener *ls)
{
	struct sk_err err = { 0 };
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	int held[64];
	int n_held = 0;
	for (int fd; n_held < 64 && (fd = dup(0)) >= 0;)
		held[n_held++] = fd;
	for (int i = 0; i < 20 && ls->backoffs == 0; i++)
		assert_true(sk_loop_run_once(l, 5, &err) >= 0);
	for (int i = 0; i < n_held; i++)
		close(held[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_true(ls->backoffs >= 1);
	assert_false(ls->io.registered);
}

/* Putting the listener back fails (epoll_ctl refuses: here the loop's descriptor is briefly not an epoll
 * instance): the listener is not ok — so /readyz fails — and the retry is armed again; once epoll works,
 * the next retry puts it back and the queued connection is served. */
static void test_failed_rearm_is_not_ok_and_retries(void **state)
{
	(void)state;
	struct sk_loop *l;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&l, &err), 0);
	struct sk_addr lo;
	assert_int_equal(sk_addr_parse("127.0.0.1", &lo), 0);
	struct sk_listener ls;
	struct acc a = { 0 };
	assert_int_equal(sk_listener_open(&ls, l, &lo, 0, 16, "test", on_accept, &a, &err), 0);
	int c = connect_to(bound_port(ls.io.fd));
	back_off(l, &ls);
	assert_true(sk_listener_ok(&ls));   /* backing off is not a failure yet */

	int epfd = find_epoll_fd();
	int saved = dup(epfd);
	assert_true(saved >= 0);
	int efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	assert_int_equal(dup2(efd, epfd), epfd);
	close(efd);
	ls.retry.cb(l, &ls.retry);          /* the back-off timer's firing, while epoll refuses */
	assert_false(ls.io.registered);
	assert_false(sk_listener_ok(&ls));
	assert_int_not_equal(ls.retry.heap_idx, SIZE_MAX);   /* retrying, not given up */
	assert_int_equal(a.n, 0);

	assert_int_equal(dup2(saved, epfd), epfd);
	close(saved);
	for (int i = 0; i < 100 && a.n == 0; i++)
		assert_true(sk_loop_run_once(l, 10, &err) >= 0);
	assert_int_equal(a.n, 1);
	assert_true(ls.io.registered);
	assert_true(sk_listener_ok(&ls));
	close(c);
	sk_listener_close(&ls);
	sk_loop_free(l);
}

static void test_loopback_is_127_0_0_1_and_v6_1(void **state)
{
	(void)state;
	struct sockaddr_storage ss;
	struct sk_addr a = sk_net_loopback(AF_INET);
	assert_int_equal(a.family, AF_INET);
	assert_true(sk_addr_is_loopback(&a));
	assert_int_equal(sk_sockaddr_from_addr(&a, 80, &ss), sizeof(struct sockaddr_in));
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	assert_int_equal(s4->sin_family, AF_INET);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), INADDR_LOOPBACK);   /* exactly 127.0.0.1 */
	assert_int_equal(ntohs(s4->sin_port), 80);

	a = sk_net_loopback(AF_INET6);
	assert_int_equal(a.family, AF_INET6);
	assert_true(sk_addr_is_loopback(&a));
	assert_int_equal(sk_sockaddr_from_addr(&a, 443, &ss), sizeof(struct sockaddr_in6));
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
	assert_int_equal(s6->sin6_family, AF_INET6);
	assert_memory_equal(&s6->sin6_addr, &in6addr_loopback, sizeof(in6addr_loopback));   /* ::1, not mapped */
	assert_int_equal(ntohs(s6->sin6_port), 443);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listener_accepts_and_converts_addresses),
		cmocka_unit_test(test_out_of_descriptors_backs_off_then_serves_again),
		cmocka_unit_test(test_failed_rearm_is_not_ok_and_retries),
		cmocka_unit_test(test_loopback_is_127_0_0_1_and_v6_1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

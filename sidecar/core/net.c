/* sidecar/core/net.c — listening sockets, accept with back-off, sockaddr conversions; see net.h. */
#include "sidecar/core/net.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/util.h"
#include "sidecar/core/audit.h"

struct sk_addr sk_net_loopback(int family)
{
	struct sk_addr a = { .family = (uint8_t)family };
	if (family == AF_INET) {
		a.bytes[0] = 127;
		a.bytes[3] = 1;
	} else {
		a.bytes[15] = 1;
	}
	return a;
}

void sk_addr_from_sockaddr(const struct sockaddr_storage *ss, struct sk_addr *a, uint16_t *port)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		a->family = AF_INET;
		memcpy(a->bytes, &s4->sin_addr, 4);
		*port = ntohs(s4->sin_port);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		a->family = AF_INET6;
		memcpy(a->bytes, &s6->sin6_addr, 16);
		*port = ntohs(s6->sin6_port);
	}
}

socklen_t sk_sockaddr_from_addr(const struct sk_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, a->bytes, 4);
		return sizeof(*s4);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	memcpy(&s6->sin6_addr, a->bytes, 16);
	return sizeof(*s6);
}

int sk_net_bind(int type, const struct sk_addr *a, uint16_t port, const char *what, struct sk_err *err)
{
	static const uint8_t any6[16];
	char ep[SK_ADDR_STRLEN + 8];
	sk_audit_endpoint(a, port, ep);
	sk_autoclose int fd = socket(a->family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sk_err_sys(err, errno, "%s: socket for %s", what, ep);
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->family == AF_INET6) {
		/* Specific address: v6-only (IPv4 has its own socket); "::": dual-stack. */
		int v6only = memcmp(a->bytes, any6, 16) != 0;
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0)
			return sk_err_sys(err, errno, "%s: IPV6_V6ONLY on %s", what, ep);
	}
	struct sockaddr_storage ss;
	socklen_t sl = sk_sockaddr_from_addr(a, port, &ss);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		return sk_err_sys(err, errno, "%s: bind %s", what, ep);
	return sk_steal_fd(&fd);
}

static void listener_io(struct sk_loop *l, struct sk_io *io, uint32_t events);

static void listener_retry(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_listener *ls = t->ctx;
	if (ls->io.fd < 0 || ls->io.registered)
		return;
	if (sk_loop_add(l, &ls->io, EPOLLIN, NULL) < 0) {
		/* Still short of memory: keep trying, and let readiness say so meanwhile. */
		ls->rearm_failed = true;
		(void)sk_timer_arm(l, &ls->retry, SK_ACCEPT_BACKOFF_MS);
		return;
	}
	ls->rearm_failed = false;
	/* Connections queued while we were off the loop: the level-triggered registration reports them. */
}

static void listener_io(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)events;
	struct sk_listener *ls = io->ctx;
	for (int i = 0; i < SK_ACCEPT_BURST && ls->io.fd >= 0; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		int fd = accept4(io->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			ls->on_accept(ls, fd, &ss);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == EPERM)
			continue;   /* that one connection is gone; the next may be fine */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* The pending connection stays queued and the socket stays readable: without a pause
			 * the loop would wake for it at once, forever. */
			ls->backoffs++;
			sk_loop_del(l, io);
			if (sk_timer_arm(l, &ls->retry, SK_ACCEPT_BACKOFF_MS) < 0)
				ls->rearm_failed = true;
		}
		return;   /* EAGAIN, or an error accept cannot get past now */
	}
}

int sk_listener_open(struct sk_listener *ls, struct sk_loop *l, const struct sk_addr *a, uint16_t port,
		     int backlog, const char *what, sk_accept_fn on_accept, void *ctx, struct sk_err *err)
{
	memset(ls, 0, sizeof(*ls));
	ls->loop = l;
	ls->on_accept = on_accept;
	ls->ctx = ctx;
	ls->what = what;
	sk_io_init(&ls->io, -1, listener_io, ls);
	sk_timer_init(&ls->retry, listener_retry, ls);
	int fd = sk_net_bind(SOCK_STREAM, a, port, what, err);
	if (fd < 0)
		return fd;
	char ep[SK_ADDR_STRLEN + 8];
	sk_audit_endpoint(a, port, ep);
	if (listen(fd, backlog) < 0) {
		int e = errno;
		close(fd);
		return sk_err_sys(err, e, "%s: listen %s", what, ep);
	}
	ls->io.fd = fd;
	if (sk_loop_add(l, &ls->io, EPOLLIN, err) < 0) {
		ls->io.fd = -1;
		close(fd);
		return sk_err_prefix(err, "%s: %s", what, ep);
	}
	return 0;
}

void sk_listener_close(struct sk_listener *ls)
{
	if (ls->io.fd < 0)
		return;
	sk_loop_del(ls->loop, &ls->io);
	sk_timer_cancel(ls->loop, &ls->retry);
	close(ls->io.fd);
	ls->io.fd = -1;
}

bool sk_listener_ok(const struct sk_listener *ls)
{
	return ls->io.fd >= 0 && !ls->rearm_failed;
}

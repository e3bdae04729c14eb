/* sidecar/signals.c — see signals.h. */
#include "sidecar/signals.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define DRAIN_POLL_MS 100

struct sk_signals {
	struct sk_loop *loop;
	const struct sk_signal_hooks *hooks;
	void *ctx;
	struct sk_io io;
	struct sk_timer drain;
	uint64_t drain_deadline_ms;
	unsigned drain_seconds;
	bool draining;
};

bool sk_signals_draining(const struct sk_signals *s)
{
	return s && s->draining;
}

static void drain_tick(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_signals *s = t->ctx;
	size_t open = s->hooks->active ? s->hooks->active(s->ctx) : 0;
	if (open == 0) {
		fprintf(stderr, "stockade-sidecar: drained, exiting\n");
		sk_loop_stop(l);
		return;
	}
	if (sk_loop_now_ms(l) >= s->drain_deadline_ms) {
		fprintf(stderr, "stockade-sidecar: grace period of %us over with %zu connection%s open, exiting\n",
			s->drain_seconds, open, open == 1 ? "" : "s");
		sk_loop_stop(l);
		return;
	}
	if (sk_timer_arm(l, t, DRAIN_POLL_MS) < 0)
		sk_loop_stop(l);  /* cannot keep waiting: exiting early is the safe direction */
}

static void on_signal(struct sk_loop *l, struct sk_io *io, uint32_t events)
{
	(void)events;
	struct sk_signals *s = io->ctx;
	struct signalfd_siginfo si;
	while (read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			if (s->hooks->reload)
				s->hooks->reload(s->ctx);
			break;
		case SIGTERM:
		case SIGINT:
			if (s->draining) {
				fprintf(stderr, "stockade-sidecar: second %s, exiting now\n", strsignal((int)si.ssi_signo));
				sk_loop_stop(l);
				break;
			}
			s->draining = true;
			fprintf(stderr, "stockade-sidecar: %s: no longer accepting; draining for up to %us\n",
				strsignal((int)si.ssi_signo), s->drain_seconds);
			if (s->hooks->stop_accepting)
				s->hooks->stop_accepting(s->ctx);
			s->drain_deadline_ms = sk_loop_now_ms(l) + (uint64_t)s->drain_seconds * 1000;
			drain_tick(l, &s->drain);
			break;
		default:
			break;
		}
	}
}

int sk_signals_start(struct sk_loop *l, unsigned drain_seconds, const struct sk_signal_hooks *hooks, void *ctx,
		     struct sk_signals **out, struct sk_err *err)
{
	struct sigaction ign;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &ign, NULL) < 0)
		return sk_err_sys(err, errno, "signals: ignore SIGPIPE");
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return sk_err_sys(err, errno, "signals: block");
	int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return sk_err_sys(err, errno, "signals: signalfd");
	struct sk_signals *s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return sk_err_sys(err, ENOMEM, "signals: allocate");
	}
	s->loop = l;
	s->hooks = hooks;
	s->ctx = ctx;
	s->drain_seconds = drain_seconds;
	sk_io_init(&s->io, fd, on_signal, s);
	sk_timer_init(&s->drain, drain_tick, s);
	if (sk_loop_add(l, &s->io, EPOLLIN, err) < 0) {
		close(fd);
		free(s);
		return sk_err_prefix(err, "signals");
	}
	*out = s;
	return 0;
}

void sk_signals_free(struct sk_signals *s)
{
	if (!s)
		return;
	sk_timer_cancel(s->loop, &s->drain);
	sk_loop_del(s->loop, &s->io);
	close(s->io.fd);
	free(s);
}

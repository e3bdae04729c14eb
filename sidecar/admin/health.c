/* sidecar/admin/health.c — see health.h. */
#include "sidecar/admin/health.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json_str.h"
#include "common/marker.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "policy/policy.h"

/* ---- liveness ---- */

void sk_health_beat(struct sk_health *h, uint64_t now_ms)
{
	h->last_beat_ms = now_ms;
}

bool sk_health_alive(const struct sk_health *h, uint64_t now_ms, uint64_t *age_ms)
{
	uint64_t age = now_ms > h->last_beat_ms ? now_ms - h->last_beat_ms : 0;
	if (age_ms)
		*age_ms = age;
	return age <= SK_HEALTH_STALE_MS;
}

static void health_tick(struct sk_loop *l, struct sk_timer *t)
{
	struct sk_health *h = t->ctx;
	sk_health_beat(h, sk_monotonic_ms());
	/* Re-arming can only fail on ENOMEM; the heartbeat then goes stale and /healthz reports it, which
	 * is the honest outcome. */
	(void)sk_timer_arm(l, t, SK_HEALTH_BEAT_MS);
}

int sk_health_start(struct sk_health *h, struct sk_loop *l, struct sk_err *err)
{
	sk_health_beat(h, sk_loop_now_ms(l));
	sk_timer_init(&h->timer, health_tick, h);
	int r = sk_timer_arm(l, &h->timer, SK_HEALTH_BEAT_MS);
	if (r < 0)
		return sk_err_sys(err, -r, "health: arm heartbeat timer");
	return 0;
}

void sk_health_stop(struct sk_health *h, struct sk_loop *l)
{
	sk_timer_cancel(l, &h->timer);
}

/* ---- readiness ---- */

bool sk_fd_listening(int fd, int type, uint16_t port)
{
	int v = 0;
	socklen_t vl = sizeof(v);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl) < 0 || v != type)
		return false;
	if (type == SOCK_STREAM) {
		vl = sizeof(v);
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) < 0 || !v)
			return false;
	}
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port) == port;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == port;
	return false;
}

static bool all_listening(const int *fds, size_t n, int type, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (sk_fd_listening(fds[i], type, port))
			return true;
	return false;
}

/* One unmet condition: its check name, its short reason (what an operator reads first) and the longer
 * detail /readyz has always carried. */
struct unmet {
	const char *check;
	char reason[192];
	char detail[SK_ERR_MSG_MAX + 64];
};

#define READY_CHECKS_MAX 6   /* draining, policy, proxy_listener, dns_listener, marker, dns_upstream */

/* Runs every check; fills u[] with the unmet ones and returns how many. */
static size_t run_checks(const struct sk_ready_input *in, struct unmet u[READY_CHECKS_MAX])
{
	size_t n = 0;
#define UNMET(name) (u[n] = (struct unmet){ .check = (name) }, &u[n++])
	struct unmet *m;
	if (in->draining) {
		m = UNMET("draining");
		(void)snprintf(m->reason, sizeof(m->reason), "draining (SIGTERM received)");
		(void)snprintf(m->detail, sizeof(m->detail), "SIGTERM received; finishing open connections");
	}
	if (!in->policy) {
		m = UNMET("policy");
		(void)snprintf(m->reason, sizeof(m->reason), "policy not loaded");
		(void)snprintf(m->detail, sizeof(m->detail), "no policy loaded");
	} else {
		const struct sk_policy *p = in->policy;
		if (!all_listening(in->proxy_fds, in->n_proxy_fds, SOCK_STREAM, p->ports.proxy)) {
			m = UNMET("proxy_listener");
			(void)snprintf(m->reason, sizeof(m->reason), "proxy_listener not listening on port %u",
				       p->ports.proxy);
			(void)snprintf(m->detail, sizeof(m->detail), "nothing listening on proxy port %u", p->ports.proxy);
		}
		bool udp = false, tcp = false;
		for (size_t i = 0; i < in->n_dns_fds; i++) {
			udp = udp || sk_fd_listening(in->dns_fds[i], SOCK_DGRAM, p->ports.dns);
			tcp = tcp || sk_fd_listening(in->dns_fds[i], SOCK_STREAM, p->ports.dns);
		}
		if (!udp || !tcp) {
			const char *which = !udp && !tcp ? "udp and tcp" : !udp ? "udp" : "tcp";
			m = UNMET("dns_listener");
			(void)snprintf(m->reason, sizeof(m->reason), "dns_listener port %u not bound for %s", p->ports.dns,
				       which);
			(void)snprintf(m->detail, sizeof(m->detail), "DNS port %u not bound for %s", p->ports.dns, which);
		}
		char want[17];
		struct sk_marker have;
		struct sk_err err = { 0 };
		int r;
		sk_policy_netns_hash(p, want);
		if (!in->marker_path) {
			m = UNMET("marker");
			(void)snprintf(m->reason, sizeof(m->reason), "marker not configured");
			(void)snprintf(m->detail, sizeof(m->detail), "no marker path configured");
		} else if ((r = sk_marker_read(in->marker_path, &have, &err)) < 0) {
			m = UNMET("marker");
			if (r == -ENOENT)
				(void)snprintf(m->reason, sizeof(m->reason), "marker absent %s (the init has not written it)",
					       in->marker_path);
			else
				(void)snprintf(m->reason, sizeof(m->reason), "marker unreadable: %.160s", err.msg);
			(void)snprintf(m->detail, sizeof(m->detail), "%s", err.msg);
		} else if (strcmp(want, have.hash) != 0) {
			m = UNMET("marker");
			(void)snprintf(m->reason, sizeof(m->reason), "marker hash differs: marker %s, policy %s",
				       have.hash, want);
			(void)snprintf(m->detail, sizeof(m->detail),
				 "marker hash %s differs from the policy's netns hash %s: the init applied another policy",
				 have.hash, want);
		}
	}
	if (!in->dns_upstream_ok) {
		m = UNMET("dns_upstream");
		(void)snprintf(m->reason, sizeof(m->reason), "dns_upstream unreachable %s (no answer yet)",
			       in->dns_upstreams && *in->dns_upstreams ? in->dns_upstreams : "(none known)");
		(void)snprintf(m->detail, sizeof(m->detail), "no upstream resolver has answered yet");
	}
#undef UNMET
	return n;
}

/* The reasons joined by "; " into reason (cut to len, NUL-terminated when len > 0). */
static void join_reasons(const struct unmet *u, size_t n, char *reason, size_t len)
{
	if (len)
		reason[0] = '\0';
	for (size_t i = 0, at = 0; i < n && at + 1 < len; i++) {
		int w = snprintf(reason + at, len - at, "%s%s", i ? "; " : "", u[i].reason);
		if (w < 0)
			break;
		at += (size_t)w;   /* past len - 1 only when cut: the loop ends */
	}
}

bool sk_ready_reason(const struct sk_ready_input *in, char *reason, size_t len)
{
	struct unmet u[READY_CHECKS_MAX];
	size_t n = run_checks(in, u);
	join_reasons(u, n, reason, len);
	return n == 0;
}

bool sk_ready_check(const struct sk_ready_input *in, char **json, size_t *json_len)
{
	struct unmet u[READY_CHECKS_MAX];
	size_t n = run_checks(in, u);
	/* every append's failure sticks to b (common/strbuf.h): checked once, by the steal */
	struct sk_strbuf b = { 0 };
	if (n == 0) {
		sk_strbuf_puts(&b, "{\"ready\":true}\n");
	} else {
		char reason[READY_CHECKS_MAX * sizeof(u[0].reason)];
		join_reasons(u, n, reason, sizeof(reason));
		sk_strbuf_puts(&b, "{\"ready\":false,\"reason\":");
		(void)sk_json_str_buf(&b, reason);
		sk_strbuf_puts(&b, ",\"missing\":[");
		for (size_t i = 0; i < n; i++) {
			sk_strbuf_puts(&b, i ? ",{\"check\":" : "{\"check\":");
			(void)sk_json_str_buf(&b, u[i].check);
			sk_strbuf_puts(&b, ",\"reason\":");
			(void)sk_json_str_buf(&b, u[i].reason);
			sk_strbuf_puts(&b, ",\"detail\":");
			(void)sk_json_str_buf(&b, u[i].detail);
			sk_strbuf_puts(&b, "}");
		}
		sk_strbuf_puts(&b, "]}\n");
	}
	*json_len = 0;
	*json = sk_strbuf_steal(&b, json_len);   /* NULL when out of memory */
	return *json ? n == 0 : false;
}

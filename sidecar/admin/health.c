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

static void missing(struct sk_strbuf *b, bool *first, const char *check, const char *detail)
{
	/* every append's failure sticks to b (common/strbuf.h): sk_ready_check checks once */
	sk_strbuf_puts(b, *first ? "{\"check\":" : ",{\"check\":");
	*first = false;
	(void)sk_json_str_buf(b, check);
	sk_strbuf_puts(b, ",\"detail\":");
	(void)sk_json_str_buf(b, detail);
	sk_strbuf_puts(b, "}");
}

static bool all_listening(const int *fds, size_t n, int type, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (sk_fd_listening(fds[i], type, port))
			return true;
	return false;
}

bool sk_ready_check(const struct sk_ready_input *in, char **json, size_t *json_len)
{
	struct sk_strbuf b = { 0 };
	bool first = true;
	char detail[SK_ERR_MSG_MAX + 64];
	sk_strbuf_puts(&b, "{\"ready\":false,\"missing\":[");

	if (in->draining)
		missing(&b, &first, "draining", "SIGTERM received; finishing open connections");
	if (!in->policy) {
		missing(&b, &first, "policy", "no policy loaded");
	} else {
		const struct sk_policy *p = in->policy;
		if (!all_listening(in->proxy_fds, in->n_proxy_fds, SOCK_STREAM, p->ports.proxy)) {
			(void)snprintf(detail, sizeof(detail), "nothing listening on proxy port %u", p->ports.proxy);
			missing(&b, &first, "proxy_listener", detail);
		}
		bool udp = false, tcp = false;
		for (size_t i = 0; i < in->n_dns_fds; i++) {
			udp = udp || sk_fd_listening(in->dns_fds[i], SOCK_DGRAM, p->ports.dns);
			tcp = tcp || sk_fd_listening(in->dns_fds[i], SOCK_STREAM, p->ports.dns);
		}
		if (!udp || !tcp) {
			(void)snprintf(detail, sizeof(detail), "DNS port %u not bound for %s", p->ports.dns,
				 !udp && !tcp ? "udp and tcp" : !udp ? "udp" : "tcp");
			missing(&b, &first, "dns_listener", detail);
		}
		char want[17];
		struct sk_marker have;
		struct sk_err err = { 0 };
		sk_policy_netns_hash(p, want);
		if (!in->marker_path) {
			missing(&b, &first, "marker", "no marker path configured");
		} else if (sk_marker_read(in->marker_path, &have, &err) < 0) {
			missing(&b, &first, "marker", err.msg);
		} else if (strcmp(want, have.hash) != 0) {
			(void)snprintf(detail, sizeof(detail),
				 "marker hash %s differs from the policy's netns hash %s: the init applied another policy",
				 have.hash, want);
			missing(&b, &first, "marker", detail);
		}
	}
	if (!in->dns_upstream_ok)
		missing(&b, &first, "dns_upstream", "no upstream resolver has answered yet");

	bool ready = first;
	if (ready) {
		sk_strbuf_reset(&b);
		sk_strbuf_puts(&b, "{\"ready\":true}\n");
	} else {
		sk_strbuf_puts(&b, "]}\n");
	}
	*json_len = 0;
	*json = sk_strbuf_steal(&b, json_len);   /* NULL when out of memory */
	return *json ? ready : false;
}

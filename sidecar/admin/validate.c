/* sidecar/admin/validate.c — see validate.h. */
#include "sidecar/admin/validate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>  /* SO_ORIGINAL_DST */
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/netns_mark.h"
#include "policy/diag.h"
#include "policy/policy.h"

int sk_validate_load(struct sk_validate *o, struct sk_err *err)
{
	struct sk_diags diags = { 0 };
	struct sk_policy *p = NULL;
	int rc = sk_policy_load_file_ex(o->policy_path, -1,
					SK_LOAD_NO_FILE_CHECKS | SK_LOAD_NO_MATCHER | SK_LOAD_NO_CONTENT_HASH, &p, &diags);
	if (rc < 0) {
		rc = sk_err_set(err, EINVAL, "policy %s does not load: %s", o->policy_path,
				diags.n > 0 ? diags.v[0].msg : "(no diagnostic)");
		sk_diags_free(&diags);
		return rc;
	}
	sk_diags_free(&diags);
	o->agent_uid = p->agent_uid;
	o->proxy_port = p->ports.proxy;
	o->dns_port = p->ports.dns;
	o->api_port = p->ports.api;
	sk_policy_netns_hash(p, o->hash);
	sk_policy_free(p);
	return 0;
}

static void close_rst(int fd)
{
	if (fd < 0)
		return;
	/* an RST instead of a FIN: no TIME_WAIT is left on the port the sidecar binds next */
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	(void)close(fd);
}

static int sin_of(const char *addr, uint16_t port, struct sockaddr_in *sin, struct sk_err *err)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
		return sk_err_set(err, EINVAL, "'%s' is not an IPv4 address", addr);
	return 0;
}

/* A socket of type on 127.0.0.1:port, SO_REUSEADDR (the sidecar binds the same port right after). */
static int local_socket(int type, uint16_t port, struct sk_err *err)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return sk_err_sys(err, errno, "socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&lo, sizeof(lo)) < 0 || (type == SOCK_STREAM && listen(fd, 8) < 0)) {
		int e = errno;
		(void)close(fd);
		return sk_err_sys(err, e, "listen on 127.0.0.1:%u", port);
	}
	return fd;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sk_validate_tcp(const char *addr, uint16_t port, uint16_t listen_port, uint16_t src_port, uint32_t timeout_ms,
		    struct sk_err *err)
{
	struct sockaddr_in dst, got;
	int rc = sin_of(addr, port, &dst, err);
	if (rc < 0)
		return rc;
	int ls = local_socket(SOCK_STREAM, listen_port, err), c = -1, a = -1;
	if (ls < 0)
		return ls;
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c < 0) {
		rc = sk_err_sys(err, errno, "socket");
		goto out;
	}
	/* The listener is the agent's too, and the filter chain rejects every agent packet it does not list:
	 * its SYN-ACK would be refused. The agent may always reach the API gateway's port on loopback
	 * (rule agent-api), so the probe's own end sits on that port, free until the sidecar starts. */
	if (src_port) {
		int one = 1;
		struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(src_port) };
		if (setsockopt(c, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(c, (struct sockaddr *)&any, sizeof(any)) < 0) {
			rc = sk_err_sys(err, errno, "bind the probe to port %u", src_port);
			goto out;
		}
	}
	if (connect(c, (struct sockaddr *)&dst, sizeof(dst)) < 0 && errno != EINPROGRESS) {
		rc = sk_err_sys(err, errno, "TCP to %s:%u was not redirected: connect", addr, port);
		goto out;
	}
	long long deadline = now_ms() + timeout_ms;
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p[2] = { { .fd = ls, .events = POLLIN }, { .fd = c, .events = POLLOUT } };
		int n = left > 0 ? poll(p, 2, (int)left) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sk_err_sys(err, errno, "poll");
			goto out;
		}
		if (n == 0) {
			rc = sk_err_set(err, ETIMEDOUT,
					"TCP to %s:%u did not arrive at 127.0.0.1:%u within %u ms: no stockade redirect in this netns",
					addr, port, listen_port, timeout_ms);
			goto out;
		}
		if (p[0].revents & POLLIN)
			break;
		int e = 0;
		socklen_t el = sizeof(e);
		if ((p[1].revents & (POLLERR | POLLHUP)) && getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e) {
			rc = sk_err_sys(err, e, "TCP to %s:%u was not redirected to 127.0.0.1:%u", addr, port, listen_port);
			goto out;
		}
		if (p[1].revents & POLLOUT) {
			/* connected, yet not to our listener: something else answered for that address */
			struct pollfd q = { .fd = ls, .events = POLLIN };
			if (poll(&q, 1, 200) <= 0) {
				rc = sk_err_set(err, EPROTO, "TCP to %s:%u connected somewhere other than 127.0.0.1:%u: "
						"no stockade redirect in this netns", addr, port, listen_port);
				goto out;
			}
			break;
		}
	}
	a = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	if (a < 0) {
		rc = sk_err_sys(err, errno, "accept on 127.0.0.1:%u", listen_port);
		goto out;
	}
	/* The peer's port is no proof of whose connection this is: a second run's flow clashes with the
	 * first's conntrack entry after the redirect, and nat then moves its source port. The original
	 * destination, with this run's random port, is the proof. */
	socklen_t gl = sizeof(got);
	if (getsockopt(a, SOL_IP, SO_ORIGINAL_DST, &got, &gl) < 0) {
		rc = sk_err_sys(err, errno, "the probe's connection at 127.0.0.1:%u has no original destination "
				"(not redirected by nat)", listen_port);
		goto out;
	}
	if (got.sin_addr.s_addr != dst.sin_addr.s_addr || got.sin_port != dst.sin_port) {
		char g[INET_ADDRSTRLEN];
		rc = sk_err_set(err, EPROTO, "the probe arrived at 127.0.0.1:%u with original destination %s:%u, not %s:%u",
				listen_port, inet_ntop(AF_INET, &got.sin_addr, g, sizeof(g)) ? g : "?",
				ntohs(got.sin_port), addr, port);
		goto out;
	}
	rc = 0;
out:
	close_rst(a);
	close_rst(c);
	close_rst(ls);
	return rc;
}

int sk_validate_udp(const char *addr, uint16_t port, uint16_t listen_port, uint32_t timeout_ms, struct sk_err *err)
{
	struct sockaddr_in dst;
	int rc = sin_of(addr, port, &dst, err);
	if (rc < 0)
		return rc;
	int us = local_socket(SOCK_DGRAM, listen_port, err), c = -1;
	if (us < 0)
		return us;
	unsigned char nonce[16], got[64];
	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
		rc = sk_err_sys(err, errno, "getrandom");
		goto out;
	}
	c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (c < 0) {
		rc = sk_err_sys(err, errno, "socket");
		goto out;
	}
	if (sendto(c, nonce, sizeof(nonce), 0, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		rc = sk_err_sys(err, errno, "UDP to %s:%u was not redirected: send", addr, port);
		goto out;
	}
	long long deadline = now_ms() + timeout_ms;
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = { .fd = us, .events = POLLIN };
		int n = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? sk_err_sys(err, errno, "poll")
				   : sk_err_set(err, ETIMEDOUT, "UDP to %s:%u did not arrive at 127.0.0.1:%u within %u ms: "
						"no stockade DNS redirect in this netns", addr, port, listen_port, timeout_ms);
			goto out;
		}
		ssize_t r = recv(us, got, sizeof(got), MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0) {
			rc = sk_err_sys(err, errno, "receive on 127.0.0.1:%u", listen_port);
			goto out;
		}
		/* the probe's datagram (its random payload) and not another: SO_ORIGINAL_DST is TCP's only and
		 * IP_ORIGDSTADDR reports the address after the redirect, but a datagram sent to addr reaching this
		 * socket on loopback is the nat chain's doing. Not its source port: nat may move it when an
		 * earlier run's conntrack entry clashes. */
		if (r != (ssize_t)sizeof(nonce) || memcmp(got, nonce, sizeof(nonce)) != 0)
			continue;
		rc = 0;
		break;
	}
out:
	if (c >= 0)
		(void)close(c);  /* datagram sockets: nothing in flight to lose */
	(void)close(us);
	return rc;
}

int sk_validate_run(struct sk_validate *o, struct sk_marker *m, struct sk_err *err)
{
	int rc = sk_validate_load(o, err);
	if (rc < 0)
		return rc;
	uid_t me = geteuid();
	if (me != o->agent_uid)
		return sk_err_set(err, EPERM, "runs as uid %u, not the policy's agent uid %u: the redirect applies to "
				  "the agent's sockets only", (unsigned)me, o->agent_uid);
	/* the behaviour first: it is what protects, and its failure is the one a missing plugin gives */
	/* a destination port of its own each run: a conntrack entry of an earlier run in this netns (made before
	 * a table existed, so never redirected) cannot match the probe's flow */
	uint16_t port = 0;
	if (getrandom(&port, sizeof(port), 0) != (ssize_t)sizeof(port))
		return sk_err_sys(err, errno, "getrandom");
	port = (uint16_t)(SK_VALIDATE_PROBE_PORT_MIN + port % (65536 - SK_VALIDATE_PROBE_PORT_MIN));
	if ((rc = sk_validate_tcp(SK_VALIDATE_PROBE_ADDR, port, o->proxy_port, o->api_port, o->timeout_ms, err)) < 0 ||
	    (rc = sk_validate_udp(SK_VALIDATE_PROBE_ADDR, 53, o->dns_port, o->timeout_ms, err)) < 0)
		return rc;
	if ((rc = sk_netns_mark_get(m, err)) < 0)
		return rc;
	if (strcmp(m->hash, o->hash) != 0)
		return sk_err_set(err, EINVAL, "this netns holds the table of netns hash %s, the pod's policy hashes to "
				  "%s: the node loaded another policy", m->hash, o->hash);
	m->time = (int64_t)time(NULL);
	(void)snprintf(m->version, sizeof(m->version), "stockade-cni (validated by %s)", SK_VERSION);
	if (o->marker_path && (rc = sk_marker_write(o->marker_path, m, err)) < 0)
		return rc;
	return 0;
}

static int usage(FILE *f)
{
	return fprintf(f, "usage: stockade-sidecar validate --policy FILE [--marker PATH] [--timeout-ms N]\n"
			  "  The first init container of a CNI-mode pod, as the agent UID: proves the node's\n"
			  "  stockade-cni redirect is in this netns (TCP and DNS probes to " SK_VALIDATE_PROBE_ADDR
			  ", lo's marker\n"
			  "  with the policy's netns hash), then writes the marker the sidecar's /readyz reads.\n");
}

int sk_validate_main(int argc, char **argv)
{
	struct sk_validate o = { .timeout_ms = SK_VALIDATE_TIMEOUT_MS };
	for (int i = 1; i < argc; i += 2) {   /* each option takes a value */
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return usage(stdout) < 0 || fflush(stdout) != 0 ? SK_EXIT_RUNTIME : SK_EXIT_OK;
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v && v[0] && strcmp(a, "--policy") == 0) {
			o.policy_path = v;
		} else if (v && v[0] && strcmp(a, "--marker") == 0) {
			o.marker_path = v;
		} else if (v && strcmp(a, "--timeout-ms") == 0) {
			char *end = NULL;
			errno = 0;
			unsigned long t = strtoul(v, &end, 10);
			if (errno || !end || *end || t < 1 || t > 600000 || v[0] < '0' || v[0] > '9') {
				(void)fprintf(stderr, "stockade-sidecar validate: --timeout-ms: '%s' is not an integer in 1..600000\n", v);
				return SK_EXIT_USAGE;
			}
			o.timeout_ms = (uint32_t)t;
		} else {
			(void)fprintf(stderr, "stockade-sidecar validate: unknown or incomplete option \"%s\"\n", a);
			(void)usage(stderr);
			return SK_EXIT_USAGE;
		}
	}
	if (!o.policy_path) {
		(void)fprintf(stderr, "stockade-sidecar validate: --policy is required\n");
		return SK_EXIT_USAGE;
	}
	struct sk_err err = { 0 };
	struct sk_marker m = { 0 };
	if (sk_validate_run(&o, &m, &err) < 0) {
		(void)fprintf(stderr, "stockade-validate: FAIL: %s\n", err.msg);
		return SK_EXIT_FAIL;
	}
	(void)fprintf(stderr, "stockade-validate: ok: TCP and DNS redirected to 127.0.0.1:%u and :%u; netns hash %s "
		      "(%u rules)\n", o.proxy_port, o.dns_port, m.hash, m.rules);
	return SK_EXIT_OK;
}

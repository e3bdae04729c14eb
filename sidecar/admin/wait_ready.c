/* sidecar/admin/wait_ready.c — see wait_ready.h. */
#include "sidecar/admin/wait_ready.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/handoff.h"
#include "sidecar/core/config.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int sk_wait_ready_poll(sk_ready_source src, void *ctx, uint32_t timeout_ms, uint32_t interval_ms,
		       unsigned *polls, struct sk_err *err)
{
	char why[384] = "";
	unsigned n = 0;
	uint64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		why[0] = '\0';
		n++;
		if (src(ctx, why, sizeof(why)) > 0) {
			if (polls)
				*polls = n;
			return 0;
		}
		uint64_t now = mono_ms();
		if (now >= deadline)
			break;
		uint64_t left = deadline - now;
		sleep_ms(left < interval_ms ? (uint32_t)left : interval_ms);
	}
	if (polls)
		*polls = n;
	return sk_err_set(err, ETIMEDOUT, "not ready after %u ms (%u polls): %s", timeout_ms, n,
			  why[0] ? why : "no detail");
}

/* Waits for fd to be ready for events within ms; 0, or a positive errno. */
static int wait_fd(int fd, short events, uint32_t ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int rc;
	while ((rc = poll(&p, 1, (int)ms)) < 0 && errno == EINTR)
		;
	if (rc < 0)
		return errno;
	return rc == 0 ? ETIMEDOUT : 0;
}

/* Copies s into why, newlines and other controls as spaces. */
static void set_why(char *why, size_t len, const char *prefix, const char *s, size_t n)
{
	int k = snprintf(why, len, "%s", prefix);
	size_t o = k < 0 ? 0 : (size_t)k >= len ? len - 1 : (size_t)k;
	for (size_t i = 0; i < n && o + 1 < len; i++)
		why[o++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	why[o] = '\0';
}

int sk_wait_ready_http(void *ctx, char *why, size_t why_len)
{
	const struct sk_wait_http *h = ctx;
	char buf[2048];
	size_t got = 0;
	int e = 0;
	int fd = socket(h->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		(void)snprintf(why, why_len, "%s: socket: %s", h->name, strerror(errno));
		return 0;
	}
	if (connect(fd, (const struct sockaddr *)&h->addr, h->addr_len) < 0) {
		e = errno;
		if (e == EINPROGRESS) {
			socklen_t sl = sizeof(e);
			e = wait_fd(fd, POLLOUT, h->io_timeout_ms);
			if (!e && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0)
				e = errno;
		}
		if (e) {
			(void)snprintf(why, why_len, "admin port %s: connect: %s", h->name, strerror(e));
			goto out;
		}
	}
	static const char req[] = "GET /readyz HTTP/1.1\r\nHost: localhost\r\nUser-Agent: stockade-wait-ready\r\n"
				  "Connection: close\r\n\r\n";
	/* A loopback socket's buffer takes the whole request at once. */
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1)) {
		(void)snprintf(why, why_len, "admin port %s: send: %s", h->name, strerror(errno));
		goto out;
	}
	uint64_t deadline = mono_ms() + h->io_timeout_ms;
	while (got < sizeof(buf) - 1) {
		ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0)
			break;
		if (errno == EINTR)
			continue;
		uint64_t now = mono_ms();
		if ((errno != EAGAIN && errno != EWOULDBLOCK) || now >= deadline ||
		    (e = wait_fd(fd, POLLIN, (uint32_t)(deadline - now))) != 0) {
			(void)snprintf(why, why_len, "admin port %s: no answer to GET /readyz: %s", h->name,
				 strerror(e ? e : errno));
			goto out;
		}
	}
	buf[got] = '\0';
	/* "HTTP/1.1 200 ..." */
	if (got >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 && memcmp(buf + 8, " 200", 4) == 0) {
		close(fd);
		return 1;
	}
	const char *eol = strstr(buf, "\r\n");
	const char *body = strstr(buf, "\r\n\r\n");
	char prefix[96];
	(void)snprintf(prefix, sizeof(prefix), "/readyz answered \"%.*s\": ", eol ? (int)(eol - buf) : 40, buf);
	body = body ? body + 4 : buf + got;
	/* The body's "reason" first (health.h: the unmet conditions in a few words): the kubelet puts this
	 * message into the pod's event, which cuts long ones; the whole answer follows in parentheses. */
	cJSON *j = cJSON_Parse(body);
	const cJSON *reason = cJSON_GetObjectItemCaseSensitive(j, "reason");
	if (cJSON_IsString(reason) && reason->valuestring[0]) {
		char lead[512];
		(void)snprintf(lead, sizeof(lead), "%s (%s", reason->valuestring, prefix);
		size_t n = strlen(body);
		while (n && (body[n - 1] == '\n' || body[n - 1] == '\r'))
			n--;
		set_why(why, why_len, lead, body, n);
		size_t w = strlen(why);
		if (w + 1 < why_len) {
			why[w] = ')';
			why[w + 1] = '\0';
		}
	} else {
		set_why(why, why_len, prefix, body, strlen(body));
	}
	cJSON_Delete(j);
out:
	close(fd);
	return 0;
}

static int parse_ms(const char *flag, const char *v, uint32_t min, uint32_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || errno || *end || x < min || x > 3600000ul) {
		(void)fprintf(stderr, "stockade-sidecar wait-ready: %s: expected an integer in %u..3600000, got \"%s\"\n",
			flag, min, v);
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

static int usage(FILE *out)
{
	return fprintf(out, "usage: stockade-sidecar wait-ready [--admin-addr ADDR] [--timeout-ms N] [--interval-ms N]\n"
		"                                   [--as UID:GID]\n"
		"Polls the sidecar's own GET /readyz on the admin port (a wildcard or missing host means 127.0.0.1;\n"
		"default port 15000) every N ms (default %u) and exits 0 once it answers 200, or 1 after the timeout\n"
		"(default %u ms) naming what is missing. Meant as the sidecar container's postStart hook.\n"
		"--as UID:GID: when started as root (the hook of a sidecar whose entry is stockade-init --exec-as),\n"
		"first become UID:GID for good, as that entry does; ignored when not root.\n",
		SK_WAIT_READY_INTERVAL_MS, SK_WAIT_READY_TIMEOUT_MS);
}

int sk_wait_ready_main(int argc, char **argv)
{
	const char *addr = "127.0.0.1:15000", *as = NULL;
	uint32_t timeout_ms = SK_WAIT_READY_TIMEOUT_MS, interval_ms = SK_WAIT_READY_INTERVAL_MS;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		static const char *const flags[] = { "--admin-addr", "--timeout-ms", "--interval-ms", "--as" };
		size_t k;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			if (usage(stdout) < 0 || fflush(stdout) != 0) {
				(void)fprintf(stderr, "stockade-sidecar wait-ready: --help: write stdout: %s\n",
					      strerror(errno));
				return SK_EXIT_RUNTIME;
			}
			return SK_EXIT_OK;
		}
		for (k = 0; k < SK_ARRAY_SIZE(flags); k++) {
			size_t fl = strlen(flags[k]);
			if (strncmp(a, flags[k], fl) == 0 && a[fl] == '=') {
				v = a + fl + 1;
				break;
			}
			if (strcmp(a, flags[k]) == 0 && i + 1 < argc) {
				v = argv[++i];
				break;
			}
		}
		if (!v) {
			(void)fprintf(stderr, "stockade-sidecar wait-ready: unknown or incomplete option \"%s\"\n", a);
			(void)usage(stderr);
			return SK_EXIT_USAGE;
		}
		if (k == 3) {
			as = v;
			continue;
		}
		if ((k == 0 && !(addr = v)[0]) || (k == 1 && parse_ms(a, v, 1, &timeout_ms) < 0) ||
		    (k == 2 && parse_ms(a, v, 1, &interval_ms) < 0)) {
			if (k == 0)
				(void)fprintf(stderr, "stockade-sidecar wait-ready: --admin-addr: empty\n");
			return SK_EXIT_USAGE;
		}
	}
	struct sk_err err = { 0 };
	if (as) {
		uid_t uid;
		gid_t gid;
		if (sk_handoff_parse(as, &uid, &gid, &err) < 0) {
			(void)fprintf(stderr, "stockade-sidecar wait-ready: --as %s\n", err.msg);
			return SK_EXIT_USAGE;
		}
		/* The hook gets the container's user and capabilities: with init.inSidecar, root with NET_ADMIN.
		 * Nothing here needs them, and it reads what the admin port answers: give them up first. */
		if (geteuid() == 0 && sk_handoff_drop(uid, gid, NULL, &err) < 0) {
			(void)fprintf(stderr, "stockade-sidecar wait-ready: --as %s: %s\n", as, err.msg);
			return SK_EXIT_RUNTIME;
		}
	}
	struct sk_wait_http h = { .io_timeout_ms = 1000 };
	if (sk_config_admin_sockaddr(addr, 15000, &h.addr, &h.addr_len, &err) < 0) {
		(void)fprintf(stderr, "stockade-sidecar wait-ready: --admin-addr: %s\n", err.msg);
		return SK_EXIT_USAGE;
	}
	/* The admin port listens on all interfaces by default; ask it on loopback, as a local client. */
	if (h.addr.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&h.addr;
		if (s4->sin_addr.s_addr == htonl(INADDR_ANY))
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else if (h.addr.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&h.addr;
		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr)) {  /* "::" is dual-stack (net.c): 127.0.0.1 answers */
			uint16_t port = s6->sin6_port;
			struct sockaddr_in *s4 = (struct sockaddr_in *)&h.addr;
			memset(&h.addr, 0, sizeof(h.addr));
			s4->sin_family = AF_INET;
			s4->sin_port = port;
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			h.addr_len = sizeof(*s4);
		}
	}
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;
	if (h.addr.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&h.addr;
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		port = ntohs(s4->sin_port);
		(void)snprintf(h.name, sizeof(h.name), "%s:%u", host, port);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&h.addr;
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		port = ntohs(s6->sin6_port);
		(void)snprintf(h.name, sizeof(h.name), "[%s]:%u", host, port);
	}
	unsigned polls = 0;
	uint64_t t0 = mono_ms();
	if (sk_wait_ready_poll(sk_wait_ready_http, &h, timeout_ms, interval_ms, &polls, &err) < 0) {
		/* The kubelet shows this in the FailedPostStartHook event. */
		(void)fprintf(stderr, "stockade-sidecar wait-ready: %s\n", err.msg);
		return SK_EXIT_FAIL;
	}
	(void)fprintf(stderr, "stockade-sidecar wait-ready: ready after %llu ms (%u polls)\n",
		(unsigned long long)(mono_ms() - t0), polls);
	return SK_EXIT_OK;
}

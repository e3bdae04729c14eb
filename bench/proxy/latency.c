/* bench/proxy/latency.c — connect + first-byte latency for bench/proxy/run (not part of the library;
 * the bench builds it with gcc -O2 into a temp dir). A C client because a Python TLS client's own jitter
 * (tens of µs) hid the proxy's cost entirely.
 *
 *   latency http IP PORT HOST N OUT    N sequential "GET / HTTP/1.1 + Host: HOST" requests
 *   latency tls  IP PORT HELLO N OUT   N sequential connections sending the captured ClientHello file HELLO
 *   latency stats OUT                  n, failures, p50/p90/p99/max in µs of the samples in OUT
 *   latency serve MODE=IP:PORT...      the bench's responder (MODE http or tls), sequential, never exits
 *
 * A sample is clock_gettime(CLOCK_MONOTONIC) from just before connect() to the first response byte; each
 * connection is then read to EOF (untimed) so the proxy sees an orderly close, not a reset; a reply that is
 * not the responder's (the proxy's 403 or TLS alert), or no reply, is recorded as a failure. Samples are
 * appended to OUT as text (ns per line, or "fail"), so batches run as different UIDs can be interleaved
 * into one file. A few untimed warm-up connections open each batch (page faults, first-use paths).
 * The whole batch is bounded: per-socket timeouts of 2 s and a 20 s batch deadline.
 *
 * The responder answers as soon as the request is complete (HTTP: end of the head; TLS: the whole
 * ClientHello handshake message, across records) with a fixed short reply, then closes: what is measured
 * is the network path and the proxy, not a server's handshake cryptography. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAX 16384
#define WARMUP 5
#define IO_TIMEOUT_S 2
#define BATCH_DEADLINE_S 20

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int parse_addr(const char *ip, const char *port, struct sockaddr_storage *ss, socklen_t *len)
{
	char *end;
	long p = strtol(port, &end, 10);
	if (*end || p <= 0 || p > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)p);
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*s6);
		return 0;
	}
	return -1;
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The responder's reply, not the proxy's deny (a 403, a TLS alert): a deny must not pass as a sample. */
static int reply_ok(int tls, const unsigned char *p, size_t n)
{
	if (tls)
		return n >= 1 && p[0] == 0x16;
	return n >= 12 && memcmp(p, "HTTP/1.1 200", 12) == 0;
}

/* One request; returns the connect + first-byte time in ns, or 0 on any failure. */
static uint64_t one(const struct sockaddr_storage *ss, socklen_t len, const unsigned char *req, size_t req_len,
		    int tls)
{
	uint64_t dt = 0;
	unsigned char buf[4096], head[16];
	size_t head_len = 0;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	set_timeouts(fd);
	uint64_t t0 = now_ns();
	if (connect(fd, (const struct sockaddr *)ss, len) < 0 || write_all(fd, req, req_len) < 0)
		goto out;
	ssize_t r;
	do
		r = read(fd, buf, sizeof(buf));
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		goto out;
	uint64_t t1 = now_ns();
	/* Drain to EOF so every connection ends the same orderly way through the proxy. */
	do {
		if (r > 0 && head_len < sizeof(head)) {
			size_t k = sizeof(head) - head_len < (size_t)r ? sizeof(head) - head_len : (size_t)r;
			memcpy(head + head_len, buf, k);
			head_len += k;
		}
	} while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR));
	if (r == 0 && reply_ok(tls, head, head_len))
		dt = t1 - t0;
out:
	close(fd);
	return dt;
}

static int read_file(const char *path, unsigned char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, cap);
	close(fd);
	if (r <= 0 || (size_t)r == cap)
		return -1;
	*len = (size_t)r;
	return 0;
}

static int cmd_client(char **argv)
{
	static unsigned char req[REQ_MAX];
	size_t req_len = 0;
	struct sockaddr_storage ss;
	socklen_t slen;
	if (parse_addr(argv[2], argv[3], &ss, &slen) < 0) {
		(void)fprintf(stderr, "latency: bad address %s port %s\n", argv[2], argv[3]);
		return 2;
	}
	int tls = strcmp(argv[1], "tls") == 0;
	if (!tls) {
		int n = snprintf((char *)req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\nUser-Agent: bench\r\n\r\n",
				 argv[4]);
		if (n < 0 || (size_t)n >= sizeof(req))
			return 2;
		req_len = (size_t)n;
	} else if (read_file(argv[4], req, sizeof(req), &req_len) < 0) {
		(void)fprintf(stderr, "latency: cannot read hello %s\n", argv[4]);
		return 2;
	}
	long n = strtol(argv[5], NULL, 10);
	if (n <= 0 || n > 1000000)
		return 2;
	FILE *out = fopen(argv[6], "a");
	if (!out) {
		perror(argv[6]);
		return 2;
	}
	for (int i = 0; i < WARMUP; i++)
		(void)one(&ss, slen, req, req_len, tls);
	uint64_t deadline = now_ns() + (uint64_t)BATCH_DEADLINE_S * 1000000000u;
	for (long i = 0; i < n && now_ns() < deadline; i++) {
		uint64_t dt = one(&ss, slen, req, req_len, tls);
		if (dt)
			(void)fprintf(out, "%llu\n", (unsigned long long)dt);   /* sticks: ferror below */
		else
			(void)fputs("fail\n", out);
	}
	int lost = ferror(out);
	return fclose(out) == 0 && !lost ? 0 : 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct_us(const uint64_t *v, size_t n, double q)
{
	size_t k = (size_t)(q * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1] / 1000.0;
}

static int cmd_stats(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return 2;
	}
	size_t n = 0, cap = 4096, fails = 0;
	uint64_t *v = malloc(cap * sizeof(*v));
	char line[64];
	int rc = 1;
	if (!v)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "fail", 4) == 0) {
			fails++;
			continue;
		}
		if (n == cap) {
			uint64_t *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv)
				goto out;
			v = nv;
			cap *= 2;
		}
		v[n++] = strtoull(line, NULL, 10);
	}
	if (n == 0) {
		printf("0 %zu 0 0 0 0\n", fails);
		rc = 0;
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	/* n fails p50 p90 p99 max (µs) */
	printf("%zu %zu %.1f %.1f %.1f %.1f\n", n, fails, pct_us(v, n, 0.50), pct_us(v, n, 0.90), pct_us(v, n, 0.99),
	       (double)v[n - 1] / 1000.0);
	rc = 0;
out:
	free(v);
	(void)fclose(f);
	return rc;
}

enum mode { MODE_HTTP, MODE_TLS };

/* Is the request in buf complete? HTTP: the head's blank line. TLS: the whole handshake message
 * (ClientHello), reassembled from the payloads of however many handshake records carry it. */
static int request_complete(enum mode m, const unsigned char *buf, size_t len)
{
	if (m == MODE_HTTP)
		return memmem(buf, len, "\r\n\r\n", 4) != NULL;
	unsigned char hs[4];
	size_t have = 0, need = 0, off = 0;
	while (off + 5 <= len) {
		if (buf[off] != 0x16)
			return 1; /* not a handshake record: answer anyway */
		size_t rl = ((size_t)buf[off + 3] << 8) | buf[off + 4];
		size_t avail = len - off - 5 < rl ? len - off - 5 : rl;
		for (size_t i = 0; i < avail; i++, have++) {
			if (have < 4)
				hs[have] = buf[off + 5 + i];
			if (have == 3)
				need = 4 + (((size_t)hs[1] << 16) | ((size_t)hs[2] << 8) | hs[3]);
		}
		if (need && have >= need)
			return 1;
		off += 5 + rl;
	}
	return 0;
}

static void serve_one(int cfd, enum mode m)
{
	static const char http_reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
	/* The shape of a server's first flight (a handshake record); the client only times its first byte. */
	static const unsigned char tls_reply[] = { 0x16, 0x03, 0x03, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00 };
	static unsigned char buf[REQ_MAX];
	size_t len = 0;
	set_timeouts(cfd);
	while (len < sizeof(buf)) {
		ssize_t r = read(cfd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		len += (size_t)r;
		if (request_complete(m, buf, len))
			break;
	}
	if (m == MODE_HTTP)
		(void)write_all(cfd, (const unsigned char *)http_reply, sizeof(http_reply) - 1);
	else
		(void)write_all(cfd, tls_reply, sizeof(tls_reply));
}

static int cmd_serve(int argc, char **argv)
{
	struct pollfd pfd[8];
	enum mode modes[8];
	int n = 0;
	for (int i = 2; i < argc && n < 8; i++, n++) {
		char spec[128];
		if (snprintf(spec, sizeof(spec), "%s", argv[i]) >= (int)sizeof(spec))
			return 2;
		char *eq = strchr(spec, '='), *colon = strrchr(spec, ':');
		if (!eq || !colon || colon < eq)
			return 2;
		*eq = *colon = '\0';
		modes[n] = strcmp(spec, "tls") == 0 ? MODE_TLS : MODE_HTTP;
		struct sockaddr_storage ss;
		socklen_t slen;
		if (parse_addr(eq + 1, colon + 1, &ss, &slen) < 0)
			return 2;
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one_ = 1;
		if (fd < 0)
			return 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one_, sizeof(one_));
		if (bind(fd, (struct sockaddr *)&ss, slen) < 0 || listen(fd, 1024) < 0) {
			perror(argv[i]);
			return 1;
		}
		pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	for (;;) {
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			int cfd = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (cfd < 0)
				continue;
			serve_one(cfd, modes[i]);
			close(cfd);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc, argv);
	if (argc == 3 && strcmp(argv[1], "stats") == 0)
		return cmd_stats(argv[2]);
	if (argc == 7 && (strcmp(argv[1], "http") == 0 || strcmp(argv[1], "tls") == 0))
		return cmd_client(argv);
	(void)fprintf(stderr, "usage: latency http IP PORT HOST N OUT | tls IP PORT HELLO N OUT | stats OUT |"
			" serve (http|tls)=IP:PORT...\n");
	return 2;
}

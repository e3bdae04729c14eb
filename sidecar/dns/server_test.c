/* sidecar/dns/server_test.c — cmocka suite for the DNS server's upstream side (RFC 5452): the real server
 * on a loop, agent queries sent to its UDP listener, a fake upstream on a loopback UDP socket that the
 * test answers by hand. Queries in flight leave from different source ports (one connected socket each);
 * an answer with the right ID and question arriving on another query's socket, or from a port other than
 * the server's, is dropped; the socket pool's bound answers SERVFAIL instead of sharing a port, and a
 * finished query gives its socket back. Also: the query sent upstream is the filter's (lower case), the
 * answer echoes the agent's spelling. A repeated question is answered from the answer cache (dns_cache.h):
 * no upstream query, the agent's ID and spelling, the addresses bound again; a policy swap empties it.
 * A wildcard rule's `queries` budget: the query at the limit is forwarded, the next one REFUSED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "sidecar/core/budget.h"
#include "sidecar/dns/codec.h"
#include "sidecar/dns/server.h"
#include "sidecar/core/loop.h"
#include "sidecar/core/sidecar.h"

#define MAXQ 64

struct upq {                     /* one query the fake upstream received */
	uint16_t id, port;           /* upstream ID, and the source port it came from */
	char qname[SK_DNS_NAME_TEXT_MAX];
	uint8_t wire_name[SK_DNS_NAME_WIRE_MAX];   /* as sent (case kept) */
	uint8_t wire_len;
	struct sockaddr_in from;
};

struct world {
	struct sk_sidecar sc;
	struct sk_dns_srv *dns;
	int fake, fake2;             /* the upstream, and another socket on the same address (another port) */
	int devnull;
	uint16_t dns_port;
	struct upq q[MAXQ];
	size_t nq;
};

static uint16_t sock_port(int fd)
{
	struct sockaddr_in sa = { 0 };
	socklen_t sl = sizeof(sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	return ntohs(sa.sin_port);
}

static int udp_bound(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static uint16_t free_port(void)
{
	int fd = udp_bound();
	uint16_t p = sock_port(fd);
	close(fd);
	return p;
}

/* wild: extra lines for the "*.example.com" rule (a budget), or "". */
static int start_world_wild(void **state, uint32_t pool, uint32_t bindings, const char *wild)
{
	struct world *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	sk_dns_settings_default(&w->sc.dns_cfg);
	w->sc.dns_cfg.probe_ms = 0;
	if (pool)
		w->sc.dns_cfg.upstream_sockets = pool;
	if (bindings)
		w->sc.dns_cfg.bindings = bindings;
	struct sk_err err = { 0 };
	assert_int_equal(sk_loop_new(&w->sc.loop, &err), 0);
	w->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(w->devnull >= 0);
	sk_audit_init(&w->sc.audit, w->devnull, NULL);
	w->fake = udp_bound();
	w->fake2 = udp_bound();
	/* The port is free for UDP when picked, but the server also listens on TCP there, and any process's
	 * TCP socket may hold that number (an ephemeral client port): pick again on EADDRINUSE. */
	int rc = -EADDRINUSE;
	for (int attempt = 0; attempt < 20 && rc == -EADDRINUSE; attempt++) {
		w->dns_port = free_port();
		char yaml[768];
		int n = snprintf(yaml, sizeof(yaml),
				 "version: 1\n"
				 "ports: { proxy: 26101, dns: %u, admin: 26100, api: 26180 }\n"
				 "dns:\n  upstream: [\"127.0.0.1:%u\"]\n"
				 "egress:\n  - host: example.com\n    ports: [443]\n  - host: \"*.example.com\"\n    ports: [443]\n%s",
				 (unsigned)w->dns_port, (unsigned)sock_port(w->fake), wild);
		assert_true(n > 0 && (size_t)n < sizeof(yaml));
		struct sk_diags diags = { 0 };
		assert_int_equal(sk_policy_load_buffer("t.yaml", yaml, (size_t)n, -1, &w->sc.policy, &diags), 0);
		rc = sk_dns_server_start(&w->sc, &w->dns, &err);
		if (rc == -EADDRINUSE) {
			sk_policy_free(w->sc.policy);
			w->sc.policy = NULL;
		}
	}
	assert_int_equal(rc, 0);
	*state = w;
	return 0;
}

static int start_world(void **state, uint32_t pool, uint32_t bindings)
{
	return start_world_wild(state, pool, bindings, "");
}

#define QUERY_BUDGET 3
#define STR_(x) #x
#define STR(x) STR_(x)

static int setup(void **state) { return start_world(state, 0, 0); }
static int setup_budget(void **state)
{
	return start_world_wild(state, 0, 0, "    budget: { queries: " STR(QUERY_BUDGET) ", window: 1m }\n");
}
static int setup_pool2(void **state) { return start_world(state, 2, 0); }
static int setup_bind1(void **state) { return start_world(state, 0, 1); }

static int teardown(void **state)
{
	struct world *w = *state;
	sk_dns_server_free(w->dns);
	sk_budget_table_fini(&w->sc.budgets);
	sk_policy_free(w->sc.policy);
	sk_loop_free(w->sc.loop);
	close(w->fake);
	close(w->fake2);
	close(w->devnull);
	free(w);
	return 0;
}

/* An agent: a UDP socket connected to the server's listener. */
static int client(struct world *w)
{
	int fd = udp_bound();
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(w->dns_port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void ask(int fd, uint16_t id, const char *name)
{
	uint8_t buf[512];
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(name, &n), 0);
	int len = sk_dns_build_query(id, SK_DNS_F_RD, &n, SK_DNS_T_A, SK_DNS_CLASS_IN, false, false, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(send(fd, buf, (size_t)len, 0), len);
}

/* Collects whatever reached the fake upstream. */
static void fake_collect(struct world *w)
{
	for (;;) {
		uint8_t b[1024];
		struct sockaddr_in from = { 0 };
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(w->fake, b, sizeof(b), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		struct sk_dns_msg m;
		assert_int_equal(sk_dns_parse(b, (size_t)n, &m), SK_DNS_OK);
		assert_true(w->nq < MAXQ);
		struct upq *q = &w->q[w->nq++];
		q->id = m.hdr.id;
		q->port = ntohs(from.sin_port);
		q->from = from;
		assert_int_equal(sk_dns_name_text(&m.qname, q->qname), 0);
		memcpy(q->wire_name, m.qname.wire, m.qname.len);
		q->wire_len = m.qname.len;
	}
}

static void pump(struct world *w, size_t want_q, uint64_t max_ms)
{
	uint64_t end = sk_monotonic_ms() + max_ms;
	struct sk_err err;
	while (sk_monotonic_ms() < end && w->nq < want_q) {
		assert_true(sk_loop_run_once(w->sc.loop, 5, &err) >= 0);
		fake_collect(w);
	}
}

static void run_for(struct world *w, uint64_t ms)
{
	uint64_t end = sk_monotonic_ms() + ms;
	struct sk_err err;
	while (sk_monotonic_ms() < end) {
		assert_true(sk_loop_run_once(w->sc.loop, 5, &err) >= 0);
		fake_collect(w);
	}
}

/* The answer to q (its upstream ID, its name) with one A record, sent from `from_fd` to `port`. */
static void answer_to(const struct upq *q, uint16_t id, int from_fd, uint16_t port, const uint8_t v4[4])
{
	uint8_t out[512];
	struct sk_dns_writer wr;
	sk_dns_w_init(&wr, out, sizeof(out));
	struct sk_dns_header h = { .id = id, .flags = SK_DNS_F_QR | SK_DNS_F_RD | SK_DNS_F_RA, .qdcount = 1,
				   .ancount = 1 };
	sk_dns_w_header(&wr, &h);
	struct sk_dns_name n;
	assert_int_equal(sk_dns_name_from_text(q->qname, &n), 0);
	sk_dns_w_name(&wr, &n, true);
	sk_dns_w_u16(&wr, SK_DNS_T_A);
	sk_dns_w_u16(&wr, SK_DNS_CLASS_IN);
	sk_dns_w_name(&wr, &n, true);
	sk_dns_w_u16(&wr, SK_DNS_T_A);
	sk_dns_w_u16(&wr, SK_DNS_CLASS_IN);
	sk_dns_w_u32(&wr, 60);
	sk_dns_w_u16(&wr, 4);
	sk_dns_w_bytes(&wr, v4, 4);
	assert_false(wr.overflow);
	struct sockaddr_in to = q->from;
	to.sin_port = htons(port);
	assert_int_equal(sendto(from_fd, out, wr.len, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)wr.len);
}

/* The agent's answer on fd, if any: its length (0 = nothing), parsed into m. */
static size_t got(int fd, uint8_t *buf, size_t cap, struct sk_dns_msg *m)
{
	memset(m, 0, sizeof(*m));
	ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);
	if (n <= 0)
		return 0;
	assert_int_equal(sk_dns_parse(buf, (size_t)n, m), SK_DNS_OK);
	return (size_t)n;
}

static const uint8_t ADDR1[4] = { 93, 184, 216, 34 }, ADDR2[4] = { 93, 184, 216, 35 };

static void test_concurrent_queries_distinct_ports(void **state)
{
	struct world *w = *state;
	int c[4];
	for (int i = 0; i < 4; i++) {
		c[i] = client(w);
		ask(c[i], (uint16_t)(0x100 + i), "example.com");
	}
	pump(w, 4, 1000);
	assert_int_equal(w->nq, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_not_equal(w->q[i].port, w->dns_port);
		for (size_t k = 0; k < i; k++) {
			assert_int_not_equal(w->q[i].port, w->q[k].port);
			assert_int_not_equal(w->q[i].id, w->q[k].id);
		}
	}
	/* each answered on its own socket reaches its own agent */
	for (size_t i = 0; i < 4; i++)
		answer_to(&w->q[i], w->q[i].id, w->fake, w->q[i].port, ADDR1);
	run_for(w, 50);
	for (int i = 0; i < 4; i++) {
		uint8_t b[512];
		struct sk_dns_msg m;
		assert_true(got(c[i], b, sizeof(b), &m) > 0);
		assert_int_equal(m.hdr.id, 0x100 + i);
		assert_int_equal(m.hdr.ancount, 1);
		assert_non_null(memmem(b, sizeof(b), ADDR1, 4));
		close(c[i]);
	}
	/* Sockets are not recycled: later queries leave from fresh ports (four in a row all on one port
	 * would mean a fixed port). Distinct names: a repeated one is answered from the cache. */
	int c2 = client(w);
	for (int i = 0; i < 4; i++) {
		char name[32];
		(void)snprintf(name, sizeof(name), "r%d.example.com", i);
		ask(c2, (uint16_t)(0x200 + i), name);
		pump(w, 5 + (size_t)i, 1000);
		assert_int_equal(w->nq, 5 + (size_t)i);
		answer_to(&w->q[4 + i], w->q[4 + i].id, w->fake, w->q[4 + i].port, ADDR1);
		run_for(w, 20);
	}
	bool all_same = true;
	for (size_t i = 5; i < 8; i++)
		all_same = all_same && w->q[i].port == w->q[4].port;
	assert_false(all_same);
	close(c2);
}

/* More queries queued at once than one receive takes (UDP_MMSG), from as many agents: each is forwarded
 * once from a port of its own, and each answer reaches the agent that asked, with its ID — the batch
 * keeps every datagram's sender apart. */
static void test_queued_batch_each_answered_to_its_agent(void **state)
{
	struct world *w = *state;
	enum { N = 40 };
	int c[N];
	for (int i = 0; i < N; i++) {
		char name[32];
		(void)snprintf(name, sizeof(name), "b%d.example.com", i);
		c[i] = client(w);
		ask(c[i], (uint16_t)(0x300 + i), name);
	}
	pump(w, N, 2000);
	assert_int_equal(w->nq, N);
	for (size_t i = 0; i < N; i++)
		for (size_t k = 0; k < i; k++)
			assert_int_not_equal(w->q[i].port, w->q[k].port);
	for (size_t i = 0; i < N; i++)
		answer_to(&w->q[i], w->q[i].id, w->fake, w->q[i].port, ADDR1);
	run_for(w, 100);
	for (int i = 0; i < N; i++) {
		uint8_t b[512];
		struct sk_dns_msg m;
		char want[32], name[SK_DNS_NAME_TEXT_MAX];
		(void)snprintf(want, sizeof(want), "b%d.example.com", i);
		assert_true(got(c[i], b, sizeof(b), &m) > 0);
		assert_int_equal(m.hdr.id, 0x300 + i);
		assert_int_equal(sk_dns_name_text(&m.qname, name), 0);
		assert_string_equal(name, want);
		assert_int_equal(m.hdr.ancount, 1);
		close(c[i]);
	}
}

static void test_answer_on_wrong_socket_dropped(void **state)
{
	struct world *w = *state;
	int c1 = client(w), c2 = client(w);
	ask(c1, 0x1111, "example.com");
	ask(c2, 0x2222, "EXAMPLE.com");
	pump(w, 2, 1000);
	assert_int_equal(w->nq, 2);
	const struct upq *q1 = &w->q[0], *q2 = &w->q[1];
	assert_int_not_equal(q1->port, q2->port);
	/* the filter's query: lower case whatever the agent typed */
	assert_memory_equal(q2->wire_name, "\x07" "example" "\x03" "com", 13);

	uint8_t b[512];
	struct sk_dns_msg m;
	/* q1's answer (right ID, right question) on q2's socket; q2's on q1's; each from the right address
	 * but the wrong port; and q1's from the right port with a wrong ID */
	answer_to(q1, q1->id, w->fake, q2->port, ADDR2);
	answer_to(q2, q2->id, w->fake, q1->port, ADDR2);
	answer_to(q1, q1->id, w->fake2, q1->port, ADDR2);
	answer_to(q2, q2->id, w->fake2, q2->port, ADDR2);
	answer_to(q1, (uint16_t)(q1->id ^ 0x8000), w->fake, q1->port, ADDR2);
	run_for(w, 50);
	assert_int_equal(got(c1, b, sizeof(b), &m), 0);
	assert_int_equal(got(c2, b, sizeof(b), &m), 0);

	/* the real answers still get through: nothing above consumed the queries */
	answer_to(q1, q1->id, w->fake, q1->port, ADDR1);
	answer_to(q2, q2->id, w->fake, q2->port, ADDR1);
	run_for(w, 50);
	size_t n = got(c1, b, sizeof(b), &m);
	assert_true(n > 0);
	assert_int_equal(m.hdr.id, 0x1111);
	assert_non_null(memmem(b, n, ADDR1, 4));
	assert_null(memmem(b, n, ADDR2, 4));
	n = got(c2, b, sizeof(b), &m);
	assert_true(n > 0);
	assert_int_equal(m.hdr.id, 0x2222);
	assert_memory_equal(b + 12, "\x07" "EXAMPLE" "\x03" "com", 13);   /* the agent's spelling echoed */
	assert_non_null(memmem(b, n, ADDR1, 4));
	assert_null(memmem(b, n, ADDR2, 4));
	/* a duplicate after the answer goes nowhere */
	answer_to(q1, q1->id, w->fake, q1->port, ADDR2);
	run_for(w, 20);
	assert_int_equal(got(c1, b, sizeof(b), &m), 0);
	close(c1);
	close(c2);
}

/* upstream_sockets = 2 (STOCKADE_DNS_UPSTREAM_SOCKETS): a third query in flight is refused with SERVFAIL at once, never sent
 * from a shared port; an answered query gives its socket back. */
static void test_pool_exhausted_servfail(void **state)
{
	struct world *w = *state;
	int c[4];
	for (int i = 0; i < 3; i++) {
		c[i] = client(w);
		ask(c[i], (uint16_t)(0x300 + i), "example.com");
	}
	pump(w, 3, 200);
	assert_int_equal(w->nq, 2);
	uint8_t b[512];
	struct sk_dns_msg m;
	assert_true(got(c[2], b, sizeof(b), &m) > 0);
	assert_int_equal(m.hdr.id, 0x302);
	assert_int_equal(SK_DNS_RCODE(m.hdr.flags), SK_DNS_RC_SERVFAIL);
	assert_int_equal(got(c[0], b, sizeof(b), &m), 0);

	answer_to(&w->q[0], w->q[0].id, w->fake, w->q[0].port, ADDR1);
	run_for(w, 30);
	c[3] = client(w);
	ask(c[3], 0x303, "other.example.com");   /* example.com itself is cached now */
	pump(w, 3, 1000);
	assert_int_equal(w->nq, 3);
	assert_int_not_equal(w->q[2].port, w->q[1].port);
	answer_to(&w->q[2], w->q[2].id, w->fake, w->q[2].port, ADDR1);
	run_for(w, 30);
	assert_true(got(c[3], b, sizeof(b), &m) > 0);
	assert_int_equal(m.hdr.id, 0x303);
	assert_int_equal(SK_DNS_RCODE(m.hdr.flags), SK_DNS_RC_NOERROR);
	for (int i = 0; i < 4; i++)
		close(c[i]);
}

/* A repeated question: answered from the cache at once (nothing reaches the upstream), with the agent's
 * ID and spelling, and its address bound again; after a policy swap the next one goes upstream again. */
static void test_cached_answer(void **state)
{
	struct world *w = *state;
	int c = client(w);
	ask(c, 0x501, "example.com");
	pump(w, 1, 1000);
	assert_int_equal(w->nq, 1);
	answer_to(&w->q[0], w->q[0].id, w->fake, w->q[0].port, ADDR1);
	run_for(w, 30);
	uint8_t b[512];
	struct sk_dns_msg m;
	assert_true(got(c, b, sizeof(b), &m) > 0);
	struct sk_addr a = { .family = AF_INET };
	memcpy(a.bytes, ADDR1, 4);
	assert_true(w->sc.bind.name_bound(w->sc.bind.ctx, &a, "example.com"));

	/* the binding table (one binding: setup_bind1) evicts it for another name's answer... */
	ask(c, 0x510, "other.example.com");
	pump(w, 2, 1000);
	assert_int_equal(w->nq, 2);
	answer_to(&w->q[1], w->q[1].id, w->fake, w->q[1].port, ADDR2);
	run_for(w, 30);
	assert_true(got(c, b, sizeof(b), &m) > 0);
	assert_false(w->sc.bind.name_bound(w->sc.bind.ctx, &a, "example.com"));
	/* ...and the cached answer binds it again, as a fresh one would */
	ask(c, 0x502, "ExAmple.COM");
	run_for(w, 30);
	size_t n = got(c, b, sizeof(b), &m);
	assert_true(n > 0);
	assert_int_equal(w->nq, 2);   /* not forwarded */
	assert_int_equal(m.hdr.id, 0x502);
	assert_memory_equal(b + 12, "\x07" "ExAmple" "\x03" "COM", 13);
	assert_int_equal(m.hdr.ancount, 1);
	assert_non_null(memmem(b, n, ADDR1, 4));
	assert_true(w->sc.bind.name_bound(w->sc.bind.ctx, &a, "example.com"));

	/* a reload (policy swap) flushes: the same question goes upstream again */
	struct sk_policy *same = w->sc.policy;
	w->sc.policy_gen++;
	w->sc.policy = same;
	ask(c, 0x503, "example.com");
	pump(w, 3, 1000);
	assert_int_equal(w->nq, 3);
	close(c);
}

/* A wildcard rule's `queries` budget (3 a minute), counted in upstream queries: the first three new names
 * under it are forwarded — the third, exactly at the limit, too — and the fourth is answered REFUSED at
 * once without reaching the upstream; a repeated name answered from the cache is not charged, so it
 * still gets its answer. Names the budget does not cover (example.com, another rule) are unaffected. */
static void test_query_budget_spent_exactly_then_refused(void **state)
{
	struct world *w = *state;
	int c = client(w);
	uint8_t b[512];
	struct sk_dns_msg m;
	for (int i = 0; i < QUERY_BUDGET; i++) {
		char name[32];
		(void)snprintf(name, sizeof(name), "q%d.example.com", i);
		ask(c, (uint16_t)(0x600 + i), name);
		pump(w, (size_t)i + 1, 1000);
		assert_int_equal(w->nq, (size_t)i + 1);   /* forwarded: within the budget */
		answer_to(&w->q[i], w->q[i].id, w->fake, w->q[i].port, ADDR1);
		run_for(w, 30);
		assert_true(got(c, b, sizeof(b), &m) > 0);
		assert_int_equal(m.hdr.id, 0x600 + i);
		assert_int_equal(SK_DNS_RCODE(m.hdr.flags), SK_DNS_RC_NOERROR);
		assert_int_equal(m.hdr.ancount, 1);
	}
	/* one past the budget: REFUSED, not forwarded */
	ask(c, 0x6ff, "q9.example.com");
	run_for(w, 50);
	assert_int_equal(w->nq, QUERY_BUDGET);
	assert_true(got(c, b, sizeof(b), &m) > 0);
	assert_int_equal(m.hdr.id, 0x6ff);
	assert_int_equal(SK_DNS_RCODE(m.hdr.flags), SK_DNS_RC_REFUSED);
	assert_int_equal(m.hdr.ancount, 0);
	/* a cached name carries nothing out: answered, not charged, not refused */
	ask(c, 0x700, "q0.example.com");
	run_for(w, 30);
	assert_true(got(c, b, sizeof(b), &m) > 0);
	assert_int_equal(m.hdr.id, 0x700);
	assert_int_equal(SK_DNS_RCODE(m.hdr.flags), SK_DNS_RC_NOERROR);
	assert_int_equal(w->nq, QUERY_BUDGET);
	/* another rule's name is not under this budget */
	ask(c, 0x701, "example.com");
	pump(w, QUERY_BUDGET + 1, 1000);
	assert_int_equal(w->nq, QUERY_BUDGET + 1);
	close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_concurrent_queries_distinct_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queued_batch_each_answered_to_its_agent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_on_wrong_socket_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_exhausted_servfail, setup_pool2, teardown),
		cmocka_unit_test_setup_teardown(test_cached_answer, setup_bind1, teardown),
		cmocka_unit_test_setup_teardown(test_query_budget_spent_exactly_then_refused, setup_budget, teardown),
	};
	return cmocka_run_group_tests_name("dns_server", tests, NULL, NULL);
}

/* bench/matcher/bench.c — decisions per second of sk_match for policies of growing size. Each policy is
 * a third exact hosts, a third wildcards, a third /32..24 CIDRs; the query mix (exact hit, wildcard hit
 * three labels deep, CIDR hit, miss by name, miss by address) has the same shape at every size, so any
 * difference between sizes is the matcher's (or the cache's), not the workload's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "policy/match.h"

#define N_QUERIES 4096

struct bench_query {
	char host[64];
	struct sk_addr dst;
	struct sk_query q;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rule_addr(unsigned i, struct sk_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->bytes[0] = 198;
	a->bytes[1] = (uint8_t)(18 + (i >> 16 & 1));
	a->bytes[2] = (uint8_t)(i >> 8);
	a->bytes[3] = (uint8_t)i;
}

static int fill_policy(struct sk_policy *p, unsigned n)
{
	static uint16_t port443[] = { 443 };
	memset(p, 0, sizeof(*p));
	p->block_private = true;
	p->rules = calloc(n, sizeof(*p->rules));
	if (!p->rules)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct sk_rule *r = &p->rules[i];
		char buf[64];
		r->ports = port443;
		r->n_ports = 1;
		switch (i % 3) {
		case 0:
		case 1:
			(void)snprintf(buf, sizeof(buf), i % 3 ? "w%u.example.net" : "host%u.example.com", i);
			r->kind = SK_RULE_HOST;
			r->wildcard = i % 3 == 1;
			r->host = strdup(buf);
			if (!r->host)
				return -ENOMEM;
			break;
		default:
			r->kind = SK_RULE_CIDR;
			rule_addr(i, &r->cidr.net);
			r->cidr.prefix = 32;
			break;
		}
		p->n_rules = i + 1;
	}
	return 0;
}

static void free_policy(struct sk_policy *p)
{
	for (size_t i = 0; i < p->n_rules; i++)
		free(p->rules[i].host);
	free(p->rules);
	sk_matcher_free(p->matcher);
}

/* spread: how many distinct rules the hits land on (all of them, or a small hot set). */
static void make_queries(struct bench_query *qs, unsigned n_rules, unsigned spread)
{
	unsigned seed = 42;
	for (unsigned k = 0; k < N_QUERIES; k++) {
		struct bench_query *b = &qs[k];
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % spread * (n_rules / spread);
		i -= i % 3;  /* an exact-host rule; +1 wildcard, +2 CIDR when they exist */
		memset(b, 0, sizeof(*b));
		b->q = (struct sk_query){ .port = 443, .proto = SK_PROTO_TLS };
		rule_addr(i + 2 < n_rules ? i + 2 : 2, &b->dst);
		switch (k % 5) {
		case 0:
			(void)snprintf(b->host, sizeof(b->host), "host%u.example.com", i);
			break;
		case 1:
			(void)snprintf(b->host, sizeof(b->host), "a.b.w%u.example.net", i + 1 < n_rules ? i + 1 : 1);
			break;
		case 2:
			b->q.dst = &b->dst;
			break;
		case 3:
			(void)snprintf(b->host, sizeof(b->host), "nohost%u.example.org", i);
			break;
		default:
			b->dst.bytes[1] = 20;  /* 198.20/16: public, no rule */
			b->q.dst = &b->dst;
			break;
		}
		if (b->host[0])
			b->q.host = b->host;
	}
}

/* Returns decisions per second; *allowed counts allows (so the work cannot be optimised away) out of
 * *decisions. */
static double run(const struct sk_policy *p, const struct bench_query *qs, unsigned long *allowed,
		  unsigned long *decisions)
{
	unsigned long iters = 0;
	double t0 = now(), t;
	do {
		for (unsigned k = 0; k < N_QUERIES; k++) {
			struct sk_decision d;
			sk_match(p, &qs[k].q, &d);
			*allowed += d.allow;
		}
		iters += N_QUERIES;
		t = now();
	} while (t - t0 < 0.5);
	*decisions = iters;
	return (double)iters / (t - t0);
}

int main(void)
{
	static const unsigned sizes[] = { 10, 1000, 100000 };
	double rate[3] = { 0 }, hot[3] = { 0 };
	struct bench_query *qs = calloc(N_QUERIES, sizeof(*qs));
	if (!qs)
		return 1;
	for (size_t s = 0; s < 3; s++) {
		struct sk_policy p;
		if (fill_policy(&p, sizes[s]) < 0) {
			(void)fprintf(stderr, "bench: out of memory\n");
			free_policy(&p);
			free(qs);
			return 1;
		}
		double t0 = now();
		int r = sk_matcher_build(&p);
		double build_ms = (now() - t0) * 1e3;
		if (r < 0) {
			(void)fprintf(stderr, "bench: sk_matcher_build: %s\n", strerror(-r));
			free_policy(&p);
			free(qs);
			return 1;
		}
		unsigned long allowed = 0, decisions = 0;
		make_queries(qs, sizes[s], sizes[s]);
		rate[s] = run(&p, qs, &allowed, &decisions);
		double share = (double)allowed / (double)decisions;
		allowed = decisions = 0;
		make_queries(qs, sizes[s], sizes[s] < 64 ? sizes[s] : 64);
		hot[s] = run(&p, qs, &allowed, &decisions);
		printf("rules %6u: build %7.2f ms | hits over all rules %9.0f decisions/s (%3.0f ns) | hits on 64 "
		       "rules %9.0f decisions/s (%3.0f ns) | allow share %.2f/%.2f\n",
		       sizes[s], build_ms, rate[s], 1e9 / rate[s], hot[s], 1e9 / hot[s], share,
		       (double)allowed / (double)decisions);
		free_policy(&p);
	}
	printf("ratio 100k/10: %.2f with hits over all rules (includes cache misses: the 100k tables are MBs), "
	       "%.2f with a hot set (1.00 = constant cost per decision)\n", rate[2] / rate[0], hot[2] / hot[0]);
	free(qs);
	return 0;
}

/* sidecar/core/metrics.c — see metrics.h. Owns the counter tables and the Prometheus text rendering.
 *
 * Every labelled family is a fixed-size open-addressing table keyed by its rendered label string. The
 * table never grows: once SERIES_MAX distinct label sets exist, further new sets are counted in
 * stockade_metrics_series_dropped_total instead, so a caller passing unexpected strings cannot make the
 * sidecar allocate without bound. Label values are copied (truncated to LABEL_MAX) and escaped once, at
 * insertion, so rendering is a plain copy. */
#include "sidecar/core/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hash.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "policy/policy.h"
#include "sidecar/core/procstat.h"

#ifndef SK_VERSION
#define SK_VERSION "unknown"
#endif

#define SERIES_MAX 512     /* distinct label sets per family */
#define TABLE_SLOTS 1024   /* power of two, > SERIES_MAX so probes stay short */
#define LABEL_MAX 64       /* bytes of one label value kept (before escaping) */
#define KEY_MAX 320        /* rendered, escaped label set: `a="..",b=".."` */
#define API_HIST_MAX 64    /* API latency histograms (one per api name; the names come from the policy) */

/* Upper bounds (seconds). Decisions are a parse + a hash lookup, so the interesting range is 10 µs..1 s;
 * API requests go to remote HTTPS services, 5 ms..60 s. */
static const double latency_buckets[] = { 0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
					  0.005, 0.01, 0.05, 0.1, 0.5, 1 };
static const double api_buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };
#define N_LAT SK_ARRAY_SIZE(latency_buckets)
#define N_API SK_ARRAY_SIZE(api_buckets)

struct series {
	char key[KEY_MAX];  /* empty = free slot */
	uint64_t value;
};

struct family {
	struct series *slots;  /* TABLE_SLOTS entries */
	size_t used;
	uint64_t dropped;      /* increments that found the table full */
};

struct histogram {
	uint64_t counts[16];   /* per bucket, non-cumulative; index n_bounds = +Inf (n_bounds <= 15) */
	uint64_t count;
	double sum;
};

/* One api's latency histogram; key is its rendered, escaped label (`api="llm"`). */
struct api_hist {
	char key[KEY_MAX];
	struct histogram h;
};

struct sk_metrics {
	struct family conns;   /* decision, reason, rule, proto */
	struct family dns;     /* result, qtype */
	struct family api;     /* api, status */
	int64_t active;
	uint64_t bytes_up, bytes_down;
	uint64_t reload_ok, reload_failed;
	time_t last_reload;    /* the start's load counts as the first, successful one */
	bool last_reload_ok;
	struct histogram decision;
	/* Per api, in first-seen order; the gateway passes a policy api name or "unknown", so the set is
	 * bounded by the policies loaded; past API_HIST_MAX names an observation is counted as dropped. */
	struct api_hist api_latency[API_HIST_MAX];
	size_t n_api_latency;
	time_t started;
};

/* ---- label handling ---- */

/* Appends `name="value"` (value truncated to LABEL_MAX bytes, escaped per exposition 0.0.4: backslash,
 * double quote, newline) to buf at *pos. Returns false when the key would not fit. */
static bool key_add(char *buf, size_t *pos, const char *name, const char *value)
{
	size_t p = *pos;
	/* `,name="` by hand: this runs twice per DNS query and per connection, and snprintf was most of it */
	const size_t nl = strlen(name), n = (p ? 1 : 0) + nl + 2;
	if (n >= KEY_MAX - p)
		return false;
	if (p)
		buf[p++] = ',';
	memcpy(buf + p, name, nl);
	p += nl;
	buf[p++] = '=';
	buf[p++] = '"';
	if (!value)
		value = "";
	for (size_t i = 0; i < LABEL_MAX && value[i]; i++) {
		char c = value[i];
		const char *esc = c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
		size_t need = esc ? 2 : 1;
		if (p + need + 2 > KEY_MAX)
			return false;
		if (esc) {
			memcpy(buf + p, esc, 2);
		} else {
			buf[p] = c;
		}
		p += need;
	}
	if (p + 2 > KEY_MAX)
		return false;
	buf[p++] = '"';
	buf[p] = '\0';
	*pos = p;
	return true;
}

static uint32_t key_hash(const char *s)
{
	return (uint32_t)sk_fnv1a64_add_str(SK_FNV64_OFFSET, s);
}

/* Adds delta to the series for key, creating it if there is room. */
static void family_add(struct family *f, const char *key, uint64_t delta)
{
	uint32_t i = key_hash(key) & (TABLE_SLOTS - 1);
	for (unsigned probe = 0; probe < TABLE_SLOTS; probe++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		struct series *s = &f->slots[i];
		if (s->key[0] == '\0') {
			if (f->used >= SERIES_MAX)
				break;
			(void)snprintf(s->key, sizeof(s->key), "%s", key);   /* fits: key_add bounds keys to KEY_MAX */
			s->value = delta;
			f->used++;
			return;
		}
		if (strcmp(s->key, key) == 0) {
			s->value += delta;
			return;
		}
	}
	f->dropped += delta;
}

static int family_init(struct family *f)
{
	f->slots = calloc(TABLE_SLOTS, sizeof(*f->slots));
	return f->slots ? 0 : -ENOMEM;
}

static void histogram_observe(struct histogram *h, const double *bounds, size_t n, double v)
{
	/* NaN and negative values would corrupt _sum; a clock step backwards is the only plausible source. */
	if (!(v >= 0))
		v = 0;
	size_t i = 0;
	while (i < n && v > bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

/* ---- recording ---- */

int sk_metrics_new(struct sk_metrics **out, struct sk_err *err)
{
	struct sk_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return sk_err_sys(err, ENOMEM, "metrics: allocate");
	if (family_init(&m->conns) < 0 || family_init(&m->dns) < 0 || family_init(&m->api) < 0) {
		sk_metrics_free(m);
		return sk_err_sys(err, ENOMEM, "metrics: allocate");
	}
	m->started = time(NULL);
	m->last_reload = m->started;
	m->last_reload_ok = true;
	*out = m;
	return 0;
}

void sk_metrics_free(struct sk_metrics *m)
{
	if (!m)
		return;
	free(m->conns.slots);
	free(m->dns.slots);
	free(m->api.slots);
	free(m);
}

void sk_metrics_conn(struct sk_metrics *m, const char *decision, const char *reason, const char *rule,
		     const char *proto)
{
	char key[KEY_MAX];
	size_t pos = 0;
	if (!key_add(key, &pos, "decision", decision) || !key_add(key, &pos, "reason", reason) ||
	    !key_add(key, &pos, "rule", rule ? rule : "none") || !key_add(key, &pos, "proto", proto)) {
		m->conns.dropped++;
		return;
	}
	family_add(&m->conns, key, 1);
}

void sk_metrics_conn_active(struct sk_metrics *m, int delta)
{
	m->active += delta;
}

void sk_metrics_bytes(struct sk_metrics *m, uint64_t to_upstream, uint64_t to_client)
{
	m->bytes_up += to_upstream;
	m->bytes_down += to_client;
}

void sk_metrics_decision_latency(struct sk_metrics *m, double seconds)
{
	histogram_observe(&m->decision, latency_buckets, N_LAT, seconds);
}

void sk_metrics_dns(struct sk_metrics *m, const char *result, const char *qtype)
{
	char key[KEY_MAX];
	size_t pos = 0;
	if (!key_add(key, &pos, "result", result) || !key_add(key, &pos, "qtype", qtype)) {
		m->dns.dropped++;
		return;
	}
	family_add(&m->dns, key, 1);
}

void sk_metrics_reload(struct sk_metrics *m, bool ok)
{
	if (ok)
		m->reload_ok++;
	else
		m->reload_failed++;
	m->last_reload = time(NULL);
	m->last_reload_ok = ok;
}

void sk_metrics_api(struct sk_metrics *m, const char *api, int status, double seconds)
{
	char key[KEY_MAX], st[16];
	size_t pos = 0;
	(void)snprintf(st, sizeof(st), "%d", status);
	if (!key_add(key, &pos, "api", api) || !key_add(key, &pos, "status", st)) {
		m->api.dropped++;
		return;
	}
	family_add(&m->api, key, 1);
	pos = 0;
	if (!key_add(key, &pos, "api", api))
		return;
	struct api_hist *h = NULL;
	for (size_t i = 0; i < m->n_api_latency && !h; i++)
		if (strcmp(m->api_latency[i].key, key) == 0)
			h = &m->api_latency[i];
	if (!h) {
		if (m->n_api_latency == API_HIST_MAX) {
			m->api.dropped++;
			return;
		}
		h = &m->api_latency[m->n_api_latency++];
		(void)snprintf(h->key, sizeof(h->key), "%s", key);   /* fits: key_add bounds keys to KEY_MAX */
	}
	histogram_observe(&h->h, api_buckets, N_API, seconds);
}

/* ---- rendering ---- */

/* Every append below may fail only by running out of memory, which the buffer remembers (common/strbuf.h):
 * one check at the end. */
static void head(struct sk_strbuf *b, const char *name, const char *type, const char *help)
{
	sk_strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Series in a stable order (sorted by key) so successive scrapes diff cleanly. */
static int cmp_series(const void *a, const void *b)
{
	const struct series *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);
}

static void render_family(struct sk_strbuf *b, const struct family *f, const char *name)
{
	const struct series **v = malloc((f->used ? f->used : 1) * sizeof(const struct series *));
	if (!v) {
		b->oom = true;   /* the same as a failed append: the render reports -ENOMEM */
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < TABLE_SLOTS && n < f->used; i++)
		if (f->slots[i].key[0])
			v[n++] = &f->slots[i];
	qsort(v, n, sizeof(const struct series *), cmp_series);
	for (size_t i = 0; i < n; i++)
		sk_strbuf_printf(b, "%s{%s} %" PRIu64 "\n", name, v[i]->key, v[i]->value);
	free(v);
}

/* labels: "" or a rendered label set (`api="llm"`) put before le and on _sum and _count. */
static void render_histogram(struct sk_strbuf *b, const struct histogram *h, const double *bounds, size_t n,
			     const char *name, const char *labels)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";
	for (size_t i = 0; i < n; i++) {
		cum += h->counts[i];
		sk_strbuf_printf(b, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, bounds[i], cum);
	}
	sk_strbuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, h->count);
	if (labels[0])
		sk_strbuf_printf(b, "%s_sum{%s} %.9g\n%s_count{%s} %" PRIu64 "\n", name, labels, h->sum, name, labels, h->count);
	else
		sk_strbuf_printf(b, "%s_sum %.9g\n%s_count %" PRIu64 "\n", name, h->sum, name, h->count);
}

/* The standard process_* families (the names Prometheus client libraries export), read at scrape time.
 * Left out when /proc cannot be read: a scrape shows nothing rather than a made-up zero. */
static void render_process(struct sk_strbuf *b)
{
	struct sk_procstat ps;
	struct sk_err err = { 0 };
	if (sk_procstat_read(&ps, &err) < 0)
		return;
	head(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
	sk_strbuf_printf(b, "process_cpu_seconds_total %.2f\n", ps.cpu_seconds);
	head(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	sk_strbuf_printf(b, "process_resident_memory_bytes %" PRIu64 "\n", ps.resident_bytes);
	head(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	sk_strbuf_printf(b, "process_virtual_memory_bytes %" PRIu64 "\n", ps.virtual_bytes);
	head(b, "process_open_fds", "gauge", "Number of open file descriptors.");
	sk_strbuf_printf(b, "process_open_fds %" PRIu64 "\n", ps.open_fds);
	head(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	sk_strbuf_printf(b, "process_max_fds %" PRIu64 "\n", ps.max_fds);
	head(b, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
	sk_strbuf_printf(b, "process_start_time_seconds %.2f\n", ps.start_time_seconds);
}

int sk_metrics_render(const struct sk_metrics *m, const struct sk_policy *policy, struct sk_strbuf *out)
{
	struct sk_strbuf *const b = out;

	head(b, "stockade_build_info", "gauge", "Build of the running sidecar (always 1).");
	char key[KEY_MAX];
	size_t pos = 0;
	key_add(key, &pos, "version", SK_VERSION);
	sk_strbuf_printf(b, "stockade_build_info{%s} 1\n", key);

	head(b, "stockade_start_time_seconds", "gauge", "Unix time the sidecar started.");
	sk_strbuf_printf(b, "stockade_start_time_seconds %lld\n", (long long)m->started);

	head(b, "stockade_policy_loaded", "gauge", "1 when a policy is in force.");
	sk_strbuf_printf(b, "stockade_policy_loaded %d\n", policy ? 1 : 0);
	if (policy) {
		char hash[17];
		sk_policy_netns_hash(policy, hash);
		head(b, "stockade_policy_info", "gauge",
		     "The policy in force (always 1): content hash (as in audit lines), netns hash, mode, source.");
		pos = 0;
		key_add(key, &pos, "hash", policy->content_hash);
		key_add(key, &pos, "netns_hash", hash);
		key_add(key, &pos, "mode", sk_mode_name(policy->mode));
		key_add(key, &pos, "source", policy->source);
		sk_strbuf_printf(b, "stockade_policy_info{%s} 1\n", key);
		head(b, "stockade_policy_rules", "gauge", "Number of egress rules in the policy in force.");
		sk_strbuf_printf(b, "stockade_policy_rules %zu\n", policy->n_rules);
	}

	head(b, "stockade_policy_reloads_total", "counter", "Policy reloads by result.");
	sk_strbuf_printf(b, "stockade_policy_reloads_total{result=\"ok\"} %" PRIu64 "\n", m->reload_ok);
	sk_strbuf_printf(b, "stockade_policy_reloads_total{result=\"failed\"} %" PRIu64 "\n", m->reload_failed);
	head(b, "stockade_reload_last_timestamp_seconds", "gauge",
	     "Unix time of the last policy load or reload attempt (the start's load until the first reload).");
	sk_strbuf_printf(b, "stockade_reload_last_timestamp_seconds %lld\n", (long long)m->last_reload);
	head(b, "stockade_reload_last_success", "gauge",
	     "1 when the last policy load or reload attempt succeeded, 0 when it was rejected.");
	sk_strbuf_printf(b, "stockade_reload_last_success %d\n", m->last_reload_ok ? 1 : 0);

	head(b, "stockade_connections_total", "counter",
	     "Proxied connections by decision, reason, deciding rule (its name, else its index) and protocol.");
	render_family(b, &m->conns, "stockade_connections_total");

	head(b, "stockade_connections_active", "gauge", "Connections currently open through the proxy.");
	sk_strbuf_printf(b, "stockade_connections_active %lld\n", (long long)m->active);

	head(b, "stockade_bytes_total", "counter", "Bytes relayed by direction.");
	sk_strbuf_printf(b, "stockade_bytes_total{direction=\"upstream\"} %" PRIu64 "\n", m->bytes_up);
	sk_strbuf_printf(b, "stockade_bytes_total{direction=\"client\"} %" PRIu64 "\n", m->bytes_down);

	head(b, "stockade_decision_latency_seconds", "histogram",
	     "Time from accept to the allow/deny decision.");
	render_histogram(b, &m->decision, latency_buckets, N_LAT, "stockade_decision_latency_seconds", "");

	head(b, "stockade_dns_queries_total", "counter", "DNS queries by result and query type.");
	render_family(b, &m->dns, "stockade_dns_queries_total");

	head(b, "stockade_api_requests_total", "counter", "API gateway requests by api and HTTP status.");
	render_family(b, &m->api, "stockade_api_requests_total");
	head(b, "stockade_api_request_duration_seconds", "histogram", "API gateway request duration by api.");
	for (size_t i = 0; i < m->n_api_latency; i++)
		render_histogram(b, &m->api_latency[i].h, api_buckets, N_API, "stockade_api_request_duration_seconds",
				 m->api_latency[i].key);

	head(b, "stockade_metrics_series_dropped_total", "counter",
	     "Increments lost because a metric family reached its label-set limit.");
	sk_strbuf_printf(b, "stockade_metrics_series_dropped_total{family=\"connections\"} %" PRIu64 "\n", m->conns.dropped);
	sk_strbuf_printf(b, "stockade_metrics_series_dropped_total{family=\"dns\"} %" PRIu64 "\n", m->dns.dropped);
	sk_strbuf_printf(b, "stockade_metrics_series_dropped_total{family=\"api\"} %" PRIu64 "\n", m->api.dropped);

	render_process(b);

	return sk_strbuf_ok(b);
}

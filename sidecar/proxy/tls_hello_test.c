/* sidecar/proxy/tls_hello_test.c — the ClientHello parser on real captured hellos (every prefix, every record
 * split, every length field corrupted) and on synthetic hellos for each verdict. Every parse reads from
 * an exactly-sized heap copy, so ASan catches any read past `len`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/proxy/tls_hello.h"

#define CAP 16384
#define HELLO_DIR "sidecar/proxy/testdata/hellos/"

/* Parses a private, exactly-sized copy of buf[0..len). */
static enum sk_hello_result parse_cap(const uint8_t *buf, size_t len, size_t cap, char *sni)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len) {
		if (!buf)
			abort();
		memcpy(copy, buf, len);
	}
	enum sk_hello_result r = sk_tls_hello_parse(len ? copy : copy + 1, len, cap, sni);
	free(copy);
	return r;
}

static enum sk_hello_result parse(const uint8_t *buf, size_t len, char *sni)
{
	return parse_cap(buf, len, CAP, sni);
}

#define assert_result(got, want) \
	assert_string_equal(sk_hello_result_name(got), sk_hello_result_name(want))

/* ---- growable byte buffer used to build and re-frame hellos ---- */

struct bytes {
	uint8_t *d;
	size_t n, cap;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	if (!b->d || b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->d = realloc(b->d, b->cap);
		assert_non_null(b->d);
	}
	if (n)
		memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put8(struct bytes *b, unsigned v)
{
	uint8_t c = (uint8_t)v;
	put(b, &c, 1);
}

static void put16(struct bytes *b, unsigned v)
{
	put8(b, v >> 8);
	put8(b, v);
}

static void put24(struct bytes *b, unsigned v)
{
	put8(b, v >> 16);
	put16(b, v & 0xffff);
}

static void bytes_free(struct bytes *b)
{
	free(b->d);
	memset(b, 0, sizeof(*b));
}

static struct bytes load(const char *name)
{
	char path[256];
	struct bytes b = { 0 };
	uint8_t chunk[4096];
	size_t k;

	(void)snprintf(path, sizeof(path), HELLO_DIR "%s.bin", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (run the suite from the repository root)", path);
	while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
		put(&b, chunk, k);
	(void)fclose(f);
	return b;
}

/* The handshake bytes carried by the records of raw (assumed well-formed). */
static struct bytes payload(const struct bytes *raw)
{
	struct bytes hs = { 0 };
	size_t i = 0;

	while (i + 5 <= raw->n) {
		size_t n = (size_t)raw->d[i + 3] << 8 | raw->d[i + 4];
		put(&hs, raw->d + i + 5, n);
		i += 5 + n;
	}
	return hs;
}

/* hs framed as handshake records whose payload sizes are cuts[0], cuts[1], ... and then the rest. */
static struct bytes frame(const struct bytes *hs, const size_t *cuts, size_t ncuts)
{
	struct bytes raw = { 0 };
	size_t off = 0;

	for (size_t i = 0; i <= ncuts && off < hs->n; i++) {
		size_t n = i < ncuts ? cuts[i] : hs->n - off;
		if (n > hs->n - off)
			n = hs->n - off;
		put8(&raw, 22);
		put16(&raw, 0x0301);
		put16(&raw, (unsigned)n);
		put(&raw, hs->d + off, n);
		off += n;
	}
	return raw;
}

static struct bytes frame_one(const struct bytes *hs)
{
	return frame(hs, NULL, 0);
}

/* ---- synthetic ClientHellos ---- */

struct hello_spec {
	unsigned hs_type, version, sid_len, cs_len, comp_len;
	bool no_ext_block;
	struct bytes ext;          /* the extensions, each already framed */
};

static void spec_init(struct hello_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->hs_type = 1;
	s->version = 0x0303;
	s->sid_len = 32;
	s->cs_len = 4;
	s->comp_len = 1;
}

static void ext_raw(struct hello_spec *s, unsigned type, const void *data, size_t n)
{
	put16(&s->ext, type);
	put16(&s->ext, (unsigned)n);
	put(&s->ext, data, n);
}

/* A server_name extension with the given host_name entries. */
static void ext_sni(struct hello_spec *s, const char *const *names, size_t count)
{
	struct bytes list = { 0 }, e = { 0 };
	for (size_t i = 0; i < count; i++) {
		put8(&list, 0);
		put16(&list, (unsigned)strlen(names[i]));
		put(&list, names[i], strlen(names[i]));
	}
	put16(&e, (unsigned)list.n);
	put(&e, list.d, list.n);
	ext_raw(s, 0, e.d, e.n);
	bytes_free(&list);
	bytes_free(&e);
}

static void ext_sni1(struct hello_spec *s, const char *name)
{
	ext_sni(s, &name, 1);
}

/* The handshake message (type, 24-bit length, body) for spec; frees the spec's extensions. */
static struct bytes build_hs(struct hello_spec *s)
{
	struct bytes body = { 0 }, hs = { 0 };
	uint8_t zero[64] = { 0 };

	put16(&body, s->version);
	put(&body, zero, 32);
	put8(&body, s->sid_len);
	for (unsigned i = 0; i < s->sid_len; i++)
		put8(&body, i);
	put16(&body, s->cs_len);
	for (unsigned i = 0; i < s->cs_len; i++)
		put8(&body, 0x13);
	put8(&body, s->comp_len);
	for (unsigned i = 0; i < s->comp_len; i++)
		put8(&body, 0);
	if (!s->no_ext_block) {
		put16(&body, (unsigned)s->ext.n);
		put(&body, s->ext.d, s->ext.n);
	}
	put8(&hs, s->hs_type);
	put24(&hs, (unsigned)body.n);
	put(&hs, body.d, body.n);
	bytes_free(&body);
	bytes_free(&s->ext);
	return hs;
}

/* Builds spec as one record and parses it. */
static enum sk_hello_result parse_spec(struct hello_spec *s, char *sni)
{
	struct bytes hs = build_hs(s), raw = frame_one(&hs);
	enum sk_hello_result r = parse(raw.d, raw.n, sni);
	bytes_free(&hs);
	bytes_free(&raw);
	return r;
}

static enum sk_hello_result parse_name(const char *name, char *sni)
{
	struct hello_spec s;
	spec_init(&s);
	ext_raw(&s, 0x000a, "\x00\x02\x00\x1d", 4);
	ext_sni1(&s, name);
	ext_raw(&s, 0x002b, "\x02\x03\x04", 3);
	return parse_spec(&s, sni);
}

/* ---- the captures ---- */

static const struct capture {
	const char *file;
	enum sk_hello_result want;
	const char *sni;
} captures[] = {
	{ "curl", SK_HELLO_OK, "allowed.example" },
	{ "openssl", SK_HELLO_OK, "allowed.example" },
	{ "openssl-tls12", SK_HELLO_OK, "allowed.example" },
	{ "openssl-nosni", SK_HELLO_NO_SNI, "" },
	{ "openssl-ipsni", SK_HELLO_SNI_IP, "198.18.1.1" },
	{ "python3", SK_HELLO_OK, "allowed.example" },
	{ "python3-big", SK_HELLO_OK, "allowed.example" },
	{ "go", SK_HELLO_OK, "allowed.example" },
	{ "go-ech", SK_HELLO_ECH, "public.example" },
	{ "curl-split1", SK_HELLO_OK, "allowed.example" },
	{ "curl-split7", SK_HELLO_OK, "allowed.example" },
	{ "curl-split100", SK_HELLO_OK, "allowed.example" },
};

static void check_full(const struct capture *c, const struct bytes *raw)
{
	char sni[SK_DOMAIN_MAX + 1];
	enum sk_hello_result r = parse(raw->d, raw->n, sni);
	if (r != c->want)
		fail_msg("%s: got %s, want %s", c->file, sk_hello_result_name(r), sk_hello_result_name(c->want));
	assert_string_equal(sni, c->sni);
}

static void test_captured_hellos_parse_with_their_sni(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		struct bytes raw = load(captures[i].file);
		check_full(&captures[i], &raw);
		bytes_free(&raw);
	}
	struct bytes big = load("python3-big");
	assert_true(big.n > 4096);
	bytes_free(&big);
}

/* What arrives in TCP segments is a prefix: every proper prefix must ask for more, never decide. */
static void test_captured_hellos_need_more_at_every_prefix(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		struct bytes raw = load(captures[i].file);
		for (size_t n = 0; n < raw.n; n++) {
			enum sk_hello_result r = parse(raw.d, n, sni);
			if (r != SK_HELLO_NEED_MORE)
				fail_msg("%s: prefix %zu of %zu: %s", captures[i].file, n, raw.n,
					 sk_hello_result_name(r));
			assert_string_equal(sni, "");
		}
		check_full(&captures[i], &raw);
		bytes_free(&raw);
	}
}

static void test_sni_split_across_two_records_at_every_boundary(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		struct bytes raw = load(captures[i].file), hs = payload(&raw);
		for (size_t k = 1; k < hs.n; k++) {
			struct bytes two = frame(&hs, &k, 1);
			check_full(&captures[i], &two);
			bytes_free(&two);
		}
		bytes_free(&hs);
		bytes_free(&raw);
	}
}

/* 2..N records with pseudo-random boundaries (fixed seed), each also parsed at every prefix. */
static void test_sni_split_across_many_records(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	uint32_t seed = 12345;
	for (size_t i = 0; i < sizeof(captures) / sizeof(captures[0]); i++) {
		struct bytes raw = load(captures[i].file), hs = payload(&raw);
		for (size_t nrec = 2; nrec <= 12; nrec++) {
			for (int trial = 0; trial < 4; trial++) {
				size_t cuts[12];
				for (size_t c = 0; c + 1 < nrec; c++) {
					seed = seed * 1103515245u + 12345u;
					cuts[c] = 1 + (seed >> 8) % (hs.n / nrec + 1);
				}
				struct bytes multi = frame(&hs, cuts, nrec - 1);
				check_full(&captures[i], &multi);
				if (trial == 0)
					for (size_t n = 0; n < multi.n; n++)
						assert_result(parse(multi.d, n, sni), SK_HELLO_NEED_MORE);
				bytes_free(&multi);
			}
		}
		/* Equal-sized records of every size from 1 to 64 bytes. */
		for (size_t size = 1; size <= 64; size++) {
			size_t cuts[4096];
			size_t ncuts = 0;
			for (size_t off = size; off < hs.n && ncuts < 4096; off += size)
				cuts[ncuts++] = size;
			struct bytes multi = frame(&hs, cuts, ncuts);
			check_full(&captures[i], &multi);
			bytes_free(&multi);
		}
		bytes_free(&hs);
		bytes_free(&raw);
	}
}

/* Offsets of every length field of a single-record hello, found by an independent walk. */
struct len_field {
	size_t off, width;
};

static size_t be(const uint8_t *p, size_t w)
{
	size_t v = 0;
	for (size_t i = 0; i < w; i++)
		v = v << 8 | p[i];
	return v;
}

static size_t length_fields(const struct bytes *raw, struct len_field *f, size_t max)
{
	const uint8_t *d = raw->d;
	size_t n = 0, p;

	f[n++] = (struct len_field){ 3, 2 };          /* record */
	f[n++] = (struct len_field){ 6, 3 };          /* handshake */
	p = 5 + 4 + 2 + 32;
	f[n++] = (struct len_field){ p, 1 };          /* session id */
	p += 1 + d[p];
	f[n++] = (struct len_field){ p, 2 };          /* cipher suites */
	p += 2 + be(d + p, 2);
	f[n++] = (struct len_field){ p, 1 };          /* compression methods */
	p += 1 + d[p];
	if (p >= raw->n)
		return n;
	f[n++] = (struct len_field){ p, 2 };          /* extensions block */
	p += 2;
	while (p + 4 <= raw->n && n + 3 <= max) {
		size_t type = be(d + p, 2), len = be(d + p + 2, 2);
		f[n++] = (struct len_field){ p + 2, 2 };
		if (type == 0) {
			f[n++] = (struct len_field){ p + 4, 2 };   /* server_name_list */
			f[n++] = (struct len_field){ p + 7, 2 };   /* host_name */
		}
		p += 4 + len;
	}
	return n;
}

/* A decision (anything but NEED_MORE) taken on a prefix must be the one taken on the whole buffer. */
static void check_prefixes_consistent(const struct bytes *b, enum sk_hello_result full)
{
	char sni[SK_DOMAIN_MAX + 1];
	for (size_t n = 0; n < b->n; n++) {
		enum sk_hello_result r = parse(b->d, n, sni);
		if (r != SK_HELLO_NEED_MORE && r != full)
			fail_msg("prefix %zu: %s but whole: %s", n, sk_hello_result_name(r), sk_hello_result_name(full));
	}
}

static void test_corrupted_length_fields_are_malformed_or_need_more(void **state)
{
	(void)state;
	static const char *const singles[] = { "curl", "openssl", "openssl-tls12", "python3", "go" };
	char sni[SK_DOMAIN_MAX + 1];
	for (size_t i = 0; i < sizeof(singles) / sizeof(singles[0]); i++) {
		struct bytes raw = load(singles[i]);
		struct len_field f[64];
		size_t nf = length_fields(&raw, f, 64);
		assert_true(nf >= 9);
		for (size_t j = 0; j < nf; j++) {
			size_t orig = be(raw.d + f[j].off, f[j].width);
			size_t maxv = f[j].width == 1 ? 0xff : f[j].width == 2 ? 0xffff : 0xffffff;
			size_t vals[] = { orig + 1, orig - 1, maxv, 0 };
			for (size_t v = 0; v < 4; v++) {
				if ((vals[v] & maxv) == orig)
					continue;
				struct bytes m = { 0 };
				put(&m, raw.d, raw.n);
				for (size_t w = 0; w < f[j].width; w++)
					m.d[f[j].off + w] = (uint8_t)((vals[v] & maxv) >> (8 * (f[j].width - 1 - w)));
				enum sk_hello_result r = parse(m.d, m.n, sni);
				/* A too-long handshake length is refused by the cap before it is malformed. */
				bool ok = r == SK_HELLO_MALFORMED || r == SK_HELLO_NEED_MORE ||
					  (j == 1 && r == SK_HELLO_TOO_BIG);
				if (!ok)
					fail_msg("%s field@%zu %zu->%zu: %s", singles[i], f[j].off, orig,
						 vals[v] & maxv, sk_hello_result_name(r));
				check_prefixes_consistent(&m, r);
				bytes_free(&m);
			}
		}
		/* Truncated by one byte at the end. */
		assert_result(parse(raw.d, raw.n - 1, sni), SK_HELLO_NEED_MORE);
		bytes_free(&raw);
	}
}

/* ---- synthetic hellos: one verdict each ---- */

static void test_sni_normalised_and_valid_names(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1], name[300];
	assert_result(parse_name("Allowed.Example.", sni), SK_HELLO_OK);
	assert_string_equal(sni, "allowed.example");
	assert_result(parse_name("xn--bcher-kva.example", sni), SK_HELLO_OK);
	assert_string_equal(sni, "xn--bcher-kva.example");
	/* 253 bytes is the longest name; with a trailing dot it is 254 on the wire. */
	memset(name, 'a', sizeof(name));
	for (size_t i = 63; i < 253; i += 64)
		name[i] = '.';
	name[253] = '\0';
	assert_result(parse_name(name, sni), SK_HELLO_OK);
	assert_int_equal(strlen(sni), 253);
	name[253] = '.';
	name[254] = '\0';
	assert_result(parse_name(name, sni), SK_HELLO_OK);
	assert_int_equal(strlen(sni), 253);
}

static void test_sni_bad_names(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1], name[300];
	static const char *const bad[] = {
		"a..example", "bad_name.example", "exa mple.example", "-lead.example", "*.example.com",
		".example", "example.123", "caf\xc3\xa9.example", "[::1]", "a.example\t",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum sk_hello_result r = parse_name(bad[i], sni);
		if (r != SK_HELLO_BAD_NAME)
			fail_msg("\"%s\": %s", bad[i], sk_hello_result_name(r));
		assert_string_equal(sni, "");
	}
	memset(name, 'a', sizeof(name));
	name[299] = '\0';                 /* longer than any name */
	assert_result(parse_name(name, sni), SK_HELLO_BAD_NAME);
	name[254] = '\0';                 /* 254 bytes without a trailing dot */
	assert_result(parse_name(name, sni), SK_HELLO_BAD_NAME);

	/* An embedded NUL must not truncate the name into a valid one. */
	static const char nul_name[] = "a.example\0com";
	struct hello_spec s;
	spec_init(&s);
	put16(&s.ext, 0);
	put16(&s.ext, 2 + 3 + sizeof(nul_name) - 1);
	put16(&s.ext, 3 + sizeof(nul_name) - 1);
	put8(&s.ext, 0);
	put16(&s.ext, sizeof(nul_name) - 1);
	put(&s.ext, nul_name, sizeof(nul_name) - 1);
	assert_result(parse_spec(&s, sni), SK_HELLO_BAD_NAME);
	assert_string_equal(sni, "");
}

static void test_sni_ip_literals(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	static const char *const ips[] = { "198.18.1.1", "2001:db8::1", "::1", "127.1", "1.2.3.4.", "010.0.0.1" };
	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++) {
		enum sk_hello_result r = parse_name(ips[i], sni);
		if (r != SK_HELLO_SNI_IP)
			fail_msg("\"%s\": %s", ips[i], sk_hello_result_name(r));
		assert_string_equal(sni, ips[i]);
	}
}

static void test_sni_absent_or_multiple(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct hello_spec s;
	static const char *const two[] = { "allowed.example", "denied.example" };

	spec_init(&s);
	ext_raw(&s, 0x000a, "\x00\x02\x00\x1d", 4);
	assert_result(parse_spec(&s, sni), SK_HELLO_NO_SNI);

	spec_init(&s);                      /* TLS 1.2 and older may omit the extensions block */
	s.no_ext_block = true;
	assert_result(parse_spec(&s, sni), SK_HELLO_NO_SNI);

	spec_init(&s);
	ext_sni(&s, two, 2);
	assert_result(parse_spec(&s, sni), SK_HELLO_MULTI_SNI);
	assert_string_equal(sni, "");

	spec_init(&s);
	ext_sni(&s, two, 1);
	ext_raw(&s, 0x0017, NULL, 0);
	ext_sni(&s, two + 1, 1);
	assert_result(parse_spec(&s, sni), SK_HELLO_MULTI_SNI);

	spec_init(&s);                      /* same name twice is still two */
	ext_sni(&s, two, 1);
	ext_sni(&s, two, 1);
	assert_result(parse_spec(&s, sni), SK_HELLO_MULTI_SNI);
}

static void test_ech_extension_is_reported(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct hello_spec s;

	spec_init(&s);
	ext_sni1(&s, "Public.Example");
	ext_raw(&s, 0xfe0d, "\x00\x00\x01\x00\x01\x07\x00\x00\x00\x00", 10);
	assert_result(parse_spec(&s, sni), SK_HELLO_ECH);
	assert_string_equal(sni, "public.example");

	spec_init(&s);                      /* ECH before SNI, and without SNI */
	ext_raw(&s, 0xfe0d, "\x01", 1);
	assert_result(parse_spec(&s, sni), SK_HELLO_ECH);
	assert_string_equal(sni, "");

	spec_init(&s);                      /* draft ESNI */
	ext_sni1(&s, "public.example");
	ext_raw(&s, 0xffce, "\x00", 1);
	assert_result(parse_spec(&s, sni), SK_HELLO_ECH);
}

static void test_malformed_server_name_extension(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct hello_spec s;
	static const struct {
		const char *what;
		const char *data;
		size_t n;
	} cases[] = {
		{ "empty extension", "", 0 },
		{ "one byte", "\x00", 1 },
		{ "empty list", "\x00\x00", 2 },
		{ "list longer than ext", "\x00\x06\x00\x00\x02\x61\x62", 7 },
		{ "list shorter than ext", "\x00\x04\x00\x00\x02\x61\x62", 7 },
		{ "empty host_name", "\x00\x03\x00\x00\x00", 5 },
		{ "name longer than list", "\x00\x05\x00\x00\x03\x61\x62", 7 },
		{ "name shorter than list", "\x00\x05\x00\x00\x01\x61\x62", 7 },
		{ "unknown name type", "\x00\x05\x01\x00\x02\x61\x62", 7 },
		{ "entry cut after type", "\x00\x01\x00", 3 },
		{ "host_name then junk", "\x00\x06\x00\x00\x02\x61\x62\x00", 8 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		spec_init(&s);
		ext_raw(&s, 0, cases[i].data, cases[i].n);
		ext_raw(&s, 0x002b, "\x02\x03\x04", 3);
		enum sk_hello_result r = parse_spec(&s, sni);
		if (r != SK_HELLO_MALFORMED)
			fail_msg("%s: %s", cases[i].what, sk_hello_result_name(r));
	}
}

static void test_malformed_hello_fields(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct hello_spec s;

	spec_init(&s); s.sid_len = 33; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.sid_len = 0; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_OK);
	spec_init(&s); s.cs_len = 3; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.cs_len = 0; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.comp_len = 0; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.hs_type = 2; ext_sni1(&s, "a.example");   /* a ServerHello */
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.version = 0x0200; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.version = 0x0305; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s); s.version = 0x0301; ext_sni1(&s, "a.example");
	assert_result(parse_spec(&s, sni), SK_HELLO_OK);

	/* Duplicate extension types other than server_name. */
	spec_init(&s);
	ext_sni1(&s, "a.example");
	ext_raw(&s, 0x002b, "\x02\x03\x04", 3);
	ext_raw(&s, 0x002b, "\x02\x03\x03", 3);
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);

	/* An extension claiming more than the block, and a block with a stray byte. */
	spec_init(&s);
	ext_sni1(&s, "a.example");
	put16(&s.ext, 0x0017);
	put16(&s.ext, 1);
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s);
	ext_sni1(&s, "a.example");
	put8(&s.ext, 0);
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
	spec_init(&s);
	ext_sni1(&s, "a.example");
	put16(&s.ext, 0x0017);
	put8(&s.ext, 0);
	assert_result(parse_spec(&s, sni), SK_HELLO_MALFORMED);
}

/* A block-length / message-length mismatch built by hand: the block must cover the message exactly. */
static void test_extensions_block_must_cover_the_message(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct hello_spec s;

	spec_init(&s);
	ext_sni1(&s, "a.example");
	struct bytes hs = build_hs(&s);
	/* hs: type(1) len(3) version(2) random(32) sid(1+32) cs(2+4) comp(1+1) extlen(2) ... */
	size_t ext_off = 4 + 2 + 32 + 33 + 6 + 2;
	size_t ext_len = be(hs.d + ext_off, 2);
	for (int delta = -2; delta <= 2; delta++) {
		if (delta == 0)
			continue;
		hs.d[ext_off] = (uint8_t)((ext_len + (size_t)delta) >> 8);
		hs.d[ext_off + 1] = (uint8_t)(ext_len + (size_t)delta);
		struct bytes raw = frame_one(&hs);
		assert_result(parse(raw.d, raw.n, sni), SK_HELLO_MALFORMED);
		bytes_free(&raw);
	}
	bytes_free(&hs);

	/* A one-byte remainder after the compression methods cannot be an extensions block. */
	spec_init(&s);
	s.no_ext_block = true;
	hs = build_hs(&s);
	put8(&hs, 0);
	hs.d[3] = (uint8_t)(hs.n - 4);
	struct bytes raw = frame_one(&hs);
	assert_result(parse(raw.d, raw.n, sni), SK_HELLO_MALFORMED);
	bytes_free(&raw);
	bytes_free(&hs);
}

static void test_record_layer_rules(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct bytes raw = load("curl"), hs = payload(&raw), m = { 0 };

	/* Record versions 0x0300..0x0304 are accepted; others and major != 3 are not. */
	for (unsigned v = 0x0300; v <= 0x0306; v++) {
		put(&m, raw.d, raw.n);
		m.d[1] = (uint8_t)(v >> 8);
		m.d[2] = (uint8_t)v;
		assert_result(parse(m.d, m.n, sni), v <= 0x0304 ? SK_HELLO_OK : SK_HELLO_MALFORMED);
		if (v > 0x0304)   /* the bad version is refused as soon as it arrives */
			assert_result(parse(m.d, 3, sni), SK_HELLO_MALFORMED);
		m.n = 0;
	}
	put(&m, raw.d, raw.n);
	m.d[1] = 2;
	assert_result(parse(m.d, 2, sni), SK_HELLO_MALFORMED);
	m.n = 0;

	/* A zero-length record anywhere is malformed. */
	put(&m, "\x16\x03\x01\x00\x00", 5);
	assert_result(parse(m.d, m.n, sni), SK_HELLO_MALFORMED);
	m.n = 0;
	size_t cut = 100;
	struct bytes two = frame(&hs, &cut, 1);
	put(&m, two.d, 105);
	put(&m, "\x16\x03\x01\x00\x00", 5);
	put(&m, two.d + 105, two.n - 105);
	assert_result(parse(m.d, m.n, sni), SK_HELLO_MALFORMED);
	m.n = 0;

	/* An alert, a CCS or application data between the fragments of the hello is malformed. */
	for (unsigned ct = 20; ct <= 24; ct++) {
		if (ct == 22)
			continue;
		put(&m, two.d, 105);
		put8(&m, ct);
		put(&m, two.d + 106, two.n - 106);
		assert_result(parse(m.d, m.n, sni), SK_HELLO_MALFORMED);
		assert_result(parse(m.d, 106, sni), SK_HELLO_MALFORMED);
		m.n = 0;
	}
	bytes_free(&two);

	/* Records larger than 2^14 + 2048 bytes are malformed as soon as the length is read. */
	put(&m, "\x16\x03\x01\x48\x01", 5);
	assert_result(parse(m.d, m.n, sni), SK_HELLO_MALFORMED);
	assert_result(parse(m.d, 4, sni), SK_HELLO_NEED_MORE);
	m.n = 0;
	put(&m, "\x16\x03\x01\x49", 4);
	assert_result(parse(m.d, m.n, sni), SK_HELLO_MALFORMED);
	m.n = 0;

	/* Bytes after the hello: in the same record they are malformed, in a later record ignored. */
	put(&m, raw.d, raw.n);
	put(&m, "\x14\x03\x03\x00\x01\x01", 6);   /* a TLS 1.3 compatibility CCS */
	assert_result(parse(m.d, m.n, sni), SK_HELLO_OK);
	m.n = 0;
	put(&m, raw.d, raw.n);
	put(&m, "\x17\x03", 2);                   /* early data, cut short */
	assert_result(parse(m.d, m.n, sni), SK_HELLO_OK);
	m.n = 0;
	put(&m, raw.d, raw.n);
	put8(&m, 0x0b);                           /* one byte more inside the record */
	size_t rl = be(m.d + 3, 2) + 1;
	m.d[3] = (uint8_t)(rl >> 8);
	m.d[4] = (uint8_t)rl;
	assert_result(parse(m.d, m.n, sni), SK_HELLO_MALFORMED);
	m.n = 0;
	bytes_free(&m);
	bytes_free(&hs);
	bytes_free(&raw);
}

static void test_not_tls(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	/* SSLv2-compatible CLIENT-HELLO (2-byte header, msg type 1, version 3.1). */
	static const uint8_t v2[] = { 0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00, 0x00, 0x10 };
	assert_result(parse(v2, sizeof(v2), sni), SK_HELLO_NOT_TLS);
	assert_result(parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, sni), SK_HELLO_NOT_TLS);
	assert_result(parse((const uint8_t *)"S", 1, sni), SK_HELLO_NOT_TLS);
	assert_result(parse((const uint8_t *)"", 0, sni), SK_HELLO_NEED_MORE);
	assert_result(parse((const uint8_t *)"\x16", 1, sni), SK_HELLO_NEED_MORE);
}

/* Every TLS content type first is TLS (never "not TLS", which the proxy would relay as TCP): servers skip
 * an alert or change_cipher_spec record before the hello and take other legacy record versions. Every
 * other first byte is not TLS. */
static void test_every_first_byte(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	for (unsigned b = 0; b < 256; b++) {
		uint8_t rec[] = { (uint8_t)b, 0x03, 0x01, 0x00, 0x02, 0x01, 0x00 };
		enum sk_hello_result r = parse(rec, sizeof(rec), sni);
		bool tls = b >= 0x14 && b <= 0x17;
		assert_int_equal(sk_tls_content_type((uint8_t)b), tls);
		if (tls ? r == SK_HELLO_NOT_TLS : r != SK_HELLO_NOT_TLS)
			fail_msg("first byte 0x%02x: %s", b, sk_hello_result_name(r));
	}
	/* Led by an alert or a CCS record, or under another major version: TLS, and malformed. */
	assert_result(parse((const uint8_t *)"\x15\x03\x01\x00\x02\x01\x00\x16\x03\x01", 10, sni),
		      SK_HELLO_MALFORMED);
	assert_result(parse((const uint8_t *)"\x14\x03\x03\x00\x01\x01\x16\x03\x01", 9, sni), SK_HELLO_MALFORMED);
	assert_result(parse((const uint8_t *)"\x17\x03\x03\x00\x01\x00", 6, sni), SK_HELLO_MALFORMED);
	assert_result(parse((const uint8_t *)"\x16\x02\x00\x00\x05", 5, sni), SK_HELLO_MALFORMED);
	assert_result(parse((const uint8_t *)"\x16\x00\x01", 3, sni), SK_HELLO_MALFORMED);
}

/* The name buffer's edge: 254 bytes (253 and a trailing dot) is the longest name; 255, 256 and 257 bytes
 * are refused, and the 256-byte one is exactly the buffer's size (an off-by-one there writes past it:
 * the buffer is a stack array of its own, so the sanitizer sees that write). */
static void test_sni_lengths_at_the_buffer_edge(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1], name[300];
	for (size_t n = 250; n <= 258; n++) {
		memset(name, 'a', sizeof(name));
		for (size_t i = 63; i < n; i += 64)
			name[i] = '.';
		if (n == 254)
			name[253] = '.';
		name[n] = '\0';
		enum sk_hello_result r = parse_name(name, sni);
		enum sk_hello_result want = n <= 254 ? SK_HELLO_OK : SK_HELLO_BAD_NAME;
		if (r != want)
			fail_msg("%zu-byte name: %s", n, sk_hello_result_name(r));
		assert_int_equal(strlen(sni), n <= 253 ? n : n == 254 ? 253 : 0);
	}
}

/* One record of type ct carrying payload. */
static struct bytes record(unsigned ct, const void *payload, size_t n)
{
	struct bytes b = { 0 };
	put8(&b, ct);
	put16(&b, 0x0303);
	put16(&b, (unsigned)n);
	put(&b, payload, n);
	return b;
}

static enum sk_tls_next next(const struct bytes *b, size_t *used, enum sk_hello_result *hr, char *sni)
{
	return sk_tls_client_record(b->d, b->n, 16384, used, hr, sni);
}

static void test_client_records_after_the_hello(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	size_t used;
	enum sk_hello_result hr;

	struct bytes ccs = record(20, "\x01", 1);
	assert_int_equal(next(&ccs, &used, &hr, sni), SK_TLS_NEXT_PASS);
	assert_int_equal(used, 6);
	assert_int_equal(sk_tls_client_record(ccs.d, 5, 16384, &used, &hr, sni), SK_TLS_NEXT_MORE);
	bytes_free(&ccs);
	ccs = record(20, "\x02", 1);                      /* CCS is exactly 0x01 */
	assert_int_equal(next(&ccs, &used, &hr, sni), SK_TLS_NEXT_BAD);
	bytes_free(&ccs);
	ccs = record(20, "\x01\x01", 2);
	assert_int_equal(next(&ccs, &used, &hr, sni), SK_TLS_NEXT_BAD);
	bytes_free(&ccs);

	struct bytes alert = record(21, "\x01\x00", 2);
	assert_int_equal(next(&alert, &used, &hr, sni), SK_TLS_NEXT_PASS);
	assert_int_equal(used, 7);
	bytes_free(&alert);

	/* 0-RTT data passes as soon as its header is read, the whole record counted. */
	uint8_t zero[300] = { 0 };
	struct bytes ed = record(23, zero, sizeof(zero));
	assert_int_equal(sk_tls_client_record(ed.d, 5, 16384, &used, &hr, sni), SK_TLS_NEXT_PASS);
	assert_int_equal(used, 305);
	bytes_free(&ed);

	/* A handshake record is a hello, judged: the name, a second name, garbage. */
	struct hello_spec sp;
	spec_init(&sp);
	ext_sni1(&sp, "Allowed.Example");
	struct bytes hs = build_hs(&sp), raw = frame_one(&hs);
	put(&raw, "\x17\x03\x03", 3);                  /* what follows is not part of it */
	assert_int_equal(next(&raw, &used, &hr, sni), SK_TLS_NEXT_HELLO);
	assert_int_equal(hr, SK_HELLO_OK);
	assert_string_equal(sni, "allowed.example");
	assert_int_equal(used, raw.n - 3);
	assert_int_equal(sk_tls_client_record(raw.d, raw.n - 10, 16384, &used, &hr, sni), SK_TLS_NEXT_MORE);
	bytes_free(&hs);
	bytes_free(&raw);
	struct bytes fin = record(22, "\x14\x00\x00\x0c", 4);   /* not a ClientHello */
	assert_int_equal(next(&fin, &used, &hr, sni), SK_TLS_NEXT_HELLO);
	assert_int_equal(hr, SK_HELLO_MALFORMED);
	bytes_free(&fin);

	static const struct { const char *b; size_t n; } bad[] = {
		{ "GET / ", 6 }, { "\x16\x02\x00\x00\x01", 5 }, { "\x17\x03\x05", 3 },
		{ "\x17\x03\x03\x00\x00", 5 }, { "\x17\x03\x03\xff\xff", 5 }, { "\x80\x2e\x01", 3 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sk_tls_client_record((const uint8_t *)bad[i].b, bad[i].n, 16384, &used, &hr, sni),
				 SK_TLS_NEXT_BAD);
}

/* A ServerHello (type 2) or an HRR: legacy_version 0x0303, random, the rest. */
static struct bytes server_hello(bool hrr)
{
	static const uint8_t hrr_random[32] = {
		0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
		0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
	};
	struct bytes body = { 0 }, hs = { 0 };
	uint8_t rnd[32];
	memcpy(rnd, hrr_random, sizeof(rnd));
	if (!hrr)
		rnd[31] ^= 1;
	put16(&body, 0x0303);
	put(&body, rnd, 32);
	put8(&body, 0);
	put16(&body, 0x1301);
	put8(&body, 0);
	put16(&body, 0);
	put8(&hs, 2);
	put24(&hs, (unsigned)body.n);
	put(&hs, body.d, body.n);
	bytes_free(&body);
	return hs;
}

static void test_server_first_records(void **state)
{
	(void)state;
	for (int hrr = 0; hrr <= 1; hrr++) {
		enum sk_server_first want = hrr ? SK_SERVER_FIRST_HRR : SK_SERVER_FIRST_HELLO;
		struct bytes hs = server_hello(hrr);
		struct bytes one = frame_one(&hs);
		assert_int_equal(sk_tls_server_first(one.d, one.n), want);
		/* Every prefix short of the random's end is "more". */
		for (size_t k = 1; k < 5 + 4 + 2 + 32; k++)
			assert_int_equal(sk_tls_server_first(one.d, k), SK_SERVER_FIRST_MORE);
		/* Split into 1-byte records, behind two compatibility CCS records. */
		size_t cuts[64];
		for (size_t i = 0; i < 64; i++)
			cuts[i] = 1;
		struct bytes frag = frame(&hs, cuts, 64);
		struct bytes led = { 0 };
		put(&led, "\x14\x03\x03\x00\x01\x01\x14\x03\x03\x00\x01\x01", 12);
		put(&led, frag.d, frag.n);
		assert_int_equal(sk_tls_server_first(led.d, led.n), want);
		assert_int_equal(sk_tls_server_first(led.d, 12), SK_SERVER_FIRST_MORE);
		bytes_free(&hs);
		bytes_free(&one);
		bytes_free(&frag);
		bytes_free(&led);
	}
	assert_int_equal(sk_tls_server_first((const uint8_t *)"\x15\x03\x03\x00\x02\x02\x28", 7),
			 SK_SERVER_FIRST_OTHER);
	assert_int_equal(sk_tls_server_first((const uint8_t *)"HTTP/1.1 400", 12), SK_SERVER_FIRST_OTHER);
	/* A ServerHello too short to hold a random is decided at its header, not waited on. */
	assert_int_equal(sk_tls_server_first((const uint8_t *)"\x16\x03\x03\x00\x04\x02\x00\x00\x00", 9),
			 SK_SERVER_FIRST_OTHER);
	assert_int_equal(sk_tls_server_first((const uint8_t *)"\x16\x03\x03\x00\x29\x02\x00\x00\x25", 9),
			 SK_SERVER_FIRST_OTHER);
	assert_int_equal(sk_tls_server_first((const uint8_t *)"\x16\x03\x03\x00\x2a\x02\x00\x00\x26", 9),
			 SK_SERVER_FIRST_MORE);
	/* A handshake message that is not a ServerHello (a HelloRequest) is not the end of the hellos. */
	struct bytes hr = record(22, "\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
				 "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
				 "\x00\x00\x00\x00", 38);
	assert_int_equal(sk_tls_server_first(hr.d, hr.n), SK_SERVER_FIRST_OTHER);
	bytes_free(&hr);
}

static void test_cap_turns_need_more_into_too_big(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct bytes big = load("python3-big"), split1 = load("curl-split1");

	/* The handshake length alone proves it cannot fit: decided from the first 9 bytes. */
	assert_result(parse_cap(big.d, 9, 4096, sni), SK_HELLO_TOO_BIG);
	assert_result(parse_cap(big.d, 8, 4096, sni), SK_HELLO_NEED_MORE);
	assert_result(parse_cap(big.d, big.n, big.n, sni), SK_HELLO_OK);
	assert_result(parse_cap(big.d, 9, big.n - 1, sni), SK_HELLO_TOO_BIG);
	/* 1-byte records: the length fits, the records do not; known once the cap is reached. */
	assert_result(parse_cap(split1.d, 2047, 2048, sni), SK_HELLO_NEED_MORE);
	assert_result(parse_cap(split1.d, 2048, 2048, sni), SK_HELLO_TOO_BIG);
	assert_result(parse_cap(split1.d, split1.n, split1.n, sni), SK_HELLO_OK);
	assert_result(parse_cap(split1.d, 0, 0, sni), SK_HELLO_TOO_BIG);
	/* A 2^24 - 1 handshake length with the default cap. */
	assert_result(parse((const uint8_t *)"\x16\x03\x01\x00\x04\x01\xff\xff\xff", 9, sni), SK_HELLO_TOO_BIG);
	bytes_free(&split1);
	bytes_free(&big);
}

/* A hello larger than one record (2^14) must be reassembled from two. */
static void test_hello_larger_than_one_record(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct hello_spec s;
	uint8_t *pad = calloc(1, 20000);
	assert_non_null(pad);

	spec_init(&s);
	ext_sni1(&s, "big.example");
	ext_raw(&s, 0x0015, pad, 20000);
	struct bytes hs = build_hs(&s);
	size_t cut = 16384;
	struct bytes raw = frame(&hs, &cut, 1);
	assert_result(parse_cap(raw.d, raw.n, 32768, sni), SK_HELLO_OK);
	assert_string_equal(sni, "big.example");
	assert_result(parse_cap(raw.d, raw.n - 1, 32768, sni), SK_HELLO_NEED_MORE);
	assert_result(parse_cap(raw.d, raw.n, CAP, sni), SK_HELLO_TOO_BIG);
	bytes_free(&raw);
	/* One record of exactly 2^14 + 2048 bytes is the largest allowed. */
	size_t cuts[] = { 18432 };
	raw = frame(&hs, cuts, 1);
	assert_int_equal(be(raw.d + 3, 2), 18432);
	assert_result(parse_cap(raw.d, raw.n, 32768, sni), SK_HELLO_OK);
	bytes_free(&raw);
	bytes_free(&hs);
	free(pad);
}

static void test_result_names(void **state)
{
	(void)state;
	assert_string_equal(sk_hello_result_name(SK_HELLO_OK), "ok");
	assert_string_equal(sk_hello_result_name(SK_HELLO_NEED_MORE), "need_more");
	assert_string_equal(sk_hello_result_name(SK_HELLO_MULTI_SNI), "multi_sni");
	assert_string_equal(sk_hello_result_name(SK_HELLO_TOO_BIG), "too_big");
	assert_string_equal(sk_hello_result_name((enum sk_hello_result)99), "unknown");
}

/* The agent's ALPN offer, read for an inspected connection: kept as on the wire, across record cuts;
 * absent is len 0; a list that does not fill its extension is malformed; one too long for the buffer is
 * reported, not cut. The plain parse does not look at it. */
static void test_alpn_offer(void **state)
{
	(void)state;
	char sni[SK_DOMAIN_MAX + 1];
	struct sk_hello_alpn alpn;
	static const uint8_t offer[] = { 0x00, 0x0c, 0x02, 'h', '2', 0x08, 'h', 't', 't', 'p', '/', '1', '.', '1' };
	struct hello_spec s;
	spec_init(&s);
	ext_sni1(&s, "api.example.com");
	ext_raw(&s, 0x0010, offer, sizeof(offer));
	struct bytes hs = build_hs(&s);
	const size_t cuts[] = { 7, 40 };
	struct bytes raw = frame(&hs, cuts, 2);
	assert_int_equal(sk_tls_hello_parse_alpn(raw.d, raw.n, 16384, sni, &alpn), SK_HELLO_OK);
	assert_string_equal(sni, "api.example.com");
	assert_false(alpn.too_long);
	assert_int_equal(alpn.len, sizeof(offer) - 2);
	assert_memory_equal(alpn.list, offer + 2, sizeof(offer) - 2);
	bytes_free(&hs);
	bytes_free(&raw);

	spec_init(&s);
	ext_sni1(&s, "api.example.com");
	hs = build_hs(&s);
	raw = frame_one(&hs);
	assert_int_equal(sk_tls_hello_parse_alpn(raw.d, raw.n, 16384, sni, &alpn), SK_HELLO_OK);
	assert_int_equal(alpn.len, 0);
	assert_false(alpn.too_long);
	bytes_free(&hs);
	bytes_free(&raw);

	static const uint8_t short_list[] = { 0x00, 0x02, 0x02, 'h', '2' };
	spec_init(&s);
	ext_sni1(&s, "api.example.com");
	ext_raw(&s, 0x0010, short_list, sizeof(short_list));
	hs = build_hs(&s);
	raw = frame_one(&hs);
	assert_int_equal(sk_tls_hello_parse_alpn(raw.d, raw.n, 16384, sni, &alpn), SK_HELLO_MALFORMED);
	assert_int_equal(sk_tls_hello_parse(raw.d, raw.n, 16384, sni), SK_HELLO_OK);
	bytes_free(&hs);
	bytes_free(&raw);

	uint8_t big[2 + 600];
	big[0] = 600 >> 8;
	big[1] = 600 & 0xff;
	for (size_t i = 0; i < 600; i += 100) {
		big[2 + i] = 99;
		memset(big + 3 + i, 'x', 99);
	}
	spec_init(&s);
	ext_sni1(&s, "api.example.com");
	ext_raw(&s, 0x0010, big, sizeof(big));
	hs = build_hs(&s);
	raw = frame_one(&hs);
	assert_int_equal(sk_tls_hello_parse_alpn(raw.d, raw.n, 16384, sni, &alpn), SK_HELLO_OK);
	assert_true(alpn.too_long);
	assert_int_equal(alpn.len, 0);
	bytes_free(&hs);
	bytes_free(&raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captured_hellos_parse_with_their_sni),
		cmocka_unit_test(test_captured_hellos_need_more_at_every_prefix),
		cmocka_unit_test(test_sni_split_across_two_records_at_every_boundary),
		cmocka_unit_test(test_sni_split_across_many_records),
		cmocka_unit_test(test_corrupted_length_fields_are_malformed_or_need_more),
		cmocka_unit_test(test_sni_normalised_and_valid_names),
		cmocka_unit_test(test_sni_bad_names),
		cmocka_unit_test(test_sni_ip_literals),
		cmocka_unit_test(test_sni_absent_or_multiple),
		cmocka_unit_test(test_ech_extension_is_reported),
		cmocka_unit_test(test_malformed_server_name_extension),
		cmocka_unit_test(test_malformed_hello_fields),
		cmocka_unit_test(test_extensions_block_must_cover_the_message),
		cmocka_unit_test(test_record_layer_rules),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_every_first_byte),
		cmocka_unit_test(test_sni_lengths_at_the_buffer_edge),
		cmocka_unit_test(test_client_records_after_the_hello),
		cmocka_unit_test(test_server_first_records),
		cmocka_unit_test(test_cap_turns_need_more_into_too_big),
		cmocka_unit_test(test_hello_larger_than_one_record),
		cmocka_unit_test(test_result_names),
		cmocka_unit_test(test_alpn_offer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

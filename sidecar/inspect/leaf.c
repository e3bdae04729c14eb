/* sidecar/inspect/leaf.c — see leaf.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "sidecar/inspect/ca.h"
#include "sidecar/inspect/leaf.h"
#include "sidecar/inspect/lru.h"
#include "sidecar/inspect/ossl.h"

struct sk_leaf_cache {
	const struct sk_ca *ca;
	EVP_PKEY *key;
	struct sk_lru *table;     /* lower-cased name → struct leaf */
	struct sk_leaf_stats stats;
};

struct leaf {
	X509 *cert;
	time_t renew_at;          /* mint again from here on */
};

static void leaf_free(void *p)
{
	struct leaf *l = p;
	X509_free(l->cert);
	free(l);
}

int sk_leaf_cache_new(const struct sk_ca *ca, size_t cap, struct sk_leaf_cache **out, struct sk_err *err)
{
	char why[256];
	struct sk_leaf_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return sk_err_set(err, ENOMEM, "leaf cache: out of memory");
	c->ca = ca;
	int r = sk_lru_new(cap ? cap : SK_LEAF_CACHE_CAP, leaf_free, &c->table, err);
	if (r < 0) {
		free(c);
		return sk_err_prefix(err, "leaf cache");
	}
	if (!(c->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"))) {
		sk_lru_free(c->table);
		free(c);
		return sk_err_set(err, EIO, "leaf key generation: %s", sk_ossl_reason(why, sizeof(why)));
	}
	*out = c;
	return 0;
}

void sk_leaf_cache_free(struct sk_leaf_cache *c)
{
	if (!c)
		return;
	sk_lru_free(c->table);
	EVP_PKEY_free(c->key);
	free(c);
}

EVP_PKEY *sk_leaf_key(const struct sk_leaf_cache *c)
{
	return c->key;
}

X509 *sk_leaf_issuer(const struct sk_leaf_cache *c)
{
	return sk_ca_cert(c->ca);
}

struct sk_leaf_stats sk_leaf_stats(const struct sk_leaf_cache *c)
{
	struct sk_leaf_stats s = c->stats;
	s.evictions = sk_lru_evictions(c->table);
	return s;
}

/* A name goes into a certificate as one DNS entry: only the characters of host names (and '_', which
 * real SNIs carry) pass, so nothing an agent sends becomes anything else in a certificate. */
static bool dns_name_ok(const char *n, size_t len)
{
	if (len == 0 || len > 253 || n[0] == '.' || n[len - 1] == '.')
		return false;
	size_t start = (len > 2 && n[0] == '*' && n[1] == '.') ? 2 : 0;
	for (size_t i = start; i < len; i++) {
		char ch = n[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
			  (ch == '.' && n[i - 1] != '.');
		if (!ok)
			return false;
	}
	return true;
}

/* A new leaf for name (owned), or NULL with err. */
static struct leaf *mint(struct sk_leaf_cache *c, const char *name, time_t now, struct sk_err *err)
{
	unsigned char ip[16];
	size_t ip_len = 0;
	if (inet_pton(AF_INET, name, ip) == 1)
		ip_len = 4;
	else if (inet_pton(AF_INET6, name, ip) == 1)
		ip_len = 16;
	if (!ip_len && !dns_name_ok(name, strlen(name))) {
		sk_err_set(err, EINVAL, "leaf for '%.64s': not a host name or IP literal", name);
		return NULL;
	}
	struct sk_cert_spec spec = {
		/* no CN for an address: a host check falls back to the CN when no DNS SAN is present */
		.subject_cn = !ip_len && strlen(name) <= 64 ? name : NULL,
		.now = now,
		.not_before = -SK_LEAF_BACKDATE_S,
		.not_after = SK_LEAF_LIFETIME_S,
		.san_dns = ip_len ? NULL : name,
		.san_ip = ip_len ? ip : NULL,
		.san_ip_len = ip_len,
	};
	struct leaf *l = calloc(1, sizeof(*l));
	if (!l) {
		sk_err_set(err, ENOMEM, "leaf for '%s': out of memory", name);
		return NULL;
	}
	if (!(l->cert = sk_cert_build(&spec, c->key, sk_ca_cert(c->ca), sk_ca_key(c->ca), err))) {
		free(l);
		sk_err_prefix(err, "leaf for '%s'", name);
		return NULL;
	}
	c->stats.signed_++;
	/* renew an hour before the end, or at once if the CA's notAfter clamped the leaf shorter than that */
	int days = 0, secs = 0;
	time_t left = 0;
	ASN1_TIME *t_now = ASN1_TIME_set(NULL, now);
	if (t_now && ASN1_TIME_diff(&days, &secs, t_now, X509_get0_notAfter(l->cert)) == 1)
		left = (time_t)days * 86400 + secs;
	ASN1_TIME_free(t_now);
	l->renew_at = now + (left > SK_LEAF_RENEW_S ? left - SK_LEAF_RENEW_S : 0);
	return l;
}

int sk_leaf_get(struct sk_leaf_cache *c, const char *name, time_t now, X509 **out, struct sk_err *err)
{
	char key[256];
	size_t len = strlen(name);
	if (len == 0 || len >= sizeof(key))
		return sk_err_set(err, EINVAL, "leaf: name of %zu bytes", len);
	for (size_t i = 0; i <= len; i++)
		key[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	if (!now)
		now = time(NULL);
	struct leaf *l = sk_lru_get(c->table, key);
	if (l && now < l->renew_at) {
		c->stats.hits++;
		X509_up_ref(l->cert);
		*out = l->cert;
		return 0;
	}
	if (!(l = mint(c, key, now, err)))
		return err && err->code ? -err->code : -EIO;
	X509_up_ref(l->cert);
	*out = l->cert;
	/* the table takes l even when the insert fails (out of memory): *out holds its own reference */
	if (sk_lru_put(c->table, key, l) < 0)
		c->stats.uncached++;
	return 0;
}

/* cni/install_test.c — the installer over temporary directories: the configuration edit (append, the
 * same entry twice, an outdated or duplicated entry, a .conf made a list, removal, what is not a CNI
 * configuration), which file the kubelet would pick, the atomic and idempotent writes of the conflist,
 * the kubeconfig (0600, readable by the plugin's own reader) and the binary, and the watch loop putting
 * the entry back after a primary CNI rewrote its file, then removing it on stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cni/install.h"
#include "cni/kube.h"
#include "common/read_file.h"

#define BRIDGE                                                                                               \
	"{\"cniVersion\":\"1.0.0\",\"name\":\"k8s\",\"plugins\":[{\"type\":\"bridge\",\"bridge\":\"cni0\"},"  \
	"{\"type\":\"portmap\"}]}"

static const struct sk_cni_install base = {
	.host_root = NULL, .conf_dir = NULL, .bin_dir = NULL, .kubeconfig = "/var/lib/stockade/cni.kubeconfig",
	.server = "https://10.96.0.1:443", .system_ns = "stockade-system",
};

static int edit_text(const char *in, bool remove, char **out)
{
	cJSON *doc = cJSON_Parse(in);
	cJSON *entry = sk_cni_install_entry(&base);
	struct sk_err err = { 0 };
	assert_non_null(doc);
	assert_non_null(entry);
	int rc = sk_cni_conf_edit(&doc, entry, remove, &err);
	*out = rc >= 0 ? cJSON_PrintUnformatted(doc) : NULL;
	cJSON_Delete(doc);
	cJSON_Delete(entry);
	return rc;
}

#define ENTRY "{\"type\":\"stockade-cni\",\"kubeconfig\":\"/var/lib/stockade/cni.kubeconfig\",\"systemNamespace\":\"stockade-system\"}"

static void test_edit(void **state)
{
	(void)state;
	char *a = NULL, *b = NULL;
	assert_int_equal(edit_text(BRIDGE, false, &a), 1);
	assert_string_equal(a, "{\"cniVersion\":\"1.0.0\",\"name\":\"k8s\",\"plugins\":[{\"type\":\"bridge\",\"bridge\":"
			       "\"cni0\"},{\"type\":\"portmap\"}," ENTRY "]}");
	/* the same entry again: nothing to do */
	assert_int_equal(edit_text(a, false, &b), 0);
	assert_string_equal(a, b);
	free(b);
	/* removal restores the primary's list */
	assert_int_equal(edit_text(a, true, &b), 1);
	assert_string_equal(b, "{\"cniVersion\":\"1.0.0\",\"name\":\"k8s\",\"plugins\":[{\"type\":\"bridge\",\"bridge\":"
			       "\"cni0\"},{\"type\":\"portmap\"}]}");
	free(b);
	free(a);
	/* removal from a list without it changes nothing */
	assert_int_equal(edit_text(BRIDGE, true, &b), 0);
	free(b);
}

static void test_edit_outdated_and_duplicate(void **state)
{
	(void)state;
	char *a = NULL;
	/* an older entry (another kubeconfig) is replaced where it stands, a second one dropped */
	assert_int_equal(edit_text("{\"cniVersion\":\"1.0.0\",\"name\":\"k8s\",\"plugins\":[{\"type\":\"bridge\"},"
				   "{\"type\":\"stockade-cni\",\"kubeconfig\":\"/old\"},{\"type\":\"portmap\"},"
				   "{\"type\":\"stockade-cni\"}]}",
				   false, &a),
			 1);
	assert_string_equal(a, "{\"cniVersion\":\"1.0.0\",\"name\":\"k8s\",\"plugins\":[{\"type\":\"bridge\"}," ENTRY
			       ",{\"type\":\"portmap\"}]}");
	free(a);
}

static void test_edit_conf_to_list(void **state)
{
	(void)state;
	char *a = NULL;
	assert_int_equal(edit_text("{\"cniVersion\":\"0.4.0\",\"name\":\"net\",\"type\":\"ptp\",\"ipam\":{\"type\":"
				   "\"host-local\"}}",
				   false, &a),
			 1);
	assert_string_equal(a, "{\"cniVersion\":\"0.4.0\",\"name\":\"net\",\"plugins\":[{\"type\":\"ptp\",\"ipam\":{"
			       "\"type\":\"host-local\"}}," ENTRY "]}");
	free(a);
	/* removal from a single plugin: nothing there */
	assert_int_equal(edit_text("{\"cniVersion\":\"0.4.0\",\"name\":\"net\",\"type\":\"ptp\"}", true, &a), 0);
	free(a);
}

static void test_edit_refusals(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"[]", "{\"name\":\"x\"}", "{\"cniVersion\":\"1.0.0\",\"name\":\"x\",\"plugins\":{}}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"x\",\"plugins\":[1]}",
		"{\"name\":\"x\",\"type\":\"ptp\"}",  /* a single plugin without cniVersion */
		"{\"cniVersion\":\"1.0.0\",\"name\":\"x\",\"type\":\"stockade-cni\"}",
		"{\"cniVersion\":\"1.0.0\",\"name\":\"x\",\"plugins\":[{\"type\":\"stockade-cni\"}]}",  /* removal empties it */
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(bad); i++) {
		char *a = NULL;
		assert_int_equal(edit_text(bad[i], i + 1 == SK_ARRAY_SIZE(bad), &a), -EINVAL);
		assert_null(a);
	}
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/sk-cni-install-XXXXXX");
	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static char *get(const char *dir, const char *name)
{
	char p[512];
	size_t len;
	struct sk_err err = { 0 };
	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	return sk_read_file(p, 1 << 20, &len, &err);
}

static int count_ours(const char *text)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, "\"stockade-cni\"")); p++)
		n++;
	return n;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *dir)
{
	assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_pick(void **state)
{
	(void)state;
	char *d = tmpdir(), *p = NULL;
	struct sk_err err = { 0 };
	assert_int_equal(sk_cni_conf_pick(d, &p, &err), -ENOENT);
	put(d, "20-b.conflist", BRIDGE);
	put(d, "10-a.conf.tmpABCDEF", "x");  /* an atomic writer's temporary file */
	put(d, ".05-hidden.conf", "x");
	put(d, "05-readme.txt", "x");
	assert_int_equal(sk_cni_conf_pick(d, &p, &err), 0);
	assert_non_null(strstr(p, "/20-b.conflist"));
	free(p);
	put(d, "15-c.json", BRIDGE);
	put(d, "30-d.conf", BRIDGE);
	assert_int_equal(sk_cni_conf_pick(d, &p, &err), 0);
	assert_non_null(strstr(p, "/15-c.json"));
	free(p);
	rm_rf(d);
	free(d);
}

static void test_install_conf(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct sk_cni_install o = base;
	o.conf_dir = d;
	struct sk_err err = { 0 };
	bool ch = false;
	put(d, "10-k8s.conflist", BRIDGE);
	put(d, "99-other.conflist", BRIDGE);
	assert_int_equal(sk_cni_install_conf(&o, false, &ch, &err), 0);
	assert_true(ch);
	char *a = get(d, "10-k8s.conflist"), *other = get(d, "99-other.conflist");
	assert_int_equal(count_ours(a), 1);
	assert_int_equal(count_ours(other), 0);  /* only the file the kubelet uses */
	struct stat s1, s2;
	char p[512];
	(void)snprintf(p, sizeof(p), "%s/10-k8s.conflist", d);
	assert_int_equal(stat(p, &s1), 0);
	/* twice: one entry, the file not even rewritten */
	assert_int_equal(sk_cni_install_conf(&o, false, &ch, &err), 0);
	assert_false(ch);
	assert_int_equal(stat(p, &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	/* the primary CNI rewrites its file: the entry comes back */
	put(d, "10-k8s.conflist", BRIDGE);
	assert_int_equal(sk_cni_install_conf(&o, false, &ch, &err), 0);
	assert_true(ch);
	char *b = get(d, "10-k8s.conflist");
	assert_string_equal(a, b);
	/* uninstall */
	assert_int_equal(sk_cni_install_conf(&o, true, &ch, &err), 0);
	assert_true(ch);
	char *c = get(d, "10-k8s.conflist");
	assert_int_equal(count_ours(c), 0);
	free(a);
	free(b);
	free(c);
	free(other);
	/* a .conf becomes a .conflist of the same name */
	put(d, "05-ptp.conf", "{\"cniVersion\":\"0.4.0\",\"name\":\"net\",\"type\":\"ptp\"}");
	assert_int_equal(sk_cni_install_conf(&o, false, &ch, &err), 0);
	assert_true(ch);
	(void)snprintf(p, sizeof(p), "%s/05-ptp.conf", d);
	assert_int_equal(access(p, F_OK), -1);
	a = get(d, "05-ptp.conflist");
	assert_non_null(a);
	assert_int_equal(count_ours(a), 1);
	assert_non_null(strstr(a, "\"ptp\""));
	free(a);
	/* not JSON: refused, named, and left as it was */
	put(d, "01-broken.conflist", "{");
	assert_int_equal(sk_cni_install_conf(&o, false, &ch, &err), -EINVAL);
	assert_false(ch);
	assert_non_null(strstr(err.msg, "01-broken.conflist: not JSON"));
	a = get(d, "01-broken.conflist");
	assert_string_equal(a, "{");
	free(a);
	rm_rf(d);
	free(d);
}

static void test_kubeconfig_and_binary(void **state)
{
	(void)state;
	char *d = tmpdir();
	char sa[256], kc[600], bin[256];
	(void)snprintf(sa, sizeof(sa), "%s/sa", d);
	assert_int_equal(mkdir(sa, 0755), 0);
	put(sa, "token", "tok-123\n");
	put(sa, "ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
	(void)snprintf(bin, sizeof(bin), "%s/bin", d);
	assert_int_equal(mkdir(bin, 0755), 0);
	char tok[600], ca[600], src[600];
	(void)snprintf(tok, sizeof(tok), "%s/token", sa);
	(void)snprintf(ca, sizeof(ca), "%s/ca.crt", sa);
	(void)snprintf(src, sizeof(src), "%s/plugin", sa);
	put(sa, "plugin", "\177ELF-not-really");
	struct sk_cni_install o = base;
	o.host_root = d;
	o.kubeconfig = "/var-lib-stockade/cni.kubeconfig";
	o.token_file = tok;
	o.ca_file = ca;
	o.bin_dir = "/bin";
	o.binary = src;
	struct sk_err err = { 0 };
	bool ch = false;
	assert_int_equal(sk_cni_install_kubeconfig(&o, &ch, &err), 0);
	assert_true(ch);
	(void)snprintf(kc, sizeof(kc), "%s/var-lib-stockade/cni.kubeconfig", d);
	struct stat st;
	assert_int_equal(stat(kc, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	(void)snprintf(kc, sizeof(kc), "%s/var-lib-stockade", d);
	assert_int_equal(stat(kc, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* the plugin reads what the installer wrote */
	struct sk_kubeconfig k;
	(void)snprintf(kc, sizeof(kc), "%s/var-lib-stockade/cni.kubeconfig", d);
	assert_int_equal(sk_kubeconfig_load(kc, &k, &err), 0);
	assert_string_equal(k.server, "https://10.96.0.1:443");
	assert_string_equal(k.token, "tok-123");
	assert_non_null(k.ca_pem);
	assert_memory_equal(k.ca_pem, "-----BEGIN CERTIFICATE-----\nMIIB\n", 33);
	sk_kubeconfig_free(&k);
	assert_int_equal(sk_cni_install_kubeconfig(&o, &ch, &err), 0);
	assert_false(ch);
	/* the projected token rotated */
	put(sa, "token", "tok-456\n");
	assert_int_equal(sk_cni_install_kubeconfig(&o, &ch, &err), 0);
	assert_true(ch);
	assert_int_equal(sk_kubeconfig_load(kc, &k, &err), 0);
	assert_string_equal(k.token, "tok-456");
	sk_kubeconfig_free(&k);
	/* refusals: a token of two lines, an http:// server */
	put(sa, "token", "a\nb\n");
	assert_int_equal(sk_cni_install_kubeconfig(&o, &ch, &err), -EINVAL);
	put(sa, "token", "tok\n");
	o.server = "http://10.96.0.1";
	assert_int_equal(sk_cni_install_kubeconfig(&o, &ch, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not https://"));

	assert_int_equal(sk_cni_install_binary(&o, &ch, &err), 0);
	assert_true(ch);
	char *b = get(bin, "stockade-cni");
	assert_string_equal(b, "\177ELF-not-really");
	free(b);
	(void)snprintf(kc, sizeof(kc), "%s/stockade-cni", bin);
	assert_int_equal(stat(kc, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(sk_cni_install_binary(&o, &ch, &err), 0);
	assert_false(ch);
	rm_rf(d);
	free(d);
}

struct watch_arg {
	struct sk_cni_install o;
	int stop;
	int rc;
	struct sk_err err;
};

static void *watch_thread(void *p)
{
	struct watch_arg *w = p;
	w->rc = sk_cni_install_watch(&w->o, w->stop, 60000, true, &w->err);
	return NULL;
}

/* Waits up to 5 s for the conflist to hold n entries of ours. */
static bool wait_entries(const char *dir, int n)
{
	for (int i = 0; i < 500; i++) {
		char *t = get(dir, "10-k8s.conflist");
		int c = t ? count_ours(t) : -1;
		free(t);
		if (c == n)
			return true;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	return false;
}

static void test_watch(void **state)
{
	(void)state;
	char *d = tmpdir();
	char conf[256], sa[256], tok[600], ca[600];
	(void)snprintf(conf, sizeof(conf), "%s/net.d", d);
	(void)snprintf(sa, sizeof(sa), "%s/sa", d);
	assert_int_equal(mkdir(conf, 0755), 0);
	assert_int_equal(mkdir(sa, 0755), 0);
	(void)snprintf(tok, sizeof(tok), "%s/bin", d);
	assert_int_equal(mkdir(tok, 0755), 0);
	put(sa, "token", "t\n");
	put(sa, "ca.crt", "ca\n");
	put(sa, "plugin", "p");
	put(conf, "10-k8s.conflist", BRIDGE);
	(void)snprintf(tok, sizeof(tok), "%s/token", sa);
	(void)snprintf(ca, sizeof(ca), "%s/ca.crt", sa);
	char src[600];
	(void)snprintf(src, sizeof(src), "%s/plugin", sa);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	struct watch_arg w = { .o = base, .stop = pfd[0] };
	w.o.host_root = d;
	w.o.conf_dir = "/net.d";
	w.o.bin_dir = "/bin";
	w.o.kubeconfig = "/kc/cni.kubeconfig";
	w.o.binary = src;
	w.o.token_file = tok;
	w.o.ca_file = ca;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, watch_thread, &w), 0);
	assert_true(wait_entries(conf, 1));
	/* the primary CNI rewrites its file (in place, then by rename as most do) */
	put(conf, "10-k8s.conflist", BRIDGE);
	assert_true(wait_entries(conf, 1));
	put(conf, "10-k8s.conflist.new", BRIDGE);
	char from[700], to[700];
	(void)snprintf(from, sizeof(from), "%s/10-k8s.conflist.new", conf);
	(void)snprintf(to, sizeof(to), "%s/10-k8s.conflist", conf);
	assert_int_equal(rename(from, to), 0);
	assert_true(wait_entries(conf, 1));
	/* stop: the entry is removed (uninstall) */
	assert_int_equal(write(pfd[1], "x", 1), 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_true(wait_entries(conf, 0));
	(void)close(pfd[0]);
	(void)close(pfd[1]);
	rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edit),
		cmocka_unit_test(test_edit_outdated_and_duplicate),
		cmocka_unit_test(test_edit_conf_to_list),
		cmocka_unit_test(test_edit_refusals),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_install_conf),
		cmocka_unit_test(test_kubeconfig_and_binary),
		cmocka_unit_test(test_watch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

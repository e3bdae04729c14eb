/* common/curl_dl_test.c — the dlopen'ed libcurl table: every function resolves and works when called
 * through it (the variadic setopt/getinfo included), loading is idempotent, and a library that is
 * missing or is not libcurl fails cleanly with a message and leaves the table unloaded. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/curl_dl.h"

static void test_load_resolves_and_calls(void **state)
{
	(void)state;
	struct sk_curl api = { 0 };
	struct sk_err err = { 0 };
	assert_int_equal(sk_curl_load(&api, SK_CURL_SONAME, &err), 0);
	assert_int_equal(err.code, 0);
	assert_non_null(api.dl);
	/* Every member after dl is a resolved function. */
	void *fns[] = {
		(void *)api.global_init, (void *)api.global_cleanup, (void *)api.easy_init, (void *)api.easy_setopt,
		(void *)api.easy_getinfo, (void *)api.easy_pause, (void *)api.easy_cleanup, (void *)api.easy_strerror, (void *)api.easy_perform,
		(void *)api.multi_init, (void *)api.multi_setopt, (void *)api.multi_add_handle,
		(void *)api.multi_remove_handle, (void *)api.multi_socket_action, (void *)api.multi_assign,
		(void *)api.multi_info_read, (void *)api.multi_cleanup, (void *)api.slist_append,
		(void *)api.slist_free_all,
	};
	assert_int_equal(sizeof(fns), sizeof(api) - sizeof(api.dl));
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		assert_non_null(fns[i]);

	assert_int_equal(api.global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	assert_string_equal(api.easy_strerror(CURLE_OK), "No error");
	CURL *e = api.easy_init();
	assert_non_null(e);
	/* Variadic calls through the pointers: a pointer, a long, and back out through getinfo. */
	int marker = 0;
	assert_int_equal(api.easy_setopt(e, CURLOPT_PRIVATE, &marker), CURLE_OK);
	assert_int_equal(api.easy_setopt(e, CURLOPT_URL, "https://api.example.test/v1"), CURLE_OK);
	assert_int_equal(api.easy_setopt(e, CURLOPT_TIMEOUT_MS, 1000L), CURLE_OK);
	assert_int_equal(api.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "gopher-nonexistent"), CURLE_UNSUPPORTED_PROTOCOL);
	char *priv = NULL;
	assert_int_equal(api.easy_getinfo(e, CURLINFO_PRIVATE, &priv), CURLE_OK);
	assert_ptr_equal(priv, (char *)&marker);
	CURLM *m = api.multi_init();
	assert_non_null(m);
	assert_int_equal(api.multi_setopt(m, CURLMOPT_MAXCONNECTS, 4L), CURLM_OK);
	assert_int_equal(api.multi_add_handle(m, e), CURLM_OK);
	assert_int_equal(api.multi_remove_handle(m, e), CURLM_OK);
	int left = -1;
	assert_null(api.multi_info_read(m, &left));
	assert_int_equal(left, 0);
	assert_int_equal(api.multi_cleanup(m), CURLM_OK);
	api.easy_cleanup(e);
	struct curl_slist *l = api.slist_append(NULL, "X-One: 1");
	assert_non_null(l);
	l = api.slist_append(l, "X-Two: 2");
	assert_non_null(l);
	assert_string_equal(l->next->data, "X-Two: 2");
	api.slist_free_all(l);
	api.global_cleanup();

	/* Loading again is a no-op on the same handle. */
	void *dl = api.dl;
	assert_int_equal(sk_curl_load(&api, SK_CURL_SONAME, &err), 0);
	assert_ptr_equal(api.dl, dl);
}

static void assert_unloaded(const struct sk_curl *api)
{
	struct sk_curl zero = { 0 };
	assert_memory_equal(api, &zero, sizeof(zero));
}

static void test_missing_library(void **state)
{
	(void)state;
	struct sk_curl api = { 0 };
	struct sk_err err = { 0 };
	assert_int_equal(sk_curl_load(&api, "libstockade-no-such-curl.so.4", &err), -ENOENT);
	assert_int_equal(err.code, ENOENT);
	const char *want = "gateway: libstockade-no-such-curl.so.4 not loadable: ";
	assert_memory_equal(err.msg, want, strlen(want));
	/* The dlerror text follows, and names the file. */
	assert_non_null(strstr(err.msg + strlen(want), "libstockade-no-such-curl.so.4"));
	assert_unloaded(&api);
}

static void test_not_libcurl(void **state)
{
	(void)state;
	struct sk_curl api = { 0 };
	struct sk_err err = { 0 };
	/* A real library that loads but has none of curl's functions. */
	assert_int_equal(sk_curl_load(&api, "libc.so.6", &err), -ENOSYS);
	assert_int_equal(err.code, ENOSYS);
	assert_string_equal(err.msg, "gateway: libc.so.6 not usable: no symbol curl_global_init");
	assert_unloaded(&api);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_resolves_and_calls),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_not_libcurl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

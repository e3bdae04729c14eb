/* common/curl_dl.c — dlopen of libcurl on first use; see curl_dl.h. */
#include "common/curl_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

int sk_curl_load(struct sk_curl *api, const char *soname, struct sk_err *err)
{
	if (api->dl)
		return 0;
	/* RTLD_LOCAL: curl's symbols (and its TLS library's) must not interpose on anything else we load. */
	void *dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();
		return sk_err_set(err, ENOENT, "gateway: %s not loadable: %s", soname, why ? why : "unknown error");
	}
	struct sk_curl t = { .dl = dl };
	const char *missing = NULL;
	/* POSIX guarantees that dlsym's void * converts to the function pointer it names. */
#define SK_CURL_SYM(m)                                                   \
	do {                                                             \
		if (!missing && !(t.m = (__typeof__(t.m))dlsym(dl, "curl_" #m))) \
			missing = "curl_" #m;                            \
	} while (0)
	SK_CURL_SYM(global_init);
	SK_CURL_SYM(global_cleanup);
	SK_CURL_SYM(easy_init);
	SK_CURL_SYM(easy_setopt);
	SK_CURL_SYM(easy_getinfo);
	SK_CURL_SYM(easy_pause);
	SK_CURL_SYM(easy_cleanup);
	SK_CURL_SYM(easy_strerror);
	SK_CURL_SYM(easy_perform);
	SK_CURL_SYM(multi_init);
	SK_CURL_SYM(multi_setopt);
	SK_CURL_SYM(multi_add_handle);
	SK_CURL_SYM(multi_remove_handle);
	SK_CURL_SYM(multi_socket_action);
	SK_CURL_SYM(multi_assign);
	SK_CURL_SYM(multi_info_read);
	SK_CURL_SYM(multi_cleanup);
	SK_CURL_SYM(slist_append);
	SK_CURL_SYM(slist_free_all);
#undef SK_CURL_SYM
	if (missing) {
		/* An old or foreign libcurl.so.4 lacking a function we call: refuse it whole. */
		sk_err_set(err, ENOSYS, "gateway: %s not usable: no symbol %s", soname, missing);
		dlclose(dl);
		return -ENOSYS;
	}
	*api = t;
	return 0;
}

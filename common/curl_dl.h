/* common/curl_dl.h — libcurl loaded with dlopen on first use instead of linked.
 *
 * Linking libcurl maps its whole dependency chain (TLS, crypto, p11-kit, krb5, ldap...) at start, and its
 * constructors and relocations cost several MiB of RSS in every sidecar, although only a policy with
 * `apis:` that receives a request ever needs it. This module owns the dlopen handle and a table of the
 * libcurl functions the gateway calls, typed exactly as <curl/curl.h> declares them (the variadic
 * setopt/getinfo included, so calls through the table are well-defined). <curl/curl.h> is still
 * included for types and constants; no object of ours references a curl symbol, so the linker
 * (--as-needed) leaves libcurl out of the sidecar's NEEDED entries.
 *
 * The library stays mapped once loaded, as a linked one would: unloading it would strand the memory
 * its dependencies keep in their own globals. */
#ifndef SK_SIDECAR_CURL_DL_H
#define SK_SIDECAR_CURL_DL_H

#include <curl/curl.h>

#include "common/err.h"

#define SK_CURL_SONAME "libcurl.so.4"

/* Each member is named after the libcurl function without its "curl_" prefix. */
struct sk_curl {
	void *dl;   /* dlopen handle; NULL until sk_curl_load succeeded */
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_global_cleanup) *global_cleanup;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_pause) *easy_pause;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_perform) *easy_perform;   /* the seccomp installer's blocking list (cli/installer.c) */
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_multi_setopt) *multi_setopt;
	__typeof__(curl_multi_add_handle) *multi_add_handle;
	__typeof__(curl_multi_remove_handle) *multi_remove_handle;
	__typeof__(curl_multi_socket_action) *multi_socket_action;
	__typeof__(curl_multi_assign) *multi_assign;
	__typeof__(curl_multi_info_read) *multi_info_read;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
};

/* Loads soname (normally SK_CURL_SONAME) with RTLD_NOW | RTLD_LOCAL and fills every member of *api.
 * Returns 0 at once when api is already loaded. On failure *api is left unloaded (all NULL) and err says
 * "gateway: libcurl.so.4 not loadable: <dlerror>" or names the missing symbol; a later call retries. */
int sk_curl_load(struct sk_curl *api, const char *soname, struct sk_err *err);

#endif

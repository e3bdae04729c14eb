/* e2e/images/curl_probe.c — what the libcurl a loader finds can do (e2e/images.test.sh).
 *
 * Loads "libcurl.so.4" with dlopen exactly as the sidecar does (common/curl_dl.c), so run under an
 * image's own loader and library dir it reports the image's libcurl, and prints curl_version_info() as
 * one line of key=value words: the TLS backend, HTTP/2, the protocols, and every optional library the
 * image's build must not carry ("-" when absent). Exit 1 with the reason when the library does not load. */
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdio.h>

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

int main(void)
{
	void *dl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();
		(void)fprintf(stderr, "curl_probe: libcurl.so.4 not loadable: %s\n", why ? why : "unknown error");
		return 1;
	}
	__typeof__(curl_version_info) *info = NULL;
	/* POSIX guarantees that dlsym's void * converts to the function pointer it names. */
	info = (__typeof__(curl_version_info) *)dlsym(dl, "curl_version_info");
	const curl_version_info_data *d = info ? info(CURLVERSION_NOW) : NULL;
	if (!d) {
		(void)fprintf(stderr, "curl_probe: no curl_version_info\n");
		return 1;
	}
	printf("version=%s ssl=%s http2=%s nghttp2=%s libz=%s idn=%s brotli=%s zstd=%s libssh=%s gsasl=%s"
	       " gssapi=%s psl=%s threaded_resolver=%s protocols=",
	       d->version, or_dash(d->ssl_version), (d->features & CURL_VERSION_HTTP2) ? "yes" : "no",
	       or_dash(d->nghttp2_version), or_dash(d->libz_version), or_dash(d->libidn),
	       or_dash(d->brotli_version), or_dash(d->zstd_version), or_dash(d->libssh_version),
	       or_dash(d->gsasl_version), (d->features & CURL_VERSION_GSSAPI) ? "yes" : "no",
	       (d->features & CURL_VERSION_PSL) ? "yes" : "no",
	       (d->features & CURL_VERSION_ASYNCHDNS) ? "yes" : "no");
	for (const char *const *p = d->protocols; p && *p; p++)
		printf("%s%s", p == d->protocols ? "" : ",", *p);
	printf("\n");
	return 0;
}

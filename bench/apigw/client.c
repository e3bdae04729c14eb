/* bench/apigw/client.c — one keep-alive HTTP(S) client loop for bench/apigw/run: GETs URL back to back
 * for SECONDS (at most 200000 requests) on one reused connection and prints
 * "requests rps p50_us p99_us errors". Built by the run script (cc -O2 ... -lcurl). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REQ 200000

static size_t sink(char *p, size_t s, size_t n, void *u)
{
	(void)p;
	(void)u;
	return s * n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		(void)fprintf(stderr, "usage: %s URL SECONDS [CAFILE]\n", argv[0]);
		return 2;
	}
	double secs = atof(argv[2]);
	double *lat = calloc(MAX_REQ, sizeof(double));
	CURL *e = curl_easy_init();
	if (!lat || !e) {
		free(lat);
		return 1;
	}
	curl_easy_setopt(e, CURLOPT_URL, argv[1]);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (argc > 3)
		curl_easy_setopt(e, CURLOPT_CAINFO, argv[3]);
	size_t n = 0, errors = 0;
	double t_end = now_s() + secs, t0 = now_s();
	while (n < MAX_REQ && now_s() < t_end) {
		double a = now_s();
		long code = 0;
		if (curl_easy_perform(e) != CURLE_OK ||
		    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200) {
			errors++;
			continue;
		}
		lat[n++] = (now_s() - a) * 1e6;
	}
	double el = now_s() - t0;
	qsort(lat, n, sizeof(double), cmp);
	printf("%zu %.0f %.0f %.0f %zu\n", n, el > 0 ? (double)n / el : 0.0, n ? lat[n / 2] : 0.0,
	       n ? lat[(size_t)((double)n * 0.99)] : 0.0, errors);
	curl_easy_cleanup(e);
	free(lat);
	return 0;
}

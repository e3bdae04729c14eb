/* injector/test_base64.c — see test_base64.h. */
#include "injector/test_base64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int b64v(char c)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(tab, c) : NULL;
	return p ? (int)(p - tab) : -1;
}

char *sk_test_base64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), o = 0;
	if (n % 4)
		return NULL;
	char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		size_t pad = last && s[i + 3] == '=' ? (s[i + 2] == '=' ? 2 : 1) : 0;
		int v[4];
		for (size_t j = 0; j < 4; j++)
			v[j] = j >= 4 - pad ? 0 : b64v(s[i + j]);
		if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
			goto bad;
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		/* canonical: the bits a short final group does not use are zero */
		if ((pad == 2 && (w & 0xffff)) || (pad == 1 && (w & 0xff)))
			goto bad;
		out[o++] = (char)(w >> 16);
		if (pad < 2)
			out[o++] = (char)(w >> 8);
		if (pad < 1)
			out[o++] = (char)w;
	}
	out[o] = '\0';
	if (len)
		*len = o;
	return out;
bad:
	free(out);
	return NULL;
}

/* common/marker.c — marker file write/read. See marker.h. */
#include "common/marker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/util.h"

static bool valid_hash(const char *h)
{
	size_t n = 0;
	for (; h[n]; n++)
		if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
			return false;
	return n == 16;
}

int sk_marker_write(const char *path, const struct sk_marker *m, struct sk_err *err)
{
	if (!valid_hash(m->hash))
		return sk_err_set(err, EINVAL, "marker %s: invalid hash '%s'", path, m->hash);
	char text[256];
	int n = snprintf(text, sizeof(text), "hash=%s\ntime=%" PRId64 "\nrules=%u\nsets=%u\nelements=%u\nversion=%s\n",
			 m->hash, m->time, m->rules, m->sets, m->elements, m->version);
	if (n < 0 || (size_t)n >= sizeof(text))
		return sk_err_set(err, EINVAL, "marker %s: version '%s' too long", path, m->version);
	/* the sidecar must never read a half-written marker */
	struct sk_err werr = { 0 };
	if (sk_atomic_write(path, text, (size_t)n, 0644, &werr) < 0)
		return sk_err_set(err, werr.code, "marker %s: %s", path, werr.msg);
	return 0;
}

int sk_marker_read(const char *path, struct sk_marker *m, struct sk_err *err)
{
	memset(m, 0, sizeof(*m));
	sk_autofclose FILE *f = fopen(path, "re");
	if (!f)
		return sk_err_sys(err, errno, "marker %s: open", path);
	char line[256];
	for (unsigned lineno = 1; fgets(line, sizeof(line), f); lineno++) {
		line[strcspn(line, "\n")] = '\0';
		char *eq = strchr(line, '=');
		if (lineno == 1) {
			/* the hash first: it is all the sidecar's readiness needs, and a marker that does not start
			 * with it was not written by this module */
			if (!eq || eq - line != 4 || strncmp(line, "hash", 4) != 0 || !valid_hash(eq + 1))
				break;
			memcpy(m->hash, eq + 1, 17);
			continue;
		}
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		if (!strcmp(k, "time"))
			m->time = strtoll(v, NULL, 10);
		else if (!strcmp(k, "rules"))
			m->rules = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "sets"))
			m->sets = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "elements"))
			m->elements = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "version"))
			/* informational only: a longer version (a newer init) is shown cut */
			(void)snprintf(m->version, sizeof(m->version), "%s", v);
	}
	if (ferror(f))
		return sk_err_sys(err, EIO, "marker %s: read", path);
	if (!m->hash[0])
		return sk_err_set(err, EINVAL, "marker %s: first line is not hash=<16 hex digits>", path);
	return 0;
}

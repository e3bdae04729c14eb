/* policy/seccomp/name.c — content-hashed seccomp profile names (seccomp_name.h). */
#include "policy/seccomp/name.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "policy/policy.h"

static int cmp_str(const void *a, const void *b)
{
	/* bytewise, as Go's sort.Strings (Helm's sortAlpha) orders */
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends "KEY=" and the sorted, deduplicated names joined by ',' and "\n" to f. */
static int put_list(FILE *f, const char *key, const char *const *v, size_t n)
{
	const char **s = n ? malloc(n * sizeof(*s)) : NULL;
	if (n && !s)
		return -ENOMEM;
	if (n)
		memcpy(s, v, n * sizeof(*s));
	if (n > 1)
		qsort(s, n, sizeof(*s), cmp_str);
	/* pieces of a memstream: its error sticks, and the caller's fclose reports it */
	(void)fprintf(f, "%s=", key);
	for (size_t i = 0, out = 0; i < n; i++) {
		if (i > 0 && !strcmp(s[i], s[i - 1]))
			continue;
		(void)fprintf(f, "%s%s", out++ ? "," : "", s[i]);
	}
	(void)fputc('\n', f);
	free(s);
	return 0;
}

char *sk_seccomp_canonical(const char *const *allow, size_t n_allow, const char *const *deny, size_t n_deny,
			   struct sk_err *err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		sk_err_set(err, ENOMEM, "seccomp profile name: out of memory");
		return NULL;
	}
	(void)fputs("stockade-seccomp/1\n", f);  /* checked by the fclose below */
	int rc = put_list(f, "allow", allow, n_allow);
	if (rc == 0)
		rc = put_list(f, "deny", deny, n_deny);
	if (fclose(f) != 0 || rc < 0 || !text) {
		free(text);
		sk_err_set(err, ENOMEM, "seccomp profile name: out of memory");
		return NULL;
	}
	return text;
}

int sk_seccomp_profile_name(const char *const *allow, size_t n_allow, const char *const *deny, size_t n_deny,
			    char out[SK_SCMP_NAME_SIZE], struct sk_err *err)
{
	char *text = sk_seccomp_canonical(allow, n_allow, deny, n_deny, err);
	if (!text)
		return -ENOMEM;
	char hex[2 * SK_SHA256_LEN + 1];
	sk_sha256_hex(text, strlen(text), hex);
	free(text);
	/* SK_SCMP_NAME_SIZE is this text's length + 1 by definition */
	(void)snprintf(out, SK_SCMP_NAME_SIZE, SK_SCMP_NAME_PREFIX "%.*s.json", SK_SCMP_NAME_HEX, hex);
	return 0;
}

int sk_seccomp_is_profile_name(const char *name)
{
	size_t pre = sizeof(SK_SCMP_NAME_PREFIX) - 1;
	if (strlen(name) != SK_SCMP_NAME_SIZE - 1 || strncmp(name, SK_SCMP_NAME_PREFIX, pre) != 0 ||
	    strcmp(name + pre + SK_SCMP_NAME_HEX, ".json") != 0)
		return 0;
	for (size_t i = pre; i < pre + SK_SCMP_NAME_HEX; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return 1;
}

int sk_seccomp_check_profile(const struct sk_policy *pol, const char *profile, struct sk_err *err)
{
	if (!sk_seccomp_is_profile_name(profile))
		return 0;
	char want[SK_SCMP_NAME_SIZE];
	int rc = sk_seccomp_profile_name((const char *const *)pol->seccomp.allow, pol->seccomp.n_allow,
					 (const char *const *)pol->seccomp.deny, pol->seccomp.n_deny, want, err);
	if (rc < 0)
		return rc;
	if (strcmp(want, profile) != 0)
		return sk_err_set(err, EINVAL, "the agent runs under seccomp profile '%s' but this policy's seccomp "
				  "section is '%s': the pod would not enforce it (wrapped for another policy, or by "
				  "stockade-injector without the pod annotation stockade.io/seccomp-profile: %s; "
				  "docs/install.md#seccomp-profiles)", profile, want, want);
	return 0;
}

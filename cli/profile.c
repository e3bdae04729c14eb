/* cli/profile.c — what `seccomp -o` and `seccomp-install` share: the profile's file text and the atomic
 * write that puts it where a kubelet or runtime reads it. (The seccomp section's check, which `check`,
 * `inject` and the injector's policy review share, is policy/seccomp/check.h.) */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/err.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "policy/seccomp/seccomp.h"

char *sk_cli_profile_json(const struct sk_scmp_profile *p, struct sk_err *err)
{
	char *json = sk_scmp_profile_to_json(p, err);
	if (!json)
		return NULL;
	size_t len = strlen(json);
	char *text = realloc(json, len + 2);
	if (!text) {
		free(json);
		sk_err_set(err, ENOMEM, "render profile");
		return NULL;
	}
	memcpy(text + len, "\n", 2);
	return text;
}

/* Writes text to path through a temporary file and rename, so a kubelet never reads half a profile. */
int sk_cli_write_atomic(const char *path, const char *text, struct sk_err *err)
{
	return sk_atomic_write(path, text, strlen(text), 0644, err);
}

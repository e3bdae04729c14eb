/* policy/load.c — the sk_policy_load_* entry points (policy.h): a file or a buffer, its format forced or
 * detected, text → tree (load_yaml.c, load_json.c) → validated model (validate.c, or forge.c for a
 * forge-supervisor file) → matcher; the diagnostics of one load sorted by position. The top of the policy
 * library: nothing in it calls back up here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/read_file.h"
#include "common/util.h"
#include "policy/internal.h"
#include "policy/match.h"

static const char *skip_bom_ws(const char *buf, size_t len, size_t *off)
{
	size_t o = 0;
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		o = 3;
	while (o < len && (buf[o] == ' ' || buf[o] == '\t' || buf[o] == '\n' || buf[o] == '\r'))
		o++;
	*off = o;
	return buf + o;
}

int sk_policy_load_buffer_ex(const char *name, const char *buf, size_t len, int format, unsigned flags,
			     struct sk_policy **out, struct sk_diags *diags)
{
	struct sk_load_ctx c = { .file = name ? name : "<buffer>", .diags = diags, .flags = flags };
	const size_t first_diag = diags->n;
	struct sk_node *tree = NULL;
	struct sk_policy *p = NULL;
	int ret = -EINVAL;

	*out = NULL;
	if (format < -1 || format > SK_FORMAT_FORGE) {
		sk_ctx_error(&c, 0, 0, "unknown policy format %d", format);
		return -EINVAL;
	}
	size_t off;
	const char *first = skip_bom_ws(buf, len, &off);
	const bool json = format == SK_FORMAT_JSON || format == SK_FORMAT_FORGE || (format == -1 && off < len && *first == '{');
	tree = json ? sk_json_parse(&c, buf, len) : sk_yaml_parse(&c, buf, len);
	if (!tree)
		goto out;
	enum sk_policy_format fmt = !json ? SK_FORMAT_YAML
		: (format == SK_FORMAT_FORGE || (format == -1 && sk_forge_detect(tree))) ? SK_FORMAT_FORGE
		: SK_FORMAT_JSON;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->source = strdup(c.file))) {
		sk_ctx_error(&c, 0, 0, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	p->format = fmt;
	if (!(flags & SK_LOAD_NO_CONTENT_HASH))
		(void)snprintf(p->content_hash, sizeof(p->content_hash), "%016llx",
			       (unsigned long long)sk_fnv1a64(buf, len));
	sk_policy_set_defaults(p);
	if (fmt == SK_FORMAT_FORGE)
		sk_forge_import(&c, tree, p);
	else
		sk_validate_policy(&c, tree, p);
	if (c.n_errors)
		goto out;
	/* Only a fully valid model gets a matcher: a half-validated policy must never decide anything. */
	int r = (flags & SK_LOAD_NO_MATCHER) ? 0 : sk_matcher_build(p);
	if (r < 0) {
		sk_ctx_error(&c, 0, 0, "building the matcher: %s", strerror(-r));
		ret = r;
		goto out;
	}
	*out = sk_steal_pointer(&p);
	ret = 0;
out:
	sk_diags_sort_from(diags, first_diag);
	sk_node_free(tree);
	sk_policy_free(p);
	return ret;
}

int sk_policy_load_buffer(const char *name, const char *buf, size_t len, int format, struct sk_policy **out,
			  struct sk_diags *diags)
{
	return sk_policy_load_buffer_ex(name, buf, len, format, 0, out, diags);
}

int sk_policy_load_file_ex(const char *path, int format, unsigned flags, struct sk_policy **out,
			   struct sk_diags *diags)
{
	size_t len = 0;
	struct sk_err err = { 0 };
	*out = NULL;
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	/* "-" is standard input (`stockade-policy check -`, `stockade-init --policy - --dry-run`) */
	sk_autofree char *buf = sk_read_file(path, SK_POLICY_MAX_BYTES, &len, &err);
	if (!buf) {
		/* line 0: printed as "FILE: cannot read: ..." — there is no position to give */
		sk_diags_add(diags, name, 0, 0, "cannot read: %s", strerror(err.code));
		return -err.code;
	}
	return sk_policy_load_buffer_ex(name, buf, len, format, flags, out, diags);
}

int sk_policy_load_file(const char *path, int format, struct sk_policy **out, struct sk_diags *diags)
{
	return sk_policy_load_file_ex(path, format, 0, out, diags);
}

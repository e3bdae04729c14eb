/* policy/domain.c — see domain.h. One validator for every place a name enters (policy, SNI, Host, DNS),
 * so a name the policy accepted is spelled exactly as the matcher will see it on the wire. */
#include "policy/domain.h"

#include <errno.h>
#include <string.h>

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Byte-class errors first, scanning left to right, so the message names the most telling problem
 * (a newline injection reads "whitespace", not "invalid character"). */
static const char *bad_byte(const char *in, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c >= 0x80)
			return "non-ASCII byte (use the IDNA A-label, xn--...)";
		if (is_space(c))
			return "whitespace in name";
		if (c < 0x20 || c == 0x7f)
			return "control byte in name";
		if (c == '_')
			return "underscore in name (not a valid hostname character)";
	}
	return NULL;
}

/* A refusal: *why (when asked for) says what is wrong with the name. */
static int refuse(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

int sk_domain_normalize(const char *in, size_t len, unsigned flags, char *out, bool *wildcard,
			const char **why)
{
	bool wild = false;

	if (wildcard)
		*wildcard = false;
	if (!in || len == 0)
		return refuse(why, "empty name");
	const char *reason = bad_byte(in, len);
	if (reason)
		return refuse(why, reason);

	if (in[0] == '*') {
		if (!(flags & SK_DOMAIN_ALLOW_WILDCARD))
			return refuse(why, "wildcard not allowed here");
		if (len == 1 || (len == 2 && in[1] == '.'))
			return refuse(why, "bare wildcard with no suffix");
		if (in[1] != '.')
			return refuse(why, "'*' is only allowed as a whole leading label (\"*.suffix\")");
		wild = true;
		in += 2;
		len -= 2;
	}

	/* One trailing dot is the absolute form of the same name; a second one is an empty label. The
	 * length limit applies to the name as written without that dot ("*." included for patterns, so a
	 * pattern is never longer than a name it can match). */
	if (in[len - 1] == '.')
		len--;
	if (len == 0)
		return refuse(why, "empty label");
	if (len + (wild ? 2 : 0) > SK_DOMAIN_MAX)
		return refuse(why, "name longer than 253 bytes");

	size_t label_start = 0;
	bool label_numeric = true;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || in[i] == '.') {
			size_t llen = i - label_start;
			if (llen == 0)
				return refuse(why, "empty label");
			if (llen > 63)
				return refuse(why, "label longer than 63 bytes");
			if (in[label_start] == '-' || in[i - 1] == '-')
				return refuse(why, "label starts or ends with '-'");
			if (i < len) {
				out[i] = '.';
				label_start = i + 1;
				label_numeric = true;
			}
			continue;
		}
		char c = in[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '*')
			return refuse(why, "'*' is only allowed as a whole leading label (\"*.suffix\")");
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return refuse(why, "invalid character in name (allowed: a-z, 0-9, '-', '.')");
		if (!(c >= '0' && c <= '9'))
			label_numeric = false;
		out[i] = c;
	}
	/* "10.0.0.1" passes every label rule; resolvers would treat it as an address, so it is not a name. */
	if (label_numeric)
		return refuse(why, "all-numeric last label (an IP address is not a domain name)");
	out[len] = '\0';
	if (wildcard)
		*wildcard = wild;
	return 0;
}

bool sk_dns_label(const char *s, size_t n)
{
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

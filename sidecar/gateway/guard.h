/* sidecar/gateway/guard.h — the gateway's checks in front of the upstream (part of gateway.h's component).
 * Owns: the path safety check (what some server behind the upstream URL could read as another path),
 * an api's methods and path prefixes, and the caller token (finding it in the head, comparing it in
 * constant time). Pure: gateway_test.c and fuzz_gw_head.c test it directly. */
#ifndef SK_SIDECAR_GW_GUARD_H
#define SK_SIDECAR_GW_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/gateway/http.h"

struct sk_api;

/* The path part of rest (judged up to the first '?'; the query is not judged, so "?x=a;b" is fine): 0 when
 * safe to forward, else -EINVAL (→ 400). Refuses what some server behind the upstream URL could read as a
 * different path than the raw string (a prefix check on the raw string would then guard the wrong path):
 *   - ';' anywhere in the path (Tomcat/Spring strip ";params": "/v1/..;/admin" is "/v1/../admin");
 *   - percent-encoded '.', '/', '\', '%' and ';' (%2e %2f %5c %25 %3b, either case): double decoding turns
 *     %252e into '.', and no API needs them encoded;
 *   - %-escapes whose bytes are not shortest-form UTF-8 (%c0%ae, %e0%80%ae, lone continuation bytes,
 *     surrogates, > U+10FFFF, truncated sequences), and code points that compatibility normalisation or
 *     best-fit conversion folds into '.', '/', '\', ';' or '%' (U+FF0E, U+2025, U+FF0F, U+2215, U+037E, ...);
 *   - raw '\', '#', controls, space and non-ASCII bytes; encoded control bytes; malformed %-escapes;
 *   - segments made only of dots, or dots and (encoded) spaces: ".", "..", "...", "..%20" (Windows/IIS
 *     drop trailing dots and spaces);
 *   - empty segments ("//" anywhere, including a leading "//"); a trailing '/' is fine. Servers disagree on
 *     "//" (merged by some, kept by others, an authority to URL resolvers when leading), so a prefix check
 *     on the raw string cannot know which path the upstream serves: refusing it costs no real API.
 * Legit paths pass: "/v1/messages", "/v1/a%20b", "/v1/files/%E2%9C%93", "/v1/models/claude-3.5". */
int sk_gw_check_path(const char *path, size_t len);

/* Methods and pathPrefixes of an api. A prefix matches on a segment boundary: "/v1" allows "/v1",
 * "/v1/x" and "/v1?q" but not "/v10"; a prefix ending in '/' is a plain prefix. path = rest's path part.
 * With prefixes, a path sk_gw_check_path refuses matches none (the raw string is only judged when every
 * server reads it the same way). */
bool sk_gw_method_allowed(const struct sk_api *api, const char *method);
bool sk_gw_path_allowed(const struct sk_api *api, const char *path, size_t len);

/* Constant-time equality (time depends only on the lengths' maximum, not on where bytes differ). */
bool sk_gw_token_eq(const char *a, size_t alen, const char *b, size_t blen);

/* The caller token the agent presented: "Authorization: Bearer <t>" or "X-Stockade-Token: <t>".
 * Returns true and sets *tok and *tlen when found; *via_auth tells which header carried it. */
bool sk_gw_find_token(const struct sk_gw_req *req, const char **tok, size_t *tlen, bool *via_auth);

#endif

#!/usr/bin/env bash
# e2e/docs.test.sh — the docs against the real binaries (no namespaces needed): every policy block in
# docs/recipes.md passes `stockade-policy check`, and every "# explain: HOST PORT PROTO [METHOD PATH] ->
# allow|deny" line under it is the decision `stockade-policy explain` gives; docs/metrics.md and the audit section of
# docs/operating.md are what their generators make of the current code.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/lib.sh
. "$HERE/lib.sh"
POL=$SK_BIN/stockade-policy

setup() {
	sk_tmp skdocs
	[ -x "$POL" ] || { sk_fail "stockade-policy at $POL"; sk_summary; exit 1; }
}

# Each ```yaml block of recipes.md into its own file, named after the heading above it.
t_recipes() {
	/usr/bin/python3 - "$SK_ROOT/docs/recipes.md" "$SK_TMP" <<'PYEOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
heading, n = "top", 0
for part in re.split(r"(^## [^\n]*$|^```yaml\n.*?^```$)", text, flags=re.M | re.S):
    if part.startswith("## "):
        heading = re.sub(r"[^a-z0-9]+", "-", part[3:].lower()).strip("-")
    elif part.startswith("```yaml"):
        n += 1
        open("%s/%02d-%s.yaml" % (sys.argv[2], n, heading), "w").write(part[len("```yaml\n"):-3])
PYEOF
	n=0
	for f in "$SK_TMP"/*.yaml; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		name=$(basename "$f" .yaml)
		if out=$("$POL" check --no-file-checks "$f" 2>&1); then sk_pass "recipe $name: stockade-policy check ($out)"
		else sk_fail "recipe $name: stockade-policy check" "$out"; fi
		# "# explain: HOST PORT PROTO [METHOD PATH] -> DECISION": a request under request rules too
		while read -r host port proto method path want; do
			req=()
			[ "$method" = - ] || req=(--method "$method" --path "$path")
			got=$("$POL" explain --no-file-checks "$f" "$host" "$port" --proto "$proto" "${req[@]}" 2>&1 |
				sed -n 's/^{"decision":"\([a-z_]*\)".*/\1/p')
			sk_check_eq "recipe $name: explain $host $port $proto${req[*]:+ ${req[*]}}" "$want" "$got"
		done < <(sed -n -e 's/^# explain: \([^ ]*\) \([0-9]*\) \([a-z]*\) -> \([a-z]*\)$/\1 \2 \3 - - \4/p' \
			-e 's/^# explain: \([^ ]*\) \([0-9]*\) \([a-z]*\) \([A-Z]*\) \([^ ]*\) -> \([a-z]*\)$/\1 \2 \3 \4 \5 \6/p' "$f")
	done
	if [ "$n" -ge 12 ]; then sk_pass "recipes.md has $n policy blocks"; else sk_fail "recipes.md policy blocks" "found $n, expected at least 12"; fi
}

# Generated docs are current.
t_generated() {
	sk_check "docs/operating.md audit section and audit.schema.json reasons match the code" \
		/usr/bin/python3 "$SK_ROOT/scripts/gen-audit-doc" --check
	sk_check "docs/metrics.md matches the metric registrations" /usr/bin/python3 "$SK_ROOT/scripts/gen-metrics-doc" --check
}

SK_CASES=(recipes generated)
sk_main "$@"

#!/usr/bin/env bash
# e2e/policy_cli.test.sh — stockade-policy check/explain as a user runs them: exit codes and exact output
# lines on the examples and testdata. Needs no network namespace and no root. Run from anywhere; the
# binary is ${SK_BIN:-build/bin}/stockade-policy.
set -uo pipefail
# shellcheck source=e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$SK_ROOT" || exit 1
P="$SK_BIN/stockade-policy" I="$SK_BIN/stockade-init" S="$SK_BIN/stockade-sidecar"
A=policy/examples/agent.yaml BAD=policy/testdata/many-errors.yaml

# run NAME CMD... — runs CMD, leaving stdout in $out, stderr in $err and the exit code in $rc.
run() { out=$("$@" 2>"$SK_TMP/err"); rc=$?; err=$(cat "$SK_TMP/err"); }
sk_tbl() { # sk_tbl NAME WANT_RC CMD... — one row: the exit code
	local name=$1 want=$2; shift 2
	run "$@"
	sk_check_eq "$name exits $want" "$want" "$rc"
}

setup() { sk_tmp skpolicycli; }

# --- check --guardrails: the cluster guardrails admission applies ---------------------------------------
t_check_guardrails() {
	local G=policy/examples/guardrails.yaml V=policy/testdata/guardrails-violated.yaml
	run "$P" check --guardrails "$G" "$V"
	sk_check_eq "check --guardrails on a violating policy exits 3" 3 "$rc"
	sk_check_eq "check --guardrails names the policy's and the guardrail's positions" "$V:2:7: mode: audit is not allowed by guardrail $G:12:15 allowedModes
$V:4:5: egress[0]: host pastebin.com allows pastebin.com, denied by guardrail $G:5:5 deniedHosts[0]
$V:6:5: egress[1]: cidr 0.0.0.0/0 overlaps 169.254.0.0/16, denied by guardrail $G:8:5 deniedCidrs[0]" "$err"
	run "$P" check "$V"
	sk_check_eq "the same policy without --guardrails is valid" 0 "$rc"

	printf 'version: 1\negress:\n  - host: pypi.org\n    ports: [443]\nbudgets:\n  default: { sent: 100Mi, window: 1h }\n' >"$SK_TMP/within.yaml"
	run "$P" check --guardrails="$G" "$SK_TMP/within.yaml"
	sk_check_eq "a policy within the guardrails exits 0" 0 "$rc"
	sk_check_eq "and prints its ok line" "$SK_TMP/within.yaml: ok (1 rule, mode enforce)" "$out"

	run "$P" check --guardrails "$G" -o json "$V"
	sk_check_eq "-o json exits 3" 3 "$rc"
	sk_check_eq "-o json carries the three violations" 3 "$(jq '.[0].errors | length' <<<"$out")"

	printf 'version: 1\ndeniedHost: [a.example]\n' >"$SK_TMP/badg.yaml"
	run "$P" check --guardrails "$SK_TMP/badg.yaml" "$SK_TMP/within.yaml"
	sk_check_eq "an invalid guardrails file exits 2" 2 "$rc"
	sk_check_eq "and says where" "$SK_TMP/badg.yaml:2:1: guardrails: unknown key 'deniedHost', expected one of version, deniedHosts, deniedCidrs, maxBudget, blockPrivate, allowedModes, allowInspect, allowedExemptUids" "$err"
}

# --- check: valid files -------------------------------------------------------------------------------
t_check_valid() {
	run "$P" check policy/examples/agent.yaml
	sk_check_eq "check agent.yaml exits 0" 0 "$rc"
	sk_check_eq "check agent.yaml prints ok line" "policy/examples/agent.yaml: ok (8 rules, mode enforce)" "$out"
	sk_check_eq "check agent.yaml is silent on stderr" "" "$err"

	run "$P" check policy/examples/agent.json policy/examples/agent.yaml
	sk_check_eq "check two files exits 0" 0 "$rc"
	sk_check_eq "check two files prints two ok lines" "policy/examples/agent.json: ok (8 rules, mode enforce)
policy/examples/agent.yaml: ok (8 rules, mode enforce)" "$out"

	run "$P" check policy/examples/forge-egress_allowlist.json
	sk_check_eq "check forge example exits 0" 0 "$rc"
	sk_check_eq "check forge example prints the mapping" "policy/examples/forge-egress_allowlist.json: ok (7 rules, mode enforce)
policy/examples/forge-egress_allowlist.json: mapped: mode allowlist -> 6 host rules on ports 80,443
policy/examples/forge-egress_allowlist.json: mapped: domains from allowed_domains 3 + tool_domains 4 + all_domains 0, 1 duplicate dropped
policy/examples/forge-egress_allowlist.json: mapped: allowed_private_cidrs -> 1 cidr rule on ports 80,443
policy/examples/forge-egress_allowlist.json: mapped: allow_private_ips false -> blockPrivate true
policy/examples/forge-egress_allowlist.json: kept: profile standard (informational; the mode and domain lists decide)" "$out"

	run "$P" check policy/testdata/forge-dev-open.json
	sk_check_eq "check forge dev-open is audit" "policy/testdata/forge-dev-open.json: ok (1 rule, mode audit)" "$(head -1 <<<"$out")"

	run "$P" check policy/testdata/api.yaml
	sk_check_eq "check api.yaml with readable secret exits 0" 0 "$rc"
}

# --- check: invalid files -----------------------------------------------------------------------------
t_check_invalid() {
	run "$P" check policy/testdata/many-errors.yaml
	sk_check_eq "check many-errors exits 3" 3 "$rc"
	sk_check_eq "check many-errors prints nothing on stdout" "" "$out"
	sk_check_eq "check many-errors prints all six errors in file order" "policy/testdata/many-errors.yaml:2:7: mode: 'strict' is not a mode, expected enforce or audit
policy/testdata/many-errors.yaml:3:15: agent.uid: uid 0 is root, expected a non-root uid
policy/testdata/many-errors.yaml:5:11: egress[0].host: invalid name 'bad host.com': whitespace in name, expected a DNS name like api.example.com or *.example.com
policy/testdata/many-errors.yaml:6:13: egress[0].ports[0]: 0 is out of range, expected a port 1..65535
policy/testdata/many-errors.yaml:7:11: egress[1].cidr: '10.0.0.1/8' has host bits set, expected 10.0.0.0/8
policy/testdata/many-errors.yaml:8:11: loopback: 'maybe' is not a loopback mode, expected allow, deny or a list of ports" "$err"

	run "$P" check policy/testdata/api-missing-secret.yaml
	sk_check_eq "check missing secret exits 3" 3 "$rc"
	sk_check_eq "check missing secret names the file and errno" "policy/testdata/api-missing-secret.yaml:5:43: apis[0].header.valueFile: cannot read 'policy/testdata/no-such-secret': No such file or directory, expected a readable file" "$err"
	run "$P" check --no-file-checks policy/testdata/api-missing-secret.yaml
	sk_check_eq "check --no-file-checks skips the secret check" 0 "$rc"

	run "$P" check policy/testdata/forge-bad.json
	sk_check_eq "check forge-bad exits 3" 3 "$rc"
	sk_check_eq "check forge-bad first error" "policy/testdata/forge-bad.json:2:11: mode: 'allow-some' is not a forge mode, expected deny-all, allowlist or dev-open" "$(head -1 <<<"$err")"

	printf 'version: 1\negress:\n  - host: [a\n' >"$SK_TMP/syntax.yaml"
	run "$P" check "$SK_TMP/syntax.yaml"
	sk_check_eq "check YAML syntax error exits 3" 3 "$rc"
	sk_check_eq "check YAML syntax error position" "$SK_TMP/syntax.yaml:4:1: YAML syntax error: did not find expected ',' or ']' while parsing a flow sequence (started at 3:11), expected valid YAML" "$err"

	printf '{"version": 1,\n  "egress": [\n    {"host": "a.com", "ports": [443],}\n  ]}\n' >"$SK_TMP/comma.json"
	run "$P" check "$SK_TMP/comma.json"
	sk_check_eq "check JSON trailing comma position" "$SK_TMP/comma.json:3:38: JSON syntax error: unexpected '}', expected a string key" "$err"

	printf 'version: 1\negress:\n  - host: "a.com\\nevil"\n' >"$SK_TMP/inject.yaml"
	run "$P" check "$SK_TMP/inject.yaml"
	sk_check_eq "check newline in a name is escaped in the message" "$SK_TMP/inject.yaml:3:11: egress[0].host: invalid name 'a.com\\x0aevil': whitespace in name, expected a DNS name like api.example.com or *.example.com" "$err"

	printf 'version: 1\negress:\n  - host: a.com\n    ports: [443]\ntls:\n  echGrease: allow\n' >"$SK_TMP/grease.yaml"
	run "$P" check "$SK_TMP/grease.yaml"
	sk_check_eq "check names tls.echGrease allow" "$SK_TMP/grease.yaml: ok (1 rule, mode enforce, tls.echGrease allow)" "$out"
	run "$P" explain "$SK_TMP/grease.yaml" a.com 443
	sk_check_eq "explain shows echGrease allow for tls" '{"decision":"allow","rule":0,"reason":"rule","host":"a.com","port":443,"proto":"tls","rule_text":"host a.com ports [443]","rule_at":"'"$SK_TMP"'/grease.yaml:3:5","mode":"enforce","echGrease":"allow"}' "$out"
	printf 'version: 1\nbudgets:\n  default: { sent: 100Mi, window: 1h }\negress:\n  - host: a.com\n    ports: [443]\n    budget: { sent: 20Mi, connections: 500, window: 10m }\n  - host: "*.b.com"\n' >"$SK_TMP/budget.yaml"
	run "$P" explain "$SK_TMP/budget.yaml" a.com 443
	sk_check_eq "explain shows the rule's own budget" '{"decision":"allow","rule":0,"reason":"rule","host":"a.com","port":443,"proto":"tls","rule_text":"host a.com ports [443]","rule_at":"'"$SK_TMP"'/budget.yaml:5:5","budget":"sent 20Mi connections 500 window 10m","budget_from":"rule","mode":"enforce"}' "$out"
	run "$P" explain "$SK_TMP/budget.yaml" x.b.com 443
	sk_check "explain shows budgets.default where the rule has none" grep -qF '"budget":"sent 100Mi window 1h","budget_from":"budgets.default"' <<<"$out"
	printf 'version: 1\negress:\n  - host: a.com\n    budget: { sent: 10Mq, window: 1m }\n' >"$SK_TMP/budget-bad.yaml"
	run "$P" check "$SK_TMP/budget-bad.yaml"
	sk_check_eq "check names a bad budget size at its line:col" "$SK_TMP/budget-bad.yaml:4:21: egress[0].budget.sent: '10Mq' is not a size, expected a number of bytes, optionally with Ki, Mi, Gi or Ti (e.g. 10Mi)" "$err"
	printf 'version: 1\ntls:\n  echGrease: on\n' >"$SK_TMP/grease-bad.yaml"
	run "$P" check "$SK_TMP/grease-bad.yaml"
	sk_check_eq "check bad tls.echGrease exits 3" 3 "$rc"
	sk_check_eq "check bad tls.echGrease message" "$SK_TMP/grease-bad.yaml:3:14: tls.echGrease: 'on' is not a valid setting, expected allow or deny" "$err"

	run "$P" check policy/examples/agent.yaml "$SK_TMP/nope.yaml"
	sk_check_eq "check valid + missing exits 3" 3 "$rc"
	sk_check_eq "check missing file message" "$SK_TMP/nope.yaml: cannot read: No such file or directory" "$err"
	sk_check_eq "check still reports the valid one" "policy/examples/agent.yaml: ok (8 rules, mode enforce)" "$out"

	run "$P" check policy/testdata
	sk_check_eq "check a directory" "policy/testdata: cannot read: Is a directory" "$err"

	run "$P" check
	sk_check_eq "check without files is a usage error" 2 "$rc"
	run "$P" check --bogus policy/examples/agent.yaml
	sk_check_eq "check unknown option is a usage error" 2 "$rc"
}

# --- explain ------------------------------------------------------------------------------------------
t_explain() {
	run "$P" explain "$A" api.github.com 443
	sk_check_eq "explain allowed name exits 0" 0 "$rc"
	sk_check_eq "explain allowed name JSON" '{"decision":"allow","rule":0,"reason":"rule","host":"api.github.com","port":443,"proto":"tls","rule_text":"host api.github.com ports [443]","rule_at":"policy/examples/agent.yaml:9:5","mode":"enforce"}' "$out"

	run "$P" explain "$A" API.GitHub.com. 443 --proto tcp
	sk_check_eq "explain normalises the name, honours --proto" '{"decision":"allow","rule":0,"reason":"rule","host":"api.github.com","port":443,"proto":"tcp","rule_text":"host api.github.com ports [443]","rule_at":"policy/examples/agent.yaml:9:5","mode":"enforce"}' "$out"

	run "$P" explain "$A" raw.githubusercontent.com 443
	sk_check_eq "explain wildcard subdomain" '"rule":2' "$(grep -o '"rule":2' <<<"$out")"
	run "$P" explain "$A" githubusercontent.com 443
	sk_check_eq "explain wildcard apex is denied" 1 "$rc"

	run "$P" explain "$A" pypi.org 443 --proto http
	sk_check_eq "explain protocol mismatch denies" 1 "$rc"
	sk_check_eq "explain protocol mismatch JSON" '{"decision":"deny","rule":-1,"reason":"no_match","host":"pypi.org","port":443,"proto":"http","rule_text":null,"mode":"enforce"}' "$out"

	run "$P" explain "$A" evil.example 443
	sk_check_eq "explain unknown name exits 1" 1 "$rc"

	run "$P" explain "$A" 10.1.2.3 5432
	sk_check_eq "explain cidr rule exits 0" 0 "$rc"
	sk_check_eq "explain cidr rule JSON" '{"decision":"allow","rule":6,"reason":"rule","host":"10.1.2.3","port":5432,"proto":"tcp","rule_text":"cidr 10.0.0.0/8 ports [5432]","rule_at":"policy/examples/agent.yaml:24:5","mode":"enforce"}' "$out"

	run "$P" explain "$A" 10.96.0.10 8125 --proto udp
	sk_check_eq "explain direct udp rule" '"rule_text":"cidr 10.96.0.0/12 ports [8125] protocol udp direct"' "$(grep -o '"rule_text":"[^"]*"' <<<"$out")"

	run "$P" explain "$A" 192.168.1.1 443
	sk_check_eq "explain private address denied" '"reason":"private"' "$(grep -o '"reason":"[a-z_]*"' <<<"$out")"
	run "$P" explain "$A" 169.254.169.254 80
	sk_check_eq "explain metadata address denied" '"reason":"link_local"' "$(grep -o '"reason":"[a-z_]*"' <<<"$out")"
	run "$P" explain "$A" ::ffff:10.1.2.3 5432
	sk_check_eq "explain mapped IPv6 matches the IPv4 cidr rule" 0 "$rc"

	run "$P" explain policy/testdata/forge-dev-open.json anything.example 443
	sk_check_eq "explain audit mode allows" 0 "$rc"
	sk_check_eq "explain audit reason" '"reason":"audit"' "$(grep -o '"reason":"[a-z_]*"' <<<"$out")"

	run "$P" explain "$A" "bad host" 443
	sk_check_eq "explain invalid host is a usage error" 2 "$rc"
	run "$P" explain "$A" api.github.com 0
	sk_check_eq "explain port 0 is a usage error" 2 "$rc"
	run "$P" explain "$A" api.github.com 443 --proto quic
	sk_check_eq "explain unknown proto is a usage error" 2 "$rc"
	run "$P" explain "$A" api.github.com
	sk_check_eq "explain missing port is a usage error" 2 "$rc"
	run "$P" explain policy/testdata/many-errors.yaml api.github.com 443
	sk_check_eq "explain invalid policy exits 3 (as every subcommand)" 3 "$rc"
	sk_check_eq "explain invalid policy prints diagnostics" 6 "$(grep -c '^policy/testdata/many-errors.yaml:' <<<"$err")"
}

# --- explain: provider metadata addresses (docs/policy.md, "Link-local and metadata addresses") --------
# 0.0.0.0/0 and ::/0 match them but do not name them: denied as link_local even with blockPrivate: false,
# also in IPv4-mapped, NAT64 and 6to4 spelling; a cidr rule that is exactly the address allows it.
t_explain_metadata() {
	M="$SK_TMP/open.yaml"
	cat >"$M" <<'YAML'
version: 1
egress:
  - cidr: 0.0.0.0/0
    ports: [80]
  - cidr: ::/0
    ports: [80]
blockPrivate: false
YAML
	run "$P" check "$M"
	sk_check_eq "check open policy exits 0" 0 "$rc"
	for a in 168.63.129.16 100.100.100.200 192.0.0.192 169.254.169.254 fd00:ec2::254 fd00:ec2::253 \
		fd00:ec2::123 fd00:ec2::23 fd00:42::42 ::ffff:168.63.129.16 64:ff9b::6464:64c8 2002:c000:c0::1; do
		run "$P" explain "$M" "$a" 80
		sk_check_eq "explain $a under 0.0.0.0/0 + ::/0 exits 1" 1 "$rc"
		sk_check_eq "explain $a under 0.0.0.0/0 + ::/0 is link_local" '"decision":"deny","rule":-1,"reason":"link_local"' \
			"$(grep -o '"decision":"[a-z]*","rule":-\?[0-9]*,"reason":"[a-z_]*"' <<<"$out")"
	done
	run "$P" explain "$M" 168.63.129.17 80
	sk_check_eq "explain Azure WireServer neighbour is allowed by 0.0.0.0/0" '"decision":"allow","rule":0' \
		"$(grep -o '"decision":"[a-z]*","rule":-\?[0-9]*' <<<"$out")"
	run "$P" explain "$M" 100.100.100.201 80
	sk_check_eq "explain Alibaba metadata neighbour is allowed by 0.0.0.0/0 (blockPrivate false)" 0 "$rc"

	N="$SK_TMP/named.yaml"
	cat >"$N" <<'YAML'
version: 1
egress:
  - cidr: 168.63.129.16/32
    ports: [80]
  - cidr: fd00:ec2::254/128
    ports: [80]
  - cidr: 100.64.0.0/10
    ports: [80]
YAML
	run "$P" explain "$N" 168.63.129.16 80
	sk_check_eq "explain a cidr rule naming the Azure WireServer allows it" '"decision":"allow","rule":0' \
		"$(grep -o '"decision":"[a-z]*","rule":-\?[0-9]*' <<<"$out")"
	run "$P" explain "$N" ::ffff:168.63.129.16 80
	sk_check_eq "explain the naming rule covers the mapped form" 0 "$rc"
	run "$P" explain "$N" fd00:ec2::254 80
	sk_check_eq "explain a cidr rule naming the AWS IPv6 IMDS allows it" 0 "$rc"
	run "$P" explain "$N" 100.100.100.200 80
	sk_check_eq "explain 100.64.0.0/10 does not name the Alibaba metadata address" '"reason":"link_local"' \
		"$(grep -o '"reason":"[a-z_]*"' <<<"$out")"
	run "$P" explain "$N" 100.100.100.201 80
	sk_check_eq "explain 100.64.0.0/10 names the rest of CGNAT" 0 "$rc"
}

# --- direct and udp rules go around the proxy: refused when they hold metadata / private addresses -------
t_bypass_rules() {
	B="$SK_TMP/bypass.yaml"
	cat >"$B" <<'YAML'
version: 1
egress:
  - host: api.github.com
    ports: [443]
  - cidr: 0.0.0.0/0
    protocol: udp
  - cidr: "::/0"
    ports: [443]
    direct: true
  - cidr: 168.0.0.0/6
    direct: true
  - cidr: 172.0.0.0/8
    protocol: udp
  - cidr: 2002::/16
    protocol: udp
  - cidr: 0.0.0.0/0
    ports: [443]
blockPrivate: true
YAML
	run "$P" check "$B"
	sk_check_eq "check direct/udp rules holding metadata addresses exits 3" 3 "$rc"
	sk_check_eq "check direct/udp rules holding metadata addresses prints nothing on stdout" "" "$out"
	sk_check_eq "check names each direct/udp rule holding link-local or (blockPrivate) private addresses" \
	"$B:5:11: egress[1].cidr: 0.0.0.0/0 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (169.254.0.0/16, 168.63.129.16, 100.100.100.200, 192.0.0.192); expected a block that lies wholly inside one of them or contains none
$B:7:11: egress[2].cidr: ::/0 is a direct rule, which goes around the proxy, and contains link-local/metadata addresses (fe80::/10, fd00:ec2::254, fd00:ec2::253, fd00:ec2::123, ...); expected a block that lies wholly inside one of them or contains none
$B:10:11: egress[3].cidr: 168.0.0.0/6 is a direct rule, which goes around the proxy, and contains link-local/metadata addresses (169.254.0.0/16, 168.63.129.16); expected a block that lies wholly inside one of them or contains none
$B:12:11: egress[4].cidr: 172.0.0.0/8 is a udp rule, which goes around the proxy, and contains private addresses (172.16.0.0/12) while blockPrivate is true; expected a block that lies wholly inside one private range or contains none
$B:14:11: egress[5].cidr: 2002::/16 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (embedded 169.254.0.0/16, embedded 168.63.129.16, embedded 100.100.100.200, embedded 192.0.0.192); expected a block that lies wholly inside one of them or contains none" "$err"

	# blockPrivate: false lifts the private check, not the link-local one
	sed 's/^blockPrivate: true$/blockPrivate: false/' "$B" >"$SK_TMP/bypass-open.yaml"
	run "$P" check "$SK_TMP/bypass-open.yaml"
	sk_check_eq "check with blockPrivate false still exits 3" 3 "$rc"
	sk_check_eq "check with blockPrivate false reports the four link-local rules only" \
		"5:11 7:11 10:11 14:11" "$(grep -oE '^[^:]+:[0-9]+:[0-9]+' <<<"$err" | sed 's/^[^:]*://' | tr '\n' ' ' | sed 's/ $//')"

	G="$SK_TMP/bypass-ok.yaml"
	cat >"$G" <<'YAML'
version: 1
egress:
  - {cidr: 10.96.0.0/12, ports: [8125], protocol: udp, direct: true}
  - {cidr: 198.18.1.20/32, ports: [7000], protocol: udp}
  - {cidr: "2001:db8:19::20/128", ports: [7000], protocol: udp}
  - {cidr: 198.18.1.30/32, ports: [7100], protocol: tcp, direct: true}
  - {cidr: 169.254.169.254/32, ports: [80], direct: true}
  - {cidr: 168.63.129.16/32, ports: [53], protocol: udp}
  - {cidr: "fd00:ec2::254/128", ports: [80], direct: true}
  - {cidr: 0.0.0.0/0, ports: [443]}
YAML
	run "$P" check "$G"
	sk_check_eq "check direct/udp rules inside one class or clear of both exits 0" 0 "$rc"
	sk_check_eq "check direct/udp rules inside one class or clear of both prints ok" "$G: ok (8 rules, mode enforce)" "$out"
}

# --- conventions every subcommand shares (docs/cli.md) -----------------------------------------------------
t_conventions() {
	release=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' helm/stockade/Chart.yaml)
	for b in stockade-policy stockade-init stockade-sidecar; do
		run "$SK_BIN/$b" --version
		sk_check_eq "$b --version prints the release version ($release)" "$b $release" "${out%% (*}"
	done
	# Every subcommand (and both daemons): --help and -h exit 0 with the usage on stdout, nothing on stderr.
	for c in "$P check" "$P explain" "$P rules" "$P seccomp" "$P seccomp-install" "$P seccomp-log" "$P status" "$P exec" \
		"$P schema" "$P suggest" "$P inject" \
		"$I" "$S" "$S wait-ready"; do
		for h in --help -h; do
			# shellcheck disable=SC2086  # the command and its subcommand are two words
			run $c $h
			sk_check_eq "${c#"$SK_BIN/"} $h exits 0, usage on stdout, quiet stderr" "0 usage: " "$rc ${out:0:7}$err"
		done
	done
	# Bad flags are usage errors (2), as everywhere.
	sk_tbl "seccomp-log --bogus" 2 "$P" seccomp-log --bogus
	sk_tbl "status without a URL" 2 "$P" status
	sk_tbl "status -o yaml" 2 "$P" status -o yaml http://127.0.0.1:1
	sk_tbl "status --limit -1" 2 "$P" status --limit -1 http://127.0.0.1:1
	# An invalid policy exits 3 whichever tool reads it; so does one that cannot be read.
	d=$SK_TMP/inst; mkdir -p "$d"
	sk_tbl "invalid policy: check" 3 "$P" check "$BAD"
	sk_tbl "invalid policy: explain" 3 "$P" explain "$BAD" a.com 443
	sk_tbl "invalid policy: rules" 3 "$P" rules "$BAD"
	sk_tbl "invalid policy: seccomp --policy" 3 "$P" seccomp --policy "$BAD"
	sk_tbl "invalid policy: seccomp-install --once" 3 "$P" seccomp-install --policy "$BAD" --dir "$d" --once
	sk_tbl "invalid policy: stockade-init --dry-run" 3 "$I" --policy "$BAD" --dry-run
	sk_tbl "invalid policy: stockade-sidecar" 3 "$S" --policy "$BAD"
	sk_tbl "unreadable policy: check" 3 "$P" check "$SK_TMP/none.yaml"
	sk_tbl "unreadable policy: rules" 3 "$P" rules "$SK_TMP/none.yaml"
	sk_tbl "unreadable policy: stockade-init" 3 "$I" --policy "$SK_TMP/none.yaml" --dry-run
	# --policy=F is --policy F, everywhere a policy is taken (an invalid one shows it was read: exit 3).
	sk_tbl "--policy=F: check" 3 "$P" check --policy="$BAD"
	sk_tbl "--policy=F: explain" 3 "$P" explain --policy="$BAD" a.com 443
	sk_tbl "--policy=F: rules" 3 "$P" rules --policy="$BAD"
	sk_tbl "--policy=F: seccomp" 3 "$P" seccomp --policy="$BAD"
	sk_tbl "--policy=F: seccomp-install" 3 "$P" seccomp-install --policy="$BAD" --dir="$d" --once
	sk_tbl "--policy=F: stockade-init" 3 "$I" --policy="$BAD" --dry-run
	sk_tbl "--policy=F: stockade-sidecar" 3 "$S" --policy="$BAD"
	sk_tbl "--policy F: explain" 0 "$P" explain --policy "$A" api.github.com 443
	sk_tbl "--policy F: rules" 0 "$P" rules --policy "$A"
	sk_tbl "--policy F: seccomp-install" 0 "$P" seccomp-install --policy "$A" --dir "$d" --once
	# - is stdin wherever a file is read (the sidecar, which re-reads its file on change, refuses it: usage).
	out=$("$P" check - <"$A"); sk_check_eq "stdin: check -" "<stdin>: ok (8 rules, mode enforce)" "$out"
	out=$("$P" check - 2>&1 <"$BAD"); sk_check_eq "stdin: errors name <stdin>" 6 "$(grep -c '^<stdin>:[0-9]*:[0-9]*: ' <<<"$out")"
	out=$("$P" explain --policy - api.github.com 443 <"$A"); sk_check_eq "stdin: explain --policy -" '"rule_at":"<stdin>:9:5"' "$(grep -o '"rule_at":"[^"]*"' <<<"$out")"
	sk_check_eq "stdin: rules - equals rules FILE" "$("$P" rules "$A")" "$("$P" rules - <"$A")"
	sk_check_eq "stdin: seccomp --policy - equals the file's" "$("$P" seccomp --policy "$A")" "$("$P" seccomp --policy - <"$A")"
	sk_check_eq "stdin: stockade-init --policy - --dry-run equals the file's" "$("$I" --policy "$A" --dry-run)" \
		"$("$I" --policy - --dry-run <"$A")"
	"$S" --policy - </dev/null >/dev/null 2>&1; sk_check_eq "stdin: stockade-sidecar --policy - is a usage error" 2 "$?"
	# -o json where the output is data: one parseable document.
	for c in "check $A" "explain $A api.github.com 443" "rules $A" "schema" "suggest /dev/null"; do
		# shellcheck disable=SC2086
		run "$P" $c -o json
		sk_check "-o json: ${c%% *} prints one JSON document" /usr/bin/python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out"
	done
	run "$P" explain "$A" api.github.com 443 -o text
	sk_check_eq "-o text: explain prints one line" "allow api.github.com:443/tls by rule 0 (host api.github.com ports [443]) at $A:9:5, mode enforce" "$out"
	sk_tbl "-o yaml is not a format of check: usage" 2 "$P" check -o yaml "$A"
	run "$P" check -o json "$BAD"
	sk_check_eq "check -o json reports errors as data, exit 3" "3 False 6" "$rc $(/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1])[0]; print(d["valid"], len(d["errors"]))' "$out")"
}

# --- check runs the seccomp section through the profile generator --------------------------------------
t_seccomp_section() {
	printf 'version: 1\nseccomp:\n  allow: [ptrace, no_such_call]\n  deny: [getrandom]\n' >"$SK_TMP/sc.yaml"
	run "$P" check "$SK_TMP/sc.yaml"
	sk_check_eq "check seccomp: a never-allowed and an unknown syscall, exit 3" 3 "$rc"
	sk_check_eq "check seccomp: each at its file:line:col" \
	"$SK_TMP/sc.yaml:3:11: seccomp.allow[0]: 'ptrace' never allowed for the agent (docs/architecture.md, seccomp), expected a syscall the profile generator accepts (stockade-policy seccomp --allow)
$SK_TMP/sc.yaml:3:19: seccomp.allow[1]: 'no_such_call' unknown syscall, expected a syscall the profile generator accepts (stockade-policy seccomp --allow)" "$err"
	run "$P" seccomp --policy "$SK_TMP/sc.yaml"
	sk_check_eq "seccomp --policy reports the same positions, exit 3" "3 2" "$rc $(grep -c "^$SK_TMP/sc.yaml:3:" <<<"$err")"
}

# --- rule names: the stable label of explain, audit and metrics --------------------------------------------
t_rule_names() {
	printf 'version: 1\negress:\n  - name: github-api\n    host: api.github.com\n    ports: [443]\n  - host: pypi.org\n    name: github-api\n' >"$SK_TMP/names.yaml"
	run "$P" check "$SK_TMP/names.yaml"
	sk_check_eq "duplicate rule names are refused at the second" "3 $SK_TMP/names.yaml:7:11: egress[1].name: 'github-api' is already the name of the rule at 3:5, expected unique names" "$rc $err"
	sed -i '$d' "$SK_TMP/names.yaml"
	run "$P" explain "$SK_TMP/names.yaml" api.github.com 443
	sk_check_eq "explain names the rule" '"rule":0,"reason":"rule","host":"api.github.com","port":443,"proto":"tls","rule_name":"github-api"' \
		"$(grep -o '"rule":0.*"rule_name":"[a-z-]*"' <<<"$out")"
}

# --- request rules: every message at its key, the valid forms loaded --------------------------------------
t_request_rules() {
	cat >"$SK_TMP/req-ok.yaml" <<'YAML'
version: 1
egress:
  - host: api.github.com
    ports: [443]
    inspect: true
    requests:
      - { methods: [GET, HEAD], paths: ["/repos/acme/**", "/user"] }
      - { methods: [POST], paths: ["/repos/acme/*/pulls"] }
  - host: pypi.org
    inspect: true
    access: read-only
  - host: plain.example
    ports: [80]
    access: read-write
YAML
	run "$P" check "$SK_TMP/req-ok.yaml"
	sk_check_eq "request rules: the issue's example is valid" "0 $SK_TMP/req-ok.yaml: ok (3 rules, mode enforce)" "$rc $out"
	cat >"$SK_TMP/req-bad.yaml" <<'YAML'
version: 1
egress:
  - host: a.example
    protocol: http
    requests:
      - { methods: [get, FOO], paths: ["repos", "/a**", "/a/../b"] }
      - { methods: [], paths: ["/x%2Fy"] }
  - host: b.example
    protocol: http
    access: read-only
    requests: [{ methods: [GET], paths: ["/"] }]
  - host: c.example
    access: read-only
  - host: d.example
    protocol: tcp
    access: write
YAML
	run "$P" check "$SK_TMP/req-bad.yaml"
	sk_check_eq "request rules: every error, in file order" "3
$SK_TMP/req-bad.yaml:6:21: egress[0].requests[0].methods[0]: 'get' is not a method (methods are case-sensitive), expected GET
$SK_TMP/req-bad.yaml:6:26: egress[0].requests[0].methods[1]: 'FOO' is not a method a request rule can name, expected one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE
$SK_TMP/req-bad.yaml:6:40: egress[0].requests[0].paths[0]: 'repos': a path glob starts with '/', expected a path glob such as \"/repos/acme/**\"
$SK_TMP/req-bad.yaml:6:49: egress[0].requests[0].paths[1]: '/a**': '**' must be a whole segment (\"/a/**\", not \"/a**\"), expected a path glob such as \"/repos/acme/**\"
$SK_TMP/req-bad.yaml:6:57: egress[0].requests[0].paths[2]: '/a/../b' is not written as a normalised path, expected '/b' (the path a request is matched on)
$SK_TMP/req-bad.yaml:7:20: egress[0].requests[1].methods: expected a non-empty list of HTTP methods such as [GET, HEAD], got an empty list
$SK_TMP/req-bad.yaml:7:32: egress[0].requests[1].paths[0]: '/x%2Fy': an encoded '/' (%2F), expected a path glob such as \"/repos/acme/**\"
$SK_TMP/req-bad.yaml:10:13: egress[1]: has both access and requests, expected one of them (access is a shorthand for a requests list)
$SK_TMP/req-bad.yaml:13:13: egress[2].access: the rule allows TLS (any port), whose requests the sidecar can only see by terminating it; expected inspect: true, or protocol: http for plain HTTP only
$SK_TMP/req-bad.yaml:16:13: egress[3].access: 'write' is not an access, expected read-only or read-write" "$rc
$err"
}

# --- the schema: generated from the validator's tables, shipped up to date ----------------------------------
t_schema() {
	sk_check "docs/policy.schema.json and the chart's policy.spec are current (scripts/gen-policy-schema)" \
		env SK_BIN="$SK_BIN" scripts/gen-policy-schema --check
}

# --- suggest: audit-mode lines in, rules out, and the rules allow those connections ------------------------
t_suggest() {
	cat >"$SK_TMP/audit.ndjson" <<'EOF'
{"ts":"2026-11-24T10:00:00.000Z","event":"conn","src":"198.18.0.2:40000","dst":"198.18.1.5:443","name":"api.github.com","proto":"tls","rule":null,"decision":"would_deny","reason":"no_match","bytes_in":10,"bytes_out":10,"duration_ms":5}
{"ts":"2026-11-24T10:00:01.000Z","event":"conn","src":"198.18.0.2:40001","dst":"198.18.1.6:8443","name":"api.github.com","proto":"tls","rule":null,"decision":"would_deny","reason":"no_match","bytes_in":10,"bytes_out":10,"duration_ms":5}
{"ts":"2026-11-24T10:00:02.000Z","event":"conn","src":"198.18.0.2:40002","dst":"198.18.1.7:80","name":"198.18.1.7","proto":"http","rule":null,"decision":"would_deny","reason":"no_match","bytes_in":10,"bytes_out":10,"duration_ms":5}
{"ts":"2026-11-24T10:00:03.000Z","event":"conn","src":"198.18.0.2:40003","dst":"169.254.169.254:80","name":"169.254.169.254","proto":"http","rule":null,"decision":"would_deny","reason":"link_local","bytes_in":0,"bytes_out":0,"duration_ms":1}
EOF
	run "$P" suggest "$SK_TMP/audit.ndjson"
	sk_check_eq "suggest: grouped, ports merged, the IP literal as a cidr rule, metadata never" \
	'# stockade-policy suggest: 4 lines read, 3 denials turned into 2 rules
# not turned into rules (no egress rule changes these): link_local 1
egress:
  - host: api.github.com
    ports: [443, 8443]
    protocol: tls  # 2 connections
  # the name seen (SNI or Host) is an IP literal: an address rule, never a host rule
  - cidr: "198.18.1.7/32"
    ports: [80]
    protocol: http  # 1 connection' "$out"
	sk_check_eq "suggest: stdin gives the same" "$out" "$("$P" suggest <"$SK_TMP/audit.ndjson")"
	{ echo "version: 1"; echo "$out"; } >"$SK_TMP/suggested.yaml"
	sk_check "suggest: the output with a version line is a valid policy" "$P" check "$SK_TMP/suggested.yaml"
	sk_check "suggest: ... which allows TLS to api.github.com:8443" "$P" explain "$SK_TMP/suggested.yaml" api.github.com 8443 --proto tls
	sk_tbl "suggest: a missing input is a usage error" 2 "$P" suggest "$SK_TMP/none.ndjson"
}

SK_CASES=(check_valid check_invalid check_guardrails explain explain_metadata bypass_rules conventions seccomp_section rule_names request_rules
	schema suggest)
sk_main "$@"

/* policy/load_test.c — the policy loaders: a table of malformed inputs (YAML and JSON), each checked for
 * its exact message and its exact line:col; valid files round-trip to the expected model; defaults and
 * normalisation; file checks; format detection; forge-supervisor imports; the netns hash. Run from the
 * repository root (testdata paths are relative). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "policy/internal.h"
#include "policy/match.h"
#include "policy/policy.h"

struct bad_case {
	const char *name;
	int format;
	const char *text;
	unsigned line, col;
	const char *msg;  /* the whole message after "FILE:LINE:COL: " */
};

static const struct bad_case bad_cases[] = {
	{ "yaml_syntax_unclosed_flow", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: [a\n",
	  4, 1, "YAML syntax error: did not find expected ',' or ']' while parsing a flow sequence (started at 3:11), expected valid YAML" },
	{ "yaml_syntax_bad_indent", SK_FORMAT_YAML,
	  "version: 1\nagent:\n  uid: 1000\n bad: 1\n",
	  4, 2, "YAML syntax error: did not find expected key while parsing a block mapping (started at 1:1), expected valid YAML" },
	{ "yaml_tab_indent", SK_FORMAT_YAML,
	  "version: 1\nagent:\n\tuid: 1000\n",
	  3, 1, "YAML syntax error: found character that cannot start any token while scanning for the next token (started at 3:1), expected valid YAML" },
	{ "yaml_alias", SK_FORMAT_YAML,
	  "version: 1\na: &x 1\nb: *x\n",
	  3, 4, "YAML aliases are not supported, expected the value written out" },
	{ "yaml_two_documents", SK_FORMAT_YAML,
	  "---\nversion: 1\n---\nversion: 1\n",
	  3, 1, "a second YAML document, expected one policy per file" },
	{ "yaml_custom_tag", SK_FORMAT_YAML,
	  "version: 1\nmode: !evil enforce\n",
	  2, 7, "unsupported YAML tag '!evil', expected plain values (or !!str)" },
	{ "yaml_tag_mismatch", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: !!int abc}\n",
	  2, 14, "value does not match its tag !!int, expected a value of that type" },
	{ "yaml_empty", SK_FORMAT_YAML,
	  "",
	  1, 1, "policy: expected a mapping starting with version: 1, got null" },
	{ "yaml_top_list", SK_FORMAT_YAML,
	  "- version: 1\n",
	  1, 1, "policy: expected a mapping starting with version: 1, got a list" },
	{ "yaml_top_scalar", SK_FORMAT_YAML,
	  "hello\n",
	  1, 1, "policy: expected a mapping starting with version: 1, got string 'hello'" },
	{ "missing_version", SK_FORMAT_YAML,
	  "mode: enforce\n",
	  1, 1, "policy: missing key 'version', expected version: 1" },
	{ "version_2", SK_FORMAT_YAML,
	  "version: 2\n",
	  1, 10, "version: unsupported version 2, expected 1" },
	{ "version_string", SK_FORMAT_YAML,
	  "version: \"1\"\n",
	  1, 10, "version: expected 1, got string '1'" },
	{ "unknown_top_key", SK_FORMAT_YAML,
	  "version: 1\negres: []\n",
	  2, 1, "policy: unknown key 'egres', expected one of version, mode, agent, sidecar, exemptUids, ports, egress, dns, blockPrivate, loopback, apis, secrets, seccomp, tls" },
	{ "duplicate_top_key", SK_FORMAT_YAML,
	  "version: 1\nmode: audit\nmode: enforce\n",
	  3, 1, "policy: duplicate key 'mode' (first at 2:1), expected each key once" },
	{ "mode_bad", SK_FORMAT_YAML,
	  "version: 1\nmode: permissive\n",
	  2, 7, "mode: 'permissive' is not a mode, expected enforce or audit" },
	{ "mode_not_string", SK_FORMAT_YAML,
	  "version: 1\nmode: [enforce]\n",
	  2, 7, "mode: expected enforce or audit, got a list" },
	{ "agent_uid_zero", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: 0}\n",
	  2, 14, "agent.uid: uid 0 is root, expected a non-root uid" },
	{ "agent_uid_negative", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: -5}\n",
	  2, 14, "agent.uid: -5 is out of range, expected a uid 1..4294967294" },
	{ "agent_uid_huge", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: 4294967295}\n",
	  2, 14, "agent.uid: 4294967295 is out of range, expected a uid 1..4294967294" },
	{ "agent_uid_float", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: 1000.5}\n",
	  2, 14, "agent.uid: 1000.5 is not a whole number, expected a uid 1..4294967294" },
	{ "agent_not_map", SK_FORMAT_YAML,
	  "version: 1\nagent: 1000\n",
	  2, 8, "agent: expected a mapping, got number 1000" },
	{ "agent_missing_uid", SK_FORMAT_YAML,
	  "version: 1\nagent: {}\n",
	  2, 8, "agent: missing key 'uid', expected uid: N" },
	{ "agent_unknown_key", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: 1000, gid: 1000}\n",
	  2, 20, "agent: unknown key 'gid', expected one of uid" },
	{ "sidecar_same_as_agent", SK_FORMAT_YAML,
	  "version: 1\nagent: {uid: 1000}\nsidecar: {uid: 1000}\n",
	  3, 16, "sidecar.uid: same as agent.uid (1000), expected a different uid" },
	{ "sidecar_uid_zero", SK_FORMAT_YAML,
	  "version: 1\nsidecar:\n  uid: 0\n",
	  3, 8, "sidecar.uid: uid 0 is root, expected a non-root uid" },
	{ "exempt_zero", SK_FORMAT_YAML,
	  "version: 1\nexemptUids: [0]\n",
	  2, 14, "exemptUids[0]: uid 0 is root, expected a non-root uid" },
	{ "exempt_agent", SK_FORMAT_YAML,
	  "version: 1\nexemptUids: [2000, 1000]\n",
	  2, 20, "exemptUids[1]: 1000 is the agent uid, expected a uid other than agent and sidecar" },
	{ "exempt_sidecar", SK_FORMAT_YAML,
	  "version: 1\nexemptUids:\n  - 1337\n",
	  3, 5, "exemptUids[0]: 1337 is the sidecar uid, expected a uid other than agent and sidecar" },
	{ "exempt_not_list", SK_FORMAT_YAML,
	  "version: 1\nexemptUids: 5\n",
	  2, 13, "exemptUids: expected a list of uids, got number 5" },
	{ "ports_collide", SK_FORMAT_YAML,
	  "version: 1\nports: {proxy: 15001, dns: 15001}\n",
	  2, 28, "ports.dns: 15001 collides with ports.proxy, expected four different ports" },
	{ "ports_collide_default", SK_FORMAT_YAML,
	  "version: 1\nports: {api: 15000}\n",
	  2, 14, "ports.api: 15000 collides with ports.admin, expected four different ports" },
	{ "ports_zero", SK_FORMAT_YAML,
	  "version: 1\nports: {admin: 0}\n",
	  2, 16, "ports.admin: 0 is out of range, expected a port 1..65535" },
	{ "ports_unknown", SK_FORMAT_YAML,
	  "version: 1\nports: {metrics: 9090}\n",
	  2, 9, "ports: unknown key 'metrics', expected one of proxy, dns, admin, api" },
	{ "egress_not_list", SK_FORMAT_YAML,
	  "version: 1\negress: {host: a.com}\n",
	  2, 9, "egress: expected a list of rules, got a mapping" },
	{ "rule_not_map", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - api.github.com\n",
	  3, 5, "egress[0]: expected a mapping, got string 'api.github.com'" },
	{ "rule_unknown_key", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    port: 443\n",
	  4, 5, "egress[0]: unknown key 'port', expected one of host, cidr, ports, protocol, direct, budget, name" },
	{ "rule_name_invalid", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    name: GitHub_API\n",
	  4, 11, "egress[0].name: 'GitHub_API' is not a valid rule name, expected [a-z0-9-]{1,63}" },
	{ "rule_name_too_long", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  4, 11, "egress[0].name: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is not a valid rule name" },
	{ "rule_name_duplicate", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    name: gh\n  - cidr: 10.0.0.0/8\n    name: gh\n",
	  6, 11, "egress[1].name: 'gh' is already the name of the rule at 3:5, expected unique names" },
	{ "rule_name_number", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    name: 7\n",
	  4, 11, "egress[0].name: expected a name [a-z0-9-]{1,63}, got number 7" },
	{ "rule_duplicate_key", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    host: b.com\n",
	  4, 5, "egress[0]: duplicate key 'host' (first at 3:5), expected each key once" },
	{ "rule_both", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    cidr: 10.0.0.0/8\n",
	  3, 5, "egress[0]: has both host and cidr, expected exactly one of them" },
	{ "rule_neither", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - ports: [443]\n",
	  3, 5, "egress[0]: has neither host nor cidr, expected exactly one of them" },
	{ "port_zero", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: [0]\n",
	  4, 13, "egress[0].ports[0]: 0 is out of range, expected a port 1..65535" },
	{ "port_too_big", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: [443, 65536]\n",
	  4, 18, "egress[0].ports[1]: 65536 is out of range, expected a port 1..65535" },
	{ "port_string", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: [\"443\"]\n",
	  4, 13, "egress[0].ports[0]: expected a port 1..65535, got string '443'" },
	{ "port_word", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: [https]\n",
	  4, 13, "egress[0].ports[0]: expected a port 1..65535, got string 'https'" },
	{ "port_hex", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: [0x1bb]\n",
	  4, 13, "egress[0].ports[0]: 0x1bb is not a whole number, expected a port 1..65535" },
	{ "ports_not_list", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: 443\n",
	  4, 12, "egress[0].ports: expected a list of ports 1..65535, got number 443" },
	{ "ports_empty", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    ports: []\n",
	  4, 12, "egress[0].ports: empty list, expected at least one port (leave the key out for any port)" },
	{ "protocol_bad", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    protocol: quic\n",
	  4, 15, "egress[0].protocol: 'quic' is not a protocol, expected tls, http, tcp, udp or any" },
	{ "protocol_case", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    protocol: TLS\n",
	  4, 15, "egress[0].protocol: 'TLS' is not a protocol, expected tls, http, tcp, udp or any" },
	{ "host_udp", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    protocol: udp\n",
	  4, 15, "egress[0].protocol: UDP cannot be proxied by name, expected a cidr rule for udp traffic" },
	{ "host_direct", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n    direct: true\n",
	  4, 13, "egress[0].direct: only cidr rules can be direct, expected direct on a cidr rule (a host rule is decided by name in the proxy)" },
	{ "direct_not_bool", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.0.0.0/8\n    direct: yes\n",
	  4, 13, "egress[0].direct: expected true or false, got string 'yes'" },
	{ "direct_tls", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.0.0.0/8\n    protocol: tls\n    direct: true\n",
	  5, 13, "egress[0].direct: a direct rule bypasses the proxy and cannot check protocol tls, expected protocol tcp, udp or any" },
	/* direct and udp rules go around the proxy: no link-local/metadata (nor, with blockPrivate, private)
	 * addresses in them unless the block lies wholly inside the class */
	{ "udp_all_v4_link_local", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.com\n  - cidr: 0.0.0.0/0\n    protocol: udp\n",
	  4, 11, "egress[1].cidr: 0.0.0.0/0 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (169.254.0.0/16, 168.63.129.16, 100.100.100.200, 192.0.0.192); expected a block that lies wholly inside one of them or contains none" },
	{ "udp_all_v6_link_local", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - {cidr: \"::/0\", ports: [443], protocol: udp}\nblockPrivate: false\n",
	  3, 12, "egress[0].cidr: ::/0 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (fe80::/10, fd00:ec2::254, fd00:ec2::253, fd00:ec2::123, ...); expected a block that lies wholly inside one of them or contains none" },
	{ "direct_wireserver_in_block", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 168.0.0.0/6\n    direct: true\n",
	  3, 11, "egress[0].cidr: 168.0.0.0/6 is a direct rule, which goes around the proxy, and contains link-local/metadata addresses (169.254.0.0/16, 168.63.129.16); expected a block that lies wholly inside one of them or contains none" },
	{ "direct_cgnat_holds_alibaba", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 100.64.0.0/10\n    ports: [53]\n    protocol: udp\n    direct: true\n",
	  3, 11, "egress[0].cidr: 100.64.0.0/10 is a direct udp rule, which goes around the proxy, and contains link-local/metadata addresses (100.100.100.200); expected a block that lies wholly inside one of them or contains none" },
	{ "direct_ula_holds_aws_imds", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: fd00:ec2::/32\n    direct: true\nblockPrivate: false\n",
	  3, 11, "egress[0].cidr: fd00:ec2::/32 is a direct rule, which goes around the proxy, and contains link-local/metadata addresses (fd00:ec2::254, fd00:ec2::253, fd00:ec2::123, fd00:ec2::23); expected a block that lies wholly inside one of them or contains none" },
	{ "udp_6to4_embeds_metadata", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 2002::/16\n    protocol: udp\n",
	  3, 11, "egress[0].cidr: 2002::/16 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (embedded 169.254.0.0/16, embedded 168.63.129.16, embedded 100.100.100.200, embedded 192.0.0.192); expected a block that lies wholly inside one of them or contains none" },
	{ "udp_mapped_embeds_metadata", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: \"::ffff:0:0/96\"\n    protocol: udp\n",
	  3, 11, "egress[0].cidr: ::ffff:0.0.0.0/96 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (embedded 169.254.0.0/16" },
	{ "udp_nat64_embeds_metadata", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 64:ff9b::/96\n    protocol: udp\n",
	  3, 11, "egress[0].cidr: 64:ff9b::/96 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (embedded 169.254.0.0/16" },
	{ "direct_private_default", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 8.0.0.0/5\n    direct: true\n",
	  3, 11, "egress[0].cidr: 8.0.0.0/5 is a direct rule, which goes around the proxy, and contains private addresses (10.0.0.0/8) while blockPrivate is true; expected a block that lies wholly inside one private range or contains none" },
	{ "udp_private_block_private_after_egress", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.96.0.0/12\n    protocol: udp\n  - cidr: 172.0.0.0/8\n    protocol: udp\nblockPrivate: true\n",
	  5, 11, "egress[1].cidr: 172.0.0.0/8 is a udp rule, which goes around the proxy, and contains private addresses (172.16.0.0/12) while blockPrivate is true; expected a block that lies wholly inside one private range or contains none" },
	{ "udp_private_v6_embedded", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: \"2002:800::/21\"\n    protocol: udp\n",
	  3, 11, "egress[0].cidr: 2002:800::/21 is a udp rule, which goes around the proxy, and contains private addresses (embedded 10.0.0.0/8) while blockPrivate is true; expected a block that lies wholly inside one private range or contains none" },
	{ "host_empty_label", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a..com\n",
	  3, 11, "egress[0].host: invalid name 'a..com': empty label, expected a DNS name like api.example.com or *.example.com" },
	{ "host_space", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: \"a b.com\"\n",
	  3, 11, "egress[0].host: invalid name 'a b.com': whitespace in name, expected a DNS name like api.example.com or *.example.com" },
	{ "host_newline", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: \"a.com\\nevil\"\n",
	  3, 11, "egress[0].host: invalid name 'a.com\\x0aevil': whitespace in name, expected a DNS name like api.example.com or *.example.com" },
	{ "host_control", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: \"a\\x01.com\"\n",
	  3, 11, "egress[0].host: invalid name 'a\\x01.com': control byte in name, expected a DNS name like api.example.com or *.example.com" },
	{ "host_long_label", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com\n",
	  3, 11, "egress[0].host: invalid name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com': label longer than 63 bytes, expected a DNS name like api.example.com or *.example.com" },
	{ "host_long_name", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com\n",
	  3, 11, "egress[0].host: invalid name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaa...': name longer than 253 bytes, expected a DNS name like api.example.com or *.example.com" },
	{ "host_non_ascii", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: b\xc3""\xbc""cher.de\n",
	  3, 11, "egress[0].host: invalid name 'b\\xc3\\xbccher.de': non-ASCII byte (use the IDNA A-label, xn--...), expected a DNS name like api.example.com or *.example.com" },
	{ "host_garbage", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: \"a.com/path\"\n",
	  3, 11, "egress[0].host: invalid name 'a.com/path': invalid character in name (allowed: a-z, 0-9, '-', '.'), expected a DNS name like api.example.com or *.example.com" },
	{ "host_leading_dot", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: .a.com\n",
	  3, 11, "egress[0].host: invalid name '.a.com': empty label, expected a DNS name like api.example.com or *.example.com" },
	{ "host_wildcard_mid", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: \"a.*.com\"\n",
	  3, 11, "egress[0].host: invalid name 'a.*.com': '*' is only allowed as a whole leading label (\"*.suffix\"), expected a DNS name like api.example.com or *.example.com" },
	{ "host_ip", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: 10.1.2.3\n",
	  3, 11, "egress[0].host: '10.1.2.3' is an IP address, expected a name (use cidr: for addresses)" },
	{ "host_number", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: 42\n",
	  3, 11, "egress[0].host: expected a DNS name like api.example.com or *.example.com, got number 42" },
	{ "cidr_host_bits", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.1.2.3/8\n",
	  3, 11, "egress[0].cidr: '10.1.2.3/8' has host bits set, expected 10.0.0.0/8" },
	{ "cidr_host_bits_v6", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: \"2001:db8::1/32\"\n",
	  3, 11, "egress[0].cidr: '2001:db8::1/32' has host bits set, expected 2001:db8::/32" },
	{ "cidr_prefix_big", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.0.0.0/33\n",
	  3, 11, "egress[0].cidr: '10.0.0.0/33' has an invalid prefix length, expected /0../32" },
	{ "cidr_garbage", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.0.0/8\n",
	  3, 11, "egress[0].cidr: '10.0.0/8' is not a valid address/prefix, expected a network like 10.0.0.0/8 or fd00::/8" },
	{ "cidr_octal", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 010.0.0.0/8\n",
	  3, 11, "egress[0].cidr: '010.0.0.0/8' is not a valid address/prefix, expected a network like 10.0.0.0/8 or fd00::/8" },
	{ "dns_deny_bad", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  deny: drop\n",
	  3, 9, "dns.deny: 'drop' is not a deny answer, expected nxdomain or refused" },
	{ "dns_maxlen_zero", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  maxQueryLength: 0\n",
	  3, 19, "dns.maxQueryLength: 0 is out of range, expected a length 1..253" },
	{ "dns_maxlen_big", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  maxQueryLength: 254\n",
	  3, 19, "dns.maxQueryLength: 254 is out of range, expected a length 1..253" },
	{ "dns_type_unknown", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  allowTypes: [A, AAAA, FOO]\n",
	  3, 25, "dns.allowTypes[2]: unknown record type 'FOO', expected a type name like A, AAAA, CNAME, HTTPS, SVCB, MX, TXT or SRV" },
	{ "dns_upstream_bad", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  upstream: [\"dns.google\"]\n",
	  3, 14, "dns.upstream[0]: 'dns.google' is not a resolver, expected resolv.conf or an IP address with optional port (10.0.0.10, 10.0.0.10:53, [fd00::a]:53)" },
	{ "dns_upstream_port", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  upstream: [\"10.0.0.10:99999\"]\n",
	  3, 14, "dns.upstream[0]: '10.0.0.10:99999' is not a resolver, expected resolv.conf or an IP address with optional port (10.0.0.10, 10.0.0.10:53, [fd00::a]:53)" },
	{ "dns_unknown_key", SK_FORMAT_YAML,
	  "version: 1\ndns:\n  timeout: 5\n",
	  3, 3, "dns: unknown key 'timeout', expected one of upstream, deny, maxQueryLength, allowTypes" },
	{ "block_private_yes", SK_FORMAT_YAML,
	  "version: 1\nblockPrivate: yes\n",
	  2, 15, "blockPrivate: expected true or false, got string 'yes'" },
	{ "loopback_bad", SK_FORMAT_YAML,
	  "version: 1\nloopback: sometimes\n",
	  2, 11, "loopback: 'sometimes' is not a loopback mode, expected allow, deny or a list of ports" },
	{ "loopback_port_bad", SK_FORMAT_YAML,
	  "version: 1\nloopback: [8080, 0]\n",
	  2, 18, "loopback[1]: 0 is out of range, expected a port 1..65535" },
	{ "loopback_map", SK_FORMAT_YAML,
	  "version: 1\nloopback: {allow: true}\n",
	  2, 11, "loopback: expected allow, deny or a list of ports, got a mapping" },
	{ "seccomp_bad_name", SK_FORMAT_YAML,
	  "version: 1\nseccomp:\n  allow: [\"Mount\"]\n",
	  3, 11, "seccomp.allow[0]: 'Mount' is not a syscall name, expected [a-z0-9_]+ like openat" },
	{ "seccomp_both", SK_FORMAT_YAML,
	  "version: 1\nseccomp:\n  allow: [ptrace]\n  deny: [ptrace]\n",
	  4, 10, "seccomp.deny[0]: 'ptrace' is also in seccomp.allow, expected each syscall in one list" },
	{ "seccomp_unknown", SK_FORMAT_YAML,
	  "version: 1\nseccomp:\n  permit: [read]\n",
	  3, 3, "seccomp: unknown key 'permit', expected one of allow, deny" },
	{ "tls_ech_grease_bad", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  echGrease: maybe\n",
	  3, 14, "tls.echGrease: 'maybe' is not a valid setting, expected allow or deny" },
	{ "tls_ech_grease_case", SK_FORMAT_YAML,
	  "version: 1\ntls: {echGrease: Allow}\n",
	  2, 18, "tls.echGrease: 'Allow' is not a valid setting, expected allow or deny" },
	{ "tls_ech_grease_bool", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  echGrease: true\n",
	  3, 14, "tls.echGrease: expected allow or deny, got boolean true" },
	{ "tls_upstream_ca_spaces", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  upstreamCAFile: 'a b.pem'\n",
	  3, 19, "tls.upstreamCAFile: 'a b.pem' is not a usable path, expected a file path without spaces or control bytes" },
	{ "tls_upstream_ca_list", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  upstreamCAFile: [a.pem]\n",
	  3, 19, "tls.upstreamCAFile: expected a file path, got a list" },
	{ "tls_ech_grease_null", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  echGrease:\n",
	  3, 13, "tls.echGrease: expected allow or deny, got null" },
	{ "tls_unknown_key", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  ech: allow\n",
	  3, 3, "tls: unknown key 'ech', expected one of echGrease" },
	{ "tls_duplicate_key", SK_FORMAT_YAML,
	  "version: 1\ntls:\n  echGrease: allow\n  echGrease: deny\n",
	  4, 3, "tls: duplicate key 'echGrease' (first at 3:3), expected each key once" },
	{ "tls_not_map", SK_FORMAT_YAML,
	  "version: 1\ntls: allow\n",
	  2, 6, "tls: expected a mapping, got string 'allow'" },
	{ "tls_list", SK_FORMAT_YAML,
	  "version: 1\ntls: [echGrease]\n",
	  2, 6, "tls: expected a mapping, got a list" },
	{ "api_name_bad", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: My_API\n    upstream: https://a.com\n    header: {name: x-key, valueFile: /s}\n",
	  3, 11, "apis[0].name: 'My_API' is not a valid api name, expected [a-z0-9-]{1,63}" },
	{ "api_name_dup", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: x-key, valueFile: /s}\n  - name: a\n    upstream: https://b.com\n    header: {name: x-key, valueFile: /s}\n",
	  6, 11, "apis[1].name: 'a' is already the name of apis[0], expected unique names" },
	{ "api_http", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: http://a.com\n    header: {name: x-key, valueFile: /s}\n",
	  4, 15, "apis[0].upstream: 'http://a.com' is not an https:// URL, expected https://host[:port][/path] without credentials, query or fragment" },
	{ "api_userinfo", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://u:p@a.com\n    header: {name: x-key, valueFile: /s}\n",
	  4, 15, "apis[0].upstream: 'https://u:p@a.com' contains userinfo (user@), which would put credentials in the URL, expected https://host[:port][/path] without credentials, query or fragment" },
	{ "api_fragment", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com/v1#x\n    header: {name: x-key, valueFile: /s}\n",
	  4, 15, "apis[0].upstream: 'https://a.com/v1#x' has a fragment, expected https://host[:port][/path] without credentials, query or fragment" },
	{ "api_header_token", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: \"x key\", valueFile: /s}\n",
	  5, 20, "apis[0].header.name: 'x key' is not a header name, expected an HTTP token like x-api-key" },
	{ "api_missing_header", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n",
	  3, 5, "apis[0]: missing key 'header', expected header: {name: ..., valueFile: ...}" },
	{ "api_missing_valuefile", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: x-key}\n",
	  5, 13, "apis[0].header: missing key 'valueFile', expected the path of the secret value" },
	{ "api_rate_negative", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: x-key, valueFile: /s}\n    rateLimit: {rps: -1}\n",
	  6, 22, "apis[0].rateLimit.rps: expected a number 0..1000000000, got number -1" },
	{ "api_method_bad", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: x-key, valueFile: /s}\n    methods: [\"GE T\"]\n",
	  6, 15, "apis[0].methods[0]: 'GE T' is not an HTTP method, expected a name like GET or POST" },
	{ "api_path_bad", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: x-key, valueFile: /s}\n    pathPrefixes: [v1/]\n",
	  6, 20, "apis[0].pathPrefixes[0]: 'v1/' is not a path prefix, expected a path starting with / without spaces, '..' segments, query or fragment" },
	{ "api_path_dotdot", SK_FORMAT_YAML,
	  "version: 1\napis:\n  - name: a\n    upstream: https://a.com\n    header: {name: x-key, valueFile: /s}\n    pathPrefixes: [/v1/../admin]\n",
	  6, 20, "apis[0].pathPrefixes[0]: '/v1/../admin' is not a path prefix, expected a path starting with / without spaces, '..' segments, query or fragment" },
	{ "json_trailing_comma", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [\n    {\"host\": \"a.com\", \"ports\": [443],}\n  ]}\n",
	  3, 38, "JSON syntax error: unexpected '}', expected a string key" },
	{ "json_missing_comma", SK_FORMAT_JSON,
	  "{\"version\": 1\n \"mode\": \"audit\"}\n",
	  2, 2, "JSON syntax error: unexpected '\"', expected ',' or '}'" },
	{ "json_unterminated", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"mode\": \"audit",
	  2, 16, "JSON syntax error: unterminated string, expected a closing quote" },
	{ "json_truncated", SK_FORMAT_JSON,
	  "{\"version\": 1,\n",
	  2, 1, "JSON syntax error: unexpected end of input, expected a string key" },
	{ "json_leading_zero", SK_FORMAT_JSON,
	  "{\"version\": 01}\n",
	  1, 13, "JSON syntax error: invalid number, expected JSON number syntax (no leading zeros)" },
	{ "json_trailing_garbage", SK_FORMAT_JSON,
	  "{\"version\": 1}\nx\n",
	  2, 1, "JSON syntax error: trailing characters after the document, expected end of file" },
	{ "json_nul_escape", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"egress\": [{\"host\": \"a\\u0000.com\"}]}\n",
	  2, 24, "JSON syntax error: \\u0000 in a string, expected text without NUL bytes" },
	{ "json_raw_control", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"mode\": \"aud\tit\"}\n",
	  2, 14, "JSON syntax error: raw control byte in a string, expected it escaped" },
	{ "json_bad_escape", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"mode\": \"\\x41\"}\n",
	  2, 12, "JSON syntax error: invalid escape in a string, expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX" },
	{ "json_duplicate_key", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"mode\": \"audit\",\n \"mode\": \"enforce\"}\n",
	  3, 2, "policy: duplicate key 'mode' (first at 2:2), expected each key once" },
	{ "json_unknown_key", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egres\": []}\n",
	  2, 3, "policy: unknown key 'egres', expected one of version, mode, agent, sidecar, exemptUids, ports, egress, dns, blockPrivate, loopback, apis, secrets, seccomp, tls" },
	{ "json_port_string", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [\n    {\"host\": \"a.com\", \"ports\": [\"443\"]}\n  ]}\n",
	  3, 33, "egress[0].ports[0]: expected a port 1..65535, got string '443'" },
	{ "json_port_float", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [{\"host\": \"a.com\", \"ports\": [443.5]}]}\n",
	  2, 42, "egress[0].ports[0]: 443.5 is not a whole number, expected a port 1..65535" },
	{ "json_host_udp", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [{\"host\": \"a.com\", \"protocol\": \"udp\"}]}\n",
	  2, 44, "egress[0].protocol: UDP cannot be proxied by name, expected a cidr rule for udp traffic" },
	{ "json_direct_host", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [{\"host\": \"a.com\",\n              \"direct\": true}]}\n",
	  3, 25, "egress[0].direct: only cidr rules can be direct, expected direct on a cidr rule (a host rule is decided by name in the proxy)" },
	{ "json_udp_all_v4_link_local", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [{\"host\": \"a.com\"},\n    {\"cidr\": \"0.0.0.0/0\", \"protocol\": \"udp\"}]}\n",
	  3, 14, "egress[1].cidr: 0.0.0.0/0 is a udp rule, which goes around the proxy, and contains link-local/metadata addresses (169.254.0.0/16, 168.63.129.16, 100.100.100.200, 192.0.0.192); expected a block that lies wholly inside one of them or contains none" },
	{ "json_direct_v6_link_local", SK_FORMAT_JSON,
	  "{\"version\": 1, \"blockPrivate\": false,\n  \"egress\": [{\"cidr\": \"::/0\", \"direct\": true}]}\n",
	  2, 23, "egress[0].cidr: ::/0 is a direct rule, which goes around the proxy, and contains link-local/metadata addresses (fe80::/10, fd00:ec2::254, fd00:ec2::253, fd00:ec2::123, ...); expected a block that lies wholly inside one of them or contains none" },
	{ "json_udp_private_block_private_last", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [{\"cidr\": \"172.0.0.0/8\", \"protocol\": \"udp\", \"direct\": true}],\n  \"blockPrivate\": true}\n",
	  2, 23, "egress[0].cidr: 172.0.0.0/8 is a direct udp rule, which goes around the proxy, and contains private addresses (172.16.0.0/12) while blockPrivate is true; expected a block that lies wholly inside one private range or contains none" },
	{ "json_cidr_host_bits", SK_FORMAT_JSON,
	  "{\"version\": 1,\n  \"egress\": [{\"cidr\": \"192.168.1.1/16\"}]}\n",
	  2, 23, "egress[0].cidr: '192.168.1.1/16' has host bits set, expected 192.168.0.0/16" },
	{ "json_uid_zero", SK_FORMAT_JSON,
	  "{\"version\": 1, \"agent\": {\"uid\": 0}}\n",
	  1, 33, "agent.uid: uid 0 is root, expected a non-root uid" },
	{ "json_version_string", SK_FORMAT_JSON,
	  "{\"version\": \"1\"}\n",
	  1, 13, "version: expected 1, got string '1'" },
	{ "json_top_array", SK_FORMAT_JSON,
	  "[{\"version\": 1}]\n",
	  1, 1, "policy: expected a mapping starting with version: 1, got a list" },
	{ "json_unicode_host", SK_FORMAT_JSON,
	  "{\"version\": 1, \"egress\": [{\"host\": \"caf\\u00e9.com\"}]}\n",
	  1, 36, "egress[0].host: invalid name 'caf\\xc3\\xa9.com': non-ASCII byte (use the IDNA A-label, xn--...), expected a DNS name like api.example.com or *.example.com" },
	{ "json_deep", SK_FORMAT_JSON,
	  "{\"version\": 1, \"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}\n",
	  1, 84, "JSON syntax error: nested too deeply, expected a flatter policy" },
	{ "json_blockprivate_string", SK_FORMAT_JSON,
	  "{\"version\": 1,\n\"blockPrivate\": \"true\"}\n",
	  2, 17, "blockPrivate: expected true or false, got string 'true'" },
	{ "json_tls_ech_grease_bad", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"tls\": {\"echGrease\": \"on\"}}\n",
	  2, 23, "tls.echGrease: 'on' is not a valid setting, expected allow or deny" },
	{ "json_tls_ech_grease_bool", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"tls\": {\"echGrease\": false}}\n",
	  2, 23, "tls.echGrease: expected allow or deny, got boolean false" },
	{ "json_tls_unknown_key", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"tls\": {\"echGrease\": \"allow\",\n         \"minVersion\": \"1.3\"}}\n",
	  3, 10, "tls: unknown key 'minVersion', expected one of echGrease" },
	{ "budget_bad_unit", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 10Mq, window: 1m}\n",
	  4, 20, "egress[0].budget.sent: '10Mq' is not a size, expected a number of bytes, optionally with Ki, Mi, Gi or Ti (e.g. 10Mi)" },
	{ "budget_decimal_unit", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 10M, window: 1m}\n",
	  4, 20, "egress[0].budget.sent: '10M' is not a size" },
	{ "budget_zero", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {received: 0, window: 1m}\n",
	  4, 24, "egress[0].budget.received: 0 would allow nothing, expected at least 1 byte (leave the key out for no limit)" },
	{ "budget_negative", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: -5, window: 1m}\n",
	  4, 20, "egress[0].budget.sent: '-5' is negative, expected a number of bytes" },
	{ "budget_too_large", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 2048Ti, window: 1m}\n",
	  4, 20, "egress[0].budget.sent: '2048Ti' is too large, expected at most 1024Ti" },
	{ "budget_no_window", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 10Mi}\n",
	  4, 13, "egress[0].budget: missing key 'window', expected a window like window: 10m (1s to 24h)" },
	{ "budget_window_too_long", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 10Mi, window: 25h}\n",
	  4, 34, "egress[0].budget.window: '25h' is longer than 24h, expected 1s to 24h" },
	{ "budget_window_no_unit", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 10Mi, window: 600}\n",
	  4, 34, "egress[0].budget.window: '600' is not a duration, expected a whole number with s, m or h" },
	{ "budget_window_zero", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 10Mi, window: 0s}\n",
	  4, 34, "egress[0].budget.window: a window of 0 counts nothing, expected 1s to 24h" },
	{ "budget_limits_nothing", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {window: 1m}\n",
	  4, 13, "egress[0].budget: limits nothing, expected at least one of sent, received, connections, queries" },
	{ "budget_unknown_key", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {sent: 1Mi, bytes: 5, window: 1m}\n",
	  4, 25, "egress[0].budget: unknown key 'bytes', expected one of sent, received, connections, queries, window" },
	{ "budget_on_direct_rule", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.96.0.0/12\n    ports: [8125]\n    direct: true\n    budget: {sent: 1Mi, window: 1m}\n",
	  6, 13, "egress[0].budget: a direct cidr rule bypasses the proxy, so nothing can count its bytes" },
	{ "budget_on_udp_rule", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - cidr: 10.96.0.0/12\n    protocol: udp\n    budget: {sent: 1Mi, window: 1m}\n",
	  5, 13, "egress[0].budget: a udp cidr rule bypasses the proxy" },
	{ "budget_queries_not_wildcard", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {queries: 100, window: 1m}\n",
	  4, 23, "egress[0].budget.queries: counts DNS names under a wildcard zone, expected it on a wildcard host rule" },
	{ "budget_connections_zero", SK_FORMAT_YAML,
	  "version: 1\negress:\n  - host: a.example.com\n    budget: {connections: 0, window: 1m}\n",
	  4, 27, "egress[0].budget.connections: 0 is out of range, expected a number of connections >= 1" },
	{ "budgets_default_bad", SK_FORMAT_YAML,
	  "version: 1\nbudgets:\n  default: {sent: 1Gb, window: 1h}\n",
	  3, 19, "budgets.default.sent: '1Gb' is not a size" },
	{ "budgets_unknown_key", SK_FORMAT_YAML,
	  "version: 1\nbudgets:\n  perHost: {sent: 1Gi, window: 1h}\n",
	  3, 3, "budgets: unknown key 'perHost', expected one of default" },
	{ "budgets_json_window_number", SK_FORMAT_JSON,
	  "{\"version\": 1,\n \"budgets\": {\"default\": {\"sent\": 1024, \"window\": true}}}\n",
	  2, 50, "budgets.default.window: expected a duration like 30s, 10m or 1h, got boolean true" },
	{ "json_tls_not_map", SK_FORMAT_JSON,
	  "{\"version\": 1, \"tls\": true}\n",
	  1, 23, "tls: expected a mapping, got boolean true" },
};

static void test_malformed_table(void **state)
{
	(void)state;
	size_t failures = 0;
	assert_true(sizeof(bad_cases) / sizeof(bad_cases[0]) >= 60);
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct sk_diags d = { 0 };
		struct sk_policy *p = (struct sk_policy *)1;
		int r = sk_policy_load_buffer_ex(bc->format == SK_FORMAT_JSON ? "t.json" : "t.yaml", bc->text,
						 strlen(bc->text), bc->format, SK_LOAD_NO_FILE_CHECKS, &p, &d);
		bool found = false;
		for (size_t j = 0; j < d.n && !found; j++)
			found = d.v[j].line == bc->line && d.v[j].col == bc->col && d.v[j].msg &&
				strstr(d.v[j].msg, bc->msg) && !strcmp(d.v[j].file, bc->format == SK_FORMAT_JSON ? "t.json" : "t.yaml");
		if (r != -EINVAL || p != NULL || !found) {
			failures++;
			(void)fprintf(stderr, "case %s: r=%d, expected %u:%u: %s; got:\n", bc->name, r, bc->line, bc->col, bc->msg);
			sk_diags_print(&d, stderr);
		}
		sk_policy_free(p == (struct sk_policy *)1 ? NULL : p);
		sk_diags_free(&d);
	}
	assert_int_equal(failures, 0);
}

/* name: is kept on the rule it names, absent names stay NULL, and it changes no decision or netns hash. */
static void test_rule_names(void **state)
{
	(void)state;
	static const char named[] = "version: 1\negress:\n  - host: a.com\n    ports: [443]\n    name: a-com\n"
				    "  - cidr: 10.96.0.0/12\n    ports: [8125]\n    protocol: udp\n    direct: true\n"
				    "    name: statsd\n  - host: b.com\n";
	static const char unnamed[] = "version: 1\negress:\n  - host: a.com\n    ports: [443]\n"
				      "  - cidr: 10.96.0.0/12\n    ports: [8125]\n    protocol: udp\n    direct: true\n"
				      "  - host: b.com\n";
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL, *q = NULL;
	assert_int_equal(sk_policy_load_buffer("n.yaml", named, strlen(named), -1, &p, &d), 0);
	assert_int_equal(sk_policy_load_buffer("u.yaml", unnamed, strlen(unnamed), -1, &q, &d), 0);
	assert_int_equal(p->n_rules, 3);
	assert_string_equal(p->rules[0].name, "a-com");
	assert_string_equal(p->rules[1].name, "statsd");
	assert_null(p->rules[2].name);
	char buf[24];
	assert_string_equal(sk_rule_label(p, 1, buf), "statsd");
	assert_string_equal(sk_rule_label(p, 2, buf), "2");
	assert_null(sk_rule_label(p, -1, buf));
	char h1[17], h2[17];
	sk_policy_netns_hash(p, h1);
	sk_policy_netns_hash(q, h2);
	assert_string_equal(h1, h2);
	sk_policy_free(p);
	sk_policy_free(q);
	sk_diags_free(&d);
}

static struct sk_policy *load_ok(const char *path, unsigned flags)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_file_ex(path, -1, flags, &p, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	assert_int_equal(d.n, 0);
	assert_non_null(p);
	assert_non_null(p->matcher);
	sk_diags_free(&d);
	return p;
}

static struct sk_policy *load_text_ok(const char *text)
{
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS, &p, &d);
	if (r < 0)
		sk_diags_print(&d, stderr);
	assert_int_equal(r, 0);
	sk_diags_free(&d);
	return p;
}

static void assert_ports(const struct sk_rule *r, size_t n, ...)
{
	va_list ap;
	assert_int_equal(r->n_ports, n);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(r->ports[i], va_arg(ap, int));
	va_end(ap);
}

static void check_agent_model(const struct sk_policy *p)
{
	char buf[128];
	assert_int_equal(p->version, 1);
	assert_int_equal(p->mode, SK_MODE_ENFORCE);
	assert_int_equal(p->agent_uid, 1000);
	assert_int_equal(p->sidecar_uid, 1337);
	assert_int_equal(p->n_exempt_uids, 0);
	assert_int_equal(p->ports.proxy, 15001);
	assert_int_equal(p->ports.dns, 15053);
	assert_int_equal(p->ports.admin, 15000);
	assert_int_equal(p->ports.api, 15080);
	assert_int_equal(p->n_rules, 8);
	static const char *const texts[] = {
		"host api.github.com ports [443]",
		"host github.com ports [443]",
		"host *.githubusercontent.com ports [443]",
		"host pypi.org ports [443] protocol tls",
		"host files.pythonhosted.org ports [443] protocol tls",
		"host registry.npmjs.org ports [443] protocol tls",
		"cidr 10.0.0.0/8 ports [5432]",
		"cidr 10.96.0.0/12 ports [8125] protocol udp direct",
	};
	for (size_t i = 0; i < 8; i++)
		assert_string_equal(sk_rule_format(&p->rules[i], buf, sizeof(buf)), texts[i]);
	assert_int_equal(p->rules[2].kind, SK_RULE_HOST);
	assert_true(p->rules[2].wildcard);
	assert_string_equal(p->rules[2].host, "githubusercontent.com");
	assert_int_equal(p->rules[7].kind, SK_RULE_CIDR);
	assert_int_equal(p->rules[7].cidr.prefix, 12);
	assert_true(p->rules[7].direct);
	assert_int_equal(p->rules[7].proto, SK_PROTO_UDP);
	assert_int_equal(p->dns.n_upstream, 1);
	assert_string_equal(p->dns.upstream[0], "resolv.conf");
	assert_int_equal(p->dns.deny, SK_DNS_DENY_NXDOMAIN);
	assert_int_equal(p->dns.max_query_length, 253);
	static const uint16_t types[] = { 1, 5, 28, 64, 65 };
	assert_int_equal(p->dns.n_allow_types, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(p->dns.allow_types[i], types[i]);
	assert_true(p->block_private);
	assert_int_equal(p->loopback, SK_LOOPBACK_ALLOW);
	assert_int_equal(p->n_apis, 0);
	assert_int_equal(p->n_import_notes, 0);
}

static void test_yaml_example_model(void **state)
{
	(void)state;
	struct sk_policy *p = load_ok("policy/examples/agent.yaml", 0);
	assert_int_equal(p->format, SK_FORMAT_YAML);
	assert_string_equal(p->source, "policy/examples/agent.yaml");
	check_agent_model(p);
	/* Rule positions point at the rule's mapping in the file ("- host:" is line 9, col 5). */
	assert_int_equal(p->rules[0].pos.line, 9);
	assert_int_equal(p->rules[0].pos.col, 5);
	assert_int_equal(p->rules[7].pos.line, 26);
	sk_policy_free(p);
}

static void test_json_example_same_model(void **state)
{
	(void)state;
	struct sk_policy *p = load_ok("policy/examples/agent.json", 0);
	struct sk_policy *y = load_ok("policy/examples/agent.yaml", 0);
	assert_int_equal(p->format, SK_FORMAT_JSON);
	check_agent_model(p);
	char a[17], b[17];
	sk_policy_netns_hash(p, a);
	sk_policy_netns_hash(y, b);
	assert_string_equal(a, b);
	assert_int_equal(p->rules[0].pos.line, 9);
	assert_int_equal(p->rules[0].pos.col, 5);
	sk_policy_free(p);
	sk_policy_free(y);
}

/* Direct and udp rules that stay valid: inside one class, or clear of both; blockPrivate: false lifts the
 * private check only; rules through the proxy (tcp, any, not direct) are not restricted here. */
static void test_bypass_rules_allowed(void **state)
{
	(void)state;
	struct sk_policy *p = load_text_ok("version: 1\n"
					   "egress:\n"
					   "  - {cidr: 10.96.0.0/12, ports: [8125], protocol: udp, direct: true}\n"
					   "  - {cidr: 198.18.1.20/32, ports: [7000], protocol: udp}\n"
					   "  - {cidr: \"2001:db8:19::20/128\", ports: [7000], protocol: udp}\n"
					   "  - {cidr: 198.18.1.30/32, ports: [7100], protocol: tcp, direct: true}\n"
					   "  - {cidr: 198.18.0.0/15, protocol: udp}\n"
					   "  - {cidr: 169.254.169.254/32, ports: [80], direct: true}\n"
					   "  - {cidr: 169.254.0.0/16, protocol: udp}\n"
					   "  - {cidr: 168.63.129.16/32, ports: [53], protocol: udp}\n"
					   "  - {cidr: \"fd00:ec2::254/128\", ports: [80], direct: true}\n"
					   "  - {cidr: \"::ffff:169.254.169.254/128\", ports: [80], direct: true}\n"
					   "  - {cidr: \"2002:a9fe:a9fe::/48\", ports: [80], direct: true}\n"
					   "  - {cidr: 100.100.100.201/32, protocol: udp}\n"
					   "  - {cidr: \"fd12::/16\", protocol: udp}\n"
					   "  - {cidr: 127.0.0.0/8, ports: [9999], protocol: udp}\n"
					   "  - {cidr: 0.0.0.0/0, ports: [443]}\n"
					   "  - {cidr: \"::/0\", protocol: tcp}\n"
					   "  - {cidr: 100.64.0.0/10, protocol: any}\n");
	assert_int_equal(p->n_rules, 17);
	sk_policy_free(p);
	p = load_text_ok("version: 1\n"
			 "egress:\n"
			 "  - {cidr: 172.0.0.0/8, protocol: udp}\n"
			 "  - {cidr: 8.0.0.0/5, direct: true}\n"
			 "  - {cidr: \"2002:a00::/24\", direct: true}\n"
			 "blockPrivate: false\n");
	assert_int_equal(p->n_rules, 3);
	assert_false(p->block_private);
	sk_policy_free(p);
	/* Each refused rule is reported, and only once (link-local before private). */
	static const char text[] = "version: 1\negress:\n"
				   "  - {cidr: 0.0.0.0/0, protocol: udp}\n"
				   "  - {cidr: 172.0.0.0/8, direct: true}\n"
				   "  - {cidr: \"::/0\", direct: true}\n";
	struct sk_diags d = { 0 };
	struct sk_policy *q = NULL;
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS, &q, &d),
			 -EINVAL);
	assert_null(q);
	assert_int_equal(d.n, 3);
	assert_non_null(strstr(d.v[0].msg, "egress[0].cidr: 0.0.0.0/0 is a udp rule"));
	assert_non_null(strstr(d.v[0].msg, "link-local/metadata"));
	assert_non_null(strstr(d.v[1].msg, "egress[1].cidr: 172.0.0.0/8 is a direct rule"));
	assert_non_null(strstr(d.v[1].msg, "private addresses (172.16.0.0/12)"));
	assert_non_null(strstr(d.v[2].msg, "egress[2].cidr: ::/0 is a direct rule"));
	assert_non_null(strstr(d.v[2].msg, "link-local/metadata"));
	sk_diags_free(&d);
}

static void test_defaults(void **state)
{
	(void)state;
	struct sk_policy *p = load_text_ok("version: 1\n");
	assert_int_equal(p->mode, SK_MODE_ENFORCE);
	assert_int_equal(p->agent_uid, 1000);
	assert_int_equal(p->sidecar_uid, 1337);
	assert_int_equal(p->ports.proxy, 15001);
	assert_int_equal(p->ports.api, 15080);
	assert_int_equal(p->n_rules, 0);
	assert_int_equal(p->dns.n_upstream, 1);
	assert_string_equal(p->dns.upstream[0], "resolv.conf");
	assert_int_equal(p->dns.n_allow_types, 5);
	assert_int_equal(p->dns.max_query_length, 253);
	assert_true(p->block_private);
	assert_int_equal(p->loopback, SK_LOOPBACK_ALLOW);
	/* No rule: everything is denied. */
	struct sk_query q = { .host = "example.com", .port = 443, .proto = SK_PROTO_TLS };
	struct sk_decision dec;
	sk_match(p, &q, &dec);
	assert_false(dec.allow);
	sk_policy_free(p);
}

static void test_normalisation(void **state)
{
	(void)state;
	struct sk_policy *p = load_text_ok("version: 1\n"
					   "mode: audit\n"
					   "exemptUids: [7, 5, 7]\n"
					   "egress:\n"
					   "  - host: API.GitHub.COM.\n"
					   "    ports: [443, 80, 443]\n"
					   "  - host: \"*.Example.ORG\"\n"
					   "  - cidr: \"2001:DB8::/32\"\n"
					   "    protocol: tcp\n"
					   "dns: {allowTypes: [aaaa, A, A], deny: refused, maxQueryLength: 100,\n"
					   "      upstream: [10.0.0.10, \"10.0.0.11:5353\", \"[fd00::a]:53\", \"fd00::b\"]}\n"
					   "loopback: [9090, 8080, 9090]\n"
					   "blockPrivate: false\n"
					   "seccomp: {allow: [io_uring_setup, mbind], deny: [mbind2]}\n");
	char buf[128];
	assert_int_equal(p->mode, SK_MODE_AUDIT);
	assert_int_equal(p->n_exempt_uids, 2);
	assert_int_equal(p->exempt_uids[0], 5);
	assert_int_equal(p->exempt_uids[1], 7);
	assert_string_equal(p->rules[0].host, "api.github.com");
	assert_ports(&p->rules[0], 2, 80, 443);
	assert_string_equal(sk_rule_format(&p->rules[1], buf, sizeof(buf)), "host *.example.org ports any");
	assert_string_equal(sk_rule_format(&p->rules[2], buf, sizeof(buf)), "cidr 2001:db8::/32 ports any protocol tcp");
	assert_int_equal(p->dns.n_allow_types, 2);
	assert_int_equal(p->dns.allow_types[0], 1);
	assert_int_equal(p->dns.allow_types[1], 28);
	assert_int_equal(p->dns.deny, SK_DNS_DENY_REFUSED);
	assert_int_equal(p->dns.max_query_length, 100);
	assert_int_equal(p->dns.n_upstream, 4);
	assert_string_equal(p->dns.upstream[2], "[fd00::a]:53");
	assert_int_equal(p->loopback, SK_LOOPBACK_PORTS);
	assert_int_equal(p->n_loopback_ports, 2);
	assert_int_equal(p->loopback_ports[0], 8080);
	assert_int_equal(p->loopback_ports[1], 9090);
	assert_false(p->block_private);
	assert_int_equal(p->seccomp.n_allow, 2);
	assert_string_equal(p->seccomp.deny[0], "mbind2");
	sk_policy_free(p);
}

static void test_api_files_checked(void **state)
{
	(void)state;
	struct sk_policy *p = load_ok("policy/testdata/api.yaml", 0);
	assert_int_equal(p->n_apis, 1);
	const struct sk_api *a = &p->apis[0];
	assert_string_equal(a->name, "anthropic");
	assert_string_equal(a->upstream, "https://api.anthropic.com/v1");
	assert_string_equal(a->header_name, "x-api-key");
	assert_string_equal(a->value_file, "policy/testdata/secret.txt");
	assert_string_equal(a->caller_token_file, "policy/testdata/secret.txt");
	assert_null(a->ca_file);
	assert_true(a->rate == 5.0);
	assert_true(a->burst == 10.0);
	assert_int_equal(a->n_methods, 2);
	assert_string_equal(a->methods[0], "POST");
	assert_string_equal(a->methods[1], "GET");
	assert_int_equal(a->n_path_prefixes, 1);
	assert_string_equal(a->path_prefixes[0], "/v1/messages");
	sk_policy_free(p);

	struct sk_diags d = { 0 };
	int r = sk_policy_load_file("policy/testdata/api-missing-secret.yaml", -1, &p, &d);
	assert_int_equal(r, -EINVAL);
	assert_null(p);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, 5);
	assert_int_equal(d.v[0].col, 43);
	assert_string_equal(d.v[0].msg, "apis[0].header.valueFile: cannot read 'policy/testdata/no-such-secret': No such "
					"file or directory, expected a readable file");
	sk_diags_free(&d);
	/* Off-node (and in the fuzzers) the same file is valid. */
	p = load_ok("policy/testdata/api-missing-secret.yaml", SK_LOAD_NO_FILE_CHECKS);
	sk_policy_free(p);
}

/* tls.upstreamCAFile: kept as given; checked to be readable where the policy is enforced (file:line:col),
 * not off-node. */
static void test_tls_upstream_ca_file(void **state)
{
	(void)state;
	static const char ok[] = "version: 1\ntls:\n  upstreamCAFile: policy/testdata/secret.txt\n";
	static const char missing[] = "version: 1\ntls:\n  echGrease: deny\n  upstreamCAFile: policy/testdata/no-such-ca.pem\n";
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", ok, sizeof(ok) - 1, -1, 0, &p, &d), 0);
	assert_string_equal(p->tls.upstream_ca_file, "policy/testdata/secret.txt");
	sk_policy_free(p);
	p = NULL;
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", missing, sizeof(missing) - 1, -1, 0, &p, &d), -EINVAL);
	assert_null(p);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, 4);
	assert_int_equal(d.v[0].col, 19);
	assert_string_equal(d.v[0].msg, "tls.upstreamCAFile: cannot read 'policy/testdata/no-such-ca.pem': No such file or "
					"directory, expected a readable file");
	sk_diags_free(&d);
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", missing, sizeof(missing) - 1, -1, SK_LOAD_NO_FILE_CHECKS, &p, &d), 0);
	assert_string_equal(p->tls.upstream_ca_file, "policy/testdata/no-such-ca.pem");
	sk_policy_free(p);
	sk_diags_free(&d);
}

static void test_all_errors_collected_in_order(void **state)
{
	(void)state;
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	int r = sk_policy_load_file("policy/testdata/many-errors.yaml", -1, &p, &d);
	assert_int_equal(r, -EINVAL);
	assert_null(p);
	assert_int_equal(d.n, 6);
	static const unsigned lines[] = { 2, 3, 5, 6, 7, 8 };
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(d.v[i].line, lines[i]);
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	sk_diags_print(&d, f);
	assert_int_equal(fclose(f), 0);   /* flushes the stream into out */
	assert_non_null(strstr(out, "policy/testdata/many-errors.yaml:7:11: egress[1].cidr: '10.0.0.1/8' has host bits set, "
				    "expected 10.0.0.0/8\n"));
	free(out);
	sk_diags_free(&d);
}

static void test_too_many_errors_capped(void **state)
{
	(void)state;
	char text[8192];
	size_t o = (size_t)snprintf(text, sizeof(text), "version: 1\negress:\n");
	for (int i = 0; i < 300; i++)
		o += (size_t)snprintf(text + o, sizeof(text) - o, "  - {host: a..b}\n");
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer("t.yaml", text, o, -1, &p, &d), -EINVAL);
	assert_int_equal(d.n, 101);
	assert_non_null(strstr(d.v[100].msg, "too many errors"));
	sk_diags_free(&d);
}

static void test_unreadable_file(void **state)
{
	(void)state;
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_file("policy/testdata/does-not-exist.yaml", -1, &p, &d), -ENOENT);
	assert_null(p);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, 0);
	assert_string_equal(d.v[0].msg, "cannot read: No such file or directory");
	sk_diags_free(&d);
	assert_int_equal(sk_policy_load_file("policy/testdata", -1, &p, &d), -EISDIR);
	sk_diags_free(&d);
}

static void test_format_detection(void **state)
{
	(void)state;
	static const char json_bom[] = "\xef\xbb\xbf\n  {\"version\": 1}";
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer("b", json_bom, sizeof(json_bom) - 1, -1, &p, &d), 0);
	assert_int_equal(p->format, SK_FORMAT_JSON);
	sk_policy_free(p);
	static const char forge[] = "{\"mode\": \"deny-all\", \"tool_domains\": []}";
	assert_int_equal(sk_policy_load_buffer("b", forge, sizeof(forge) - 1, -1, &p, &d), 0);
	assert_int_equal(p->format, SK_FORMAT_FORGE);
	sk_policy_free(p);
	/* Forcing JSON on a forge-shaped file validates it as a native policy: its keys are unknown there. */
	assert_int_equal(sk_policy_load_buffer("b", forge, sizeof(forge) - 1, SK_FORMAT_JSON, &p, &d), -EINVAL);
	assert_true(d.n >= 1);
	assert_non_null(strstr(d.v[0].msg, "unknown key 'mode'") ? d.v[0].msg : strstr(d.v[0].msg, "missing key"));
	sk_diags_free(&d);
	static const char yaml[] = "# comment\nversion: 1\n";
	assert_int_equal(sk_policy_load_buffer("b", yaml, sizeof(yaml) - 1, -1, &p, &d), 0);
	assert_int_equal(p->format, SK_FORMAT_YAML);
	sk_policy_free(p);
	assert_int_equal(d.n, 0);
}

static void test_forge_deny_all(void **state)
{
	(void)state;
	struct sk_policy *p = load_ok("policy/testdata/forge-deny-all.json", 0);
	assert_int_equal(p->format, SK_FORMAT_FORGE);
	assert_int_equal(p->n_rules, 0);
	assert_int_equal(p->mode, SK_MODE_ENFORCE);
	assert_true(p->block_private);
	assert_int_equal(p->n_import_notes, 5);
	assert_string_equal(p->import_notes[0], "mapped: mode deny-all -> no egress rules (everything denied)");
	assert_string_equal(p->import_notes[1], "ignored: allowed_domains (1 name): mode deny-all allows nothing");
	assert_string_equal(p->import_notes[2], "ignored: allowed_private_cidrs (1 entry): mode deny-all allows nothing");
	assert_string_equal(p->import_notes[3], "default: allow_private_ips absent -> blockPrivate true");
	assert_string_equal(p->import_notes[4], "kept: profile strict (informational; the mode and domain lists decide)");
	sk_policy_free(p);
}

static void test_forge_allowlist(void **state)
{
	(void)state;
	char buf[128];
	struct sk_policy *p = load_ok("policy/testdata/forge-allowlist.json", 0);
	assert_int_equal(p->mode, SK_MODE_ENFORCE);
	assert_int_equal(p->n_rules, 4);  /* api.example.com twice (case differs): one rule */
	assert_string_equal(sk_rule_format(&p->rules[0], buf, sizeof(buf)), "host api.example.com ports [80,443]");
	assert_string_equal(sk_rule_format(&p->rules[1], buf, sizeof(buf)), "host *.cdn.example.net ports [80,443]");
	assert_string_equal(sk_rule_format(&p->rules[2], buf, sizeof(buf)), "host pypi.org ports [80,443]");
	assert_string_equal(sk_rule_format(&p->rules[3], buf, sizeof(buf)), "host registry.npmjs.org ports [80,443]");
	assert_string_equal(p->import_notes[0], "mapped: mode allowlist -> 4 host rules on ports 80,443");
	assert_string_equal(p->import_notes[1],
			    "mapped: domains from allowed_domains 2 + tool_domains 2 + all_domains 1, 1 duplicate dropped");
	struct sk_query q = { .host = "x.cdn.example.net", .port = 80, .proto = SK_PROTO_HTTP };
	struct sk_decision dec;
	sk_match(p, &q, &dec);
	assert_true(dec.allow);
	assert_int_equal(dec.rule, 1);
	q.port = 8080;
	sk_match(p, &q, &dec);
	assert_false(dec.allow);
	sk_policy_free(p);
}

static void test_forge_dev_open(void **state)
{
	(void)state;
	struct sk_policy *p = load_ok("policy/testdata/forge-dev-open.json", 0);
	assert_int_equal(p->mode, SK_MODE_AUDIT);
	assert_int_equal(p->n_rules, 1);
	assert_string_equal(p->import_notes[0], "mapped: mode dev-open -> mode audit (nothing denied, would-be denials "
						"logged) with 1 host rule on ports 80,443");
	struct sk_query q = { .host = "anything.example.com", .port = 443, .proto = SK_PROTO_TLS };
	struct sk_decision dec;
	sk_match(p, &q, &dec);
	assert_true(dec.allow);
	assert_int_equal(dec.reason, SK_REASON_AUDIT);
	sk_policy_free(p);
}

static void test_forge_private(void **state)
{
	(void)state;
	char buf[128];
	struct sk_policy *p = load_ok("policy/testdata/forge-private.json", 0);
	assert_false(p->block_private);
	assert_int_equal(p->n_rules, 3);
	assert_string_equal(sk_rule_format(&p->rules[1], buf, sizeof(buf)), "cidr 10.0.0.0/8 ports [80,443]");
	assert_string_equal(sk_rule_format(&p->rules[2], buf, sizeof(buf)), "cidr fd00::/8 ports [80,443]");
	bool seen = false;
	for (size_t i = 0; i < p->n_import_notes; i++)
		seen |= !strcmp(p->import_notes[i], "mapped: allow_private_ips true -> blockPrivate false");
	assert_true(seen);
	sk_policy_free(p);
}

static void test_forge_errors(void **state)
{
	(void)state;
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_file("policy/testdata/forge-bad.json", -1, &p, &d), -EINVAL);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.v[0].line, 2);
	assert_int_equal(d.v[0].col, 11);
	assert_string_equal(d.v[0].msg, "mode: 'allow-some' is not a forge mode, expected deny-all, allowlist or dev-open");
	assert_int_equal(d.v[1].line, 3);
	assert_int_equal(d.v[1].col, 39);
	assert_non_null(strstr(d.v[1].msg, "allowed_domains[1]: invalid name 'bad..example': empty label"));
	assert_int_equal(d.v[2].line, 4);
	assert_int_equal(d.v[2].col, 3);
	assert_non_null(strstr(d.v[2].msg, "forge allowlist: unknown key 'extra'"));
	sk_diags_free(&d);
}

/* FNV-1a 64 written out here, so the canonical form documented in format.c is pinned by this test. */
static void fnv_hex(const char *s, char out[17])
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	(void)snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* The content hash names the exact bytes loaded: FNV-1a 64 of the file, so any edit (even one the model
 * does not see, like a comment) moves it, and the same bytes give the same hash in every process. */
static void test_content_hash(void **state)
{
	(void)state;
	char want[17];
	const char *text = "version: 1\negress:\n  - {host: a.com}\n";
	struct sk_policy *p = load_text_ok(text);
	fnv_hex(text, want);
	assert_string_equal(p->content_hash, want);
	sk_policy_free(p);
	p = load_text_ok("version: 1\negress:\n  - {host: a.com}  # same rules\n");
	assert_string_not_equal(p->content_hash, want);
	assert_int_equal(strlen(p->content_hash), 16);
	sk_policy_free(p);
	/* stockade-init's load leaves it out, and nothing else changes */
	struct sk_diags d = { 0 };
	struct sk_policy *a = NULL, *b = NULL;
	assert_int_equal(sk_policy_load_buffer_ex("t", text, strlen(text), -1, SK_LOAD_NO_CONTENT_HASH, &a, &d), 0);
	assert_int_equal(sk_policy_load_buffer_ex("t", text, strlen(text), -1, 0, &b, &d), 0);
	assert_string_equal(a->content_hash, "");
	assert_string_equal(b->content_hash, want);
	char ha[17], hb[17];
	sk_policy_netns_hash(a, ha);
	sk_policy_netns_hash(b, hb);
	assert_string_equal(ha, hb);
	assert_int_equal(a->n_rules, b->n_rules);
	sk_policy_free(a);
	sk_policy_free(b);
	sk_diags_free(&d);
}

static void test_netns_hash(void **state)
{
	(void)state;
	char a[17], b[17], want[17];
	struct sk_policy *p = load_ok("policy/examples/agent.yaml", 0);
	sk_policy_netns_hash(p, a);
	fnv_hex("stockade-netns v1\n"
		"agent 1000\n"
		"sidecar 1337\n"
		"exempt \n"
		"ports proxy=15001 dns=15053 admin=15000 api=15080\n"
		"loopback allow\n"
		"rule 7 cidr 10.96.0.0/12 ports [8125] protocol udp direct\n", want);
	assert_string_equal(a, want);
	sk_policy_free(p);

	/* Same netns content, different spelling, order of keys and host rules: same hash. */
	p = load_text_ok("version: 1\nsidecar: {uid: 1337}\nagent: {uid: 1000}\nexemptUids: [9, 8]\n"
			 "loopback: [22, 21]\negress:\n  - {host: a.com}\n  - {cidr: 10.0.0.0/8, ports: [5, 4, 5], direct: true}\n");
	sk_policy_netns_hash(p, a);
	sk_policy_free(p);
	p = load_text_ok("{\"version\": 1, \"exemptUids\": [8, 9], \"loopback\": [21, 22],\n"
			 " \"egress\": [{\"host\": \"b.com\"}, {\"cidr\": \"10.0.0.0/8\", \"direct\": true, \"ports\": [4, 5]}]}");
	sk_policy_netns_hash(p, b);
	assert_string_equal(a, b);
	fnv_hex("stockade-netns v1\nagent 1000\nsidecar 1337\nexempt 8,9\n"
		"ports proxy=15001 dns=15053 admin=15000 api=15080\nloopback ports 21,22\n"
		"rule 1 cidr 10.0.0.0/8 ports [4,5] direct\n", want);
	assert_string_equal(b, want);
	sk_policy_free(p);

	/* IPv6, any port, a rule whose port list is longer than the hash's line buffer, proxied rules
	 * skipped: the hash is still the one of the whole text */
	char text[4096], canon[4096];
	size_t o = (size_t)snprintf(text, sizeof(text), "version: 1\negress:\n  - cidr: fd00:ab::/32\n    protocol: udp\n"
				    "  - cidr: 10.9.0.0/16\n  - cidr: 0.0.0.0/32\n    direct: true\n    ports: [");
	size_t c = (size_t)snprintf(canon, sizeof(canon), "stockade-netns v1\nagent 1000\nsidecar 1337\nexempt \n"
				    "ports proxy=15001 dns=15053 admin=15000 api=15080\nloopback allow\n"
				    "rule 0 cidr fd00:ab::/32 ports any protocol udp\nrule 2 cidr 0.0.0.0/32 ports [");
	for (unsigned port = 1000; port < 1200; port++) {
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%u", port > 1000 ? ", " : "", port);
		c += (size_t)snprintf(canon + c, sizeof(canon) - c, "%s%u", port > 1000 ? "," : "", port);
	}
	assert_true(o + 8 < sizeof(text) && c + 16 < sizeof(canon));
	(void)snprintf(text + o, sizeof(text) - o, "]\n");
	(void)snprintf(canon + c, sizeof(canon) - c, "] direct\n");
	p = load_text_ok(text);
	sk_policy_netns_hash(p, a);
	fnv_hex(canon, want);
	assert_string_equal(a, want);
	sk_policy_free(p);

	/* IPv6, no ports, udp only: the piecewise text matches the printf form. */
	p = load_text_ok("version: 1\negress:\n  - {cidr: \"2001:db8::/32\", protocol: udp}\n"
			 "  - {cidr: 192.0.2.0/24, ports: [65535], direct: true, protocol: tcp}\n");
	sk_policy_netns_hash(p, a);
	fnv_hex("stockade-netns v1\nagent 1000\nsidecar 1337\nexempt \n"
		"ports proxy=15001 dns=15053 admin=15000 api=15080\nloopback allow\n"
		"rule 0 cidr 2001:db8::/32 ports any protocol udp\n"
		"rule 1 cidr 192.0.2.0/24 ports [65535] protocol tcp direct\n", want);
	assert_string_equal(a, want);
	sk_policy_free(p);

	/* Any netns change moves it. */
	p = load_text_ok("version: 1\nagent: {uid: 1001}\n");
	sk_policy_netns_hash(p, a);
	sk_policy_free(p);
	p = load_text_ok("version: 1\n");
	sk_policy_netns_hash(p, b);
	assert_string_not_equal(a, b);
	sk_policy_free(p);
	p = load_text_ok("version: 1\nports: {proxy: 15002}\n");
	sk_policy_netns_hash(p, a);
	assert_string_not_equal(a, b);
	sk_policy_free(p);
}

/* tls.echGrease: allow | deny in both formats; absent (or an empty tls mapping) is deny; proxy-only, so
 * it leaves the netns hash alone (a live reload may change it). */
static void test_tls_ech_grease(void **state)
{
	(void)state;
	char a[17], b[17];
	struct sk_policy *p = load_text_ok("version: 1\n");
	assert_false(p->tls.ech_grease_allow);
	sk_policy_netns_hash(p, a);
	sk_policy_free(p);

	p = load_text_ok("version: 1\ntls:\n  echGrease: allow\n");
	assert_true(p->tls.ech_grease_allow);
	sk_policy_netns_hash(p, b);
	assert_string_equal(a, b);
	sk_policy_free(p);

	p = load_text_ok("version: 1\ntls: {echGrease: deny}\n");
	assert_false(p->tls.ech_grease_allow);
	sk_policy_free(p);

	p = load_text_ok("version: 1\ntls: {}\n");
	assert_false(p->tls.ech_grease_allow);
	sk_policy_free(p);

	p = load_text_ok("version: 1\ntls: {echGrease: \"allow\"}\n");  /* quoted: still the string */
	assert_true(p->tls.ech_grease_allow);
	sk_policy_free(p);

	p = load_text_ok("{\"version\": 1, \"tls\": {\"echGrease\": \"allow\"}}");
	assert_int_equal(p->format, SK_FORMAT_JSON);
	assert_true(p->tls.ech_grease_allow);
	sk_policy_netns_hash(p, b);
	assert_string_equal(a, b);
	sk_policy_free(p);

	p = load_text_ok("{\"version\": 1, \"tls\": {\"echGrease\": \"deny\"}}");
	assert_false(p->tls.ech_grease_allow);
	sk_policy_free(p);

	/* The forge format has no such field: an import keeps the default. */
	p = load_text_ok("{\"profile\": \"strict\", \"mode\": \"allowlist\", \"allowed_domains\": [\"a.example.com\"]}");
	assert_int_equal(p->format, SK_FORMAT_FORGE);
	assert_false(p->tls.ech_grease_allow);
	sk_policy_free(p);
}

static void test_yaml_scalar_typing(void **state)
{
	(void)state;
	/* !!str makes a number a string; quoted "true" is not a boolean; ~ is null. */
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	static const char t1[] = "version: 1\negress:\n  - host: !!str 42.example\n";
	assert_int_equal(sk_policy_load_buffer("t", t1, sizeof(t1) - 1, -1, &p, &d), 0);
	sk_policy_free(p);
	static const char t2[] = "version: 1\nmode: ~\n";
	assert_int_equal(sk_policy_load_buffer("t", t2, sizeof(t2) - 1, -1, &p, &d), -EINVAL);
	assert_string_equal(d.v[0].msg, "mode: expected enforce or audit, got null");
	sk_diags_free(&d);
}

/* The plain-block fast path of the YAML loader must build exactly libyaml's tree (kinds, scalar kinds,
 * text, line:col of every node), and leave a document outside its corner of YAML to libyaml untouched. */
static void tree_eq(const struct sk_node *a, const struct sk_node *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->line, b->line);
	assert_int_equal(a->col, b->col);
	assert_int_equal(a->n, b->n);
	if (a->kind == SK_NODE_SCALAR) {
		assert_int_equal(a->skind, b->skind);
		assert_string_equal(a->text, b->text);
	}
	for (size_t i = 0; i < a->n; i++)
		tree_eq(a->items[i], b->items[i]);
}

static void test_budgets(void **state)
{
	(void)state;
	char buf[128];
	struct sk_policy *p = load_text_ok("version: 1\n"
					   "budgets:\n  default: {sent: 100Mi, queries: 50, window: 1h}\n"
					   "egress:\n"
					   "  - host: api.github.com\n    ports: [443]\n"
					   "    budget: {sent: 20Mi, received: 2Gi, connections: 500, window: 10m}\n"
					   "  - host: \"*.example.com\"\n"
					   "  - host: plain.example.org\n    budget: {received: 1048576, window: 30s}\n"
					   "  - cidr: 10.96.0.0/12\n    ports: [8125]\n    direct: true\n"
					   "  - cidr: 10.0.0.0/8\n    ports: [5432]\n"
					   "  - host: \"*.zone.test\"\n    budget: {queries: 7, window: 90s}\n");
	assert_int_equal(p->n_rules, 6);
	const struct sk_budget *b = &p->rules[0].budget;
	assert_int_equal(b->sent, 20u << 20);
	assert_int_equal(b->received, 2ull << 30);
	assert_int_equal(b->connections, 500);
	assert_int_equal(b->window_ms, 600000);
	assert_false(b->from_default);
	assert_string_equal(sk_budget_format(b, buf, sizeof(buf)), "sent 20Mi received 2Gi connections 500 window 10m");
	/* the default, queries included, on the wildcard rule */
	assert_true(p->rules[1].budget.from_default);
	assert_string_equal(sk_budget_format(&p->rules[1].budget, buf, sizeof(buf)), "sent 100Mi queries 50 window 1h");
	assert_string_equal(sk_budget_format(&p->rules[2].budget, buf, sizeof(buf)), "received 1Mi window 30s");
	/* a direct rule never gets one; a proxied cidr rule gets the default without queries */
	assert_int_equal(p->rules[3].budget.window_ms, 0);
	assert_string_equal(sk_budget_format(&p->rules[3].budget, buf, sizeof(buf)), "none");
	assert_true(p->rules[4].budget.from_default);
	assert_string_equal(sk_budget_format(&p->rules[4].budget, buf, sizeof(buf)), "sent 100Mi window 1h");
	assert_string_equal(sk_budget_format(&p->rules[5].budget, buf, sizeof(buf)), "queries 7 window 90s");
	assert_int_equal(p->budget_default.sent, 100u << 20);
	sk_policy_free(p);

	/* no budgets anywhere: nothing set */
	p = load_text_ok("version: 1\negress:\n  - host: a.example.com\n");
	assert_int_equal(p->rules[0].budget.window_ms, 0);
	assert_int_equal(p->budget_default.window_ms, 0);
	sk_policy_free(p);

	/* a default of queries only leaves non-wildcard rules without a budget */
	p = load_text_ok("version: 1\nbudgets: {default: {queries: 5, window: 1m}}\negress:\n  - host: a.example.com\n");
	assert_int_equal(p->rules[0].budget.window_ms, 0);
	sk_policy_free(p);
}

static void test_budget_cap(void **state)
{
	(void)state;
	/* one rule past the cap, all budgeted by the default: refused where the default is */
	size_t n = SK_BUDGET_MAX_RULES + 1, cap = 64 + n * 40, o = 0;
	char *t = malloc(cap);
	assert_non_null(t);
	o += (size_t)snprintf(t + o, cap - o, "version: 1\nbudgets:\n  default: {sent: 1Mi, window: 1m}\negress:\n");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(t + o, cap - o, "  - host: h%zu.example.com\n", i);
	struct sk_diags d = { 0 };
	struct sk_policy *p = NULL;
	assert_int_equal(sk_policy_load_buffer_ex("t.yaml", t, o, -1, SK_LOAD_NO_FILE_CHECKS, &p, &d), -EINVAL);
	assert_null(p);
	if (d.n != 1)
		sk_diags_print(&d, stderr);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, 3);
	assert_string_equal(d.v[0].msg, "budgets: 4097 rules have a budget, expected at most 4096 (one counter each in the sidecar)");
	sk_diags_free(&d);
	free(t);
}

static void test_yaml_fast_path_same_tree(void **state)
{
	(void)state;
	static const char *const fast[] = {
		"version: 1\n",
		"# c\nversion: 1   # trailing\nmode: enforce\negress:\n- host: \"*.example.com\"\n  ports: [443, 8443]"
		"   # two\n- cidr: fd00::/8\n  ports:\n  - 53\n  - 5353\n  protocol: udp\n\n  # between\n"
		"-   host: 'api.github.com'\n    ports: [ 443 ]\n- cidr: 10.0.0.0/8\n  direct: true\n",
		"agent:\n  uid: 1000\nsidecar:\n    uid: 1337\nexemptUids:\n- 0\n- 12\nseccomp:\n  allow:\n    - ptrace\n"
		"  deny: []\nx:\n  - a\n  - b: -1\n    c: .5\n    d: ~\n    e: null\n    f: TRUE\n    g: 0x1F\n"
		"    h: 1e5\n    i: a b c\n    j: a#b\n    k: http://x:80/y",
	};
	static const char *const slow[] = {
		"", "# only a comment\n", "a: {b: 1}\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "---\na: 1\n",
		"a: 1\n---\nb: 2\n", "a:\tb\n", "a: |\n  text\n", "a: b\n  c\n", "a:\n", "a: \"x\\ty\"\n",
		"a: 1\n...\n", "a:\n  b: 1\n--- # x\n", "...\n", "a: [1,\n  2]\n", "a: b: c\n", "a: - b\n", "a: 1\n b: 2\n", "- - a\n", "a : b\n", "a: 'it''s'\n",
		"a: \xc3\xa9\n", "a: b\r\n", "? a\n: b\n", "a: [1, ]\n", "a: [x: 1]\n",
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(fast) + SK_ARRAY_SIZE(slow); i++) {
		const bool want_fast = i < SK_ARRAY_SIZE(fast);
		const char *doc = want_fast ? fast[i] : slow[i - SK_ARRAY_SIZE(fast)];
		struct sk_diags d1 = { 0 }, d2 = { 0 };
		struct sk_load_ctx c1 = { .file = "t", .diags = &d1 }, c2 = { .file = "t", .diags = &d2 };
		struct sk_node *a = NULL;
		int r = sk_yaml_parse_simple(&c1, doc, strlen(doc), &a);
		if (r != (want_fast ? 1 : 0))
			fail_msg("fast path %s for: %s", r ? "taken" : "refused", doc);
		assert_int_equal(d1.n, 0);
		if (want_fast) {
			struct sk_node *b = sk_yaml_parse_events(&c2, doc, strlen(doc));
			assert_non_null(b);
			tree_eq(a, b);
			assert_int_equal(c1.n_nodes, c2.n_nodes);
			sk_node_free(b);
		} else {
			assert_null(a);
			assert_int_equal(c1.n_nodes, 0);
		}
		sk_node_free(a);
		sk_diags_free(&d1);
		sk_diags_free(&d2);
	}
}

/* Loads text with the given extra flags; the model (or NULL) and its messages. */
static struct sk_policy *load_both_way(const char *text, unsigned flags, struct sk_diags *d, int *r)
{
	struct sk_policy *p = NULL;
	*r = sk_policy_load_buffer_ex("t.yaml", text, strlen(text), -1, SK_LOAD_NO_FILE_CHECKS | flags, &p, d);
	return p;
}

/* The two loads gave the same answer: the same messages at the same positions, or the same rules. */
static void same_load(const char *text, struct sk_policy *a, const struct sk_diags *da, int ra,
		      struct sk_policy *b, const struct sk_diags *db, int rb)
{
	if (ra != rb || da->n != db->n) {
		sk_diags_print(da, stderr);
		(void)fprintf(stderr, "-- general paths:\n");
		sk_diags_print(db, stderr);
		fail_msg("fast and general loads differ (%d/%zu vs %d/%zu) for:\n%s", ra, da->n, rb, db->n, text);
	}
	for (size_t i = 0; i < da->n; i++) {
		if (da->v[i].line != db->v[i].line || da->v[i].col != db->v[i].col || strcmp(da->v[i].msg, db->v[i].msg))
			fail_msg("message %zu differs: %u:%u: %s vs %u:%u: %s\nfor:\n%s", i, da->v[i].line, da->v[i].col,
				 da->v[i].msg, db->v[i].line, db->v[i].col, db->v[i].msg, text);
	}
	assert_true((a == NULL) == (b == NULL));
	if (!a || !b)
		return;
	assert_int_equal(a->n_rules, b->n_rules);
	for (size_t i = 0; i < a->n_rules; i++) {
		const struct sk_rule *x = &a->rules[i], *y = &b->rules[i];
		char fx[256], fy[256];
		assert_string_equal(sk_rule_format(x, fx, sizeof(fx)), sk_rule_format(y, fy, sizeof(fy)));
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->direct, y->direct);
		assert_int_equal(x->proto, y->proto);
		assert_int_equal(x->pos.line, y->pos.line);
		assert_int_equal(x->pos.col, y->pos.col);
		assert_memory_equal(&x->cidr, &y->cidr, sizeof(x->cidr));
		assert_int_equal(x->n_ports, y->n_ports);
		if (x->n_ports)
			assert_memory_equal(x->ports, y->ports, x->n_ports * sizeof(*x->ports));
	}
	char ha[17], hb[17];
	sk_policy_netns_hash(a, ha);
	sk_policy_netns_hash(b, hb);
	assert_string_equal(ha, hb);
}

/* The loaders' fast paths (the plain-block YAML reader, the validator's quiet checks of a rule's ports,
 * protocol, direct and cidr) against the general ones (libyaml, each value through its message-writing
 * check): the same text, well-formed or not, gives the same rules, or the same messages at the same
 * line:col. Each case is one rule among others, so its path is egress[2]. */
static void test_fast_paths_same_result(void **state)
{
	(void)state;
	static const struct {
		bool ok;
		const char *rule;
	} cases[] = {
		{ true, "cidr: 10.0.0.16/28\n    ports: [5000]\n    protocol: tcp\n    direct: true" },
		{ true, "cidr: 10.0.0.32/28\n    ports: [6000, 443, 6000, 1, 65535]\n    protocol: udp" },
		{ true, "cidr: fd00::/8\n    ports: [53]" },
		{ true, "cidr: 2001:db8::/32\n    direct: false" },
		{ true, "cidr: 10.1.0.0/16\n    ports: [+443, 0443, 00080]" },
		{ true, "cidr: 10.3.0.0/16\n    protocol: any\n    direct: True" },
		{ true, "cidr: 10.4.0.0/16\n    direct: FALSE\n    protocol: tcp" },
		{ true, "cidr: \"10.5.0.0/16\"\n    ports:\n    - 80\n    - 81" },
		{ true, "cidr: 10.6.0.7\n    protocol: udp" },
		{ true, "cidr: ::ffff:10.0.0.0/104\n    direct: true" },
		{ true, "host: api.example.com\n    ports: [443]\n    protocol: tls" },
		{ true, "host: \"*.Example.COM.\"\n    protocol: http" },
		{ true, "ports: [22]\n    cidr: 10.7.0.0/16\n    direct: true\n    name: ssh" },
		{ false, "cidr: 10.0.0.0/8\n    ports: [0]" },
		{ false, "cidr: 10.0.0.0/8\n    ports: [65536]" },
		{ false, "cidr: 10.0.0.0/8\n    ports: [123456, 1234567]" },
		{ false, "cidr: 10.0.0.0/8\n    ports: [1e3, 443.5, 0x1bb, -1, null, true, \"443\", [1], {a: 1}]" },
		{ false, "cidr: 10.0.0.0/8\n    ports: []" },
		{ false, "cidr: 10.0.0.0/8\n    ports: 443" },
		{ false, "cidr: 10.0.0.0/8\n    ports: {a: 1}" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: TCP" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: quic" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: 1" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: [tcp]" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: \"\"" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: tcpx" },
		{ false, "cidr: 10.0.0.0/8\n    protocol: tc" },
		{ false, "cidr: 10.0.0.0/8\n    direct: yes" },
		{ false, "cidr: 10.0.0.0/8\n    direct: 1" },
		{ false, "cidr: 10.0.0.0/8\n    direct: \"true\"" },
		{ false, "cidr: 10.0.0.0/8\n    direct: ~" },
		{ false, "cidr: 10.0.0.0/8\n    direct: true\n    protocol: tls" },
		{ false, "cidr: 10.0.0.1/8" },
		{ false, "cidr: 2001:db8::1/32\n    direct: true" },
		{ false, "cidr: 10.0.0.0/33" },
		{ false, "cidr: 10.0.0.0/08" },
		{ false, "cidr: 10.0.0/8" },
		{ false, "cidr: 010.0.0.0/8" },
		{ false, "cidr: 10.0.0.0/ 8" },
		{ false, "cidr: \"\"" },
		{ false, "cidr: 10" },
		{ false, "cidr: [10.0.0.0/8]" },
		{ false, "cidr: ~" },
		{ false, "cidr: 169.254.0.0/15\n    protocol: udp" },
		{ false, "cidr: 0.0.0.0/0\n    direct: true" },
		{ false, "cidr: 172.0.0.0/8\n    direct: true" },
		{ false, "cidr: 10.0.0.0/8\n    host: a.example.com" },
		{ false, "ports: [443]" },
		{ false, "cidr: 10.0.0.0/8\n    port: [443]" },
		{ false, "cidr: 10.0.0.0/8\n    ports: [1]\n    ports: [2]" },
		{ false, "cidr: 10.0.0.0/8\n    1: x" },
		{ false, "cidr: 10.0.0.0/8\n    ports: [0]\n    protocol: quic\n    direct: yes\n    name: Bad" },
		{ false, "host: 10.0.0.1\n    ports: [0]" },
		{ false, "host: a.example.com\n    protocol: udp\n    direct: true" },
	};
	for (size_t i = 0; i < SK_ARRAY_SIZE(cases); i++) {
		char text[1024];
		(void)snprintf(text, sizeof(text),
			 "version: 1\negress:\n  - cidr: 10.200.0.0/16\n    ports: [1]\n  - host: a.example.org\n"
			 "  - %s\n  - cidr: fd00:1::/32\n    protocol: udp\n", cases[i].rule);
		struct sk_diags da = { 0 }, db = { 0 };
		int ra, rb;
		struct sk_policy *a = load_both_way(text, 0, &da, &ra);
		struct sk_policy *b = load_both_way(text, SK_LOAD_GENERAL_PATHS, &db, &rb);
		if ((ra == 0) != cases[i].ok) {
			sk_diags_print(&da, stderr);
			fail_msg("case %zu: load %s, expected %s", i, ra ? "failed" : "succeeded", cases[i].ok ? "success" : "failure");
		}
		same_load(text, a, &da, ra, b, &db, rb);
		sk_policy_free(a);
		sk_policy_free(b);
		sk_diags_free(&da);
		sk_diags_free(&db);
	}
	/* the bench's shape, long: every rule through the fast paths, the same model */
	size_t cap = 1u << 20, o = 0;
	char *t = malloc(cap);
	assert_non_null(t);
	o += (size_t)snprintf(t + o, cap - o, "version: 1\negress:\n");
	for (unsigned i = 0; i < 2000; i++)
		o += (size_t)snprintf(t + o, cap - o, i % 2 ? "  - cidr: 10.%u.%u.%u/28\n    ports: [%u]\n    protocol: udp\n" :
						       "  - cidr: 10.%u.%u.%u/28\n    ports: [%u]\n    protocol: tcp\n    direct: true\n",
				      i / 4096, (i / 16) % 256, (i % 16) * 16, 5000 + i % 100);
	struct sk_diags da = { 0 }, db = { 0 };
	int ra, rb;
	struct sk_policy *a = load_both_way(t, 0, &da, &ra);
	struct sk_policy *b = load_both_way(t, SK_LOAD_GENERAL_PATHS, &db, &rb);
	assert_int_equal(ra, 0);
	assert_int_equal(a->n_rules, 2000);
	same_load("(2000 rules)", a, &da, ra, b, &db, rb);
	sk_policy_free(a);
	sk_policy_free(b);
	free(t);
}

/* The plain-block reader's byte scan, eight bytes at a time: a control byte (but newline), DEL or a
 * non-ASCII byte at any position of a word sends the text to libyaml; printable ASCII does not. */
static void test_yaml_fast_path_byte_classes(void **state)
{
	(void)state;
	static const unsigned char bad[] = { 0x00, 0x01, 0x09, 0x0b, 0x0d, 0x1f, 0x7f, 0x80, 0x8a, 0xa0, 0xff };
	static const unsigned char good[] = { 'a', 'Z', '~', '0', '.' };
	for (size_t pos = 0; pos < 24; pos++) {
		for (size_t k = 0; k < SK_ARRAY_SIZE(bad) + SK_ARRAY_SIZE(good); k++) {
			const bool is_bad = k < SK_ARRAY_SIZE(bad);
			char doc[64] = "k: vvvvvvvvvvvvvvvvvvvvvvvv\nv: 1\n";
			doc[3 + pos] = (char)(is_bad ? bad[k] : good[k - SK_ARRAY_SIZE(bad)]);
			const size_t len = 3 + 24 + 6;
			struct sk_diags d = { 0 };
			struct sk_load_ctx c = { .file = "t", .diags = &d };
			struct sk_node *t = NULL;
			const int r = sk_yaml_parse_simple(&c, doc, len, &t);
			if (r != !is_bad)
				fail_msg("byte 0x%02x at %zu: fast path %s", (unsigned char)doc[3 + pos], pos,
					 r ? "taken" : "refused");
			sk_node_free(t);
			sk_diags_free(&d);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_table),
		cmocka_unit_test(test_bypass_rules_allowed),
		cmocka_unit_test(test_yaml_example_model),
		cmocka_unit_test(test_json_example_same_model),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_normalisation),
		cmocka_unit_test(test_api_files_checked),
		cmocka_unit_test(test_tls_upstream_ca_file),
		cmocka_unit_test(test_all_errors_collected_in_order),
		cmocka_unit_test(test_too_many_errors_capped),
		cmocka_unit_test(test_unreadable_file),
		cmocka_unit_test(test_format_detection),
		cmocka_unit_test(test_forge_deny_all),
		cmocka_unit_test(test_forge_allowlist),
		cmocka_unit_test(test_forge_dev_open),
		cmocka_unit_test(test_forge_private),
		cmocka_unit_test(test_forge_errors),
		cmocka_unit_test(test_netns_hash),
		cmocka_unit_test(test_content_hash),
		cmocka_unit_test(test_yaml_scalar_typing),
		cmocka_unit_test(test_tls_ech_grease),
		cmocka_unit_test(test_rule_names),
		cmocka_unit_test(test_yaml_fast_path_same_tree),
		cmocka_unit_test(test_fast_paths_same_result),
		cmocka_unit_test(test_yaml_fast_path_byte_classes),
		cmocka_unit_test(test_budgets),
		cmocka_unit_test(test_budget_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* policy/seccomp/record_test.c — the seccomp audit record reader: the three forms the kernel's text takes
 * (lines copied from this machine's /dev/kmsg and an auditd log), the hex form of untrusted strings, and the
 * hostile lines it refuses (a record quoted inside another message, repeated or missing fields, a comm that
 * tries to smuggle fields, a NUL); the pod from /proc/PID/cgroup for both cgroup drivers; the NDJSON line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "policy/seccomp/record.h"

static enum sk_scmp_rec_result parse(const char *line, struct sk_scmp_record *r)
{
	memset(r, 0x5a, sizeof(*r));
	return sk_scmp_record_parse(line, strlen(line), r);
}

static const char kmsg_unshare[] =
	"5,3327,35996200317,-;audit: type=1326 audit(1795923324.745:135): auid=4294967295 uid=0 gid=0 "
	"ses=4294967295 pid=3084 comm=\"unshare\" exe=\"/usr/bin/unshare\" sig=0 arch=c000003e syscall=272 "
	"compat=0 ip=0x7f73853b80f7 code=0x50000\n SUBSYSTEM=audit\n";

static void test_kmsg_record(void **state)
{
	(void)state;
	struct sk_scmp_record r;
	assert_int_equal(parse(kmsg_unshare, &r), SK_SCMP_REC_OK);
	assert_string_equal(r.stamp, "1795923324.745:135");
	assert_int_equal(r.pid, 3084);
	assert_true(r.has_uid);
	assert_int_equal(r.uid, 0);
	assert_string_equal(r.comm, "unshare");
	assert_string_equal(r.exe, "/usr/bin/unshare");
	assert_int_equal(r.arch, 0xc000003eu);
	assert_int_equal(r.syscall, 272);
	assert_int_equal(r.code, 0x50000);
	assert_int_equal(r.sig, 0);
	assert_false(r.compat);
	assert_string_equal(sk_scmp_record_action(r.code), "errno");
}

static void test_other_forms(void **state)
{
	(void)state;
	struct sk_scmp_record r;
	/* dmesg / journalctl -k -o cat, a killed i386 entry */
	assert_int_equal(parse("audit: type=1326 audit(1795921958.461:133): auid=4294967295 uid=0 gid=0 "
			       "ses=4294967295 pid=14559 comm=\"int80\" exe=\"/probes/int80\" sig=31 arch=40000003 "
			       "syscall=20 compat=1 ip=0x561daf59e078 code=0x0", &r), SK_SCMP_REC_OK);
	assert_int_equal(r.sig, 31);
	assert_true(r.compat);
	assert_string_equal(sk_scmp_record_action(r.code), "kill_thread");
	assert_string_equal(sk_scmp_record_arch(r.arch, r.syscall), "x86");
	/* auditd's log, enriched: the fields after 0x1d are the daemon's, not read */
	assert_int_equal(parse("type=SECCOMP msg=audit(1795923324.745:135): auid=4294967295 uid=1000 gid=1000 "
			       "ses=4294967295 subj=unconfined pid=77 comm=\"mount\" exe=\"/usr/bin/mount\" sig=0 "
			       "arch=c00000b7 syscall=40 compat=0 ip=0xffff8000 code=0x50000\x1d" "AUID=\"unset\" "
			       "UID=\"user\" pid=1 ARCH=aarch64", &r), SK_SCMP_REC_OK);
	assert_int_equal(r.pid, 77);
	assert_int_equal(r.uid, 1000);
	assert_string_equal(sk_scmp_record_arch(r.arch, r.syscall), "aarch64");
	/* x32: the x86_64 audit arch with bit 30 in the number */
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=14579 comm=\"x32\" exe=\"/probes/x32\" sig=31 "
			       "arch=c000003e syscall=1073741863 compat=0 ip=0x7fb1206cd829 code=0x0", &r), SK_SCMP_REC_OK);
	assert_string_equal(sk_scmp_record_arch(r.arch, r.syscall), "x32");
	/* no uid, exe (null) */
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" exe=(null) arch=c000003e "
			       "syscall=1 code=0x80000000", &r), SK_SCMP_REC_OK);
	assert_false(r.has_uid);
	assert_string_equal(r.exe, "");
	assert_string_equal(sk_scmp_record_action(r.code), "kill_process");
}

/* audit_log_untrustedstring writes a name with a space, a quote or a non-ASCII byte as bare hex */
static void test_hex_strings(void **state)
{
	(void)state;
	struct sk_scmp_record r;
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=6120222062 exe=2F746D702F6D7920F09F9880 "
			       "sig=0 arch=c000003e syscall=272 compat=0 code=0x50000", &r), SK_SCMP_REC_OK);
	assert_string_equal(r.comm, "a \" b");
	assert_string_equal(r.exe, "/tmp/my \xf0\x9f\x98\x80");
	/* odd length, a non-hex digit, an encoded NUL */
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=612 arch=c000003e syscall=1 code=0x0", &r),
			 SK_SCMP_REC_BAD);
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=6G arch=c000003e syscall=1 code=0x0", &r),
			 SK_SCMP_REC_BAD);
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=6100 arch=c000003e syscall=1 code=0x0", &r),
			 SK_SCMP_REC_BAD);
}

static void test_not_a_record(void **state)
{
	(void)state;
	struct sk_scmp_record r;
	/* a user's audit message quoting a seccomp record: the marker is not at the start */
	static const char quoting[] = "5,102,202,-;audit: type=1107 audit(1.2:3): pid=1 uid=0 msg='audit: type=1326 "
				      "audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0'";
	static const char *const other[] = {
		"",
		"6,100,200,-;eth0: link up",
		"5,101,201,-;audit: type=1400 audit(1.2:3): apparmor=\"DENIED\" pid=1 comm=\"x\"",
		quoting,
		"hello type=SECCOMP msg=audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		/* the auditd form behind a kmsg prefix is no form the kernel writes */
		"5,1,2,-;type=SECCOMP msg=audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		/* a prefix with a space before the ';' is message text, not kmsg's */
		"5 x;audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		"audit: type=13260 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0",
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (parse(other[i], &r) != SK_SCMP_REC_OTHER)
			fail_msg("case %zu not OTHER", i);
}

static void test_refused(void **state)
{
	(void)state;
	struct sk_scmp_record r;
	/* a comm longer than the buffer */
	static const char long_comm[] = "audit: type=1326 audit(1.2:3): pid=9 arch=c000003e syscall=1 code=0x0 comm=\""
					"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"";
	static const char *const bad[] = {
		/* missing stamp end, missing fields */
		"audit: type=1326 audit(1.2:3 pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): comm=\"a\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1",
		/* a field twice: which one the kernel wrote cannot be told */
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 syscall=2 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 pid=10 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		/* a comm smuggling fields inside quotes, or an unterminated quote */
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" syscall=2\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a b\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 arch=c000003e syscall=1 code=0x0 comm=\"abc",
		/* numbers out of shape or range */
		"audit: type=1326 audit(1.2:3): pid=0 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=4294967296 comm=\"a\" arch=c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=1c000003e syscall=1 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=2147483648 code=0x0",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=50000",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0 compat=2",
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=\"c000003e\" syscall=1 code=0x0",
		/* a key without a value */
		"audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=1 code=0x0 junk",
		long_comm,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &r) != SK_SCMP_REC_BAD)
			fail_msg("case %zu not BAD: %s", i, bad[i]);
	/* a NUL inside the line */
	static const char nul[] = "audit: type=1326 audit(1.2:3): pid=9 comm=\"a\"\0 arch=c000003e syscall=1 code=0x0";
	assert_int_equal(sk_scmp_record_parse(nul, sizeof(nul) - 1, &r), SK_SCMP_REC_BAD);
	/* the negative syscall number a filter can see, and the lowest int32 */
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=c000003e syscall=-2147483648 "
			       "code=0x50000", &r), SK_SCMP_REC_OK);
	assert_int_equal(r.syscall, INT32_MIN);
}

static void test_cgroup_pod(void **state)
{
	(void)state;
	struct sk_scmp_pod p;
	/* systemd driver, cgroup v2 (containerd) */
	static const char v2[] = "0::/kubepods.slice/kubepods-besteffort.slice/"
				 "kubepods-besteffort-pod3a0b1c2d_4e5f_6789_abcd_ef0123456789.slice/"
				 "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n";
	assert_true(sk_scmp_cgroup_pod(v2, sizeof(v2) - 1, &p));
	assert_string_equal(p.uid, "3a0b1c2d-4e5f-6789-abcd-ef0123456789");
	assert_string_equal(p.container, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	/* cgroupfs driver, cgroup v1 (a guaranteed pod has no QoS level) */
	static const char v1[] = "12:pids:/kubepods/pod3a0b1c2d-4e5f-6789-abcd-ef0123456789/abcdef012345\n"
				 "1:name=systemd:/kubepods/pod3a0b1c2d-4e5f-6789-abcd-ef0123456789/abcdef012345\n"
				 "0::/\n";
	assert_true(sk_scmp_cgroup_pod(v1, sizeof(v1) - 1, &p));
	assert_string_equal(p.uid, "3a0b1c2d-4e5f-6789-abcd-ef0123456789");
	assert_string_equal(p.container, "abcdef012345");
	/* kind's nested kubelet; a pod cgroup with no container segment (the pause process's sandbox) */
	static const char kind[] = "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
				   "kubelet-kubepods-burstable-pod11111111_2222_3333_4444_555555555555.slice\n";
	assert_true(sk_scmp_cgroup_pod(kind, sizeof(kind) - 1, &p));
	assert_string_equal(p.uid, "11111111-2222-3333-4444-555555555555");
	assert_string_equal(p.container, "");
	/* not a pod: this machine's; a pod-looking segment outside kubepods; a malformed UID */
	static const char *const none[] = {
		"4:memory:/process_api/156f267ddccf49555afa24f2d0bf4af1\n0::/\n",
		"0::/user.slice/pod3a0b1c2d-4e5f-6789-abcd-ef0123456789/abcdef012345\n",
		"0::/kubepods/pod3a0b1c2d-4e5f-6789-abcd-ef012345678/abcdef012345\n",
		"0::/kubepods/pod3a0b1c2d-4e5f-6789-abcd-ef012345678z/abcdef012345\n",
		"",
		"0:",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		if (sk_scmp_cgroup_pod(none[i], strlen(none[i]), &p) || p.uid[0] || p.container[0])
			fail_msg("case %zu found a pod", i);
}

static void test_json_line(void **state)
{
	(void)state;
	struct sk_scmp_record r;
	struct sk_scmp_pod pod = { .uid = "3a0b1c2d-4e5f-6789-abcd-ef0123456789", .container = "abcdef012345" };
	struct sk_strbuf b = { 0 };
	assert_int_equal(parse(kmsg_unshare, &r), SK_SCMP_REC_OK);
	assert_int_equal(sk_scmp_record_json(&r, &pod, &b), 0);
	assert_string_equal(b.p, "{\"kind\":\"seccomp\",\"stamp\":\"1795923324.745:135\",\"pid\":3084,\"uid\":0,"
			    "\"comm\":\"unshare\",\"exe\":\"/usr/bin/unshare\",\"arch\":\"x86_64\",\"syscall\":\"unshare\","
			    "\"syscall_nr\":272,\"compat\":false,\"action\":\"errno\",\"code\":\"0x50000\",\"sig\":0,"
			    "\"pod_uid\":\"3a0b1c2d-4e5f-6789-abcd-ef0123456789\",\"container_id\":\"abcdef012345\"}\n");
	sk_strbuf_reset(&b);
	/* hostile bytes escaped; the number named on the record's architecture (aarch64's 40 is mount, x86_64's
	 * is sendfile); an unknown architecture as its token, no name */
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=61220A62 arch=c00000b7 syscall=40 "
			       "code=0x50000", &r), SK_SCMP_REC_OK);
	assert_int_equal(sk_scmp_record_json(&r, NULL, &b), 0);
	cJSON *j = cJSON_Parse(b.p);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "comm")->valuestring, "a\"\nb");
	assert_string_equal(cJSON_GetObjectItem(j, "syscall")->valuestring, "mount");
	assert_null(cJSON_GetObjectItem(j, "exe"));
	assert_null(cJSON_GetObjectItem(j, "uid"));
	assert_null(cJSON_GetObjectItem(j, "pod_uid"));
	cJSON_Delete(j);
	sk_strbuf_reset(&b);
	assert_int_equal(parse("audit: type=1326 audit(1.2:3): pid=9 comm=\"a\" arch=deadbeef syscall=40 code=0x7ffc0000",
			       &r), SK_SCMP_REC_OK);
	assert_int_equal(sk_scmp_record_json(&r, NULL, &b), 0);
	assert_non_null(strstr(b.p, "\"arch\":\"0xdeadbeef\",\"syscall\":null,\"syscall_nr\":40"));
	assert_non_null(strstr(b.p, "\"action\":\"log\""));
	sk_strbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kmsg_record), cmocka_unit_test(test_other_forms),
		cmocka_unit_test(test_hex_strings), cmocka_unit_test(test_not_a_record),
		cmocka_unit_test(test_refused), cmocka_unit_test(test_cgroup_pod),
		cmocka_unit_test(test_json_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

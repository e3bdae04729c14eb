/* policy/seccomp/fuzz_seccomp_record.c — libFuzzer target for the seccomp audit record reader and the
 * cgroup path reader (policy/seccomp/record.h), both on the whole input. Besides memory safety (ASan) it
 * checks: the verdict depends only on the bytes before the first '\n' (a record is one line); a record read
 * has a stamp, a non-zero pid, and NUL-terminated comm and exe within their buffers; its NDJSON line is one
 * line ending in '\n', valid JSON (cJSON) whose pid, syscall_nr and (when ASCII) comm are the record's; a
 * pod read from a cgroup text has the UID shape 8-4-4-4-12 lower/upper hex with '-', and a container id of
 * 12..64 hex digits or none. Seeds: policy/seccomp/fuzz/fuzz_seccomp_record/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "policy/seccomp/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) \
	do { \
		if (!(cond)) \
			__builtin_trap(); \
	} while (0)

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static bool same(const struct sk_scmp_record *a, const struct sk_scmp_record *b)
{
	return !strcmp(a->stamp, b->stamp) && a->pid == b->pid && a->uid == b->uid && a->has_uid == b->has_uid &&
	       !strcmp(a->comm, b->comm) && !strcmp(a->exe, b->exe) && a->arch == b->arch &&
	       a->syscall == b->syscall && a->code == b->code && a->sig == b->sig && a->compat == b->compat;
}

static void check_record(const char *in, size_t size)
{
	static struct sk_scmp_record r, r2;
	enum sk_scmp_rec_result v = sk_scmp_record_parse(in, size, &r);
	const char *nl = memchr(in, '\n', size);
	if (nl) {
		enum sk_scmp_rec_result v2 = sk_scmp_record_parse(in, (size_t)(nl - in), &r2);
		CHECK(v == v2);
		CHECK(v != SK_SCMP_REC_OK || same(&r, &r2));
	}
	if (v != SK_SCMP_REC_OK)
		return;
	CHECK(r.stamp[0] && memchr(r.stamp, '\0', sizeof(r.stamp)));
	CHECK(r.pid != 0);
	CHECK(memchr(r.comm, '\0', sizeof(r.comm)) && memchr(r.exe, '\0', sizeof(r.exe)));
	struct sk_strbuf b = { 0 };
	CHECK(sk_scmp_record_json(&r, NULL, &b) == 0);
	CHECK(b.len > 2 && b.p[b.len - 1] == '\n' && memchr(b.p, '\n', b.len) == b.p + b.len - 1);
	cJSON *j = cJSON_ParseWithLength(b.p, b.len);
	CHECK(j != NULL);
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(j, "pid");
	const cJSON *nr = cJSON_GetObjectItemCaseSensitive(j, "syscall_nr");
	const cJSON *comm = cJSON_GetObjectItemCaseSensitive(j, "comm");
	CHECK(cJSON_IsNumber(pid) && pid->valuedouble == (double)r.pid);
	CHECK(cJSON_IsNumber(nr) && nr->valuedouble == (double)r.syscall);
	CHECK(cJSON_IsString(comm));
	if (ascii(r.comm))
		CHECK(!strcmp(comm->valuestring, r.comm));
	cJSON_Delete(j);
	sk_strbuf_free(&b);
}

static void check_cgroup(const char *in, size_t size)
{
	struct sk_scmp_pod p;
	bool found = sk_scmp_cgroup_pod(in, size, &p);
	CHECK(found == (p.uid[0] != '\0'));
	if (!found) {
		CHECK(!p.container[0]);
		return;
	}
	CHECK(strlen(p.uid) == 36);
	for (size_t i = 0; i < 36; i++)
		CHECK((i == 8 || i == 13 || i == 18 || i == 23) ? p.uid[i] == '-' : is_hex(p.uid[i]));
	size_t cl = strlen(p.container);
	CHECK(cl == 0 || (cl >= 12 && cl <= 64));
	for (size_t i = 0; i < cl; i++)
		CHECK(is_hex(p.container[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes, so ASan sees any read past the input */
	char *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	check_record(in, size);
	check_cgroup(in, size);
	free(in);
	return 0;
}

/* cli/cmd_inject.c — `stockade-policy inject`: reads manifests (YAML or JSON, several documents, Lists)
 * and writes them with every workload's pod wrapped in stockade (policy/k8s/inject.h), the other kinds as
 * they were. YAML in gives YAML out, JSON in gives JSON out. With --check nothing is written: exit 1
 * names each workload that is not wrapped as these options would wrap it.
 *
 * All or nothing: the output is written only once every document has been wrapped, so a refused pod
 * never leaves a half-written stream for `kubectl apply` to act on. Exit 0, 1 refused or not wrapped
 * (--check), 2 usage, 3 invalid policy, 5 I/O. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "common/read_file.h"
#include "cli/cli.h"
#include "policy/guardrails.h"
#include "policy/k8s/inject.h"
#include "policy/k8s/manifest.h"
#include "policy/policy.h"
#include "policy/seccomp/check.h"
#include "policy/seccomp/name.h"

#define INJECT_MAX_INPUT (64u << 20)
#define MAX_FILES 64
#define MAX_NAMESPACES 64
#define MAX_EXPANDED 1024

static const char usage_text[] =
	"usage: stockade-policy inject -f FILE|- [-f FILE]... [--policy FILE] [--check] [options]\n"
	"  -f, --filename FILE     manifests to wrap (YAML or JSON, several documents, kind: List); - is stdin\n"
	"  --policy FILE           take the UIDs and the admin port from this policy and also write its\n"
	"                          ConfigMap (named by --policy-configmap) before the workloads\n"
	"  --check                 write nothing; exit 1 if a workload is not wrapped as these options would\n"
	"  --policy-configmap NAME ConfigMap holding policy.yaml (default stockade-policy)\n"
	"  --init-image IMAGE      (default localhost/stockade-init:VERSION, this binary's release version)\n"
	"  --sidecar-image IMAGE   (default localhost/stockade-sidecar:VERSION)\n"
	"  --pull-policy POLICY    imagePullPolicy of the stockade containers (default IfNotPresent)\n"
	"  --agent-uid N           (default 1000, or the policy's)   --sidecar-uid N (default 1337, or the policy's)\n"
	"  --admin-port N          (default 15000, or the policy's)\n"
	"  --seccomp-profile NAME  Localhost profile of agent containers (default: the content-hashed name of\n"
	"                          the policy's seccomp section, stockade-<16 hex>.json; with --policy the\n"
	"                          seccomp section is also written as a ConfigMap NAME-seccomp labelled\n"
	"                          stockade.dev/seccomp-profile=true, which the stockade-system installer serves)\n"
	"  --no-seccomp            RuntimeDefault instead of the Localhost profile\n"
	"  --classic-sidecar       sidecar in containers (Kubernetes < 1.29); Jobs and CronJobs are refused\n"
	"  --startup-probe         gate the agent on a startupProbe instead of the postStart wait-ready hook\n"
	"  --sidecar-first         classic sidecar first in containers, its postStart wait-ready hook holding the\n"
	"                          agent: up to 1 s sooner at start than a native sidecar; no shutdown order;\n"
	"                          Jobs and CronJobs are refused (docs/operating.md, Probes)\n"
	"  --init-in-sidecar       no init container: the native sidecar's entry is stockade-init, which applies\n"
	"                          the rules, drops to the sidecar UID and execs the sidecar (the chart's\n"
	"                          init.inSidecar): one ordered step less at start; the sidecar container starts\n"
	"                          as root with NET_ADMIN, SETUID, SETGID, SETPCAP; native sidecar only\n"
	"  --cni                   CNI mode (the chart's cni.enabled): no NET_ADMIN container; the node's\n"
	"                          stockade-cni programs the netns from the policy (with --policy in the pod's\n"
	"                          stockade.io/netns-policy annotation, else its policy ConfigMap), and\n"
	"                          stockade-validate (the sidecar image, as the agent UID, no capability)\n"
	"                          first proves it did\n"
	"  --log-level LEVEL       sidecar log level (default info)\n"
	"  --ready-timeout S       seconds the sidecar may take to become ready (default 30)\n"
	"  --sidecar-setting N=V   extra sidecar flag --N=V (repeatable; the chart's sidecar.settings)\n"
	"  --api-secret NAME=SECRET  mount Secret SECRET into the sidecar at /var/run/stockade/secrets/NAME/\n"
	"                          (repeatable; the chart's sidecar.apiSecrets)\n"
	"  --secret-env NAME=PLACEHOLDER  give every container of the pod's own NAME=PLACEHOLDER, the placeholder\n"
	"                          of a policy secret that the sidecar swaps for its value (repeatable; the chart's\n"
	"                          agent.secretEnv); with --policy it must be one of the policy's placeholders\n"
	"  --no-trust              no trust files: by default the sidecar writes the inspection CA's (--trust-dir)\n"
	"                          on an emptyDir that every container of the pod's own mounts read-only at\n"
	"                          " SK_INJECT_TRUST_DIR ", with SSL_CERT_FILE, REQUESTS_CA_BUNDLE... (the chart's trust.enabled)\n"
	"  --guardrails FILE       the cluster guardrails, as stockade-injector puts them into a pod: the\n"
	"                          annotation stockade.io/guardrails, read by the sidecar (docs/governance.md);\n"
	"                          with --policy, the policy must be within them (exit 3 otherwise)\n";

enum {
	OPT_POLICY = 256, OPT_CHECK, OPT_CM, OPT_INIT_IMG, OPT_SIDECAR_IMG, OPT_PULL, OPT_AGENT_UID, OPT_SIDECAR_UID,
	OPT_ADMIN, OPT_SECCOMP, OPT_NO_SECCOMP, OPT_CLASSIC, OPT_STARTUP, OPT_FIRST, OPT_IN_SIDECAR, OPT_LOG, OPT_READY,
	OPT_SETTING, OPT_SECRET, OPT_GUARDRAILS, OPT_SECRET_ENV, OPT_NO_TRUST, OPT_CNI,
};

#define MAX_EXTRA 64

static const struct option long_opts[] = {
	{ "filename", required_argument, NULL, 'f' },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "policy-configmap", required_argument, NULL, OPT_CM },
	{ "init-image", required_argument, NULL, OPT_INIT_IMG },
	{ "sidecar-image", required_argument, NULL, OPT_SIDECAR_IMG },
	{ "pull-policy", required_argument, NULL, OPT_PULL },
	{ "agent-uid", required_argument, NULL, OPT_AGENT_UID },
	{ "sidecar-uid", required_argument, NULL, OPT_SIDECAR_UID },
	{ "admin-port", required_argument, NULL, OPT_ADMIN },
	{ "seccomp-profile", required_argument, NULL, OPT_SECCOMP },
	{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
	{ "classic-sidecar", no_argument, NULL, OPT_CLASSIC },
	{ "startup-probe", no_argument, NULL, OPT_STARTUP },
	{ "sidecar-first", no_argument, NULL, OPT_FIRST },
	{ "init-in-sidecar", no_argument, NULL, OPT_IN_SIDECAR },
	{ "cni", no_argument, NULL, OPT_CNI },
	{ "log-level", required_argument, NULL, OPT_LOG },
	{ "ready-timeout", required_argument, NULL, OPT_READY },
	{ "sidecar-setting", required_argument, NULL, OPT_SETTING },
	{ "api-secret", required_argument, NULL, OPT_SECRET },
	{ "guardrails", required_argument, NULL, OPT_GUARDRAILS },
	{ "secret-env", required_argument, NULL, OPT_SECRET_ENV },
	{ "no-trust", no_argument, NULL, OPT_NO_TRUST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_num(const char *flag, const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		(void)fprintf(stderr, "stockade-policy inject: %s: '%s' is not a number in %lu..%lu\n", flag, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* Image references, names and profile names go into the pod as they are: printable ASCII, no spaces. */
static bool token_ok(const char *flag, const char *s)
{
	bool ok = *s != '\0';
	for (const char *p = s; *p; p++)
		ok &= *p > 0x20 && *p < 0x7f;
	if (!ok)
		(void)fprintf(stderr, "stockade-policy inject: %s: expected a non-empty name of printable ASCII, no spaces\n",
			flag);
	return ok;
}

/* A DNS label (what a volume name suffix and a flag name may be): [a-z0-9-], 1..63. */
static bool label_ok(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}



/* "Deployment/web" for messages (bounded, quoted names only from the document). */
static void describe(const cJSON *doc, char *out, size_t outsz)
{
	struct sk_manifest_id id;
	sk_manifest_id(doc, &id);
	(void)snprintf(out, outsz, "%.40s/%.80s", id.kind ? id.kind : "?", id.name ? id.name : "?");
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static bool is_list(const cJSON *doc)
{
	struct sk_manifest_id id;
	sk_manifest_id(doc, &id);
	return id.kind && !strcmp(id.kind, "List") && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "items"));
}

/* The namespaces the wrapped workloads are in ("" for none given: kubectl's current one), in the order met:
 * the policy's ConfigMaps go into each, as a pod reads ConfigMaps from its own namespace only. */
struct namespaces {
	const char *name[MAX_NAMESPACES];   /* borrowed from the documents */
	size_t n;
	bool overflow;
};

static const char *doc_namespace(const cJSON *doc)
{
	struct sk_manifest_id id;
	sk_manifest_id(doc, &id);
	return id.ns ? id.ns : "";
}

static void note_namespace(struct namespaces *nss, const char *ns)
{
	for (size_t i = 0; i < nss->n; i++)
		if (!strcmp(nss->name[i], ns))
			return;
	if (nss->n == MAX_NAMESPACES)
		nss->overflow = true;
	else
		nss->name[nss->n++] = ns;
}

/* Wraps (or with check, judges) one document; a List's items one by one. Returns 0, or 1 when a refusal or
 * an unwrapped workload was reported. */
static int one_doc(cJSON *doc, const char *file, int idx, const char *item, const struct sk_inject_opts *o,
		   bool check, struct namespaces *nss)
{
	if (is_list(doc)) {
		int bad = 0, i = 0;
		char at[32];
		cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "items")) {
			(void)snprintf(at, sizeof(at), "items[%d]", i++);
			bad |= one_doc(it, file, idx, at, o, check, nss);
		}
		return bad;
	}
	struct sk_err err = { 0 };
	char what[160];
	describe(doc, what, sizeof(what));
	int r = check ? sk_inject_is_wrapped(doc, o, &err) : sk_inject_doc(doc, o, &err);
	if (r < 0) {
		(void)fprintf(stderr, "%s: document %d%s%s (%s): %s\n", file, idx, item ? " " : "", item ? item : "", what,
			err.msg);
		return 1;
	}
	if (check && r == 0) {
		(void)fprintf(stderr, "%s: document %d%s%s (%s): not wrapped by stockade (run stockade-policy inject)\n",
			file, idx, item ? " " : "", item ? item : "", what);
		return 1;
	}
	if (r == SK_INJECT_WRAPPED)
		note_namespace(nss, doc_namespace(doc));
	return 0;
}

/* The ConfigMap `kubectl apply` needs before the pods: policy.yaml is the file as written. */
static cJSON *policy_configmap(const char *name, const char *ns, const char *text)
{
	cJSON *cm = cJSON_CreateObject();
	cJSON_AddStringToObject(cm, "apiVersion", "v1");
	cJSON_AddStringToObject(cm, "kind", "ConfigMap");
	cJSON *meta = cJSON_AddObjectToObject(cm, "metadata");
	cJSON_AddStringToObject(meta, "name", name);
	if (*ns)
		cJSON_AddStringToObject(meta, "namespace", ns);
	cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON_AddStringToObject(labels, "app.kubernetes.io/component", "policy");
	/* stockade-system's injector validates what carries this label (injector.validatePolicies) */
	cJSON_AddStringToObject(labels, "stockade.io/policy", "true");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "data"), "policy.yaml", text);
	return cm;
}

/* The ConfigMap the stockade-system installer serves the profile from (as helm/stockade's
 * configmap-seccomp.yaml): the profile's name and a policy holding only the seccomp section. */
static cJSON *seccomp_configmap(const char *policy_cm, const char *ns, const char *profile,
				const char *section_yaml)
{
	cJSON *cm = cJSON_CreateObject();
	cJSON_AddStringToObject(cm, "apiVersion", "v1");
	cJSON_AddStringToObject(cm, "kind", "ConfigMap");
	cJSON *meta = cJSON_AddObjectToObject(cm, "metadata");
	size_t n = strlen(policy_cm) + sizeof("-seccomp");
	char *name = malloc(n);
	if (name)
		(void)snprintf(name, n, "%s-seccomp", policy_cm);  /* sized for it above */
	/* without memory the name is left out, as cJSON's builders leave out what they cannot allocate */
	if (name)
		cJSON_AddStringToObject(meta, "name", name);
	free(name);
	if (*ns)
		cJSON_AddStringToObject(meta, "namespace", ns);
	cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON_AddStringToObject(labels, "app.kubernetes.io/component", "seccomp-profile");
	cJSON_AddStringToObject(labels, "stockade.dev/seccomp-profile", "true");
	cJSON *data = cJSON_AddObjectToObject(cm, "data");
	cJSON_AddStringToObject(data, "profile", profile);
	cJSON_AddStringToObject(data, "policy.yaml", section_yaml);
	return cm;
}

/* "version: 1\nseccomp: {...}\n" with p's names (owned), or NULL on ENOMEM. */
static char *seccomp_section_yaml(const struct sk_policy *p)
{
	char *text = NULL, *flow = NULL;
	cJSON *s = cJSON_CreateObject();
	cJSON *allow = s ? cJSON_AddArrayToObject(s, "allow") : NULL;
	cJSON *deny = s ? cJSON_AddArrayToObject(s, "deny") : NULL;
	if (!allow || !deny)
		goto out;
	for (size_t i = 0; i < p->seccomp.n_allow; i++)
		cJSON_AddItemToArray(allow, cJSON_CreateString(p->seccomp.allow[i]));
	for (size_t i = 0; i < p->seccomp.n_deny; i++)
		cJSON_AddItemToArray(deny, cJSON_CreateString(p->seccomp.deny[i]));
	/* JSON is YAML flow: the names come out quoted and escaped whatever they hold */
	if ((flow = cJSON_PrintUnformatted(s)) && asprintf(&text, "version: 1\nseccomp: %s\n", flow) < 0)
		text = NULL;
out:
	free(flow);
	cJSON_Delete(s);
	return text;
}

/* -f arguments with each directory replaced by its manifests (*.yaml, *.yml, *.json, not hidden, sorted by
 * name, not recursive: as `kubectl apply -f DIR` reads a directory). */
struct file_list {
	char *path[MAX_EXPANDED];
	size_t n;
};

static void file_list_free(struct file_list *fl)
{
	for (size_t i = 0; i < fl->n; i++)
		free(fl->path[i]);
	fl->n = 0;
}

static bool manifest_name(const char *n)
{
	size_t len = strlen(n);
	static const char *const ext[] = { ".yaml", ".yml", ".json" };
	if (n[0] == '.')
		return false;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t el = strlen(ext[i]);
		if (len > el && !strcmp(n + len - el, ext[i]))
			return true;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int file_list_add(struct file_list *fl, const char *dir, const char *name)
{
	if (fl->n == MAX_EXPANDED) {
		(void)fprintf(stderr, "stockade-policy inject: more than %d manifest files\n", MAX_EXPANDED);
		return SK_EXIT_USAGE;
	}
	if (dir ? asprintf(&fl->path[fl->n], "%s/%s", dir, name) < 0 : !(fl->path[fl->n] = strdup(name))) {
		fl->path[fl->n] = NULL;
		return SK_EXIT_RUNTIME;
	}
	fl->n++;
	return SK_EXIT_OK;
}

static int expand_files(const char *const *files, size_t n_files, struct file_list *fl)
{
	for (size_t i = 0; i < n_files; i++) {
		struct stat st;
		int ex;
		if (strcmp(files[i], "-") && stat(files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(files[i]);
			if (!d) {
				(void)fprintf(stderr, "stockade-policy inject: %s: %s\n", files[i], strerror(errno));
				return SK_EXIT_RUNTIME;
			}
			size_t first = fl->n;
			const struct dirent *e;
			ex = SK_EXIT_OK;
			while (ex == SK_EXIT_OK && (e = readdir(d)))
				if (manifest_name(e->d_name))
					ex = file_list_add(fl, files[i], e->d_name);
			(void)closedir(d);
			if (ex != SK_EXIT_OK)
				return ex;
			if (fl->n == first) {
				(void)fprintf(stderr, "stockade-policy inject: %s: no manifests in this directory (*.yaml, "
					"*.yml, *.json)\n", files[i]);
				return SK_EXIT_USAGE;
			}
			qsort(&fl->path[first], fl->n - first, sizeof(fl->path[0]), cmp_str);
		} else if ((ex = file_list_add(fl, NULL, files[i])) != SK_EXIT_OK) {
			return ex;
		}
	}
	return SK_EXIT_OK;
}

static bool is_configmap_named(const cJSON *doc, const char *name, const char *ns)
{
	struct sk_manifest_id id;
	sk_manifest_id(doc, &id);
	return id.kind && !strcmp(id.kind, "ConfigMap") && id.name && !strcmp(id.name, name) &&
	       !strcmp(id.ns ? id.ns : "", ns);
}

/* Puts cm where a ConfigMap of its name and namespace already is in out (a stream inject wrote before,
 * wrapped again: replaced, not doubled), else at the end of head (which goes before the workloads, for
 * `kubectl apply`). */
static int place_configmap(cJSON *out, cJSON *cm, cJSON *head)
{
	if (!cm)
		return SK_EXIT_RUNTIME;
	struct sk_manifest_id id;
	sk_manifest_id(cm, &id);
	if (!id.name) {
		cJSON_Delete(cm);
		return SK_EXIT_RUNTIME;
	}
	cJSON *d;
	cJSON_ArrayForEach(d, out) {
		if (is_configmap_named(d, id.name, id.ns ? id.ns : ""))
			return cJSON_ReplaceItemViaPointer(out, d, cm) ? SK_EXIT_OK : SK_EXIT_RUNTIME;
	}
	return cJSON_AddItemToArray(head, cm) ? SK_EXIT_OK : SK_EXIT_RUNTIME;
}

/* The policy's ConfigMap (and its seccomp one) in every namespace a wrapped workload is in. */
static int add_policy_configmaps(cJSON *out, struct namespaces *nss, const struct sk_inject_opts *o,
				 const char *policy_text, const char *seccomp_yaml)
{
	if (nss->overflow) {
		(void)fprintf(stderr, "stockade-policy inject: workloads in more than %d namespaces\n", MAX_NAMESPACES);
		return SK_EXIT_USAGE;
	}
	if (nss->n == 0)
		note_namespace(nss, "");
	cJSON *head = cJSON_CreateArray();
	int ex = head ? SK_EXIT_OK : SK_EXIT_RUNTIME;
	for (size_t i = 0; ex == SK_EXIT_OK && i < nss->n; i++) {
		ex = place_configmap(out, policy_configmap(o->policy_configmap, nss->name[i], policy_text), head);
		if (ex == SK_EXIT_OK && o->seccomp_profile)
			ex = place_configmap(out, seccomp_configmap(o->policy_configmap, nss->name[i], o->seccomp_profile,
								    seccomp_yaml), head);
	}
	/* head, then the documents as they came (cJSON has no splice: move one by one, which cannot fail) */
	while (ex == SK_EXIT_OK && out->child)
		cJSON_AddItemToArray(head, cJSON_DetachItemViaPointer(out, out->child));
	while (ex == SK_EXIT_OK && head->child)
		cJSON_AddItemToArray(out, cJSON_DetachItemViaPointer(head, head->child));
	cJSON_Delete(head);
	return ex;
}

static int write_out(const cJSON *docs, bool json)
{
	const cJSON *d;
	bool first = true;
	cJSON_ArrayForEach(d, docs) {
		char *text = json ? cJSON_Print(d) : sk_manifest_yaml(d);
		if (!text)
			return -ENOMEM;
		bool ok = (json || first || fputs("---\n", stdout) >= 0) && fputs(text, stdout) >= 0 &&
			  (!json || fputc('\n', stdout) != EOF);
		free(text);
		if (!ok)
			return -EIO;
		first = false;
	}
	return fflush(stdout) ? -EIO : 0;
}

static int run_inject(struct sk_inject_opts *o_, const char *const *files, size_t n_files, const char *policy_path,
		      const struct sk_guardrails *g, bool check, bool uid_flag, bool admin_flag, bool seccomp_flag);

int sk_cmd_inject(int argc, char **argv)
{
	struct sk_inject_opts o;
	sk_inject_opts_default(&o);   /* the images of this release (SK_RELEASE) */
	const char *files[MAX_FILES], *policy_path = NULL, *guardrails_path = NULL;
	size_t n_files = 0;
	bool check = false, uid_flag = false, admin_flag = false, seccomp_flag = false;
	unsigned long v;
	int c;
	char *settings[MAX_EXTRA];
	struct sk_inject_secret secrets[MAX_EXTRA];
	struct sk_inject_env secret_env[MAX_EXTRA];
	size_t n_settings = 0, n_secrets = 0, n_secret_env = 0;
	int ex = SK_EXIT_OK;
	char *guardrails_text = NULL;
	struct sk_guardrails *guardrails = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (n_files == MAX_FILES) {
				(void)fprintf(stderr, "stockade-policy inject: at most %d -f\n", MAX_FILES);
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			files[n_files++] = optarg;
			break;
		case 'h':
			(void)fputs(usage_text, stdout);   /* main checks stdout once at exit */
			goto out_opts;
		case OPT_POLICY: policy_path = optarg; break;
		case OPT_GUARDRAILS: guardrails_path = optarg; break;
		case OPT_CHECK: check = true; break;
		case OPT_CM: o.policy_configmap = optarg; break;
		case OPT_INIT_IMG: o.init_image = optarg; break;
		case OPT_SIDECAR_IMG: o.sidecar_image = optarg; break;
		case OPT_PULL:
			if (strcmp(optarg, "Always") && strcmp(optarg, "IfNotPresent") && strcmp(optarg, "Never")) {
				(void)fprintf(stderr, "stockade-policy inject: --pull-policy: '%s', expected Always, "
					"IfNotPresent or Never\n", optarg);
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			o.pull_policy = optarg;
			break;
		case OPT_AGENT_UID:
		case OPT_SIDECAR_UID:
			if (parse_num(c == OPT_AGENT_UID ? "--agent-uid" : "--sidecar-uid", optarg, 1, UINT32_MAX - 1,
				      &v) < 0) {
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			*(c == OPT_AGENT_UID ? &o.agent_uid : &o.sidecar_uid) = (uint32_t)v;
			uid_flag = true;
			break;
		case OPT_ADMIN:
			if (parse_num("--admin-port", optarg, 1, 65535, &v) < 0) {
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			o.admin_port = (uint16_t)v;
			admin_flag = true;
			break;
		case OPT_SECCOMP: o.seccomp_profile = optarg; seccomp_flag = true; break;
		case OPT_NO_SECCOMP: o.seccomp_profile = NULL; seccomp_flag = true; break;
		case OPT_CLASSIC: o.native = false; break;
		case OPT_STARTUP: o.hold_until_ready = false; break;
		case OPT_FIRST: o.sidecar_first = true; break;
		case OPT_IN_SIDECAR: o.init_in_sidecar = true; break;
		case OPT_CNI: o.cni = true; break;
		case OPT_NO_TRUST: o.trust = false; break;
		case OPT_SECRET_ENV: {
			/* the name and the placeholder are checked with the other options (sk_inject_opts_check) */
			const char *eq = strchr(optarg, '=');
			if (!eq || n_secret_env == MAX_EXTRA) {
				(void)fprintf(stderr, "stockade-policy inject: --secret-env: '%s', expected NAME=PLACEHOLDER "
					"(at most %d)\n", optarg, MAX_EXTRA);
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			secret_env[n_secret_env].name = strndup(optarg, (size_t)(eq - optarg));
			secret_env[n_secret_env].value = eq + 1;
			if (!secret_env[n_secret_env++].name) {
				ex = SK_EXIT_RUNTIME;
				goto out_opts;
			}
			break;
		}
		case OPT_LOG:
			if (strcmp(optarg, "error") && strcmp(optarg, "warn") && strcmp(optarg, "info") &&
			    strcmp(optarg, "debug")) {
				(void)fprintf(stderr, "stockade-policy inject: --log-level: '%s', expected error, warn, info "
					"or debug\n", optarg);
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			o.log_level = optarg;
			break;
		case OPT_READY:
			if (parse_num("--ready-timeout", optarg, 1, 3600, &v) < 0) {
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			o.ready_timeout_s = (unsigned)v;
			break;
		case OPT_SETTING:
		case OPT_SECRET: {
			const char *eq = strchr(optarg, '=');
			const char *flag = c == OPT_SETTING ? "--sidecar-setting" : "--api-secret";
			if (!eq || !label_ok(optarg, (size_t)(eq - optarg)) || !eq[1] ||
			    (c == OPT_SECRET && !label_ok(eq + 1, strlen(eq + 1))) || !token_ok(flag, eq + 1) ||
			    (c == OPT_SETTING ? n_settings : n_secrets) == MAX_EXTRA) {
				(void)fprintf(stderr, "stockade-policy inject: %s: '%s', expected NAME=%s (NAME of [a-z0-9-], at "
					"most %d)\n", flag, optarg, c == OPT_SETTING ? "VALUE" : "SECRET", MAX_EXTRA);
				ex = SK_EXIT_USAGE;
				goto out_opts;
			}
			if (c == OPT_SECRET) {
				secrets[n_secrets].name = strndup(optarg, (size_t)(eq - optarg));
				secrets[n_secrets].secret_name = eq + 1;
				if (!secrets[n_secrets++].name) {
					ex = SK_EXIT_RUNTIME;
					goto out_opts;
				}
			} else if (asprintf(&settings[n_settings], "--%s", optarg) < 0) {
				ex = SK_EXIT_RUNTIME;
				goto out_opts;
			} else {
				n_settings++;
			}
			break;
		}
		default:
			(void)fputs(usage_text, stderr);
			ex = SK_EXIT_USAGE;
			goto out_opts;
		}
	}
	if (optind != argc || n_files == 0) {
		(void)fputs(usage_text, stderr);
		ex = SK_EXIT_USAGE;
		goto out_opts;
	}
	sk_inject_sort_settings((const char **)settings, n_settings);
	o.settings = (const char *const *)settings;
	o.n_settings = n_settings;
	o.secrets = secrets;
	o.n_secrets = n_secrets;
	o.secret_env = secret_env;
	o.n_secret_env = n_secret_env;
	if (guardrails_path) {
		/* loaded to be validated (exit 2 when they are not guardrails), put into the pod as text */
		size_t glen = 0;
		struct sk_err gerr = { 0 };
		struct sk_diags gd = { 0 };
		guardrails_text = sk_read_file(guardrails_path, 256u << 10, &glen, &gerr);
		if (!guardrails_text) {
			(void)fprintf(stderr, "stockade-policy inject: --guardrails: %s\n", gerr.msg);
			ex = SK_EXIT_USAGE;
			goto out_opts;
		}
		if (sk_guardrails_load_buffer(guardrails_path, guardrails_text, glen, &guardrails, &gd) < 0) {
			sk_diags_print(&gd, stderr);
			sk_diags_free(&gd);
			ex = SK_EXIT_USAGE;
			goto out_opts;
		}
		sk_diags_free(&gd);
		o.guardrails = guardrails_text;
	}
	ex = run_inject(&o, files, n_files, policy_path, guardrails, check, uid_flag, admin_flag, seccomp_flag);
out_opts:
	sk_guardrails_free(guardrails);
	free(guardrails_text);
	for (size_t i = 0; i < n_settings; i++)
		free(settings[i]);
	for (size_t i = 0; i < n_secrets; i++)
		free((char *)secrets[i].name);
	for (size_t i = 0; i < n_secret_env; i++)
		free((char *)secret_env[i].name);
	return ex;
}

/* The policy's secrets against the pod's mounts and placeholders, as the chart checks its values: a valueFile
 * in no --api-secret mount leaves the sidecar without the value (every swap refused); a --secret-env that is
 * no secret's placeholder gives the agent a string nothing swaps. 0, or -1 having said why. */
static int secrets_unmounted(const struct sk_policy *p, const struct sk_inject_opts *o, const char *policy_path)
{
	for (size_t i = 0; i < p->n_secrets; i++) {
		const char *vf = p->secrets[i].value_file;
		bool covered = false;
		for (size_t k = 0; vf && !covered && k < o->n_secrets; k++) {
			char dir[128];   /* the name is a DNS label (inject.h) */
			(void)snprintf(dir, sizeof(dir), "/var/run/stockade/secrets/%s/", o->secrets[k].name);
			covered = !strncmp(vf, dir, strlen(dir));
		}
		if (!covered) {
			(void)fprintf(stderr, "stockade-policy inject: %s: secrets[%zu] (%s): valueFile %s is in no Secret "
				"mounted into the sidecar: add --api-secret NAME=SECRET and point valueFile at "
				"/var/run/stockade/secrets/NAME/<key>\n", policy_path, i, p->secrets[i].name, vf ? vf : "(none)");
			return -1;
		}
	}
	for (size_t j = 0; j < o->n_secret_env; j++) {
		bool found = false;
		for (size_t i = 0; !found && i < p->n_secrets; i++)
			found = p->secrets[i].placeholder && !strcmp(p->secrets[i].placeholder, o->secret_env[j].value);
		if (!found) {
			(void)fprintf(stderr, "stockade-policy inject: --secret-env %s=%s: no secret of %s has that "
				"placeholder\n", o->secret_env[j].name, o->secret_env[j].value, policy_path);
			return -1;
		}
	}
	return 0;
}

/* Everything after the options: the policy, the files, the output. */
static int run_inject(struct sk_inject_opts *o_, const char *const *files, size_t n_files, const char *policy_path,
		      const struct sk_guardrails *g, bool check, bool uid_flag, bool admin_flag, bool seccomp_flag)
{
	struct sk_inject_opts o = *o_;
	if (!token_ok("--init-image", o.init_image) || !token_ok("--sidecar-image", o.sidecar_image) ||
	    !token_ok("--policy-configmap", o.policy_configmap) ||
	    (o.seccomp_profile && !token_ok("--seccomp-profile", o.seccomp_profile)))
		return SK_EXIT_USAGE;
	if (o.agent_uid == o.sidecar_uid) {
		(void)fprintf(stderr, "stockade-policy inject: the agent and sidecar UIDs must differ (both %u)\n",
			(unsigned)o.agent_uid);
		return SK_EXIT_USAGE;
	}

	struct sk_err err = { 0 };
	/* a shape no pod can take is a usage error, said once, not a refusal per workload */
	if (sk_inject_opts_check(&o, &err) < 0) {
		(void)fprintf(stderr, "stockade-policy inject: %s\n", err.msg);
		return SK_EXIT_USAGE;
	}
	char *policy_text = NULL, *seccomp_yaml = NULL;
	char profile_name[SK_SCMP_NAME_SIZE];
	size_t policy_len = 0;
	if (policy_path) {
		/* The pod must agree with the policy the init and the sidecar will read: take its UIDs and port. */
		struct sk_diags diags = { 0 };
		struct sk_policy *p = NULL;
		if (sk_policy_load_file_ex(policy_path, -1, SK_LOAD_NO_FILE_CHECKS, &p, &diags) < 0) {
			sk_diags_print(&diags, stderr);
			sk_diags_free(&diags);
			(void)fprintf(stderr, "stockade-policy inject: %s: invalid policy\n", policy_path);
			return SK_EXIT_POLICY;
		}
		/* The installer skips a section the generator refuses, and the agent would never start: say so
		 * here, at the policy's line and column, as `check` does. */
		if (sk_seccomp_check_policy(p, &diags) < 0) {
			sk_diags_print(&diags, stderr);
			sk_diags_free(&diags);
			sk_policy_free(p);
			(void)fprintf(stderr, "stockade-policy inject: %s: invalid policy\n", policy_path);
			return SK_EXIT_POLICY;
		}
		/* admission would refuse the ConfigMap this writes: say so now, as check --guardrails does */
		if (g && sk_guardrails_check(p, g, &diags) > 0) {
			sk_diags_print(&diags, stderr);
			sk_diags_free(&diags);
			sk_policy_free(p);
			(void)fprintf(stderr, "stockade-policy inject: %s: exceeds the guardrails\n", policy_path);
			return SK_EXIT_POLICY;
		}
		sk_diags_free(&diags);
		const char *const *allow = (const char *const *)p->seccomp.allow;
		const char *const *deny = (const char *const *)p->seccomp.deny;
		if (sk_seccomp_profile_name(allow, p->seccomp.n_allow, deny, p->seccomp.n_deny, profile_name, &err) < 0 ||
		    !(seccomp_yaml = seccomp_section_yaml(p))) {
			sk_policy_free(p);
			(void)fprintf(stderr, "stockade-policy inject: out of memory\n");
			return SK_EXIT_RUNTIME;
		}
		if (secrets_unmounted(p, &o, policy_path) < 0) {
			sk_policy_free(p);
			free(seccomp_yaml);
			return SK_EXIT_USAGE;
		}
		bool clash = (uid_flag && (o.agent_uid != p->agent_uid || o.sidecar_uid != p->sidecar_uid)) ||
			     (admin_flag && o.admin_port != p->ports.admin);
		bool profile_clash = o.seccomp_profile && seccomp_flag && strcmp(o.seccomp_profile, profile_name) != 0;
		o.agent_uid = p->agent_uid;
		o.sidecar_uid = p->sidecar_uid;
		o.admin_port = p->ports.admin;
		o.policy_fixed = true;   /* the ConfigMap written below is the pod's policy */
		if (o.seccomp_profile) {
			o.seccomp_profile = profile_name;
			o.profile_fixed = true;
		}
		sk_policy_free(p);
		if (clash || profile_clash) {
			(void)fprintf(stderr, "stockade-policy inject: %s disagree%s with %s (leave %s out: the policy's %s used)\n",
				clash ? "--agent-uid/--sidecar-uid/--admin-port" : "--seccomp-profile", clash ? "" : "s",
				policy_path, clash ? "them" : "it", clash ? "are" : "profile name, " SK_SCMP_NAME_PREFIX
				"<hash of its seccomp section>.json, is");
			free(seccomp_yaml);
			return SK_EXIT_USAGE;
		}
		if (!(policy_text = sk_read_file(policy_path, INJECT_MAX_INPUT, &policy_len, &err))) {
			(void)fprintf(stderr, "stockade-policy inject: %s\n", err.msg);
			free(seccomp_yaml);
			return SK_EXIT_RUNTIME;
		}
	}

	int ex = SK_EXIT_OK;
	bool json = false;
	struct namespaces nss = { 0 };
	struct file_list fl = { 0 };
	cJSON *out = cJSON_CreateArray();
	if (!out) {
		free(policy_text);
		free(seccomp_yaml);
		return SK_EXIT_RUNTIME;
	}
	if (policy_text && !check && memchr(policy_text, 0, policy_len)) {
		(void)fprintf(stderr, "stockade-policy inject: %s: a NUL byte in the policy\n", policy_path);
		ex = SK_EXIT_POLICY;
		goto out;
	}
	if (o.cni)
		o.netns_policy = policy_text;
	if ((ex = expand_files(files, n_files, &fl)) != SK_EXIT_OK)
		goto out;
	for (size_t i = 0; i < fl.n; i++) {
		const char *name = strcmp(fl.path[i], "-") ? fl.path[i] : "<stdin>";
		size_t len;
		char *buf = sk_read_file(fl.path[i], INJECT_MAX_INPUT, &len, &err);
		if (!buf) {
			(void)fprintf(stderr, "stockade-policy inject: %s\n", err.msg);
			ex = SK_EXIT_RUNTIME;
			goto out;
		}
		cJSON *docs = NULL;
		bool is_json;
		int r = sk_manifest_parse(name, buf, len, &docs, &is_json, &err);
		free(buf);
		if (r < 0) {
			(void)fprintf(stderr, "%s\n", err.msg);
			ex = r == -ENOMEM ? SK_EXIT_RUNTIME : SK_EXIT_FAIL;
			goto out;
		}
		json = i == 0 ? is_json : json;
		int idx = 0;
		while (docs->child) {
			cJSON *d = cJSON_DetachItemViaPointer(docs, docs->child);
			if (one_doc(d, name, ++idx, NULL, &o, check, &nss))
				ex = SK_EXIT_FAIL;
			cJSON_AddItemToArray(out, d);
		}
		cJSON_Delete(docs);
	}
	if (policy_text && !check && ex == SK_EXIT_OK)
		ex = add_policy_configmaps(out, &nss, &o, policy_text, seccomp_yaml);
	if (ex == SK_EXIT_OK && !check && write_out(out, json) < 0) {
		(void)fprintf(stderr, "stockade-policy inject: write stdout failed\n");
		ex = SK_EXIT_RUNTIME;
	}
out:
	cJSON_Delete(out);
	file_list_free(&fl);
	free(policy_text);
	free(seccomp_yaml);
	return ex;
}

/* sidecar/config.h — the sidecar's run-time configuration: command-line flags and their STOCKADE_*
 * environment equivalents (flags win over the environment), validated up front so a bad value is a clear
 * usage error (exit SK_EXIT_USAGE from main) rather than a surprise later. Owns parsing only. */
#ifndef SK_SIDECAR_CONFIG_H
#define SK_SIDECAR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/err.h"

#define SK_DEFAULT_MARKER "/run/stockade/init.marker"  /* where the Helm chart mounts it */
#define SK_DEFAULT_DRAIN_SECONDS 10u

enum sk_log_level { SK_LOG_ERROR = 0, SK_LOG_WARN, SK_LOG_INFO, SK_LOG_DEBUG };

struct sk_config {
	char *policy_path;          /* --policy / STOCKADE_POLICY; required unless help/version */
	char *marker_path;          /* --marker / STOCKADE_MARKER; default SK_DEFAULT_MARKER */
	enum sk_log_level log_level;/* --log-level / STOCKADE_LOG_LEVEL: error|warn|info|debug; default info */
	char *admin_addr;           /* --admin-addr / STOCKADE_ADMIN_ADDR; NULL = all interfaces, policy port */
	unsigned drain_seconds;     /* STOCKADE_DRAIN_SECONDS (0..3600); default 10 */
	char *test_block_file;      /* STOCKADE_TEST_BLOCK_FILE: test-only hook, see health.h; NULL normally */
	bool help, version;         /* --help / --version: main prints and exits 0 */
};

/* Parses argv (argv[0] is the program) and envp (NULL-terminated "K=V" strings, may be NULL). On error
 * returns -EINVAL with a message naming the flag or variable and what was expected; cfg is then freed.
 * Strings in cfg are owned; release with sk_config_free. */
int sk_config_parse(int argc, char *const argv[], char *const envp[], struct sk_config *cfg, struct sk_err *err);
void sk_config_free(struct sk_config *cfg);
void sk_config_usage(FILE *out, const char *prog);

/* Resolves an admin address: "PORT", ":PORT", "HOST:PORT", "[V6]:PORT", "HOST" or "[V6]" (numeric hosts
 * only: this runs before DNS is trustworthy). A missing host means all interfaces ("::", dual-stack);
 * a missing port means default_port. Returns 0 or -EINVAL. */
int sk_config_admin_sockaddr(const char *addr, uint16_t default_port, struct sockaddr_storage *ss,
			     socklen_t *len, struct sk_err *err);

const char *sk_log_level_name(enum sk_log_level l);

#endif

/* injector/main.c — stockade-injector: the mutating admission webhook that wraps pods in stockade as they
 * are created (review.h), over HTTPS (server.h, tls.h). Settings: config.h (--help). Exit codes:
 * common/err.h (2: bad flags, the certificate files or the guardrails do not load; 5: cannot serve). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/read_file.h"
#include "injector/config.h"
#include "injector/review.h"
#include "injector/server.h"
#include "injector/tls.h"
#include "policy/guardrails.h"

#ifndef SK_VERSION
#define SK_VERSION "dev"
#endif

extern char **environ;

/* --help and --version leave a failed write to stdout's error indicator: checked here, as a failure */
static int stdout_done(const char *what)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return SK_EXIT_OK;
	(void)fprintf(stderr, "stockade-injector: %s: write stdout failed\n", what);
	return SK_EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
	struct sk_injector_config cfg;
	struct sk_err err = { 0 };
	if (sk_injector_config_parse(argc, argv, environ, &cfg, &err) < 0) {
		(void)fprintf(stderr, "stockade-injector: %s\n", err.msg);
		return SK_EXIT_USAGE;
	}
	if (cfg.help) {
		sk_injector_config_usage(stdout, "stockade-injector");
		sk_injector_config_free(&cfg);
		return stdout_done("--help");
	}
	if (cfg.version) {
		printf("stockade-injector %s\n", SK_VERSION);
		sk_injector_config_free(&cfg);
		return stdout_done("--version");
	}
	sk_log_init("stockade-injector", cfg.log_level);
	sk_log_set_format(cfg.log_format);

	int ex = SK_EXIT_OK;
	struct sk_tls *tls = NULL;
	int sfd = -1;
	struct sk_guardrails *guardrails = NULL;
	char *guardrails_text = NULL;
	struct sk_server_cfg scfg = {
		.threads = cfg.threads,
		.max_queue = cfg.max_queue,
		.request_timeout_ms = cfg.request_timeout_ms,
		.idle_timeout_ms = cfg.idle_timeout_ms,
		.max_requests = cfg.max_requests,
		.reload_ms = cfg.reload_ms,
	};
	struct sk_review_cfg rcfg = {
		.inject = &cfg.inject,
		.exclude_ns = cfg.exclude,
		.n_exclude = cfg.n_exclude,
		.max_body = cfg.max_body,
	};
	if (sk_server_parse_addr(cfg.listen, &scfg.addr, &scfg.addr_len, &err) < 0 ||
	    sk_tls_open(cfg.tls_cert, cfg.tls_key, &tls, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		ex = SK_EXIT_USAGE;
		goto out;
	}
	scfg.tls = tls;
	scfg.review = &rcfg;
	if (cfg.guardrails) {
		/* Read once: the chart rolls the injector when they change (a checksum annotation), so every
		 * thread reads one immutable model and a half-written file is never judged against. The same
		 * bytes go into every wrapped pod, for its sidecar (inject.h: opts.guardrails); an annotation
		 * holds at most 256 KiB. */
		size_t glen = 0;
		struct sk_diags gd = { 0 };
		if (!(guardrails_text = sk_read_file(cfg.guardrails, 256u << 10, &glen, &err))) {
			sk_log(SK_LOG_ERROR, "guardrails: %s", err.msg);
			ex = SK_EXIT_USAGE;
			goto out;
		}
		if (sk_guardrails_load_buffer(cfg.guardrails, guardrails_text, glen, &guardrails, &gd) < 0) {
			for (size_t i = 0; i < gd.n; i++)
				sk_log(SK_LOG_ERROR, "guardrails: %s:%u:%u: %s", gd.v[i].file, gd.v[i].line, gd.v[i].col,
				       gd.v[i].msg);
			sk_diags_free(&gd);
			ex = SK_EXIT_USAGE;
			goto out;
		}
		sk_diags_free(&gd);
		rcfg.guardrails = guardrails;
		cfg.inject.guardrails = guardrails_text;
		sk_log(SK_LOG_INFO, "guardrails %s (%s): every policy reviewed is held to them, every pod wrapped carries them", cfg.guardrails,
		       guardrails->content_hash);
	}

	/* Signals are read from a descriptor by the acceptor; blocked before any thread starts, so every
	 * worker inherits the mask. A peer that closes mid-write must not kill the process. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		sk_log(SK_LOG_ERROR, "signals: %s", strerror(errno));
		ex = SK_EXIT_RUNTIME;
		goto out;
	}
	char excl[512] = "";
	for (size_t i = 0, off = 0; i < cfg.n_exclude && off < sizeof(excl); i++)
		off += (size_t)snprintf(excl + off, sizeof(excl) - off, "%s%s", i ? "," : "", cfg.exclude[i]);
	sk_log(SK_LOG_INFO, "stockade-injector %s on %s: init %s, sidecar %s, policy ConfigMap %s, seccomp %s, %s "
	       "sidecar; never wraps namespaces %s", SK_VERSION, cfg.listen, cfg.inject.init_image,
	       cfg.inject.sidecar_image, cfg.inject.policy_configmap,
	       cfg.inject.seccomp_profile ? cfg.inject.seccomp_profile : "RuntimeDefault",
	       cfg.inject.native ? "native" : "classic", excl);
	if (sk_server_run(&scfg, sfd, &err) < 0) {
		sk_log(SK_LOG_ERROR, "%s", err.msg);
		ex = SK_EXIT_RUNTIME;
		goto out;
	}
	sk_log(SK_LOG_INFO, "stopped");
out:
	if (sfd >= 0)
		close(sfd);
	sk_tls_free(tls);
	sk_guardrails_free(guardrails);
	free(guardrails_text);
	sk_injector_config_free(&cfg);
	return ex;
}

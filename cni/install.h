/* cni/install.h — `stockade-cni install`, what the stockade-system DaemonSet runs on every node: copies the
 * plugin into the node's CNI bin directory, writes the plugin's kubeconfig from the DaemonSet's
 * service-account token (outside the CNI configuration directory, mode 0600), and chains the plugin's
 * entry last into the configuration the kubelet uses — the first of the directory's `.conf`, `.conflist`
 * and `.json` files in lexicographic order, as libcni picks it; a single-plugin `.conf` becomes a
 * `.conflist` of the same name. Every write is atomic (temporary file, rename) and happens only when the
 * content differs, so running it twice leaves one entry and an unchanged file is never touched (which also
 * keeps the watch loop from waking itself). The watch loop re-inserts the entry when the primary CNI
 * rewrites its file (inotify) and refreshes the kubeconfig when the projected token rotates; uninstall
 * removes the entry. Paths are the node's, opened under host_root (the DaemonSet's hostPath mounts). */
#ifndef SK_CNI_INSTALL_H
#define SK_CNI_INSTALL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/util.h"

struct cJSON;

#define SK_CNI_PLUGIN_TYPE "stockade-cni"
/* The largest CNI configuration file the installer reads: a conflist is a few KB. */
#define SK_CNI_CONF_MAX (1u << 20)

struct sk_cni_install {
	const char *host_root;    /* prefix of every node path below ("" or NULL: none) */
	const char *conf_dir;     /* the node's CNI configuration directory (/etc/cni/net.d) */
	const char *bin_dir;      /* the node's CNI bin directory (/opt/cni/bin) */
	const char *binary;       /* the plugin to copy (the running binary) */
	const char *kubeconfig;   /* node path of the kubeconfig written for the plugin */
	const char *server;       /* the API server URL written into it */
	const char *ca_file;      /* the service account's CA (read, embedded as data) */
	const char *token_file;   /* the service account's token (read, embedded) */
	const char *system_ns;    /* the entry's systemNamespace; NULL: the plugin's default */
};

/* The plugin's entry in a conflist: {"type":"stockade-cni","kubeconfig":...,"systemNamespace":...}. Owned;
 * NULL on ENOMEM. */
struct cJSON *sk_cni_install_entry(const struct sk_cni_install *o);

/* Pure: puts entry into the parsed configuration doc (a conflist with "plugins", or a single-plugin conf,
 * which becomes a conflist: its cniVersion and name move up, the rest is the first plugin). An existing
 * entry of type stockade-cni is replaced in place (a second one removed); else entry is appended.
 * remove: takes every such entry out instead. Returns 1 when doc changed, 0 when it already was so,
 * -EINVAL when doc is not a CNI configuration (err says why). doc may be replaced (*doc). */
SK_MUST_USE int sk_cni_conf_edit(struct cJSON **doc, const struct cJSON *entry, bool remove, struct sk_err *err);

/* The configuration file the kubelet uses: the first of dir's *.conf, *.conflist, *.json by strcmp. Owned
 * path; -ENOENT when there is none. */
SK_MUST_USE int sk_cni_conf_pick(const char *dir, char **path, struct sk_err *err);

/* Chains (or with remove, unchains) the entry into the picked file; *changed says a file was written. A
 * .conf or .json is written as NAME.conflist and the original removed. */
SK_MUST_USE int sk_cni_install_conf(const struct sk_cni_install *o, bool remove, bool *changed, struct sk_err *err);
/* Writes the kubeconfig (JSON: server, certificate-authority-data, token), mode 0600, its directory created
 * 0700 when missing; *changed when written. */
SK_MUST_USE int sk_cni_install_kubeconfig(const struct sk_cni_install *o, bool *changed, struct sk_err *err);
/* Copies binary into bin_dir/stockade-cni, mode 0755, by rename (a running plugin keeps its old inode). */
SK_MUST_USE int sk_cni_install_binary(const struct sk_cni_install *o, bool *changed, struct sk_err *err);
/* The three above, in the order a first install needs (the entry last: the kubelet may use it at once). */
SK_MUST_USE int sk_cni_install_all(const struct sk_cni_install *o, struct sk_err *err);

/* Installs, then watches conf_dir until stop_fd is readable (main's signalfd): any change there re-runs
 * the chaining, and every refresh_ms the kubeconfig is rewritten if the token changed. On stop, with
 * uninstall, the entry is removed. */
SK_MUST_USE int sk_cni_install_watch(const struct sk_cni_install *o, int stop_fd, int refresh_ms, bool uninstall,
				     struct sk_err *err);

#endif

/* common/settings.h — a program's run-time settings as one table of rows (flag, STOCKADE_* variable, kind,
 * range, default, help, the field of the program's config struct it lands in), and the one reader of
 * them: defaults, the environment, then argv, so a flag wins over its variable. stockade-sidecar
 * (sidecar/core/config.c), stockade-injector (injector/config.c) and stockade-init (init/main.c) each keep
 * their table and config struct;
 * how a value is read, what an error says and how a row is named in --help are this module's.
 *
 * The conventions, the same for every program:
 *  - an empty variable counts as unset (Kubernetes renders optional values as ""); an empty flag value
 *    (`--flag=` or `--flag ""`) is an error;
 *  - `--flag VALUE` and `--flag=VALUE` alike; a boolean flag alone means true and never takes the next
 *    argument; a flag given twice keeps the last value;
 *  - a malformed value, from a flag or the environment, is an error naming the flag ("--max-conns: ...")
 *    or the variable ("STOCKADE_MAX_CONNS: ...") and what was expected; nothing falls back to a default;
 *  - an argument that is not a table flag or a switch (--help...) is "unknown flag '--x' (see --help)" or
 *    "unexpected argument 'x' (see --help)".
 * Text values are copies owned by the config (its `char *owned[]`, given to the table by offset), or a
 * row's static default; they live until sk_settings_free. */
#ifndef SK_COMMON_SETTINGS_H
#define SK_COMMON_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"

struct sk_err;
struct sk_setting;

/* What a setting's value is: how it is read and how --help and error messages name it. */
struct sk_setting_kind {
	const char *metavar;   /* --help's "--flag METAVAR" */
	const char *expected;  /* what a value must be, as messages say it ("a path"); NULL: "an integer in
	                        * MIN..MAX" from the row */
	const char *accepts;   /* the markdown table's short form ("text, json"); NULL: expected, or MIN..MAX */
	/* Stores a non-empty value into the row's field; -EINVAL when it is not what `expected` says (the
	 * message is worded by the caller). NULL: a text kind, the field is a `const char *` set to a copy. */
	int (*parse)(const struct sk_setting *s, const char *value, void *field);
	/* Text kinds, optional: refuses a value before it is copied, with its own message naming `what` (the
	 * flag or the variable); sk_setting_refuse words the usual one. */
	int (*check)(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
};

/* The kinds every program has. A uint field is 2, 4 or 8 bytes wide (uint16_t, uint32_t/unsigned/int,
 * uint64_t/size_t): min..max must fit it (each program's table test checks). */
extern const struct sk_setting_kind sk_setting_uint;    /* decimal digits only, in min..max */
extern const struct sk_setting_kind sk_setting_bool;    /* true/false, 1/0, yes/no, on/off */
extern const struct sk_setting_kind sk_setting_path;    /* any text */
extern const struct sk_setting_kind sk_setting_level;   /* enum sk_log_level */
extern const struct sk_setting_kind sk_setting_logfmt;  /* enum sk_log_format */
#define SK_SET_UINT (&sk_setting_uint)
#define SK_SET_BOOL (&sk_setting_bool)
#define SK_SET_PATH (&sk_setting_path)
#define SK_SET_LEVEL (&sk_setting_level)
#define SK_SET_LOGFMT (&sk_setting_logfmt)

/* One row of a table. */
struct sk_setting {
	const char *flag;        /* without "--"; NULL: environment only (test hooks) */
	const char *env;         /* STOCKADE_*; NULL: flag only (stockade-init, whose settings are the pod's) */
	const struct sk_setting_kind *type;
	uint64_t min, max;       /* SK_SET_UINT: the accepted range; other kinds may use them as they say */
	const char *def;         /* the default as text (parsed like any value, kept static); NULL: unset */
	const char *help;
	size_t off, size;        /* the field in the program's config struct */
	bool test_only;
};

/* An argument that sets a bool field and takes no value: "--help", "-h", "--version". */
struct sk_settings_switch {
	const char *arg;
	size_t off;
};

/* A program's table: its rows, its switches, and where its config keeps the copies of text values. */
struct sk_settings {
	const struct sk_setting *rows;
	size_t n;
	const struct sk_settings_switch *switches;
	size_t n_switches;
	size_t owned_off;        /* `char *owned[max_strings]` in the config */
	size_t max_strings;
	bool terse_empty;        /* "--x: empty value" without "(expected ...)": stockade-injector's wording */
	/* Arguments after the options (stockade-init's `-- PROGRAM [ARG...]`): as getopt's "+", the first
	 * argument that is not an option ("x", "-") ends the options, and so does "--", which is consumed; the
	 * index of the first argument left (argc when none) lands in the int at rest_off. false: every
	 * argument must be an option or a switch. */
	bool positional;
	size_t rest_off;
};

/* Sets every row with a default to it (static text, no copy); the rest of cfg is left as it is. A default
 * that does not parse is left unapplied: the program's table test checks each one parses. */
void sk_settings_defaults(const struct sk_settings *t, void *cfg);
/* Reads envp (NULL-terminated "K=V", may be NULL), then argv (argv[0] is the program) over what cfg holds
 * (up to the first positional argument when the table takes them).
 * 0, or -EINVAL (-ENOMEM) with err naming the flag or variable; the copies made so far stay owned by cfg
 * either way (sk_settings_free releases them). */
SK_MUST_USE int sk_settings_parse(const struct sk_settings *t, int argc, char *const argv[], char *const envp[],
				  void *cfg, struct sk_err *err);
/* Frees the copies and clears the owned slots (the fields pointing at them are left dangling: the caller
 * clears its config). */
void sk_settings_free(const struct sk_settings *t, void *cfg);

/* The row's metavar ("N", "PATH"...), what a value must be ("an integer in 1..256") and the short form
 * for a table ("1..256"): for --help texts. */
const char *sk_setting_metavar(const struct sk_setting *s);
void sk_setting_expected(const struct sk_setting *s, char *buf, size_t len);
void sk_setting_accepts(const struct sk_setting *s, char *buf, size_t len);
/* "WHAT: 'VALUE' is not EXPECTED" into err; returns -EINVAL. For a kind's check. */
int sk_setting_refuse(const struct sk_setting *s, const char *value, const char *what, struct sk_err *err);
/* The rows as a markdown table: flag, environment, accepts, default, meaning (docs/operating.md). A failed
 * write is left to out's error indicator: the caller checks fflush and ferror. */
void sk_settings_md(FILE *out, const struct sk_settings *t);

#endif

/* common/util.h — resource-cleanup helpers (borrowed from bubblewrap/crun) and small inlines. */
#ifndef SK_COMMON_UTIL_H
#define SK_COMMON_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void sk_freep(void *p) { free(*(void **)p); }
static inline void sk_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void sk_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define sk_autofree __attribute__((cleanup(sk_freep)))
#define sk_autoclose __attribute__((cleanup(sk_closep)))
#define sk_autofclose __attribute__((cleanup(sk_fclosep)))

/* Hands ownership on: returns *pp and clears it so the cleanup attribute does nothing. */
static inline void *sk_steal_pointer(void *pp)
{
	void **p = (void **)pp;
	void *r = *p;
	*p = NULL;
	return r;
}
static inline int sk_steal_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

#define SK_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* On a function whose result must not be ignored: its error return (a dropped failure is a bug), or a
 * verdict the caller has to act on. GCC does not let `(void)` silence it, so a function that some caller
 * may rightly ignore (sk_timer_arm, where a failed re-arm has its own fallback) is not marked; those
 * callers write `(void)f(...)` with a comment saying why. */
#define SK_MUST_USE __attribute__((warn_unused_result))

#endif

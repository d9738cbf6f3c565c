/* SPDX-License-Identifier: MIT */
/*
 * preload.h - what the LD_PRELOAD interposer's files share: glibc's own
 * functions (preload_real.h), the one test of every interposed fast path
 * (careful, and the glibc-only bits of a mutex's __kind), the depth of
 * the thread's slow paths and the call's caller for the stats (the rules
 * are preload.c's).
 */
#ifndef PLK_PRELOAD_H
#define PLK_PRELOAD_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <threads.h>

#include "lockstat.h"
#include "lockword.h"
#include "preload_real.h"

#define PLK_EXPORT __attribute__((visibility("default")))

/* glibc's __kind bits for the mutexes that stay glibc's. */
#define GLIBC_ROBUST 0x10u
#define GLIBC_PRIO_INHERIT 0x20u
#define GLIBC_PRIO_PROTECT 0x40u
#define GLIBC_PSHARED 0x80u
#define GLIBC_ONLY (GLIBC_ROBUST | GLIBC_PRIO_INHERIT | GLIBC_PRIO_PROTECT | GLIBC_PSHARED)

/** plk_slow_depth - how many of the interposer's slow paths the thread is
 * inside (preload.c says why and what it changes). */
PLK_HIDDEN extern __thread unsigned plk_slow_depth __attribute__((tls_model("initial-exec")));

static inline bool plk_mutex_is_glibc(const pthread_mutex_t *pm)
{
	return ((const proxylock_mutex_t *)pm)->__flags & GLIBC_ONLY;
}

/*
 * The one test on every interposed fast path besides the lock's own
 * kind: are operations counted (PROXYLOCK_STATS)?  Acquire pairs with
 * plk_lockstat_enable()'s release, so a caller that counts sees the
 * tables it set up.  On x86 a plain move; on arm64 an ldar.
 */
static inline bool plk_careful(void)
{
	return __atomic_load_n(&plk_lockstat_on, __ATOMIC_ACQUIRE);
}

/* The interposed call's caller, for the stats' call sites (lockstat.h):
 * read only on the careful paths, in the exported function itself. */
#define PLK_RETURN_ADDRESS() ((uintptr_t)__builtin_return_address(0))

/* What an interposed lock call asks for: the lock, a try, or the lock
 * by a deadline. */
enum plk_lock_op { PLK_OP_LOCK, PLK_OP_TRY, PLK_OP_TIMED };

/* A pthread error number as C11's thrd_* result. */
static inline int plk_thrd_of(int err)
{
	switch (err) {
	case 0:
		return thrd_success;
	case EBUSY:
		return thrd_busy;
	case ETIMEDOUT:
		return thrd_timedout;
	case ENOMEM:
		return thrd_nomem;
	default:
		return thrd_error;
	}
}

#endif /* PLK_PRELOAD_H */

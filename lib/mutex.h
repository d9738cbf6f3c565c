/* SPDX-License-Identifier: MIT */
/*
 * mutex.h - the lock protocol's slow paths (mutex.c), for the callers
 * of the fast paths (lockword.h): the public calls, the condvar and the
 * interposer.  A waiter's watch on its lock's owner is robust.h's.
 */
#ifndef PLK_MUTEX_H
#define PLK_MUTEX_H

#include <stdbool.h>
#include <time.h>

#include "futex.h"
#include "proxylock.h"

struct plk_thread;

/**
 * plk_mutex_lock_slow - everything lock does after a failed fast path:
 * relock rules, spin, queue, lend, sleep.  @abstime NULL: no deadline.
 */
PLK_HIDDEN int plk_mutex_lock_slow(proxylock_mutex_t *m, clockid_t clock,
                                   const struct timespec *abstime);

/**
 * plk_mutex_unlock_slow - unlock after a failed fast path.  @lax: glibc's
 * rules for NORMAL and ADAPTIVE (a non-owner's unlock releases the lock,
 * an unlocked mutex's unlock succeeds); otherwise EPERM for those.
 */
PLK_HIDDEN int plk_mutex_unlock_slow(proxylock_mutex_t *m, bool lax);

/**
 * plk_mutex_lock_retake - a condvar wait retaking @m after a failed fast
 * path: as plk_mutex_lock_slow with no deadline, but never EDEADLK (a
 * wait may not return without its mutex; in a real cycle it waits).
 */
PLK_HIDDEN int plk_mutex_lock_retake(proxylock_mutex_t *m);

/**
 * plk_mutex_lock_requeued - take @m after being woken (PLK_PARK_WOKEN)
 * off @m's queue onto which a condvar moved us: as a woken waiter (M3:
 * enq_ns kept), and never EDEADLK (as plk_mutex_lock_retake).  @me is
 * the caller's record.
 */
PLK_HIDDEN int plk_mutex_lock_requeued(proxylock_mutex_t *m, struct plk_thread *me);

/**
 * plk_mutex_abandon_wait - stop waiting on @m, on whose queue a condvar
 * moved @me (its wait was cancelled): leave the queue keeping M1 and move
 * what we lent.  Returns true if @m turned out to be ours (handed to us,
 * or free and taken).
 */
PLK_HIDDEN bool plk_mutex_abandon_wait(proxylock_mutex_t *m, struct plk_thread *me);

#endif /* PLK_MUTEX_H */

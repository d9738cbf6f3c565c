/* SPDX-License-Identifier: MIT */
/*
 * robust.h - owners that exited holding a lock (robust.c): what the lock
 * protocol (mutex.c) and the condvar (cond.c) do when a liveness slice
 * (liveness.h), a robust lock's sleep or its trylock finds the owner
 * gone.  Nothing here is on an uncontended path.
 */
#ifndef PLK_ROBUST_H
#define PLK_ROBUST_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "futex.h"
#include "proxylock.h"
#include "waitq.h"

/**
 * plk_robust_owner_check - a liveness slice of @me, asleep on @m's queue,
 * ended: if @m's owner has exited, say so (stats, probe) and, for a
 * robust @m, take it: EOWNERDEAD, @me off the queue and owning @m.  Else
 * -1: sleep on.
 */
PLK_HIDDEN int plk_robust_owner_check(proxylock_mutex_t *m, struct plk_thread *me);

/* What plk_take_from_dead did, for plk_dead_done. */
enum { PLK_DEAD_STALE, PLK_DEAD_TAKEN, PLK_DEAD_STALLED };

/**
 * plk_take_from_dead - @m's owner @dead exited holding it; @m's bucket
 * @b is locked and @w is the word.  A robust @m becomes @self's, off the
 * queue if @me is on it, marked PLK_OWNER_DIED until
 * proxylock_mutex_consistent(), with the other waiters lending to @self
 * (M1 kept): PLK_DEAD_TAKEN.  Any other lock stays as it is:
 * PLK_DEAD_STALLED the first time waiter @me finds it, so it reports it
 * once, else PLK_DEAD_STALE (as when the word moved on).  Nobody but the
 * dead owner could release @m, and every other writer of the word holds
 * @b, so it cannot change.  The caller reports, unlocked, with
 * plk_dead_done.  @me may be NULL for a robust @m (trylock).
 */
PLK_HIDDEN int plk_take_from_dead(struct plk_bucket *b, proxylock_mutex_t *m, uint32_t w,
                                  uint32_t self, struct plk_thread *me, pid_t dead);

/**
 * plk_dead_done - after plk_take_from_dead returned @what, with no
 * bucket lock held: report, and if @m was taken, let the dead owner's
 * record give up what @m lent it.  Returns EOWNERDEAD if @m is ours,
 * else -1.
 */
PLK_HIDDEN int plk_dead_done(proxylock_mutex_t *m, pid_t dead, int what);

/**
 * plk_trylock_dead - trylock of robust @m found it busy with word @w:
 * take it if its owner has exited (EOWNERDEAD), else EBUSY.
 */
PLK_HIDDEN int plk_trylock_dead(proxylock_mutex_t *m, uint32_t w, uint32_t self);

/**
 * plk_mutex_make_unrecoverable - the owner unlocked robust @m, taken
 * with EOWNERDEAD, without calling proxylock_mutex_consistent(): @m is
 * unusable from now on, and every waiter is woken, off the queue, to be
 * told so (ENOTRECOVERABLE).  The caller's record gives up what @m lent
 * it.  Called with no internal lock held.
 */
PLK_HIDDEN void plk_mutex_make_unrecoverable(proxylock_mutex_t *m);

#endif /* PLK_ROBUST_H */

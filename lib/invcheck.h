/* SPDX-License-Identifier: MIT */
/*
 * invcheck.h - the named checks of the lock invariants, for the points
 * the lock files' comments name (-Ddebug_invariants=true; invariant.h).
 *
 * Each check asserts what one invariant of docs/design.md says, as far
 * as it can be seen at one point by the thread that calls it, and
 * aborts naming it.  Without the option each is an empty inline
 * function: its arguments are plain values, nothing is computed.
 *
 * Woken waiters.  M1 and RW2 allow a queue behind a word that does not
 * show it (no WAITERS; a free rwlock with WAITERS) only while a waiter
 * woken with the duty of coming back is on its way.  So the checks count
 * those waiters per bucket: the waker calls plk_inv_woken() under the
 * bucket as it wakes one (mutex.c's unlock, cond.c's wake of the first
 * waiter onto a free mutex, rwlock.c's writer woken to compete), the
 * woken waiter plk_inv_back() as soon as it holds that bucket again.  A
 * count is per bucket, not per lock, so a check may pass that a lock's
 * own count would fail; it never fails one that holds.
 */
#ifndef PLK_INVCHECK_H
#define PLK_INVCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "invariant.h"
#include "lockword.h"
#include "registry.h"
#include "rwlockword.h"
#include "waitq.h"

#ifdef PLK_DEBUG_INVARIANTS

/** plk_inv_bucket_held - "held": @b is @key's bucket, and this thread
 * holds it (the queue, blocked_on and the park words are written only
 * so: waitq.c; a lend is recorded only so: I3, K1). */
PLK_HIDDEN void plk_inv_bucket_held(const struct plk_bucket *b, const void *key);

/** plk_inv_woken - under @key's bucket @b, @t was just taken off @key's
 * queue and woken with M1's (or RW8's) duty to come back to @b. */
PLK_HIDDEN void plk_inv_woken(struct plk_bucket *b, struct plk_thread *t, const void *key);

/** plk_inv_back - under @at's bucket @b: the caller @me, if woken with a
 * duty to a queue of that bucket, is back and takes it up (uncounted).
 * @me may be NULL (no record: never woken). */
PLK_HIDDEN void plk_inv_back(struct plk_bucket *b, struct plk_thread *me, const void *at);

/**
 * plk_inv_mutex_m1 - at a hold of @m's bucket @b (taken, or about to be
 * dropped): M6, a reserved word (destroyed, not recoverable) has no
 * WAITERS; M1, if @m's queue is non-empty, the word shows WAITERS, or a
 * waiter woken with the duty of coming back is on its way.
 */
PLK_HIDDEN void plk_inv_mutex_m1(struct plk_bucket *b, const proxylock_mutex_t *m);

/**
 * plk_inv_mutex_m2_release - the slow unlock under @m's bucket @b,
 * before it writes the word: M2, only the release clears WAITERS, and
 * the owner came here because it saw WAITERS, so the word still shows
 * them and (unless @foreign, a non-owner's unlock) names the caller.
 */
PLK_HIDDEN void plk_inv_mutex_m2_release(struct plk_bucket *b, const proxylock_mutex_t *m,
                                         bool foreign);

/**
 * plk_inv_mutex_m1_bare_release - a slow unlock about to release @m
 * without its bucket (the word shows no WAITERS: a RECURSIVE count, a
 * fork alias's word, a foreign unlock): M1, nobody is queued on @m but
 * behind a woken waiter on its way back, or the release strands them.
 * Takes and drops @m's bucket; no internal lock may be held.
 */
PLK_HIDDEN void plk_inv_mutex_m1_bare_release(proxylock_mutex_t *m);

/** plk_inv_mutex_m4 - a handoff, before @head's park word says HANDED:
 * M4, @m's word names @head. */
PLK_HIDDEN void plk_inv_mutex_m4(const proxylock_mutex_t *m, const struct plk_thread *head);

/**
 * plk_inv_rw - at a hold of @rw's bucket @b (taken, or about to be
 * dropped): RW1, a non-empty queue means WAITERS; RW2's consequence, a
 * free @rw shows WAITERS only while a writer woken to compete is on its
 * way back (RW8); RW9, __solo names no reader while the word counts none
 * (free, write-held, or a solo hold).  A destroyed @rw is left alone.
 */
PLK_HIDDEN void plk_inv_rw(struct plk_bucket *b, const proxylock_rwlock_t *rw);

/** plk_inv_rw_rw2_clear - under @rw's bucket @b, as WAITERS is cleared:
 * RW2, nobody is queued. */
PLK_HIDDEN void plk_inv_rw_rw2_clear(struct plk_bucket *b, const proxylock_rwlock_t *rw);

/** plk_inv_rw_rw4 - a grant, before @t's park word says HANDED: RW4,
 * the word shows it (a writer: WRITER and @t's TID; a reader: read-held)
 * and a tracked reader's reserved slot names @rw. */
PLK_HIDDEN void plk_inv_rw_rw4(const proxylock_rwlock_t *rw, const struct plk_thread *t);

/** plk_inv_i1_target - @t's record lock held: I1, with T.held empty,
 * E(T) = E_L(T) = B(T): what a restore installs is exactly the base. */
PLK_HIDDEN void plk_inv_i1_target(const struct plk_thread *t);

/**
 * plk_inv_i1_restored - at the end of @self's own unlock's withdrawal,
 * no internal lock held: I1, if @self is lent nothing, holds no token,
 * has no orphan out and no generation left to apply, the kernel's view
 * (T.applied, I2) is B(T).  Takes and drops @self's record lock.
 */
PLK_HIDDEN void plk_inv_i1_restored(struct plk_thread *self);

#else /* !PLK_DEBUG_INVARIANTS: nothing */

static inline void plk_inv_bucket_held(const struct plk_bucket *b, const void *key)
{ (void)b; (void)key; }
static inline void plk_inv_woken(struct plk_bucket *b, struct plk_thread *t, const void *key)
{ (void)b; (void)t; (void)key; }
static inline void plk_inv_back(struct plk_bucket *b, struct plk_thread *me, const void *at)
{ (void)b; (void)me; (void)at; }
static inline void plk_inv_mutex_m1(struct plk_bucket *b, const proxylock_mutex_t *m)
{ (void)b; (void)m; }
static inline void plk_inv_mutex_m2_release(struct plk_bucket *b, const proxylock_mutex_t *m,
                                            bool foreign)
{ (void)b; (void)m; (void)foreign; }
static inline void plk_inv_mutex_m1_bare_release(proxylock_mutex_t *m)
{ (void)m; }
static inline void plk_inv_mutex_m4(const proxylock_mutex_t *m, const struct plk_thread *head)
{ (void)m; (void)head; }
static inline void plk_inv_rw(struct plk_bucket *b, const proxylock_rwlock_t *rw)
{ (void)b; (void)rw; }
static inline void plk_inv_rw_rw2_clear(struct plk_bucket *b, const proxylock_rwlock_t *rw)
{ (void)b; (void)rw; }
static inline void plk_inv_rw_rw4(const proxylock_rwlock_t *rw, const struct plk_thread *t)
{ (void)rw; (void)t; }
static inline void plk_inv_i1_target(const struct plk_thread *t)
{ (void)t; }
static inline void plk_inv_i1_restored(struct plk_thread *self)
{ (void)self; }

#endif /* PLK_DEBUG_INVARIANTS */

#endif /* PLK_INVCHECK_H */

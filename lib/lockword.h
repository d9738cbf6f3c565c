/* SPDX-License-Identifier: MIT */
/*
 * lockword.h - the lock word's encoding, shared by mutex.c (which owns it
 * and documents it at its top) and the donation engine.
 */
#ifndef PLK_LOCKWORD_H
#define PLK_LOCKWORD_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "futex.h"
#include "proxylock.h"
#include "registry.h"
#include "tsan.h"

#define PLK_WAITERS 0x80000000u     /* FUTEX_WAITERS */
#define PLK_OWNER_DIED 0x40000000u  /* FUTEX_OWNER_DIED: robust, inconsistent */
#define PLK_TID_MASK 0x3fffffffu    /* FUTEX_TID_MASK */

/* Owner values no thread can have (TIDs stay below PID_MAX_LIMIT, 2^22):
 * both make every fast path fail, so checking them costs nothing there. */
#define PLK_TID_RESERVED 0x3ffffff0u
#define PLK_TID_DESTROYED 0x3ffffffeu       /* proxylock_mutex_destroy */
#define PLK_TID_NOTRECOVERABLE 0x3fffffffu  /* robust, unlocked inconsistent */

#define PLK_TYPE_MASK 0x3u
#define PLK_ROBUST 0x10u          /* glibc's PTHREAD_MUTEX_ROBUST_NORMAL_NP bit */
#define PLK_NODONATE_SHIFT 24     /* kinds *not* lent, so zero lends all;
                                     above every bit glibc uses in __kind */
/* glibc's elision bits (PTHREAD_MUTEX_ELISION_NP, _NO_ELISION_NP): a
 * pthread_mutex_t that glibc's own init gave them is still a proxylock
 * under the interposer. */
#define PLK_GLIBC_ELISION 0x300u
#define PLK_FLAGS_KNOWN (PLK_TYPE_MASK | PLK_ROBUST | PLK_GLIBC_ELISION | \
                         ((uint32_t)PROXYLOCK_DONATE_ALL << PLK_NODONATE_SHIFT))

/** plk_word_reserved - true if word @w names no thread but a state. */
static inline bool plk_word_reserved(uint32_t w)
{
	return (w & PLK_TID_MASK) >= PLK_TID_RESERVED;
}

/** plk_flags_valid - false for storage no init call or initializer wrote. */
static inline bool plk_flags_valid(const proxylock_mutex_t *m)
{
	return (m->__flags & ~PLK_FLAGS_KNOWN) == 0;
}

static inline uint32_t plk_word(const proxylock_mutex_t *m)
{
	return __atomic_load_n(&m->__word, __ATOMIC_ACQUIRE);
}

/** plk_cas_word - CAS @m's word from @expect to @want (acquire). */
static inline bool plk_cas_word(proxylock_mutex_t *m, uint32_t expect, uint32_t want)
{
	return __atomic_compare_exchange_n(&m->__word, &expect, want, 0,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline int plk_type(const proxylock_mutex_t *m)
{
	return (int)(m->__flags & PLK_TYPE_MASK);
}

/**
 * plk_owner_tid - the live TID owning a word: in a fork child, a TID the
 * forking thread had before any of the forks that led here names that
 * thread under its new TID (registry.h: fork aliases).
 */
static inline pid_t plk_owner_tid(uint32_t w)
{
	uint32_t tid = w & PLK_TID_MASK;

	if (tid >= PLK_TID_RESERVED)
		return 0;
	if (plk_fork_alias(tid))
		return (pid_t)plk_forked_tid();
	return (pid_t)tid;
}

/**
 * plk_owner_tid_locked - plk_owner_tid for callers holding an internal
 * lock, which may make no syscall (I5): a TID the forked thread had
 * before a fork counts as its alias without asking the kernel whether a
 * new thread of ours took it since.  Wrong only if TIDs wrapped in a
 * fork child and the new thread contends: then a lend goes to the forked
 * thread instead, until that lock's queue changes (docs/design.md).
 */
static inline pid_t plk_owner_tid_locked(uint32_t w)
{
	uint32_t tid = w & PLK_TID_MASK;

	if (tid >= PLK_TID_RESERVED)
		return 0;
	if (__atomic_load_n(&plk_fork_naliases, __ATOMIC_RELAXED) && plk_fork_alias_listed(tid))
		return (pid_t)plk_forked_tid();
	return (pid_t)tid;
}

/** plk_owned_by_self - true if word @w names the caller as owner. */
static inline bool plk_owned_by_self(uint32_t w, uint32_t self)
{
	uint32_t tid = w & PLK_TID_MASK;

	return tid == self || (plk_fork_alias(tid) && self == plk_forked_tid());
}

/*
 * The fast paths, inline so that proxylock_mutex_* and the interposer's
 * pthread_mutex_* are each one CAS when uncontended: lock 0 -> TID,
 * unlock TID -> 0 (fails, to the slow path, whenever the word is not our
 * bare TID or a RECURSIVE count is pending).
 */
static inline bool plk_mutex_lock_fast(proxylock_mutex_t *m)
{
	uint32_t zero = 0;

	return __atomic_compare_exchange_n(&m->__word, &zero, plk_tid(), 0,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline bool plk_mutex_unlock_fast(proxylock_mutex_t *m)
{
	uint32_t self = plk_tid();

	return __atomic_load_n(&m->__count, __ATOMIC_RELAXED) == 0 &&
	       __atomic_compare_exchange_n(&m->__word, &self, 0, 0,
	                                   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/*
 * ThreadSanitizer's custom-mutex annotations, as Abseil's Mutex makes
 * them: TSan then knows a proxylock as a lock (reports lock-order
 * inversions and misuse, names held locks in race reports) and ignores
 * the mutex's own atomics between pre and post.  @may_fail: the call can
 * return without the lock (trylock, deadlines, EDEADLK), which TSan wants
 * flagged as a try.  They compile to nothing in other builds.
 */
#if PLK_TSAN
static inline unsigned plk_tsan_flags(const proxylock_mutex_t *m, bool may_fail, int err)
{
	return (plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE ? __tsan_mutex_write_reentrant : 0) |
	       (may_fail ? __tsan_mutex_try_lock : 0) | (err ? __tsan_mutex_try_lock_failed : 0);
}
/*
 * Robust mutexes are not described to TSan: nothing in its interface
 * says that a dead thread's hold passed to another (its own pthread
 * interceptor repairs that state internally), so every EOWNERDEAD would
 * read as a double lock.  Their word's acquire/release atomics still
 * give TSan its happens-before edges; lock-order checks are what is lost.
 */
#define plk_tsan_annotated(m) (!((m)->__flags & PLK_ROBUST))
#define plk_tsan_pre_lock(m, may_fail) \
	(plk_tsan_annotated(m) ? __tsan_mutex_pre_lock((m), plk_tsan_flags((m), (may_fail), 0)) : (void)0)
/* EOWNERDEAD: acquired (robust, from a dead owner). */
#define plk_tsan_post_lock(m, may_fail, err) \
	(plk_tsan_annotated(m) ? __tsan_mutex_post_lock((m), plk_tsan_flags((m), (may_fail), \
	                         (err) && (err) != EOWNERDEAD), 0) : (void)0)
#define plk_tsan_pre_unlock(m) (plk_tsan_annotated(m) ? (void)__tsan_mutex_pre_unlock((m), 0) : (void)0)
#define plk_tsan_post_unlock(m) (plk_tsan_annotated(m) ? __tsan_mutex_post_unlock((m), 0) : (void)0)
#define plk_tsan_create(m) \
	(plk_tsan_annotated(m) ? __tsan_mutex_create((m), plk_tsan_flags((m), false, 0)) : (void)0)
#define plk_tsan_destroy(m) (plk_tsan_annotated(m) ? __tsan_mutex_destroy((m), 0) : (void)0)
#else
#define plk_tsan_pre_lock(m, may_fail) ((void)0)
#define plk_tsan_post_lock(m, may_fail, err) ((void)0)
#define plk_tsan_pre_unlock(m) ((void)0)
#define plk_tsan_post_unlock(m) ((void)0)
#define plk_tsan_create(m) ((void)0)
#define plk_tsan_destroy(m) ((void)0)
#endif

/** plk_lock_may_fail - can a blocking lock of @m return without it? */
static inline bool plk_lock_may_fail(const proxylock_mutex_t *m)
{
	return plk_type(m) == PROXYLOCK_MUTEX_ERRORCHECK || plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE ||
	       (m->__flags & PLK_ROBUST);
}

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
 * off @m's queue onto which a condvar moved us: as a woken waiter, at
 * the head (M3), and never EDEADLK (as plk_mutex_lock_retake).  @me is
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

/**
 * plk_mutex_sleep_until - when a waiter asleep on @m's queue next wakes:
 * at @abstime (on *@clock; NULL: never) or at the end of its @checks-th
 * liveness slice (filled in *@slice), whichever comes first.  With no
 * @abstime the slice is timed on CLOCK_MONOTONIC, stored in *@clock, so
 * that a step of the wall clock cannot stretch it.  Between slices the
 * waiter asks whether the owner still exists (mutex.c).
 */
PLK_HIDDEN const struct timespec *plk_mutex_sleep_until(const proxylock_mutex_t *m, int checks,
                                                        clockid_t *clock,
                                                        const struct timespec *abstime,
                                                        struct timespec *slice);

/**
 * plk_mutex_owner_check - a liveness slice of @me, asleep on @m's queue,
 * ended: if @m's owner has exited, say so (stats, probe) and, for a
 * robust @m, take it: EOWNERDEAD, @me off the queue and owning @m.  Else
 * -1: sleep on.
 */
PLK_HIDDEN int plk_mutex_owner_check(proxylock_mutex_t *m, struct plk_thread *me);

#endif /* PLK_LOCKWORD_H */

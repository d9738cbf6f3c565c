/* SPDX-License-Identifier: MIT */
/*
 * lockword.h - the proxylock mutex's lock word: its encoding, the inline
 * accessors every layer reads it with, and the one-CAS fast paths.  The
 * lock protocol that writes it under a bucket lock, and its invariants
 * M1-M6, head mutex.c; docs/design.md has both at length.
 *
 * Lock word (32 bits, the FUTEX_PI convention, so any thread can name
 * the owner from the word alone):
 *
 *   bit 31      PLK_WAITERS: some thread is queued on this lock (or is
 *               about to be, or was: it stays set until the release);
 *               the owner must unlock through the slow path
 *   bit 30      PLK_OWNER_DIED: a robust lock taken from an owner that
 *               exited, until proxylock_mutex_consistent()
 *   bits 0..29  owner TID; 0 = unlocked.  Values from PLK_TID_RESERVED
 *               up are states, not threads: destroyed, not recoverable
 *
 * __count is the RECURSIVE relock depth (0 = held once); only the owner
 * touches it.  __flags holds the type (glibc's kind numbers: NORMAL 0,
 * RECURSIVE 1, ERRORCHECK 2, ADAPTIVE 3) in bits 0..1 and the kinds not
 * lent from bit 24.  __reserved0[1] counts the condvar waiters bound to
 * the mutex (plk_mutex_bound).  The layout matches the head of glibc's
 * pthread_mutex_t (see proxylock.h and preload.c).
 *
 * Fast paths: lock is one CAS 0 -> TID; unlock is one CAS TID -> 0,
 * which fails, sending us to the slow path, exactly when the word is not
 * our bare TID (waiters queued, not ours, or a fork child's pre-fork TID)
 * or __count is non-zero.  Neither touches the registry or allocates.
 */
#ifndef PLK_LOCKWORD_H
#define PLK_LOCKWORD_H

#include <stdbool.h>
#include <stdint.h>

#include "proxylock.h"
#include "forkalias.h"
#include "registry.h"

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

/*
 * __reserved0[1], glibc's __nusers under the interposer: the condvar
 * waiters bound to the mutex, each counted from before its wait releases
 * the mutex until after it retakes it (cond.c, plk_cond_wait), so that
 * destroy answers EBUSY for them as glibc's does (its __nusers keeps
 * counting a thread inside pthread_cond_wait).  Not part of the lock
 * protocol: nothing but destroy reads it.  Relaxed RMWs: a count that
 * orders nothing; a waiter's increment comes before its release of the
 * mutex and its decrement after its retake, so a destroyer that has
 * synchronised with the mutex (as it must) sees them.  Zero-filled: a
 * static or freshly initialised mutex has no waiter bound.
 */
static inline void plk_mutex_bound_add(proxylock_mutex_t *m, int32_t d)
{
	__atomic_fetch_add(&m->__reserved0[1], (uint32_t)d, __ATOMIC_RELAXED);
}

/** plk_mutex_bound - condvar waiters bound to @m (see above). */
static inline uint32_t plk_mutex_bound(const proxylock_mutex_t *m)
{
	return __atomic_load_n(&m->__reserved0[1], __ATOMIC_RELAXED);
}

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

/** plk_word - @m's lock word (acquire). */
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

/** plk_type - @m's type, PROXYLOCK_MUTEX_NORMAL to _ADAPTIVE. */
static inline int plk_type(const proxylock_mutex_t *m)
{
	return (int)(m->__flags & PLK_TYPE_MASK);
}

/**
 * plk_owner_tid - the live TID owning a word: in a fork child, a TID the
 * forking thread had before any of the forks that led here names that
 * thread under its new TID (forkalias.h).
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

#endif /* PLK_LOCKWORD_H */

/* SPDX-License-Identifier: MIT */
/*
 * proxylock.h - proxy-aware userspace mutexes for Linux.
 *
 * A proxylock mutex is a futex mutex whose 32-bit word holds the owner's
 * TID.  While a thread is blocked on it, the library lends that thread's
 * scheduling context (uclamp, CPU affinity, nice, RT priority) to the
 * owner, along chains of owners, and restores every thread exactly when
 * it no longer holds a lock that someone waits for.  See docs/design.md.
 *
 * All calls return 0 or an errno value, like pthreads; none sets errno.
 */
#ifndef PROXYLOCK_H
#define PROXYLOCK_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PROXYLOCK_API __attribute__((visibility("default")))
#else
#define PROXYLOCK_API
#endif

/* Mutex types (proxylock_mutexattr_settype). */
/* Values are glibc's PTHREAD_MUTEX_*_NP kinds, so that a pthread_mutex_t
 * filled by any of glibc's static initializers is a proxylock of that
 * type (see the layout below). */
enum {
	PROXYLOCK_MUTEX_NORMAL = 0,     /* relock deadlocks, as POSIX NORMAL */
	PROXYLOCK_MUTEX_RECURSIVE = 1,  /* owner may relock; counted */
	PROXYLOCK_MUTEX_ERRORCHECK = 2, /* relock EDEADLK, foreign unlock EPERM */
	PROXYLOCK_MUTEX_ADAPTIVE = 3,   /* as NORMAL (every proxylock spins first) */
	PROXYLOCK_MUTEX_DEFAULT = PROXYLOCK_MUTEX_NORMAL
};

/* Robustness (proxylock_mutexattr_setrobust), POSIX's values. */
enum {
	PROXYLOCK_MUTEX_STALLED = 0, /* an owner's exit leaves the lock held */
	PROXYLOCK_MUTEX_ROBUST = 1   /* the next locker gets EOWNERDEAD */
};

/* Kinds of scheduling context a waiter lends its lock's owner. */
enum {
	PROXYLOCK_DONATE_NONE = 0,
	PROXYLOCK_DONATE_UCLAMP = 1u << 0,   /* uclamp_min/uclamp_max */
	PROXYLOCK_DONATE_AFFINITY = 1u << 1, /* CPU affinity */
	PROXYLOCK_DONATE_NICE = 1u << 2,     /* nice and non-RT policy */
	PROXYLOCK_DONATE_RT = 1u << 3,       /* SCHED_FIFO/SCHED_RR priority */
	PROXYLOCK_DONATE_ALL = 0xf
};

/*
 * The mutex.  Zero-filled storage is an unlocked NORMAL mutex lending
 * every kind the process allows, so static and calloc'ed mutexes need no
 * init call.  Fields are private: the lock word is __word (owner TID,
 * bit 31 = waiters), __count the recursion depth, __flags the type and
 * the kinds *not* lent.  24 bytes laid over the head of glibc's
 * pthread_mutex_t (40 bytes on x86_64): __word on __lock, __count on
 * __count, __flags on __kind; that is what lets the LD_PRELOAD
 * interposer keep a proxylock inside the caller's pthread_mutex_t.
 */
typedef struct proxylock_mutex {
	uint32_t __word;
	uint32_t __count;
	uint32_t __reserved0[2];
	uint32_t __flags;
	uint32_t __reserved1;
} proxylock_mutex_t;

#define PROXYLOCK_MUTEX_INITIALIZER { 0, 0, { 0, 0 }, 0, 0 }

typedef struct proxylock_mutexattr {
	uint32_t __magic;
	uint32_t __type;
	uint32_t __donate;
} proxylock_mutexattr_t;

/*
 * The condition variable, for use with proxylock mutexes.  Zero-filled
 * storage is a CLOCK_REALTIME condvar.  Fields are private; 48 bytes laid
 * over glibc's pthread_cond_t (see lib/cond.c).
 */
typedef struct proxylock_cond {
	uint32_t __waiters;
	uint32_t __reserved0;
	void *__mutex;
	uint32_t __reserved1[5];
	uint32_t __flags;
	uint32_t __reserved2[2];
} proxylock_cond_t;

#define PROXYLOCK_COND_INITIALIZER { 0, 0, 0, { 0, 0, 0, 0, 0 }, 0, { 0, 0 } }

/*
 * The reader-writer lock.  Zero-filled storage is an unlocked rwlock
 * preferring readers that lends every kind the process allows.  Fields
 * are private: __word is the lock word (bit 31 waiters queued, bit 30
 * write-held, bits 0..29 the writer's TID; else bit 29 read-held by one
 * thread, bits 0..28 its TID; else bits 0..28 the number of read holds),
 * __solo names a reader whose lone hold was joined (rwlockword.h),
 * __flags the preference kind (bits 0..1) and the kinds *not* lent (from
 * bit 24).  56 bytes, 8-aligned, laid over glibc's pthread_rwlock_t on
 * x86_64 and aarch64: __word on __readers, __flags on __flags (offset
 * 48 on both), every other byte reserved and zero, as glibc's own
 * initializers leave them; so glibc's static initializers
 * (PTHREAD_RWLOCK_INITIALIZER and the
 * PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP one) are already
 * proxylock rwlocks of that kind (see docs/design.md).
 */
typedef struct proxylock_rwlock {
	uint32_t __word;
	uint32_t __solo;
	uint32_t __reserved0[6];
	uint64_t __reserved1[2];
	uint32_t __flags;
	uint32_t __reserved2;
} proxylock_rwlock_t;

#define PROXYLOCK_RWLOCK_INITIALIZER { 0, 0, { 0, 0, 0, 0, 0, 0 }, { 0, 0 }, 0, 0 }

/* Preference kinds (proxylock_rwlockattr_setkind), glibc's values and
 * semantics: PREFER_WRITER is treated as PREFER_READER (recursive read
 * locks must not deadlock behind a waiting writer), and only
 * PREFER_WRITER_NONRECURSIVE makes new readers wait behind a waiting
 * writer. */
enum {
	PROXYLOCK_RWLOCK_PREFER_READER = 0,
	PROXYLOCK_RWLOCK_PREFER_WRITER = 1,
	PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE = 2,
	PROXYLOCK_RWLOCK_DEFAULT = PROXYLOCK_RWLOCK_PREFER_READER
};

typedef struct proxylock_rwlockattr {
	uint32_t __magic;
	uint32_t __kind;
	uint32_t __donate;
} proxylock_rwlockattr_t;

/*
 * An explicit lend (proxylock_lend_begin): the caller's storage, no
 * allocation.  Fields are private; it must stay where it is from begin
 * to end (its address names the lend).
 */
typedef struct proxylock_lend {
	uint32_t __magic;
	int32_t __tid;
	uint32_t __kinds;
	int32_t __lender;
} proxylock_lend_t;

/* Where a boosted owner may run (proxylock_affinity_policy_set). */
enum {
	PROXYLOCK_AFFINITY_WAITERS = 0, /* the waiters' CPUs (default) */
	PROXYLOCK_AFFINITY_UNION = 1,   /* the waiters' CPUs plus its own */
	PROXYLOCK_AFFINITY_NODE = 2     /* that union within the waiters' NUMA nodes */
};

/* Counters kept since the library loaded (or since fork in a child). */
struct proxylock_stats {
	uint64_t contended;      /* acquisitions that went to the slow path */
	uint64_t sleeps;         /* futex waits on the way to acquisition */
	uint64_t handoffs;       /* unlocks that passed the lock directly */
	uint64_t setattr_calls;  /* sched_setattr(2) calls made */
	uint64_t setaff_calls;   /* sched_setaffinity(2) calls made */
	uint64_t donations;      /* times a thread's context was raised */
	uint64_t restores;       /* times a thread's context was lowered */
	uint64_t lent_uclamp;    /* donations by kind that changed the kernel */
	uint64_t lent_affinity;
	uint64_t lent_nice;
	uint64_t lent_rt;
	uint64_t eperm_skipped;  /* parts skipped because the kernel said EPERM */
	uint64_t chain_steps;    /* owner-chain steps walked */
	uint64_t chain_truncated; /* walks cut at PROXYLOCK_CHAIN_MAX */
	uint64_t owner_dead;     /* waiters that found their lock's owner had exited */
	uint64_t lent_cond;      /* donations through a condvar's waiters to its wakers */
	uint64_t lent_sem;       /* donations through a semaphore's waiters to its posters */
};

/* Longest owner chain a donation follows. */
#define PROXYLOCK_CHAIN_MAX 32

/**
 * proxylock_mutexattr_init - fill @attr with NORMAL type, lend everything.
 */
PROXYLOCK_API int proxylock_mutexattr_init(proxylock_mutexattr_t *attr);

/** proxylock_mutexattr_destroy - invalidate @attr. EINVAL if not inited. */
PROXYLOCK_API int proxylock_mutexattr_destroy(proxylock_mutexattr_t *attr);

/** proxylock_mutexattr_settype - PROXYLOCK_MUTEX_*; EINVAL otherwise. */
PROXYLOCK_API int proxylock_mutexattr_settype(proxylock_mutexattr_t *attr, int type);

/** proxylock_mutexattr_gettype - store the type in *@type. */
PROXYLOCK_API int proxylock_mutexattr_gettype(const proxylock_mutexattr_t *attr, int *type);

/**
 * proxylock_mutexattr_setdonate - choose which kinds (PROXYLOCK_DONATE_*
 * mask) waiters on this lock lend; PROXYLOCK_DONATE_NONE turns donation
 * off for the lock.  The process-wide selection (PROXYLOCK_DONATE and
 * what the kernel permits) still applies on top.
 */
PROXYLOCK_API int proxylock_mutexattr_setdonate(proxylock_mutexattr_t *attr, unsigned kinds);

/** proxylock_mutexattr_getdonate - store the per-lock kinds in *@kinds. */
PROXYLOCK_API int proxylock_mutexattr_getdonate(const proxylock_mutexattr_t *attr, unsigned *kinds);

/**
 * proxylock_mutexattr_setrobust - PROXYLOCK_MUTEX_ROBUST: when a thread
 * exits (or is cancelled) holding the lock, the next thread to lock it
 * gets it with EOWNERDEAD; PROXYLOCK_MUTEX_STALLED (default): the lock
 * stays held, and its waiters report it (stats, owner_dead probe).
 * Waiters find a dead owner by asking the kernel whether its thread ID
 * still names a thread of this process: if a new thread of the process
 * got that ID first, the owner reads as alive, and a robust lock then
 * stays held, as a stalled one does (waiters wait, with no EOWNERDEAD,
 * until that thread exits too; a timed lock times out).
 */
PROXYLOCK_API int proxylock_mutexattr_setrobust(proxylock_mutexattr_t *attr, int robust);

/** proxylock_mutexattr_getrobust - store the robustness in *@robust. */
PROXYLOCK_API int proxylock_mutexattr_getrobust(const proxylock_mutexattr_t *attr, int *robust);

/** proxylock_mutex_init - initialise @m; @attr may be NULL (defaults). */
PROXYLOCK_API int proxylock_mutex_init(proxylock_mutex_t *m, const proxylock_mutexattr_t *attr);

/**
 * proxylock_mutex_destroy - EBUSY if @m is locked, or a thread waits on
 * a condition variable with it, else 0.  A destroyed mutex answers every
 * call but init with EINVAL, until init again.
 */
PROXYLOCK_API int proxylock_mutex_destroy(proxylock_mutex_t *m);

/**
 * proxylock_mutex_lock - acquire @m, blocking (and lending this thread's
 * scheduling context to the owner) while it is held.  EDEADLK for an
 * ERRORCHECK relock, or when waiting on an ERRORCHECK lock would close a
 * cycle of waiting owners; EAGAIN if a RECURSIVE count would overflow;
 * EINVAL for a NULL, destroyed or never-initialised (garbage) mutex.
 * Robust mutexes: EOWNERDEAD when the caller got the lock from an owner
 * that exited holding it (the caller owns it now, and must call
 * proxylock_mutex_consistent() before unlocking, or it becomes
 * unusable); ENOTRECOVERABLE once that was not done.
 */
PROXYLOCK_API int proxylock_mutex_lock(proxylock_mutex_t *m);

/**
 * proxylock_mutex_trylock - acquire @m without blocking, else EBUSY; the
 * other errors as lock (a robust @m whose owner exited: EOWNERDEAD).
 */
PROXYLOCK_API int proxylock_mutex_trylock(proxylock_mutex_t *m);

/**
 * proxylock_mutex_timedlock - as lock, but give up at @abstime on
 * CLOCK_REALTIME with ETIMEDOUT; EINVAL if it would block and @abstime
 * is not a valid timespec.
 */
PROXYLOCK_API int proxylock_mutex_timedlock(proxylock_mutex_t *m, const struct timespec *abstime);

/**
 * proxylock_mutex_clocklock - as timedlock on @clock, which must be
 * CLOCK_REALTIME or CLOCK_MONOTONIC (else EINVAL).
 */
PROXYLOCK_API int proxylock_mutex_clocklock(proxylock_mutex_t *m, clockid_t clock,
                                            const struct timespec *abstime);

/**
 * proxylock_mutex_unlock - release @m.  EPERM if the caller does not own
 * it (for every type: the owner is in the word, so checking is free).
 * If threads wait, one is woken (or handed the lock) first; only then
 * is what they lent the caller withdrawn, before unlock returns.
 */
PROXYLOCK_API int proxylock_mutex_unlock(proxylock_mutex_t *m);

/**
 * proxylock_mutex_consistent - the caller got robust @m with EOWNERDEAD
 * and has repaired what it protects: mark it usable again.  EINVAL if
 * @m is not robust, not inconsistent, or not the caller's.
 */
PROXYLOCK_API int proxylock_mutex_consistent(proxylock_mutex_t *m);

/** proxylock_mutex_owner - TID in @m's word now, 0 if unlocked (or destroyed). */
PROXYLOCK_API pid_t proxylock_mutex_owner(const proxylock_mutex_t *m);

/**
 * proxylock_cond_init - initialise @c to time its waits on @clock
 * (CLOCK_REALTIME or CLOCK_MONOTONIC, else EINVAL).
 */
PROXYLOCK_API int proxylock_cond_init(proxylock_cond_t *c, clockid_t clock);

/** proxylock_cond_destroy - EBUSY while threads wait on @c, else 0. */
PROXYLOCK_API int proxylock_cond_destroy(proxylock_cond_t *c);

/**
 * proxylock_cond_wait - atomically release @m (which the caller must
 * own, else EPERM) and wait on @c; retake @m before returning, even on
 * error.  A RECURSIVE @m is released and retaken at its full depth.
 * Returns 0 (possibly spuriously, as POSIX allows).
 */
PROXYLOCK_API int proxylock_cond_wait(proxylock_cond_t *c, proxylock_mutex_t *m);

/**
 * proxylock_cond_timedwait - as wait, giving up at @abstime on @c's
 * clock with ETIMEDOUT; EINVAL for an invalid @abstime.
 */
PROXYLOCK_API int proxylock_cond_timedwait(proxylock_cond_t *c, proxylock_mutex_t *m,
                                           const struct timespec *abstime);

/** proxylock_cond_clockwait - as timedwait, on @clock (REALTIME/MONOTONIC). */
PROXYLOCK_API int proxylock_cond_clockwait(proxylock_cond_t *c, proxylock_mutex_t *m,
                                           clockid_t clock, const struct timespec *abstime);

/**
 * proxylock_cond_signal - wake at least one waiter of @c, if any.  Waiters
 * whose mutex is held are moved onto its queue instead of woken, and lend
 * its owner their context from then on.
 */
PROXYLOCK_API int proxylock_cond_signal(proxylock_cond_t *c);

/** proxylock_cond_broadcast - wake every waiter of @c (moved, as signal). */
PROXYLOCK_API int proxylock_cond_broadcast(proxylock_cond_t *c);

/** proxylock_rwlockattr_init - fill @attr: prefer readers, lend everything. */
PROXYLOCK_API int proxylock_rwlockattr_init(proxylock_rwlockattr_t *attr);

/** proxylock_rwlockattr_destroy - invalidate @attr. EINVAL if not inited. */
PROXYLOCK_API int proxylock_rwlockattr_destroy(proxylock_rwlockattr_t *attr);

/** proxylock_rwlockattr_setkind - PROXYLOCK_RWLOCK_PREFER_*; EINVAL otherwise. */
PROXYLOCK_API int proxylock_rwlockattr_setkind(proxylock_rwlockattr_t *attr, int kind);

/** proxylock_rwlockattr_getkind - store the preference kind in *@kind. */
PROXYLOCK_API int proxylock_rwlockattr_getkind(const proxylock_rwlockattr_t *attr, int *kind);

/** proxylock_rwlockattr_setdonate - as proxylock_mutexattr_setdonate. */
PROXYLOCK_API int proxylock_rwlockattr_setdonate(proxylock_rwlockattr_t *attr, unsigned kinds);

/** proxylock_rwlockattr_getdonate - store the per-lock kinds in *@kinds. */
PROXYLOCK_API int proxylock_rwlockattr_getdonate(const proxylock_rwlockattr_t *attr,
                                                 unsigned *kinds);

/** proxylock_rwlock_init - initialise @rw; @attr may be NULL (defaults). */
PROXYLOCK_API int proxylock_rwlock_init(proxylock_rwlock_t *rw, const proxylock_rwlockattr_t *attr);

/**
 * proxylock_rwlock_destroy - EBUSY if @rw is held or waited for, else 0
 * (best effort: a writer woken to compete shows in neither until it is
 * back; destroying a lock another thread is inside a call on is the
 * program's error).  A destroyed rwlock answers every call but init with
 * EINVAL.
 */
PROXYLOCK_API int proxylock_rwlock_destroy(proxylock_rwlock_t *rw);

/**
 * proxylock_rwlock_rdlock - take @rw for reading, blocking (and lending
 * this thread's context to the writer holding it) while a writer holds
 * it, or, for PREFER_WRITER_NONRECURSIVE, while a writer waits.  While a
 * writer waits, every reader holding @rw runs with the writer's context
 * combined into its own.  A thread may hold @rw for reading several
 * times (each needs an unlock).  EDEADLK if the caller holds @rw for
 * writing; EAGAIN if the count of read holds would overflow; EINVAL for
 * a NULL, destroyed or garbage rwlock.
 */
PROXYLOCK_API int proxylock_rwlock_rdlock(proxylock_rwlock_t *rw);

/** proxylock_rwlock_tryrdlock - as rdlock, but EBUSY instead of blocking. */
PROXYLOCK_API int proxylock_rwlock_tryrdlock(proxylock_rwlock_t *rw);

/**
 * proxylock_rwlock_timedrdlock - as rdlock, giving up at @abstime on
 * CLOCK_REALTIME with ETIMEDOUT; EINVAL if it would block and @abstime
 * is not a valid timespec.
 */
PROXYLOCK_API int proxylock_rwlock_timedrdlock(proxylock_rwlock_t *rw,
                                               const struct timespec *abstime);

/** proxylock_rwlock_clockrdlock - as timedrdlock on @clock (REALTIME or
 * MONOTONIC, else EINVAL). */
PROXYLOCK_API int proxylock_rwlock_clockrdlock(proxylock_rwlock_t *rw, clockid_t clock,
                                               const struct timespec *abstime);

/**
 * proxylock_rwlock_wrlock - take @rw for writing, blocking while anyone
 * holds it; meanwhile this thread's context is lent to the writer or to
 * every reader holding it.  EDEADLK if the caller holds it for writing;
 * EINVAL as rdlock.
 */
PROXYLOCK_API int proxylock_rwlock_wrlock(proxylock_rwlock_t *rw);

/** proxylock_rwlock_trywrlock - as wrlock, but EBUSY instead of blocking. */
PROXYLOCK_API int proxylock_rwlock_trywrlock(proxylock_rwlock_t *rw);

/** proxylock_rwlock_timedwrlock - as wrlock with a CLOCK_REALTIME deadline. */
PROXYLOCK_API int proxylock_rwlock_timedwrlock(proxylock_rwlock_t *rw,
                                               const struct timespec *abstime);

/** proxylock_rwlock_clockwrlock - as timedwrlock on @clock. */
PROXYLOCK_API int proxylock_rwlock_clockwrlock(proxylock_rwlock_t *rw, clockid_t clock,
                                               const struct timespec *abstime);

/**
 * proxylock_rwlock_unlock - release the caller's write hold, or one of
 * its read holds, of @rw.  EPERM if the caller holds it neither way
 * (docs/design.md: a thread with more read holds than it can track
 * is believed).  Before it returns, what @rw's waiters lent the caller
 * is withdrawn.
 */
PROXYLOCK_API int proxylock_rwlock_unlock(proxylock_rwlock_t *rw);

/**
 * proxylock_caps - the PROXYLOCK_DONATE_* kinds this kernel and this
 * process's privileges allow (probed once: uclamp needs
 * CONFIG_UCLAMP_TASK; nice and RT boosts need CAP_SYS_NICE or
 * RLIMIT_NICE / RLIMIT_RTPRIO).
 */
PROXYLOCK_API unsigned proxylock_caps(void);

/**
 * proxylock_donate_kinds - the kinds actually lent: proxylock_caps()
 * restricted by the PROXYLOCK_DONATE environment variable
 * ("uclamp,affinity,nice,rt", "all" or "none"; default all).
 */
PROXYLOCK_API unsigned proxylock_donate_kinds(void);

/**
 * proxylock_affinity_policy_set - choose PROXYLOCK_AFFINITY_*, process
 * wide (also PROXYLOCK_AFFINITY=waiters|union|node in the environment).
 * EINVAL for an unknown policy.  Takes effect at the next donation.
 * Only waiters that outrank the owner (RT class and priority, then nice,
 * then SCHED_OTHER over BATCH, then uclamp_min) lend CPUs, and where CPU
 * capacities differ the owner keeps its best CPUs (proxylock_caps(3)).
 */
PROXYLOCK_API int proxylock_affinity_policy_set(int policy);

/**
 * proxylock_lend_begin - lend the caller's scheduling context (the
 * @kinds of PROXYLOCK_DONATE_*, within proxylock_donate_kinds()) to
 * thread @tid of this process, until proxylock_lend_end(@lend): for a
 * wait the library cannot see (a future on a raw futex, a pipe, an
 * eventfd, a work queue of one's own).  As a lock waiter's lend: only
 * what raises @tid, combined with what else it is lent, and on along
 * the chain if @tid waits on a lock, condvar or semaphore.  Nestable:
 * each handle is its own lend, ended in any order.  What is lent is the
 * caller's context at begin.  EINVAL: @lend NULL, @kinds beyond
 * PROXYLOCK_DONATE_ALL, @tid not positive or the caller's own; ESRCH:
 * @tid is no live thread of this process; EBUSY: @lend is already begun
 * (by any thread); EAGAIN: 8 lends already begun by the caller, or 64 in
 * the process; ENOMEM:
 * no thread record.  On error nothing is lent.  A thread that exits
 * with lends begun has them ended at its exit.
 */
PROXYLOCK_API int proxylock_lend_begin(pid_t tid, unsigned kinds, proxylock_lend_t *lend);

/**
 * proxylock_lend_end - end the lend begun on @lend by the caller: @tid
 * is restored to what it has without it before this returns (unless
 * another thread is applying a change to it at that moment, which then
 * applies this one too).  EINVAL: @lend NULL, never begun or already
 * ended; EPERM: begun by another thread.
 */
PROXYLOCK_API int proxylock_lend_end(proxylock_lend_t *lend);

/** proxylock_stats_get - copy the process-wide counters into *@out. */
PROXYLOCK_API void proxylock_stats_get(struct proxylock_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* PROXYLOCK_H */

/* SPDX-License-Identifier: MIT */
/*
 * preload_rwlock.c - the LD_PRELOAD interposer's reader-writer locks:
 * pthread_rwlock_* become proxylock rwlocks in the caller's
 * pthread_rwlock_t.  Relies on the core's rwlock (rwlockword.h's fast
 * paths, proxylock_rwlock_*), on glibc's own calls (preload_real.h) for
 * the process-shared ones, and on preload.c's rules (the fast path's one
 * test, the slow-path depth).
 *
 * A proxylock rwlock lies over glibc's pthread_rwlock_t (proxylock.h,
 * rwlockattr.c): the word on __readers, the kind on __flags, where
 * glibc's static initializers put it, every other byte zero.  glibc's
 * pthread_rwlock_init sets __shared to 1 for a process-shared rwlock,
 * and a proxylock rwlock keeps that int zero: those stay glibc's.  The
 * attribute object stays glibc's too (pthread_rwlockattr_* are not
 * interposed): init reads its kind and pshared through glibc's getters,
 * so pthread_rwlockattr_setkind_np takes effect.
 *
 * destroy answers as glibc's does: 0, held or not (by the caller, or by
 * a thread that exited holding it), and changes nothing, so the rwlock
 * stays usable after it and pthread_rwlock_init makes it new again,
 * for the caller's read set too (plk_rw_forget_own_reads; another live
 * thread's read hold of the old lock is that program's error)
 * (proxylock_rwlock_destroy, the direct API, refuses a held one with
 * EBUSY instead).  Kept different: unlock by a thread holding nothing is
 * EPERM (glibc corrupts its counts and returns 0).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "cpu.h"
#include "lockstat.h"
#include "preload.h"
#include "rdset.h"
#include "registry.h"
#include "rwlockword.h"
#include "stats.h"

_Static_assert(offsetof(pthread_rwlock_t, __data.__shared) >
               offsetof(proxylock_rwlock_t, __word) &&
               offsetof(pthread_rwlock_t, __data.__shared) + sizeof(int) <=
               offsetof(proxylock_rwlock_t, __flags),
               "glibc's __shared lies in a proxylock rwlock's reserved bytes");

static bool rwlock_is_glibc(const pthread_rwlock_t *prw)
{
	return prw->__data.__shared != 0;
}

#define RW_CAREFUL(prw) __builtin_expect(plk_careful() || rwlock_is_glibc(prw), 0)

/*
 * Ask for @prw's line exclusive before rwlock_is_glibc() reads it: that
 * read fetches the line shared, and the fast path's CAS on the word
 * beside it would then take a second trip (cpu.h).  Only once the
 * thread has a read set, which carries the CPU's answer.
 */
static inline __attribute__((always_inline)) void rw_line_prefetch(const pthread_rwlock_t *prw)
{
	const struct plk_rdset *s = plk_tls_rdset;

	if (s)
		plk_prefetch_for_write(prw, s->prefetchw);
}

static int glibc_rw_op(pthread_rwlock_t *prw, bool write, enum plk_lock_op op, clockid_t clock,
                       const struct timespec *abstime)
{
	const struct plk_real *r = plk_real();

	switch (op) {
	case PLK_OP_TRY:
		return write ? r->rwlock_trywrlock(prw) : r->rwlock_tryrdlock(prw);
	case PLK_OP_TIMED:
		return plk_real_rwlock_clocklock(prw, write, clock, abstime);
	default:
		return write ? r->rwlock_wrlock(prw) : r->rwlock_rdlock(prw);
	}
}

static int proxy_rw_op(proxylock_rwlock_t *rw, bool write, enum plk_lock_op op, clockid_t clock,
                       const struct timespec *abstime)
{
	switch (op) {
	case PLK_OP_TRY:
		return write ? proxylock_rwlock_trywrlock(rw) : proxylock_rwlock_tryrdlock(rw);
	case PLK_OP_TIMED:
		return write ? proxylock_rwlock_clockwrlock(rw, clock, abstime)
		             : proxylock_rwlock_clockrdlock(rw, clock, abstime);
	default:
		return write ? proxylock_rwlock_wrlock(rw) : proxylock_rwlock_rdlock(rw);
	}
}

/* Inside one of our slow paths (an allocator's lock, see plk_slow_depth):
 * try and yield, as preload_mutex.c's lock_nested does for a mutex. */
static int rw_lock_nested(proxylock_rwlock_t *rw, bool write, enum plk_lock_op op, clockid_t clock,
                          const struct timespec *abstime)
{
	int err;

	if (op == PLK_OP_TIMED && !abstime)
		return proxy_rw_op(rw, write, op, clock, abstime);  /* its EINVAL, or the lock */
	while ((err = proxy_rw_op(rw, write, PLK_OP_TRY, clock, abstime)) == EBUSY && op != PLK_OP_TRY) {
		if (op == PLK_OP_TIMED && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
	return err;
}

/* A deadline glibc refuses before it tries the lock (POSIX lets a free
 * lock be taken regardless; the core does so): a clock it does not
 * wait on, or a tv_nsec out of range.  NULL is the core's EINVAL. */
static bool rw_deadline_bad(clockid_t clock, const struct timespec *abstime)
{
	return (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) ||
	       (abstime && !plk_timespec_valid(abstime));
}

/* Lock @rw after a failed fast path (the core's calls try it again);
 * the timed calls come here first, for glibc's checks. */
static __attribute__((noinline)) int rw_lock_slow(proxylock_rwlock_t *rw, bool write,
                                                  enum plk_lock_op op, clockid_t clock,
                                                  const struct timespec *abstime)
{
	int err;

	if (op == PLK_OP_TIMED && rw_deadline_bad(clock, abstime))
		return EINVAL;
	if (plk_slow_depth)
		return rw_lock_nested(rw, write, op, clock, abstime);
	plk_slow_depth++;
	err = proxy_rw_op(rw, write, op, clock, abstime);
	plk_slow_depth--;
	return err;
}

/* Lock with everything checked and, if PROXYLOCK_STATS is on, counted
 * (contended: as a mutex's, preload_mutex.c's count_mutex). */
static __attribute__((noinline)) int rw_lock_careful(pthread_rwlock_t *prw, uintptr_t ra,
                                                     bool write, enum plk_lock_op op,
                                                     clockid_t clock,
                                                     const struct timespec *abstime)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;
	bool contended = false;
	uint64_t t0 = 0;
	uint32_t w, core = plk_tls_contended;
	int err;

	if (rwlock_is_glibc(prw))
		return glibc_rw_op(prw, write, op, clock, abstime);
	/* A timed read with no deadline is the core's EINVAL, given before
	 * its fast path: after ours, the retraction a failed one may leave
	 * would go unconsumed (rwlockword.h). */
	if (op == PLK_OP_TRY ||
	    (op == PLK_OP_TIMED && (rw_deadline_bad(clock, abstime) || (!write && !abstime)))) {
		err = rw_lock_slow(rw, write, op, clock, abstime);
	} else if (op == PLK_OP_LOCK && (write ? plk_rw_wrlock_fast(rw) : plk_rw_rdlock_fast(rw))) {
		err = 0;
	} else {
		/* A writer finds it held if the word shows any holder; a
		 * reader, if it shows a writer, or waiters it would queue
		 * behind.  (A reader also leaves the fast path with nobody in
		 * its way: to join a solo hold, at its thread's first counted
		 * rdlock, with every slot of its read set taken; relaxed: a
		 * peek for a count, it orders nothing.) */
		w = __atomic_load_n(&rw->__word, __ATOMIC_RELAXED);
		contended = write ? (w & ~PLK_RW_WAITERS) != 0 || (w & PLK_RW_WAITERS)
		                  : (w & (PLK_RW_WRITER | PLK_RW_WAITERS)) != 0;
		t0 = plk_lockstat_on ? plk_now_ns() : 0;
		err = rw_lock_slow(rw, write, op, clock, abstime);
	}
	contended |= plk_tls_contended != core;
	if (plk_lockstat_on && !plk_slow_depth) {
		plk_slow_depth++;  /* a new row maps a slab (no allocation, but a system call) */
		plk_lockstat_rwlock(prw, ra, write, err, contended, t0);
		plk_slow_depth--;
	}
	return err;
}

/* Unlock after the fast paths: @fast is what plk_rw_rdunlock_fast did. */
static __attribute__((noinline)) int rw_unlock_slow(proxylock_rwlock_t *rw, int fast)
{
	int err = 0;

	plk_slow_depth++;
	if (fast == PLK_RD_CLEARED)
		plk_rw_unlock_cleared(rw);
	else
		err = proxylock_rwlock_unlock(rw);
	plk_slow_depth--;
	return err;
}

/* Inlined: pthread_rwlock_unlock's uncontended path is this body, with
 * no call (issue 34's plk_careful() split had made it a jump). */
static inline __attribute__((always_inline)) int rw_unlock(proxylock_rwlock_t *rw)
{
	int fast = plk_rw_rdunlock_fast(rw);

	if (fast == PLK_RD_DONE || (fast == PLK_RD_SLOW && plk_rw_wrunlock_fast(rw)))
		return 0;
	return rw_unlock_slow(rw, fast);
}

PLK_EXPORT int pthread_rwlock_init(pthread_rwlock_t *prw, const pthread_rwlockattr_t *attr)
{
	int kind = PTHREAD_RWLOCK_DEFAULT_NP, pshared = PTHREAD_PROCESS_PRIVATE;
	proxylock_rwlockattr_t pa;
	int err;

	if (attr) {
		pthread_rwlockattr_getkind_np(attr, &kind);
		pthread_rwlockattr_getpshared(attr, &pshared);
	}
	if (pshared != PTHREAD_PROCESS_PRIVATE)
		return plk_real()->rwlock_init(prw, attr);
	proxylock_rwlockattr_init(&pa);
	if ((err = proxylock_rwlockattr_setkind(&pa, kind)) != 0)
		return err;
	err = proxylock_rwlock_init((proxylock_rwlock_t *)prw, &pa);
	if (err == 0 && plk_lockstat_on && !plk_slow_depth) {
		plk_slow_depth++;
		plk_lockstat_init(prw, PLK_RETURN_ADDRESS(), true);
		plk_slow_depth--;
	}
	return err;
}

PLK_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *prw)
{
	if (rwlock_is_glibc(prw))
		return plk_real()->rwlock_destroy(prw);
	/* glibc's destroy does nothing and returns 0, held or not (LTP's
	 * timed{rd,wr}lock_6-2 destroy one held by an exited thread); so
	 * do we, leaving the word as it is: a later unlock or init finds it
	 * as the holders left it. */
	return 0;
}

PLK_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *prw)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;

	rw_line_prefetch(prw);
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), false, PLK_OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_rw_rdlock_fast(rw))
		return 0;
	return rw_lock_slow(rw, false, PLK_OP_LOCK, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *prw)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), false, PLK_OP_TRY, CLOCK_REALTIME, NULL);
	return rw_lock_slow((proxylock_rwlock_t *)prw, false, PLK_OP_TRY, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *prw, clockid_t clock,
                                          const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), false, PLK_OP_TIMED, clock, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, false, PLK_OP_TIMED, clock, abstime);
}

PLK_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *prw, const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), false, PLK_OP_TIMED, CLOCK_REALTIME, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, false, PLK_OP_TIMED, CLOCK_REALTIME, abstime);
}

PLK_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *prw)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;

	rw_line_prefetch(prw);
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), true, PLK_OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_rw_wrlock_fast(rw))
		return 0;
	return rw_lock_slow(rw, true, PLK_OP_LOCK, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *prw)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), true, PLK_OP_TRY, CLOCK_REALTIME, NULL);
	return rw_lock_slow((proxylock_rwlock_t *)prw, true, PLK_OP_TRY, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *prw, clockid_t clock,
                                          const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), true, PLK_OP_TIMED, clock, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, true, PLK_OP_TIMED, clock, abstime);
}

PLK_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *prw, const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, PLK_RETURN_ADDRESS(), true, PLK_OP_TIMED, CLOCK_REALTIME, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, true, PLK_OP_TIMED, CLOCK_REALTIME, abstime);
}

/* Unlock with everything checked; with stats, the caller's hold ends: a
 * write hold if the word names it the writer, else a read hold. */
static __attribute__((noinline)) int rw_unlock_careful(pthread_rwlock_t *prw)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;
	uint32_t w;

	if (rwlock_is_glibc(prw))
		return plk_real()->rwlock_unlock(prw);
	if (plk_lockstat_on && !plk_slow_depth) {
		w = __atomic_load_n(&rw->__word, __ATOMIC_RELAXED);
		plk_slow_depth++;
		plk_lockstat_rwlock_release(prw, (w & PLK_RW_WRITER) &&
		                                 (w & PLK_RW_VALUE) == (uint32_t)plk_tid());
		plk_slow_depth--;
	}
	return rw_unlock(rw);
}

PLK_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *prw)
{
	rw_line_prefetch(prw);
	if (RW_CAREFUL(prw))
		return rw_unlock_careful(prw);
	return rw_unlock((proxylock_rwlock_t *)prw);
}

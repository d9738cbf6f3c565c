/* SPDX-License-Identifier: MIT */
/*
 * preload_mutex.c - the LD_PRELOAD interposer's mutexes: pthread_mutex_*
 * and C11's mtx_* become proxylocks in the caller's pthread_mutex_t
 * (preload.c: the storage, what stays glibc's, the fast path's one
 * test), with glibc's own calls (preload_real.h) for those that stay
 * glibc's.  Relies on the core's fast and slow paths (mutex.h) and, when
 * PROXYLOCK_STATS is on, counts each call (lockstat.h).
 *
 * PTHREAD_PRIO_INHERIT mutexes (PROXYLOCK_PI): a proxylock lends RT
 * priority only where sched_setscheduler is permitted, and a thread made
 * RT by rtkit (PipeWire, JACK) without RLIMIT_RTPRIO would lose the
 * kernel PI it asked for.  So by default (auto) they become proxylocks
 * only if RT can be lent when they are initialised (proxylock_donate_kinds()
 * has PROXYLOCK_DONATE_RT, probed once, and the thread still has
 * CAP_SYS_NICE, in the initial user namespace (the only one where the
 * kernel honours it), or RLIMIT_RTPRIO, asked at each init: a daemon may
 * drop them, or unshare its user namespace, after the probe) and stay glibc's kernel PI futexes otherwise;
 * PROXYLOCK_PI=proxy or =kernel decides for every one.  A PI mutex made a
 * proxylock before a drop stays one; its RT lends the kernel then refuses
 * are counted (stats.eperm_skipped, the report).
 *
 * Semantics follow glibc's: a NORMAL or ADAPTIVE mutex may be unlocked
 * by a thread that does not own it, and unlocking it unlocked succeeds
 * (POSIX leaves both undefined; programs rely on glibc); ERRORCHECK and
 * RECURSIVE return EPERM.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <threads.h>

#include "config.h"
#include "lockstat.h"
#include "lockword.h"
#include "mutex.h"
#include "preload.h"
#include "registry.h"
#include "schedctl.h"
#include "stats.h"

#define MUTEX_CAREFUL(pm) __builtin_expect(plk_careful() || plk_mutex_is_glibc(pm), 0)

/* Inside one of our slow paths (an allocator's lock, see plk_slow_depth):
 * try and yield. */
static int lock_nested(proxylock_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	int err;

	while ((err = proxylock_mutex_trylock(m)) == EBUSY) {
		if (plk_owned_by_self(plk_word(m), plk_tid()))
			return EDEADLK;
		if (abstime && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
	return err;
}

/* Lock @m after a failed fast path (@timed: through the deadline checks). */
static __attribute__((noinline)) int lock_slow(proxylock_mutex_t *m, bool timed, clockid_t clock,
                                               const struct timespec *abstime)
{
	int err;

	if (plk_slow_depth)
		return timed && (err = proxylock_mutex_trylock(m)) != EBUSY ? err
		                                                            : lock_nested(m, clock, abstime);
	plk_slow_depth++;
	err = timed ? proxylock_mutex_clocklock(m, clock, abstime) : plk_mutex_lock_slow(m, clock, abstime);
	plk_slow_depth--;
	return err;
}

static __attribute__((noinline)) int unlock_slow(proxylock_mutex_t *m)
{
	int err;

	plk_slow_depth++;
	err = plk_mutex_unlock_slow(m, true);
	plk_slow_depth--;
	return err;
}

static int glibc_lock_op(pthread_mutex_t *pm, enum plk_lock_op op, clockid_t clock,
                         const struct timespec *abstime)
{
	switch (op) {
	case PLK_OP_TRY:
		return plk_real()->mutex_trylock(pm);
	case PLK_OP_TIMED:
		return plk_real_mutex_clocklock(pm, clock, abstime);
	default:
		return plk_real()->mutex_lock(pm);
	}
}

/*
 * Stats (PROXYLOCK_STATS, lockstat.h): contended is "found held by
 * another thread" (the word, as the fast path failed or, for a timed
 * call, as peeked before it) or "the core went to its slow path" (its
 * per-thread count moved during the call: a lock freed between the peek
 * and the core's own try, then taken by another first).  The same rule
 * for every kind of call, so that a timed lock's waits count as a
 * lock's do.
 */
static bool found_held(uint32_t w)
{
	return w != 0 && !plk_owned_by_self(w, plk_tid());
}

/* Count the acquisition, outside our slow paths (nested locks are not). */
static void count_mutex(pthread_mutex_t *pm, uintptr_t ra, int err, bool contended, uint64_t t0)
{
	if (!plk_lockstat_on || plk_slow_depth)
		return;
	plk_slow_depth++;  /* a new row maps a slab (no allocation, but a system call) */
	plk_lockstat_mutex(pm, ra, err, contended, t0, ((proxylock_mutex_t *)pm)->__count == 0);
	plk_slow_depth--;
}

/* Lock with everything checked and, if PROXYLOCK_STATS is on, counted. */
static __attribute__((noinline)) int mutex_lock_careful(pthread_mutex_t *pm, uintptr_t ra,
                                                        enum plk_lock_op op, clockid_t clock,
                                                        const struct timespec *abstime)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;
	bool contended = false;
	uint64_t t0 = 0;
	uint32_t core;
	int err;

	if (plk_mutex_is_glibc(pm))
		return glibc_lock_op(pm, op, clock, abstime);
	if (op == PLK_OP_TRY) {
		err = proxylock_mutex_trylock(m);
	} else if (op == PLK_OP_LOCK && plk_mutex_lock_fast(m)) {
		err = 0;
	} else {
		contended = op == PLK_OP_LOCK ? !plk_owned_by_self(plk_word(m), plk_tid())
		                          : found_held(plk_word(m));
		core = plk_tls_contended;
		t0 = plk_lockstat_on ? plk_now_ns() : 0;
		err = lock_slow(m, op == PLK_OP_TIMED, clock, abstime);
		contended |= plk_tls_contended != core;
	}
	count_mutex(pm, ra, err, contended, t0);
	return err;
}

static __attribute__((noinline)) int mutex_unlock_careful(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (plk_mutex_is_glibc(pm))
		return plk_real()->mutex_unlock(pm);
	/* The hold ends (not a recursive unlock; nor one that fails). */
	if (plk_lockstat_on && !plk_slow_depth && m->__count == 0 && plk_word(m) != 0) {
		plk_slow_depth++;
		plk_lockstat_mutex_release(pm);
		plk_slow_depth--;
	}
	return plk_mutex_unlock_fast(m) ? 0 : unlock_slow(m);
}

/* PROXYLOCK_PI (see the top): may a PTHREAD_PRIO_INHERIT mutex be ours?
 * auto asks the kernel again at each init: the cached probe may predate
 * a privilege drop, after which a proxylock could lend no RT at all. */
static bool pi_as_proxylock(void)
{
	int pi = plk_config()->pi;

	return pi == PLK_PI_PROXY ||
	       (pi == PLK_PI_AUTO && (proxylock_donate_kinds() & PROXYLOCK_DONATE_RT) &&
	        plk_sched_rt_permitted());
}

PLK_EXPORT int pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *attr)
{
	int type = PTHREAD_MUTEX_NORMAL, pshared = PTHREAD_PROCESS_PRIVATE;
	int robust = PTHREAD_MUTEX_STALLED, protocol = PTHREAD_PRIO_NONE;

	if (attr) {
		pthread_mutexattr_gettype(attr, &type);
		pthread_mutexattr_getpshared(attr, &pshared);
		pthread_mutexattr_getrobust(attr, &robust);
		pthread_mutexattr_getprotocol(attr, &protocol);
	}
	if (pshared != PTHREAD_PROCESS_PRIVATE ||
	    robust != PTHREAD_MUTEX_STALLED || protocol == PTHREAD_PRIO_PROTECT ||
	    (protocol == PTHREAD_PRIO_INHERIT && !pi_as_proxylock()))
		return plk_real()->mutex_init(pm, attr);
	memset(pm, 0, sizeof(*pm));
	((proxylock_mutex_t *)pm)->__flags = (uint32_t)type & PLK_TYPE_MASK;
	if (plk_lockstat_on && !plk_slow_depth) {
		plk_slow_depth++;
		plk_lockstat_init(pm, PLK_RETURN_ADDRESS(), false);
		plk_slow_depth--;
	}
	return 0;
}

PLK_EXPORT int pthread_mutex_destroy(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (plk_mutex_is_glibc(pm))
		return plk_real()->mutex_destroy(pm);
	/* Held, or (not robust) a condvar waiter is bound to it: glibc's
	 * __nusers counts both, and its robust kinds skip the check. */
	if (plk_word(m) != 0 || (!(m->__flags & PLK_ROBUST) && plk_mutex_bound(m) != 0))
		return EBUSY;
	m->__flags = UINT32_MAX;  /* glibc's "destroyed": later calls get EINVAL */
	return 0;
}

PLK_EXPORT int pthread_mutex_lock(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, PLK_RETURN_ADDRESS(), PLK_OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_mutex_lock_fast(m))
		return 0;
	return lock_slow(m, false, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_mutex_unlock(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (MUTEX_CAREFUL(pm))
		return mutex_unlock_careful(pm);
	if (plk_mutex_unlock_fast(m))
		return 0;
	return unlock_slow(m);
}

PLK_EXPORT int pthread_mutex_trylock(pthread_mutex_t *pm)
{
	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, PLK_RETURN_ADDRESS(), PLK_OP_TRY, CLOCK_REALTIME, NULL);
	return proxylock_mutex_trylock((proxylock_mutex_t *)pm);
}

PLK_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock,
                                       const struct timespec *abstime)
{
	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, PLK_RETURN_ADDRESS(), PLK_OP_TIMED, clock, abstime);
	return lock_slow((proxylock_mutex_t *)pm, true, clock, abstime);
}

PLK_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abstime)
{
	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, PLK_RETURN_ADDRESS(), PLK_OP_TIMED, CLOCK_REALTIME, abstime);
	return lock_slow((proxylock_mutex_t *)pm, true, CLOCK_REALTIME, abstime);
}

/* --- C11 mtx_* ------------------------------------------------------ */

PLK_EXPORT int mtx_init(mtx_t *mtx, int type)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)mtx;

	/* glibc takes any type: recursive if that bit is set. */
	memset(mtx, 0, sizeof(*mtx));
	m->__flags = (type & mtx_recursive) ? PROXYLOCK_MUTEX_RECURSIVE : PROXYLOCK_MUTEX_NORMAL;
	return thrd_success;
}

PLK_EXPORT int mtx_lock(mtx_t *m)
{
	return plk_thrd_of(pthread_mutex_lock((pthread_mutex_t *)m));
}

PLK_EXPORT int mtx_trylock(mtx_t *m)
{
	return plk_thrd_of(pthread_mutex_trylock((pthread_mutex_t *)m));
}

PLK_EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict ts)
{
	return plk_thrd_of(pthread_mutex_timedlock((pthread_mutex_t *)m, ts));
}

PLK_EXPORT int mtx_unlock(mtx_t *m)
{
	return plk_thrd_of(pthread_mutex_unlock((pthread_mutex_t *)m));
}

PLK_EXPORT void mtx_destroy(mtx_t *m)
{
	pthread_mutex_destroy((pthread_mutex_t *)m);
}

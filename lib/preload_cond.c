/* SPDX-License-Identifier: MIT */
/*
 * preload_cond.c - the LD_PRELOAD interposer's condition variables:
 * pthread_cond_* and C11's cnd_* become proxylock condvars in the
 * caller's pthread_cond_t (zero-filled storage is one; preload.c: what
 * stays glibc's), over proxylock mutexes or glibc's.  Relies on the
 * core's condvar (cond.h: the wait, the wake, wait morphing), on
 * glibc's own calls (preload_real.h) for a process-shared condvar, and
 * on preload_mutex.c's pthread_mutex_lock/unlock to release and retake
 * a proxylock mutex around glibc's wait.
 *
 * Semantics follow glibc's, but pthread_cond_destroy returns EBUSY while
 * threads wait (POSIX allows it; glibc would wait for them instead).
 */
#include <errno.h>
#include <pthread.h>
#include <threads.h>

#include "cond.h"
#include "lockstat.h"
#include "preload.h"
#include "stats.h"

static bool cond_is_glibc(const pthread_cond_t *c)
{
	return ((const proxylock_cond_t *)c)->__flags & PLK_COND_GLIBC_SHARED;
}

/* Cleanup handler: a cancelled wait leaves the slow path too. */
static void slow_depth_leave(void *arg)
{
	(void)arg;
	plk_slow_depth--;
}

/* glibc declares the deadlines nonnull; programs pass NULL anyway, and
 * get EINVAL from us rather than a crash. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"

static int glibc_mutex_lock(void *m)
{
	return plk_real()->mutex_lock(m);
}

static int glibc_mutex_unlock(void *m)
{
	return plk_real()->mutex_unlock(m);
}

static const struct plk_mutex_ops glibc_mutex_ops = { glibc_mutex_lock, glibc_mutex_unlock };

/*
 * A process-shared (glibc) condvar used with a proxylock mutex: glibc
 * would release and retake our mutex its own way.  Wait on the condvar
 * over a private glibc mutex, at most 1 ms at a time: a signal that falls
 * between our unlock and glibc's queueing is late, never lost, and the
 * early return is a spurious wake-up, which POSIX allows.
 *
 * Cancelled inside glibc's wait, the thread leaves holding the helper,
 * which glibc retook, and not the application's mutex, which POSIX says
 * its cleanup handlers find held: ours swaps them back first.
 */
struct shared_wait {
	pthread_mutex_t helper;
	pthread_mutex_t *pm;
};

static void shared_wait_cancelled(void *arg)
{
	struct shared_wait *w = arg;

	plk_real()->mutex_unlock(&w->helper);
	pthread_mutex_lock(w->pm);
}

static int shared_cond_wait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                            const struct timespec *abstime)
{
	struct shared_wait w = { .pm = pm };
	struct timespec soon;
	const struct timespec *until = plk_deadline_within(clock, 1000 * 1000, abstime, &soon);
	int err;

	plk_real()->mutex_init(&w.helper, NULL);
	plk_real()->mutex_lock(&w.helper);
	if ((err = pthread_mutex_unlock(pm)) != 0) {
		plk_real()->mutex_unlock(&w.helper);
		return err;
	}
	pthread_cleanup_push(shared_wait_cancelled, &w);
	plk_real_cond_clockwait(c, &w.helper, clock, until);
	pthread_cleanup_pop(0);
	plk_real()->mutex_unlock(&w.helper);
	err = pthread_mutex_lock(pm);
	if (err == 0 && abstime && plk_deadline_passed(clock, abstime))
		err = ETIMEDOUT;
	return err;
}

static int cond_wait_any(pthread_cond_t *c, pthread_mutex_t *pm, uintptr_t ra, clockid_t clock,
                         const struct timespec *abstime)
{
	bool counted;
	uint32_t core;
	int err;

	if (plk_lockstat_on && !plk_slow_depth) {
		plk_slow_depth++;
		plk_lockstat_cond(c);
		plk_slow_depth--;
	}
	if (cond_is_glibc(c)) {
		if (abstime && !plk_timespec_valid(abstime))
			return EINVAL;
		if (plk_mutex_is_glibc(pm))
			return abstime ? plk_real_cond_clockwait(c, pm, clock, abstime)
			               : plk_real()->cond_wait(c, pm);
		return shared_cond_wait(c, pm, clock, abstime);
	}
	/* With stats, the wait ends the mutex's hold, and the core's
	 * re-acquisition is one of its acquisitions (contended if the core
	 * took its slow path: the wait's time is the condvar's). */
	counted = plk_lockstat_on && !plk_slow_depth && !plk_mutex_is_glibc(pm);
	if (counted && ((proxylock_mutex_t *)pm)->__count == 0) {
		plk_slow_depth++;
		plk_lockstat_mutex_release(pm);
		plk_slow_depth--;
	}
	core = counted ? plk_tls_contended : 0;
	/* Its first wait may probe the kernel's caps (which allocates).  A
	 * wait is a cancellation point: the depth comes back down then too. */
	plk_slow_depth++;
	pthread_cleanup_push(slow_depth_leave, NULL);
	err = plk_cond_wait((proxylock_cond_t *)c, pm, plk_mutex_is_glibc(pm) ? &glibc_mutex_ops : NULL,
	                    clock, abstime);
	pthread_cleanup_pop(1);
	if (counted && !plk_slow_depth) {
		plk_slow_depth++;
		plk_lockstat_reacquired(pm, ra, err == ETIMEDOUT ? 0 : err, plk_tls_contended != core,
		                        ((proxylock_mutex_t *)pm)->__count == 0);
		plk_slow_depth--;
	}
	return err;
}

PLK_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;
	clockid_t clock = CLOCK_REALTIME;

	if (attr) {
		pthread_condattr_getpshared(attr, &pshared);
		pthread_condattr_getclock(attr, &clock);
	}
	if (pshared != PTHREAD_PROCESS_PRIVATE)
		return plk_real()->cond_init(c, attr);
	return proxylock_cond_init((proxylock_cond_t *)c, clock);
}

PLK_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
	if (cond_is_glibc(c))
		return plk_real()->cond_destroy(c);
	/* Not proxylock_cond_destroy: glibc leaves a destroyed condvar usable
	 * enough that programs get away with it, and so do we. */
	if (__atomic_load_n(&((proxylock_cond_t *)c)->__waiters, __ATOMIC_ACQUIRE))
		return EBUSY;
	plk_cond_forget((proxylock_cond_t *)c);
	return 0;
}

PLK_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *pm)
{
	return cond_wait_any(c, pm, PLK_RETURN_ADDRESS(), plk_cond_clock((proxylock_cond_t *)c), NULL);
}

PLK_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *pm,
                                      const struct timespec *abstime)
{
	if (!abstime)
		return EINVAL;
	/* glibc keeps its clock bit where we keep ours: right for both. */
	return cond_wait_any(c, pm, PLK_RETURN_ADDRESS(), plk_cond_clock((proxylock_cond_t *)c), abstime);
}

PLK_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                                      const struct timespec *abstime)
{
	if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
		return EINVAL;
	return cond_wait_any(c, pm, PLK_RETURN_ADDRESS(), clock, abstime);
}

PLK_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	if (cond_is_glibc(c))
		return plk_real()->cond_signal(c);
	plk_slow_depth++;  /* the first lend may probe the kernel's caps (allocates) */
	plk_cond_wake((proxylock_cond_t *)c, false);
	plk_slow_depth--;
	return 0;
}

PLK_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (cond_is_glibc(c))
		return plk_real()->cond_broadcast(c);
	plk_slow_depth++;  /* the first lend may probe the kernel's caps (allocates) */
	plk_cond_wake((proxylock_cond_t *)c, true);
	plk_slow_depth--;
	return 0;
}

/* --- C11 cnd_* ------------------------------------------------------ */

PLK_EXPORT int cnd_init(cnd_t *c)
{
	return plk_thrd_of(pthread_cond_init((pthread_cond_t *)c, NULL));
}

PLK_EXPORT int cnd_signal(cnd_t *c)
{
	return plk_thrd_of(pthread_cond_signal((pthread_cond_t *)c));
}

PLK_EXPORT int cnd_broadcast(cnd_t *c)
{
	return plk_thrd_of(pthread_cond_broadcast((pthread_cond_t *)c));
}

PLK_EXPORT int cnd_wait(cnd_t *c, mtx_t *m)
{
	return plk_thrd_of(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

PLK_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                             const struct timespec *restrict ts)
{
	return plk_thrd_of(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts));
}

PLK_EXPORT void cnd_destroy(cnd_t *c)
{
	pthread_cond_destroy((pthread_cond_t *)c);
}

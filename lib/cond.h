/* SPDX-License-Identifier: MIT */
/*
 * cond.h - condition variables over proxylock (or glibc) mutexes; the
 * design is at the top of cond.c.
 */
#ifndef PLK_COND_H
#define PLK_COND_H

#include <stdbool.h>
#include <time.h>

#include "futex.h"
#include "proxylock.h"

#define PLK_COND_GLIBC_SHARED 1u  /* glibc's pshared bit in __wrefs (__flags) */
#define PLK_COND_MONOTONIC 2u     /* glibc's clock bit: waits time on CLOCK_MONOTONIC */
#define PLK_COND_DESTROYED 0x40000000u  /* proxylock_cond_destroy; above glibc's bits */

/* How to release and retake a mutex that is not a proxylock (a glibc
 * mutex the interposer passes through). */
struct plk_mutex_ops {
	int (*lock)(void *m);
	int (*unlock)(void *m);
};

/**
 * plk_cond_wait - wait on @c, releasing @m meanwhile: a proxylock if
 * @ops is NULL, else a mutex @ops knows how to lock and unlock.  @abstime
 * NULL: no deadline, else one on @clock.  Returns 0, ETIMEDOUT, EINVAL,
 * EPERM (the caller does not own the proxylock @m), or what retaking @m
 * returned (e.g. EOWNERDEAD from a robust glibc mutex).
 */
PLK_HIDDEN int plk_cond_wait(proxylock_cond_t *c, void *m, const struct plk_mutex_ops *ops,
                             clockid_t clock, const struct timespec *abstime);

/** plk_cond_wake - wake one (@all false) or every waiter of @c. */
PLK_HIDDEN void plk_cond_wake(proxylock_cond_t *c, bool all);

/** plk_cond_forget - @c is destroyed: forget its wakers (wakers.h). */
PLK_HIDDEN void plk_cond_forget(proxylock_cond_t *c);

/** plk_cond_clock - the clock @c's timed waits use. */
static inline clockid_t plk_cond_clock(const proxylock_cond_t *c)
{
	return (c->__flags & PLK_COND_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

#endif /* PLK_COND_H */

/* SPDX-License-Identifier: MIT */
/*
 * liveness.c - whether a lock's owner still exists (see liveness.h).
 *
 * A sleeping mutex waiter, of a robust lock or any other, sleeps in
 * slices and between them asks the kernel whether the owner still exists
 * (plk_thread_exited): PLK_LIVENESS_NS at first, doubling per check up to
 * 8x for a robust lock (its waiters must take it over) and 128x for any
 * other (whose waiters only report it).  A robust lock also asks before
 * every sleep.  One tgkill(2) per check; nothing on the way to a normal
 * wake.
 */
#include <stdbool.h>

#include "futex.h"
#include "liveness.h"
#include "lockword.h"
#include "registry.h"

#define PLK_LIVENESS_NS (20 * 1000 * 1000ull)

static uint64_t liveness_slice(const proxylock_mutex_t *m, int checks)
{
	int cap = (m->__flags & PLK_ROBUST) ? 3 : 7;

	return PLK_LIVENESS_NS << (checks < cap ? checks : cap);
}

const struct timespec *plk_liveness_sleep_until(const proxylock_mutex_t *m, int checks,
                                                clockid_t *clock,
                                                const struct timespec *abstime,
                                                struct timespec *slice)
{
	if (!abstime)
		*clock = CLOCK_MONOTONIC;  /* no deadline: slices immune to clock steps */
	return plk_deadline_within(*clock, liveness_slice(m, checks), abstime, slice);
}

pid_t plk_liveness_dead_owner(uint32_t w, uint32_t self)
{
	pid_t tid = plk_owner_tid(w);

	return tid && (uint32_t)tid != self && plk_thread_exited(tid) ? tid : 0;
}

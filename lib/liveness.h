/* SPDX-License-Identifier: MIT */
/*
 * liveness.h - whether a lock's owner still exists (liveness.c): the
 * slices every sleeping mutex waiter sleeps in, robust lock or not, and
 * the question to the kernel asked between them.  What is done with a
 * dead owner is robust.c's.  Nothing here is on an uncontended path.
 */
#ifndef PLK_LIVENESS_H
#define PLK_LIVENESS_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "proxylock.h"

/**
 * plk_liveness_sleep_until - when a waiter asleep on @m's queue next
 * wakes: at @abstime (on *@clock; NULL: never) or at the end of its
 * @checks-th liveness slice (filled in *@slice), whichever comes first.
 * With no @abstime the slice is timed on CLOCK_MONOTONIC, stored in
 * *@clock, so that a step of the wall clock cannot stretch it.  Between
 * slices the waiter asks whether the owner still exists
 * (plk_robust_owner_check).
 */
PLK_HIDDEN const struct timespec *plk_liveness_sleep_until(const proxylock_mutex_t *m,
                                                           int checks, clockid_t *clock,
                                                           const struct timespec *abstime,
                                                           struct timespec *slice);

/**
 * plk_liveness_dead_owner - the owner lock word @w names, if it has
 * exited and is not the caller @self; else 0.  Asks the kernel
 * (plk_thread_exited), so never under an internal lock.
 */
PLK_HIDDEN pid_t plk_liveness_dead_owner(uint32_t w, uint32_t self);

#endif /* PLK_LIVENESS_H */

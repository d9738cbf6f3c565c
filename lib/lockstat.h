/* SPDX-License-Identifier: MIT */
/*
 * lockstat.h - per-lock statistics for the PROXYLOCK_STATS=1 report
 * (lockstat.c).  Everything here is a no-op cost-wise until enabled.
 */
#ifndef PLK_LOCKSTAT_H
#define PLK_LOCKSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "futex.h"

/* Set once by plk_lockstat_enable(); read by the interposer's paths. */
PLK_HIDDEN extern bool plk_lockstat_on;

/** plk_lockstat_enable - start counting; print the report at exit. */
PLK_HIDDEN void plk_lockstat_enable(void);

/** plk_lockstat_mutex - @m was acquired, after @wait_ns if @contended. */
PLK_HIDDEN void plk_lockstat_mutex(const void *m, bool contended, uint64_t wait_ns);

/** plk_lockstat_cond - a thread waited on condvar @c. */
PLK_HIDDEN void plk_lockstat_cond(const void *c);

/**
 * plk_lockstat_lent - a donation through @lock changed the PROXYLOCK_DONATE_*
 * @kinds in its owner's kernel view.  Does nothing unless enabled.
 */
PLK_HIDDEN void plk_lockstat_lent(const void *lock, unsigned kinds);

/**
 * plk_lockstat_dead - a waiter found @lock held by thread @tid, which has
 * exited (@robust: and took it over).  Always kept (the first few are
 * listed in the exit report); said at once on stderr if PROXYLOCK_STATS,
 * so never called under a bucket lock.
 */
PLK_HIDDEN void plk_lockstat_dead(const void *lock, pid_t tid, bool robust);

/**
 * plk_lockstat_fork_prepare/parent/child - pthread_atfork hooks: while
 * counting, liburcu's before/after-fork calls (urcu-bp, call_rcu).
 */
PLK_HIDDEN void plk_lockstat_fork_prepare(void);
PLK_HIDDEN void plk_lockstat_fork_parent(void);
PLK_HIDDEN void plk_lockstat_fork_child(void);

#endif /* PLK_LOCKSTAT_H */

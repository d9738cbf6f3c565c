/* SPDX-License-Identifier: MIT */
/*
 * stats.h - process-wide counters (struct proxylock_stats).  Relaxed
 * atomic adds: they order nothing and are only read for reports.  Never
 * touched on the uncontended path.
 */
#ifndef PLK_STATS_H
#define PLK_STATS_H

#include "futex.h"
#include "proxylock.h"

PLK_HIDDEN extern struct proxylock_stats plk_stats;

#define plk_stat_inc(field) \
	__atomic_fetch_add(&plk_stats.field, 1, __ATOMIC_RELAXED)

/** plk_stats_reset - zero every counter (fork child). */
PLK_HIDDEN void plk_stats_reset(void);

#endif /* PLK_STATS_H */

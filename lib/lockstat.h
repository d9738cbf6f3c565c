/* SPDX-License-Identifier: MIT */
/*
 * lockstat.h - the interposer's per-lock statistics for the
 * PROXYLOCK_STATS=1 report (lockstat.c).  Everything here is a no-op cost-wise until enabled.
 */
#ifndef PLK_LOCKSTAT_H
#define PLK_LOCKSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "futex.h"

/* Set once by plk_lockstat_enable(); read by the interposer's paths. */
PLK_HIDDEN extern bool plk_lockstat_on;

/** plk_lockstat_enable - start counting (and observing the core:
 * observe.h); print the report at exit. */
PLK_HIDDEN void plk_lockstat_enable(void);

/** plk_lockstat_mutex - @m was acquired, after @wait_ns if @contended. */
PLK_HIDDEN void plk_lockstat_mutex(const void *m, bool contended, uint64_t wait_ns);

/** plk_lockstat_rwlock - @rw was acquired for writing if @write, else
 * for reading, after @wait_ns if @contended. */
PLK_HIDDEN void plk_lockstat_rwlock(const void *rw, bool write, bool contended, uint64_t wait_ns);

/** plk_lockstat_cond - a thread waited on condvar @c. */
PLK_HIDDEN void plk_lockstat_cond(const void *c);

#endif /* PLK_LOCKSTAT_H */

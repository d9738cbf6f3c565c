/* SPDX-License-Identifier: MIT */
/*
 * lockstat.h - the interposer's per-lock statistics (lockstat.c), read
 * by the report (report.c).  Nothing here is reached while stats are off:
 * the interposer's careful paths call it only when plk_lockstat_on.
 */
#ifndef PLK_LOCKSTAT_H
#define PLK_LOCKSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "callsite.h"
#include "futex.h"

/* What a row counts. */
enum { PLK_ROW_MUTEX = 0, PLK_ROW_COND = 1, PLK_ROW_RWLOCK = 2 };

/* One way of holding a lock: how long, in all and at most, how often. */
struct plk_holdtime {
	uint64_t ns, max_ns, n;
};

/*
 * A lock's row.  Counters are relaxed atomics, added to by the threads
 * that use the lock, read by the report.
 *   uses      acquisitions: a mutex's (lock, trylock, timed, clock and
 *             condvar re-acquisitions), an rwlock's for reading; a
 *             condvar's waits
 *   wr_uses   an rwlock's acquisitions for writing
 *   contended acquisitions that found the lock held by another thread,
 *             or that the core took through its slow path (stats.h)
 *   reacquired_contended  of contended, a mutex's condvar re-acquisitions
 *             (their wait is in the condvar's, not in wait_ns)
 *   timeouts  timed acquisitions that found it held and gave up
 *   wait_ns   the contended acquisitions' time from call to acquisition
 *             (a condvar re-acquisition's is the condvar wait's)
 *   held      holds from acquisition to release: a mutex's, an rwlock's
 *             for writing; rd_held an rwlock's for reading (at most
 *             PLK_RD_TIMED at once per thread are timed)
 *   donations lends through the lock (observe.h), lent[] by kind
 */
struct plk_lockrow {
	const void *addr;
	int kind;               /* PLK_ROW_* */
	int ready;              /* in the index: the report's rows (release/acquire) */
	uint64_t uses, wr_uses, contended, reacquired_contended, timeouts;
	uint64_t wait_ns, wait_max_ns;
	struct plk_holdtime held, rd_held;
	uint64_t hold_start;    /* the holder's acquisition time (mutex, rwlock writer); 0: none */
	uint64_t donations;
	uint64_t lent[4];       /* by kind: uclamp, affinity, nice, rt */
	struct plk_site contended_at;  /* the first contended acquisition's caller */
	struct plk_site init_at;       /* the (first) initialising call's caller */
};

#define PLK_RD_TIMED 8

/* Set once by plk_lockstat_enable(); read by the interposer's paths. */
PLK_HIDDEN extern bool plk_lockstat_on;

/** plk_lockstat_enable - start counting (and observing the core:
 * observe.h).  The report is report.c's. */
PLK_HIDDEN void plk_lockstat_enable(void);

/**
 * plk_lockstat_mutex - a lock call on mutex @m returned @err (0: it is
 * held; ETIMEDOUT: a timed call gave up); @contended as in the row;
 * @t0: when the call began to wait (0: unknown); @outermost: not a
 * recursive re-lock (a hold starts); @ra: the interposed call's return
 * address.  The first contended acquisition's stack is taken here
 * (callsite.h): call it from inside the interposed call.
 */
PLK_HIDDEN void plk_lockstat_mutex(const void *m, uintptr_t ra, int err, bool contended,
                                   uint64_t t0, bool outermost);

/** plk_lockstat_reacquired - as plk_lockstat_mutex, for the re-acquisition
 * of @m at the end of a condvar wait (its wait unknown here). */
PLK_HIDDEN void plk_lockstat_reacquired(const void *m, uintptr_t ra, int err, bool contended,
                                        bool outermost);

/** plk_lockstat_mutex_release - the holder of @m lets it go (not a
 * recursive unlock): its hold ends. */
PLK_HIDDEN void plk_lockstat_mutex_release(const void *m);

/** plk_lockstat_rwlock - as plk_lockstat_mutex, for @rw taken for
 * writing if @write, else for reading. */
PLK_HIDDEN void plk_lockstat_rwlock(const void *rw, uintptr_t ra, bool write, int err,
                                    bool contended, uint64_t t0);

/** plk_lockstat_rwlock_release - the caller lets @rw go: its write hold
 * if @write, else its latest read hold. */
PLK_HIDDEN void plk_lockstat_rwlock_release(const void *rw, bool write);

/** plk_lockstat_init - @lock (a mutex, or an rwlock if @rw) is being
 * initialised by the interposed call returning to @ra: its stack is
 * taken, once per row. */
PLK_HIDDEN void plk_lockstat_init(const void *lock, uintptr_t ra, bool rw);

/** plk_lockstat_cond - a thread waited on condvar @c. */
PLK_HIDDEN void plk_lockstat_cond(const void *c);

/** plk_lockstat_next - the published row after row *@i, advancing *@i;
 * NULL at the end.  Rows are never freed or moved; those published
 * meanwhile may be left out. */
PLK_HIDDEN struct plk_lockrow *plk_lockstat_next(unsigned long *i);

/** plk_lockstat_claimed - rows handed out so far (a bound for a walk). */
PLK_HIDDEN unsigned long plk_lockstat_claimed(void);

/** plk_lockstat_lost - operations not counted for want of a row. */
PLK_HIDDEN unsigned long plk_lockstat_lost(void);

/** plk_stat_get - counter @field of a row, read while others add to it. */
static inline unsigned long long plk_stat_get(const uint64_t *field)
{
	return __atomic_load_n(field, __ATOMIC_RELAXED);
}

#endif /* PLK_LOCKSTAT_H */

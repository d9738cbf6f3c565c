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

/* The counters, on a page of their own (stats.c: fork). */
union plk_stats_page {
	struct proxylock_stats s;
	char page[4096];
};
PLK_HIDDEN extern union plk_stats_page plk_stats_page;

#define plk_stat_inc(field) \
	__atomic_fetch_add(&plk_stats_page.s.field, 1, __ATOMIC_RELAXED)

/* This thread's count of stats.contended (it only ever grows; it wraps).
 * The interposer's per-lock rows (lockstat.c) read it before and after
 * a call that may acquire a lock inside the core (a condvar's
 * re-acquisition, a timed lock) to tell whether that acquisition went
 * to the slow path: the same event stats.contended counts. */
PLK_HIDDEN extern __thread uint32_t plk_tls_contended __attribute__((tls_model("initial-exec")));

/* An acquisition goes to the slow path: counted process-wide and by the
 * thread. */
#define plk_stat_contended() do {                                       \
		plk_stat_inc(contended);                                \
		plk_tls_contended++;                                    \
	} while (0)

/** plk_stats_fork_init - mark the counters' page MADV_WIPEONFORK, if the
 * kernel can (at load). */
PLK_HIDDEN void plk_stats_fork_init(void);

/** plk_stats_fork_child - zero every counter (fork child; the kernel
 * did, if the page is wiped on fork). */
PLK_HIDDEN void plk_stats_fork_child(void);

#endif /* PLK_STATS_H */

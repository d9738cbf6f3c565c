/* SPDX-License-Identifier: MIT */
/*
 * fork.c - keep the library consistent across fork().
 *
 * prepare takes every bucket lock, then the registry's free-list lock,
 * then (only with PROXYLOCK_STATS on, the one user of liburcu) urcu-bp's
 * and call_rcu's locks, so that no internal lock is held by a thread
 * that will not exist in the child; the parent releases them in reverse.
 * The order is safe because no RCU read-side section waits for a bucket
 * (lockstat.c): the grace period call_rcu_before_fork may wait for never
 * depends on a lock we hold.  The child empties the wait queues and the
 * registry (every record names a parent thread), restores the forking
 * thread's base context if it was boosted, and resets the TID cache;
 * locks the forking thread held keep a TID it had before the fork in
 * their word and still count as its own (registry.h: fork aliases).
 */
#include <pthread.h>

#include "lockstat.h"
#include "registry.h"
#include "stats.h"
#include "waitq.h"

static void fork_prepare(void)
{
	(void)plk_tid();  /* the TID cached (gettid) before any internal lock is taken */
	plk_waitq_fork_prepare();
	plk_registry_fork_prepare();
	plk_lockstat_fork_prepare();
}

static void fork_parent(void)
{
	plk_lockstat_fork_parent();
	plk_registry_fork_parent();
	plk_waitq_fork_parent();
}

static void fork_child(void)
{
	plk_lockcheck_fork_child();  /* the lock words are reset below, by hand */
	plk_lockstat_fork_child();
	plk_registry_fork_child();
	plk_waitq_fork_child();
	plk_stats_reset();
}

static __attribute__((constructor)) void fork_hooks_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* SPDX-License-Identifier: MIT */
/*
 * fork.c - keep the library consistent across fork().
 *
 * prepare takes every bucket lock, then urcu-bp's and call_rcu's locks,
 * so that no internal lock is held by a thread that will not exist in
 * the child; the parent releases them in reverse.  The child empties the
 * wait queues and the registry (every record names a parent thread),
 * restores the forking thread's base context if it was boosted, and
 * resets the TID cache; locks the forking thread held keep its pre-fork
 * TID in their word and still count as its own (plk_owned_by_self).
 */
#include <pthread.h>

#include "registry.h"
#include "stats.h"
#include "waitq.h"

static void fork_prepare(void)
{
	plk_waitq_fork_prepare();
	plk_registry_fork_prepare();
}

static void fork_parent(void)
{
	plk_registry_fork_parent();
	plk_waitq_fork_parent();
}

static void fork_child(void)
{
	plk_registry_fork_child();
	plk_waitq_fork_child();
	plk_stats_reset();
}

static __attribute__((constructor)) void fork_hooks_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* SPDX-License-Identifier: MIT */
/*
 * fork.c - keep the library consistent across fork().
 *
 * prepare first adopts the record a waiter made for the forking thread
 * if it has none of its own (see fork_prepare), then takes its own apply
 * token (no other thread's sched calls on it are then in flight, so its
 * record says what the kernel has), then calls the observer's hook (with
 * no internal lock held; the interposer's statistics need none now),
 * then takes every bucket lock, then the registry's free-list lock, so
 * that no internal lock is held by a thread that will not exist in the
 * child; the parent releases them in reverse, then sets the key of a
 * record adopted in prepare.  The child empties the wait queues and the
 * registry (every record names a parent thread), frees the parent
 * threads' read sets, zeroes the counters and resets the TID cache;
 * then, with every internal lock free again, it restores the forking
 * thread's base context if it was boosted.  Locks the forking thread
 * held keep a TID it had before the fork in their word and still count
 * as its own (registry.h: fork aliases).  The child's handlers touch
 * only pages it needs, and what it must find zero the kernel zeroes
 * (MADV_WIPEONFORK): every page a child first touches is a page fault,
 * which is what a fork costs (docs/design.md, Fork).
 */
#include <pthread.h>

#include "donate.h"
#include "observe.h"
#include "rdset.h"
#include "registry.h"
#include "stats.h"
#include "waitq.h"

/*
 * A record a waiter made for the forking thread (it took its locks by
 * the fast path) is adopted before the token is taken.  A waiter may
 * make one after that look and before the buckets are held: then
 * everything is let go and the thread adopts (or makes) its record and
 * starts again, so at most twice.  Once every bucket is held no lend to
 * it can be computed, and a record that is gone was retired with
 * nothing of it left in the kernel.
 */
static void fork_prepare(void)
{
	(void)plk_tid();  /* the TID cached (gettid) before any internal lock is taken */
	for (bool retry = false;; retry = true) {
		plk_registry_fork_adopt(retry);
		plk_donate_fork_prepare();
		plk_observe_fork_prepare();
		plk_waitq_fork_prepare();
		if (retry || !plk_registry_fork_unadopted())
			break;
		plk_waitq_fork_parent();
		plk_observe_fork_parent();
		plk_donate_fork_parent();
	}
	plk_registry_fork_prepare();
}

static void fork_parent(void)
{
	plk_registry_fork_parent();
	plk_waitq_fork_parent();
	plk_observe_fork_parent();
	plk_donate_fork_parent();
	plk_registry_fork_key();  /* after the token is dropped: it may retire the record */
}

static void fork_child(void)
{
	plk_lockcheck_fork_child();  /* the lock words are reset below, by hand */
	plk_registry_fork_child();
	plk_rdset_fork_child();  /* after the TID cache is reset */
	plk_waitq_fork_child();
	plk_stats_fork_child();
	plk_registry_fork_restore();
	plk_observe_fork_child();
}

/* The hooks are installed.  Tests linked against the internal archive
 * name it, so that the linker takes this file, and its constructor, in. */
PLK_HIDDEN bool plk_fork_hooks_installed;

static __attribute__((constructor)) void fork_hooks_install(void)
{
	plk_waitq_fork_init();
	plk_stats_fork_init();
	/* The record key made at load, among the program's first keys:
	 * glibc keeps the first 32 in each thread's own block, so setting
	 * it in fork's parent handler (a forking thread that adopted its
	 * record) allocates nothing while an allocator registered after us
	 * still holds its fork locks. */
	plk_registry_key_init();
	plk_fork_hooks_installed = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

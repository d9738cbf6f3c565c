/* SPDX-License-Identifier: MIT */
/*
 * fork.c - keep the library consistent across fork().
 *
 * No internal lock, token or other wait of ours is held across a fork.
 * glibc runs prepare handlers in reverse order of registration, so the
 * handlers of libraries loaded before us (an allocator, say) run after
 * ours, and may take interposed locks that other threads hold; had we
 * kept our locks, those would wait for the forking thread, or their
 * holders for ours (issue 35).  What a child must find empty it finds
 * so from the kernel, before any handler runs in it: the bucket table
 * and the wakers table beside it, the table of explicit lends, the thread
 * records and their table, the free list, the counters and
 * the process's identity are on pages marked MADV_WIPEONFORK (registry.h,
 * Identity).  So prepare only copies the forking thread's base context
 * and what of ours the kernel has (it adopts or makes its record first,
 * so that lends reaching it until the fork is taken go through a record,
 * whose calls are watched), and the child sets back what a lend can
 * have changed (donate.c, Fork).  The child also frees
 * the parent threads' read sets and zeroes what the kernel could not.
 * Locks the forking thread held keep a TID it had before the fork in
 * their word and still count as its own (forkalias.h).
 * Where the kernel does not do MADV_WIPEONFORK, the child handler resets
 * by hand, and handlers that run before it (other libraries' child
 * handlers) see the parent's state (docs/design.md, Fork).
 */
#include <pthread.h>
#include <sys/single_threaded.h>

#include "donate.h"
#include "lendto.h"
#include "observe.h"
#include "rdset.h"
#include "registry.h"
#include "stats.h"
#include "waitq.h"
#include "wakers.h"

/* The forking thread's base, copied in prepare (glibc runs one fork's
 * handlers at a time); fork_base_copied: there is a copy to restore. */
static bool fork_base_copied;
static struct plk_donate_fork_copy fork_copy;

/*
 * A single-threaded process has no other thread to lend to it while it
 * forks: nothing to copy, and its child makes no scheduler call.
 */
static void fork_prepare(void)
{
	(void)plk_tid();  /* the TID cached (gettid) before any internal lock is taken */
	fork_base_copied = false;
	if (!__libc_single_threaded) {
		plk_registry_fork_adopt();
		fork_base_copied = plk_donate_fork_prepare(&fork_copy);
	}
	plk_observe_fork_prepare();
}

static void fork_parent(void)
{
	plk_donate_fork_parent();
	plk_observe_fork_parent();
	plk_registry_fork_key();
}

static void fork_child(void)
{
	plk_registry_fork_child();
	plk_rdset_fork_child();  /* after the TID is renewed */
	plk_waitq_fork_child();
	plk_wakers_fork_child();
	plk_lendto_fork_child();
	plk_stats_fork_child();
	if (fork_base_copied)
		plk_donate_fork_child(&fork_copy);
	plk_observe_fork_child();
}

/* The hooks are installed.  Tests linked against the internal archive
 * name it, so that the linker takes this file, and its constructor, in. */
PLK_HIDDEN bool plk_fork_hooks_installed;

static __attribute__((constructor)) void fork_hooks_install(void)
{
	plk_registry_fork_init();
	plk_waitq_fork_init();
	plk_wakers_fork_init();
	plk_lendto_fork_init();
	plk_stats_fork_init();
	/* The record key made at load, among the program's first keys:
	 * glibc keeps the first 32 in each thread's own block, so setting
	 * it in fork's parent handler (a forking thread that adopted its
	 * record) allocates nothing while an allocator registered after us
	 * still holds its fork locks. */
	plk_registry_key_init();
	plk_fork_hooks_installed = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * forkalias.h - the TIDs a fork's surviving thread had before it
 * (forkalias.c): lock words written before a fork still name them.
 * Read by the lock words' owner decoding (lockword.h, rwlockword.h),
 * written only by registry.c when the survivor renews its TID.
 */
#ifndef PLK_FORKALIAS_H
#define PLK_FORKALIAS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/*
 * After fork() the forking thread lives on in the child under a new TID,
 * but locks it held still carry the TID it had in the parent, or in the
 * grandparent, and so on.  Those earlier TIDs are its aliases: up to
 * PLK_FORK_ALIASES of them, the oldest dropped first.  Only the thread
 * that a fork created (plk_forked_tid) has aliases, and a TID stops being
 * one when a new thread of this process is given it.  The thread adds
 * its alias itself when it renews its TID (plk_tid_slow, registry.c, by
 * plk_fork_alias_add), which other
 * threads of the child may already be running beside: the list is a
 * ring, written slot first, count (plk_fork_naliases, all ever added)
 * last with release; readers scan the last PLK_FORK_ALIASES slots.
 */
#define PLK_FORK_ALIASES 16
PLK_HIDDEN extern int plk_fork_naliases;
PLK_HIDDEN bool plk_fork_alias_slow(uint32_t tid);

/** plk_fork_alias_listed - @tid is among the aliases (no syscall; see
 * plk_owner_tid_locked for what that may get wrong). */
PLK_HIDDEN bool plk_fork_alias_listed(uint32_t tid);

/** plk_fork_alias - true if @tid is a TID the forked thread had before a fork. */
static inline bool plk_fork_alias(uint32_t tid)
{
	return __builtin_expect(__atomic_load_n(&plk_fork_naliases, __ATOMIC_RELAXED) != 0, 0) &&
	       plk_fork_alias_slow(tid);
}

/** plk_forked_tid - in a fork child, the forking thread's new TID, else 0. */
PLK_HIDDEN uint32_t plk_forked_tid(void);

/**
 * plk_fork_alias_add - the calling thread, cached as @old in another
 * process, is the survivor of a fork, now @tid: @old becomes an alias,
 * the aliases it had kept if @old is the last fork's survivor's TID.
 * False if done already (a handler that interrupted the caller did it).
 */
PLK_HIDDEN bool plk_fork_alias_add(uint32_t old, uint32_t tid);

#endif /* PLK_FORKALIAS_H */

/* SPDX-License-Identifier: MIT */
/*
 * forkalias.c - the fork survivor's earlier TIDs (see forkalias.h).
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "forkalias.h"

/* Written by the survivor of a fork when it renews its TID, read by
 * every thread. */
int plk_fork_naliases;
static uint32_t fork_aliases[PLK_FORK_ALIASES];
static uint32_t forked_tid;

bool plk_fork_alias_add(uint32_t old, uint32_t tid)
{
	int n = __atomic_load_n(&plk_fork_naliases, __ATOMIC_RELAXED);
	uint32_t last = __atomic_load_n(&forked_tid, __ATOMIC_RELAXED);

	if (last == tid)
		return false;
	if (old != last)
		n = 0;  /* not the last fork's survivor: no aliases */
	__atomic_store_n(&fork_aliases[n % PLK_FORK_ALIASES], old, __ATOMIC_RELAXED);
	/* Release: a reader that sees the count sees the slot. */
	__atomic_store_n(&plk_fork_naliases, n + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&forked_tid, tid, __ATOMIC_RELAXED);
	return true;
}

/*
 * An alias stops being one once a new thread of this process has that
 * TID (the child lives long enough for TIDs to wrap): a word naming it
 * may then be that thread's.  The kernel, not a flag, says so, so no
 * memory order is involved: tgkill(pid, tid, 0) fails with ESRCH while
 * no thread of ours has the TID.  Only words naming an alias pay it, and
 * getpid(2) with it (this file stands below the registry's cached PID).
 */
/* How many slots of the alias ring are in use (forkalias.h); acquire:
 * the slots were written before the count. */
static int aliases_in_use(void)
{
	int n = __atomic_load_n(&plk_fork_naliases, __ATOMIC_ACQUIRE);

	return n < PLK_FORK_ALIASES ? n : PLK_FORK_ALIASES;
}

bool plk_fork_alias_slow(uint32_t tid)
{
	for (int i = 0, n = aliases_in_use(); i < n; i++) {
		if (tid == 0 || __atomic_load_n(&fork_aliases[i], __ATOMIC_RELAXED) != tid)
			continue;
		int saved = errno;
		bool taken = syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) == 0;

		errno = saved;
		return !taken;
	}
	return false;
}

bool plk_fork_alias_listed(uint32_t tid)
{
	for (int i = 0, n = aliases_in_use(); i < n; i++)
		if (tid != 0 && __atomic_load_n(&fork_aliases[i], __ATOMIC_RELAXED) == tid)
			return true;
	return false;
}

uint32_t plk_forked_tid(void)
{
	return __atomic_load_n(&forked_tid, __ATOMIC_RELAXED);
}

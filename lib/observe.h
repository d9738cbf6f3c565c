/* SPDX-License-Identifier: MIT */
/*
 * observe.h - observers of the lock core: a small hook table the core
 * calls and an observer (the interposer's per-lock statistics,
 * lockstat.c) fills in, so that the core imports no statistics module.
 * Every hook is called with no internal lock held.  Also the dead-owner
 * log: locks found held by exited threads, kept by the core itself.
 */
#ifndef PLK_OBSERVE_H
#define PLK_OBSERVE_H

#include <stdbool.h>
#include <sys/types.h>

#include "futex.h"

struct plk_observer_ops {
	/* A donation through @lock changed the PROXYLOCK_DONATE_* @kinds
	 * in its owner's kernel view. */
	void (*lent)(const void *lock, unsigned kinds);
	/* pthread_atfork hooks, called after the core's own. */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
};

/** plk_observers_install - set the observer (once; NULL fields: no hook). */
PLK_HIDDEN void plk_observers_install(const struct plk_observer_ops *ops);

PLK_HIDDEN extern const struct plk_observer_ops *plk_observers;

/** plk_observe_lent - tell the observer a donation through @lock changed @kinds. */
static inline void plk_observe_lent(const void *lock, unsigned kinds)
{
	const struct plk_observer_ops *o = __atomic_load_n(&plk_observers, __ATOMIC_ACQUIRE);

	if (o && o->lent && lock && kinds)
		o->lent(lock, kinds);
}

/**
 * plk_observe_dead_owner - a waiter found @lock held by thread @tid,
 * which has exited (@robust: and took it over).  Kept in the log (the
 * first PLK_DEAD_ROWS); said at once on stderr if PROXYLOCK_STATS.
 */
PLK_HIDDEN void plk_observe_dead_owner(const void *lock, pid_t tid, bool robust);

/**
 * plk_observe_say_to - say the dead-owner lines on @fd (-1: nowhere)
 * from now on.  Without a call, they go to fd 2 if it was open when the
 * library was loaded (a constructor checks), else nowhere: a program
 * started with stderr closed may open its own file as fd 2.  Called at
 * load only (the interposer's constructor, with its copy of fd 2).
 */
PLK_HIDDEN void plk_observe_say_to(int fd);

#define PLK_DEAD_ROWS 16

/** plk_dead_log - entry @i (< PLK_DEAD_ROWS) of the log; false if none. */
PLK_HIDDEN bool plk_dead_log(unsigned i, const void **lock, pid_t *tid, bool *robust);

/** plk_dead_count - owners found dead so far (may exceed PLK_DEAD_ROWS). */
PLK_HIDDEN unsigned plk_dead_count(void);

/** plk_observe_fork_prepare/parent/child - the observer's fork hooks. */
PLK_HIDDEN void plk_observe_fork_prepare(void);
PLK_HIDDEN void plk_observe_fork_parent(void);
PLK_HIDDEN void plk_observe_fork_child(void);

#endif /* PLK_OBSERVE_H */

/* SPDX-License-Identifier: MIT */
/*
 * observe.c - the observer table and the dead-owner log (observe.h).
 * The dead-owner lines go to say_fd, chosen at load (plk_observe_say_to):
 * never to a descriptor 2 that was closed then.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>

#include "config.h"
#include "observe.h"

const struct plk_observer_ops *plk_observers;

/* A row is claimed by fetch_add on ndead and published by its ready
 * flag (release after the fields; the reader loads it with acquire), so a
 * reader never sees a row filled in part, on any architecture. */
static struct { const void *lock; pid_t tid; bool robust; bool ready; } dead[PLK_DEAD_ROWS];
static unsigned ndead;

/* Where the dead-owner lines go; written only by constructors, in the
 * thread that loads the library, before any lock can find a dead owner. */
static int say_fd = -1;
static bool say_fd_chosen;

void plk_observe_say_to(int fd)
{
	say_fd = fd;
	say_fd_chosen = true;
}

/* Not if plk_observe_say_to ran first (constructors of one object run in
 * no order the linker promises). */
static __attribute__((constructor)) void observe_init(void)
{
	if (!say_fd_chosen && fcntl(2, F_GETFD) >= 0)
		say_fd = 2;
}

void plk_observers_install(const struct plk_observer_ops *ops)
{
	/* Release: a core thread that sees the table sees its hooks. */
	__atomic_store_n(&plk_observers, ops, __ATOMIC_RELEASE);
}

void plk_observe_dead_owner(const void *lock, pid_t tid, bool robust)
{
	unsigned i = __atomic_fetch_add(&ndead, 1, __ATOMIC_RELAXED);

	if (i < PLK_DEAD_ROWS) {
		__atomic_store_n(&dead[i].lock, lock, __ATOMIC_RELAXED);
		__atomic_store_n(&dead[i].tid, tid, __ATOMIC_RELAXED);
		__atomic_store_n(&dead[i].robust, robust, __ATOMIC_RELAXED);
		__atomic_store_n(&dead[i].ready, true, __ATOMIC_RELEASE);
	}
	if (plk_config()->stats && say_fd >= 0) {
		int cancel;

		/* Said from inside a lock call, which is no cancellation point. */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
		dprintf(say_fd, "proxylock: mutex %p is held by thread %d, which exited; %s\n",
		        lock, (int)tid, robust ? "robust: its next owner got EOWNERDEAD"
		                           : "not robust: its waiters wait forever");
		pthread_setcancelstate(cancel, NULL);
	}
}

bool plk_dead_log(unsigned i, const void **lock, pid_t *tid, bool *robust)
{
	if (i >= PLK_DEAD_ROWS || i >= __atomic_load_n(&ndead, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&dead[i].ready, __ATOMIC_ACQUIRE))
		return false;  /* none, or still being filled */
	*lock = __atomic_load_n(&dead[i].lock, __ATOMIC_RELAXED);
	*tid = __atomic_load_n(&dead[i].tid, __ATOMIC_RELAXED);
	*robust = __atomic_load_n(&dead[i].robust, __ATOMIC_RELAXED);
	return true;
}

unsigned plk_dead_count(void)
{
	return __atomic_load_n(&ndead, __ATOMIC_RELAXED);
}

#define OBSERVE_FORK(name)                                                        \
	void plk_observe_##name(void)                                             \
	{                                                                          \
		const struct plk_observer_ops *o =                                \
			__atomic_load_n(&plk_observers, __ATOMIC_ACQUIRE);        \
		if (o && o->name)                                                  \
			o->name();                                                 \
	}
OBSERVE_FORK(fork_prepare)
OBSERVE_FORK(fork_parent)
OBSERVE_FORK(fork_child)

/* SPDX-License-Identifier: MIT */
/*
 * robust.c - owners that exit holding a lock: taking a robust lock from
 * a dead owner (EOWNERDEAD), consistent and not recoverable.  The lock protocol (mutex.c) and the condvar (cond.c)
 * call in here; this file keeps the protocol's invariants (M1-M6, atop
 * mutex.c) where it writes the word or the queue.
 *
 * Owners that exit holding a lock are noticed by its waiters, which sleep
 * in liveness slices and ask the kernel whether the owner still exists
 * (liveness.c).  A robust lock then passes to the waiter, marked
 * PLK_OWNER_DIED (EOWNERDEAD); any other stays held and is reported.
 * Nothing of this is on the uncontended paths.
 *
 * A robust lock's owner makes it consistent again
 * (proxylock_mutex_consistent), or unlocks it inconsistent, which makes
 * it not recoverable: PLK_TID_NOTRECOVERABLE in the word, every waiter
 * woken to return ENOTRECOVERABLE (M6: no PLK_WAITERS on such a word).
 */
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "chain.h"
#include "donate.h"
#include "invcheck.h"
#include "liveness.h"
#include "lockword.h"
#include "observe.h"
#include "park.h"
#include "probes.h"
#include "registry.h"
#include "robust.h"
#include "stats.h"
#include "waitq.h"

/* Count and trace a dead owner (and print it, so: never under a bucket lock). */
static void report_dead(proxylock_mutex_t *m, pid_t dead, bool robust)
{
	plk_stat_inc(owner_dead);
	PLK_PROBE3(owner_dead, m, dead, robust);
	plk_observe_dead_owner(m, dead, robust);
}

/* --- taking a lock from its dead owner ------------------------------- */

int plk_take_from_dead(struct plk_bucket *b, proxylock_mutex_t *m, uint32_t w, uint32_t self,
                       struct plk_thread *me, pid_t dead)
{
	bool more;

	plk_inv_bucket_held(b, m);
	if (plk_owner_tid_locked(w) != dead)
		return PLK_DEAD_STALE;
	if (!(m->__flags & PLK_ROBUST)) {
		if (me->dead_seen == m)
			return PLK_DEAD_STALE;
		me->dead_seen = m;
		return PLK_DEAD_STALLED;
	}
	if (me && __atomic_load_n(&me->blocked_on, __ATOMIC_RELAXED) == m)
		plk_waitq_dequeue(me);
	more = plk_waitq_first(b, m) != NULL;
	__atomic_store_n(&m->__word, self | PLK_OWNER_DIED | (more ? PLK_WAITERS : 0),
	                 __ATOMIC_RELAXED);
	m->__count = 0;
	if (more)
		plk_chain_update(b, m);  /* we wait on nothing */
	plk_inv_mutex_m1(b, m);
	return PLK_DEAD_TAKEN;
}

int plk_dead_done(proxylock_mutex_t *m, pid_t dead, int what)
{
	plk_chain_flush();
	if (what == PLK_DEAD_STALE)
		return -1;
	report_dead(m, dead, what == PLK_DEAD_TAKEN);
	if (what != PLK_DEAD_TAKEN)
		return -1;
	plk_donate_withdraw_tid(dead, m);
	plk_chain_flush();
	return EOWNERDEAD;
}

int plk_robust_owner_check(proxylock_mutex_t *m, struct plk_thread *me)
{
	uint32_t self = plk_tid();
	pid_t dead = plk_liveness_dead_owner(plk_word(m), self);
	struct plk_bucket *b;
	int what = PLK_DEAD_STALE;

	if (!dead)
		return -1;
	b = plk_waitq_lock(m);
	/* Still asleep on m's queue (a condvar waiter may not be on it yet). */
	if (__atomic_load_n(&me->park, __ATOMIC_ACQUIRE) == PLK_PARK_WAITING &&
	    __atomic_load_n(&me->blocked_on, __ATOMIC_RELAXED) == m)
		what = plk_take_from_dead(b, m, plk_word(m), self, me, dead);
	plk_waitq_unlock(b);
	return plk_dead_done(m, dead, what);
}

int plk_trylock_dead(proxylock_mutex_t *m, uint32_t w, uint32_t self)
{
	pid_t dead = plk_liveness_dead_owner(w, self);
	struct plk_bucket *b;
	int what;

	if (!dead)
		return EBUSY;
	plk_chain_prepare(m);  /* we may become its owner, with no record yet */
	b = plk_waitq_lock(m);
	what = plk_take_from_dead(b, m, plk_word(m), self, NULL, dead);  /* m is robust */
	plk_waitq_unlock(b);
	what = plk_dead_done(m, dead, what);
	return what == EOWNERDEAD ? EOWNERDEAD : EBUSY;
}

/* --- not recoverable ------------------------------------------------- */

/* What plk_mutex_make_unrecoverable's unpark hooks share. */
struct unrecoverable {
	proxylock_mutex_t *m;
	bool marked;  /* the word says NOTRECOVERABLE (from the first batch on) */
};

/* Under @m's bucket, before the first batch is taken off: mark @m. */
static bool unrecoverable_begin(struct plk_bucket *b, void *ctx)
{
	struct unrecoverable *u = ctx;

	(void)b;
	if (!u->marked)
		__atomic_store_n(&u->m->__word, PLK_TID_NOTRECOVERABLE, __ATOMIC_RELEASE);
	u->marked = true;
	return true;
}

/* Every waiter is woken, to be told by its lock call. */
static uint32_t unrecoverable_unparked(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	(void)b;
	(void)t;
	(void)ctx;
	return PLK_PARK_WOKEN;
}

/* Under @m's bucket, after each batch: M6, the word marked shows no
 * WAITERS (the check alone: a build without the checks has no hook). */
static void unrecoverable_finish(struct plk_bucket *b, int n, void *ctx)
{
	(void)n;
	plk_inv_mutex_m1(b, ((struct unrecoverable *)ctx)->m);
}

static const struct plk_unpark_ops unrecoverable_unpark = {
	.begin = unrecoverable_begin,
	.unparked = unrecoverable_unparked,
	.finish = PLK_INVARIANTS_ON ? unrecoverable_finish : NULL,
};

void plk_mutex_make_unrecoverable(proxylock_mutex_t *m)
{
	struct unrecoverable u = { .m = m };
	struct plk_thread *me;

	plk_unpark_all(m, &unrecoverable_unpark, &u);
	if ((me = plk_thread_self())) {
		plk_donate_withdraw(me, m);
		plk_chain_flush();
	}
}

/* --- consistent ------------------------------------------------------ */

int proxylock_mutex_consistent(proxylock_mutex_t *m)
{
	uint32_t w;

	if (!m || !(m->__flags & PLK_ROBUST))
		return EINVAL;
	w = plk_word(m);
	if (!(w & PLK_OWNER_DIED) || !plk_owned_by_self(w, plk_tid()))
		return EINVAL;
	/* Atomic: a waiter may be setting PLK_WAITERS meanwhile. */
	__atomic_fetch_and(&m->__word, ~PLK_OWNER_DIED, __ATOMIC_RELAXED);
	return 0;
}

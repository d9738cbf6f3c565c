/* SPDX-License-Identifier: MIT */
/*
 * mutex.c - the proxylock mutex: lock word, fast paths, slow paths.
 *
 * Lock word (32 bits, the FUTEX_PI convention, so any thread can name
 * the owner from the word alone):
 *
 *   bit 31      PLK_WAITERS: some thread is queued on this lock (or is
 *               about to be); the owner must unlock through the slow path
 *   bit 30      reserved (zero)
 *   bits 0..29  owner TID; 0 = unlocked
 *
 * __count is the RECURSIVE relock depth (0 = held once); only the owner
 * touches it.  __flags holds the type (glibc's kind numbers: NORMAL 0,
 * RECURSIVE 1, ERRORCHECK 2, ADAPTIVE 3) in bits 0..1 and the kinds not
 * lent from bit 24.  The layout matches the head of glibc's
 * pthread_mutex_t (see proxylock.h and preload.c).
 *
 * Fast paths: lock is one CAS 0 -> TID; unlock is one CAS TID -> 0,
 * which fails, sending us to the slow path, exactly when the word is not
 * our bare TID (waiters queued, not ours, or a fork child's pre-fork TID)
 * or __count is non-zero.  Neither touches the registry or allocates.
 *
 * Slow lock: spin a bounded number of times while nobody is queued, then
 * take the lock's bucket (waitq.c), set PLK_WAITERS, queue, lend our
 * context to the owner (donate.c) and sleep on our own park word.
 *
 * Slow unlock: take the bucket, then either
 *   - hand off: the oldest waiter has been queued for PROXYLOCK_HANDOFF_US
 *     (default 500 us) or more: the word gets its TID directly and the
 *     remaining waiters' donation moves to it; or
 *   - release and wake: the word becomes 0 and the oldest waiter is taken
 *     off the queue and woken to compete (barging keeps throughput up;
 *     the handoff bounds how long anyone waits behind bargers).
 * Exactly one waiter is woken per unlock.  Only then do we withdraw what
 * we were lent: restoring first would send a boosted holder back to its
 * busy CPU (or nice 19) to finish the unlock there, delaying the waiter.
 * Unlock returns with our kernel view back at its base.
 *
 * Invariants (under the bucket lock):
 *  M1  queue(L) non-empty  =>  PLK_WAITERS is set in L's word, or L's word
 *      is 0 / held by a barger and a woken waiter (park == WOKEN) is on
 *      its way back to the bucket, where it will take L or set
 *      PLK_WAITERS before sleeping again.  So no wake-up is ever lost.
 *  M2  PLK_WAITERS is cleared only by a thread holding the bucket, when
 *      queue(L) is empty (a timed-out waiter leaving last) or by the
 *      release itself.
 *  M3  A woken waiter re-queues at the head, keeping its first enqueue
 *      time, so the handoff bound counts from when it first waited.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>

#include "config.h"
#include "donate.h"
#include "mutex.h"
#include "probes.h"
#include "stats.h"
#include "waitq.h"

#define PLK_SPIN 100
#define PLK_ATTR_MAGIC 0x504c4b41u  /* "PLKA" */

/* --- attributes ------------------------------------------------------ */

int proxylock_mutexattr_init(proxylock_mutexattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__magic = PLK_ATTR_MAGIC;
	attr->__type = PROXYLOCK_MUTEX_DEFAULT;
	attr->__donate = PROXYLOCK_DONATE_ALL;
	return 0;
}

int proxylock_mutexattr_destroy(proxylock_mutexattr_t *attr)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int proxylock_mutexattr_settype(proxylock_mutexattr_t *attr, int type)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC ||
	    type < PROXYLOCK_MUTEX_NORMAL || type > PROXYLOCK_MUTEX_ADAPTIVE)
		return EINVAL;
	attr->__type = (uint32_t)type;
	return 0;
}

int proxylock_mutexattr_gettype(const proxylock_mutexattr_t *attr, int *type)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || !type)
		return EINVAL;
	*type = (int)attr->__type;
	return 0;
}

int proxylock_mutexattr_setdonate(proxylock_mutexattr_t *attr, unsigned kinds)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || (kinds & ~PROXYLOCK_DONATE_ALL))
		return EINVAL;
	attr->__donate = kinds;
	return 0;
}

int proxylock_mutexattr_getdonate(const proxylock_mutexattr_t *attr, unsigned *kinds)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || !kinds)
		return EINVAL;
	*kinds = attr->__donate;
	return 0;
}

/* --- init, destroy, owner -------------------------------------------- */

int proxylock_mutex_init(proxylock_mutex_t *m, const proxylock_mutexattr_t *attr)
{
	uint32_t type = PROXYLOCK_MUTEX_DEFAULT, donate = PROXYLOCK_DONATE_ALL;

	if (!m)
		return EINVAL;
	if (attr) {
		if (attr->__magic != PLK_ATTR_MAGIC)
			return EINVAL;
		type = attr->__type;
		donate = attr->__donate;
	}
	*m = (proxylock_mutex_t)PROXYLOCK_MUTEX_INITIALIZER;
	m->__flags = type | ((~donate & PROXYLOCK_DONATE_ALL) << PLK_NODONATE_SHIFT);
	plk_tsan_create(m);
	return 0;
}

int proxylock_mutex_destroy(proxylock_mutex_t *m)
{
	if (!m)
		return EINVAL;
	if (plk_word(m) != 0)
		return EBUSY;
	plk_tsan_destroy(m);
	return 0;
}

pid_t proxylock_mutex_owner(const proxylock_mutex_t *m)
{
	return plk_owner_tid(plk_word(m));
}

/* --- helpers --------------------------------------------------------- */

/* A relock by the owner: RECURSIVE counts, ERRORCHECK refuses, NORMAL
 * returns -1 and goes on to wait (POSIX: deadlock). */
static int relock(proxylock_mutex_t *m)
{
	switch (plk_type(m)) {
	case PROXYLOCK_MUTEX_RECURSIVE:
		if (m->__count == UINT32_MAX)
			return EAGAIN;
		m->__count++;
		return 0;
	case PROXYLOCK_MUTEX_ERRORCHECK:
		return EDEADLK;
	default:
		return -1;
	}
}

/*
 * Would waiting on @m close a cycle of owners waiting on each other?
 * Lock-free reads: a real deadlock is stable, so it is always seen; a
 * transient false chain can only make an ERRORCHECK lock report EDEADLK
 * for a cycle that existed at some instant.
 */
static bool would_deadlock(const proxylock_mutex_t *m, uint32_t self)
{
	pid_t tid = plk_owner_tid(plk_word(m));

	for (int depth = 0; depth < PROXYLOCK_CHAIN_MAX && tid; depth++) {
		struct plk_thread *t;
		proxylock_mutex_t *next;

		if ((uint32_t)tid == self)
			return true;
		t = plk_thread_find(tid);
		next = t ? plk_blocked_mutex(t) : NULL;
		if (!next)
			return false;
		tid = plk_owner_tid(plk_word(next));
	}
	return false;
}

/*
 * Out of memory for a thread record: wait without queueing (no donation),
 * yielding.  The owner never sees PLK_WAITERS from us, so M1 is unaffected.
 */
static int lock_yielding(proxylock_mutex_t *m, uint32_t self, clockid_t clock,
                         const struct timespec *abstime)
{
	for (;;) {
		if (plk_cas_word(m, 0, self))
			return 0;
		if (abstime && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
}

/*
 * Take @m, free in the locked bucket @b, as @self.  If others are queued,
 * set PLK_WAITERS and receive their donation (M1).
 */
static bool acquire_locked(struct plk_bucket *b, proxylock_mutex_t *m, uint32_t self)
{
	struct plk_thread *owner;
	proxylock_mutex_t *next;
	bool more = plk_waitq_first(b, m) != NULL;

	if (!plk_cas_word(m, 0, self | (more ? PLK_WAITERS : 0)))
		return false;
	if (more)
		plk_donate_update(b, m, &owner, &next);  /* we wait on nothing */
	return true;
}

/*
 * Our wait on @m timed out.  Leave the queue (unless the lock was handed
 * to us meanwhile), withdraw our donation, and keep M1: if the queue is
 * now empty clear PLK_WAITERS; if we had been woken, pass that on.
 */
static int lock_timedout(proxylock_mutex_t *m, struct plk_thread *me, uint32_t self)
{
	struct plk_thread *owner = NULL;
	proxylock_mutex_t *next = NULL;
	struct plk_bucket *b = plk_waitq_lock(m);
	bool changed = false, more;
	uint32_t w;

	if (__atomic_load_n(&me->park, __ATOMIC_ACQUIRE) == PLK_PARK_HANDED) {
		plk_waitq_unlock(b);
		return 0;
	}
	if (__atomic_load_n(&me->blocked_on, __ATOMIC_RELAXED))
		plk_waitq_dequeue(me);
	if (acquire_locked(b, m, self)) {
		plk_waitq_unlock(b);
		return 0;
	}
	more = plk_waitq_first(b, m) != NULL;
	w = plk_word(m);
	if (more && !(w & PLK_WAITERS) && w != 0 && plk_cas_word(m, w, w | PLK_WAITERS))
		w |= PLK_WAITERS;
	if (w & PLK_WAITERS) {
		changed = plk_donate_update(b, m, &owner, &next);
		if (!more)
			plk_cas_word(m, w, w & ~PLK_WAITERS);
	}
	plk_waitq_unlock(b);
	if (changed && next)
		plk_donate_propagate(owner, next);
	return ETIMEDOUT;
}

/*
 * Queue and sleep until @m is ours.  Called under rcu_read_lock(), which
 * is dropped while parked.  @woken: we were queued on @m before and have
 * been woken (M3: re-queue at the head, keep enq_ns).  Returns 0,
 * ETIMEDOUT or EDEADLK.
 */
static int lock_block(proxylock_mutex_t *m, struct plk_thread *me, uint32_t self,
                      clockid_t clock, const struct timespec *abstime, bool woken)
{
	if (plk_donate_lock_kinds(m))
		plk_donate_waiter_refresh(me);
	for (;;) {
		struct plk_thread *owner = NULL;
		proxylock_mutex_t *next = NULL;
		struct plk_bucket *b = plk_waitq_lock(m);
		bool changed, timedout;
		uint32_t w = plk_word(m), st;

		if (w == 0) {
			bool got = acquire_locked(b, m, self);

			plk_waitq_unlock(b);
			if (got)
				return 0;
			continue;
		}
		if (!(w & PLK_WAITERS)) {
			if (!plk_cas_word(m, w, w | PLK_WAITERS)) {
				plk_waitq_unlock(b);
				continue;
			}
			w |= PLK_WAITERS;
		}
		if (plk_type(m) == PROXYLOCK_MUTEX_ERRORCHECK && would_deadlock(m, self)) {
			if (!plk_waitq_first(b, m))
				plk_cas_word(m, w, w & ~PLK_WAITERS);
			plk_waitq_unlock(b);
			return EDEADLK;
		}
		if (!woken)
			me->enq_ns = plk_now_ns();
		plk_waitq_enqueue(b, me, m, woken);
		changed = plk_donate_update(b, m, &owner, &next);
		plk_waitq_unlock(b);
		if (changed && next)
			plk_donate_propagate(owner, next);

		plk_rcu_unlock();
		plk_stat_inc(sleeps);
		do
			st = plk_waitq_park(me, clock, abstime, &timedout);
		while (st == PLK_PARK_WAITING && !timedout);
		rcu_read_lock();
		if (st == PLK_PARK_HANDED)
			return 0;
		if (st == PLK_PARK_WAITING)
			return lock_timedout(m, me, self);
		woken = true;
	}
}

__attribute__((noinline)) int plk_mutex_lock_slow(proxylock_mutex_t *m, clockid_t clock,
                                                  const struct timespec *abstime)
{
	uint32_t self = plk_tid(), w = plk_word(m);
	struct plk_thread *me;
	uint64_t t0;
	int err;

	if (plk_owned_by_self(w, self) && (err = relock(m)) >= 0)
		return err;
	if (abstime && !plk_timespec_valid(abstime))
		return EINVAL;
	for (int i = 0; i < PLK_SPIN; i++) {
		w = plk_word(m);
		if (w == 0 && plk_cas_word(m, 0, self))
			return 0;
		if (w & PLK_WAITERS)
			break;  /* others are queued: do not barge past them by spinning */
		plk_cpu_relax();
	}
	plk_stat_inc(contended);
	t0 = plk_now_ns();
	PLK_PROBE3(contended_acquire, m, plk_owner_tid(w), self);
	rcu_read_lock();
	me = plk_thread_self();
	err = me ? lock_block(m, me, self, clock, abstime, false)
	         : lock_yielding(m, self, clock, abstime);
	plk_rcu_unlock();
	if (err == 0)
		PLK_PROBE3(acquired, m, self, plk_now_ns() - t0);
	return err;
}

bool plk_mutex_abandon_wait(proxylock_mutex_t *m, struct plk_thread *me)
{
	return lock_timedout(m, me, plk_tid()) == 0;
}

int plk_mutex_lock_requeued(proxylock_mutex_t *m, struct plk_thread *me)
{
	plk_stat_inc(contended);
	return lock_block(m, me, plk_tid(), CLOCK_REALTIME, NULL, true);
}

/* --- lock ------------------------------------------------------------ */

int proxylock_mutex_lock(proxylock_mutex_t *m)
{
	int err;

	plk_tsan_pre_lock(m, plk_lock_may_fail(m));
	if (plk_mutex_lock_fast(m)) {
		plk_tsan_post_lock(m, plk_lock_may_fail(m), 0);
		return 0;
	}
	err = plk_mutex_lock_slow(m, CLOCK_REALTIME, NULL);
	plk_tsan_post_lock(m, plk_lock_may_fail(m), err);
	return err;
}

static int trylock(proxylock_mutex_t *m)
{
	uint32_t self = plk_tid(), w;
	int err;

	do {
		w = plk_word(m);
		if (w == 0 && plk_cas_word(m, 0, self))
			return 0;
	} while (w == 0);
	if (plk_owned_by_self(w, self) && (err = relock(m)) >= 0)
		return err == EDEADLK ? EBUSY : err;
	return EBUSY;
}

int proxylock_mutex_trylock(proxylock_mutex_t *m)
{
	int err;

	plk_tsan_pre_lock(m, true);
	err = trylock(m);
	plk_tsan_post_lock(m, true, err);
	return err;
}

static int clocklock(proxylock_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	if (plk_mutex_lock_fast(m))
		return 0;
	if (!abstime)
		return EINVAL;
	return plk_mutex_lock_slow(m, clock, abstime);
}

int proxylock_mutex_clocklock(proxylock_mutex_t *m, clockid_t clock,
                              const struct timespec *abstime)
{
	int err;

	plk_tsan_pre_lock(m, true);
	err = clocklock(m, clock, abstime);
	plk_tsan_post_lock(m, true, err);
	return err;
}

int proxylock_mutex_timedlock(proxylock_mutex_t *m, const struct timespec *abstime)
{
	return proxylock_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

/* --- unlock ---------------------------------------------------------- */

/*
 * Release @m, which has waiters, as @me: hand off or release, wake
 * exactly one waiter, and only then withdraw what we were lent (I3), so
 * the rest of the unlock never runs at our own, possibly starved, speed.
 */
static void unlock_wake(proxylock_mutex_t *m, struct plk_thread *me)
{
	struct plk_bucket *b = plk_waitq_lock(m);
	struct plk_thread *head = plk_waitq_first(b, m), *owner;
	proxylock_mutex_t *next;
	int handed = 0;

	if (head)
		plk_waitq_dequeue(head);
	if (head && plk_now_ns() - head->enq_ns >= plk_config()->handoff_ns) {
		handed = 1;
		/* The word names head before head can see HANDED: it may
		 * return from its futex wait at any moment and unlock. */
		__atomic_store_n(&m->__word, (uint32_t)head->tid |
		                 (plk_waitq_first(b, m) ? PLK_WAITERS : 0), __ATOMIC_RELEASE);
		plk_donate_update(b, m, &owner, &next);  /* head waits on nothing now */
		plk_waitq_unpark_prepare(head, PLK_PARK_HANDED);
		plk_stat_inc(handoffs);
	} else {
		__atomic_store_n(&m->__word, 0, __ATOMIC_RELEASE);
		if (head)
			plk_waitq_unpark_prepare(head, PLK_PARK_WOKEN);
	}
	plk_waitq_unlock(b);
	PLK_PROBE4(release, m, plk_tid(), head ? head->tid : 0, handed);
	if (head)
		plk_waitq_unpark(head);
	if (me)
		plk_donate_withdraw(me, m);
}

/*
 * Release @m on behalf of its owner (glibc lets any thread unlock a
 * NORMAL mutex; the interposer keeps that): the owner's record, if it
 * has one, gives up what @m's waiters lent it.
 */
static int unlock_foreign(proxylock_mutex_t *m, uint32_t w)
{
	if (w == 0)
		return 0;  /* glibc: unlocking an unlocked NORMAL mutex succeeds */
	if (!(w & PLK_WAITERS))
		return plk_cas_word(m, w, 0) ? 0 : -1;
	rcu_read_lock();
	unlock_wake(m, plk_thread_find(plk_owner_tid(w)));
	plk_rcu_unlock();
	return 0;
}

/* Out of line, so the fast paths stay a few instructions long. */
__attribute__((noinline)) int plk_mutex_unlock_slow(proxylock_mutex_t *m, bool lax)
{
	uint32_t self = plk_tid(), w;

	for (;;) {
		w = plk_word(m);
		if (!plk_owned_by_self(w, self)) {
			int err;

			if (!lax || plk_type(m) == PROXYLOCK_MUTEX_ERRORCHECK ||
			    plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE)
				return EPERM;
			if ((err = unlock_foreign(m, w)) >= 0)
				return err;
			continue;
		}
		if (m->__count > 0) {
			m->__count--;
			return 0;
		}
		if (w & PLK_WAITERS)
			break;
		if (__atomic_compare_exchange_n(&m->__word, &w, 0, 0,
		                                __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
	}
	rcu_read_lock();
	unlock_wake(m, plk_thread_self());
	plk_rcu_unlock();
	return 0;
}

int proxylock_mutex_unlock(proxylock_mutex_t *m)
{
	int err;

	/* TSan: a refused unlock (EPERM) is an answer, not an unlock. */
	if (PLK_TSAN && !plk_owned_by_self(plk_word(m), plk_tid()))
		return EPERM;
	plk_tsan_pre_unlock(m);
	if (plk_mutex_unlock_fast(m)) {
		plk_tsan_post_unlock(m);
		return 0;
	}
	err = plk_mutex_unlock_slow(m, false);
	plk_tsan_post_unlock(m);
	return err;
}

/* SPDX-License-Identifier: MIT */
/*
 * waitq.c - the bucket table and parking (see waitq.h).
 *
 * Invariants, each under the bucket lock:
 *  - t is on a bucket list  <=>  t->blocked_on != NULL, and it is the
 *    bucket of t->blocked_on;
 *  - t->park is PLK_PARK_WAITING while t is queued; it is set to WOKEN
 *    or HANDED exactly when t is taken off by someone else (a waiter
 *    that leaves by itself, on a deadline or a cancellation, leaves it
 *    WAITING);
 *  - t->wait_seq is odd exactly while blocked_on is being changed, and
 *    grows by 2 with every change, so a lock-free reader can tell that
 *    t stayed on the same queue between two reads (plk_waitq_snapshot).
 * Records are type-stable (registry.c), so waking after the bucket lock
 * is dropped never touches unmapped memory; if the woken thread has
 * already gone and its record was recycled, the new owner of the record
 * sees a spurious wake-up, which every park loop tolerates.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "invariant.h"
#include "waitq.h"
#include "wipeonfork.h"

/*
 * Zero-filled, so usable before any constructor has run (the interposer
 * can be entered from other libraries' constructors); an empty list head
 * is set up on first use, under the bucket lock.  Whole pages of their
 * own, marked MADV_WIPEONFORK when that works (anonymous .bss, Linux
 * 4.14+): a fork child then gets them zero-filled, which is the reset it
 * needs, before any of its code runs (no bucket lock is held across a
 * fork: fork.c), and neither side copies them.
 */
static struct plk_bucket buckets[PLK_WAITQ_BUCKETS] __attribute__((aligned(4096)));
static bool buckets_wipe_on_fork;

static struct plk_bucket *bucket_of(const void *lock)
{
	uintptr_t a = (uintptr_t)lock;

	/* Locks are at least 4-byte aligned: drop those bits, then mix. */
	a = (a >> 2) * 0x9E3779B97F4A7C15ull;
	return &buckets[a >> (64 - PLK_WAITQ_SHIFT)];
}

unsigned plk_waitq_index(const void *lock)
{
	return (unsigned)(bucket_of(lock) - buckets);
}

static void bucket_lock(struct plk_bucket *b)
{
	plk_ilock_lock(&b->lock);
	if (__builtin_expect(b->waiters.next == NULL, 0))
		CDS_INIT_LIST_HEAD(&b->waiters);
}

struct plk_bucket *plk_waitq_lock(const void *lock)
{
	struct plk_bucket *b = bucket_of(lock);

	bucket_lock(b);
	return b;
}

void plk_waitq_unlock(struct plk_bucket *b)
{
	plk_assert_held(&b->lock);
	plk_ilock_unlock(&b->lock);
}

void plk_waitq_lock2(const void *a, const void *b, struct plk_bucket **ba,
                     struct plk_bucket **bb)
{
	*ba = bucket_of(a);
	*bb = bucket_of(b);
	if (*ba == *bb) {
		bucket_lock(*ba);
	} else if (*ba < *bb) {
		bucket_lock(*ba);
		bucket_lock(*bb);
	} else {
		bucket_lock(*bb);
		bucket_lock(*ba);
	}
}

/*
 * A waiter's place in line, as the kernel's futex queues order it: RT
 * threads by priority, above every other thread, which all rank alike.
 * From E(T), so a thread lent an RT priority waits as that thread would.
 */
static uint32_t queue_rank(struct plk_thread *t)
{
	uint32_t rank;

	plk_ilock_lock(&t->lock);
	rank = plk_sched_is_rt(t->eff.policy) ? t->eff.rt_prio : 0;
	plk_ilock_unlock(&t->lock);
	return rank;
}

/*
 * Change t->blocked_on under its bucket lock, as a seqlock writer: the
 * count goes odd, then blocked_on changes, then the count goes even.
 * All three, and plk_waitq_snapshot's three loads, are seq_cst, so they
 * fall in one total order: a reader that sees the new blocked_on reads
 * the count after the odd store, and one that sees the even count sees
 * the blocked_on stored before it (arm64: stlr/ldar; no fences, which
 * TSan does not model).  Slow paths only, under a bucket lock.
 */
static void blocked_on_set(struct plk_thread *t, void *lock)
{
	uint32_t s = __atomic_load_n(&t->wait_seq, __ATOMIC_RELAXED);

	__atomic_store_n(&t->wait_seq, s + 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->blocked_on, lock, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->wait_seq, s + 2, __ATOMIC_SEQ_CST);
}

void plk_waitq_enqueue(struct plk_bucket *b, struct plk_thread *t, void *lock,
                       bool at_head)
{
	struct plk_thread *w;
	uint32_t rank = queue_rank(t);

	plk_assert_held(&b->lock);
	PLK_INVARIANT("waitq", plk_waitq_index(lock) == (unsigned)(b - buckets),
	              "a waiter is queued in its lock's bucket");
	PLK_INVARIANT("waitq", !__atomic_load_n(&t->blocked_on, __ATOMIC_RELAXED),
	              "a record is on one queue at a time");
	__atomic_store_n(&t->park, PLK_PARK_WAITING, __ATOMIC_RELAXED);
	/* In front of the first waiter of the same lock that ranks below us
	 * (at_head: that ranks no higher, so a woken mutex waiter past the
	 * handoff bound or a woken rwlock writer goes back to the front of
	 * its rank: M3, RW8), else at the tail: at once if nobody can rank
	 * below us, the common case. */
	plk_waitq_for_each(b, lock, w) {
		if (rank == 0 && !at_head)
			break;
		uint32_t r = queue_rank(w);

		if (r < rank || (at_head && r == rank)) {
			cds_list_add_tail(&t->wnode, &w->wnode);
			blocked_on_set(t, lock);
			return;
		}
	}
	cds_list_add_tail(&t->wnode, &b->waiters);
	blocked_on_set(t, lock);
}

void plk_waitq_dequeue(struct plk_thread *t)
{
	PLK_INV_ONLY(void *on = __atomic_load_n(&t->blocked_on, __ATOMIC_RELAXED);
	             PLK_INVARIANT("waitq", on, "a record taken off a queue is on one");
	             plk_assert_held(&bucket_of(on)->lock));
	cds_list_del_init(&t->wnode);
	blocked_on_set(t, NULL);
}

void *plk_waitq_snapshot(struct plk_thread *t, uint32_t *seq)
{
	uint32_t s0, s1;
	void *p;

	do {
		s0 = __atomic_load_n(&t->wait_seq, __ATOMIC_SEQ_CST);
		p = __atomic_load_n(&t->blocked_on, __ATOMIC_SEQ_CST);
		s1 = __atomic_load_n(&t->wait_seq, __ATOMIC_SEQ_CST);
	} while ((s0 & 1) || s0 != s1);
	*seq = s0;
	return p;
}

struct plk_thread *plk_waitq_first(struct plk_bucket *b, const void *lock)
{
	struct plk_thread *t;

	plk_assert_held(&b->lock);
	plk_waitq_for_each(b, lock, t)
		return t;
	return NULL;
}

uint32_t plk_waitq_park(struct plk_thread *t, clockid_t clock,
                        const struct timespec *abstime, bool *timedout)
{
	int err = plk_futex_wait(&t->park, PLK_PARK_WAITING, clock, abstime);

	/* EINVAL with a deadline: tv_sec < 0 (tv_nsec was checked), a time
	 * long past, which POSIX treats as any past deadline. */
	*timedout = err == ETIMEDOUT || (abstime && err == EINVAL);
	return __atomic_load_n(&t->park, __ATOMIC_ACQUIRE);
}

void plk_waitq_unpark_prepare(struct plk_thread *t, uint32_t state)
{
	PLK_INVARIANT("waitq", !__atomic_load_n(&t->blocked_on, __ATOMIC_RELAXED),
	              "a waiter is off its queue before its park word says WOKEN or HANDED");
	__atomic_store_n(&t->park, state, __ATOMIC_RELEASE);
}

void plk_waitq_unpark(struct plk_thread *t)
{
	plk_futex_wake(&t->park, 1);
}

void plk_waitq_fork_init(void)
{
	buckets_wipe_on_fork = plk_bss_wipe_on_fork(buckets, sizeof(buckets));
}

/* Child: every queued waiter was a parent thread; empty all queues
 * (the kernel did, if the buckets are wiped on fork). */
void plk_waitq_fork_child(void)
{
	if (buckets_wipe_on_fork)
		return;
	for (int i = 0; i < PLK_WAITQ_BUCKETS; i++) {
		buckets[i].lock.word = 0;
		buckets[i].waiters.next = buckets[i].waiters.prev = NULL;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * waitq.h - per-lock wait queues, kept outside the lock.
 *
 * As the kernel's futex hash does, waiters of all locks live in a fixed
 * table of buckets hashed by lock address; each bucket has an internal
 * lock and one list of thread records (RT waiters by priority, then
 * first come, first served: plk_waitq_enqueue), each tagged with the lock it
 * waits for (plk_thread.blocked_on).  A waiter sleeps on its own record's
 * park word, so a wake reaches exactly the thread chosen: no herd.
 *
 * Locks wait and wake through the parking lot built on these (park.h),
 * which owns the order around them.
 */
#ifndef PLK_WAITQ_H
#define PLK_WAITQ_H

#include <stdbool.h>

#include "config.h"
#include "futex.h"
#include "registry.h"

#define PLK_WAITQ_SHIFT 8
#define PLK_WAITQ_BUCKETS (1 << PLK_WAITQ_SHIFT)

struct plk_bucket {
	plk_ilock_t lock;
	struct cds_list_head waiters;  /* plk_thread.wnode, in queue order */
} __attribute__((aligned(64)));

/**
 * plk_waitq_index - the index (0 .. PLK_WAITQ_BUCKETS - 1) of @lock's
 * bucket.  Tables kept beside the buckets (wakers.c) are indexed by it
 * and written under that bucket's lock.
 */
PLK_HIDDEN unsigned plk_waitq_index(const void *lock);

/** plk_waitq_lock - lock and return the bucket of @lock. */
PLK_HIDDEN struct plk_bucket *plk_waitq_lock(const void *lock);

/** plk_waitq_unlock - unlock bucket @b. */
PLK_HIDDEN void plk_waitq_unlock(struct plk_bucket *b);

/**
 * plk_waitq_lock2 - lock the buckets of @a and @b (*@ba, *@bb), in
 * address order, once if they are the same bucket.  Only a condvar's
 * move of its waiters onto a mutex queue holds two (cond.c).  Unlock
 * with plk_waitq_unlock(), *@bb only if it differs from *@ba.
 */
PLK_HIDDEN void plk_waitq_lock2(const void *a, const void *b, struct plk_bucket **ba,
                                struct plk_bucket **bb);

/**
 * plk_waitq_enqueue - queue @t on @lock in @b.  Order: RT waiters by
 * priority first, then everyone else, each rank FIFO; @at_head puts @t
 * first within its rank (a woken waiter past the handoff bound, M3, or
 * a woken writer, RW8).  Takes each
 * waiter's record lock briefly (bucket, then record: I5).
 */
PLK_HIDDEN void plk_waitq_enqueue(struct plk_bucket *b, struct plk_thread *t,
                                  void *lock, bool at_head);

/** plk_waitq_dequeue - take @t off its queue; blocked_on becomes NULL. */
PLK_HIDDEN void plk_waitq_dequeue(struct plk_thread *t);

/**
 * plk_waitq_snapshot - what @t waits on (its blocked_on), read without
 * any lock, and in *@seq the count of its queue changes at that moment:
 * two snapshots with the same *@seq mean @t stayed queued on that lock
 * (or stayed unqueued) all the time between them.  @t may be any record.
 */
PLK_HIDDEN void *plk_waitq_snapshot(struct plk_thread *t, uint32_t *seq);

/** plk_waitq_first - the first waiter on @lock in @b (the head: the
 * enqueue order, M3), or NULL. */
PLK_HIDDEN struct plk_thread *plk_waitq_first(struct plk_bucket *b, const void *lock);

/** plk_waitq_for_each - iterate @t over @lock's waiters in locked @b. */
#define plk_waitq_for_each(b, lock, t)                                 \
	cds_list_for_each_entry(t, &(b)->waiters, wnode)               \
		if (__atomic_load_n(&(t)->blocked_on, __ATOMIC_RELAXED) == (lock))

/**
 * plk_waitq_park - sleep on @t's park word while it is PLK_PARK_WAITING,
 * until @abstime on @clock (NULL: forever).  Returns the park value seen
 * (acquire), or PLK_PARK_WAITING on timeout or spurious wake-up, with
 * *@timedout set when the deadline passed.
 */
PLK_HIDDEN uint32_t plk_waitq_park(struct plk_thread *t, clockid_t clock,
                                   const struct timespec *abstime, bool *timedout);

/**
 * plk_waitq_unpark_prepare - under the bucket lock, with @t already off
 * the queue and the lock word already showing the outcome, set @t's park
 * word to @state (PLK_PARK_WOKEN or _HANDED), with release order: @t may
 * see it and return without sleeping.  The wake itself
 * (plk_waitq_unpark) is issued after the bucket lock is dropped.
 */
PLK_HIDDEN void plk_waitq_unpark_prepare(struct plk_thread *t, uint32_t state);

/**
 * plk_waitq_unpark - wake @t's park word, after the bucket lock is
 * dropped (@t may have returned and exited meanwhile: records are
 * type-stable, so the worst is a spurious wake-up of the record's next
 * owner).
 */
PLK_HIDDEN void plk_waitq_unpark(struct plk_thread *t);

/** plk_waitq_fork_init - at load, before any fork: mark the bucket pages
 * MADV_WIPEONFORK if the kernel allows (then the child hook has nothing
 * to do).  Makes a syscall: call it with no internal lock held. */
PLK_HIDDEN void plk_waitq_fork_init(void);
/** plk_waitq_fork_child - the pthread_atfork child hook. */
PLK_HIDDEN void plk_waitq_fork_child(void);

/**
 * plk_waited_bound - whether @t, queued on a mutex or a rwlock, has
 * waited PROXYLOCK_HANDOFF_US by @now_ns (mutex.c M3, rwlock.c RW8).
 * Signed: @now_ns may be read, before the bucket, earlier than @t's own
 * enqueue read; that is "not yet", not a wrapped "long ago".  The bound
 * is at most INT64_MAX (config.c clamps it), so it stays positive here.
 */
static inline bool plk_waited_bound(const struct plk_thread *t, uint64_t now_ns)
{
	return (int64_t)(now_ns - t->enq_ns) >= (int64_t)plk_config()->handoff_ns;
}

#endif /* PLK_WAITQ_H */

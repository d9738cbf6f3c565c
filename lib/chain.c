/* SPDX-License-Identifier: MIT */
/*
 * chain.c - lending through mutexes and rwlocks (see chain.h).
 *
 * Under @m's bucket lock the queue is folded into one lend and handed to
 * the engine with the owner's TID: the word has PLK_WAITERS set, so the
 * owner cannot release @m without this bucket (I3).  The engine defers
 * the kernel calls; plk_chain_flush makes them once the caller holds no
 * internal lock, and walks chains: if the owner's effective context
 * changed while it waits on another mutex, that mutex's queue now lends
 * something else to its owner.  A chain walk drops one bucket before
 * taking the next and revalidates (the thread still waits on that
 * mutex), as rt_mutex_adjust_prio_chain does; it is bounded by
 * PROXYLOCK_CHAIN_MAX, so it never loops on a cycle.  A thread that
 * waits on a condvar or a semaphore carries the change to that object's
 * wakers (wakers.c).
 */
#include "chain.h"
#include "config.h"
#include "donate.h"
#include "lockword.h"
#include "rdset.h"
#include "rwlockword.h"
#include "schedctl.h"
#include "stats.h"
#include "wakers.h"

/* Kinds lent through a lock whose __flags are @flags. */
static unsigned kinds_of(uint32_t flags)
{
	unsigned off = (flags >> PLK_NODONATE_SHIFT) & PROXYLOCK_DONATE_ALL;

	return off == PROXYLOCK_DONATE_ALL ? 0 : proxylock_donate_kinds() & ~off;
}

unsigned plk_chain_kinds(const proxylock_mutex_t *m)
{
	return kinds_of(m->__flags);
}

unsigned plk_chain_rw_kinds(const proxylock_rwlock_t *rw)
{
	return kinds_of(rw->__flags);
}

void plk_chain_prepare(const proxylock_mutex_t *m)
{
	(void)plk_config();  /* read once, here: not under a lock */
	plk_sched_probe();
	/* The owner seen now is the likely one; any other whose table page
	 * is missing goes without a record this time (chain_truncated). */
	(void)plk_registry_reserve(m ? plk_owner_tid(plk_word(m)) : 0);
}

/* plk_chain_update at chain depth @depth. */
static void update_at(struct plk_bucket *b, proxylock_mutex_t *m, int depth)
{
	unsigned kinds = plk_chain_kinds(m);
	uint32_t w = plk_word(m);
	struct plk_thread *t;
	struct plk_lends lend;

	pid_t owner = plk_owner_tid_locked(w);  /* no syscall under the bucket */

	plk_assert_held(&b->lock);  /* I3: a lend is recorded only under the bucket */
	if (!kinds || !(w & PLK_WAITERS) || owner == 0)
		return;
	plk_lends_init(&lend);
	plk_waitq_for_each(b, m, t)
		plk_donate_fold(&lend, t, kinds);
	plk_donate_set(owner, m, &lend, depth);
}

void plk_chain_update(struct plk_bucket *b, proxylock_mutex_t *m)
{
	update_at(b, m, 1);
}

void plk_chain_rw_prepare(const proxylock_rwlock_t *rw)
{
	pid_t tids[PLK_RW_LEND_MAX];
	uint32_t w = plk_rw_word(rw);
	int n;

	(void)plk_config();
	plk_sched_probe();
	if (w & PLK_RW_WRITER) {
		(void)plk_registry_reserve(plk_owner_tid(w));
		return;
	}
	if (w & PLK_RW_SOLO) {
		(void)plk_registry_reserve(plk_owner_tid(w & PLK_RW_COUNT));
		return;
	}
	/* Lock-free: a hint for the scan under the bucket (rdset.h). */
	n = plk_rdset_readers(rw, tids, PLK_RW_LEND_MAX - 1, false);
	if (n > PLK_RW_LEND_MAX - 1)
		n = PLK_RW_LEND_MAX - 1;
	/* The converted reader (RW9), lent to beside them. */
	if ((tids[n] = plk_owner_tid(plk_rw_solo_field(rw) & PLK_RW_COUNT)) != 0)
		n++;
	(void)plk_registry_reserve_n(tids, n);
	(void)plk_registry_reserve(0);
}

/* plk_chain_rw_update at chain depth @depth. */
static void rw_update_at(struct plk_bucket *b, proxylock_rwlock_t *rw, int depth)
{
	unsigned kinds = plk_chain_rw_kinds(rw);
	uint32_t w = plk_rw_word(rw);
	pid_t tids[PLK_RW_LEND_MAX];
	struct plk_thread *t;
	struct plk_lends lend;
	bool queued = false;
	int n;

	plk_assert_held(&b->lock);  /* I3, RW6: lends are recorded only under the bucket */
	if (!kinds || !(w & PLK_RW_WAITERS) || w == PLK_RW_DESTROYED)
		return;
	plk_lends_init(&lend);
	plk_waitq_for_each(b, plk_rw_key(rw), t) {
		plk_donate_fold(&lend, t, kinds);
		queued = true;
	}
	if (w & (PLK_RW_WRITER | PLK_RW_SOLO)) {
		/* The word names its one holder: the writer, or a solo reader
		 * (which unlocks by the bucket while the bit is set), unless
		 * that reader exited holding it (plk_rw_dead_reader). */
		uint32_t named = w & (w & PLK_RW_WRITER ? PLK_RW_VALUE : PLK_RW_COUNT);
		pid_t owner = plk_owner_tid_locked(named);

		if (owner && ((w & PLK_RW_WRITER) || named != plk_rw_dead_reader(rw)))
			plk_donate_set(owner, rw, &lend, depth);
		return;
	}
	/* Named only with someone queued: an empty queue lends nothing
	 * (its entries go), and a named reader unlocks by the bucket; so
	 * does the converted reader, always (RW9), named by __solo. */
	n = plk_rdset_readers(rw, tids, PLK_RW_LEND_MAX, queued);
	if (n > PLK_RW_LEND_MAX) {
		plk_stat_inc(chain_truncated);
		n = PLK_RW_LEND_MAX;
	}
	for (int i = 0; i < n; i++)
		plk_donate_set(tids[i], rw, &lend, depth);
	uint32_t named = plk_rw_solo_field(rw) & PLK_RW_COUNT;
	pid_t converted = plk_owner_tid_locked(named);

	if (converted && named != plk_rw_dead_reader(rw))
		plk_donate_set(converted, rw, &lend, depth);
}

void plk_chain_rw_update(struct plk_bucket *b, proxylock_rwlock_t *rw)
{
	rw_update_at(b, rw, 1);
}

/* @via's effective context changed and it may wait on @next: what
 * @next's queue lends changes too.  No lock held. */
static void chain_step(struct plk_thread *via, pid_t tid, proxylock_mutex_t *next, int depth)
{
	struct plk_bucket *b;

	if (depth >= PROXYLOCK_CHAIN_MAX) {
		plk_stat_inc(chain_truncated);
		return;
	}
	/* Not plk_chain_prepare(next): until revalidated, next may be freed
	 * memory (its owner took, released and destroyed it), so its word is
	 * not read before the bucket; only a spare record is made sure of. */
	plk_chain_prepare(NULL);
	if ((uintptr_t)next & PLK_COND_TAG)
		(void)plk_wakers_prepare(next);  /* records for its wakers */
	b = plk_waitq_lock(next);
	/* Revalidate: via may have stopped waiting (even exited, and its
	 * record been recycled) since we looked. */
	if (__atomic_load_n(&via->tid, __ATOMIC_RELAXED) == tid &&
	    __atomic_load_n(&via->blocked_on, __ATOMIC_ACQUIRE) == next) {
		uintptr_t tag = (uintptr_t)next & (PLK_COND_TAG | PLK_RW_TAG);

		plk_stat_inc(chain_steps);
		if (tag == PLK_RW_TAG)
			rw_update_at(b, (proxylock_rwlock_t *)((char *)next - PLK_RW_TAG), depth + 1);
		else if (tag)
			plk_wakers_update(b, next, depth + 1);  /* a condvar's or semaphore's */
		else
			update_at(b, next, depth + 1);
	}
	plk_waitq_unlock(b);
}

void plk_chain_flush(void)
{
	struct plk_apply a;

	while (plk_donate_next_deferred(&a)) {
		plk_donate_apply(&a);
		if (a.next)
			chain_step(a.t, a.tid, a.next, a.depth);
	}
}

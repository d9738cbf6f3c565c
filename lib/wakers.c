/* SPDX-License-Identifier: MIT */
/*
 * wakers.c - waits for work lend to the workers (see wakers.h).
 *
 * A thread asleep on a condvar or a semaphore waits for whoever will
 * signal or post it.  The library cannot know who that will be, but it
 * sees who did it before.  The learning rule:
 *   - an object's wakers are the last PLK_WAKERS_MAX distinct threads
 *     that woke its waiters: a signal or broadcast that found waiters
 *     queued, a sem_post while a waiter was registered.  A wake with
 *     nobody waiting teaches nothing, and costs what it cost before;
 *   - a waker that did none of the object's last PLK_WAKERS_AGE wakes is
 *     lent nothing, and its slot is the first a new waker takes; else a
 *     new waker takes the slot of the waker whose last wake is oldest;
 *   - init and destroy forget an object's wakers; a fork child has none;
 *   - while waiters are queued on the object, the fold of their E_L(W)
 *     (below) is lent to each waker not queued on the same object: a
 *     waker waiting beside them (the waiter itself among them) is no
 *     worker, and is lent nothing; a waiter whose context was never
 *     read lends nothing (a new record's zeroes are nice 0: every wait
 *     reads its own first unless verified).  The engine combines the
 *     lend with the rest of what the waker is lent, by lend.c's rule
 *     (only what raises it), so equals make no scheduler call; lends
 *     are keyed by the object's queue key, so chains carry on from a
 *     waker blocked on a lock, condvar or semaphore (chain.c).
 *
 * What a waiter passes on.  E_L(W) is B(W) with what W's locks and
 * explicit lends lend it, each folded of its own waiters' E_L, never of
 * their E: so nothing a thread is lent as a waker passes on, through
 * any chain of locks, to the wakers of a wait of its own (donate.c, "Two
 * lends").  A chain carries a lend across at most one wait for work,
 * then through locks only.  Why: wakers may wait for each other (and
 * for their waiters' locks) without a deadlock, so a lend allowed round
 * such a cycle would keep itself for ever after its source stopped
 * waiting (the reviews of issue 31: through two condvars, then through a
 * mutex and a condvar).  The argument that none can: E_L(T) depends only
 * on B and on the E_L of threads blocked on locks T holds, a wait-for
 * graph of locks, which has a cycle only in a deadlock; E(T) depends on
 * B, on E of lock waiters and on E_L of waiters for work, so a cycle of
 * E would need a cycle of lock waits too.  Outside a deadlock every
 * lend is then a function of who waits now, computed again whenever a
 * waiter's E or E_L changes (held_set reports either; the walk goes
 * on), and nothing is kept by going round.  The price: a lend that has
 * crossed one wait for work stops at the next.
 *
 * Invariants, under the bucket lock of the object's queue key:
 *  K1  The engine holds an entry keyed @key for thread T only if T is
 *      in the table entry's lent[]; every change of @key's queue or of
 *      its wakers lent to (a sem_post's lesson too: plk_wakers_note
 *      says) is followed by an update before the bucket is dropped,
 *      and an update leaves in lent[] exactly the eligible wakers while
 *      someone is queued, nobody otherwise.  So when the last waiter
 *      leaves (signal, broadcast, timeout, cancellation, a failed
 *      release), nothing is lent through @key any more, and the object
 *      may be destroyed and its memory reused at once, as POSIX allows
 *      after a broadcast: keys are addresses, nothing here touches the
 *      object.
 *  K2  An entry with lent[] non-empty or a registered waiter
 *      (awaited != 0) is never reused for another key.
 *
 * The table: a fixed array beside the bucket table, PLK_WAKERS_SLOTS
 * entries per bucket, indexed by the bucket's index and written only
 * under its lock; no allocation, no syscall.  An object whose row is
 * full (every entry lent through or awaited) learns nothing this time
 * (chain_truncated).  key, who[] and awaited are also read without the
 * lock, as hints (plk_wakers_prepare, plk_wakers_awaited): relaxed
 * loads and stores suffice on arm64 too, since a stale hint costs only
 * a spare record or one lesson, and everything is decided again under
 * the bucket, whose lock orders the rest.
 */
#include <string.h>

#include "config.h"
#include "donate.h"
#include "stats.h"
#include "wakers.h"
#include "wipeonfork.h"

#define PLK_WAKERS_SLOTS 4

struct wakers {
	const void *key;               /* the object's queue key; NULL: free */
	pid_t who[PLK_WAKERS_MAX];     /* its wakers; 0: none */
	uint32_t when[PLK_WAKERS_MAX]; /* the value of wakes at who[i]'s last wake */
	uint32_t wakes;                /* wakes noted */
	pid_t lent[PLK_WAKERS_MAX];    /* threads the engine has an entry @key for (K1) */
	uint32_t awaited;              /* waiters registered by plk_wakers_wait_begin */
};

/* Whole pages, for MADV_WIPEONFORK (10 pages with 40-byte entries). */
static struct wakers table[PLK_WAITQ_BUCKETS][PLK_WAKERS_SLOTS] __attribute__((aligned(4096)));
static bool table_wipe_on_fork;
_Static_assert(sizeof(table) % 4096 == 0, "the wakers table is whole pages");

static struct wakers *row_of(const void *key)
{
	return table[plk_waitq_index(key)];
}

static struct wakers *find(const void *key)
{
	struct wakers *row = row_of(key);

	for (int i = 0; i < PLK_WAKERS_SLOTS; i++)
		if (__atomic_load_n(&row[i].key, __ATOMIC_RELAXED) == key)
			return &row[i];
	return NULL;
}

static bool reusable(const struct wakers *e)
{
	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		if (e->lent[i])
			return false;
	return e->awaited == 0;  /* K2 */
}

/* @key's entry, made if need be (a free or reusable one); under the bucket. */
static struct wakers *find_or_make(const void *key)
{
	struct wakers *e = find(key), *row = row_of(key);

	for (int i = 0; !e && i < PLK_WAKERS_SLOTS; i++)
		if (!row[i].key || reusable(&row[i]))
			e = &row[i];
	if (!e) {
		plk_stat_inc(chain_truncated);
		return NULL;
	}
	if (e->key != key) {
		memset(e, 0, sizeof(*e));
		__atomic_store_n(&e->key, key, __ATOMIC_RELAXED);
	}
	return e;
}

/* Did waker slot @i do one of @e's last PLK_WAKERS_AGE wakes? */
static bool fresh(const struct wakers *e, int i)
{
	return e->who[i] && e->wakes - e->when[i] < PLK_WAKERS_AGE;
}

bool plk_wakers_prepare(const void *key)
{
	pid_t tids[PLK_WAKERS_MAX];
	struct wakers *e;
	int n = 0;

	(void)plk_config();  /* read once, here: not under a lock */
	(void)plk_tid();     /* cached here: plk_wakers_note reads it under the bucket */
	plk_sched_probe();
	if (!proxylock_donate_kinds() || !(e = find(key)))
		return false;
	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		if ((tids[n] = __atomic_load_n(&e->who[i], __ATOMIC_RELAXED)) != 0)
			n++;
	if (n)
		(void)plk_registry_reserve_n(tids, n);
	return n > 0;
}

/* The wakers of @e lent to (fresh), one bit each. */
static unsigned fresh_mask(const struct wakers *e)
{
	unsigned mask = 0;

	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		mask |= (unsigned)fresh(e, i) << i;
	return mask;
}

bool plk_wakers_note(struct plk_bucket *b, const void *key)
{
	pid_t me = (pid_t)plk_tid();
	struct wakers *e = find_or_make(key);
	unsigned before;
	int slot = 0;

	plk_assert_held(&b->lock);  /* K1: the wakers change under the bucket */
	if (!e)
		return false;
	before = fresh_mask(e);
	e->wakes++;
	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		if (e->who[i] == me) {
			e->when[i] = e->wakes;
			return fresh_mask(e) != before;  /* another aged out */
		}
	/* A free or forgotten slot, else the one whose last wake is oldest. */
	for (int i = 0; i < PLK_WAKERS_MAX; i++) {
		if (!fresh(e, i)) {
			slot = i;
			break;
		}
		if (e->when[i] - e->when[slot] > (uint32_t)INT32_MAX)
			slot = i;  /* when[i] before when[slot], modulo wrap */
	}
	__atomic_store_n(&e->who[slot], me, __ATOMIC_RELAXED);
	e->when[slot] = e->wakes;
	return true;
}

static bool listed(const pid_t *tids, pid_t tid)
{
	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* The wakers @key's queue lends to, and the fold *@l of its waiters. */
static void eligible(struct plk_bucket *b, const void *key, const struct wakers *e,
                     struct plk_lend *l, pid_t *want)
{
	unsigned kinds = proxylock_donate_kinds();  /* probed: plk_wakers_prepare */
	struct plk_thread *t;

	plk_lend_init(l);
	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		want[i] = fresh(e, i) ? e->who[i] : 0;
	plk_waitq_for_each(b, key, t) {
		pid_t tid = __atomic_load_n(&t->tid, __ATOMIC_RELAXED);

		for (int i = 0; i < PLK_WAKERS_MAX; i++)
			if (want[i] == tid)
				want[i] = 0;  /* waits beside them: no worker */
		if (kinds)
			plk_donate_fold_for_wakers(l, t, kinds);
	}
	if (!l->kinds)
		memset(want, 0, PLK_WAKERS_MAX * sizeof(*want));
}

void plk_wakers_update(struct plk_bucket *b, const void *key, int depth)
{
	struct wakers *e = find(key);
	/* Nothing of a wait for work passes on from its waker to the wakers
	 * of a wait of its own (by_locks stays empty): see the top. */
	struct plk_lends l, none = { .all.kinds = 0, .by_locks.kinds = 0 };
	pid_t want[PLK_WAKERS_MAX];

	plk_assert_held(&b->lock);  /* K1 */
	if (!e)
		return;
	plk_lends_init(&l);
	eligible(b, key, e, &l.all, want);
	/* Withdrawn as a set of nothing: a waker blocked on a lock carries
	 * the withdrawal down its chain, as it carried the lend. */
	for (int i = 0; i < PLK_WAKERS_MAX; i++)
		if (e->lent[i] && !listed(want, e->lent[i]))
			plk_donate_set(e->lent[i], key, &none, depth);
	for (int i = 0; i < PLK_WAKERS_MAX; i++) {
		if (want[i])
			plk_donate_set(want[i], key, &l, depth);
		e->lent[i] = want[i];
		PLK_INVARIANT("K1", !want[i] || plk_waitq_first(b, key),
		              "an update leaves nobody lent to through a key with nobody queued");
	}
}

void plk_wakers_forget(const void *key)
{
	struct plk_bucket *b;
	struct wakers *e;

	if (!find(key))
		return;  /* nothing learned, or a hint gone stale: nothing to forget */
	b = plk_waitq_lock(key);
	e = find(key);
	if (e && reusable(e)) {
		memset(e, 0, sizeof(*e));  /* key NULL: free */
		__atomic_store_n(&e->key, NULL, __ATOMIC_RELAXED);
	}
	plk_waitq_unlock(b);
}

bool plk_wakers_awaited(const void *key)
{
	struct wakers *e = find(key);

	return e && __atomic_load_n(&e->awaited, __ATOMIC_RELAXED) != 0;
}

bool plk_wakers_wait_begin(void *key)
{
	struct plk_thread *me;
	struct plk_bucket *b;
	struct wakers *e;

	/* A handler inside our critical section (the caller refuses it,
	 * with no record made), or queued already (a handler's wait inside
	 * another wait, or a jump out of one): a record is on one queue at
	 * a time; glibc waits alone. */
	if (plk_ilock_busy() || !(me = plk_thread_self()) || plk_blocked_key(me))
		return false;
	/* What it lends is read now: always if it lends (a wait for work is
	 * long), else if it was never verified, so that a waker learned
	 * while it waits is lent what it has (C1). */
	if (plk_wakers_prepare(key)) {
		plk_donate_waiter_refresh(me, 0);
	} else {
		if (proxylock_donate_kinds())
			plk_donate_waiter_refresh(me, PLK_REFRESH_UNVERIFIED);
		(void)plk_registry_reserve(0);
	}
	b = plk_waitq_lock(key);
	if ((e = find_or_make(key))) {
		__atomic_store_n(&e->awaited, e->awaited + 1, __ATOMIC_RELAXED);
		plk_waitq_enqueue(b, me, key, false);
		plk_wakers_update(b, key, 1);
	}
	plk_waitq_unlock(b);
	return e != NULL;
}

void plk_wakers_wait_end(void *key)
{
	struct plk_thread *me = plk_thread_self_cached();
	struct plk_bucket *b;
	struct wakers *e;

	(void)plk_wakers_prepare(key);
	b = plk_waitq_lock(key);
	if (me && __atomic_load_n(&me->blocked_on, __ATOMIC_RELAXED) == key)
		plk_waitq_dequeue(me);
	if ((e = find(key)) && e->awaited)
		__atomic_store_n(&e->awaited, e->awaited - 1, __ATOMIC_RELAXED);
	plk_wakers_update(b, key, 1);
	plk_waitq_unlock(b);
}

void plk_wakers_fork_init(void)
{
	table_wipe_on_fork = plk_bss_wipe_on_fork(table, sizeof(table));
}

/* Child: every waker and waiter was a parent thread. */
void plk_wakers_fork_child(void)
{
	if (!table_wipe_on_fork)
		memset(table, 0, sizeof(table));
}

/* SPDX-License-Identifier: MIT */
/*
 * rwscenario.h - rwlock donation scenarios written once, proven for
 * whichever context a test binary can see the kernel apply: nice and
 * CPUs (test_rwlock.c, on this machine) or uclamp (test/vm/test_uclamp.c,
 * in the guest whose kernel has it).  A struct rw_lending says how to
 * start threads with low contexts and with high ones, and how to tell,
 * from the kernel's view, that a thread runs with the high ones combined
 * (lent to) or exactly at its own base.
 */
#ifndef PLK_TEST_RWSCENARIO_H
#define PLK_TEST_RWSCENARIO_H

#include "actor.h"

struct rw_lending {
	/* Start @a with a low context, the @i-th of them (they may differ
	 * by @i, and are equal for equal @i). */
	void (*start_low)(struct actor *a, int i);
	/* Start @a with a high context, the @i-th (0 or 1): one that is lent. */
	void (*start_high)(struct actor *a, int i);
	/* Does @a run with high contexts 0..@n-1 combined into its own
	 * (design.md's combination rules), in the kernel's view? */
	bool (*lent)(struct actor *a, int n);
	/* Is @a at exactly its base, in the kernel's view? */
	bool (*at_base)(struct actor *a);
};

/* @a's last command, an unlock, returned with @a exactly at its base. */
static inline void rw_restored_at_its_unlock(const struct rw_lending *k, struct actor *a,
                                             const char *who)
{
	ck_assert_msg(kview_equal(&a->after, &a->base), "%s not at its base after its unlock", who);
	ck_assert_msg(k->at_base(a), "%s not at its base after its unlock (kernel's view)", who);
}

/*
 * @n (at most 8) low readers hold the lock; a high writer waits.  Each
 * reader runs with the writer's context; each is back at exactly its
 * base at its own unlock, while the ones still holding stay lent to.
 */
static inline void rw_writer_lends_to_readers(const struct rw_lending *k, int n)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r[8], w;

	ck_assert_int_le(n, 8);
	for (int i = 0; i < n; i++) {
		k->start_low(&r[i], i);
		actor_do(&r[i], ACT_RDLOCK, &rw, 0);
	}
	k->start_high(&w, 0);
	actor_block_on(&w, ACT_WRLOCK, &rw);
	for (int i = 0; i < n; i++)
		ck_assert_msg(eventually(k->lent(&r[i], 1), bound_ms(2000)), "reader %d of %d not lent to", i, n);
	for (int i = 0; i < n; i++) {
		actor_do(&r[i], ACT_RWUNLOCK, &rw, 0);
		rw_restored_at_its_unlock(k, &r[i], "a reader");
		for (int j = i + 1; j < n; j++)
			ck_assert_msg(k->lent(&r[j], 1), "reader %d restored early", j);
	}
	ck_assert_int_eq(actor_wait(&w), 0);
	ck_assert_msg(kview_equal(&w.after, &w.base), "the writer changed by acquiring");
	actor_do(&w, ACT_RWUNLOCK, &rw, 0);
	for (int i = 0; i < n; i++) {
		ck_assert(k->at_base(&r[i]));
		actor_quit(&r[i]);
	}
	actor_quit(&w);
}

/*
 * A low writer holds; high readers 0 and 1 queue behind it.  It runs
 * with reader 0's context, then with both combined, until its unlock,
 * which returns with it exactly at its base; the readers then read
 * with their own contexts.
 */
static inline void rw_readers_lend_to_writer(const struct rw_lending *k)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor h, r1, r2;

	k->start_low(&h, 0);
	k->start_high(&r1, 0);
	k->start_high(&r2, 1);
	actor_do(&h, ACT_WRLOCK, &rw, 0);
	actor_block_on(&r1, ACT_RDLOCK, &rw);
	ck_assert_msg(eventually(k->lent(&h, 1), bound_ms(2000)), "the writer not lent to by one reader");
	actor_block_on(&r2, ACT_RDLOCK, &rw);
	ck_assert_msg(eventually(k->lent(&h, 2), bound_ms(2000)), "the writer not lent to by both readers");
	actor_do(&h, ACT_RWUNLOCK, &rw, 0);
	rw_restored_at_its_unlock(k, &h, "the writer");
	ck_assert_int_eq(actor_wait(&r1), 0);
	ck_assert_int_eq(actor_wait(&r2), 0);
	ck_assert(kview_equal(&r1.after, &r1.base));
	ck_assert(kview_equal(&r2.after, &r2.base));
	actor_do(&r1, ACT_RWUNLOCK, &rw, 0);
	actor_do(&r2, ACT_RWUNLOCK, &rw, 0);
	actor_quit(&h);
	actor_quit(&r1);
	actor_quit(&r2);
}

/*
 * A high writer times out on two low readers: both are back at their
 * base once it has left, before either unlocks.
 */
static inline void rw_writer_times_out_and_withdraws(const struct rw_lending *k)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r1, r2, w;

	k->start_low(&r1, 0);
	k->start_low(&r2, 1);
	k->start_high(&w, 0);
	actor_do(&r1, ACT_RDLOCK, &rw, 0);
	actor_do(&r2, ACT_RDLOCK, &rw, 0);
	w.timeout_ns = (long)time_bound_ns(1000000000);
	actor_block_on(&w, ACT_TIMEDWRLOCK, &rw);
	ck_assert_msg(eventually(k->lent(&r1, 1) && k->lent(&r2, 1), bound_ms(2000)), "a reader not lent to");
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);
	/* Restored once the withdrawal is applied: by the writer itself,
	 * before its call returned, or (token busy) by the holder of it. */
	ck_assert_msg(eventually(k->at_base(&r1) && k->at_base(&r2), bound_ms(1000)), "a reader stayed lent to");
	actor_do(&r1, ACT_RWUNLOCK, &rw, 0);
	rw_restored_at_its_unlock(k, &r1, "reader 1");
	actor_do(&r2, ACT_RWUNLOCK, &rw, 0);
	rw_restored_at_its_unlock(k, &r2, "reader 2");
	ck_assert_uint_eq(rw.__word, 0);
	actor_quit(&r1);
	actor_quit(&r2);
	actor_quit(&w);
}

/*
 * W (high) waits to write L1, read-held by R (low), which waits on
 * mutex M held by H (low), which waits to write L2, read-held by R2
 * (low, as H): R2 runs with W's context; each is back at its base at
 * its own unlock.
 */
static inline void rw_chain_rwlock_mutex_rwlock(const struct rw_lending *k)
{
	proxylock_rwlock_t l1 = PROXYLOCK_RWLOCK_INITIALIZER, l2 = PROXYLOCK_RWLOCK_INITIALIZER;
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor w, r, h, r2;

	k->start_high(&w, 0);
	k->start_low(&r, 0);
	k->start_low(&h, 0);
	k->start_low(&r2, 0);
	actor_do(&r2, ACT_RDLOCK, &l2, 0);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&h, ACT_WRLOCK, &l2);
	actor_do(&r, ACT_RDLOCK, &l1, 0);
	actor_block_on(&r, ACT_LOCK, &m);
	ck_assert(k->at_base(&r2));           /* H's context is R2's: nothing new */
	actor_block_on(&w, ACT_WRLOCK, &l1);
	ck_assert_msg(eventually(k->lent(&r, 1), bound_ms(2000)), "R not lent to");
	ck_assert_msg(eventually(k->lent(&h, 1), bound_ms(2000)), "H not lent to");
	ck_assert_msg(eventually(k->lent(&r2, 1), bound_ms(2000)), "R2 not lent to through the chain");
	actor_do(&r2, ACT_RWUNLOCK, &l2, 0);
	rw_restored_at_its_unlock(k, &r2, "R2");
	ck_assert_int_eq(actor_wait(&h), 0);  /* H writes L2 now */
	ck_assert(k->lent(&h, 1));            /* R still waits on M */
	actor_do(&h, ACT_RWUNLOCK, &l2, 0);
	actor_do(&h, ACT_UNLOCK, &m, 0);
	rw_restored_at_its_unlock(k, &h, "H");
	ck_assert_int_eq(actor_wait(&r), 0);  /* R has M */
	actor_do(&r, ACT_UNLOCK, &m, 0);
	ck_assert(k->lent(&r, 1));            /* still reads L1, W still waits */
	actor_do(&r, ACT_RWUNLOCK, &l1, 0);
	rw_restored_at_its_unlock(k, &r, "R");
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_RWUNLOCK, &l1, 0);
	actor_quit(&w);
	actor_quit(&r);
	actor_quit(&h);
	actor_quit(&r2);
}

#endif /* PLK_TEST_RWSCENARIO_H */

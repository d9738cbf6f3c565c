/* SPDX-License-Identifier: MIT */
/*
 * test_donate_unread.c - a waiter whose own context has never been read
 * (a new record's base is zeroes, which it never lends) still passes on
 * what it is lent: its unread base is left out of the fold, not its
 * lends (donate.c, context_read).  The window is held open by hand with
 * the internal headers: O, lent to by a waiter of a lock it holds (here
 * a lend set on a stand-in key) whose apply, the first read of O's base,
 * is still deferred, blocks on M2, owned by P; the lend must reach P.
 * The third review of issue 31, F2: on the code before, P stayed at its
 * own nice ("P at nice 15, not the nice 0 lent through O").
 */
#include <semaphore.h>
#include <sys/resource.h>

#include "helpers.h"
#include "chain.h"
#include "donate.h"
#include "lend.h"
#include "lockword.h"
#include "registry.h"
#include "waitq.h"

static proxylock_mutex_t m2 = PROXYLOCK_MUTEX_INITIALIZER;
static sem_t p_holds, o_go, p_release;
static pid_t p_tid, o_tid;
static int stand_in;  /* the key of O's other lock, whose waiter lends */

static void *p_main(void *arg)
{
	(void)arg;
	__atomic_store_n(&p_tid, gettid_(), __ATOMIC_RELEASE);
	set_nice_self(15);
	proxylock_mutex_lock(&m2);
	sem_post(&p_holds);
	sem_wait(&p_release);
	proxylock_mutex_unlock(&m2);
	return NULL;
}

static void *o_main(void *arg)
{
	(void)arg;
	set_nice_self(15);
	__atomic_store_n(&o_tid, gettid_(), __ATOMIC_RELEASE);
	sem_wait(&o_go);
	proxylock_mutex_lock(&m2);
	proxylock_mutex_unlock(&m2);
	return NULL;
}

/* Lend @l to @tid under the stand-in key, as a queue's update would;
 * the apply stays in this thread's deferred list until a flush. */
static void lend_by_stand_in(pid_t tid, const struct plk_lends *l)
{
	struct plk_bucket *b;

	plk_chain_prepare(NULL);  /* as a queue's update: the probes run outside the bucket */
	b = plk_waitq_lock(&stand_in);

	plk_donate_set(tid, &stand_in, l, 1);
	plk_waitq_unlock(b);
}

START_TEST(an_unread_waiter_passes_on_what_it_is_lent_to_the_owner_it_waits_on)
{
	struct plk_lends l, none;
	struct plk_sched_ctx me;
	pthread_t p, o;

	require_nice_lending();
	set_nice_self(0);
	sem_init(&p_holds, 0, 0);
	sem_init(&o_go, 0, 0);
	sem_init(&p_release, 0, 0);
	ck_assert_int_eq(pthread_create(&p, NULL, p_main, NULL), 0);
	sem_wait(&p_holds);
	ck_assert_int_eq(pthread_create(&o, NULL, o_main, NULL), 0);
	ck_assert(eventually(__atomic_load_n(&o_tid, __ATOMIC_ACQUIRE) != 0, bound_ms(2000)));
	ck_assert_int_eq(plk_sched_read(0, &me), 0);
	/* O's record made, lent our nice 0; its base not read yet. */
	ck_assert(plk_registry_reserve(o_tid));
	plk_lends_init(&l);
	plk_lend_add(&l.all, &me, PROXYLOCK_DONATE_NICE);
	plk_lend_add(&l.by_locks, &me, PROXYLOCK_DONATE_NICE);
	lend_by_stand_in(o_tid, &l);
	sem_post(&o_go);  /* O queues on m2 before that apply */
	ck_assert(eventually(__atomic_load_n(&m2.__word, __ATOMIC_ACQUIRE) & PLK_WAITERS,
	                     bound_ms(2000)));
	ck_assert(eventually(thread_sleeping(o_tid), bound_ms(2000)));
	plk_chain_flush();  /* the apply: reads O's base, lends to O */
	ck_assert_msg(eventually(nice_of(p_tid) == me.nice, bound_ms(2000)),
	              "P at nice %d, not the nice %d lent through O (O at %d)", nice_of(p_tid),
	              me.nice, nice_of(o_tid));
	plk_lends_init(&none);
	none.all.kinds = none.by_locks.kinds = 0;
	lend_by_stand_in(o_tid, &none);
	plk_chain_flush();
	ck_assert_msg(eventually(nice_of(p_tid) == 15, bound_ms(2000)),
	              "P at nice %d after O's lend ended, not its own 15", nice_of(p_tid));
	sem_post(&p_release);
	pthread_join(p, NULL);
	pthread_join(o, NULL);
}
END_TEST

static Suite *donate_unread_suite(void)
{
	Suite *s = suite_create("donate-unread");
	TCase *tc = tcase_create("donate-unread");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, an_unread_waiter_passes_on_what_it_is_lent_to_the_owner_it_waits_on);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(donate_unread_suite)

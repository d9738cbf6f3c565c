/* SPDX-License-Identifier: MIT */
/*
 * test_lendto.c - the explicit lend (proxylock_lend_begin/end), checked
 * against the kernel's view of the target.  Needs 2 CPUs and the
 * privilege to lower nice (root or CAP_SYS_NICE).
 */
#include <sys/wait.h>

#include "actor.h"

START_TEST(a_lend_raises_the_target_to_the_callers_nice_and_end_restores_it_exactly)
{
	proxylock_lend_t l;
	struct actor t;

	require_nice_lending();
	actor_start(&t, 19, -1);
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_ALL, &l), 0);
	ck_assert_int_eq(nice_of(t.tid), 0);
	ck_assert_int_eq(proxylock_lend_end(&l), 0);
	struct kview now = kview_of(t.tid);

	ck_assert_msg(kview_equal(&now, &t.base), "target at nice %d after the end", now.nice);
	actor_quit(&t);
}
END_TEST

/* Nested lends, ended inner first and outer first: each end takes away
 * exactly its own part. */
START_TEST(nested_lends_are_restored_one_by_one_in_either_order)
{
	proxylock_lend_t outer, inner;
	struct actor t;

	require_nice_lending();
	pin_self(0);
	actor_start(&t, 19, 1);
	for (int order = 0; order < 2; order++) {
		ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &outer), 0);
		ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_AFFINITY, &inner), 0);
		ck_assert(nice_of(t.tid) == 0 && affinity_is(t.tid, 0, -1));
		ck_assert_int_eq(proxylock_lend_end(order ? &outer : &inner), 0);
		if (order)  /* the affinity stays, the nice goes */
			ck_assert(nice_of(t.tid) == 19 && affinity_is(t.tid, 0, -1));
		else
			ck_assert(nice_of(t.tid) == 0 && affinity_is(t.tid, 1, -1));
		ck_assert_int_eq(proxylock_lend_end(order ? &inner : &outer), 0);
		struct kview now = kview_of(t.tid);

		ck_assert_msg(kview_equal(&now, &t.base), "order %d: not at its base", order);
	}
	actor_quit(&t);
}
END_TEST

static int exited_tid(void)
{
	struct actor gone;

	actor_start(&gone, 0, -1);
	actor_quit(&gone);  /* joined: its TID names no thread */
	return gone.tid;
}

static int begin_here(struct actor *a)
{
	struct { proxylock_lend_t *l; pid_t tid; } *arg = a->arg;

	return proxylock_lend_begin(arg->tid, PROXYLOCK_DONATE_NICE, arg->l);
}

static int end_here(struct actor *a)
{
	return proxylock_lend_end(a->arg);
}

START_TEST(bad_input_gets_a_clear_error_and_lends_nothing)
{
	proxylock_lend_t l, l2;
	struct actor t, other;
	pid_t child;

	require_nice_lending();
	actor_start(&t, 19, -1);
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_ALL, NULL), EINVAL);
	ck_assert_int_eq(proxylock_lend_begin(t.tid, 0x10, &l), EINVAL);
	ck_assert_int_eq(proxylock_lend_begin(0, PROXYLOCK_DONATE_ALL, &l), EINVAL);
	ck_assert_int_eq(proxylock_lend_begin(-5, PROXYLOCK_DONATE_ALL, &l), EINVAL);
	ck_assert_int_eq(proxylock_lend_begin(gettid_(), PROXYLOCK_DONATE_ALL, &l), EINVAL);
	ck_assert_int_eq(proxylock_lend_begin(exited_tid(), PROXYLOCK_DONATE_ALL, &l), ESRCH);
	/* A TID of another process: a child that waits to be killed. */
	if ((child = fork()) == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(proxylock_lend_begin(child, PROXYLOCK_DONATE_ALL, &l), ESRCH);
	ck_assert_int_eq(nice_of(child), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(nice_of(t.tid), 19);  /* none of the above lent anything */

	ck_assert_int_eq(proxylock_lend_end(NULL), EINVAL);
	memset(&l2, 0, sizeof(l2));
	ck_assert_int_eq(proxylock_lend_end(&l2), EINVAL);  /* never begun */
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &l), 0);
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &l), EBUSY);
	actor_start(&other, 0, -1);
	struct { proxylock_lend_t *l; pid_t tid; } same = { &l, t.tid };
	actor_call(&other, begin_here, &same);
	ck_assert_int_eq(actor_wait(&other), EBUSY);  /* its address names the lend: begun */
	actor_call(&other, end_here, &l);
	ck_assert_int_eq(actor_wait(&other), EPERM);  /* not its lend */
	ck_assert_int_eq(nice_of(t.tid), 0);
	ck_assert_int_eq(proxylock_lend_end(&l), 0);
	ck_assert_int_eq(proxylock_lend_end(&l), EINVAL);  /* double end */
	ck_assert_int_eq(nice_of(t.tid), 19);
	actor_quit(&other);
	actor_quit(&t);
}
END_TEST

START_TEST(more_than_eight_nested_lends_is_eagain_and_lends_nothing_more)
{
	proxylock_lend_t l[9];
	struct actor t;

	require_nice_lending();
	actor_start(&t, 19, -1);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &l[i]), 0);
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &l[8]), EAGAIN);
	for (int i = 7; i >= 0; i--)
		ck_assert_int_eq(proxylock_lend_end(&l[i]), 0);
	ck_assert_int_eq(nice_of(t.tid), 19);
	actor_quit(&t);
}
END_TEST

/* The target waits on a mutex: the lend goes on to its owner. */
START_TEST(a_lend_to_a_thread_blocked_on_a_mutex_reaches_the_mutex_owner)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor t, owner;
	proxylock_lend_t l;

	require_nice_lending();
	actor_start(&owner, 19, -1);
	actor_start(&t, 19, -1);
	actor_do(&owner, ACT_LOCK, &m, 0);
	actor_block_on(&t, ACT_LOCK, &m);
	ck_assert_int_eq(nice_of(owner.tid), 19);  /* equals lend nothing */
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &l), 0);
	ck_assert_msg(eventually(nice_of(owner.tid) == 0, bound_ms(2000)),
	              "the owner of the mutex the target waits on is at nice %d", nice_of(owner.tid));
	ck_assert_int_eq(proxylock_lend_end(&l), 0);
	ck_assert_msg(eventually(nice_of(owner.tid) == 19, bound_ms(2000)), "owner not restored");
	actor_do(&owner, ACT_UNLOCK, &m, 0);
	ck_assert_int_eq(actor_wait(&t), 0);
	actor_do(&t, ACT_UNLOCK, &m, 0);
	actor_quit(&t);
	actor_quit(&owner);
}
END_TEST

static pid_t exit_target;

static void *lend_and_exit(void *arg)
{
	static proxylock_lend_t l;

	(void)arg;
	ck_assert_int_eq(proxylock_lend_begin(exit_target, PROXYLOCK_DONATE_NICE, &l), 0);
	return NULL;  /* never ended */
}

START_TEST(a_lender_that_exits_without_ending_leaves_its_target_restored)
{
	struct actor t;
	pthread_t th;

	require_nice_lending();
	actor_start(&t, 19, -1);
	exit_target = t.tid;
	ck_assert_int_eq(pthread_create(&th, NULL, lend_and_exit, NULL), 0);
	pthread_join(th, NULL);
	ck_assert_msg(nice_of(t.tid) == 19, "target still at nice %d after its lender exited",
	              nice_of(t.tid));
	actor_quit(&t);
}
END_TEST

/* fork while a lend is begun: the child ends it (nothing to drop there)
 * and the parent's target stays lent until the parent ends it. */
START_TEST(a_fork_child_ends_a_lend_of_its_parent_harmlessly)
{
	proxylock_lend_t l;
	struct actor t;
	int status;
	pid_t child;

	require_nice_lending();
	actor_start(&t, 19, -1);
	ck_assert_int_eq(proxylock_lend_begin(t.tid, PROXYLOCK_DONATE_NICE, &l), 0);
	if ((child = fork()) == 0)
		_exit(proxylock_lend_end(&l) == 0 && proxylock_lend_end(&l) == EINVAL ? 0 : 1);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %#x", status);
	ck_assert_int_eq(nice_of(t.tid), 0);
	ck_assert_int_eq(proxylock_lend_end(&l), 0);
	ck_assert_int_eq(nice_of(t.tid), 19);
	actor_quit(&t);
}
END_TEST

/* --- a child made without fork handlers (_Fork) --------------------- */

#define LENDERS 8  /* x 8 lends each (the most a thread may begin): 64, the table full */

static proxylock_lend_t held[LENDERS][8];
static pid_t lent_to;

/* Run on lender @a (its index in a->arg): begin, or end, its 8 lends. */
static int begin_eight(struct actor *a)
{
	proxylock_lend_t *h = held[(intptr_t)a->arg];

	for (int i = 0; i < 8; i++)
		if (proxylock_lend_begin(lent_to, PROXYLOCK_DONATE_NICE, &h[i]) != 0)
			return i + 1;
	return 0;
}

static int end_eight(struct actor *a)
{
	proxylock_lend_t *h = held[(intptr_t)a->arg];

	for (int i = 0; i < 8; i++)
		if (proxylock_lend_end(&h[i]) != 0)
			return i + 1;
	return 0;
}

static pid_t child_thread_tid;

static void *child_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&child_thread_tid, gettid_(), __ATOMIC_RELEASE);
	pause();
	return NULL;
}

/* In the _Fork child, the survivor of lender 0 (the main thread): a
 * step's number if it fails, 0 if the child has none of its parent's
 * lends begun: it begins as many as a thread may, in a table its parent
 * had full; its parent's lend (its own before the fork) ends once, with
 * nothing to drop; another parent thread's is not its to end. */
static int child_begins_afresh(void)
{
	proxylock_lend_t mine[9];
	pthread_t th;

	if (pthread_create(&th, NULL, child_thread, NULL) != 0)
		return 1;
	while (!__atomic_load_n(&child_thread_tid, __ATOMIC_ACQUIRE))
		usleep(100);
	for (int i = 0; i < 8; i++)
		if (proxylock_lend_begin(child_thread_tid, PROXYLOCK_DONATE_NICE, &mine[i]) != 0)
			return 2;
	if (proxylock_lend_begin(child_thread_tid, PROXYLOCK_DONATE_NICE, &mine[8]) != EAGAIN)
		return 3;  /* the limit a thread has, not the table's */
	for (int i = 0; i < 8; i++)
		if (proxylock_lend_end(&mine[i]) != 0)
			return 4;
	if (proxylock_lend_end(&held[0][0]) != 0 || proxylock_lend_end(&held[0][0]) != EINVAL)
		return 5;
	if (proxylock_lend_end(&held[1][0]) != EPERM)
		return 6;
	return 0;
}

START_TEST(a_child_made_without_fork_handlers_has_none_of_its_parents_lends_begun)
{
	SKIP_UNDER_TSAN("TSan's state in a child no fork handler of its own saw is the parent's");
	struct actor t, lender[LENDERS], late;
	proxylock_lend_t one;
	int status;
	pid_t child;

	require_nice_lending();
	if (!wipe_on_fork_works() || sysconf(_SC_PAGESIZE) != 4096) {
		fprintf(stderr, "SKIP: this kernel does not wipe 4 KiB pages in a child "
		                "(MADV_WIPEONFORK): a child made without fork handlers keeps the "
		                "parent's table of lends\n");
		return;
	}
	actor_start(&t, 19, -1);
	lent_to = t.tid;
	for (intptr_t i = 1; i < LENDERS; i++) {
		actor_start(&lender[i], 0, -1);
		actor_call(&lender[i], begin_eight, (void *)i);
		ck_assert_int_eq(actor_wait(&lender[i]), 0);
	}
	lender[0].arg = (void *)0;  /* the main thread is lender 0 */
	ck_assert_int_eq(begin_eight(&lender[0]), 0);
	actor_start(&late, 0, -1);
	struct { proxylock_lend_t *l; pid_t tid; } one_more = { &one, t.tid };
	actor_call(&late, begin_here, &one_more);
	ck_assert_int_eq(actor_wait(&late), EAGAIN);  /* the table is full */
	child = _Fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(child_begins_afresh());
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "the _Fork child failed at step %d (status %#x; 2: it could not begin a lend, "
	              "its parent's table full)", WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
	ck_assert_int_eq(nice_of(t.tid), 0);  /* the parent's lends stand */
	ck_assert_int_eq(end_eight(&lender[0]), 0);
	for (int i = 1; i < LENDERS; i++) {
		actor_call(&lender[i], end_eight, (void *)(intptr_t)i);
		ck_assert_int_eq(actor_wait(&lender[i]), 0);
		actor_quit(&lender[i]);
	}
	ck_assert_int_eq(nice_of(t.tid), 19);
	actor_quit(&late);
	actor_quit(&t);
}
END_TEST

static Suite *lendto_suite(void)
{
	Suite *s = suite_create("lendto");
	TCase *tc = tcase_create("explicit");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_lend_raises_the_target_to_the_callers_nice_and_end_restores_it_exactly);
	tcase_add_test(tc, nested_lends_are_restored_one_by_one_in_either_order);
	tcase_add_test(tc, bad_input_gets_a_clear_error_and_lends_nothing);
	tcase_add_test(tc, more_than_eight_nested_lends_is_eagain_and_lends_nothing_more);
	tcase_add_test(tc, a_lend_to_a_thread_blocked_on_a_mutex_reaches_the_mutex_owner);
	tcase_add_test(tc, a_lender_that_exits_without_ending_leaves_its_target_restored);
	tcase_add_test(tc, a_fork_child_ends_a_lend_of_its_parent_harmlessly);
	tcase_add_test(tc, a_child_made_without_fork_handlers_has_none_of_its_parents_lends_begun);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(lendto_suite)

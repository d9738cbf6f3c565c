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
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(lendto_suite)

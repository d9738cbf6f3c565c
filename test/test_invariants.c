/* SPDX-License-Identifier: MIT */
/*
 * test_invariants.c - the invariant checks (-Ddebug_invariants=true,
 * lib/invariant.h, lib/invcheck.c) can fail: each is shown a state its
 * invariant forbids, made in a forked child by corrupting a real one
 * (a lock word that lost WAITERS with a waiter queued behind it, a
 * record lent nothing whose E(T) is not its base, an internal lock the
 * caller does not hold), and must abort with SIGABRT and the
 * invariant's name on stderr; the same check on the state uncorrupted
 * passes.  Skipped (77) in a build without the option.  Links the
 * internal archive.
 */
#include <signal.h>

#include "child.h"
#include "invcheck.h"
#include "lockword.h"
#include "mutex.h"
#include "registry.h"
#include "rwlockword.h"
#include "waitq.h"

/* @fn must die of SIGABRT, naming invariant @name. */
static void expect_violation(void (*fn)(void), const char *name)
{
	char line[64];
	struct outcome o;

	run_child(fn, &o);
	snprintf(line, sizeof(line), "proxylock: invariant %s violated: ", name);
	ck_assert_msg(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT,
	              "child was not aborted (status %#x); stderr: %s", o.status, o.err);
	ck_assert_msg(strstr(o.err, line), "no report naming %s; stderr: %s", name, o.err);
	printf("%s", o.err);  /* the report, for the log */
}

/* @fn must exit 0 with nothing reported. */
static void expect_pass(void (*fn)(void))
{
	expect_clean_exit(fn, "invariant");
}

/* --- a waiter queued behind a held lock ------------------------------ */

static proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
static proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
static pthread_t waiter;

static void *lock_m(void *arg)
{
	(void)arg;
	if (proxylock_mutex_lock(&m) == 0)
		proxylock_mutex_unlock(&m);
	return NULL;
}

static void *wrlock_rw(void *arg)
{
	(void)arg;
	if (proxylock_rwlock_wrlock(&rw) == 0)
		proxylock_rwlock_unlock(&rw);
	return NULL;
}

/* Is anyone queued on @key?  (Read under its bucket.) */
static bool someone_queued(const void *key)
{
	struct plk_bucket *b = plk_waitq_lock(key);
	bool q = plk_waitq_first(b, key) != NULL;

	plk_waitq_unlock(b);
	return q;
}

/* Hold @m, and start a thread that queues on it (exit 3: it did not). */
static void mutex_with_a_waiter(void)
{
	if (proxylock_mutex_lock(&m) != 0 || pthread_create(&waiter, NULL, lock_m, NULL) != 0)
		_exit(3);
	for (int i = 0; !someone_queued(&m); i++) {
		if (i == 10000)
			_exit(3);
		usleep(1000);
	}
	if (!(plk_word(&m) & PLK_WAITERS))
		_exit(3);
}

/* Write-hold @rw, and start a writer that queues on it. */
static void rwlock_with_a_waiter(void)
{
	if (proxylock_rwlock_wrlock(&rw) != 0 || pthread_create(&waiter, NULL, wrlock_rw, NULL) != 0)
		_exit(3);
	for (int i = 0; !someone_queued(plk_rw_key(&rw)); i++) {
		if (i == 10000)
			_exit(3);
		usleep(1000);
	}
}

/* The corruption M1 forbids: WAITERS gone from a word with a waiter
 * queued and no woken waiter on its way back. */
static void lose_waiters_bit(void)
{
	__atomic_fetch_and(&m.__word, ~PLK_WAITERS, __ATOMIC_RELAXED);
}

static void check_m1(void)
{
	struct plk_bucket *b = plk_waitq_lock(&m);

	plk_inv_mutex_m1(b, &m);
	plk_waitq_unlock(b);
}

static void m1_of_a_queue_whose_word_lost_waiters(void)
{
	mutex_with_a_waiter();
	lose_waiters_bit();
	check_m1();
}

static void m1_of_a_queue_whose_word_shows_waiters(void)
{
	mutex_with_a_waiter();
	check_m1();
	proxylock_mutex_unlock(&m);
	pthread_join(waiter, NULL);
}

START_TEST(m1_fails_on_a_queued_waiter_behind_a_word_without_waiters)
{
	expect_violation(m1_of_a_queue_whose_word_lost_waiters, "M1");
}
END_TEST

START_TEST(m1_holds_on_a_queued_waiter_behind_a_word_with_waiters)
{
	expect_pass(m1_of_a_queue_whose_word_shows_waiters);
}
END_TEST

/* End to end: the owner's slow unlock of a word that lost WAITERS would
 * release it without the bucket and strand the waiter (a lost wake-up);
 * mutex.c's call there (plk_inv_mutex_m1_bare_release) says so. */
static void slow_unlock_of_a_word_that_lost_waiters(void)
{
	mutex_with_a_waiter();
	lose_waiters_bit();
	plk_mutex_unlock_slow(&m, false);
}

static void slow_unlock_of_a_word_with_waiters(void)
{
	mutex_with_a_waiter();
	plk_mutex_unlock_slow(&m, false);
	pthread_join(waiter, NULL);
}

START_TEST(the_slow_unlock_aborts_on_a_queued_waiter_behind_a_word_without_waiters)
{
	expect_violation(slow_unlock_of_a_word_that_lost_waiters, "M1");
}
END_TEST

START_TEST(the_slow_unlock_passes_the_lock_on_behind_a_word_with_waiters)
{
	expect_pass(slow_unlock_of_a_word_with_waiters);
}
END_TEST

/* M2: the slow unlock, under the bucket, must still see WAITERS. */
static void m2_of_a_release_whose_word_lost_waiters(void)
{
	struct plk_bucket *b;

	mutex_with_a_waiter();
	lose_waiters_bit();
	b = plk_waitq_lock(&m);
	plk_inv_mutex_m2_release(b, &m, false);
	plk_waitq_unlock(b);
}

START_TEST(m2_fails_on_a_slow_release_that_finds_waiters_cleared)
{
	expect_violation(m2_of_a_release_whose_word_lost_waiters, "M2");
}
END_TEST

/* M6: a destroyed word that shows WAITERS. */
static void m6_of_a_destroyed_word_with_waiters(void)
{
	__atomic_store_n(&m.__word, PLK_TID_DESTROYED | PLK_WAITERS, __ATOMIC_RELAXED);
	check_m1();
}

START_TEST(m6_fails_on_a_destroyed_word_with_waiters)
{
	expect_violation(m6_of_a_destroyed_word_with_waiters, "M6");
}
END_TEST

/* M4: a handoff whose word names someone else than the waiter. */
static void m4_of_a_handoff_to_another(void)
{
	struct plk_thread other = { .tid = 1 };

	if (proxylock_mutex_lock(&m) != 0)
		_exit(3);
	plk_inv_mutex_m4(&m, &other);
}

START_TEST(m4_fails_on_a_handoff_whose_word_names_another_thread)
{
	expect_violation(m4_of_a_handoff_to_another, "M4");
}
END_TEST

/* RW1: a queued writer behind an rwlock word without WAITERS. */
static void rw1_of_a_queue_whose_word_lost_waiters(void)
{
	struct plk_bucket *b;

	rwlock_with_a_waiter();
	__atomic_fetch_and(&rw.__word, ~PLK_RW_WAITERS, __ATOMIC_RELAXED);
	b = plk_waitq_lock(&rw);
	plk_inv_rw(b, &rw);
	plk_waitq_unlock(b);
}

static void rw1_of_a_queue_whose_word_shows_waiters(void)
{
	struct plk_bucket *b;

	rwlock_with_a_waiter();
	b = plk_waitq_lock(&rw);
	plk_inv_rw(b, &rw);
	plk_waitq_unlock(b);
	proxylock_rwlock_unlock(&rw);
	pthread_join(waiter, NULL);
}

START_TEST(rw1_fails_on_a_queued_writer_behind_a_word_without_waiters)
{
	expect_violation(rw1_of_a_queue_whose_word_lost_waiters, "RW1");
}
END_TEST

START_TEST(rw1_holds_on_a_queued_writer_behind_a_word_with_waiters)
{
	expect_pass(rw1_of_a_queue_whose_word_shows_waiters);
}
END_TEST

/* I1: a record lent nothing whose E(T) is not B(T). */
static void i1_of_a_record_lent_nothing_above_its_base(void)
{
	struct plk_thread *t = plk_thread_self();

	if (!t)
		_exit(3);
	plk_ilock_lock(&t->lock);
	t->nheld = 0;
	t->eff = t->base;
	t->eff_locks = t->base;
	plk_inv_i1_target(t);  /* as it should be: passes */
	t->eff.nice = t->base.nice - 5;
	plk_inv_i1_target(t);
	plk_ilock_unlock(&t->lock);
}

START_TEST(i1_fails_on_a_record_lent_nothing_whose_effective_context_is_not_its_base)
{
	expect_violation(i1_of_a_record_lent_nothing_above_its_base, "I1");
}
END_TEST

/* held: a bucket the caller does not hold, and a release of one. */
static void held_of_a_bucket_not_taken(void)
{
	struct plk_bucket *b = plk_waitq_lock(&m);

	plk_inv_bucket_held(b, &m);  /* held: passes */
	plk_waitq_unlock(b);
	plk_inv_bucket_held(b, &m);
}

static void release_of_a_bucket_not_taken(void)
{
	struct plk_bucket *b = plk_waitq_lock(&m);

	plk_waitq_unlock(b);
	plk_ilock_enter();  /* as plk_ilock_lock would, so the count stays balanced */
	plk_waitq_unlock(b);
}

START_TEST(held_fails_on_a_bucket_the_caller_does_not_hold)
{
	expect_violation(held_of_a_bucket_not_taken, "held");
}
END_TEST

START_TEST(held_fails_on_releasing_an_internal_lock_the_caller_does_not_hold)
{
	expect_violation(release_of_a_bucket_not_taken, "held");
}
END_TEST

static Suite *invariants_suite(void)
{
	Suite *s = suite_create("invariants");
	TCase *tc = tcase_create("invariants");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, m1_fails_on_a_queued_waiter_behind_a_word_without_waiters);
	tcase_add_test(tc, m1_holds_on_a_queued_waiter_behind_a_word_with_waiters);
	tcase_add_test(tc, the_slow_unlock_aborts_on_a_queued_waiter_behind_a_word_without_waiters);
	tcase_add_test(tc, the_slow_unlock_passes_the_lock_on_behind_a_word_with_waiters);
	tcase_add_test(tc, m2_fails_on_a_slow_release_that_finds_waiters_cleared);
	tcase_add_test(tc, m6_fails_on_a_destroyed_word_with_waiters);
	tcase_add_test(tc, m4_fails_on_a_handoff_whose_word_names_another_thread);
	tcase_add_test(tc, rw1_fails_on_a_queued_writer_behind_a_word_without_waiters);
	tcase_add_test(tc, rw1_holds_on_a_queued_writer_behind_a_word_with_waiters);
	tcase_add_test(tc, i1_fails_on_a_record_lent_nothing_whose_effective_context_is_not_its_base);
	tcase_add_test(tc, held_fails_on_a_bucket_the_caller_does_not_hold);
	tcase_add_test(tc, held_fails_on_releasing_an_internal_lock_the_caller_does_not_hold);
	suite_add_tcase(s, tc);
	return s;
}

#if PLK_INVARIANTS_ON
PLK_TEST_MAIN(invariants_suite)
#else
int main(void)
{
	(void)invariants_suite;
	puts("SKIP: built without -Ddebug_invariants=true");
	return 77;
}
#endif

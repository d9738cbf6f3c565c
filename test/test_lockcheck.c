/* SPDX-License-Identifier: MIT */
/*
 * test_lockcheck.c - the lock check (-Dlockcheck=true, lib/lockcheck.c)
 * can fail: an allocation, a scheduler syscall, a futex wake of a word
 * other than the lock's own each abort with a message naming the call,
 * in a forked child; the same calls with no internal lock held pass, as do the internal
 * lock's own futex calls under another internal lock; PLK_LOCKCHECK=warn
 * logs instead.  Built only with the option on; links the internal
 * archive, and so is linked with the same --wrap list as the library.
 */
#include <signal.h>

#include "child.h"
#include "registry.h"
#include "waitq.h"

/* @fn must die of SIGABRT, having named @what. */
static void expect_abort(void (*fn)(void), const char *what)
{
	struct outcome o;

	run_child(fn, &o);
	ck_assert_msg(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT,
	              "child was not aborted (status %#x); stderr: %s", o.status, o.err);
	ck_assert_msg(strstr(o.err, "proxylock lockcheck: ") && strstr(o.err, what) &&
	              strstr(o.err, "with an internal lock held"),
	              "no report naming %s; stderr: %s", what, o.err);
}

/* @fn must exit 0 with nothing reported. */
static void expect_pass(void (*fn)(void))
{
	expect_clean_exit(fn, "lockcheck");
}

static int some_lock;   /* a lock address, for its wait-queue bucket */
static uint32_t a_word; /* a futex word that is no internal lock's */

/* The calls under test, each on its own. */
static void do_malloc(void)
{
	void *volatile p = malloc(64);  /* volatile: the pair is not optimised out */

	free(p);
}

/* No ck_assert under a lock: check (linked static) allocates in it. */
static void do_getaffinity(void)
{
	cpu_set_t cpus;

	if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
		_exit(3);
}

static void do_wake_other_word(void)
{
	plk_futex_wake(&a_word, 1);
}

/* ... and under a bucket lock or the thread's record lock. */
static void malloc_under_bucket(void)
{
	struct plk_bucket *b = plk_waitq_lock(&some_lock);

	do_malloc();
	plk_waitq_unlock(b);
}

/* The caller's record, created (not adopted: plk_thread_self() would
 * call pthread_setspecific under the lock) and locked. */
static void getaffinity_under_record(void)
{
	struct plk_thread *t = plk_thread_lock_tid((pid_t)plk_tid(), true);

	if (!t)
		_exit(3);
	do_getaffinity();
	plk_thread_unlock(t);
}

static void wake_under_bucket(void)
{
	struct plk_bucket *b = plk_waitq_lock(&some_lock);

	do_wake_other_word();
	plk_waitq_unlock(b);
}

static void all_without_a_lock(void)
{
	struct plk_bucket *b = plk_waitq_lock(&some_lock);

	plk_waitq_unlock(b);
	do_malloc();
	do_getaffinity();
	do_wake_other_word();
}

START_TEST(malloc_under_an_internal_lock_aborts)
{
	expect_abort(malloc_under_bucket, "malloc()");
}
END_TEST

START_TEST(sched_getaffinity_under_an_internal_lock_aborts)
{
	expect_abort(getaffinity_under_record, "sched_getaffinity()");
}
END_TEST

START_TEST(a_futex_wake_of_another_word_under_an_internal_lock_aborts)
{
	expect_abort(wake_under_bucket, "syscall(SYS_futex)");
}
END_TEST

START_TEST(the_same_calls_without_an_internal_lock_pass)
{
	expect_pass(all_without_a_lock);
}
END_TEST

/* The internal lock's own futex calls: main waits for lock b holding
 * lock a; the helper, which took b first, wakes it from b's unlock
 * holding lock c. */
static plk_ilock_t lock_a = PLK_ILOCK_INIT, lock_b = PLK_ILOCK_INIT, lock_c = PLK_ILOCK_INIT;
static int b_taken, b_contended;

static void *hold_b_then_release_under_c(void *arg)
{
	(void)arg;
	plk_ilock_lock(&lock_b);
	__atomic_store_n(&b_taken, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&lock_b.word, __ATOMIC_RELAXED) != 2)
		plk_cpu_relax();    /* until main sleeps on b (no syscall: b is held) */
	plk_ilock_lock(&lock_c);
	b_contended = 1;
	plk_ilock_unlock(&lock_b);  /* futex wake, under c */
	plk_ilock_unlock(&lock_c);
	return NULL;
}

static void nested_contended_ilocks(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, hold_b_then_release_under_c, NULL) != 0)
		_exit(4);
	while (!__atomic_load_n(&b_taken, __ATOMIC_ACQUIRE))
		sched_yield();
	plk_ilock_lock(&lock_a);
	plk_ilock_lock(&lock_b);    /* futex wait, under a */
	plk_ilock_unlock(&lock_b);
	plk_ilock_unlock(&lock_a);
	pthread_join(th, NULL);
	if (!b_contended)
		_exit(3);
}

START_TEST(the_internal_locks_own_futex_calls_pass_under_another_lock)
{
	expect_pass(nested_contended_ilocks);
}
END_TEST

static void malloc_under_bucket_warned(void)
{
	setenv("PLK_LOCKCHECK", "warn", 1);
	malloc_under_bucket();
}

START_TEST(plk_lockcheck_warn_logs_instead_of_aborting)
{
	struct outcome o;

	run_child(malloc_under_bucket_warned, &o);
	ck_assert_msg(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0,
	              "child failed (status %#x); stderr: %s", o.status, o.err);
	ck_assert_msg(strstr(o.err, "warning: malloc()") && strstr(o.err, "stack:\n"),
	              "no warning with a stack: %s", o.err);
}
END_TEST

static Suite *lockcheck_suite(void)
{
	Suite *s = suite_create("lockcheck");
	TCase *tc = tcase_create("lockcheck");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, malloc_under_an_internal_lock_aborts);
	tcase_add_test(tc, sched_getaffinity_under_an_internal_lock_aborts);
	tcase_add_test(tc, a_futex_wake_of_another_word_under_an_internal_lock_aborts);
	tcase_add_test(tc, the_same_calls_without_an_internal_lock_pass);
	tcase_add_test(tc, the_internal_locks_own_futex_calls_pass_under_another_lock);
	tcase_add_test(tc, plk_lockcheck_warn_logs_instead_of_aborting);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(lockcheck_suite)

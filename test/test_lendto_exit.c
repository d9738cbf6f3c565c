/* SPDX-License-Identifier: MIT */
/*
 * test_lendto_exit.c - a lender that exits with a lend begun has its
 * entry dropped before its slot is freed (lendto.c, X1, X2), as
 * proxylock_lend_end does: until the drop, a begin of the same handle by
 * another thread is refused, so the exiting lender's drop never takes
 * the new lend's entry.  The window is held open by hand with the
 * internal headers: the target's record lock, which the drop takes.
 * The third review of issue 31, nit 1: on the code before, the begin
 * was let in ("a begin of the exiting lender's handle before its drop
 * returned 0, not EBUSY").
 */
#include <semaphore.h>

#include "helpers.h"
#include "registry.h"

static proxylock_lend_t handle;  /* one address, begun by both */
static pid_t target, exiting;
static int begin_rc = -1, begin_done;
static sem_t begun, go;

static void *exiting_lender(void *arg)
{
	(void)arg;
	__atomic_store_n(&exiting, gettid_(), __ATOMIC_RELEASE);
	ck_assert_int_eq(proxylock_lend_begin(target, PROXYLOCK_DONATE_NICE, &handle), 0);
	sem_post(&begun);
	sem_wait(&go);
	return NULL;  /* exits with the lend begun: X2 drops it */
}

static void *second_lender(void *arg)
{
	(void)arg;
	__atomic_store_n(&begin_rc, proxylock_lend_begin(target, PROXYLOCK_DONATE_NICE, &handle),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&begin_done, 1, __ATOMIC_RELEASE);  /* after begin_rc */
	return NULL;
}

START_TEST(an_exiting_lenders_handle_cannot_be_begun_again_before_its_entry_is_dropped)
{
	struct plk_thread *t;
	pthread_t e, s;

	target = gettid_();
	ck_assert(plk_thread_self() != NULL);
	sem_init(&begun, 0, 0);
	sem_init(&go, 0, 0);
	ck_assert_int_eq(pthread_create(&e, NULL, exiting_lender, NULL), 0);
	sem_wait(&begun);
	/* The drop in the lender's exit waits for the target's record. */
	t = plk_thread_lock_tid(target, PLK_RECORD_FIND);
	ck_assert(t != NULL);
	sem_post(&go);
	bool parked = eventually(thread_sleeping(exiting), bound_ms(2000));

	ck_assert_int_eq(pthread_create(&s, NULL, second_lender, NULL), 0);
	(void)eventually(__atomic_load_n(&begin_done, __ATOMIC_ACQUIRE), bound_ms(500));
	plk_thread_unlock(t);
	pthread_join(s, NULL);
	pthread_join(e, NULL);
	ck_assert_msg(parked, "the exiting lender never waited for the target's record");
	if (begin_rc == 0)
		proxylock_lend_end(&handle);
	ck_assert_msg(begin_rc == EBUSY, "a begin of the exiting lender's handle before its drop "
	              "returned %d, not EBUSY", begin_rc);
}
END_TEST

static Suite *lendto_exit_suite(void)
{
	Suite *s = suite_create("lendto-exit");
	TCase *tc = tcase_create("lendto-exit");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, an_exiting_lenders_handle_cannot_be_begun_again_before_its_entry_is_dropped);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(lendto_exit_suite)

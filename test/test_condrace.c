/* SPDX-License-Identifier: MIT */
/*
 * test_condrace.c - condvar races held open by hand with the internal
 * headers (issue 35, item 7): a signaller that saw waiters is held at
 * the mutex's bucket lock while the only waiter times out, unlocks,
 * destroys and unmaps the mutex; released, the signaller must not touch
 * the mutex (on the old code it marked PLK_WAITERS in the unmapped page:
 * SIGSEGV).
 */
#include <semaphore.h>
#include <sys/mman.h>

#include "helpers.h"
#include "registry.h"
#include "waitq.h"

#define NCONDS 64

static proxylock_cond_t conds[NCONDS];
static proxylock_cond_t *c;
static proxylock_mutex_t *m;
static void *page;
static long pagesz;
static sem_t w_done;
static int w_rc = -1, s_rc = -1;

static void *cond_key_of(proxylock_cond_t *cv)
{
	return (char *)cv + PLK_COND_TAG;
}

/* The bucket of @lock, found by locking it. */
static struct plk_bucket *bucket_of_lock(const void *lock)
{
	struct plk_bucket *b = plk_waitq_lock(lock);

	plk_waitq_unlock(b);
	return b;
}

/* A mutex in the page and a condvar whose buckets differ, the mutex's
 * first in address order (so a move takes it first). */
static void pick_objects(void)
{
	for (size_t off = 0; off + sizeof(proxylock_mutex_t) <= (size_t)pagesz; off += 64) {
		struct plk_bucket *bm = bucket_of_lock((char *)page + off);

		for (int i = 0; i < NCONDS; i++)
			if (bm < bucket_of_lock(cond_key_of(&conds[i]))) {
				m = (proxylock_mutex_t *)((char *)page + off);
				c = &conds[i];
				return;
			}
	}
	ck_abort_msg("no mutex and condvar with buckets in that order");
}

/* The only waiter: its deadline passes; then, as POSIX allows once no
 * waiter is bound to the mutex, it destroys it and frees its memory. */
static void *waiter(void *arg)
{
	struct timespec t;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += 200 * 1000 * 1000;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	ck_assert_int_eq(proxylock_mutex_lock(m), 0);
	w_rc = proxylock_cond_timedwait(c, m, &t);
	ck_assert_int_eq(proxylock_mutex_unlock(m), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(m), 0);
	ck_assert_int_eq(munmap(page, (size_t)pagesz), 0);
	sem_post(&w_done);
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	s_rc = proxylock_cond_signal(c);
	return NULL;
}

START_TEST(a_signaller_that_saw_a_waiter_never_touches_the_mutex_freed_after_it_timed_out)
{
	pthread_t w, s;
	struct plk_bucket *bm;

	pagesz = sysconf(_SC_PAGESIZE);
	page = mmap(NULL, (size_t)pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(page, MAP_FAILED);
	pick_objects();
	ck_assert_int_eq(proxylock_mutex_init(m, NULL), 0);
	ck_assert_int_eq(proxylock_cond_init(c, CLOCK_REALTIME), 0);
	sem_init(&w_done, 0, 0);

	bm = plk_waitq_lock(m);  /* hold the signaller at the mutex's bucket */
	pthread_create(&w, NULL, waiter, NULL);
	ck_assert_msg(eventually(__atomic_load_n(&c->__waiters, __ATOMIC_ACQUIRE) == 1,
	                         bound_ms(2000)), "the waiter never queued");
	pthread_create(&s, NULL, signaller, NULL);
	/* The signaller saw the waiter and sleeps on the bucket lock (2:
	 * locked with sleepers). */
	ck_assert_msg(eventually(__atomic_load_n(&bm->lock.word, __ATOMIC_RELAXED) == 2,
	                         bound_ms(2000)), "the signaller never reached the mutex's bucket");
	sem_wait(&w_done);  /* timed out, unlocked, destroyed, unmapped */
	ck_assert_int_eq(w_rc, ETIMEDOUT);
	plk_waitq_unlock(bm);
	pthread_join(s, NULL);
	pthread_join(w, NULL);
	ck_assert_int_eq(s_rc, 0);
	ck_assert_uint_eq(__atomic_load_n(&c->__waiters, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(proxylock_cond_destroy(c), 0);
}
END_TEST

static Suite *condrace_suite(void)
{
	Suite *s = suite_create("condrace");
	TCase *tc = tcase_create("races");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_signaller_that_saw_a_waiter_never_touches_the_mutex_freed_after_it_timed_out);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(condrace_suite)

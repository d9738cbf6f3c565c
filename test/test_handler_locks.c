/* SPDX-License-Identifier: MIT */
/*
 * test_handler_locks.c - a signal handler that interrupts its own thread
 * inside one of the library's internal critical sections never waits
 * there (docs/design.md, "Signal handlers inside the library"): what it
 * cannot have at once is refused with EDEADLK, and its thread's record is
 * not made under the interrupted lock.  The critical section is held open
 * by hand with the internal headers (plk_waitq_lock), and the handler is
 * raised inside it with pthread_kill: so the lock check (-Dlockcheck)
 * only warns here (the kill is a syscall under the lock).  The second
 * review of issue 31, S3: on the code before, the first hung for ever;
 * the third, F1: an rwlock's try, and a read lock of a lone reader's
 * hold, waited for the bucket and hung ("HANG: write-held, tryrdlock").
 */
#include <semaphore.h>
#include <signal.h>
#include <string.h>

#include "helpers.h"
#include "lockword.h"
#include "registry.h"
#include "rwlockword.h"
#include "waitq.h"

static proxylock_mutex_t m;
static proxylock_cond_t c = PROXYLOCK_COND_INITIALIZER;
static proxylock_mutex_t cm = PROXYLOCK_MUTEX_INITIALIZER;
static sem_t held, done;
static volatile int handler_rc = -1, unlock_rc = -1, handler_ran;
static volatile uint64_t handler_ns;

static void lock_in_handler(int sig)
{
	uint64_t t0 = mono_ns();

	(void)sig;
	handler_rc = proxylock_mutex_lock(&m);
	handler_ns = mono_ns() - t0;
	if (handler_rc == 0)
		proxylock_mutex_unlock(&m);
	handler_ran = 1;
}

static void cond_wait_in_handler(int sig)
{
	(void)sig;
	proxylock_mutex_lock(&cm);  /* free: the fast path */
	handler_rc = proxylock_cond_wait(&c, &cm);
	unlock_rc = proxylock_mutex_unlock(&cm);
	handler_ran = 1;
}

/* Holds m for @arg ms, then lets go. */
static void *holder(void *arg)
{
	proxylock_mutex_lock(&m);
	sem_post(&held);
	usleep((useconds_t)(uintptr_t)arg * 1000);
	proxylock_mutex_unlock(&m);  /* with a waiter queued: by m's bucket */
	sem_post(&done);
	return NULL;
}

static void *queued(void *arg)
{
	(void)arg;
	proxylock_mutex_lock(&m);
	proxylock_mutex_unlock(&m);
	return NULL;
}

/* The watchdog: a handler that waits hangs its thread for ever; @arg
 * says what it waits for. */
static void *watchdog(void *arg)
{
	sleep(5);
	if (!handler_ran) {
		(void)!write(2, arg, strlen(arg));
		_exit(2);
	}
	return NULL;
}

static void on(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn };

	ck_assert_int_eq(sigaction(sig, &sa, NULL), 0);
}

/* Raise SIGUSR1 on this thread while it holds @key's bucket, as its own
 * code inside the library would (lock_block(m) queueing on m). */
static void raise_holding_bucket_of(const void *key)
{
	struct plk_bucket *b = plk_waitq_lock(key);

	pthread_kill(pthread_self(), SIGUSR1);
	plk_waitq_unlock(b);
}

START_TEST(a_handlers_contended_lock_inside_its_threads_critical_section_is_refused_at_once)
{
	pthread_t h, q, w;

	proxylock_mutex_init(&m, NULL);
	on(SIGUSR1, lock_in_handler);
	sem_init(&held, 0, 0);
	sem_init(&done, 0, 0);
	ck_assert_int_eq(pthread_create(&w, NULL, watchdog,
	                                "HANG: the handler's lock of m waits while its thread "
	                                "holds m's bucket, which the owner's unlock waits for\n"), 0);
	ck_assert_int_eq(pthread_create(&h, NULL, holder, (void *)(uintptr_t)300), 0);
	sem_wait(&held);
	ck_assert_int_eq(pthread_create(&q, NULL, queued, NULL), 0);
	ck_assert(eventually(__atomic_load_n(&m.__word, __ATOMIC_ACQUIRE) & PLK_WAITERS,
	                     bound_ms(2000)));  /* q queued: the unlock takes m's bucket */
	raise_holding_bucket_of(&m);
	ck_assert_msg(handler_ran && handler_rc == EDEADLK,
	              "the handler's contended lock inside its thread's critical section "
	              "returned %d, not EDEADLK", handler_rc);
	ck_assert_msg(handler_ns < 200 * 1000 * 1000ull, "the handler waited %llu ms to be refused",
	              (unsigned long long)(handler_ns / 1000000));
	pthread_join(h, NULL);
	pthread_join(q, NULL);
	pthread_cancel(w);
	pthread_join(w, NULL);
}
END_TEST

/* A thread whose first use of the library is such a handler's lock. */
static void *fresh_thread(void *arg)
{
	(void)arg;
	raise_holding_bucket_of(&c);  /* any bucket */
	return plk_thread_self_cached();
}

START_TEST(a_handler_inside_a_critical_section_makes_no_thread_record_there)
{
	pthread_t h, t;
	void *record;

	proxylock_mutex_init(&m, NULL);
	on(SIGUSR1, lock_in_handler);
	sem_init(&held, 0, 0);
	sem_init(&done, 0, 0);
	ck_assert_int_eq(pthread_create(&h, NULL, holder, (void *)(uintptr_t)300), 0);
	sem_wait(&held);
	ck_assert_int_eq(pthread_create(&t, NULL, fresh_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(t, &record), 0);
	ck_assert_msg(record == NULL, "the handler made its thread's record under the "
	              "interrupted lock (and returned %d)", handler_rc);
	ck_assert_int_eq(handler_rc, EDEADLK);
	pthread_join(h, NULL);
}
END_TEST

START_TEST(a_handlers_condvar_wait_inside_its_threads_critical_section_keeps_the_mutex)
{
	on(SIGUSR1, cond_wait_in_handler);
	raise_holding_bucket_of(&cm);
	ck_assert_msg(handler_ran, "the handler did not return");
	ck_assert_int_eq(handler_rc, EDEADLK);
	ck_assert_msg(unlock_rc == 0, "the mutex was not the handler's after its refused wait "
	              "(unlock: %d)", unlock_rc);
	ck_assert_int_eq(__atomic_load_n(&c.__waiters, __ATOMIC_ACQUIRE), 0);
}
END_TEST

/*
 * An rwlock held by another thread (for writing, or by a lone reader:
 * a solo word, joined only in its bucket), and a handler's call on it
 * while its thread holds that bucket.  Nothing the handler asks for is
 * had without the bucket, so a try answers EBUSY and a lock EDEADLK,
 * at once.  The third review of issue 31, F1.
 */
static proxylock_rwlock_t rw;
static sem_t rw_release;

enum rw_op { TRYRD, TRYWR, RD, WR };

static const struct rw_case {
	bool write_held;
	enum rw_op op;
	int expect;
	const char *name;
} rw_cases[] = {
	{ true, TRYRD, EBUSY, "write-held, tryrdlock" },
	{ false, TRYWR, EBUSY, "lone-reader-held, trywrlock" },
	{ false, TRYRD, EBUSY, "lone-reader-held, tryrdlock" },
	{ false, RD, EDEADLK, "lone-reader-held, rdlock" },
	{ true, RD, EDEADLK, "write-held, rdlock" },
	{ false, WR, EDEADLK, "lone-reader-held, wrlock" },
};
static const struct rw_case *rw_now;

static void rwlock_in_handler(int sig)
{
	uint64_t t0 = mono_ns();

	(void)sig;
	switch (rw_now->op) {
	case TRYRD: handler_rc = proxylock_rwlock_tryrdlock(&rw); break;
	case TRYWR: handler_rc = proxylock_rwlock_trywrlock(&rw); break;
	case RD: handler_rc = proxylock_rwlock_rdlock(&rw); break;
	case WR: handler_rc = proxylock_rwlock_wrlock(&rw); break;
	}
	handler_ns = mono_ns() - t0;
	if (handler_rc == 0)
		proxylock_rwlock_unlock(&rw);
	handler_ran = 1;
}

static void *rw_holder(void *arg)
{
	(void)arg;
	if (rw_now->write_held)
		proxylock_rwlock_wrlock(&rw);
	else
		proxylock_rwlock_rdlock(&rw);
	sem_post(&held);
	sem_wait(&rw_release);
	proxylock_rwlock_unlock(&rw);
	return NULL;
}

START_TEST(a_handlers_rwlock_call_inside_its_threads_critical_section_is_answered_at_once)
{
	static char hang[160];
	pthread_t h, w;

	rw_now = &rw_cases[_i];
	ck_assert_int_eq(proxylock_rwlock_init(&rw, NULL), 0);
	on(SIGUSR1, rwlock_in_handler);
	sem_init(&held, 0, 0);
	sem_init(&rw_release, 0, 0);
	ck_assert_int_eq(pthread_create(&h, NULL, rw_holder, NULL), 0);
	sem_wait(&held);
	if (!rw_now->write_held)
		ck_assert_msg(__atomic_load_n(&rw.__word, __ATOMIC_ACQUIRE) & PLK_RW_SOLO,
		              "the lone reader's hold is not solo: word %#x", rw.__word);
	snprintf(hang, sizeof(hang), "HANG: %s: the handler's call waits for the rwlock's bucket, "
	         "which its own thread holds\n", rw_now->name);
	ck_assert_int_eq(pthread_create(&w, NULL, watchdog, hang), 0);
	raise_holding_bucket_of(&rw);
	ck_assert_msg(handler_ran && handler_rc == rw_now->expect,
	              "%s in a handler inside its thread's critical section returned %d, not %d",
	              rw_now->name, handler_rc, rw_now->expect);
	ck_assert_msg(handler_ns < 200 * 1000 * 1000ull, "%s: the handler waited %llu ms to be answered",
	              rw_now->name, (unsigned long long)(handler_ns / 1000000));
	sem_post(&rw_release);
	pthread_join(h, NULL);
	pthread_cancel(w);
	pthread_join(w, NULL);
	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), 0);  /* nothing left behind */
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
}
END_TEST

static Suite *handler_locks_suite(void)
{
	Suite *s = suite_create("handler-locks");
	TCase *tc = tcase_create("handler-locks");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_handlers_contended_lock_inside_its_threads_critical_section_is_refused_at_once);
	tcase_add_test(tc, a_handler_inside_a_critical_section_makes_no_thread_record_there);
	tcase_add_test(tc, a_handlers_condvar_wait_inside_its_threads_critical_section_keeps_the_mutex);
	tcase_add_loop_test(tc, a_handlers_rwlock_call_inside_its_threads_critical_section_is_answered_at_once,
	                    0, (int)(sizeof(rw_cases) / sizeof(rw_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(handler_locks_suite)

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
 * review of issue 31, S3: on the code before, the first hung for ever.
 */
#include <semaphore.h>
#include <signal.h>

#include "helpers.h"
#include "lockword.h"
#include "registry.h"
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

/* The watchdog: a handler that waits hangs its thread for ever. */
static void *watchdog(void *arg)
{
	(void)arg;
	sleep(5);
	if (!handler_ran) {
		static const char msg[] = "HANG: the handler's lock of m waits while its thread "
		                          "holds m's bucket, which the owner's unlock waits for\n";

		(void)!write(2, msg, sizeof(msg) - 1);
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
	ck_assert_int_eq(pthread_create(&w, NULL, watchdog, NULL), 0);
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

static Suite *handler_locks_suite(void)
{
	Suite *s = suite_create("handler-locks");
	TCase *tc = tcase_create("handler-locks");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_handlers_contended_lock_inside_its_threads_critical_section_is_refused_at_once);
	tcase_add_test(tc, a_handler_inside_a_critical_section_makes_no_thread_record_there);
	tcase_add_test(tc, a_handlers_condvar_wait_inside_its_threads_critical_section_keeps_the_mutex);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(handler_locks_suite)

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
#include <signal.h>
#include <sys/wait.h>
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

	if (under_valgrind()) {
		/* Memcheck runs one thread at a time: the signaller did not
		 * reach the held bucket within the bound there (seen at c8ee435). */
		fprintf(stderr, "SKIP under Valgrind: the race is held open by timing\n");
		return;
	}
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

/* --- signals from handlers, deferred (cond.c; review of a85c5bf) ----- */

static proxylock_mutex_t hm = PROXYLOCK_MUTEX_INITIALIZER;
static proxylock_cond_t hc = PROXYLOCK_COND_INITIALIZER;
/* Set by handlers on one thread, read on others: atomics. */
static int flag_a, flag_b, handled;
static void *hc_key(void) { return cond_key_of(&hc); }

static void signal_b(int sig)
{
	(void)sig;
	__atomic_store_n(&flag_b, 1, __ATOMIC_RELAXED);
	proxylock_cond_signal(&hc);
	__atomic_store_n(&handled, 1, __ATOMIC_RELEASE);
}

/* Waits for @arg's flag for up to 3 s; its result. */
static void *wait_for_flag(void *arg)
{
	int *flag = arg;
	struct timespec t;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 3;
	proxylock_mutex_lock(&hm);
	while (!__atomic_load_n(flag, __ATOMIC_RELAXED) && rc == 0)
		rc = proxylock_cond_timedwait(&hc, &hm, &t);
	proxylock_mutex_unlock(&hm);
	return (void *)(long)rc;
}

/*
 * W waits on hc for B.  T, SCHED_FIFO (ranked ahead of W), enters its own
 * wait on hc for A and is held at hc's bucket; its handler sets B and
 * signals hc, deferred.  When T's critical section ends T is queued ahead
 * of W: the deferred signal must still wake W, the one thread blocked
 * when the handler called (as a deferred signal, T took it and W slept
 * until its deadline).
 */
START_TEST(a_handlers_deferred_signal_wakes_the_thread_blocked_when_it_was_called)
{
	SKIP_UNDER_TSAN("TSan runs signal handlers where it chooses, not inside the section they should interrupt");
	struct sigaction sa = { .sa_handler = signal_b };
	struct sched_param sp = { .sched_priority = 10 };
	struct plk_bucket *b;
	pthread_attr_t at;
	pthread_t w, t;
	void *w_rc;

	require_rt_lending();  /* T below is a SCHED_FIFO thread */
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	pthread_create(&w, NULL, wait_for_flag, &flag_b);
	ck_assert(eventually(__atomic_load_n(&hc.__waiters, __ATOMIC_ACQUIRE) == 1, bound_ms(2000)));
	b = plk_waitq_lock(hc_key());
	pthread_attr_init(&at);
	pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&at, SCHED_FIFO);
	pthread_attr_setschedparam(&at, &sp);
	ck_assert_msg(pthread_create(&t, &at, wait_for_flag, &flag_a) == 0,
	              "no SCHED_FIFO thread (run as root)");
	ck_assert_msg(eventually(__atomic_load_n(&b->lock.word, __ATOMIC_RELAXED) == 2, bound_ms(2000)),
	              "T never reached hc's bucket");
	pthread_kill(t, SIGUSR1);
	ck_assert(eventually(__atomic_load_n(&handled, __ATOMIC_ACQUIRE), bound_ms(2000)));
	plk_waitq_unlock(b);
	pthread_join(w, &w_rc);
	ck_assert_msg(w_rc == NULL, "W, blocked when the handler signalled, was never woken (%ld)",
	              (long)w_rc);
	__atomic_store_n(&flag_a, 1, __ATOMIC_RELAXED);
	proxylock_cond_broadcast(&hc);
	pthread_join(t, NULL);
}
END_TEST

static pid_t forked;

static void fork_in_handler(int sig)
{
	(void)sig;
	forked = fork();
}

/* A signal and a waiter in this process: 0 if the waiter was woken. */
static int signal_a_waiter(void)
{
	pthread_t w;
	void *rc;

	__atomic_store_n(&flag_a, 0, __ATOMIC_RELAXED);
	pthread_create(&w, NULL, wait_for_flag, &flag_a);
	while (__atomic_load_n(&hc.__waiters, __ATOMIC_ACQUIRE) == 0)
		usleep(1000);
	proxylock_mutex_lock(&hm);
	__atomic_store_n(&flag_a, 1, __ATOMIC_RELAXED);
	proxylock_cond_signal(&hc);
	proxylock_mutex_unlock(&hm);
	pthread_join(w, &rc);
	return rc == NULL ? 0 : 1;
}

PLK_HIDDEN extern bool plk_fork_hooks_installed;

/* A handler that interrupted an internal critical section forks: in the
 * child the section still ends, and signals there still wake (the
 * child's count was reset while the section went on releasing: it
 * wrapped, and every later signal there was deferred for ever). */
START_TEST(after_a_fork_from_a_handler_inside_an_internal_lock_the_childs_signals_still_wake)
{
	SKIP_UNDER_TSAN("TSan runs signal handlers where it chooses, not inside the section they should interrupt");
	struct sigaction sa = { .sa_handler = fork_in_handler };
	struct plk_bucket *b;
	int status;

	ck_assert(plk_fork_hooks_installed);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	b = plk_waitq_lock(&forked);  /* a bucket no lock below uses... */
	raise(SIGUSR2);               /* ...held while the handler forks */
	plk_waitq_unlock(b);
	if (forked == 0)
		_exit(signal_a_waiter() != 0 ? 3 : plk_ilock_depth != 0 ? 4 : 0);
	ck_assert_int_eq(waitpid(forked, &status, 0), forked);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "fork child status %#x (exit 3: a signal in the child never woke its waiter, "
	              "4: its count of internal locks is off)", status);
	ck_assert_int_eq(signal_a_waiter(), 0);
}
END_TEST

#define NDEFER 16
static proxylock_cond_t dconds[NDEFER];
static proxylock_mutex_t dm = PROXYLOCK_MUTEX_INITIALIZER;
static int dnext;  /* written by the handler on one thread, read on another */

static void signal_next(int sig)
{
	(void)sig;
	int i = __atomic_load_n(&dnext, __ATOMIC_RELAXED);

	proxylock_cond_signal(&dconds[i]);
	__atomic_store_n(&dnext, i + 1, __ATOMIC_RELEASE);
}

static void *wait_on(void *arg)
{
	proxylock_mutex_lock(&dm);
	proxylock_cond_wait(arg, &dm);
	proxylock_mutex_unlock(&dm);
	return NULL;
}

static int dkey;

static void *take_and_release(void *arg)
{
	(void)arg;
	plk_waitq_unlock(plk_waitq_lock(&dkey));
	return NULL;
}

/* A thread on a small stack whose outermost release runs signals its
 * handlers deferred for 16 condvars with waiters runs them one after
 * the other (each run from inside the last cost about 1 KiB of stack:
 * this one overflowed). */
START_TEST(deferred_signals_run_one_after_another_on_a_small_stack)
{
	SKIP_UNDER_TSAN("TSan runs signal handlers where it chooses, not inside the section they should interrupt");
	struct sigaction sa = { .sa_handler = signal_next };
	pthread_t w[NDEFER], v;
	struct plk_bucket *b;
	pthread_attr_t at;

	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	for (int i = 0; i < NDEFER; i++) {
		proxylock_cond_init(&dconds[i], CLOCK_REALTIME);
		pthread_create(&w[i], NULL, wait_on, &dconds[i]);
		ck_assert(eventually(__atomic_load_n(&dconds[i].__waiters, __ATOMIC_ACQUIRE) == 1,
		                     bound_ms(2000)));
	}
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 16384);
	b = plk_waitq_lock(&dkey);
	pthread_create(&v, &at, take_and_release, NULL);
	ck_assert(eventually(__atomic_load_n(&b->lock.word, __ATOMIC_RELAXED) == 2, bound_ms(2000)));
	for (int i = 0; i < NDEFER; i++) {
		pthread_kill(v, SIGUSR1);
		ck_assert(eventually(__atomic_load_n(&dnext, __ATOMIC_ACQUIRE) > i, bound_ms(2000)));
	}
	plk_waitq_unlock(b);
	pthread_join(v, NULL);
	for (int i = 0; i < NDEFER; i++)
		pthread_join(w[i], NULL);  /* each woken by its deferred signal */
}
END_TEST

static Suite *condrace_suite(void)
{
	Suite *s = suite_create("condrace");
	TCase *tc = tcase_create("races");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_signaller_that_saw_a_waiter_never_touches_the_mutex_freed_after_it_timed_out);
	tcase_add_test(tc, a_handlers_deferred_signal_wakes_the_thread_blocked_when_it_was_called);
	tcase_add_test(tc, deferred_signals_run_one_after_another_on_a_small_stack);
	tcase_add_test(tc, after_a_fork_from_a_handler_inside_an_internal_lock_the_childs_signals_still_wake);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(condrace_suite)

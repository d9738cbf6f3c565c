/* SPDX-License-Identifier: MIT */
/*
 * test_mutex.c - the mutex's semantics: exclusion, types, error codes,
 * timeouts, wake-ups, fairness bound, fork.
 */
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>

#include "helpers.h"

_Static_assert(sizeof(proxylock_mutex_t) <= 40, "must fit in a pthread_mutex_t");

/* --- mutual exclusion ------------------------------------------------ */

#define EXCL_THREADS 8
#define EXCL_ITERS 100000

static proxylock_mutex_t excl_lock = PROXYLOCK_MUTEX_INITIALIZER;
static unsigned long excl_counter;  /* deliberately not atomic */

static void *excl_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < EXCL_ITERS; i++) {
		ck_assert_int_eq(proxylock_mutex_lock(&excl_lock), 0);
		excl_counter++;
		ck_assert_int_eq(proxylock_mutex_unlock(&excl_lock), 0);
	}
	return NULL;
}

START_TEST(mutual_exclusion_8_threads_1e5_acquisitions_each)
{
	pthread_t th[EXCL_THREADS];
	struct proxylock_stats st;

	for (int i = 0; i < EXCL_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, excl_worker, NULL), 0);
	for (int i = 0; i < EXCL_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(excl_counter, (unsigned long)EXCL_THREADS * EXCL_ITERS);
	ck_assert_uint_eq(proxylock_mutex_owner(&excl_lock), 0);
	proxylock_stats_get(&st);
	ck_assert_msg(st.contended > 0, "8 threads never contended: the test proved nothing");
}
END_TEST

START_TEST(zero_bytes_are_an_unlocked_normal_mutex)
{
	proxylock_mutex_t m;
	int type = -1;
	proxylock_mutexattr_t a;

	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(proxylock_mutex_trylock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_owner(&m), 0);
	ck_assert_int_eq(proxylock_mutexattr_init(&a), 0);
	ck_assert_int_eq(proxylock_mutexattr_gettype(&a, &type), 0);
	ck_assert_int_eq(type, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(proxylock_mutexattr_settype(&a, 7), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_setdonate(&a, 0x100), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_destroy(&a), 0);
	ck_assert_int_eq(proxylock_mutex_init(&m, &a), EINVAL);  /* destroyed attr */
}
END_TEST

/* --- a helper thread that holds a lock until told to let go ---------- */

struct holder {
	proxylock_mutex_t *m;
	pthread_t th;
	pid_t tid;
	int locked, release;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	h->tid = gettid_();
	ck_assert_int_eq(proxylock_mutex_lock(h->m), 0);
	__atomic_store_n(&h->locked, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
		usleep(200);
	ck_assert_int_eq(proxylock_mutex_unlock(h->m), 0);
	return NULL;
}

static void holder_start(struct holder *h, proxylock_mutex_t *m)
{
	memset(h, 0, sizeof(*h));
	h->m = m;
	ck_assert_int_eq(pthread_create(&h->th, NULL, holder_main, h), 0);
	while (!__atomic_load_n(&h->locked, __ATOMIC_ACQUIRE))
		usleep(100);
}

static void holder_stop(struct holder *h)
{
	__atomic_store_n(&h->release, 1, __ATOMIC_RELEASE);
	pthread_join(h->th, NULL);
}

/* --- trylock, timedlock, clocklock ----------------------------------- */

START_TEST(trylock_is_ebusy_while_another_thread_holds_it)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct holder h;

	holder_start(&h, &m);
	ck_assert_int_eq(proxylock_mutex_owner(&m), h.tid);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), EPERM);  /* not ours */
	holder_stop(&h);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
}
END_TEST

START_TEST(timedlock_rejects_bad_timespec_only_when_it_would_block)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000L };
	struct timespec neg = { .tv_sec = 0, .tv_nsec = -1 };
	struct holder h;

	/* Free: POSIX says the time is not checked. */
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &bad), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	holder_start(&h, &m);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &bad), EINVAL);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &neg), EINVAL);
	ck_assert_int_eq(proxylock_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), EINVAL);
	holder_stop(&h);
}
END_TEST

START_TEST(timedlock_past_deadline_times_out_promptly)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct timespec past = { .tv_sec = 1, .tv_nsec = 0 };  /* 1970 */
	struct timespec before_1970 = { .tv_sec = -1, .tv_nsec = 0 };  /* the kernel says EINVAL */
	struct holder h;
	uint64_t t0;

	holder_start(&h, &m);
	t0 = mono_ns();
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &past), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_clocklock(&m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &before_1970), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_clocklock(&m, CLOCK_MONOTONIC, &before_1970), ETIMEDOUT);
	ck_assert_msg(mono_ns() - t0 < time_bound_ns(1000000000ull), "past deadline took over a second");
	holder_stop(&h);
	ck_assert_int_eq(proxylock_mutex_owner(&m), 0);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), 0);  /* no waiter left behind */
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
}
END_TEST

START_TEST(timedlock_waits_at_least_until_the_deadline_on_each_clock)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct holder h;

	holder_start(&h, &m);
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = mono_ns();  /* before the deadline's clock read */
		struct timespec dl = abstime_in(clocks[i], 30 * 1000000L);

		ck_assert_int_eq(proxylock_mutex_clocklock(&m, clocks[i], &dl), ETIMEDOUT);
		ck_assert_msg(mono_ns() - t0 >= 29 * 1000000ull, "clock %d: woke before the deadline",
		              (int)clocks[i]);
	}
	ck_assert_int_eq(proxylock_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID,
	                                           &(struct timespec){ 0, 0 }), EINVAL);
	holder_stop(&h);
}
END_TEST

struct timed_waiter {
	proxylock_mutex_t *m;
	int rc;
};

static void *timed_waiter_main(void *arg)
{
	struct timed_waiter *w = arg;
	struct timespec dl = abstime_in(CLOCK_REALTIME, 5 * 1000000000L);

	w->rc = proxylock_mutex_timedlock(w->m, &dl);
	if (w->rc == 0)
		proxylock_mutex_unlock(w->m);
	return NULL;
}

START_TEST(timedlock_succeeds_when_the_holder_lets_go_in_time)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct timed_waiter w = { &m, -1 };
	struct holder h;
	pthread_t th;

	holder_start(&h, &m);
	pthread_create(&th, NULL, timed_waiter_main, &w);
	usleep(20000);
	holder_stop(&h);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.rc, 0);
}
END_TEST

/* --- types ----------------------------------------------------------- */

static void init_typed(proxylock_mutex_t *m, int type)
{
	proxylock_mutexattr_t a;

	ck_assert_int_eq(proxylock_mutexattr_init(&a), 0);
	ck_assert_int_eq(proxylock_mutexattr_settype(&a, type), 0);
	ck_assert_int_eq(proxylock_mutex_init(m, &a), 0);
	proxylock_mutexattr_destroy(&a);
}

START_TEST(errorcheck_relock_is_edeadlk_and_foreign_unlock_eperm)
{
	proxylock_mutex_t m;
	struct holder h;

	init_typed(&m, PROXYLOCK_MUTEX_ERRORCHECK);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), EPERM);  /* unlocked */
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&m), EDEADLK);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EBUSY);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	holder_start(&h, &m);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), EPERM);
	holder_stop(&h);
}
END_TEST

START_TEST(recursive_counts_relocks_and_releases_on_the_last_unlock)
{
	proxylock_mutex_t m;
	struct timed_waiter w;
	pthread_t th;

	init_typed(&m, PROXYLOCK_MUTEX_RECURSIVE);
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());  /* still held once */
	w = (struct timed_waiter){ &m, -1 };
	pthread_create(&th, NULL, timed_waiter_main, &w);
	usleep(20000);
	ck_assert_int_eq(w.rc, -1);  /* still blocked behind our last level */
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.rc, 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), EPERM);
}
END_TEST

START_TEST(destroy_of_a_locked_mutex_is_ebusy)
{
	proxylock_mutex_t m;

	ck_assert_int_eq(proxylock_mutex_init(&m, NULL), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&m), EBUSY);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&m), 0);
}
END_TEST

START_TEST(normal_relock_deadlocks_as_posix_says_until_the_deadline)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct timespec dl = abstime_in(CLOCK_REALTIME, 20 * 1000000L);

	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &dl), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_owner(&m), 0);
}
END_TEST

/* --- wake/wait storm ------------------------------------------------- */

#define STORM_THREADS 16
#define STORM_ITERS 20000

static proxylock_mutex_t storm_lock = PROXYLOCK_MUTEX_INITIALIZER;
static unsigned long storm_counter, storm_timeouts;

static void *storm_worker(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < STORM_ITERS; i++) {
		int rc;

		if ((i + id) % 7 == 0) {
			/* Deadlines short enough to race with wake-ups. */
			struct timespec dl = abstime_in(CLOCK_MONOTONIC, (i % 5) * 20000L);

			rc = proxylock_mutex_clocklock(&storm_lock, CLOCK_MONOTONIC, &dl);
		} else {
			rc = proxylock_mutex_lock(&storm_lock);
		}
		if (rc == ETIMEDOUT) {
			__atomic_fetch_add(&storm_timeouts, 1, __ATOMIC_RELAXED);
			continue;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_msg(proxylock_mutex_owner(&storm_lock) == gettid_(),
		              "lock returned 0 (%s) but the word is %#x, we are %d",
		              (i + id) % 7 == 0 ? "clocklock" : "lock", storm_lock.__word, gettid_());
		storm_counter++;
		if (i % 64 == 0)
			sched_yield();  /* get preempted holding it: more sleepers */
		ck_assert_int_eq(proxylock_mutex_unlock(&storm_lock), 0);
	}
	return NULL;
}

START_TEST(no_lost_wakeup_in_a_wake_wait_storm_with_timeouts)
{
	pthread_t th[STORM_THREADS];
	struct proxylock_stats st;
	unsigned long done;

	for (long i = 0; i < STORM_THREADS; i++)
		pthread_create(&th[i], NULL, storm_worker, (void *)i);
	for (int i = 0; i < STORM_THREADS; i++)
		pthread_join(th[i], NULL);  /* a lost wake-up hangs here: Check's timeout fails it */
	done = storm_counter + storm_timeouts;
	ck_assert_uint_eq(done, (unsigned long)STORM_THREADS * STORM_ITERS);
	ck_assert_uint_eq(proxylock_mutex_owner(&storm_lock), 0);
	ck_assert_uint_eq(storm_lock.__word, 0);  /* no stale waiters bit */
	proxylock_stats_get(&st);
	ck_assert_msg(st.sleeps > 1000, "only %lu sleeps: the storm never slept", (unsigned long)st.sleeps);
}
END_TEST

/* Wait (up to @ms, stretched) until the stats count more sleeps than
 * @before: one more waiter is queued. */
static void await_one_more_sleeper(unsigned long before, int ms)
{
	struct proxylock_stats now;

	ck_assert(eventually((proxylock_stats_get(&now), now.sleeps > before), ms));
}

/* --- fairness bound -------------------------------------------------- */

/* Donation off: with it, the barger would run on the waiter's CPU and
 * the waiter would often win races by itself; this tests the mutex. */
static proxylock_mutex_t fair_lock;
static int fair_stop;
static pid_t fair_barger_tid;

/* How long thread @tid has been runnable but not running (the kernel's
 * schedstat run_delay, ns); 0 where the kernel does not say. */
static uint64_t run_delay_ns(pid_t tid)
{
	char path[64];
	unsigned long long run = 0, delay = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%llu %llu", &run, &delay) != 2)
		delay = 0;
	fclose(f);
	return delay;
}

/* Retakes the lock the instant it lets go: a barger that would starve
 * a sleeping waiter without the handoff bound. */
static void *fair_barger(void *arg)
{
	(void)arg;
	pin_self(0);
	__atomic_store_n(&fair_barger_tid, gettid_(), __ATOMIC_RELAXED);
	while (!__atomic_load_n(&fair_stop, __ATOMIC_RELAXED)) {
		proxylock_mutex_lock(&fair_lock);
		burn_ns(200 * 1000);
		proxylock_mutex_unlock(&fair_lock);
	}
	return NULL;
}

/* @m initialised with donation off. */
static void init_undonated(proxylock_mutex_t *m)
{
	proxylock_mutexattr_t attr;

	proxylock_mutexattr_init(&attr);
	proxylock_mutexattr_setdonate(&attr, PROXYLOCK_DONATE_NONE);
	proxylock_mutex_init(m, &attr);
}

/* Start the barger on fair_lock and let it settle; returns the handoffs
 * counted so far. */
static uint64_t fair_start(pthread_t *barger)
{
	struct proxylock_stats st;

	init_undonated(&fair_lock);
	__atomic_store_n(&fair_stop, 0, __ATOMIC_RELAXED);
	pthread_create(barger, NULL, fair_barger, NULL);
	usleep(10000);
	proxylock_stats_get(&st);
	return st.handoffs;
}

static void fair_end(pthread_t barger)
{
	__atomic_store_n(&fair_stop, 1, __ATOMIC_RELAXED);
	pthread_join(barger, NULL);
}

/*
 * One lock and unlock of fair_lock; returns how long the lock took, less
 * the time this thread and the barger spent runnable but kept off a CPU
 * by other work (schedstat's run_delay): the bound is the lock's, and a
 * loaded machine's queueing is not the lock's.  A waiter passed over by
 * the barger sleeps in the futex, which is not run_delay, so a broken
 * bound still shows in full.
 */
static uint64_t fair_round(void)
{
	pid_t me = gettid_(), barger = __atomic_load_n(&fair_barger_tid, __ATOMIC_RELAXED);
	uint64_t d0 = run_delay_ns(me) + run_delay_ns(barger);
	uint64_t t0 = mono_ns(), dt, off;

	ck_assert_int_eq(proxylock_mutex_lock(&fair_lock), 0);
	dt = mono_ns() - t0;
	off = run_delay_ns(me) + run_delay_ns(barger) - d0;
	ck_assert_int_eq(proxylock_mutex_unlock(&fair_lock), 0);
	return dt > off ? dt - off : 0;
}

START_TEST(a_waiter_behind_a_barger_gets_the_lock_within_the_handoff_bound)
{
	uint64_t worst = 0, handoffs0;
	struct proxylock_stats st;
	pthread_t th;
	int i;

	pin_self(1);
	handoffs0 = fair_start(&th);
	st.handoffs = handoffs0;
	/* At least 50 rounds, and on until the bound has been used at least
	 * once: the waiter sometimes wins a race on its own, and a run where
	 * it always did would prove nothing. */
	for (i = 0; i < 2000 && (i < 50 || st.handoffs == handoffs0); i++) {
		uint64_t dt = fair_round();

		worst = dt > worst ? dt : worst;
		usleep(1000);
		proxylock_stats_get(&st);
	}
	fair_end(th);
	/* Bound: 500 us of queueing plus one 200 us critical section; the
	 * margin is for a shared machine's scheduling noise, and is still
	 * far below the 50 x 200 us a starved waiter would see. */
	ck_assert_msg(worst < time_bound_ns(30 * 1000000ull), "worst wait %llu us",
	              (unsigned long long)worst / 1000);
	ck_assert_msg(st.handoffs > handoffs0, "the bound was never used in %d rounds: nothing was tested", i);
}
END_TEST

#define FAIR_WAITERS 3

static uint64_t fair_worst[FAIR_WAITERS];

/* One of several waiters: 100 rounds of lock, unlock, sleep 1 ms, on
 * CPU 1 while the barger holds CPU 0; records its worst wait. */
static void *fair_waiter(void *arg)
{
	long id = (long)arg;

	pin_self(1);
	for (int i = 0; i < 100; i++) {
		uint64_t dt = fair_round();

		fair_worst[id] = dt > fair_worst[id] ? dt : fair_worst[id];
		usleep(1000);
	}
	return NULL;
}

/*
 * With several waiters a woken waiter that loses goes back to the
 * queue's tail while it is inside the bound, and first once past it
 * (M3): every one of them still gets the lock within the bound.
 */
START_TEST(each_of_three_waiters_behind_a_barger_gets_the_lock_within_the_handoff_bound)
{
	struct proxylock_stats st;
	pthread_t barger, th[FAIR_WAITERS];
	uint64_t handoffs0 = fair_start(&barger);

	for (long i = 0; i < FAIR_WAITERS; i++)
		pthread_create(&th[i], NULL, fair_waiter, (void *)i);
	for (int i = 0; i < FAIR_WAITERS; i++)
		pthread_join(th[i], NULL);
	fair_end(barger);
	proxylock_stats_get(&st);
	/* The bound as above: 30 ms is still far above 500 us plus two
	 * slow unlocks (200 us critical sections) per other waiter (M3). */
	for (int i = 0; i < FAIR_WAITERS; i++)
		ck_assert_msg(fair_worst[i] < time_bound_ns(30 * 1000000ull),
		              "waiter %d: worst wait %llu us", i,
		              (unsigned long long)fair_worst[i] / 1000);
	ck_assert_msg(st.handoffs > handoffs0, "the bound was never used: nothing was tested");
}
END_TEST

/* --- a woken waiter past the bound goes first (M3) ------------------ */

static proxylock_mutex_t back_lock;
static sem_t back_paused;
static pid_t back_tid_a;
static long back_first;  /* who was handed back_lock first: 1 A, 2 B */

/* SIGUSR1 on A while it sleeps queued: A stays in here for 1.5 s, past
 * the 1 s bound, so that a wake while it is here finds it back late. */
static void back_pause(int sig)
{
	struct timespec ts = { 1, 500000000 };

	(void)sig;
	sem_post(&back_paused);
	nanosleep(&ts, NULL);
}

static void *back_waiter(void *arg)
{
	long id = (long)arg, none = 0;

	if (id == 1)
		__atomic_store_n(&back_tid_a, gettid_(), __ATOMIC_RELEASE);
	ck_assert_int_eq(proxylock_mutex_lock(&back_lock), 0);
	__atomic_compare_exchange_n(&back_first, &none, id, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	ck_assert_int_eq(proxylock_mutex_unlock(&back_lock), 0);
	return NULL;
}

/*
 * A queued first, B second, behind us.  While A is held in a signal
 * handler, our unlock wakes it (inside the bound) and we take the lock
 * back at once; A comes back past the bound and must go first, ahead of
 * B (who has waited past it too, but less): our next unlock hands the
 * lock to A.  (Were A to go to the tail, as inside the bound, B would be
 * handed it first.)  No scheduling assumption: A cannot come back before
 * its handler returns.
 */
START_TEST(a_woken_waiter_back_past_the_bound_is_handed_the_lock_first)
{
	struct sigaction sa = { .sa_handler = back_pause };
	struct proxylock_stats st;
	unsigned long handoffs0;
	pthread_t a, b;

	/* Read at first use, which is below (Check forks a process per test). */
	setenv("PROXYLOCK_HANDOFF_US", "1000000", 1);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	sem_init(&back_paused, 0, 0);
	init_undonated(&back_lock);
	ck_assert_int_eq(proxylock_mutex_lock(&back_lock), 0);
	proxylock_stats_get(&st);
	pthread_create(&a, NULL, back_waiter, (void *)1L);
	await_one_more_sleeper(st.sleeps, 5000);
	proxylock_stats_get(&st);
	pthread_create(&b, NULL, back_waiter, (void *)2L);
	await_one_more_sleeper(st.sleeps, 5000);
	ck_assert_int_eq(syscall(SYS_tgkill, getpid(), __atomic_load_n(&back_tid_a, __ATOMIC_ACQUIRE),
	                         SIGUSR1), 0);
	sem_wait(&back_paused);
	proxylock_stats_get(&st);
	handoffs0 = st.handoffs;
	ck_assert_int_eq(proxylock_mutex_unlock(&back_lock), 0);   /* wakes A */
	ck_assert_int_eq(proxylock_mutex_trylock(&back_lock), 0);  /* takes it back */
	proxylock_stats_get(&st);
	ck_assert_msg(st.handoffs == handoffs0, "A was handed the lock, not woken: nothing was tested");
	await_one_more_sleeper(st.sleeps, 5000);  /* A, back from its handler, queued again */
	ck_assert_int_eq(proxylock_mutex_unlock(&back_lock), 0);   /* hands off */
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	proxylock_stats_get(&st);
	ck_assert_msg(st.handoffs > handoffs0, "no handoff: nothing was tested");
	ck_assert_msg(back_first == 1, "waiter %ld was handed the lock first, want A (1)", back_first);
}
END_TEST

/* --- queue order ----------------------------------------------------- */

static proxylock_mutex_t order_lock;
static int order_seen[3], order_n, order_queued;

struct order_waiter {
	int policy, prio, id;
};

static void *order_waiter(void *p)
{
	struct order_waiter *w = p;
	struct sched_param sp = { .sched_priority = w->prio };

	ck_assert_int_eq(pthread_setschedparam(pthread_self(), w->policy, &sp), 0);
	__atomic_fetch_add(&order_queued, 1, __ATOMIC_RELEASE);
	proxylock_mutex_lock(&order_lock);
	order_seen[order_n++] = w->id;
	proxylock_mutex_unlock(&order_lock);
	return NULL;
}

/*
 * As the kernel's futex queues (and glibc's mutexes on them) do: the
 * highest-priority RT waiter gets the lock first, whatever the order in
 * which they queued; non-RT waiters come after every RT one.
 */
START_TEST(rt_waiters_get_the_lock_in_priority_order_before_everyone_else)
{
	struct order_waiter ws[3] = { { SCHED_OTHER, 0, 0 }, { SCHED_FIFO, 10, 1 },
	                              { SCHED_FIFO, 30, 2 } };
	pthread_t th[3];

	require_rt_lending();
	proxylock_mutex_init(&order_lock, NULL);
	proxylock_mutex_lock(&order_lock);
	for (int i = 0; i < 3; i++) {
		struct proxylock_stats before;

		proxylock_stats_get(&before);
		pthread_create(&th[i], NULL, order_waiter, &ws[i]);
		/* queued in this order: wait until this one sleeps */
		await_one_more_sleeper(before.sleeps, 3000);
	}
	proxylock_mutex_unlock(&order_lock);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(order_n, 3);
	ck_assert_msg(order_seen[0] == 2 && order_seen[1] == 1 && order_seen[2] == 0,
	              "order %d %d %d, want 2 1 0", order_seen[0], order_seen[1], order_seen[2]);
}
END_TEST

/* --- fork ------------------------------------------------------------ */

static int fork_stop;
static proxylock_mutex_t fork_busy = PROXYLOCK_MUTEX_INITIALIZER;

static void *fork_churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&fork_stop, __ATOMIC_RELAXED)) {
		proxylock_mutex_lock(&fork_busy);
		proxylock_mutex_unlock(&fork_busy);
	}
	return NULL;
}

static int child_checks(proxylock_mutex_t *held_before_fork)
{
	proxylock_mutex_t fresh = PROXYLOCK_MUTEX_INITIALIZER;
	struct timed_waiter w = { &fresh, -1 };
	pthread_t th;

	if (proxylock_mutex_owner(held_before_fork) != gettid_())
		return 10;  /* the pre-fork lock must be named as ours */
	if (proxylock_mutex_unlock(held_before_fork) != 0)
		return 11;
	if (proxylock_mutex_lock(&fresh) != 0 || proxylock_mutex_owner(&fresh) != gettid_())
		return 12;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	/* Sanitizer runtimes cannot start threads after a multithreaded
	 * fork: TSan says "dup thread with used id", gcc 12's ASan may hand
	 * the child its allocator lock held.  The rest is checked without. */
	(void)w;
	(void)th;
	return proxylock_mutex_unlock(&fresh) == 0 ? 0 : 13;
#endif
	/* A new thread in the child contends and is woken. */
	pthread_create(&th, NULL, timed_waiter_main, &w);
	usleep(20000);
	if (proxylock_mutex_unlock(&fresh) != 0)
		return 13;
	pthread_join(th, NULL);
	if (w.rc != 0)
		return 14;
	return 0;
}

START_TEST(fork_child_of_a_multithreaded_process_can_lock_with_its_new_tid)
{
	proxylock_mutex_t held = PROXYLOCK_MUTEX_INITIALIZER;
	pthread_t th[3];
	int status;

	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, fork_churn, NULL);
	ck_assert_int_eq(proxylock_mutex_lock(&held), 0);
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(child_checks(&held));
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		              "child failed check %d", WEXITSTATUS(status));
	}
	ck_assert_int_eq(proxylock_mutex_unlock(&held), 0);
	__atomic_store_n(&fork_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
}
END_TEST


/*
 * A thread lent to while it holds a lock forks: the child holds nothing
 * anyone there waits for, so its one thread runs at that thread's base
 * in the kernel's view (restored from what the thread's record said at
 * the fork: a fork child finds no record of the parent's), while the
 * parent's thread stays lent to until its unlock, and is back at its
 * base after it.
 */
struct lent_fork {
	proxylock_mutex_t lock;
	bool fast;                /* the holder takes it by the fast path */
	pid_t holder_tid;
	int holding, child_status;
	bool was_lent, restored;
};

static void *lent_fork_holder(void *arg)
{
	struct lent_fork *lf = arg;
	struct kview base, lent;
	pid_t pid;

	pin_self(1);
	set_nice_self(19);
	base = kview_of(0);
	__atomic_store_n(&lf->holder_tid, gettid_(), __ATOMIC_RELEASE);
	if (lf->fast)
		ck_assert_int_eq(proxylock_mutex_trylock(&lf->lock), 0);  /* no record */
	else
		proxylock_mutex_lock(&lf->lock);  /* waits: main holds it */
	__atomic_store_n(&lf->holding, 1, __ATOMIC_RELEASE);
	lf->was_lent = eventually((lent = kview_of(0), lent.nice == 0 && affinity_is(0, 0, -1)), 2000);
	pid = fork();
	if (pid == 0) {
		struct kview v = kview_of(0);

		_exit(kview_equal(&v, &base) ? 0 : 1);
	}
	if (pid > 0 && waitpid(pid, &lf->child_status, 0) != pid)
		lf->child_status = -1;
	lent = kview_of(0);
	lf->was_lent = lf->was_lent && lent.nice == 0 && affinity_is(0, 0, -1);
	proxylock_mutex_unlock(&lf->lock);
	lent = kview_of(0);
	lf->restored = kview_equal(&lent, &base);
	return NULL;
}

/* Waits for the lock from CPU 0, then lets it go. */
static void *lent_fork_waiter(void *arg)
{
	struct lent_fork *lf = arg;

	pin_self(0);
	proxylock_mutex_lock(&lf->lock);
	proxylock_mutex_unlock(&lf->lock);
	return NULL;
}

static void lent_fork_run(bool fast)
{
	static struct lent_fork lf;
	pthread_t h, w;

	require_nice_lending();
	memset(&lf, 0, sizeof(lf));
	lf.fast = fast;
	lf.child_status = -1;
	if (!fast)
		ck_assert_int_eq(proxylock_mutex_lock(&lf.lock), 0);
	pthread_create(&h, NULL, lent_fork_holder, &lf);
	if (!fast) {
		ck_assert(eventually(__atomic_load_n(&lf.holder_tid, __ATOMIC_ACQUIRE) &&
		                     thread_sleeping(lf.holder_tid), 2000));
		ck_assert_int_eq(proxylock_mutex_unlock(&lf.lock), 0);
	}
	ck_assert(eventually(__atomic_load_n(&lf.holding, __ATOMIC_ACQUIRE), 2000));
	pthread_create(&w, NULL, lent_fork_waiter, &lf);
	pthread_join(h, NULL);
	pthread_join(w, NULL);
	ck_assert_msg(lf.was_lent, "the holder was not lent to across its fork");
	assert_fork_child_at_base(lf.child_status);
	ck_assert_msg(lf.restored, "the holder is not back at its base after its unlock");
}

/* The holder first waited for the lock, so its record is its own (adopted). */
START_TEST(a_lent_to_thread_that_forks_leaves_its_child_at_its_base)
{
	lent_fork_run(false);
}
END_TEST

/*
 * The holder took the lock by the fast path and never waited, so the
 * only record of it is the one its waiter made for its TID (not
 * adopted).  Fork's handlers looked only at an adopted record, so the
 * child kept the lent context (nice 0, the waiter's CPU).
 */
START_TEST(a_fast_path_holder_lent_to_through_a_waiters_record_forks_a_child_at_its_base)
{
	lent_fork_run(true);
}
END_TEST

/*
 * Three generations: locks taken before the first fork still name the
 * forking thread in the grandchild, where that thread has a third TID.
 * There it may unlock them (not EPERM), and a robust one is its own, not
 * a dead owner's (trylock says EBUSY, not EOWNERDEAD).  No ck_assert in
 * the children: exit codes say which check failed.
 */
static int grandchild_checks(proxylock_mutex_t *held, proxylock_mutex_t *robust)
{
	if (proxylock_mutex_owner(held) != gettid_() || proxylock_mutex_owner(robust) != gettid_())
		return 20;
	if (proxylock_mutex_trylock(robust) != EBUSY)
		return 21;
	if (proxylock_mutex_unlock(robust) != 0 || proxylock_mutex_unlock(held) != 0)
		return 22;
	if (proxylock_mutex_lock(robust) != 0 || proxylock_mutex_unlock(robust) != 0)
		return 23;
	return 0;
}

static int child_forks_again(proxylock_mutex_t *held, proxylock_mutex_t *robust)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 31;
	if (pid == 0)
		_exit(grandchild_checks(held, robust));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 32;
	return WEXITSTATUS(status);
}

START_TEST(a_grandchild_still_owns_locks_its_thread_held_before_the_first_fork)
{
	proxylock_mutex_t held = PROXYLOCK_MUTEX_INITIALIZER, robust;
	proxylock_mutexattr_t a;
	int status;
	pid_t pid;

	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_setrobust(&a, PROXYLOCK_MUTEX_ROBUST);
	proxylock_mutex_init(&robust, &a);
	ck_assert_int_eq(proxylock_mutex_lock(&held), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&robust), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_forks_again(&held, &robust));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "descendant failed check %d", WEXITSTATUS(status));
	ck_assert_int_eq(proxylock_mutex_unlock(&robust), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&held), 0);
}
END_TEST

/* --- EDEADLK only for a real cycle ----------------------------------- */

static proxylock_mutex_t dl_l1, dl_l2, dl_l3;
static int dl_stop;

static void errorcheck_init(proxylock_mutex_t *m)
{
	proxylock_mutexattr_t a;

	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_settype(&a, PROXYLOCK_MUTEX_ERRORCHECK);
	proxylock_mutex_init(m, &a);
}

/* X nests l1 then l2. */
static void *dl_x(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&dl_stop, __ATOMIC_RELAXED)) {
		proxylock_mutex_lock(&dl_l1);
		proxylock_mutex_lock(&dl_l2);
		proxylock_mutex_unlock(&dl_l2);
		proxylock_mutex_unlock(&dl_l1);
	}
	return NULL;
}

/* B takes l2, lets it go, then takes l3: never both. */
static void *dl_b(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&dl_stop, __ATOMIC_RELAXED)) {
		proxylock_mutex_lock(&dl_l2);
		for (volatile int i = 0; i < 200; i++)
			;
		proxylock_mutex_unlock(&dl_l2);
		proxylock_mutex_lock(&dl_l3);
		proxylock_mutex_unlock(&dl_l3);
	}
	return NULL;
}

/*
 * Lock order l3 -> l1 -> l2, with B never nesting: no cycle of waiters
 * can ever exist, so EDEADLK is never right.  A chain read piecewise can
 * still look like one (A waits on l1, held by X, waiting on l2, owner
 * read as B; B, having let l2 go since, waits on l3, held by A).
 */
START_TEST(errorcheck_never_reports_edeadlk_for_a_cycle_that_never_existed)
{
	pthread_t x, b;
	const char *secs = getenv("PLK_EDEADLK_SECONDS");  /* longer hunts by hand */
	/* Not stretched under memcheck: a hunt, bounded by the clock alone. */
	uint64_t end = mono_ns() + (secs ? strtoull(secs, NULL, 10) : 5) * 1000000000ull;
	long rounds = 0, deadlk = 0;

	errorcheck_init(&dl_l1);
	errorcheck_init(&dl_l2);
	errorcheck_init(&dl_l3);
	__atomic_store_n(&dl_stop, 0, __ATOMIC_RELAXED);
	pthread_create(&x, NULL, dl_x, NULL);
	pthread_create(&b, NULL, dl_b, NULL);
	while (mono_ns() < end) {
		int err;

		proxylock_mutex_lock(&dl_l3);
		err = proxylock_mutex_lock(&dl_l1);
		if (err == 0)
			proxylock_mutex_unlock(&dl_l1);
		else
			deadlk++;
		proxylock_mutex_unlock(&dl_l3);
		rounds++;
	}
	__atomic_store_n(&dl_stop, 1, __ATOMIC_RELAXED);
	pthread_join(x, NULL);
	pthread_join(b, NULL);
	ck_assert_msg(deadlk == 0, "%ld of %ld locks said EDEADLK with no cycle", deadlk, rounds);
}
END_TEST


/* --- a real ABBA deadlock is always seen ----------------------------- */

#define ABBA_ROUNDS (under_valgrind() ? 500 : 20000)
static proxylock_mutex_t ab_a, ab_b;
static pthread_barrier_t ab_bar;

static void *ab_other(void *arg)
{
	long *edeadlk = arg;

	for (int i = 0; i < ABBA_ROUNDS; i++) {
		pthread_barrier_wait(&ab_bar);
		proxylock_mutex_lock(&ab_b);
		pthread_barrier_wait(&ab_bar);  /* both hold one: the cycle is certain */
		if (proxylock_mutex_lock(&ab_a) == 0)
			proxylock_mutex_unlock(&ab_a);
		else
			++*edeadlk;
		proxylock_mutex_unlock(&ab_b);
	}
	return NULL;
}

/*
 * Two threads each hold one ERRORCHECK lock and take the other's at the
 * same moment, 20000 times (a hang is Check's timeout).  The cycle is real every time: at least one
 * of them must get EDEADLK; never may both sleep.
 * (Walking the chain before queueing let each miss the other.)
 */
START_TEST(two_threads_closing_an_abba_cycle_at_once_never_both_sleep)
{
	long mine = 0, theirs = 0;
	pthread_t th;

	errorcheck_init(&ab_a);
	errorcheck_init(&ab_b);
	pthread_barrier_init(&ab_bar, NULL, 2);
	pthread_create(&th, NULL, ab_other, &theirs);
	for (int i = 0; i < ABBA_ROUNDS; i++) {
		pthread_barrier_wait(&ab_bar);
		proxylock_mutex_lock(&ab_a);
		pthread_barrier_wait(&ab_bar);
		if (proxylock_mutex_lock(&ab_b) == 0)
			proxylock_mutex_unlock(&ab_b);
		else
			mine++;
		proxylock_mutex_unlock(&ab_a);
	}
	pthread_join(th, NULL);
	pthread_barrier_destroy(&ab_bar);
	ck_assert_int_ge(mine + theirs, ABBA_ROUNDS);  /* every round: at least one told */
}
END_TEST

static Suite *mutex_suite(void)
{
	Suite *s = suite_create("mutex");
	TCase *tc = tcase_create("mutex");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mutual_exclusion_8_threads_1e5_acquisitions_each);
	tcase_add_test(tc, zero_bytes_are_an_unlocked_normal_mutex);
	tcase_add_test(tc, trylock_is_ebusy_while_another_thread_holds_it);
	tcase_add_test(tc, timedlock_rejects_bad_timespec_only_when_it_would_block);
	tcase_add_test(tc, timedlock_past_deadline_times_out_promptly);
	tcase_add_test(tc, timedlock_waits_at_least_until_the_deadline_on_each_clock);
	tcase_add_test(tc, timedlock_succeeds_when_the_holder_lets_go_in_time);
	tcase_add_test(tc, errorcheck_relock_is_edeadlk_and_foreign_unlock_eperm);
	tcase_add_test(tc, recursive_counts_relocks_and_releases_on_the_last_unlock);
	tcase_add_test(tc, destroy_of_a_locked_mutex_is_ebusy);
	tcase_add_test(tc, normal_relock_deadlocks_as_posix_says_until_the_deadline);
	tcase_add_test(tc, no_lost_wakeup_in_a_wake_wait_storm_with_timeouts);
	tcase_add_test(tc, a_waiter_behind_a_barger_gets_the_lock_within_the_handoff_bound);
	tcase_add_test(tc, each_of_three_waiters_behind_a_barger_gets_the_lock_within_the_handoff_bound);
	tcase_add_test(tc, a_woken_waiter_back_past_the_bound_is_handed_the_lock_first);
	tcase_add_test(tc, rt_waiters_get_the_lock_in_priority_order_before_everyone_else);
	tcase_add_test(tc, fork_child_of_a_multithreaded_process_can_lock_with_its_new_tid);
	tcase_add_test(tc, a_lent_to_thread_that_forks_leaves_its_child_at_its_base);
	tcase_add_test(tc, a_fast_path_holder_lent_to_through_a_waiters_record_forks_a_child_at_its_base);
	tcase_add_test(tc, a_grandchild_still_owns_locks_its_thread_held_before_the_first_fork);
	tcase_add_test(tc, errorcheck_never_reports_edeadlk_for_a_cycle_that_never_existed);
	tcase_add_test(tc, two_threads_closing_an_abba_cycle_at_once_never_both_sleep);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(mutex_suite)

/* SPDX-License-Identifier: MIT */
/*
 * test_cond.c - proxylock condition variables: no lost wake-ups, timed
 * waits, broadcast, the move of waiters onto a held mutex (checked by
 * the kernel's view of what they lend its owner), destroy after
 * broadcast, recursive depth kept across a wait.
 */
#include "helpers.h"

/* --- a bounded queue hammered by producers and consumers ------------ */

#define PC_THREADS 4       /* producers, and as many consumers */
#define PC_ITEMS 50000     /* per producer */
#define PC_SLOTS 4

static proxylock_mutex_t pc_lock = PROXYLOCK_MUTEX_INITIALIZER;
static proxylock_cond_t pc_not_full = PROXYLOCK_COND_INITIALIZER;
static proxylock_cond_t pc_not_empty = PROXYLOCK_COND_INITIALIZER;
static int pc_count;
static unsigned long pc_sum;

static void *producer(void *arg)
{
	(void)arg;
	for (int i = 1; i <= PC_ITEMS; i++) {
		proxylock_mutex_lock(&pc_lock);
		while (pc_count == PC_SLOTS)
			ck_assert_int_eq(proxylock_cond_wait(&pc_not_full, &pc_lock), 0);
		pc_count++;
		proxylock_cond_signal(&pc_not_empty);
		proxylock_mutex_unlock(&pc_lock);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (int i = 0; i < PC_ITEMS; i++) {
		proxylock_mutex_lock(&pc_lock);
		while (pc_count == 0)
			ck_assert_int_eq(proxylock_cond_wait(&pc_not_empty, &pc_lock), 0);
		pc_count--;
		pc_sum++;
		/* Signal after the unlock half the time: both orders are legal. */
		if (i & 1) {
			proxylock_cond_signal(&pc_not_full);
			proxylock_mutex_unlock(&pc_lock);
		} else {
			proxylock_mutex_unlock(&pc_lock);
			proxylock_cond_signal(&pc_not_full);
		}
	}
	return NULL;
}

START_TEST(a_bounded_queue_moves_every_item_with_no_lost_wakeup)
{
	pthread_t th[2 * PC_THREADS];

	for (int i = 0; i < PC_THREADS; i++) {
		pthread_create(&th[i], NULL, producer, NULL);
		pthread_create(&th[PC_THREADS + i], NULL, consumer, NULL);
	}
	for (int i = 0; i < 2 * PC_THREADS; i++)
		pthread_join(th[i], NULL);  /* a lost wake-up hangs: Check's timeout fails it */
	ck_assert_uint_eq(pc_sum, (unsigned long)PC_THREADS * PC_ITEMS);
	ck_assert_int_eq(pc_count, 0);
	ck_assert_uint_eq(pc_lock.__word, 0);
	ck_assert_int_eq(proxylock_cond_destroy(&pc_not_full), 0);
	ck_assert_int_eq(proxylock_cond_destroy(&pc_not_empty), 0);
}
END_TEST

/* --- timed waits ----------------------------------------------------- */

START_TEST(a_timed_wait_times_out_on_its_clock_and_returns_holding_the_mutex)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	proxylock_cond_t c;

	for (int i = 0; i < 2; i++) {
		/* The clock is read for t0 first: a thread kept away between the
		 * two reads (a guest's vCPU the host deschedules) would otherwise
		 * see a deadline that came sooner than 20 ms after t0. */
		uint64_t t0 = mono_ns(), dt;
		struct timespec dl = abstime_in(clocks[i], 20 * 1000000L);

		ck_assert_int_eq(proxylock_cond_init(&c, clocks[i]), 0);
		proxylock_mutex_lock(&m);
		ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, &dl), ETIMEDOUT);
		dt = mono_ns() - t0;
		ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());
		ck_assert_msg(dt >= 19 * 1000000ull && dt < 2000 * 1000000ull, "clock %d: waited %llu ns",
		              (int)clocks[i], (unsigned long long)dt);
		ck_assert_uint_eq(c.__waiters, 0);
		/* A deadline before 1970 (the kernel says EINVAL to it) has
		 * passed too: ETIMEDOUT at once, never a spin. */
		dl = (struct timespec){ .tv_sec = -1, .tv_nsec = 0 };
		ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, &dl), ETIMEDOUT);
		ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());
		proxylock_mutex_unlock(&m);
		ck_assert_int_eq(proxylock_cond_destroy(&c), 0);
	}
}
END_TEST

START_TEST(bad_arguments_are_refused_without_waiting)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	proxylock_cond_t c = PROXYLOCK_COND_INITIALIZER;
	struct timespec bad = { 0, 1000000000L }, past = { 0, 0 };

	ck_assert_int_eq(proxylock_cond_init(&c, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(proxylock_cond_wait(&c, &m), EPERM);  /* not the owner */
	proxylock_mutex_lock(&m);
	ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, &bad), EINVAL);
	ck_assert_int_eq(proxylock_cond_clockwait(&c, &m, CLOCK_THREAD_CPUTIME_ID, &past), EINVAL);
	ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, &past), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());
	proxylock_mutex_unlock(&m);
	ck_assert_int_eq(proxylock_cond_signal(&c), 0);     /* nobody waits: no-op */
	ck_assert_int_eq(proxylock_cond_broadcast(&c), 0);
}
END_TEST

/* --- broadcast ------------------------------------------------------- */

#define BC_WAITERS 6

struct bc {
	proxylock_mutex_t m;
	proxylock_cond_t c;
	int go, waiting, woke;
	int cpu;
};

static void *bc_waiter(void *p)
{
	struct bc *s = p;

	if (s->cpu >= 0)
		pin_self(s->cpu);
	proxylock_mutex_lock(&s->m);
	s->waiting++;
	while (!s->go)
		ck_assert_int_eq(proxylock_cond_wait(&s->c, &s->m), 0);
	s->woke++;
	proxylock_mutex_unlock(&s->m);
	return NULL;
}

static void bc_start(struct bc *s, pthread_t *th, int n, int cpu)
{
	memset(s, 0, sizeof(*s));
	s->cpu = cpu;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, bc_waiter, s);
	ck_assert(eventually(__atomic_load_n(&s->c.__waiters, __ATOMIC_ACQUIRE) == (unsigned)n, 5000));
}

START_TEST(broadcast_wakes_every_waiter_and_the_condvar_can_go_at_once)
{
	static struct bc s;
	pthread_t th[BC_WAITERS];

	bc_start(&s, th, BC_WAITERS, -1);
	proxylock_mutex_lock(&s.m);
	s.go = 1;
	ck_assert_int_eq(proxylock_cond_broadcast(&s.c), 0);
	/* POSIX: destroying right after broadcast is fine; waiters must not
	 * touch the condvar any more, so scribbling over it is harmless. */
	ck_assert_int_eq(proxylock_cond_destroy(&s.c), 0);
	memset(&s.c, 0xa5, sizeof(s.c));
	proxylock_mutex_unlock(&s.m);
	for (int i = 0; i < BC_WAITERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(s.woke, BC_WAITERS);
	ck_assert_uint_eq(s.m.__word, 0);
}
END_TEST

/*
 * Broadcast with the mutex held moves the waiters onto the mutex rather
 * than waking them into it: they sleep on as its waiters and lend its
 * owner their CPU (here: waiters pinned to CPU 0, owner to CPU 1; the
 * owner SCHED_BATCH, so that the SCHED_OTHER waiters outrank it) until
 * it unlocks, and the owner is back at its base after.
 */
START_TEST(broadcast_under_the_mutex_moves_waiters_who_then_lend_the_owner_their_cpu)
{
	static struct bc s;
	pthread_t th[3];
	struct kview base;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pin_self(1);
	bc_start(&s, th, 3, 0);
	set_fair_policy_self(SCHED_BATCH);
	usleep(2000);  /* any copy of our base read before is past PLK_BASE_TTL_NS */
	base = kview_of(0);
	proxylock_mutex_lock(&s.m);
	s.go = 1;
	proxylock_cond_broadcast(&s.c);
	ck_assert_uint_eq(s.c.__waiters, 0);
	ck_assert_msg(__atomic_load_n(&s.m.__word, __ATOMIC_RELAXED) & 0x80000000u,
	              "waiters were not moved onto the mutex");
	ck_assert_msg(affinity_is(0, 0, -1), "the owner does not run on its waiters' CPU");
	usleep(20000);
	ck_assert_int_eq(s.woke, 0);  /* still asleep behind the mutex */
	proxylock_mutex_unlock(&s.m);
	{
		struct kview after = kview_of(0);

		ck_assert(kview_equal(&after, &base));
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(s.woke, 3);
	ck_assert_uint_eq(s.m.__word, 0);
}
END_TEST

/* --- recursive mutexes ----------------------------------------------- */

static proxylock_mutex_t rec_lock;
static proxylock_cond_t rec_cond = PROXYLOCK_COND_INITIALIZER;
static int rec_flag;

static void *rec_signaller(void *arg)
{
	(void)arg;
	proxylock_mutex_lock(&rec_lock);  /* only possible if the waiter let go fully */
	rec_flag = 1;
	proxylock_cond_signal(&rec_cond);
	proxylock_mutex_unlock(&rec_lock);
	return NULL;
}

START_TEST(a_recursive_mutex_is_released_fully_by_a_wait_and_retaken_at_its_depth)
{
	proxylock_mutexattr_t a;
	pthread_t th;

	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_settype(&a, PROXYLOCK_MUTEX_RECURSIVE);
	proxylock_mutex_init(&rec_lock, &a);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(proxylock_mutex_lock(&rec_lock), 0);
	pthread_create(&th, NULL, rec_signaller, NULL);
	while (!rec_flag)
		ck_assert_int_eq(proxylock_cond_wait(&rec_cond, &rec_lock), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(proxylock_mutex_unlock(&rec_lock), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&rec_lock), EPERM);
	pthread_join(th, NULL);
}
END_TEST

/* --- cancellation ----------------------------------------------------- */

struct cw {
	proxylock_mutex_t m;
	proxylock_cond_t c;
	int waiting;
	pid_t owner_in_cleanup;
};

static void cw_cleanup(void *p)
{
	struct cw *s = p;

	s->owner_in_cleanup = proxylock_mutex_owner(&s->m);
	proxylock_mutex_unlock(&s->m);
}

static void *cw_waiter(void *p)
{
	struct cw *s = p;

	proxylock_mutex_lock(&s->m);
	s->waiting = 1;
	pthread_cleanup_push(cw_cleanup, s);
	for (;;)
		proxylock_cond_wait(&s->c, &s->m);
	pthread_cleanup_pop(1);
	return NULL;
}

/*
 * A wait is a cancellation point: a waiter cancelled on the condvar, or
 * after a broadcast moved it onto the held mutex, holds the mutex in its
 * cleanup handler, and leaves no trace on either queue.
 */
START_TEST(a_cancelled_wait_holds_the_mutex_in_cleanup_and_leaves_no_trace)
{
	for (int moved = 0; moved < 2; moved++) {
		struct cw s;
		pthread_t th;
		void *rc;

		memset(&s, 0, sizeof(s));
		pthread_create(&th, NULL, cw_waiter, &s);
		ck_assert(eventually(__atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE) == 1, 5000));
		if (moved) {
			proxylock_mutex_lock(&s.m);
			proxylock_cond_broadcast(&s.c);
			ck_assert(__atomic_load_n(&s.m.__word, __ATOMIC_RELAXED) & 0x80000000u);  /* it waits on the mutex now */
		}
		pthread_cancel(th);
		if (moved) {
			usleep(10000);
			proxylock_mutex_unlock(&s.m);
		}
		pthread_join(th, &rc);  /* a wait that is no cancellation point hangs here */
		ck_assert_ptr_eq(rc, PTHREAD_CANCELED);
		ck_assert_msg(s.owner_in_cleanup != 0, "the cleanup handler ran without the mutex");
		ck_assert_uint_eq(s.c.__waiters, 0);
		ck_assert_uint_eq(s.m.__word, 0);
		ck_assert_int_eq(proxylock_mutex_trylock(&s.m), 0);
		proxylock_cond_broadcast(&s.c);
		proxylock_mutex_unlock(&s.m);
		ck_assert_int_eq(proxylock_cond_destroy(&s.c), 0);
	}
}
END_TEST


/* --- a cancelled waiter passes its signal on ------------------------- */

struct two_waiters {
	proxylock_mutex_t m;
	proxylock_cond_t c;
	int returned;   /* the second waiter came back from its wait */
};

static void tw_unlock(void *arg)
{
	proxylock_mutex_unlock(&((struct two_waiters *)arg)->m);
}

static void *tw_cancelled(void *arg)
{
	struct two_waiters *s = arg;

	proxylock_mutex_lock(&s->m);
	pthread_cleanup_push(tw_unlock, s);
	proxylock_cond_wait(&s->c, &s->m);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *tw_second(void *arg)
{
	struct two_waiters *s = arg;

	proxylock_mutex_lock(&s->m);
	proxylock_cond_wait(&s->c, &s->m);
	__atomic_store_n(&s->returned, 1, __ATOMIC_RELEASE);
	proxylock_mutex_unlock(&s->m);
	return NULL;
}

/*
 * POSIX: a thread cancelled in a wait must not consume a signal while
 * others wait.  One signal takes the first waiter off (moved onto the
 * held mutex); it is then cancelled.  The signal must reach the second.
 */
START_TEST(a_waiter_cancelled_after_a_signal_passes_the_signal_on)
{
	struct two_waiters s;
	pthread_t first, second;

	memset(&s, 0, sizeof(s));
	pthread_create(&first, NULL, tw_cancelled, &s);
	ck_assert(eventually(__atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE) == 1, 5000));
	pthread_create(&second, NULL, tw_second, &s);
	ck_assert(eventually(__atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE) == 2, 5000));
	proxylock_mutex_lock(&s.m);
	proxylock_cond_signal(&s.c);   /* takes the first waiter: it is queued first */
	ck_assert_uint_eq(__atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE), 1);
	pthread_cancel(first);
	usleep(10000);
	proxylock_mutex_unlock(&s.m);
	pthread_join(first, NULL);
	ck_assert_msg(eventually(__atomic_load_n(&s.returned, __ATOMIC_ACQUIRE), 2000),
	              "the cancelled waiter consumed the only signal: the other still sleeps");
	pthread_join(second, NULL);
	ck_assert_uint_eq(s.c.__waiters, 0);
}
END_TEST

/* --- a waiter with another mutex than the condvar's last -------------- */

struct other_mutex {
	proxylock_mutex_t m1, m2;
	proxylock_cond_t c;
	int go, woke;
};

static void *om_wait_on_m1(void *arg)
{
	struct other_mutex *s = arg;

	proxylock_mutex_lock(&s->m1);
	while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE))
		proxylock_cond_wait(&s->c, &s->m1);
	__atomic_store_n(&s->woke, 1, __ATOMIC_RELEASE);
	proxylock_mutex_unlock(&s->m1);
	return NULL;
}

/*
 * A waiter bound to m1 stays queued while a later wait with m2 times out,
 * so the condvar's last mutex is m2, which no queued waiter holds.  POSIX
 * leaves two mutexes on one condvar undefined; glibc tolerates it, so do
 * we (cond.c): a signal, and a broadcast, wake the m1 waiter to retake
 * m1, and m2 is never touched.
 */
static void signal_or_broadcast_wakes_a_waiter_with_another_mutex(bool all)
{
	struct other_mutex s;
	struct timespec t;
	pthread_t a;

	memset(&s, 0, sizeof(s));
	pthread_create(&a, NULL, om_wait_on_m1, &s);
	ck_assert(eventually(__atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE) == 1, 5000));
	proxylock_mutex_lock(&s.m2);
	t = abstime_in(CLOCK_REALTIME, 20 * 1000 * 1000);
	ck_assert_int_eq(proxylock_cond_timedwait(&s.c, &s.m2, &t), ETIMEDOUT);
	proxylock_mutex_unlock(&s.m2);
	proxylock_mutex_lock(&s.m1);
	__atomic_store_n(&s.go, 1, __ATOMIC_RELEASE);
	if (all)
		proxylock_cond_broadcast(&s.c);
	else
		proxylock_cond_signal(&s.c);
	proxylock_mutex_unlock(&s.m1);
	ck_assert_msg(eventually(__atomic_load_n(&s.woke, __ATOMIC_ACQUIRE), 2000),
	              "%s lost: the waiter with m1 still sleeps (the condvar's last mutex is m2)",
	              all ? "the broadcast" : "the signal");
	pthread_join(a, NULL);
	ck_assert_uint_eq(s.c.__waiters, 0);
}

START_TEST(a_signal_wakes_a_waiter_whose_mutex_is_not_the_condvars_last)
{
	signal_or_broadcast_wakes_a_waiter_with_another_mutex(false);
}
END_TEST

START_TEST(a_broadcast_wakes_a_waiter_whose_mutex_is_not_the_condvars_last)
{
	signal_or_broadcast_wakes_a_waiter_with_another_mutex(true);
}
END_TEST

/* --- waiters are never moved onto an unusable mutex ------------------ */

struct dead_holder {
	proxylock_mutex_t *m;
};

static void *lock_and_exit(void *arg)
{
	proxylock_mutex_lock(((struct dead_holder *)arg)->m);
	return NULL;  /* exits holding it */
}

struct robust_waiter {
	proxylock_mutex_t m;
	proxylock_cond_t c;
	int err;
	int done;
};

static void *rw_wait(void *arg)
{
	struct robust_waiter *s = arg;

	proxylock_mutex_lock(&s->m);
	s->err = proxylock_cond_wait(&s->c, &s->m);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A robust mutex left inconsistent becomes not recoverable.  A condvar
 * waiter signalled after that must be woken and told so (the wait
 * returns ENOTRECOVERABLE), not moved onto the dead mutex's queue to
 * sleep forever.
 */
START_TEST(a_signal_after_the_mutex_became_unrecoverable_wakes_the_waiter_with_enotrecoverable)
{
	struct robust_waiter s;
	struct dead_holder d = { &s.m };
	proxylock_mutexattr_t a;
	pthread_t waiter, holder;

	memset(&s, 0, sizeof(s));
	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_setrobust(&a, PROXYLOCK_MUTEX_ROBUST);
	proxylock_mutex_init(&s.m, &a);
	proxylock_cond_init(&s.c, CLOCK_REALTIME);
	pthread_create(&waiter, NULL, rw_wait, &s);
	ck_assert(eventually(__atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE) == 1, 5000));
	pthread_create(&holder, NULL, lock_and_exit, &d);
	pthread_join(holder, NULL);
	ck_assert_int_eq(proxylock_mutex_lock(&s.m), EOWNERDEAD);
	ck_assert_int_eq(proxylock_mutex_unlock(&s.m), 0);  /* not made consistent */
	ck_assert_int_eq(proxylock_mutex_lock(&s.m), ENOTRECOVERABLE);
	proxylock_cond_signal(&s.c);
	ck_assert_msg(eventually(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE), 2000),
	              "the waiter was moved onto a mutex nobody will ever unlock");
	pthread_join(waiter, NULL);
	ck_assert_int_eq(s.err, ENOTRECOVERABLE);
	ck_assert_uint_eq(s.c.__waiters, 0);
}
END_TEST

static Suite *cond_suite(void)
{
	Suite *s = suite_create("cond");
	TCase *tc = tcase_create("cond");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_bounded_queue_moves_every_item_with_no_lost_wakeup);
	tcase_add_test(tc, a_timed_wait_times_out_on_its_clock_and_returns_holding_the_mutex);
	tcase_add_test(tc, bad_arguments_are_refused_without_waiting);
	tcase_add_test(tc, broadcast_wakes_every_waiter_and_the_condvar_can_go_at_once);
	tcase_add_test(tc, broadcast_under_the_mutex_moves_waiters_who_then_lend_the_owner_their_cpu);
	tcase_add_test(tc, a_recursive_mutex_is_released_fully_by_a_wait_and_retaken_at_its_depth);
	tcase_add_test(tc, a_cancelled_wait_holds_the_mutex_in_cleanup_and_leaves_no_trace);
	tcase_add_test(tc, a_waiter_cancelled_after_a_signal_passes_the_signal_on);
	tcase_add_test(tc, a_signal_wakes_a_waiter_whose_mutex_is_not_the_condvars_last);
	tcase_add_test(tc, a_broadcast_wakes_a_waiter_whose_mutex_is_not_the_condvars_last);
	tcase_add_test(tc, a_signal_after_the_mutex_became_unrecoverable_wakes_the_waiter_with_enotrecoverable);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(cond_suite)

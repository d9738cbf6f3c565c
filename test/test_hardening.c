/* SPDX-License-Identifier: MIT */
/*
 * test_hardening.c - bad input and faults.  Every public call refuses a
 * NULL or garbage argument, a destroyed or never-initialised object, a
 * bad clock or timespec, with EINVAL and without touching anything else;
 * a thousand threads cancelled while blocked in lock and condvar waits
 * leave every lock empty and every surviving thread's scheduling context
 * (the kernel's view) at its base.
 */
#include "helpers.h"

/* Bystanders around each object under test: they must not change. */
struct fenced_mutex {
	proxylock_mutex_t before, m, after;
};

static void fence_init(struct fenced_mutex *f)
{
	proxylock_mutexattr_t a;

	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_settype(&a, PROXYLOCK_MUTEX_RECURSIVE);
	ck_assert_int_eq(proxylock_mutex_init(&f->before, &a), 0);
	ck_assert_int_eq(proxylock_mutex_init(&f->after, NULL), 0);
	/* Both in a state: held, one of them twice. */
	ck_assert_int_eq(proxylock_mutex_lock(&f->before), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&f->before), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&f->after), 0);
}

static void fence_check(struct fenced_mutex *f, const struct fenced_mutex *snap)
{
	ck_assert_msg(memcmp(&f->before, &snap->before, sizeof(f->before)) == 0,
	              "the mutex before it changed");
	ck_assert_msg(memcmp(&f->after, &snap->after, sizeof(f->after)) == 0,
	              "the mutex after it changed");
	ck_assert_int_eq(proxylock_mutex_unlock(&f->before), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&f->before), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&f->after), 0);
	ck_assert_uint_eq(f->before.__word, 0);
	ck_assert_uint_eq(f->after.__word, 0);
}

/* Every call that can fail, on @m and the condvar @c, must say @want. */
static void all_calls_say(proxylock_mutex_t *m, proxylock_cond_t *c, int want)
{
	struct timespec ts = abstime_in(CLOCK_REALTIME, 1000 * 1000);

	ck_assert_int_eq(proxylock_mutex_lock(m), want);
	ck_assert_int_eq(proxylock_mutex_trylock(m), want);
	ck_assert_int_eq(proxylock_mutex_timedlock(m, &ts), want);
	ck_assert_int_eq(proxylock_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), want);
	ck_assert_int_eq(proxylock_mutex_unlock(m), want);
	ck_assert_int_eq(proxylock_mutex_consistent(m), EINVAL);
	if (c) {
		ck_assert_int_eq(proxylock_cond_wait(c, m), want);
		ck_assert_int_eq(proxylock_cond_timedwait(c, m, &ts), want);
	}
}

START_TEST(every_call_refuses_NULL_with_EINVAL)
{
	proxylock_mutexattr_t a;
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	proxylock_cond_t c = PROXYLOCK_COND_INITIALIZER;
	struct timespec ts = abstime_in(CLOCK_REALTIME, 1000 * 1000);
	int v;
	unsigned k;

	ck_assert_int_eq(proxylock_mutexattr_init(NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_destroy(NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_settype(NULL, 0), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_gettype(NULL, &v), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_setdonate(NULL, 0), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_getdonate(NULL, &k), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_setrobust(NULL, 0), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_getrobust(NULL, &v), EINVAL);
	proxylock_mutexattr_init(&a);
	ck_assert_int_eq(proxylock_mutexattr_gettype(&a, NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_getdonate(&a, NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_getrobust(&a, NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutex_init(NULL, NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutex_destroy(NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutex_owner(NULL), 0);
	all_calls_say(NULL, NULL, EINVAL);
	ck_assert_int_eq(proxylock_cond_init(NULL, CLOCK_REALTIME), EINVAL);
	ck_assert_int_eq(proxylock_cond_destroy(NULL), EINVAL);
	ck_assert_int_eq(proxylock_cond_signal(NULL), EINVAL);
	ck_assert_int_eq(proxylock_cond_broadcast(NULL), EINVAL);
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_cond_wait(NULL, &m), EINVAL);
	ck_assert_int_eq(proxylock_cond_wait(&c, NULL), EINVAL);
	ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, NULL), EINVAL);
	ck_assert_int_eq(proxylock_cond_clockwait(&c, &m, CLOCK_MONOTONIC, NULL), EINVAL);
	ck_assert_int_eq(proxylock_cond_timedwait(NULL, &m, &ts), EINVAL);
	ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());  /* still ours */
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	proxylock_stats_get(NULL);  /* a no-op, not a crash */
}
END_TEST

START_TEST(a_garbage_or_destroyed_attribute_is_EINVAL_and_the_mutex_is_left_untouched)
{
	struct fenced_mutex f, snap;
	proxylock_mutexattr_t bad, a;
	int v;

	fence_init(&f);
	memset(&f.m, 0x5a, sizeof(f.m));
	snap = f;
	memset(&bad, 0xa5, sizeof(bad));
	ck_assert_int_eq(proxylock_mutex_init(&f.m, &bad), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_settype(&bad, 0), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_gettype(&bad, &v), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_setrobust(&bad, 1), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_destroy(&bad), EINVAL);
	proxylock_mutexattr_init(&a);
	ck_assert_int_eq(proxylock_mutexattr_settype(&a, 4), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_settype(&a, -1), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_setdonate(&a, 0x10), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_setrobust(&a, 2), EINVAL);
	ck_assert_int_eq(proxylock_mutexattr_destroy(&a), 0);
	ck_assert_int_eq(proxylock_mutexattr_destroy(&a), EINVAL);  /* twice */
	ck_assert_int_eq(proxylock_mutex_init(&f.m, &a), EINVAL);
	ck_assert_msg(memcmp(&f.m, &snap.m, sizeof(f.m)) == 0, "a refused init wrote the mutex");
	fence_check(&f, &snap);
}
END_TEST

START_TEST(a_destroyed_mutex_answers_EINVAL_until_it_is_initialised_again)
{
	struct fenced_mutex f, snap;
	proxylock_cond_t c = PROXYLOCK_COND_INITIALIZER;

	fence_init(&f);
	ck_assert_int_eq(proxylock_mutex_init(&f.m, NULL), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&f.m), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&f.m), EBUSY);  /* held: stays usable */
	ck_assert_int_eq(proxylock_mutex_unlock(&f.m), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&f.m), 0);
	snap = f;
	all_calls_say(&f.m, &c, EINVAL);
	ck_assert_int_eq(proxylock_mutex_destroy(&f.m), EINVAL);
	ck_assert_int_eq(proxylock_mutex_owner(&f.m), 0);
	ck_assert_msg(memcmp(&f, &snap, sizeof(f)) == 0, "calls on a destroyed mutex wrote memory");
	ck_assert_int_eq(proxylock_mutex_init(&f.m, NULL), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&f.m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&f.m), 0);
	fence_check(&f, &snap);
	ck_assert_int_eq(proxylock_cond_destroy(&c), 0);
}
END_TEST

/*
 * Storage no init wrote: zero is a valid mutex by design; anything whose
 * flags no init can produce is refused without waiting (POSIX leaves the
 * rest undefined: a never-initialised word of 0 with sane flags locks).
 */
START_TEST(never_initialised_garbage_is_refused_at_once_not_waited_on)
{
	static const unsigned char fills[] = { 0xa5, 0xff, 0x5a, 0x80 };
	struct fenced_mutex f, snap;
	proxylock_cond_t c = PROXYLOCK_COND_INITIALIZER;
	uint64_t t0 = mono_ns();

	fence_init(&f);
	memset(&f.m, fills[_i], sizeof(f.m));
	snap = f;
	all_calls_say(&f.m, &c, EINVAL);
	ck_assert_int_eq(proxylock_mutex_destroy(&f.m), EINVAL);
	ck_assert_msg(memcmp(&f, &snap, sizeof(f)) == 0, "calls on garbage wrote memory");
	ck_assert_msg(mono_ns() - t0 < time_bound_ns(500ull * 1000 * 1000), "a refused call waited");
	fence_check(&f, &snap);
}
END_TEST

START_TEST(a_garbage_or_destroyed_condvar_is_EINVAL_everywhere)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	proxylock_cond_t c, around[3];
	struct timespec ts = abstime_in(CLOCK_REALTIME, 1000 * 1000);

	memset(around, 0, sizeof(around));
	memset(&around[1], 0xa5, sizeof(around[1]));
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_cond_signal(&around[1]), EINVAL);
	ck_assert_int_eq(proxylock_cond_broadcast(&around[1]), EINVAL);
	ck_assert_int_eq(proxylock_cond_wait(&around[1], &m), EINVAL);
	ck_assert_int_eq(proxylock_cond_timedwait(&around[1], &m, &ts), EINVAL);
	ck_assert_int_eq(proxylock_cond_destroy(&around[1]), EINVAL);
	ck_assert_int_eq(proxylock_cond_init(&c, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(proxylock_cond_destroy(&c), 0);
	ck_assert_int_eq(proxylock_cond_signal(&c), EINVAL);
	ck_assert_int_eq(proxylock_cond_broadcast(&c), EINVAL);
	ck_assert_int_eq(proxylock_cond_wait(&c, &m), EINVAL);
	ck_assert_int_eq(proxylock_cond_destroy(&c), EINVAL);
	ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());  /* never released */
	ck_assert_int_eq(proxylock_cond_init(&c, CLOCK_REALTIME), 0);
	ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, &ts), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	for (int i = 0; i < 3; i += 2)
		for (size_t b = 0; b < sizeof(around[i]); b++)
			ck_assert_uint_eq(((unsigned char *)&around[i])[b], 0);
}
END_TEST

struct timed_try {
	proxylock_mutex_t *m;
	struct timespec ts;
};

static void *timedlock_in_thread(void *arg)
{
	struct timed_try *x = arg;

	return (void *)(long)proxylock_mutex_timedlock(x->m, &x->ts);
}

START_TEST(bad_clocks_and_timespecs_are_EINVAL_when_the_call_would_wait)
{
	static const long bad_nsec[] = { -1, 1000000000L, 2000000000L };
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER, held = PROXYLOCK_MUTEX_INITIALIZER;
	proxylock_cond_t c = PROXYLOCK_COND_INITIALIZER, c2;
	struct timespec ts = abstime_in(CLOCK_REALTIME, 1000 * 1000);

	ck_assert_int_eq(proxylock_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	ck_assert_int_eq(proxylock_mutex_clocklock(&m, (clockid_t)-42, &ts), EINVAL);
	ck_assert_int_eq(proxylock_cond_init(&c2, CLOCK_THREAD_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(proxylock_affinity_policy_set(99), EINVAL);
	ck_assert_int_eq(proxylock_affinity_policy_set(-1), EINVAL);
	ck_assert_int_eq(proxylock_mutex_lock(&held), 0);
	for (int i = 0; i < 3; i++) {
		struct timespec bad = { .tv_sec = ts.tv_sec, .tv_nsec = bad_nsec[i] };
		pthread_t t;
		void *rc;

		/* POSIX: a lock that can be taken at once need not look at it. */
		ck_assert_int_eq(proxylock_mutex_timedlock(&m, &bad), 0);
		ck_assert_int_eq(proxylock_cond_timedwait(&c, &m, &bad), EINVAL);
		ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());
		ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
		/* One that would wait must look: `held` is ours, so block. */
		struct timed_try x = { &held, bad };

		ck_assert_int_eq(pthread_create(&t, NULL, timedlock_in_thread, &x), 0);
		ck_assert_int_eq(pthread_join(t, &rc), 0);
		ck_assert_int_eq((long)rc, EINVAL);
	}
	ck_assert_int_eq(proxylock_mutex_unlock(&held), 0);
}
END_TEST

/* --- cancellation storms --------------------------------------------- */

/*
 * Waves of threads, half blocked in proxylock_mutex_lock on a lock the
 * holder keeps, half in proxylock_cond_wait, each lending its CPU (pinned
 * to the last CPU; the holder is pinned to CPU 0).  Every thread is
 * cancelled while blocked.  Lock waiters act on it at their next
 * cancellation point after the lock is theirs (locking is not one), and
 * release it in a cleanup handler; condvar waiters are cancelled in the
 * wait and release the mutex retaken for their cleanup handler.
 */
struct storm {
	proxylock_mutex_t lock, cmutex;
	proxylock_cond_t cond;
	int cpu;
	int started;
	int errors;  /* calls that failed, lockers that ran past testcancel */
};

static void unlock_cleanup(void *m)
{
	ck_assert_int_eq(proxylock_mutex_unlock(m), 0);
}

/* No ck_assert between a lock and its cleanup push: Check's bookkeeping
 * writes to a pipe, a cancellation point, so the thread would die there
 * holding the lock.  Errors are counted instead. */
static void *storm_locker(void *arg)
{
	struct storm *s = arg;
	int err;

	pin_self(s->cpu);
	set_fair_policy_self(SCHED_OTHER);  /* to outrank the SCHED_BATCH holder */
	__atomic_fetch_add(&s->started, 1, __ATOMIC_RELEASE);
	err = proxylock_mutex_lock(&s->lock);
	pthread_cleanup_push(unlock_cleanup, &s->lock);
	if (err)
		__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
	pthread_testcancel();
	__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);  /* not cancelled */
	pthread_cleanup_pop(1);
	return NULL;
}

static void *storm_waiter(void *arg)
{
	struct storm *s = arg;
	int err;

	pin_self(s->cpu);
	err = proxylock_mutex_lock(&s->cmutex);
	pthread_cleanup_push(unlock_cleanup, &s->cmutex);
	if (err)
		__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->started, 1, __ATOMIC_RELEASE);
	for (;;)
		if ((err = proxylock_cond_wait(&s->cond, &s->cmutex)))
			__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
	pthread_cleanup_pop(1);
	return NULL;
}

/* A CPU's capacity (cpu_capacity; 1024 where the file is missing). */
static long capacity_of(int cpu)
{
	char path[96];
	long cap = 1024;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpu_capacity", cpu);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%ld", &cap) != 1)
			cap = 1024;
		fclose(f);
	}
	return cap;
}

/* The last CPU as big as CPU 0: a lend from there is never refused for
 * capacity (lend.c), on big.LITTLE machines too. */
static int cpu_as_big_as_cpu0(int ncpu)
{
	for (int cpu = ncpu - 1; cpu > 0; cpu--)
		if (capacity_of(cpu) >= capacity_of(0))
			return cpu;
	return ncpu - 1;
}

static int storm_threads(void)
{
	const char *s = getenv("PROXYLOCK_TEST_THREADS");

	return s ? atoi(s) : 1000;
}

START_TEST(a_thousand_threads_cancelled_in_lock_and_cond_waits_leave_no_trace)
{
	enum { WAVE = 100 };
	static pthread_t t[WAVE];
	static struct storm s;
	int total = storm_threads(), ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct kview base, now;
	struct proxylock_stats st0, st1;

	ck_assert_int_ge(ncpu, 2);
	memset(&s, 0, sizeof(s));
	s.cpu = cpu_as_big_as_cpu0(ncpu);
	pin_self(0);
	/* The holder SCHED_BATCH, its lockers SCHED_OTHER: they outrank it,
	 * so they lend it their CPU. */
	set_fair_policy_self(SCHED_BATCH);
	usleep(2000);  /* any copy of our base read before is past PLK_BASE_TTL_NS */
	base = kview_of(0);
	proxylock_stats_get(&st0);
	for (int done = 0; done < total; done += WAVE) {
		int n = total - done < WAVE ? total - done : WAVE;

		s.started = 0;
		ck_assert_int_eq(proxylock_mutex_lock(&s.lock), 0);
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(pthread_create(&t[i], NULL, i % 2 ? storm_waiter : storm_locker,
			                                &s), 0);
		ck_assert(eventually(__atomic_load_n(&s.started, __ATOMIC_ACQUIRE) == n, 20000));
		/* The lockers are blocked: they lend us their CPU. */
		ck_assert_msg(eventually(affinity_is(0, s.cpu, -1), 5000),
		              "the holder was not lent the waiters' CPU %d", s.cpu);
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(pthread_cancel(t[i]), 0);
		ck_assert_int_eq(proxylock_mutex_unlock(&s.lock), 0);
		ck_assert_msg(affinity_is(0, 0, -1), "unlock left the holder lent to");
		for (int i = 0; i < n; i++) {
			void *rc;

			ck_assert_int_eq(pthread_join(t[i], &rc), 0);
			ck_assert_ptr_eq(rc, PTHREAD_CANCELED);
		}
		ck_assert_uint_eq(s.lock.__word, 0);
		ck_assert_uint_eq(s.cmutex.__word, 0);
		ck_assert_uint_eq(s.cond.__waiters, 0);
	}
	now = kview_of(0);
	ck_assert_msg(kview_equal(&now, &base), "the holder's context is not its base");
	ck_assert_int_eq(s.errors, 0);
	proxylock_stats_get(&st1);
	ck_assert_uint_eq(st1.owner_dead, st0.owner_dead);
	/* Every lock is still a lock: uncontended, then contended once. */
	ck_assert_int_eq(proxylock_mutex_trylock(&s.lock), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&s.lock), 0);
	ck_assert_int_eq(proxylock_cond_destroy(&s.cond), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&s.lock), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&s.cmutex), 0);
}
END_TEST

static Suite *hardening_suite(void)
{
	Suite *s = suite_create("hardening");
	TCase *tc = tcase_create("hardening");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, every_call_refuses_NULL_with_EINVAL);
	tcase_add_test(tc, a_garbage_or_destroyed_attribute_is_EINVAL_and_the_mutex_is_left_untouched);
	tcase_add_test(tc, a_destroyed_mutex_answers_EINVAL_until_it_is_initialised_again);
	tcase_add_loop_test(tc, never_initialised_garbage_is_refused_at_once_not_waited_on, 0, 4);
	tcase_add_test(tc, a_garbage_or_destroyed_condvar_is_EINVAL_everywhere);
	tcase_add_test(tc, bad_clocks_and_timespecs_are_EINVAL_when_the_call_would_wait);
	tcase_add_test(tc, a_thousand_threads_cancelled_in_lock_and_cond_waits_leave_no_trace);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(hardening_suite)

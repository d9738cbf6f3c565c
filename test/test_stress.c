/* SPDX-License-Identifier: MIT */
/*
 * test_stress.c - under a mixed, bursty load no waiter sleeps on while
 * its lock is free, mutual exclusion holds, and condvar waits keep their
 * predicate, including waits cancelled with pthread_cancel.
 *
 * Six workers on four proxylocks mix lock, trylock, timedlock with
 * timeouts of 10 us to ~1 ms (so that timeouts race with unlocks), bursts
 * of lock/unlock (bargers), and produce/consume on a condvar (signal or
 * broadcast; timed waits); two more threads sleep in condvar waits and
 * are cancelled, woken and cancelled, or moved onto the held mutex and
 * cancelled, then replaced.  Each lock goes through busy and idle periods
 * (a lost wake-up only shows once traffic on its lock stops: any new
 * contender sets the waiters bit again and rescues the sleeper).
 *
 * The watchdog: every blocking lock call is published as "thread T in
 * lock(L) since t"; a watchdog thread samples each lock's owner
 * (proxylock_mutex_owner) every millisecond and fails the test when a
 * thread has been in lock(L) for longer than the threshold while L was
 * seen free at every sample over that window.  The threshold is 100 ms,
 * five of the library's first liveness slices (20 ms), times
 * PLK_STRESS_SLACK (default 1; x20 under PROXYLOCK_TEST_UNDER_VALGRIND=1).
 *
 * PLK_STRESS_OPS: operations in total (default 10^6).
 */
#include <stdarg.h>

#include "helpers.h"

#define NLOCKS 4
#define NWORKERS 6
#define NSLEEPERS 2
#define MAIN_SLOT (NWORKERS + NSLEEPERS)
#define NSLOTS (MAIN_SLOT + 1)
#define MAX_TOKENS 64

static proxylock_mutex_t locks[NLOCKS];
static int inside[NLOCKS];               /* threads inside L's critical section */
static unsigned long guarded[NLOCKS];    /* plain ++ under L */
static unsigned long acquisitions[NLOCKS]; /* atomic ++ under L */
static int active[NLOCKS];               /* L's busy period: workers use it */

/* The condvar predicate: tokens, under locks[0]. */
static proxylock_cond_t cv_tokens;
static int tokens;
static unsigned long produced, consumed;

/* Cancellation victims wait on cv_sleep under locks[0], for ever. */
static proxylock_cond_t cv_sleep;

static int stop;
static unsigned long ops_done;

/* Watchdog slots: (since_us << 8) | (lock + 1) while in a blocking lock call. */
struct slot {
	uint64_t blocked;
	pid_t tid;
	char name[24];
};
static struct slot slots[NSLOTS];

static int failed;
static char fail_msg[512];

static __attribute__((format(printf, 1, 2))) void stress_fail(const char *fmt, ...)
{
	int zero = 0;
	va_list ap;

	if (!__atomic_compare_exchange_n(&failed, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "stress: %s\n", fail_msg);
	__atomic_store_n(&failed, 2, __ATOMIC_RELEASE);  /* message complete */
}

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static double slack(void)
{
	const char *s = getenv("PLK_STRESS_SLACK");
	double k = s ? atof(s) : 0;

	return (k > 0 ? k : 1.0) * (under_valgrind() ? 20 : 1);
}

static unsigned long ops_wanted(void)
{
	const char *s = getenv("PLK_STRESS_OPS");

	return s && strtoul(s, NULL, 10) > 0 ? strtoul(s, NULL, 10) : 1000000ul;
}

/* --- critical sections ------------------------------------------------ */

static void cs_enter(int i, pid_t tid)
{
	int n = __atomic_fetch_add(&inside[i], 1, __ATOMIC_ACQ_REL);
	pid_t owner = proxylock_mutex_owner(&locks[i]);

	if (n != 0)
		stress_fail("mutual exclusion broken: tid %d entered lock %d's critical section "
		     "with %d thread(s) inside", tid, i, n);
	if (owner != tid)
		stress_fail("tid %d inside lock %d's critical section, but the word names %d", tid, i,
		     owner);
	guarded[i]++;
	__atomic_fetch_add(&acquisitions[i], 1, __ATOMIC_RELAXED);
}

static void cs_exit(int i)
{
	__atomic_fetch_sub(&inside[i], 1, __ATOMIC_ACQ_REL);
}

/* --- blocking calls, published for the watchdog ---------------------- */

static void publish(struct slot *s, int i)
{
	uint64_t us = mono_ns() / 1000;

	__atomic_store_n(&s->blocked, (us << 8) | (uint64_t)(i + 1), __ATOMIC_RELEASE);
}

static void unpublish(struct slot *s)
{
	__atomic_store_n(&s->blocked, 0, __ATOMIC_RELEASE);
}

static int blocking_lock(struct slot *s, int i, const struct timespec *deadline)
{
	int err;

	publish(s, i);
	err = deadline ? proxylock_mutex_timedlock(&locks[i], deadline)
	               : proxylock_mutex_lock(&locks[i]);
	unpublish(s);
	if (err != 0 && !(deadline && err == ETIMEDOUT))
		stress_fail("%s: lock %d: unexpected error %d", s->name, i, err);
	return err;
}

static void unlock(int i)
{
	int err = proxylock_mutex_unlock(&locks[i]);

	if (err)
		stress_fail("unlock of lock %d: error %d", i, err);
}

/* --- the condvar predicate -------------------------------------------- */

static void produce(struct slot *s, unsigned *seed)
{
	unsigned how = rnd(seed) % 4;

	blocking_lock(s, 0, NULL);
	cs_enter(0, s->tid);
	if (tokens < MAX_TOKENS) {
		tokens++;
		produced++;
	}
	if (how == 0)
		proxylock_cond_broadcast(&cv_tokens);
	else if (how == 1)
		proxylock_cond_signal(&cv_tokens);
	cs_exit(0);
	unlock(0);
	if (how == 2)
		proxylock_cond_signal(&cv_tokens);  /* after the unlock: also legal */
	else if (how == 3)
		proxylock_cond_broadcast(&cv_tokens);
}

static void consume(struct slot *s, unsigned *seed)
{
	struct timespec dl = abstime_in(CLOCK_REALTIME, 50000 + rnd(seed) % 2000000);
	int err = 0;

	blocking_lock(s, 0, NULL);
	cs_enter(0, s->tid);
	while (tokens == 0 && err == 0) {
		cs_exit(0);
		err = proxylock_cond_timedwait(&cv_tokens, &locks[0], &dl);
		cs_enter(0, s->tid);  /* back holding the mutex, whatever err is */
		if (err != 0 && err != ETIMEDOUT)
			stress_fail("%s: cond_timedwait: error %d", s->name, err);
	}
	if (tokens < 0 || tokens > MAX_TOKENS)
		stress_fail("condvar predicate broken: %d tokens", tokens);
	if (tokens > 0) {
		tokens--;
		consumed++;
	}
	cs_exit(0);
	unlock(0);
}

/* --- workers ---------------------------------------------------------- */

static int pick_lock(unsigned *seed)
{
	int start = (int)(rnd(seed) % NLOCKS);

	for (int k = 0; k < NLOCKS; k++) {
		int i = (start + k) % NLOCKS;

		if (__atomic_load_n(&active[i], __ATOMIC_RELAXED))
			return i;
	}
	return -1;
}

/* 10 us to ~1.3 ms, more of them short: timeouts that race with unlocks. */
static long short_timeout_ns(unsigned *seed)
{
	return (10000L << (rnd(seed) % 8)) + (long)(rnd(seed) % 10000);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	unsigned seed = (unsigned)(s - slots) * 2654435761u + 17;
	unsigned long ops = 0;

	s->tid = gettid_();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int i = pick_lock(&seed);
		unsigned r = rnd(&seed) % 100;

		if (i < 0) {
			usleep(100 + rnd(&seed) % 900);  /* every lock idle */
			continue;
		}
		if (r < 25) {  /* a barger's burst: retake at once, empty section */
			int n = 1 + (int)(rnd(&seed) % 32);

			for (int k = 0; k < n; k++, ops++) {
				blocking_lock(s, i, NULL);
				cs_enter(i, s->tid);
				cs_exit(i);
				unlock(i);
			}
		} else if (r < 45) {
			blocking_lock(s, i, NULL);
			cs_enter(i, s->tid);
			burn_ns(rnd(&seed) % 4000);
			cs_exit(i);
			unlock(i);
			ops++;
		} else if (r < 55) {
			int err = proxylock_mutex_trylock(&locks[i]);

			if (err == 0) {
				cs_enter(i, s->tid);
				cs_exit(i);
				unlock(i);
			} else if (err != EBUSY) {
				stress_fail("%s: trylock of lock %d: error %d", s->name, i, err);
			}
			ops++;
		} else if (r < 80) {
			struct timespec dl = abstime_in(CLOCK_REALTIME, short_timeout_ns(&seed));

			if (blocking_lock(s, i, &dl) == 0) {
				cs_enter(i, s->tid);
				burn_ns(rnd(&seed) % 2000);
				cs_exit(i);
				unlock(i);
			}
			ops++;
		} else if (r < 87) {
			if (__atomic_load_n(&active[0], __ATOMIC_RELAXED)) {
				produce(s, &seed);
				ops++;
			}
		} else if (r < 94) {
			if (__atomic_load_n(&active[0], __ATOMIC_RELAXED)) {
				consume(s, &seed);
				ops++;
			}
		} else {
			usleep(rnd(&seed) % 1000);  /* a pause */
		}
		if (ops >= 256) {
			__atomic_fetch_add(&ops_done, ops, __ATOMIC_RELAXED);
			ops = 0;
		}
	}
	__atomic_fetch_add(&ops_done, ops, __ATOMIC_RELAXED);
	return NULL;
}

/* --- cancellation victims --------------------------------------------- */

struct sleeper {
	struct slot *slot;
	pthread_t th;
	int waiting;   /* in its wait loop */
	int in_cs;     /* holds locks[0], inside the section */
	int cleaned;   /* its cleanup handler ran, with the mutex */
	int release;
};
static struct sleeper sleepers[NSLEEPERS];

/* Cancelled in cond_wait: POSIX has the mutex retaken before this runs. */
static void sleeper_cleanup(void *arg)
{
	struct sleeper *sl = arg;
	pid_t owner = proxylock_mutex_owner(&locks[0]);

	if (owner != sl->slot->tid) {
		stress_fail("%s (tid %d) cancelled in cond_wait: its cleanup handler runs without the "
		     "mutex (owner %d)", sl->slot->name, sl->slot->tid, owner);
		return;
	}
	if (!sl->in_cs)
		cs_enter(0, sl->slot->tid);
	cs_exit(0);
	unlock(0);
	__atomic_store_n(&sl->cleaned, 1, __ATOMIC_RELEASE);
}

static void *sleeper(void *arg)
{
	struct sleeper *sl = arg;

	sl->slot->tid = gettid_();
	blocking_lock(sl->slot, 0, NULL);
	cs_enter(0, sl->slot->tid);
	sl->in_cs = 1;
	pthread_cleanup_push(sleeper_cleanup, sl);
	__atomic_store_n(&sl->waiting, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sl->release, __ATOMIC_ACQUIRE)) {
		int err;

		sl->in_cs = 0;
		cs_exit(0);
		err = proxylock_cond_wait(&cv_sleep, &locks[0]);
		cs_enter(0, sl->slot->tid);
		sl->in_cs = 1;
		if (err)
			stress_fail("%s: cond_wait: error %d", sl->slot->name, err);
	}
	pthread_cleanup_pop(1);
	return NULL;
}

static void sleeper_start(struct sleeper *sl)
{
	sl->waiting = sl->in_cs = sl->cleaned = sl->release = 0;
	ck_assert_int_eq(pthread_create(&sl->th, NULL, sleeper, sl), 0);
}

static bool join_within(pthread_t th, uint64_t ns)
{
	struct timespec dl = abstime_in(CLOCK_REALTIME, (long)ns);

	return pthread_timedjoin_np(th, NULL, &dl) == 0;
}

/*
 * Cancel a sleeper: as it waits on the condvar (0); right after a
 * broadcast and unlock woke it to retake the mutex (1); or once the
 * broadcast moved it onto the held mutex's queue (2).  Then replace it.
 */
static void cancel_cycle(struct sleeper *sl, unsigned how, uint64_t limit_ns)
{
	struct slot *me = &slots[MAIN_SLOT];

	if (!__atomic_load_n(&sl->waiting, __ATOMIC_ACQUIRE))
		return;  /* not in its wait yet: next time */
	if (how == 0) {
		pthread_cancel(sl->th);
	} else {
		blocking_lock(me, 0, NULL);
		cs_enter(0, me->tid);
		proxylock_cond_broadcast(&cv_sleep);
		cs_exit(0);
		if (how == 2)
			pthread_cancel(sl->th);
		unlock(0);
		if (how == 1)
			pthread_cancel(sl->th);
	}
	if (!join_within(sl->th, limit_ns)) {
		stress_fail("%s (tid %d) cancelled in cond_wait (variant %u) did not finish within "
		     "%llu ms", sl->slot->name, sl->slot->tid, how,
		     (unsigned long long)(limit_ns / 1000000));
		return;
	}
	if (!__atomic_load_n(&sl->cleaned, __ATOMIC_ACQUIRE))
		stress_fail("%s cancelled in cond_wait (variant %u): its cleanup handler did not "
		     "unlock the mutex", sl->slot->name, how);
	sleeper_start(sl);
}

/* --- the watchdog ----------------------------------------------------- */

static uint64_t threshold_ns;
static int watchdog_stop;

static void *watchdog(void *arg)
{
	uint64_t last_held[NLOCKS], last_sample = mono_ns();

	(void)arg;
	for (int i = 0; i < NLOCKS; i++)
		last_held[i] = last_sample;
	while (!__atomic_load_n(&watchdog_stop, __ATOMIC_RELAXED)) {
		uint64_t now = mono_ns();

		/* Not sampled for a while (we were not scheduled): we cannot
		 * say the locks were free meanwhile. */
		if (now - last_sample > threshold_ns / 4)
			for (int i = 0; i < NLOCKS; i++)
				last_held[i] = now;
		last_sample = now;
		for (int i = 0; i < NLOCKS; i++)
			if (proxylock_mutex_owner(&locks[i]) != 0)
				last_held[i] = now;
		for (int k = 0; k < NSLOTS; k++) {
			uint64_t b = __atomic_load_n(&slots[k].blocked, __ATOMIC_ACQUIRE), since;
			int i;

			if (!b)
				continue;
			i = (int)(b & 0xff) - 1;
			since = (b >> 8) * 1000;
			if (now < since || now - since <= threshold_ns || now - last_held[i] <= threshold_ns)
				continue;
			stress_fail("watchdog: %s (tid %d) has been blocked in a lock call on lock %d for "
			     "%llu ms, and lock %d was free at every sample for the last %llu ms: "
			     "a lost wake-up (ops so far: %lu)", slots[k].name, slots[k].tid, i,
			     (unsigned long long)((now - since) / 1000000), i,
			     (unsigned long long)((now - last_held[i]) / 1000000),
			     __atomic_load_n(&ops_done, __ATOMIC_RELAXED));
			return (void *)(uintptr_t)(k + 1);
		}
		usleep(1000);
	}
	return NULL;
}

/* --- the test --------------------------------------------------------- */

START_TEST(no_waiter_sleeps_on_a_free_lock_and_exclusion_and_predicates_hold_under_stress)
{
	pthread_t wk[NWORKERS], wd;
	uint64_t next_switch[NLOCKS], t0 = mono_ns(), next_cancel = t0;
	uint64_t limit_ns = (uint64_t)(2e9 * slack()), max_run_ns = 200ull * 1000000000ull;
	unsigned long want = ops_wanted();
	unsigned seed = 4242, cancels = 0;
	void *stuck = NULL;

	threshold_ns = (uint64_t)(100e6 * slack());
	for (int i = 0; i < NLOCKS; i++) {
		proxylock_mutex_init(&locks[i], NULL);
		next_switch[i] = t0;
	}
	proxylock_cond_init(&cv_tokens, CLOCK_REALTIME);
	proxylock_cond_init(&cv_sleep, CLOCK_MONOTONIC);
	for (int k = 0; k < NSLOTS; k++)
		snprintf(slots[k].name, sizeof(slots[k].name),
		         k < NWORKERS ? "worker %d" : k < MAIN_SLOT ? "cond sleeper %d" : "main",
		         k < NWORKERS ? k : k - NWORKERS);
	slots[MAIN_SLOT].tid = gettid_();
	pthread_create(&wd, NULL, watchdog, NULL);
	for (int k = 0; k < NWORKERS; k++)
		pthread_create(&wk[k], NULL, worker, &slots[k]);
	for (int k = 0; k < NSLEEPERS; k++) {
		sleepers[k].slot = &slots[NWORKERS + k];
		sleeper_start(&sleepers[k]);
	}

	/* Drive the busy/idle periods and the cancellations. */
	while (!__atomic_load_n(&failed, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&ops_done, __ATOMIC_RELAXED) < want &&
	       mono_ns() - t0 < max_run_ns) {
		uint64_t now = mono_ns();

		for (int i = 0; i < NLOCKS; i++) {
			if (now < next_switch[i])
				continue;
			bool on = !__atomic_load_n(&active[i], __ATOMIC_RELAXED);

			__atomic_store_n(&active[i], on, __ATOMIC_RELAXED);
			/* busy 5-40 ms, idle 20-320 ms */
			next_switch[i] = now + (on ? 5 + rnd(&seed) % 35 : 20 + rnd(&seed) % 300) *
			                       1000000ull;
		}
		if (now >= next_cancel && __atomic_load_n(&active[0], __ATOMIC_RELAXED)) {
			cancel_cycle(&sleepers[rnd(&seed) % NSLEEPERS], rnd(&seed) % 3, limit_ns);
			cancels++;
			next_cancel = now + (2 + rnd(&seed) % 10) * 1000000ull;
		}
		usleep(1000);
	}

	if (__atomic_load_n(&failed, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&failed, __ATOMIC_ACQUIRE) != 2)
			usleep(100);
		ck_abort_msg("%s", fail_msg);  /* threads may be stuck: no joins */
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < NWORKERS; k++)
		ck_assert_msg(join_within(wk[k], limit_ns * 5), "worker %d did not stop: %s", k,
		              failed ? fail_msg : "");
	for (int k = 0; k < NSLEEPERS; k++) {
		__atomic_store_n(&sleepers[k].release, 1, __ATOMIC_RELEASE);
		proxylock_mutex_lock(&locks[0]);
		proxylock_cond_broadcast(&cv_sleep);
		proxylock_mutex_unlock(&locks[0]);
		ck_assert_msg(join_within(sleepers[k].th, limit_ns * 5), "sleeper %d did not stop", k);
	}
	__atomic_store_n(&watchdog_stop, 1, __ATOMIC_RELAXED);
	pthread_join(wd, &stuck);
	ck_assert_msg(!failed, "%s", fail_msg);
	for (int i = 0; i < NLOCKS; i++) {
		ck_assert_uint_eq(guarded[i], acquisitions[i]);
		ck_assert_int_eq(proxylock_mutex_owner(&locks[i]), 0);
		ck_assert_int_eq(proxylock_mutex_destroy(&locks[i]), 0);
	}
	ck_assert_uint_eq(produced, consumed + (unsigned long)tokens);
	ck_assert_msg(under_valgrind() || ops_done >= want,
	              "only %lu of %lu operations in %llu s", ops_done, want,
	              (unsigned long long)(max_run_ns / 1000000000ull));
	fprintf(stderr, "stress: %lu ops, %u cancellations, %lu tokens moved, %.1f s\n",
	        ops_done, cancels, consumed, (double)(mono_ns() - t0) / 1e9);
}
END_TEST

static Suite *stress_suite(void)
{
	Suite *s = suite_create("stress");
	TCase *tc = tcase_create("stress");

	tcase_set_timeout(tc, 280);
	tcase_add_test(tc, no_waiter_sleeps_on_a_free_lock_and_exclusion_and_predicates_hold_under_stress);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(stress_suite)

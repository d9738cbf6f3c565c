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
 * seen free at every sample over that window, and it is asleep (a woken
 * thread the scheduler has not run yet is runnable).  The threshold is 100 ms,
 * five of the library's first liveness slices (20 ms), times
 * PLK_STRESS_SLACK (default 1; x20 under PROXYLOCK_TEST_UNDER_VALGRIND=1).
 *
 * PLK_STRESS_OPS: operations in total (default 10^7, ~40 s on 2 cores; the
 * run also stops after 150 s, and must have done at least 10^6).
 */
#include <sys/prctl.h>

#include "helpers.h"

#define NLOCKS 4
#define NWORKERS 6   /* round workers */
#define NCONDW 2     /* condvar producers/consumers */
#define NSLEEPERS 2  /* cancellation victims */
#define MAIN_SLOT (NWORKERS + NCONDW + NSLEEPERS)
#define ROUND_LOCKS 3
#define COND_LOCK 3  /* the condvars' mutex */
#define NSLOTS (MAIN_SLOT + 1)
#define MAX_TOKENS 64

static proxylock_mutex_t locks[NLOCKS];
static int inside[NLOCKS];               /* threads inside L's critical section */
static unsigned long guarded[NLOCKS];    /* plain ++ under L */
static unsigned long acquisitions[NLOCKS]; /* atomic ++ under L */

/* The condvar predicate: tokens, under locks[COND_LOCK]. */
static proxylock_cond_t cv_tokens;
static int tokens;
static unsigned long produced, consumed;

/* Cancellation victims wait on cv_sleep under locks[COND_LOCK], for ever. */
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

static struct first_fail fail;

#define stress_fail(...) first_fail_note(&fail, "stress", __VA_ARGS__)

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

	return s && strtoul(s, NULL, 10) > 0 ? strtoul(s, NULL, 10) : 10000000ul;
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

	blocking_lock(s, COND_LOCK, NULL);
	cs_enter(COND_LOCK, s->tid);
	if (tokens < MAX_TOKENS) {
		tokens++;
		produced++;
	}
	if (how == 0)
		proxylock_cond_broadcast(&cv_tokens);
	else if (how == 1)
		proxylock_cond_signal(&cv_tokens);
	cs_exit(COND_LOCK);
	unlock(COND_LOCK);
	if (how == 2)
		proxylock_cond_signal(&cv_tokens);  /* after the unlock: also legal */
	else if (how == 3)
		proxylock_cond_broadcast(&cv_tokens);
}

static void consume(struct slot *s, unsigned *seed)
{
	struct timespec dl = abstime_in(CLOCK_REALTIME, 50000 + rnd(seed) % 2000000);
	int err = 0;

	blocking_lock(s, COND_LOCK, NULL);
	cs_enter(COND_LOCK, s->tid);
	while (tokens == 0 && err == 0) {
		cs_exit(COND_LOCK);
		err = proxylock_cond_timedwait(&cv_tokens, &locks[COND_LOCK], &dl);
		cs_enter(COND_LOCK, s->tid);  /* back holding the mutex, whatever err is */
		if (err != 0 && err != ETIMEDOUT)
			stress_fail("%s: cond_timedwait: error %d", s->name, err);
	}
	if (tokens < 0 || tokens > MAX_TOKENS)
		stress_fail("condvar predicate broken: %d tokens", tokens);
	if (tokens > 0) {
		tokens--;
		consumed++;
	}
	cs_exit(COND_LOCK);
	unlock(COND_LOCK);
}

/* --- rounds ------------------------------------------------------------ */

/*
 * Locks 0..ROUND_LOCKS-1 see traffic in rounds: a team of TEAM workers,
 * each with a role, on one lock; the round's last member to finish
 * starts the next round on that lock.  So a lock goes quiet the moment
 * its round's work is done, and stays quiet while a member is stuck in
 * a lock call: then the watchdog sees it.  A round: the holder locks,
 * works for hold_ns, unlocks, and retakes it in a burst (a barger); the
 * others queue behind it with lock, a timed lock whose deadline falls
 * within a few microseconds of the holder's unlock (timeouts racing
 * with unlocks), trylock, or a second short hold.
 */
#define TEAM 4

enum role { HOLDER, TIMED, PLAIN, TRY, NROLES };

struct round {
	int lock;
	int left;            /* members not done yet */
	int taken;           /* members that picked up their role */
	enum role roles[TEAM];
	uint64_t hold_ns;
	uint64_t unlock_at;  /* CLOCK_MONOTONIC ns the holder plans to unlock */
	int held;            /* the holder has the lock */
};
static struct round rounds[ROUND_LOCKS];

/* Jobs: (lock, member) pairs waiting for a worker, under jobs_mu. */
static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cv = PTHREAD_COND_INITIALIZER;
static int jobs[ROUND_LOCKS * TEAM], njobs;

static void round_start(int i, unsigned *seed)  /* under jobs_mu */
{
	struct round *r = &rounds[i];

	r->lock = i;
	r->left = TEAM;
	r->taken = 0;
	r->roles[0] = HOLDER;
	for (int k = 1; k < TEAM; k++)
		r->roles[k] = (enum role)(1 + rnd(seed) % (NROLES - 1));
	r->hold_ns = 5000 + rnd(seed) % 60000;
	__atomic_store_n(&r->held, 0, __ATOMIC_RELAXED);
	for (int k = 0; k < TEAM; k++)
		jobs[njobs++] = i;
	pthread_cond_broadcast(&jobs_cv);
}

static int job_take(void)
{
	int i, k;

	pthread_mutex_lock(&jobs_mu);
	while (njobs == 0 && !__atomic_load_n(&stop, __ATOMIC_RELAXED))
		pthread_cond_wait(&jobs_cv, &jobs_mu);
	if (njobs == 0) {
		pthread_mutex_unlock(&jobs_mu);
		return -1;
	}
	/* The holder's job first (it was queued first), then at random. */
	k = rounds[jobs[0]].taken == 0 ? 0 : (int)(mono_ns() % (uint64_t)njobs);
	i = jobs[k];
	jobs[k] = jobs[--njobs];
	pthread_mutex_unlock(&jobs_mu);
	return i;
}

static void job_done(int i, unsigned *seed)
{
	pthread_mutex_lock(&jobs_mu);
	if (--rounds[i].left == 0 && !__atomic_load_n(&stop, __ATOMIC_RELAXED))
		round_start(i, seed);
	pthread_mutex_unlock(&jobs_mu);
}

/* Wait (bounded) for the holder to have the lock, then a little more. */
static void behind_holder(struct round *r, unsigned *seed)
{
	uint64_t end = mono_ns() + 2000000;

	while (!__atomic_load_n(&r->held, __ATOMIC_ACQUIRE) && mono_ns() < end)
		sched_yield();
	burn_ns(rnd(seed) % 3000);
}

static struct timespec mono_abs(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	return ts;
}

static unsigned long play(struct slot *s, struct round *r, enum role role, unsigned *seed)
{
	int i = r->lock;
	unsigned long ops = 1;

	switch (role) {
	case HOLDER: {
		int n = (int)(rnd(seed) % 24);

		blocking_lock(s, i, NULL);
		cs_enter(i, s->tid);
		__atomic_store_n(&r->unlock_at, mono_ns() + r->hold_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&r->held, 1, __ATOMIC_RELEASE);
		burn_ns(r->hold_ns);
		cs_exit(i);
		unlock(i);
		for (int k = 0; k < n; k++, ops++) {  /* barge straight back in */
			blocking_lock(s, i, NULL);
			cs_enter(i, s->tid);
			cs_exit(i);
			unlock(i);
		}
		break;
	}
	case TIMED: {
		struct timespec dl;
		int err;

		behind_holder(r, seed);
		if (rnd(seed) & 1) {  /* due within +-4 us of the holder's unlock */
			uint64_t at = __atomic_load_n(&r->unlock_at, __ATOMIC_RELAXED);

			dl = mono_abs(at + rnd(seed) % 8000 - 4000);
			publish(s, i);
			err = proxylock_mutex_clocklock(&locks[i], CLOCK_MONOTONIC, &dl);
			unpublish(s);
			if (err != 0 && err != ETIMEDOUT)
				stress_fail("%s: clocklock of lock %d: error %d", s->name, i, err);
		} else {  /* attempts of 1 us to ~1.3 ms */
			int n = 1 + (int)(rnd(seed) % 8);

			for (int k = 0; k < n; k++, ops++) {
				dl = abstime_in(CLOCK_REALTIME, (1000L << (rnd(seed) % 11)) +
				                                (long)(rnd(seed) % 20000));
				if ((err = blocking_lock(s, i, &dl)) == 0 && k + 1 < n) {
					cs_enter(i, s->tid);
					cs_exit(i);
					unlock(i);
				}
			}
		}
		if (err == 0) {
			cs_enter(i, s->tid);
			cs_exit(i);
			unlock(i);
		}
		break;
	}
	case PLAIN: {  /* a run of holds: back in line as soon as out */
		int n = 1 + (int)(rnd(seed) % 16);

		behind_holder(r, seed);
		for (int k = 0; k < n; k++, ops++) {
			blocking_lock(s, i, NULL);
			cs_enter(i, s->tid);
			burn_ns(rnd(seed) % 20000);
			cs_exit(i);
			unlock(i);
		}
		break;
	}
	case TRY:
		behind_holder(r, seed);
		for (int k = 0; k < 4; k++, ops++) {
			int err = proxylock_mutex_trylock(&locks[i]);

			if (err == 0) {
				cs_enter(i, s->tid);
				cs_exit(i);
				unlock(i);
			} else if (err != EBUSY) {
				stress_fail("%s: trylock of lock %d: error %d", s->name, i, err);
			}
		}
		break;
	default:
		break;
	}
	return ops;
}

/* Round workers; a third of them pinned, so waiters lend CPU affinity. */
static void *worker(void *arg)
{
	struct slot *s = arg;
	int idx = (int)(s - slots);
	unsigned seed = (unsigned)idx * 2654435761u + 17;
	unsigned long ops = 0;

	s->tid = gettid_();
	prctl(PR_SET_TIMERSLACK, 1ul);  /* timeouts as sharp as the kernel makes them */
	if (idx % 3 == 0 && sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET((idx / 3) % 2, &cpus);
		(void)sched_setaffinity(0, sizeof(cpus), &cpus);  /* best effort */
	}
	for (;;) {
		int i = job_take(), k;
		enum role role;

		if (i < 0)
			break;
		pthread_mutex_lock(&jobs_mu);
		k = rounds[i].taken++;
		role = rounds[i].roles[k];
		pthread_mutex_unlock(&jobs_mu);
		ops += play(s, &rounds[i], role, &seed);
		job_done(i, &seed);
		if (ops >= 64) {
			__atomic_fetch_add(&ops_done, ops, __ATOMIC_RELAXED);
			ops = 0;
		}
	}
	__atomic_fetch_add(&ops_done, ops, __ATOMIC_RELAXED);
	return NULL;
}

/* Condvar traffic on COND_LOCK: produce and consume, with pauses. */
static void *cond_worker(void *arg)
{
	struct slot *s = arg;
	unsigned seed = (unsigned)(s - slots) * 747796405u + 3;
	unsigned long ops = 0;

	s->tid = gettid_();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned r = rnd(&seed) % 8;

		if (r < 3)
			produce(s, &seed);
		else if (r < 6)
			consume(s, &seed);
		else
			usleep(rnd(&seed) % 500);
		ops++;
	}
	__atomic_fetch_add(&ops_done, ops, __ATOMIC_RELAXED);
	return NULL;
}

/* --- cancellation victims --------------------------------------------- */

struct sleeper {
	struct slot *slot;
	pthread_t th;
	int waiting;   /* in its wait loop */
	int in_cs;     /* holds locks[COND_LOCK], inside the section */
	int cleaned;   /* its cleanup handler ran, with the mutex */
	int release;
};
static struct sleeper sleepers[NSLEEPERS];

/* Cancelled in cond_wait: POSIX has the mutex retaken before this runs. */
static void sleeper_cleanup(void *arg)
{
	struct sleeper *sl = arg;
	pid_t owner = proxylock_mutex_owner(&locks[COND_LOCK]);

	if (owner != sl->slot->tid) {
		stress_fail("%s (tid %d) cancelled in cond_wait: its cleanup handler runs without the "
		     "mutex (owner %d)", sl->slot->name, sl->slot->tid, owner);
		return;
	}
	if (!sl->in_cs)
		cs_enter(COND_LOCK, sl->slot->tid);
	cs_exit(COND_LOCK);
	unlock(COND_LOCK);
	__atomic_store_n(&sl->cleaned, 1, __ATOMIC_RELEASE);
}

static void *sleeper(void *arg)
{
	struct sleeper *sl = arg;

	sl->slot->tid = gettid_();
	blocking_lock(sl->slot, COND_LOCK, NULL);
	cs_enter(COND_LOCK, sl->slot->tid);
	sl->in_cs = 1;
	pthread_cleanup_push(sleeper_cleanup, sl);
	__atomic_store_n(&sl->waiting, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sl->release, __ATOMIC_ACQUIRE)) {
		int err;

		sl->in_cs = 0;
		cs_exit(COND_LOCK);
		err = proxylock_cond_wait(&cv_sleep, &locks[COND_LOCK]);
		cs_enter(COND_LOCK, sl->slot->tid);
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
		blocking_lock(me, COND_LOCK, NULL);
		cs_enter(COND_LOCK, me->tid);
		proxylock_cond_broadcast(&cv_sleep);
		cs_exit(COND_LOCK);
		if (how == 2)
			pthread_cancel(sl->th);
		unlock(COND_LOCK);
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
			/* A waiter that was woken but is not being run (a loaded
			 * machine) is runnable, not asleep: not a lost wake-up. */
			if (!thread_sleeping(slots[k].tid))
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
	pthread_t wk[NWORKERS], cw[NCONDW], wd;
	uint64_t t0 = mono_ns(), next_cancel = t0;
	uint64_t limit_ns = (uint64_t)(2e9 * slack()), max_run_ns = 150ull * 1000000000ull;
	unsigned long want = ops_wanted(), rounds_ops;
	unsigned seed = 4242, cancels = 0;

	threshold_ns = (uint64_t)(100e6 * slack());
	for (int i = 0; i < NLOCKS; i++)
		proxylock_mutex_init(&locks[i], NULL);
	proxylock_cond_init(&cv_tokens, CLOCK_REALTIME);
	proxylock_cond_init(&cv_sleep, CLOCK_MONOTONIC);
	for (int k = 0; k < NSLOTS; k++)
		snprintf(slots[k].name, sizeof(slots[k].name), "%s %d",
		         k < NWORKERS ? "worker" : k < NWORKERS + NCONDW ? "cond worker"
		         : k < MAIN_SLOT ? "cond sleeper" : "main",
		         k < NWORKERS ? k : k < NWORKERS + NCONDW ? k - NWORKERS
		         : k - NWORKERS - NCONDW);
	slots[MAIN_SLOT].tid = gettid_();
	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_mutex_lock(&jobs_mu);
	for (int i = 0; i < ROUND_LOCKS; i++)
		round_start(i, &seed);
	pthread_mutex_unlock(&jobs_mu);
	for (int k = 0; k < NWORKERS; k++)
		pthread_create(&wk[k], NULL, worker, &slots[k]);
	for (int k = 0; k < NCONDW; k++)
		pthread_create(&cw[k], NULL, cond_worker, &slots[NWORKERS + k]);
	for (int k = 0; k < NSLEEPERS; k++) {
		sleepers[k].slot = &slots[NWORKERS + NCONDW + k];
		sleeper_start(&sleepers[k]);
	}

	/* Cancel condvar waiters now and then, until the work is done. */
	while (!__atomic_load_n(&fail.state, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&ops_done, __ATOMIC_RELAXED) < want &&
	       mono_ns() - t0 < max_run_ns) {
		if (mono_ns() >= next_cancel) {
			cancel_cycle(&sleepers[rnd(&seed) % NSLEEPERS], rnd(&seed) % 3, limit_ns);
			cancels++;
			next_cancel = mono_ns() + (1 + rnd(&seed) % 10) * 1000000ull;
		}
		usleep(1000);
	}

	if (__atomic_load_n(&fail.state, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&fail.state, __ATOMIC_ACQUIRE) != 2)
			usleep(100);
		ck_abort_msg("%s", fail.msg);  /* threads may be stuck: no joins */
	}
	rounds_ops = __atomic_load_n(&ops_done, __ATOMIC_RELAXED);
	pthread_mutex_lock(&jobs_mu);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&jobs_cv);
	pthread_mutex_unlock(&jobs_mu);
	for (int k = 0; k < NWORKERS; k++)
		ck_assert_msg(join_within(wk[k], limit_ns * 5), "worker %d did not stop", k);
	for (int k = 0; k < NCONDW; k++)
		ck_assert_msg(join_within(cw[k], limit_ns * 5), "cond worker %d did not stop", k);
	for (int k = 0; k < NSLEEPERS; k++) {
		__atomic_store_n(&sleepers[k].release, 1, __ATOMIC_RELEASE);
		proxylock_mutex_lock(&locks[COND_LOCK]);
		proxylock_cond_broadcast(&cv_sleep);
		proxylock_mutex_unlock(&locks[COND_LOCK]);
		ck_assert_msg(join_within(sleepers[k].th, limit_ns * 5), "sleeper %d did not stop", k);
	}
	__atomic_store_n(&watchdog_stop, 1, __ATOMIC_RELAXED);
	pthread_join(wd, NULL);
	ck_assert_msg(!fail.state, "%s", fail.msg);
	for (int i = 0; i < NLOCKS; i++) {
		ck_assert_uint_eq(guarded[i], acquisitions[i]);
		ck_assert_int_eq(proxylock_mutex_owner(&locks[i]), 0);
		ck_assert_int_eq(proxylock_mutex_destroy(&locks[i]), 0);
	}
	ck_assert_uint_eq(produced, consumed + (unsigned long)tokens);
	ck_assert_msg(under_valgrind() || rounds_ops >= (want < 1000000 ? want : 1000000),
	              "only %lu of %lu operations in %llu s", rounds_ops, want,
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

/* SPDX-License-Identifier: MIT */
/*
 * bucketinv.h - "the inversion inside the cure" (issue 13), shared by the
 * benchmark (bench/bucketbench.c) and the unit test
 * (test/test_bucket_inversion.c).
 *
 * Two proxylocks, A and B, are picked so that their addresses hash to the
 * same wait-queue bucket (lib/waitq.c, bucket_of()), and a lock C that
 * does not (the split control).  On CPU 1, s->hogs CPU hogs (nice 0) run
 * beside a weak thread W (nice 19, or SCHED_IDLE) that takes A over and
 * over against a partner P (nice 0, pinned to CPU 0) which holds A while
 * it runs: W blocks on A and lends P its context, i.e. runs the donation
 * slow path under A's bucket lock, the part that today makes sched_*
 * calls there.  A waiter lends CPUs only to a holder it outranks (lend.c,
 * issue 30), so W lends P anything (CPU 1 and its policy) only with
 * partner_idle (P SCHED_IDLE) and W not SCHED_IDLE; else W still runs
 * the slow path under the bucket, but lends nothing.  Moving
 * a running P makes W wait for the migration inside sched_setaffinity,
 * and W, which burns CPU between its attempts and so has used up its
 * small share of CPU 1, then waits for the hog to let it back: with the
 * bucket held.  On CPU 0, two nice -10 threads take B in turn on a fixed
 * timetable, the measured one always finding B held by the other (which
 * sleeps in its critical section), so each of its acquisitions is
 * contended and goes through the same bucket, as does the other's unlock.
 *
 * Measured: the delay of each acquisition of B, from the moment it was
 * due on the timetable (its call, when on time) to lock's return: that
 * is call-to-return corrected for coordinated omission, so a stall of
 * 50 ms counts as the 50 ms of acquisitions it held up, not as one
 * sample.  The raw call-to-return delay is kept as well.  Baseline: the
 * same, with W and P idle (the hogs still run).
 *
 * Header-only; needs the public API only (proxylock.h), and
 * ../lib/sched_attr.h for the raw sched_setattr.
 */
#ifndef PLK_BUCKETINV_H
#define PLK_BUCKETINV_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proxylock.h"
#include "../lib/sched_attr.h"
#include "waitq.h"

/*
 * A copy of lib/waitq.c's bucket_of(): addresses >> 2, times the 64-bit
 * golden-ratio constant, top PLK_WAITQ_SHIFT (8) bits.  The unit test
 * checks the copy against the library (plk_waitq_lock's bucket).
 */
#define BINV_WAITQ_SHIFT 8
#define BINV_NLOCKS 1024          /* candidates: > 256 buckets, so two collide */
#define BINV_MAX_SAMPLES 200000
#define BINV_MAX_HOGS 4

/* One lock per cache line, so A and B share a bucket, never a line. */
union binv_lock {
	proxylock_mutex_t m;
	char pad[64];
} __attribute__((aligned(64)));

/* Configuration and results of one run. */
struct binv {
	/* set by the caller */
	bool weak_active;     /* false: baseline, W and P stay idle */
	bool weak_idle;       /* W runs SCHED_IDLE instead of nice 19 */
	bool partner_idle;    /* P runs SCHED_IDLE, so W's lend has a nice part too */
	int hogs;             /* CPU hogs on CPU 1, 1..BINV_MAX_HOGS */
	bool split;           /* control: W and P use lock c, in another bucket */
	int ms;               /* measured time */
	/* the locks (binv_pick): a and b share a bucket, c does not */
	proxylock_mutex_t *a, *b, *c;
	/* results */
	uint64_t delay[BINV_MAX_SAMPLES];  /* B: due to return, ns */
	uint64_t raw[BINV_MAX_SAMPLES];    /* B: call to return, ns */
	int n;
	uint64_t weak_lends;  /* W's contended acquisitions of A */
	struct proxylock_stats st0, st1;  /* library counters around the run */
	/* internal */
	int stop;
	int go;               /* 0 until every thread is set up */
	uint64_t grid;        /* the B pair's timetable starts here */
};

static inline uint64_t binv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Bucket index of @p, as lib/waitq.c computes it. */
static inline unsigned binv_bucket(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	a = (a >> 2) * 0x9E3779B97F4A7C15ull;
	return (unsigned)(a >> (64 - BINV_WAITQ_SHIFT));
}

/* Point s->a, s->b at two of @locks (BINV_NLOCKS) in one bucket, s->c
 * at one in another. */
static inline bool binv_pick(struct binv *s, union binv_lock *locks)
{
	static int seen[1 << BINV_WAITQ_SHIFT];

	memset(seen, -1, sizeof(seen));
	for (int i = 0; i < BINV_NLOCKS; i++) {
		unsigned k = binv_bucket(&locks[i].m);

		if (seen[k] >= 0) {
			s->a = &locks[seen[k]].m;
			s->b = &locks[i].m;
			s->c = &locks[binv_bucket(&locks[0].m) == k ? 1 : 0].m;
			if (binv_bucket(s->c) == k)
				return false;
			proxylock_mutex_init(s->a, NULL);
			proxylock_mutex_init(s->b, NULL);
			proxylock_mutex_init(s->c, NULL);
			return true;
		}
		seen[k] = i;
	}
	return false;
}

/* Pin the caller to @cpu and set its policy and nice (raw syscalls). */
static inline void binv_context(int cpu, int policy, int nice)
{
	struct plk_sched_attr a = { .sched_policy = (uint32_t)policy, .sched_nice = nice };
	int err;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (syscall(SYS_sched_setaffinity, 0, sizeof(set), &set) != 0)
		perror("bucketinv: sched_setaffinity");
	if ((err = plk_sched_setattr(0, &a)) != 0)
		fprintf(stderr, "bucketinv: sched_setattr: %s\n", strerror(err));
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  /* sleeps end on time */
}

static inline bool binv_running(struct binv *s)
{
	return !__atomic_load_n(&s->stop, __ATOMIC_RELAXED);
}

/* The lock W and P fight over: A, or C for the split control. */
static inline proxylock_mutex_t *binv_weak_lock(const struct binv *s)
{
	return s->split ? s->c : s->a;
}

static inline void binv_wait_go(struct binv *s)
{
	while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) && binv_running(s))
		usleep(1000);
}

static inline void binv_burn(uint64_t ns)
{
	uint64_t end = binv_now() + ns;

	while (binv_now() < end)
		;
}

static inline void binv_sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

/* A CPU hog: nice 0 on CPU 1. */
static void *binv_hog(void *p)
{
	struct binv *s = p;

	binv_context(1, SCHED_OTHER, 0);
	while (binv_running(s))
		binv_burn(100000);
	return NULL;
}

/* The weak thread W: CPU 1, nice 19 or SCHED_IDLE; contended A, then burn. */
static void *binv_weak(void *p)
{
	struct binv *s = p;
	proxylock_mutex_t *a = binv_weak_lock(s);

	binv_context(1, s->weak_idle ? SCHED_IDLE : SCHED_OTHER, 19);
	binv_wait_go(s);
	while (binv_running(s)) {
		if (proxylock_mutex_trylock(a) == 0) {
			proxylock_mutex_unlock(a);  /* P is between holds: not a lend */
		} else {
			proxylock_mutex_lock(a);
			s->weak_lends++;
			proxylock_mutex_unlock(a);
		}
		binv_burn(30000);  /* spend the share: be preempted anywhere */
	}
	return NULL;
}

#define BINV_PARTNER_HOLD_NS 100000ull
#define BINV_PARTNER_GAP_US 200

/* The partner P: CPU 0, nice 0 (or SCHED_IDLE); holds A while it runs. */
static void *binv_partner(void *p)
{
	struct binv *s = p;
	proxylock_mutex_t *a = binv_weak_lock(s);

	binv_context(0, s->partner_idle ? SCHED_IDLE : SCHED_OTHER, 0);
	binv_wait_go(s);
	while (binv_running(s)) {
		proxylock_mutex_lock(a);
		binv_burn(BINV_PARTNER_HOLD_NS);  /* running: a move needs the stopper */
		proxylock_mutex_unlock(a);
		usleep(BINV_PARTNER_GAP_US);
	}
	return NULL;
}

/*
 * The B pair's timetable: thread 0 takes B at 0, P, 2P... and holds it
 * for BINV_HOLD_NS (asleep); thread 1 is due BINV_OFFSET_NS later, while
 * B is held, so each of its acquisitions is contended (sleeps in the
 * bucket's queue, and thread 0's unlock wakes it through the bucket),
 * and both holds end well within the period.  Thread 1's acquisitions
 * are the samples.
 */
#define BINV_PERIOD_NS 500000ull
#define BINV_OFFSET_NS 100000ull
#define BINV_HOLD_NS 150000ull
/* Latency-sensitive threads: above the rest of a shared machine, which
 * keeps the baseline quiet; no help against a bucket held by W (an
 * internal lock lends nothing). */
#define BINV_B_NICE (-10)

struct binv_b {
	struct binv *s;
	int k;                /* 0 holds B when 1 is due; 1 is measured */
	pthread_mutex_t *mu;  /* guards s->n */
};

/* Record @d, and, as HdrHistogram's expected-interval correction does,
 * the acquisitions a stall of @d kept from being made: d - P, d - 2P... */
static inline void binv_record(struct binv *s, uint64_t d, uint64_t raw)
{
	for (uint64_t x = d; s->n < BINV_MAX_SAMPLES; x -= BINV_PERIOD_NS) {
		s->delay[s->n] = x;
		s->raw[s->n++] = raw;
		if (x <= BINV_PERIOD_NS)
			break;
	}
}

/* A thread of the B pair: CPU 0, nice BINV_B_NICE, B on a timetable.  Both
 * timetables are slots of one grid (start + i P + k offset); a thread
 * that is late skips to its next slot, so a stall is not followed by a
 * catch-up that would delay every acquisition after it. */
static void *binv_b_thread(void *p)
{
	struct binv_b *bt = p;
	struct binv *s = bt->s;
	uint64_t start, due;

	binv_context(0, SCHED_OTHER, BINV_B_NICE);
	binv_wait_go(s);
	start = __atomic_load_n(&s->grid, __ATOMIC_RELAXED) + (uint64_t)bt->k * BINV_OFFSET_NS;
	due = start;
	while (binv_running(s)) {
		uint64_t t0, t1, now;
		bool timed;

		binv_sleep_until(due);
		timed = binv_running(s);  /* a stall across the end still counts */
		t0 = binv_now();
		proxylock_mutex_lock(s->b);
		t1 = binv_now();
		binv_sleep_until(t1 + BINV_HOLD_NS);
		proxylock_mutex_unlock(s->b);
		if (bt->k == 1 && timed) {
			pthread_mutex_lock(bt->mu);
			binv_record(s, t1 - due, t1 - t0);
			pthread_mutex_unlock(bt->mu);
		}
		now = binv_now();
		due += BINV_PERIOD_NS;
		if (due < now)
			due = start + ((now - start) / BINV_PERIOD_NS + 1) * BINV_PERIOD_NS;
	}
	return NULL;
}

/* Run the scenario described by @s (a, b picked) for s->ms. */
static inline void binv_run(struct binv *s)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct binv_b bts[2] = { { s, 0, &mu }, { s, 1, &mu } };
	pthread_t hog[BINV_MAX_HOGS], w, pt, bt[2];
	int hogs = s->hogs < 1 ? 1 : s->hogs > BINV_MAX_HOGS ? BINV_MAX_HOGS : s->hogs;

	s->stop = s->go = 0;
	s->n = 0;
	s->weak_lends = 0;
	for (int i = 0; i < hogs; i++)
		pthread_create(&hog[i], NULL, binv_hog, s);
	if (s->weak_active) {
		pthread_create(&w, NULL, binv_weak, s);
		pthread_create(&pt, NULL, binv_partner, s);
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&bt[i], NULL, binv_b_thread, &bts[i]);
	usleep(50000);  /* contexts set, hogs own CPU 1 */
	proxylock_stats_get(&s->st0);
	s->grid = binv_now() + 1000000;
	__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
	usleep((useconds_t)s->ms * 1000);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(bt[i], NULL);
	if (s->weak_active) {
		pthread_join(w, NULL);
		pthread_join(pt, NULL);
	}
	proxylock_stats_get(&s->st1);
	for (int i = 0; i < hogs; i++)
		pthread_join(hog[i], NULL);
}

/* Do locks @a and @b hash to the same bucket, asked of the library itself? */
static inline bool binv_same_bucket(const void *a, const void *b)
{
	struct plk_bucket *ba = plk_waitq_lock(a), *bb;

	plk_waitq_unlock(ba);
	bb = plk_waitq_lock(b);
	plk_waitq_unlock(bb);
	return ba == bb;
}

static int binv_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The @p-th percentile (0..100) of @n samples, sorted in place; 0 if none. */
static inline uint64_t binv_pct(uint64_t *v, int n, int p)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), binv_cmp);
	return v[(size_t)(n - 1) * (size_t)p / 100];
}

/* sched_setattr + sched_setaffinity calls per contended acquisition. */
static inline double binv_calls_per_contended(const struct binv *s)
{
	uint64_t c = s->st1.contended - s->st0.contended;
	uint64_t calls = s->st1.setattr_calls + s->st1.setaff_calls -
	                 s->st0.setattr_calls - s->st0.setaff_calls;

	return c ? (double)calls / (double)c : 0;
}

#endif /* PLK_BUCKETINV_H */

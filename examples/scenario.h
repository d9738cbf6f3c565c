/* SPDX-License-Identifier: MIT */
/*
 * scenario.h - the utilization-inversion scenario, shared by the demo
 * (examples/inversion.c) and the benchmarks (bench/proxybench.c).
 *
 * The "little" CPU 1 is saturated by a CPU hog.  A small task (nice 19,
 * pinned to CPU 1, uclamp_max 128 where the kernel has uclamp) holds a
 * lock for a CPU-bound critical section of SCENARIO_CS_CPU_NS.  A big task
 * (nice 0, pinned to CPU 0, uclamp_min 1024 where supported) takes the
 * lock every millisecond.  Without donation the big task waits for the
 * small one to crawl through its critical section on the busy CPU; with
 * it, the small task runs, while the big one waits, with the big one's
 * context: its CPU, its nice, its clamps.
 *
 * The reader-writer variant (bench/proxybench_inversion.c's
 * inversion-rw): with rdlock set, nsmall small tasks hold the lock for
 * reading (rdlock) and the big one takes it for writing (lock).
 *
 * The reverse scenario (bench/proxybench_inversion.c's
 * inversion-reverse, issue 30): two hogs saturate CPU 1; a foreground
 * task (nice 0, pinned alone to CPU 0, uclamp_min 1024 where supported)
 * holds the lock for CPU-bound sections of SCENARIO_CS_CPU_NS; a
 * background task (nice 19, pinned to CPU 1, uclamp_max 128) takes it
 * every few milliseconds.  The background waiter does not outrank the
 * holder, so it must lend it nothing: the holder's sections stay as long
 * as with no background task, and it never runs off CPU 0.
 *
 * Header-only: each user supplies the lock through two function pointers.
 */
#ifndef PLK_SCENARIO_H
#define PLK_SCENARIO_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../lib/sched_attr.h"  /* the raw sched_setattr (glibc 2.36 has none) */

#define SCENARIO_CS_CPU_NS (2 * 1000 * 1000)  /* the physical limit */
#define SCENARIO_MAX_SAMPLES 20000
#define SCENARIO_MAX_SMALL 4

struct scenario {
	int (*lock)(void *);
	int (*unlock)(void *);
	void *m;
	int (*rdlock)(void *);   /* set: the small tasks take m with it (readers) */
	int nsmall;              /* small tasks, 1..SCENARIO_MAX_SMALL (0: 1) */
	bool uclamp;             /* the kernel has uclamp: set clamps too */
	int stop;
	int nwaits, ncs;
	uint64_t waits[SCENARIO_MAX_SAMPLES];  /* the big task's lock waits, ns */
	uint64_t walls[SCENARIO_MAX_SAMPLES];  /* critical sections, wall ns */
	uint64_t cpus[SCENARIO_MAX_SAMPLES];   /* critical sections, CPU ns */
	uint64_t sched_calls;    /* the scenario's own scheduler calls */
	bool background;         /* reverse: run the background waiter */
	int off_cpu;             /* reverse: sections seen off CPU 0 */
};

static inline uint64_t scenario_clock(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void scenario_pin(struct scenario *s, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("sched_setaffinity");
	__atomic_fetch_add(&s->sched_calls, 1, __ATOMIC_RELAXED);
}

/* Set the calling thread's nice and, where the kernel has uclamp, clamps. */
static inline void scenario_context(struct scenario *s, int nice, int umin, int umax)
{
	struct plk_sched_attr a = { .sched_policy = SCHED_OTHER, .sched_nice = nice };
	int err;

	if ((err = plk_sched_setattr(0, &a)) != 0)
		fprintf(stderr, "sched_setattr(nice): %s\n", strerror(err));
	__atomic_fetch_add(&s->sched_calls, 1, __ATOMIC_RELAXED);
	if (s->uclamp) {
		a.sched_flags = PLK_SCHED_FLAG_UTIL_CLAMP;
		a.sched_util_min = (uint32_t)umin;
		a.sched_util_max = (uint32_t)umax;
		if ((err = plk_sched_setattr(0, &a)) != 0)
			fprintf(stderr, "sched_setattr(uclamp): %s\n", strerror(err));
		__atomic_fetch_add(&s->sched_calls, 1, __ATOMIC_RELAXED);
	}
}

static inline bool scenario_running(struct scenario *s)
{
	return !__atomic_load_n(&s->stop, __ATOMIC_RELAXED);
}

static void *scenario_hog(void *p)
{
	struct scenario *s = p;

	scenario_pin(s, 1);
	scenario_context(s, 0, 0, 1024);
	while (scenario_running(s))
		;
	return NULL;
}

static void *scenario_small(void *p)
{
	struct scenario *s = p;

	scenario_pin(s, 1);
	scenario_context(s, 19, 0, 128);
	while (scenario_running(s)) {
		uint64_t t0, c0, c1;
		int i;

		(s->rdlock ? s->rdlock : s->lock)(s->m);
		t0 = scenario_clock(CLOCK_MONOTONIC);
		c0 = scenario_clock(CLOCK_THREAD_CPUTIME_ID);
		while ((c1 = scenario_clock(CLOCK_THREAD_CPUTIME_ID)) - c0 < SCENARIO_CS_CPU_NS)
			;
		/* Readers hold together: each claims its sample's index. */
		i = __atomic_fetch_add(&s->ncs, 1, __ATOMIC_RELAXED);
		if (i < SCENARIO_MAX_SAMPLES) {
			s->walls[i] = scenario_clock(CLOCK_MONOTONIC) - t0;
			s->cpus[i] = c1 - c0;
		}
		s->unlock(s->m);
		usleep(500);
	}
	return NULL;
}

static void *scenario_big(void *p)
{
	struct scenario *s = p;

	scenario_pin(s, 0);
	scenario_context(s, 0, 1024, 1024);
	while (scenario_running(s)) {
		uint64_t t0 = scenario_clock(CLOCK_MONOTONIC);

		s->lock(s->m);
		if (s->nwaits < SCENARIO_MAX_SAMPLES)
			s->waits[s->nwaits++] = scenario_clock(CLOCK_MONOTONIC) - t0;
		s->unlock(s->m);
		usleep(1000);
	}
	return NULL;
}

/* Run the scenario on @s (lock, unlock, m, uclamp filled in) for @ms. */
static inline void scenario_run(struct scenario *s, int ms)
{
	pthread_t th[2 + SCENARIO_MAX_SMALL];
	int n = 0, nsmall = s->nsmall < 1 ? 1 : s->nsmall > SCENARIO_MAX_SMALL
	                                        ? SCENARIO_MAX_SMALL : s->nsmall;

	s->stop = 0;
	s->nwaits = s->ncs = 0;
	pthread_create(&th[n++], NULL, scenario_hog, s);
	usleep(50000);  /* let the hog own CPU 1 */
	for (int i = 0; i < nsmall; i++)
		pthread_create(&th[n++], NULL, scenario_small, s);
	pthread_create(&th[n++], NULL, scenario_big, s);
	usleep((useconds_t)ms * 1000);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (s->ncs > SCENARIO_MAX_SAMPLES)
		s->ncs = SCENARIO_MAX_SAMPLES;
}

/* The reverse scenario's foreground holder: walls[] are its sections. */
static void *scenario_fore(void *p)
{
	struct scenario *s = p;

	scenario_pin(s, 0);
	scenario_context(s, 0, 1024, 1024);
	while (scenario_running(s)) {
		uint64_t t0, c0, c1;
		bool off = false;

		s->lock(s->m);
		t0 = scenario_clock(CLOCK_MONOTONIC);
		c0 = scenario_clock(CLOCK_THREAD_CPUTIME_ID);
		while ((c1 = scenario_clock(CLOCK_THREAD_CPUTIME_ID)) - c0 < SCENARIO_CS_CPU_NS)
			off |= sched_getcpu() != 0;
		if (s->ncs < SCENARIO_MAX_SAMPLES) {
			s->walls[s->ncs] = scenario_clock(CLOCK_MONOTONIC) - t0;
			s->cpus[s->ncs++] = c1 - c0;
		}
		s->off_cpu += off;
		s->unlock(s->m);
		usleep(500);
	}
	return NULL;
}

/* The reverse scenario's background waiter: now and then, the lock. */
static void *scenario_background(void *p)
{
	struct scenario *s = p;

	scenario_pin(s, 1);
	scenario_context(s, 19, 0, 128);
	while (scenario_running(s)) {
		usleep(3000);
		s->lock(s->m);
		__atomic_fetch_add(&s->nwaits, 1, __ATOMIC_RELAXED);
		s->unlock(s->m);
	}
	return NULL;
}

/* Run the reverse scenario on @s (lock, unlock, m, uclamp, background
 * filled in) for @ms: walls/cpus/ncs are the holder's sections, off_cpu
 * how many of them ran off CPU 0, nwaits the background's acquisitions. */
static inline void scenario_reverse_run(struct scenario *s, int ms)
{
	pthread_t th[4];
	int n = 0;

	s->stop = 0;
	s->nwaits = s->ncs = s->off_cpu = 0;
	pthread_create(&th[n++], NULL, scenario_hog, s);
	pthread_create(&th[n++], NULL, scenario_hog, s);
	usleep(50000);  /* let the hogs own CPU 1 */
	if (s->background)
		pthread_create(&th[n++], NULL, scenario_background, s);
	pthread_create(&th[n++], NULL, scenario_fore, s);
	usleep((useconds_t)ms * 1000);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static int scenario_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The @p-th percentile of @n samples (sorted in place), 0 if none. */
static inline uint64_t scenario_pct(uint64_t *v, int n, int p)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), scenario_cmp_u64);
	return v[(n - 1) * p / 100];
}

#endif /* PLK_SCENARIO_H */

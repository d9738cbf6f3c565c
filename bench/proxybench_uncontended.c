/* SPDX-License-Identifier: MIT */
/*
 * proxybench_uncontended.c - the uncontended lock+unlock pair, with a
 * second (sleeping) thread alive: "uncontended", its time per pair for
 * every contender; "insn", its instructions per pair, bracketed with
 * callgrind's client requests (bench/run divides), or one contender's
 * pairs alone (--only) for perf stat.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csvrow.h"
#include "proxybench.h"
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND_H 1
#endif

static double uncontended_once(const struct impl *im, long n)
{
	union lock_storage s;
	uint64_t t0;

	im->init(im, &s, PROXYLOCK_DONATE_ALL);
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		im->lock(&s);
		__asm__ __volatile__("" ::: "memory");
		im->unlock(&s);
	}
	return (double)(now_ns() - t0) / (double)n;
}

static void *park_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * One lock, one thread taking it, in a process that has a second
 * (sleeping) thread, as every program that needs a mutex has: glibc
 * 2.34+ turns its lock and unlock into plain stores while a process is
 * single-threaded, which no multi-threaded program ever sees (measured
 * here: 3-6 ns a pair single-threaded, 12.7 ns with the second thread).
 */
void bench_uncontended(void)
{
	double v[NIMPL][MAX_REPS];
	long n = (long)cell_ms * 100000;  /* about cell_ms at ~10 ns a pair */
	static pthread_t idle;

	if (!idle && pthread_create(&idle, NULL, park_forever, NULL) != 0) {
		fprintf(stderr, "proxybench: pthread_create failed\n");
		exit(1);
	}

	for (int i = 0; i < NIMPL; i++)
		if (impls[i].available)
			uncontended_once(&impls[i], n / 10);  /* warm up */
	for (int r = 0; r < reps; r++)
		for (int i = 0; i < NIMPL; i++)
			if (impls[i].available)
				v[i][r] = uncontended_once(&impls[i], n);
	for (int i = 0; i < NIMPL; i++)
		if (impls[i].available)
			row("uncontended", impls[i].name, 1, 0, "lock_unlock", v[i], reps, "ns");
}

/* --- insn: instructions per uncontended pair -------------------------- */

static int noop(void *p)
{
	(void)p;
	return 0;
}

/* The harness alone: the loop and the two indirect calls, to subtract. */
static void init_noop(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	(void)s;
}

static __attribute__((noinline)) void insn_loop(const struct impl *im, union lock_storage *s, long n)
{
	for (long i = 0; i < n; i++) {
		im->lock(s);
		__asm__ __volatile__("" ::: "memory");
		im->unlock(s);
	}
}

/*
 * Under valgrind --tool=callgrind: for each contender (and "harness",
 * empty functions through the same pointers), zero callgrind's counts,
 * run @pairs uncontended lock+unlock pairs, and dump the counts with
 * the trigger "insn NAME PAIRS"; bench/run divides.  A second thread
 * sleeps throughout, as in the uncontended workload.  Natively (for
 * perf stat), --only NAME runs one contender's pairs and nothing else.
 */
void bench_insn(void)
{
	static const struct impl harness = { "harness", noop, noop, init_noop, 0, true, NULL };
	static pthread_t idle;
	union lock_storage s;

	if (pthread_create(&idle, NULL, park_forever, NULL) != 0) {
		fprintf(stderr, "proxybench: pthread_create failed\n");
		exit(1);
	}
	usleep(20000);  /* let it reach pause(): its start is not the first contender's */
	for (int i = 0; i <= NIMPL; i++) {
		const struct impl *im = i < NIMPL ? &impls[i] : &harness;
		char trigger[96];

		if (!im->available || (only && strcmp(only, im->name)))
			continue;
		im->init(im, &s, PROXYLOCK_DONATE_ALL);
		insn_loop(im, &s, 1000);  /* warm up: lazy binding, first-use paths */
		snprintf(trigger, sizeof(trigger), "insn %s %ld", im->name, pairs);
#ifdef HAVE_CALLGRIND_H
		CALLGRIND_ZERO_STATS;
#endif
		insn_loop(im, &s, pairs);
#ifdef HAVE_CALLGRIND_H
		CALLGRIND_DUMP_STATS_AT(trigger);
#endif
		printf("# %s\n", trigger);
	}
}

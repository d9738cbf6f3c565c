/* SPDX-License-Identifier: MIT */
/*
 * proxybench_rwlock.c - read-mostly rwlock throughput: glibc's
 * pthread_rwlock, proxylock_rwlock and the interposer's, with 1, 2, 4
 * and 8 threads at 0, 1 and 10% writes over a 64-word table
 * ("rw-readmostly-wW"; "rw-verdict": the same cells in rounds, every
 * round's values to --rounds-out).  A reader that sees a half-written
 * table stops the run.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "csvrow.h"
#include "proxybench.h"

#define RW_WORDS 64
static volatile uint64_t rw_table[RW_WORDS] __attribute__((aligned(64)));

/* The read-mostly cells (threads, write percentages) and their
 * contenders, for rw-readmostly and rw-verdict alike. */
#define RW_NTHREADS 4
#define RW_NWPCTS 3
#define RW_NIMPLS 3
static const int rw_threads[RW_NTHREADS] = { 1, 2, 4, 8 }, rw_wpcts[RW_NWPCTS] = { 0, 1, 10 };
static const int rw_impls[RW_NIMPLS] = { RW_GLIBC, RW_PL, RW_PRELOAD };

/* One cache line each: a thread's rng and count change every operation,
 * and two threads' on one line would add a miss to every operation of
 * every contender. */
struct rw_thread {
	const struct impl *im;
	union lock_storage *lock;
	int wpct;
	int *stop;
	uint64_t rng, count, torn;
} __attribute__((aligned(64)));

/*
 * Each operation is, with probability wpct %, a write (wrlock, store one
 * new value into every word of a 64-word table, unlock), else a read
 * (rdlock, compare every word with the first, unlock): a reader that saw
 * a half-written table counts it in torn, which stops the run.
 */
static void *rw_thread(void *p)
{
	struct rw_thread *c = p;

	while (!__atomic_load_n(c->stop, __ATOMIC_RELAXED)) {
		c->rng ^= c->rng << 13;
		c->rng ^= c->rng >> 7;
		c->rng ^= c->rng << 17;
		if ((int)(c->rng % 100) < c->wpct) {
			c->im->lock(c->lock);
			uint64_t x = rw_table[0] + 1;

			for (int k = 0; k < RW_WORDS; k++)
				rw_table[k] = x;
		} else {
			c->im->rdlock(c->lock);
			uint64_t x = rw_table[0];

			for (int k = 1; k < RW_WORDS; k++)
				c->torn += rw_table[k] != x;
		}
		c->im->unlock(c->lock);
		c->count++;
	}
	return NULL;
}

/* One cell: operations per second of @nthreads threads. */
static double rw_once(const struct impl *im, int nthreads, int wpct)
{
	static union lock_storage lock;
	static struct rw_thread c[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	uint64_t t0, sum = 0, torn = 0;
	int stop = 0;

	im->init(im, &lock, PROXYLOCK_DONATE_ALL);
	for (int t = 0; t < nthreads; t++) {
		c[t] = (struct rw_thread){ im, &lock, wpct, &stop,
			                   0x9e3779b97f4a7c15ull * (uint64_t)(t + 1), 0, 0 };
		pthread_create(&th[t], NULL, rw_thread, &c[t]);
	}
	t0 = now_ns();
	usleep((useconds_t)cell_ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < nthreads; t++) {
		pthread_join(th[t], NULL);
		sum += c[t].count;
		torn += c[t].torn;
	}
	if (torn) {
		fprintf(stderr, "proxybench: %s let a reader in beside a writer (%d threads, "
		        "%d%% writes: %llu torn words)\n", im->name, nthreads, wpct,
		        (unsigned long long)torn);
		exit(3);
	}
	return (double)sum * 1e9 / (double)(now_ns() - t0);
}

/*
 * rw-readmostly-wW (W = 0, 1, 10: the write percentage): glibc's
 * rwlock, proxylock_rwlock (defaults: prefer readers, lend everything;
 * all threads have one context, so nothing is lent) and the interposer's,
 * with 1, 2, 4 and 8 threads; throughput in operations per second.
 */
void bench_rw_readmostly(void)
{
	double v[RW_NIMPLS][MAX_REPS];
	char bench[32];

	for (int wi = 0; wi < RW_NWPCTS; wi++) {
		snprintf(bench, sizeof(bench), "rw-readmostly-w%d", rw_wpcts[wi]);
		for (int ti = 0; ti < RW_NTHREADS; ti++) {
			for (int r = 0; r < reps; r++)
				for (int i = 0; i < RW_NIMPLS; i++)
					if (impls[rw_impls[i]].available)
						v[i][r] = rw_once(&impls[rw_impls[i]], rw_threads[ti], rw_wpcts[wi]);
			for (int i = 0; i < RW_NIMPLS; i++)
				if (impls[rw_impls[i]].available)
					row(bench, impls[rw_impls[i]].name, rw_threads[ti], 0, "throughput", v[i], reps,
					    "ops/s");
		}
	}
}

/*
 * rw-verdict: the rw-readmostly cells in rounds, as verdict does for the
 * mutex grid: rounds outermost, every cell once a round for glibc's
 * rwlock, proxylock_rwlock and the interposer's, their order rotated each
 * round; every value to @rounds_path (benchmark,impl,threads,cs_ns,
 * round,metric,value with benchmark rw-readmostly-wW), from which
 * report.py pairs each with glibc round by round.
 */
void bench_rw_verdict(void)
{
	static double v[RW_NIMPLS][RW_NWPCTS][RW_NTHREADS][MAX_ROUNDS];
	FILE *f = rounds_open();
	char bench[32];

	for (int r = 0; r < rounds; r++) {
		fprintf(stderr, "rw-verdict: round %d/%d\n", r + 1, rounds);
		for (int wi = 0; wi < RW_NWPCTS; wi++)
			for (int ti = 0; ti < RW_NTHREADS; ti++)
				for (int n = 0; n < RW_NIMPLS; n++) {
					int k = (n + r) % RW_NIMPLS;
					const struct impl *im = &impls[rw_impls[k]];

					if (!im->available)
						continue;
					v[k][wi][ti][r] = rw_once(im, rw_threads[ti], rw_wpcts[wi]);
					if (f)
						fprintf(f, "rw-readmostly-w%d,%s,%d,0,%d,throughput,%.6g\n",
						        rw_wpcts[wi], im->name, rw_threads[ti], r, v[k][wi][ti][r]);
				}
		if (f)
			fflush(f);
	}
	if (f)
		fclose(f);
	for (int wi = 0; wi < RW_NWPCTS; wi++) {
		snprintf(bench, sizeof(bench), "rw-readmostly-w%d", rw_wpcts[wi]);
		for (int ti = 0; ti < RW_NTHREADS; ti++)
			for (int k = 0; k < RW_NIMPLS; k++)
				if (impls[rw_impls[k]].available)
					row(bench, impls[rw_impls[k]].name, rw_threads[ti], 0, "throughput",
					    v[k][wi][ti], rounds, "ops/s");
	}
}

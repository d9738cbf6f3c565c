/* SPDX-License-Identifier: MIT */
/*
 * proxybench_contended.c - the contended grid: threads x critical
 * sections, every contender, each cell's throughput, fairness (Jain's
 * index, max/min) and lock() wait percentiles (wait sampling, below);
 * "contended" runs it in interleaved repetitions, "verdict" in rounds
 * (--threads and --cs shrink it) with every round's values to
 * --rounds-out.  Every critical section counts its entry, so a contender
 * that let two threads in together stops the run.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "csvrow.h"
#include "proxybench.h"

double ns_per_iter = 1.0;
volatile uint64_t shared_data[64] __attribute__((aligned(64)));

/*
 * ns_per_iter: the fastest of 20 timings of 100 000 iterations.  Being
 * preempted or slowed only lengthens a timing, so the minimum is the
 * work's cost; one long timing (as before) that caught a preemption
 * made every critical section of the run shorter than its cs_ns (one
 * verdict run read 0.34 M acquisitions per second at "10 us" on 2 CPUs).
 * The log says what was found ("# calibrate").
 */
void calibrate(void)
{
	const long n = 100000;
	uint64_t best = UINT64_MAX;

	for (int k = 0; k < 20; k++) {
		uint64_t t0 = now_ns(), dt;

		cs_work(n);
		dt = now_ns() - t0;
		best = dt < best ? dt : best;
	}
	ns_per_iter = best > 0 ? (double)best / (double)n : 1.0;
	printf("# calibrate ns_per_iter=%.4f (fastest of 20 x %ld iterations)\n", ns_per_iter, n);
}

/*
 * Wait sampling: every stride-th acquisition of each thread times its
 * lock() call with two CLOCK_MONOTONIC_RAW reads (the vDSO, no syscall),
 * fast path or not, into that thread's reservoir of WAIT_CAP samples
 * (Vitter's algorithm R, so a long cell keeps a uniform sample of all
 * its timed calls).  The stride keeps the timing's cost near 5% of an
 * acquisition: stride = clock pair / (5% of (cs + 50 ns)), 1..64, so a
 * cell with an empty critical section times about one call in 16, a
 * 1 us one every call.  Both are the same for every contender of a
 * cell; each workload prints the stride, the clock pair's cost and the
 * resulting overhead per acquisition as a "# wait_sampling" line.
 */
#define WAIT_CAP 8192

struct wait_sample {
	double ns;      /* one timed lock() call */
	double weight;  /* acquisitions it stands for: seen / kept */
};

static double clock_pair_ns;

static uint64_t raw_ns(void)
{
	return scenario_clock(CLOCK_MONOTONIC_RAW);
}

/* The median cost of timing one call: two raw clock reads. */
static double measure_clock_pair(void)
{
	double v[101];

	for (int i = 0; i < 101; i++) {
		uint64_t t0 = raw_ns(), t1 = 0;

		for (int k = 0; k < 100; k++)
			t1 = raw_ns();
		v[i] = (double)(t1 - t0) / 100 * 2;
	}
	qsort(v, 101, sizeof(v[0]), cmp_d);
	return v[50];
}

static int wait_stride(long cs_ns)
{
	double s = clock_pair_ns / (0.05 * ((double)cs_ns + 50));

	return s < 1 ? 1 : s > 64 ? 64 : (int)(s + 0.5);
}

struct contend {
	const struct impl *im;
	union lock_storage *lock;
	long iters;
	int stride;
	int *stop;
	uint64_t count;
	uint64_t timed;     /* lock() calls timed */
	int kept;           /* samples in waits[] */
	uint64_t rng;       /* xorshift64 state for the reservoir */
	uint64_t waits[WAIT_CAP];
};

/* Keep @ns in @c's reservoir (algorithm R). */
static void wait_keep(struct contend *c, uint64_t ns)
{
	uint64_t j;

	c->timed++;
	if (c->kept < WAIT_CAP) {
		c->waits[c->kept++] = ns;
		return;
	}
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	j = c->rng % c->timed;
	if (j < WAIT_CAP)
		c->waits[j] = ns;
}

static void *contend_thread(void *p)
{
	struct contend *c = p;
	int k = 0;

	while (!__atomic_load_n(c->stop, __ATOMIC_RELAXED)) {
		if (++k == c->stride) {
			uint64_t t0 = raw_ns();

			k = 0;
			c->im->lock(c->lock);
			wait_keep(c, raw_ns() - t0);
		} else {
			c->im->lock(c->lock);
		}
		cs_work(c->iters);
		c->im->unlock(c->lock);
		c->count++;
	}
	return NULL;
}

static int cmp_ws(const void *a, const void *b)
{
	double x = ((const struct wait_sample *)a)->ns, y = ((const struct wait_sample *)b)->ns;

	return x < y ? -1 : x > y;
}

/* Weighted percentiles @pct[0..n) (in %) of @s (sorted here) into @out. */
static void weighted_pcts(struct wait_sample *s, int ns, const double *pct, int n, double *out)
{
	double total = 0, cum = 0;
	int i = 0;

	qsort(s, (size_t)ns, sizeof(*s), cmp_ws);
	for (int k = 0; k < ns; k++)
		total += s[k].weight;
	for (int p = 0; p < n; p++) {
		double want = pct[p] / 100 * total;

		while (i < ns - 1 && cum + s[i].weight < want)
			cum += s[i++].weight;
		out[p] = ns ? s[i].ns : 0;
	}
}

static const char *c_metric[NC] = { "throughput", "jain", "max_min", "wait_p50", "wait_p99",
	                            "wait_p999" };
static const char *c_unit[NC] = { "acq/s", "index", "ratio", "ns", "ns", "ns" };

/*
 * One timed cell: throughput (acquisitions/s), Jain's index over the
 * threads' acquisition counts, max/min of those counts, and the p50,
 * p99 and p99.9 of the timed lock() calls of all threads together (each
 * thread's samples weighted by the acquisitions they stand for).  Every
 * critical section adds one to shared_data[0] with a plain (volatile,
 * not atomic) increment, so a contender that let two threads in at once
 * loses increments: the cell then stops the run (exit status 3).
 */
void contended_once(const struct impl *im, int nthreads, long cs_ns, double out[NC])
{
	static union lock_storage lock;
	static struct contend c[MAX_THREADS];
	static struct wait_sample all[MAX_THREADS * WAIT_CAP];
	static const double pct[3] = { 50, 99, 99.9 };
	pthread_t th[MAX_THREADS];
	double sum = 0, sq = 0, mx = 0, mn = 1e300;
	int stop = 0, nall = 0;
	uint64_t t0, entered = shared_data[0];

	im->init(im, &lock, PROXYLOCK_DONATE_ALL);
	for (int t = 0; t < nthreads; t++) {
		c[t].im = im;
		c[t].lock = &lock;
		c[t].iters = (long)((double)cs_ns / ns_per_iter);
		c[t].stride = wait_stride(cs_ns);
		c[t].stop = &stop;
		c[t].count = c[t].timed = 0;
		c[t].kept = 0;
		c[t].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
		pthread_create(&th[t], NULL, contend_thread, &c[t]);
	}
	t0 = now_ns();
	usleep((useconds_t)cell_ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	entered = shared_data[0] - entered;
	for (int t = 0; t < nthreads; t++) {
		double x = (double)c[t].count;

		entered -= c[t].count;
		sum += x;
		sq += x * x;
		mx = x > mx ? x : mx;
		mn = x < mn ? x : mn;
		for (int k = 0; k < c[t].kept; k++)
			all[nall++] = (struct wait_sample){ (double)c[t].waits[k],
				                            (double)c[t].timed / c[t].kept };
	}
	if (entered != 0) {
		fprintf(stderr, "proxybench: %s let threads into the critical section together "
		        "(%d threads, cs %ld ns: %lld increments lost)\n", im->name, nthreads, cs_ns,
		        (long long)-entered);
		exit(3);
	}
	out[C_TPUT] = sum * 1e9 / (double)(now_ns() - t0);
	out[C_JAIN] = sq > 0 ? sum * sum / (nthreads * sq) : 0;
	out[C_MAXMIN] = mn > 0 ? mx / mn : 1e9;
	weighted_pcts(all, nall, pct, 3, &out[C_P50]);
}

static void wait_sampling_note(const long *cs, size_t ncs)
{
	clock_pair_ns = measure_clock_pair();
	for (size_t i = 0; i < ncs; i++)
		printf("# wait_sampling cs_ns=%ld stride=%d clock_pair_ns=%.1f overhead_ns_per_acq=%.2f\n",
		       cs[i], wait_stride(cs[i]), clock_pair_ns, clock_pair_ns / wait_stride(cs[i]));
}

void bench_contended(void)
{
	static const int threads[] = { 1, 2, 4, 8, 16 };
	static const long cs[] = { 0, 100, 1000, 10000 };
	static double v[NIMPL][NC][MAX_REPS];

	calibrate();
	wait_sampling_note(cs, sizeof(cs) / sizeof(cs[0]));
	for (size_t ci = 0; ci < sizeof(cs) / sizeof(cs[0]); ci++) {
		for (size_t ti = 0; ti < sizeof(threads) / sizeof(threads[0]); ti++) {
			for (int r = 0; r < reps; r++)
				for (int i = 0; i < NIMPL; i++) {
					double out[NC];

					if (!impls[i].available)
						continue;
					contended_once(&impls[i], threads[ti], cs[ci], out);
					for (int k = 0; k < NC; k++)
						v[i][k][r] = out[k];
				}
			for (int i = 0; i < NIMPL; i++)
				for (int k = 0; k < NC && impls[i].available; k++)
					row("contended", impls[i].name, threads[ti], cs[ci], c_metric[k], v[i][k],
					    reps, c_unit[k]);
		}
	}
}

/* --- verdict: the contended grid, in rounds --------------------------- */

/*
 * Each round runs every cell of the grid once for every contender, the
 * contenders' order rotated by one each round; every cell's value of
 * every round goes to @rounds_path (verdict,impl,threads,cs_ns,round,
 * metric,value), from which report.py pairs proxylock with each peer
 * round by round.  Rounds are the outer loop, so each cell's samples are
 * spread over the whole run and a slow change in the machine's load
 * reaches every contender alike.
 */
void bench_verdict(void)
{
	static double v[NIMPL][8][8][NC][MAX_ROUNDS];
	FILE *f = rounds_open();

	calibrate();
	wait_sampling_note(v_cs, (size_t)v_ncs);
	for (int r = 0; r < rounds; r++) {
		fprintf(stderr, "verdict: round %d/%d\n", r + 1, rounds);
		for (int ci = 0; ci < v_ncs; ci++)
			for (int ti = 0; ti < v_nthreads; ti++)
				for (int n = 0; n < NIMPL; n++) {
					int i = (n + r) % NIMPL;
					double out[NC];

					if (!impls[i].available)
						continue;
					contended_once(&impls[i], v_threads[ti], v_cs[ci], out);
					for (int k = 0; k < NC; k++) {
						v[i][ci][ti][k][r] = out[k];
						if (f)
							fprintf(f, "verdict,%s,%d,%ld,%d,%s,%.6g\n", impls[i].name,
							        v_threads[ti], v_cs[ci], r, c_metric[k], out[k]);
					}
				}
		if (f)
			fflush(f);
	}
	if (f)
		fclose(f);
	for (int ci = 0; ci < v_ncs; ci++)
		for (int ti = 0; ti < v_nthreads; ti++)
			for (int i = 0; i < NIMPL; i++)
				for (int k = 0; k < NC && impls[i].available; k++)
					row("verdict", impls[i].name, v_threads[ti], v_cs[ci], c_metric[k],
					    v[i][ci][ti][k], rounds, c_unit[k]);
}

/* SPDX-License-Identifier: MIT */
/*
 * proxybench.c - proxylock against the locks users would otherwise pick,
 * in one binary and one run, repetitions interleaved across contenders.
 *
 * Contenders (struct impl): glibc's pthread_mutex as NORMAL, ADAPTIVE_NP
 * and PRIO_INHERIT, called through pointers taken from libc.so.6 itself;
 * proxylock with donation off and on; plain pthread calls, which are
 * the LD_PRELOAD interposer's when it is loaded (bench/run loads it; the
 * contender is absent otherwise); Abseil's absl::Mutex through a C++
 * adapter (absladapter.cc; absent from builds without libabsl-dev); and
 * futexref.h's spin-then-futex mutex, the simple reference.  Every
 * contender is called through a pointer, so each pays the same indirect
 * call.
 *
 * Each workload prints, per cell, the median, minimum and maximum over
 * its repetitions as CSV rows:
 *   benchmark,impl,threads,cs_ns,metric,median,min,max,unit
 * bench/run turns them into bench-results/ (results.csv, summary, plots).
 * The contended workloads also time lock() calls (wait_p50/p99/p999, see
 * "wait sampling"); verdict repeats the contended grid in rounds and
 * writes every round's values to --rounds-out for bench/report.py's
 * paired ratios; insn brackets N lock+unlock pairs of each contender with
 * callgrind's client requests (instructions per pair under
 * valgrind --tool=callgrind; --only NAME runs one contender, for perf).
 *
 * Reader-writer locks (issue 15) have contenders of their own: glibc's
 * pthread_rwlock (through pointers from libc.so.6), proxylock_rwlock
 * with donation off and on, and plain pthread_rwlock calls (the
 * interposer's).  rw-readmostly is their throughput with 1, 2, 4 and 8
 * threads at 0, 1 and 10% writes (rw-verdict: the same cells in rounds,
 * every round's values to --rounds-out, as verdict); inversion-rw is the
 * inversion with a big writer waiting on two small readers.  inversion-reverse
 * is its reverse (issue 30): a nice-19 background waiter on a busy CPU and
 * a nice-0 holder alone on its own, which donation must leave alone.
 *
 *   usage: proxybench WORKLOAD [--reps N] [--ms N] [--samples FILE]
 *            [--rounds N] [--rounds-out FILE] [--threads LIST] [--cs LIST]
 *            [--pairs N] [--only NAME]
 *   workloads: uncontended contended handoff inversion donation-cost
 *              rw-readmostly inversion-rw inversion-reverse verdict
 *              rw-verdict insn
 */
#include <dlfcn.h>
#include <errno.h>
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

#include "csvrow.h"
#include "futexref.h"
#include "proxylock.h"
#include "scenario.h"
#ifdef PLK_HAVE_ABSL
#include "absladapter.h"
#endif
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND_H 1
#endif

#define MAX_REPS 64
#define MAX_ROUNDS 200
#define MAX_THREADS 16

/* --- options and output ---------------------------------------------- */

static int reps = 5;
static int cell_ms = 100;
static const char *samples_path;

static uint64_t now_ns(void)
{
	return scenario_clock(CLOCK_MONOTONIC);
}


/* --- contenders ------------------------------------------------------ */

union lock_storage {
	pthread_mutex_t pm;
	proxylock_mutex_t pl;
	pthread_rwlock_t prw;
	proxylock_rwlock_t plrw;
	struct fref fr;
	char pad[64];
} __attribute__((aligned(64)));

struct impl {
	const char *name;
	int (*lock)(void *);
	int (*unlock)(void *);
	void (*init)(const struct impl *, union lock_storage *, unsigned kinds);
	int glibc_kind;  /* for the glibc contenders */
	bool available;
	int (*rdlock)(void *);  /* rwlocks: lock is wrlock */
};

static int (*glibc_init)(pthread_mutex_t *, const pthread_mutexattr_t *);

static void *sym_in(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	if (!p) {
		fprintf(stderr, "proxybench: no %s\n", name);
		exit(1);
	}
	return p;
}

#define SET_FN(dst, p) memcpy(&(dst), &(p), sizeof(p))

static void init_glibc(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	pthread_mutexattr_t a;

	(void)kinds;
	pthread_mutexattr_init(&a);
	if (im->glibc_kind == 1)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	if (im->glibc_kind == 2)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	memset(s, 0, sizeof(*s));
	glibc_init(&s->pm, &a);
	pthread_mutexattr_destroy(&a);
}

static void init_proxylock(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	proxylock_mutexattr_t a;

	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_setdonate(&a, strcmp(im->name, "proxylock") ? PROXYLOCK_DONATE_NONE
	                                                                   : kinds);
	proxylock_mutex_init(&s->pl, &a);
}

static void init_preload(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	pthread_mutex_init(&s->pm, NULL);  /* the interposer's */
}

static void init_fref(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	s->fr.word = FREF_FREE;
}

#ifdef PLK_HAVE_ABSL
static void init_absl(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	plk_absl_init(s);
}
#endif

/* The rwlock contenders (RW_*) follow the mutexes' in impls[]; loops
 * over mutex contenders stop at NIMPL. */
enum { GLIBC_NORMAL, GLIBC_ADAPTIVE, GLIBC_PI, PL_NODONATE, PL, PRELOAD, ABSL, FUTEX_REF, NIMPL,
       RW_GLIBC = NIMPL, RW_PL_NODONATE, RW_PL, RW_PRELOAD, NALL };
static struct impl impls[NALL];

/* The rwlocks' preference kind: PROXYLOCK_RWLOCK_PREFER_*, glibc's numbers. */
static int rw_kind = PROXYLOCK_RWLOCK_PREFER_READER;

/* glibc and the interposer: glibc's static initializer of that kind. */
static void init_rw_static(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	static const pthread_rwlock_t rd = PTHREAD_RWLOCK_INITIALIZER,
		wr = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

	(void)im;
	(void)kinds;
	memset(s, 0, sizeof(*s));
	s->prw = rw_kind == PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE ? wr : rd;
}

static void init_rw_proxylock(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	proxylock_rwlockattr_t a;

	proxylock_rwlockattr_init(&a);
	proxylock_rwlockattr_setkind(&a, rw_kind);
	proxylock_rwlockattr_setdonate(&a, im == &impls[RW_PL] ? kinds : PROXYLOCK_DONATE_NONE);
	proxylock_rwlock_init(&s->plrw, &a);
}

static void rw_setup(void *libc)
{
	static const char *names[] = { "glibc", "proxylock-nodonate", "proxylock", "preload" };
	static const char *fns[3] = { "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
	                              "pthread_rwlock_unlock" };
	int (*prd)(proxylock_rwlock_t *) = proxylock_rwlock_rdlock;
	int (*pwr)(proxylock_rwlock_t *) = proxylock_rwlock_wrlock;
	int (*pun)(proxylock_rwlock_t *) = proxylock_rwlock_unlock;
	void *g[3], *t[3];  /* glibc's, and whoever's plain calls reach */

	for (int k = 0; k < 3; k++) {
		g[k] = sym_in(libc, fns[k]);
		t[k] = dlsym(RTLD_DEFAULT, fns[k]);
	}
	for (int i = RW_GLIBC; i < NALL; i++) {
		struct impl *im = &impls[i];

		im->name = names[i - RW_GLIBC];
		im->available = true;
		im->init = i == RW_GLIBC || i == RW_PRELOAD ? init_rw_static : init_rw_proxylock;
		if (i == RW_PL_NODONATE || i == RW_PL) {
			SET_FN(im->rdlock, prd);
			SET_FN(im->lock, pwr);
			SET_FN(im->unlock, pun);
			continue;
		}
		void **f = i == RW_GLIBC ? g : t;

		SET_FN(im->rdlock, f[0]);
		SET_FN(im->lock, f[1]);
		SET_FN(im->unlock, f[2]);
		im->available = f == g || t[0] != g[0];  /* the interposer is loaded */
	}
}

static void impls_setup(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *glock = sym_in(libc, "pthread_mutex_lock"), *gunlock = sym_in(libc, "pthread_mutex_unlock");
	void *ginit = sym_in(libc, "pthread_mutex_init");
	int (*plock)(proxylock_mutex_t *) = proxylock_mutex_lock;
	int (*punlock)(proxylock_mutex_t *) = proxylock_mutex_unlock;
	void *tlock = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
	void *tunlock = dlsym(RTLD_DEFAULT, "pthread_mutex_unlock");
	static const char *names[NIMPL] = { "glibc-normal", "glibc-adaptive", "glibc-pi",
	                                    "proxylock-nodonate", "proxylock", "preload",
	                                    "absl", "futex-ref" };

	SET_FN(glibc_init, ginit);
	for (int i = 0; i < NIMPL; i++) {
		struct impl *im = &impls[i];

		im->name = names[i];
		im->available = true;
		if (i <= GLIBC_PI) {
			SET_FN(im->lock, glock);
			SET_FN(im->unlock, gunlock);
			im->init = init_glibc;
			im->glibc_kind = i;
		} else if (i == PL_NODONATE || i == PL) {
			SET_FN(im->lock, plock);
			SET_FN(im->unlock, punlock);
			im->init = init_proxylock;
		} else if (i == PRELOAD) {
			SET_FN(im->lock, tlock);
			SET_FN(im->unlock, tunlock);
			im->init = init_preload;
			im->available = tlock != glock;  /* the interposer is loaded */
		} else if (i == FUTEX_REF) {
			im->lock = fref_lock;
			im->unlock = fref_unlock;
			im->init = init_fref;
		} else {
#ifdef PLK_HAVE_ABSL
			im->lock = plk_absl_lock;
			im->unlock = plk_absl_unlock;
			im->init = init_absl;
#else
			im->available = false;  /* built without libabsl-dev */
#endif
		}
	}
	rw_setup(libc);
}

static uint64_t sched_calls(void)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return st.setattr_calls + st.setaff_calls;
}

/* --- 1. uncontended -------------------------------------------------- */

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
static void bench_uncontended(void)
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

/* --- 2. contended throughput and wait ------------------------------- */

static double ns_per_iter = 1.0;
static volatile uint64_t shared_data[64] __attribute__((aligned(64)));

/* The critical section: @iters updates of shared data (words 1..63),
 * then one count of the entry in word 0 (contended_once's check). */
static void cs_work(long iters)
{
	for (long k = 0; k < iters; k++)
		shared_data[1 + k % 63] += (uint64_t)k;
	shared_data[0]++;
}

/*
 * ns_per_iter: the fastest of 20 timings of 100 000 iterations.  Being
 * preempted or slowed only lengthens a timing, so the minimum is the
 * work's cost; one long timing (as before) that caught a preemption
 * made every critical section of the run shorter than its cs_ns (one
 * verdict run read 0.34 M acquisitions per second at "10 us" on 2 CPUs).
 * The log says what was found ("# calibrate").
 */
static void calibrate(void)
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

enum { C_TPUT, C_JAIN, C_MAXMIN, C_P50, C_P99, C_P999, NC };
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
static void contended_once(const struct impl *im, int nthreads, long cs_ns, double out[NC])
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

static void bench_contended(void)
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

/* --- 2b. verdict: the contended grid, in rounds ---------------------- */

static int rounds = 30;
static const char *rounds_path;
static int v_threads[8] = { 2, 4, 8, 16 }, v_nthreads = 4;
static long v_cs[8] = { 0, 100, 1000, 10000 };
static int v_ncs = 4;

/* @rounds_path opened, its header written (NULL without --rounds-out);
 * exits if it cannot be written. */
static FILE *rounds_open(void)
{
	FILE *f = rounds_path ? fopen(rounds_path, "w") : NULL;

	if (rounds_path && !f) {
		fprintf(stderr, "proxybench: cannot write %s\n", rounds_path);
		exit(1);
	}
	if (f)
		fprintf(f, "benchmark,impl,threads,cs_ns,round,metric,value\n");
	return f;
}

/*
 * Each round runs every cell of the grid once for every contender, the
 * contenders' order rotated by one each round; every cell's value of
 * every round goes to @rounds_path (verdict,impl,threads,cs_ns,round,
 * metric,value), from which report.py pairs proxylock with each peer
 * round by round.  Rounds are the outer loop, so each cell's samples are
 * spread over the whole run and a slow change in the machine's load
 * reaches every contender alike.
 */
static void bench_verdict(void)
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

/* --- 3. handoff latency ---------------------------------------------- */

struct handoff {
	const struct impl *im;
	union lock_storage lock;
	int go, done;
	uint64_t t_unlock, t_acquired;
};

static void *handoff_waiter(void *p)
{
	struct handoff *h = p;

	for (;;) {
		int go;

		while ((go = __atomic_load_n(&h->go, __ATOMIC_ACQUIRE)) == 0)
			;
		if (go < 0)
			return NULL;
		__atomic_store_n(&h->go, 0, __ATOMIC_RELAXED);
		h->im->lock(&h->lock);
		h->t_acquired = now_ns();
		h->im->unlock(&h->lock);
		__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	}
}

/* Median of @n handoffs: unlock in one thread to acquisition in the
 * other, which has had 300 us to stop spinning and sleep. */
static double handoff_once(const struct impl *im, int n)
{
	static struct handoff h;
	double lat[512];
	pthread_t th;

	memset(&h, 0, sizeof(h));
	h.im = im;
	im->init(im, &h.lock, PROXYLOCK_DONATE_ALL);
	pthread_create(&th, NULL, handoff_waiter, &h);
	for (int i = 0; i < n; i++) {
		im->lock(&h.lock);
		__atomic_store_n(&h.done, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&h.go, 1, __ATOMIC_RELEASE);
		usleep(300);
		h.t_unlock = now_ns();
		im->unlock(&h.lock);
		while (!__atomic_load_n(&h.done, __ATOMIC_ACQUIRE))
			;
		lat[i] = (double)(h.t_acquired - h.t_unlock);
	}
	__atomic_store_n(&h.go, -1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp_d);
	return lat[n / 2];
}

static void bench_handoff(void)
{
	double v[NIMPL][MAX_REPS];
	int n = cell_ms * 2 > 512 ? 512 : cell_ms * 2;

	for (int r = 0; r < reps; r++)
		for (int i = 0; i < NIMPL; i++)
			if (impls[i].available)
				v[i][r] = handoff_once(&impls[i], n);
	for (int i = 0; i < NIMPL; i++)
		if (impls[i].available)
			row("handoff", impls[i].name, 2, 0, "latency", v[i], reps, "ns");
}

/* --- 4. inversion ---------------------------------------------------- */

static struct scenario inv;

/* One run of scenario.h's scenario (an rwlock's: two small readers and
 * a big writer); out: p50, p99, max wait, CS wall, CS CPU (us), sched
 * calls per contended acquisition. */
static void inversion_once(const struct impl *im, unsigned kinds, double out[6], FILE *samples,
                           const char *label)
{
	static union lock_storage lock;
	struct proxylock_stats a, b;

	im->init(im, &lock, kinds);
	inv.lock = im->lock;
	inv.rdlock = im->rdlock;
	inv.nsmall = im->rdlock ? 2 : 1;
	inv.unlock = im->unlock;
	inv.m = &lock;
	inv.uclamp = proxylock_caps() & PROXYLOCK_DONATE_UCLAMP;
	proxylock_stats_get(&a);
	scenario_run(&inv, cell_ms);
	proxylock_stats_get(&b);
	if (samples)
		for (int i = 0; i < inv.nwaits; i++)
			fprintf(samples, "%s,%.1f\n", label, (double)inv.waits[i] / 1000);
	out[0] = (double)scenario_pct(inv.waits, inv.nwaits, 50) / 1000;
	out[1] = (double)scenario_pct(inv.waits, inv.nwaits, 99) / 1000;
	out[2] = (double)scenario_pct(inv.waits, inv.nwaits, 100) / 1000;
	out[3] = (double)scenario_pct(inv.walls, inv.ncs, 50) / 1000;
	out[4] = (double)scenario_pct(inv.cpus, inv.ncs, 50) / 1000;
	out[5] = b.contended > a.contended
	         ? (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
	           (double)(b.contended - a.contended) : 0;
}

/* The variants: every contender, and proxylock lending one kind at a time. */
struct inv_variant {
	const char *bench;
	int impl;
	unsigned kinds;
};

/* Runs here: its contender is present, and a single kind is one this
 * kernel and these privileges can lend. */
static bool variant_runs(const struct inv_variant *v)
{
	unsigned k = v->kinds;

	return impls[v->impl].available &&
	       (k == 0 || k == PROXYLOCK_DONATE_ALL || (k & proxylock_donate_kinds()));
}

/*
 * @nv variants in reps interleaved repetitions, after a warm-up run that
 * lets the hog and the scheduler settle (discarded), then their rows;
 * the wait samples of the first @nsampled go to @samples (the CDF plot).
 */
static void inversion_variants(const struct inv_variant *vs, int nv, FILE *samples, int nsampled)
{
	static const char *metrics[6] = { "wait_p50", "wait_p99", "wait_max", "cs_wall",
	                                  "cs_cpu", "sched_calls_per_contended" };
	static double v[16][6][MAX_REPS];
	double warm[6];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "proxybench: %s needs 2 CPUs; skipped\n", vs[0].bench);
		return;
	}
	inversion_once(&impls[vs[0].impl], 0, warm, NULL, NULL);
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < nv; k++) {
			const struct impl *im = &impls[vs[k].impl];
			double out[6];

			if (!variant_runs(&vs[k]))
				continue;
			inversion_once(im, vs[k].kinds, out, k < nsampled ? samples : NULL, im->name);
			for (int m = 0; m < 6; m++)
				v[k][m][r] = out[m];
		}
	for (int k = 0; k < nv; k++)
		for (int m = 0; m < 6 && variant_runs(&vs[k]); m++)
			row(vs[k].bench, impls[vs[k].impl].name, impls[vs[k].impl].rdlock ? 3 : 2,
			    SCENARIO_CS_CPU_NS, metrics[m], v[k][m], reps, m == 5 ? "calls" : "us");
}

static void bench_inversion(void)
{
	static const struct inv_variant vs[] = {
		{ "inversion", GLIBC_NORMAL, 0 }, { "inversion", GLIBC_ADAPTIVE, 0 },
		{ "inversion", GLIBC_PI, 0 }, { "inversion", PL_NODONATE, 0 },
		{ "inversion", PL, PROXYLOCK_DONATE_ALL }, { "inversion", PRELOAD, 0 },
		{ "inversion-uclamp", PL, PROXYLOCK_DONATE_UCLAMP },
		{ "inversion-affinity", PL, PROXYLOCK_DONATE_AFFINITY },
		{ "inversion-nice", PL, PROXYLOCK_DONATE_NICE },
		{ "inversion-rt", PL, PROXYLOCK_DONATE_RT },
	};
	FILE *samples = samples_path ? fopen(samples_path, "w") : NULL;

	if (samples)
		fprintf(samples, "impl,wait_us\n");
	/* Wait samples of the contenders (the first 6), for the CDF plot. */
	inversion_variants(vs, sizeof(vs) / sizeof(vs[0]), samples, 6);
	if (samples)
		fclose(samples);
}

/*
 * A big writer waiting on two small readers (nice 19, on the hog's CPU),
 * each holding the lock for reading for SCENARIO_CS_CPU_NS of CPU time.
 * The rwlocks prefer writers (NONRECURSIVE, every contender), so the
 * writer waits for the readers it found, not for new ones: under
 * PREFER_READER its wait would measure the readers' turnover rather than
 * the inversion.  The physical limit is, as for the mutex, one critical
 * section's CPU time (cs_cpu): a reader's length on a free CPU.
 */
static void bench_inversion_rw(void)
{
	static const struct inv_variant vs[] = {
		{ "inversion-rw", RW_GLIBC, 0 },
		{ "inversion-rw", RW_PL_NODONATE, 0 },
		{ "inversion-rw", RW_PL, PROXYLOCK_DONATE_ALL },
		{ "inversion-rw", RW_PRELOAD, 0 },
	};

	rw_kind = PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE;
	inversion_variants(vs, sizeof(vs) / sizeof(vs[0]), NULL, 0);
}

/*
 * The reverse of the inversion (issue 30): a nice-0 foreground holder
 * alone on CPU 0 and a nice-19 background waiter on CPU 1, which two hogs
 * share (scenario.h).  The waiter does not outrank the holder, so
 * donation must not move it: its section's wall time (cs_wall p50, p99)
 * stays that of inversion-reverse-alone (no background task), off_cpu
 * (the share of sections that ran at all off CPU 0) stays 0, and so do
 * the sched calls per contended acquisition.
 */
static void reverse_once(const struct impl *im, unsigned kinds, bool background, double out[4])
{
	static union lock_storage lock;
	struct proxylock_stats a, b;

	im->init(im, &lock, kinds);
	inv.lock = im->lock;
	inv.rdlock = NULL;
	inv.unlock = im->unlock;
	inv.m = &lock;
	inv.uclamp = proxylock_caps() & PROXYLOCK_DONATE_UCLAMP;
	inv.background = background;
	proxylock_stats_get(&a);
	scenario_reverse_run(&inv, cell_ms);
	proxylock_stats_get(&b);
	out[2] = inv.ncs ? (double)inv.off_cpu / inv.ncs : 0;
	if (inv.ncs > SCENARIO_MAX_SAMPLES)
		inv.ncs = SCENARIO_MAX_SAMPLES;
	out[0] = (double)scenario_pct(inv.walls, inv.ncs, 50) / 1000;
	out[1] = (double)scenario_pct(inv.walls, inv.ncs, 99) / 1000;
	out[3] = b.contended > a.contended
	         ? (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
	           (double)(b.contended - a.contended) : 0;
}

static void bench_inversion_reverse(void)
{
	static const struct { const char *bench; int impl; unsigned kinds; bool bg; } vs[] = {
		{ "inversion-reverse-alone", PL, PROXYLOCK_DONATE_ALL, false },
		{ "inversion-reverse", GLIBC_NORMAL, 0, true },
		{ "inversion-reverse", PL_NODONATE, 0, true },
		{ "inversion-reverse", PL, PROXYLOCK_DONATE_ALL, true },
	};
	enum { NV = sizeof(vs) / sizeof(vs[0]) };
	static const char *metrics[4] = { "cs_wall_p50", "cs_wall_p99", "off_cpu",
	                                  "sched_calls_per_contended" };
	static const char *units[4] = { "us", "us", "fraction", "calls" };
	static double v[NV][4][MAX_REPS];
	double warm[4];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "proxybench: inversion-reverse needs 2 CPUs; skipped\n");
		return;
	}
	reverse_once(&impls[PL], 0, true, warm);  /* settle the hogs and the scheduler */
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < NV; k++) {
			double out[4];

			if (!impls[vs[k].impl].available)
				continue;
			reverse_once(&impls[vs[k].impl], vs[k].kinds, vs[k].bg, out);
			for (int m = 0; m < 4; m++)
				v[k][m][r] = out[m];
		}
	for (int k = 0; k < NV; k++)
		for (int m = 0; m < 4 && impls[vs[k].impl].available; m++)
			row(vs[k].bench, impls[vs[k].impl].name, vs[k].bg ? 2 : 1, SCENARIO_CS_CPU_NS,
			    metrics[m], v[k][m], reps, units[m]);
}

/* --- 5. donation cost ------------------------------------------------ */

/* Equal threads on different CPUs (issue 30): each pinned to CPU @cpu's
 * own, same nice and policy, taking one lock with 10 us of work inside. */
struct eq_arg {
	union lock_storage *lock;
	int cpu, *stop;
};

static void *eq_thread(void *p)
{
	struct eq_arg *a = p;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	/* Ours, not the library's: for bench/run's strace cross-check. */
	__atomic_fetch_add(&inv.sched_calls, 1, __ATOMIC_RELAXED);
	while (!__atomic_load_n(a->stop, __ATOMIC_RELAXED)) {
		impls[PL].lock(a->lock);
		cs_work((long)(10000 / ns_per_iter));
		impls[PL].unlock(a->lock);
		usleep(50);
	}
	return NULL;
}

/* Sched calls per contended acquisition between two equal threads pinned
 * to CPUs 0 and 1: neither outranks the other, so 0. */
static double equal_pinned_once(void)
{
	static union lock_storage lock;
	struct proxylock_stats a, b;
	struct eq_arg args[2];
	pthread_t th[2];
	int stop = 0;

	impls[PL].init(&impls[PL], &lock, PROXYLOCK_DONATE_ALL);
	proxylock_stats_get(&a);
	for (int i = 0; i < 2; i++) {
		args[i] = (struct eq_arg){ &lock, i, &stop };
		pthread_create(&th[i], NULL, eq_thread, &args[i]);
	}
	usleep((useconds_t)cell_ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	proxylock_stats_get(&b);
	return b.contended > a.contended
	       ? (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
	         (double)(b.contended - a.contended) : 0;
}

/* Symmetric contention: every thread has the same context, so nothing is
 * ever lent: sched calls per contended acquisition must be 0, unpinned
 * and (donation-cost-equal-pinned) with each thread on its own CPU. */
static void bench_donation_cost(void)
{
	double v[3][MAX_REPS];
	bool two = sysconf(_SC_NPROCESSORS_ONLN) >= 2;

	calibrate();
	for (int r = 0; r < reps; r++) {
		struct proxylock_stats a, b;
		double out[6], tp[NC];

		proxylock_stats_get(&a);
		contended_once(&impls[PL], 4, 1000, tp);
		proxylock_stats_get(&b);
		v[0][r] = b.contended > a.contended
		          ? (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
		            (double)(b.contended - a.contended) : 0;
		inversion_once(&impls[PL], PROXYLOCK_DONATE_ALL, out, NULL, NULL);
		v[1][r] = out[5];
		v[2][r] = two ? equal_pinned_once() : 0;
	}
	row("donation-cost-symmetric", "proxylock", 4, 1000, "sched_calls_per_contended", v[0], reps, "calls");
	row("donation-cost-inversion", "proxylock", 2, SCENARIO_CS_CPU_NS, "sched_calls_per_contended", v[1], reps, "calls");
	if (two)
		row("donation-cost-equal-pinned", "proxylock", 2, 10000, "sched_calls_per_contended",
		    v[2], reps, "calls");
	/* For bench/run's strace cross-check: what the library made in all,
	 * and what the scenario itself made. */
	printf("# sched_calls library=%llu own=%llu\n", (unsigned long long)sched_calls(),
	       (unsigned long long)inv.sched_calls);
}

/* --- 5b. read-mostly rwlock throughput ------------------------------ */

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
static void bench_rw_readmostly(void)
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
static void bench_rw_verdict(void)
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

/* --- 6. instructions per uncontended pair ---------------------------- */

static const char *only;
static long pairs = 100000;

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
static void bench_insn(void)
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

/* Parse "2,4,8" into @out (at most 8); returns the count, 0 if malformed. */
static int parse_list(const char *s, long *out)
{
	int n = 0;

	while (*s && n < 8) {
		char *end;

		out[n++] = strtol(s, &end, 10);
		if (end == s || out[n - 1] < 0 || (*end && *end != ','))
			return 0;
		s = *end ? end + 1 : end;
	}
	return *s ? 0 : n;
}

/* --- main ------------------------------------------------------------ */

int main(int argc, char **argv)
{
	const char *w = argc > 1 ? argv[1] : "";

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
			cell_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			samples_path = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds-out") && i + 1 < argc)
			rounds_path = argv[++i];
		else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			pairs = atol(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--cs") && i + 1 < argc) {
			if (!(v_ncs = parse_list(argv[++i], v_cs)))
				goto usage;
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			long t[8];

			if (!(v_nthreads = parse_list(argv[++i], t)))
				goto usage;
			for (int k = 0; k < v_nthreads; k++) {
				if (t[k] < 1 || t[k] > MAX_THREADS)
					goto usage;
				v_threads[k] = (int)t[k];
			}
		} else
			goto usage;
	}
	reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
	rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	pairs = pairs < 1 ? 1 : pairs;
	impls_setup();
	printf("# caps=%u donate_kinds=%u preload=%d\n", proxylock_caps(), proxylock_donate_kinds(),
	       impls[PRELOAD].available);
	if (!strcmp(w, "uncontended"))
		bench_uncontended();
	else if (!strcmp(w, "contended"))
		bench_contended();
	else if (!strcmp(w, "handoff"))
		bench_handoff();
	else if (!strcmp(w, "inversion"))
		bench_inversion();
	else if (!strcmp(w, "donation-cost"))
		bench_donation_cost();
	else if (!strcmp(w, "rw-readmostly"))
		bench_rw_readmostly();
	else if (!strcmp(w, "inversion-rw"))
		bench_inversion_rw();
	else if (!strcmp(w, "inversion-reverse"))
		bench_inversion_reverse();
	else if (!strcmp(w, "verdict"))
		bench_verdict();
	else if (!strcmp(w, "rw-verdict"))
		bench_rw_verdict();
	else if (!strcmp(w, "insn"))
		bench_insn();
	else
		goto usage;
	return 0;
usage:
	fprintf(stderr, "usage: proxybench uncontended|contended|handoff|inversion|donation-cost|"
	                "rw-readmostly|inversion-rw|inversion-reverse|verdict|rw-verdict|insn"
	                " [--reps N] [--ms N] [--samples FILE] [--rounds N] [--rounds-out FILE]"
	                " [--threads LIST] [--cs LIST] [--pairs N] [--only NAME]\n");
	return 2;
}

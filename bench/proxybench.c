/* SPDX-License-Identifier: MIT */
/*
 * proxybench.c - proxylock against the locks users would otherwise pick,
 * in one binary and one run, repetitions interleaved across contenders.
 *
 * Contenders (struct impl): glibc's pthread_mutex as NORMAL, ADAPTIVE_NP
 * and PRIO_INHERIT, called through pointers taken from libc.so.6 itself;
 * proxylock with donation off and on; and plain pthread calls, which are
 * the LD_PRELOAD interposer's when it is loaded (bench/run loads it; the
 * contender is absent otherwise).  Every contender is called through a
 * pointer, so each pays the same indirect call.
 *
 * Each workload prints, per cell, the median, minimum and maximum over
 * its repetitions as CSV rows:
 *   benchmark,impl,threads,cs_ns,metric,median,min,max,unit
 * bench/run turns them into bench-results/ (results.csv, summary, plots).
 *
 *   usage: proxybench WORKLOAD [--reps N] [--ms N] [--samples FILE]
 *   workloads: uncontended contended handoff inversion donation-cost
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
#include "proxylock.h"
#include "scenario.h"

#define MAX_REPS 64
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
	char pad[64];
} __attribute__((aligned(64)));

struct impl {
	const char *name;
	int (*lock)(void *);
	int (*unlock)(void *);
	void (*init)(const struct impl *, union lock_storage *, unsigned kinds);
	int glibc_kind;  /* for the glibc contenders */
	bool available;
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

enum { GLIBC_NORMAL, GLIBC_ADAPTIVE, GLIBC_PI, PL_NODONATE, PL, PRELOAD, NIMPL };
static struct impl impls[NIMPL];

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
	                                    "proxylock-nodonate", "proxylock", "preload" };

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
		} else if (i != PRELOAD) {
			SET_FN(im->lock, plock);
			SET_FN(im->unlock, punlock);
			im->init = init_proxylock;
		} else {
			SET_FN(im->lock, tlock);
			SET_FN(im->unlock, tunlock);
			im->init = init_preload;
			im->available = tlock != glock;  /* the interposer is loaded */
		}
	}
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

/* --- 2. contended throughput ----------------------------------------- */

static double ns_per_iter = 1.0;
static volatile uint64_t shared_data[64] __attribute__((aligned(64)));

static void cs_work(long iters)
{
	for (long k = 0; k < iters; k++)
		shared_data[k & 63] += (uint64_t)k;
	shared_data[0]++;
}

static void calibrate(void)
{
	const long n = 2000000;
	uint64_t t0 = now_ns();

	cs_work(n);
	ns_per_iter = (double)(now_ns() - t0) / (double)n;
	if (ns_per_iter <= 0)
		ns_per_iter = 1.0;
}

struct contend {
	const struct impl *im;
	union lock_storage *lock;
	long iters;
	int *stop;
	uint64_t count;
};

static void *contend_thread(void *p)
{
	struct contend *c = p;

	while (!__atomic_load_n(c->stop, __ATOMIC_RELAXED)) {
		c->im->lock(c->lock);
		cs_work(c->iters);
		c->im->unlock(c->lock);
		c->count++;
	}
	return NULL;
}

/* One timed cell: throughput (acquisitions/s), Jain's index, max/min. */
static void contended_once(const struct impl *im, int nthreads, long cs_ns, double out[3])
{
	static union lock_storage lock;
	struct contend c[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	double sum = 0, sq = 0, mx = 0, mn = 1e300;
	int stop = 0;
	uint64_t t0;

	im->init(im, &lock, PROXYLOCK_DONATE_ALL);
	for (int t = 0; t < nthreads; t++) {
		c[t] = (struct contend){ im, &lock, (long)((double)cs_ns / ns_per_iter), &stop, 0 };
		pthread_create(&th[t], NULL, contend_thread, &c[t]);
	}
	t0 = now_ns();
	usleep((useconds_t)cell_ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < nthreads; t++) {
		double x = (double)c[t].count;

		sum += x;
		sq += x * x;
		mx = x > mx ? x : mx;
		mn = x < mn ? x : mn;
	}
	out[0] = sum * 1e9 / (double)(now_ns() - t0);
	out[1] = sq > 0 ? sum * sum / (nthreads * sq) : 0;
	out[2] = mn > 0 ? mx / mn : 1e9;
}

static void bench_contended(void)
{
	static const int threads[] = { 1, 2, 4, 8, 16 };
	static const long cs[] = { 0, 100, 1000, 10000 };
	static double v[NIMPL][3][MAX_REPS];

	calibrate();
	for (size_t ci = 0; ci < sizeof(cs) / sizeof(cs[0]); ci++) {
		for (size_t ti = 0; ti < sizeof(threads) / sizeof(threads[0]); ti++) {
			for (int r = 0; r < reps; r++)
				for (int i = 0; i < NIMPL; i++) {
					double out[3];

					if (!impls[i].available)
						continue;
					contended_once(&impls[i], threads[ti], cs[ci], out);
					for (int k = 0; k < 3; k++)
						v[i][k][r] = out[k];
				}
			for (int i = 0; i < NIMPL; i++) {
				if (!impls[i].available)
					continue;
				row("contended", impls[i].name, threads[ti], cs[ci], "throughput", v[i][0], reps, "acq/s");
				row("contended", impls[i].name, threads[ti], cs[ci], "jain", v[i][1], reps, "index");
				row("contended", impls[i].name, threads[ti], cs[ci], "max_min", v[i][2], reps, "ratio");
			}
		}
	}
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

/* One run of scenario.h's scenario; out: p50, p99, max wait, CS wall, CS
 * CPU (us), sched calls per contended acquisition. */
static void inversion_once(const struct impl *im, unsigned kinds, double out[6], FILE *samples,
                           const char *label)
{
	static union lock_storage lock;
	struct proxylock_stats a, b;

	im->init(im, &lock, kinds);
	inv.lock = im->lock;
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
	enum { NV = sizeof(vs) / sizeof(vs[0]) };
	static const char *metrics[6] = { "wait_p50", "wait_p99", "wait_max", "cs_wall",
	                                  "cs_cpu", "sched_calls_per_contended" };
	static double v[NV][6][MAX_REPS];
	FILE *samples = samples_path ? fopen(samples_path, "w") : NULL;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "proxybench: inversion needs 2 CPUs; skipped\n");
		return;
	}
	if (samples)
		fprintf(samples, "impl,wait_us\n");
	{
		double warm[6];  /* let the hog and the scheduler settle; discarded */

		inversion_once(&impls[GLIBC_NORMAL], 0, warm, NULL, NULL);
	}
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < NV; k++) {
			double out[6];

			if (!variant_runs(&vs[k]))
				continue;
			/* Wait samples of the contenders, for the CDF plot. */
			inversion_once(&impls[vs[k].impl], vs[k].kinds, out,
			               k < 6 ? samples : NULL, impls[vs[k].impl].name);
			for (int m = 0; m < 6; m++)
				v[k][m][r] = out[m];
		}
	for (int k = 0; k < NV; k++)
		for (int m = 0; m < 6 && variant_runs(&vs[k]); m++)
			row(vs[k].bench, impls[vs[k].impl].name, 2, SCENARIO_CS_CPU_NS, metrics[m], v[k][m],
			    reps, m == 5 ? "calls" : "us");
	if (samples)
		fclose(samples);
}

/* --- 5. donation cost ------------------------------------------------ */

/* Symmetric contention: every thread has the same context, so nothing is
 * ever lent: sched calls per contended acquisition must be 0. */
static void bench_donation_cost(void)
{
	double v[2][MAX_REPS];

	calibrate();
	for (int r = 0; r < reps; r++) {
		struct proxylock_stats a, b;
		double out[6], tp[3];

		proxylock_stats_get(&a);
		contended_once(&impls[PL], 4, 1000, tp);
		proxylock_stats_get(&b);
		v[0][r] = b.contended > a.contended
		          ? (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
		            (double)(b.contended - a.contended) : 0;
		inversion_once(&impls[PL], PROXYLOCK_DONATE_ALL, out, NULL, NULL);
		v[1][r] = out[5];
	}
	row("donation-cost-symmetric", "proxylock", 4, 1000, "sched_calls_per_contended", v[0], reps, "calls");
	row("donation-cost-inversion", "proxylock", 2, SCENARIO_CS_CPU_NS, "sched_calls_per_contended", v[1], reps, "calls");
	/* For bench/run's strace cross-check: what the library made in all,
	 * and what the scenario itself made. */
	printf("# sched_calls library=%llu own=%llu\n", (unsigned long long)sched_calls(),
	       (unsigned long long)inv.sched_calls);
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
	}
	reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
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
	else {
		fprintf(stderr, "usage: proxybench uncontended|contended|handoff|inversion|donation-cost"
		                " [--reps N] [--ms N] [--samples FILE]\n");
		return 2;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * bucketbench.c - the cost of donation itself (issue 13), linked against
 * the internal archive (as test/test_registry.c is) to reach the
 * scheduler back-end directly.  Prints CSV rows as proxybench does:
 *   benchmark,impl,threads,cs_ns,metric,median,min,max,unit
 *
 *   usage: bucketbench WORKLOAD [--reps N] [--ms N] [--pairs N]
 *                      [--weak-idle] [--partner-idle] [--hogs N]
 *   workloads:
 *     bucket-inversion  bench/bucketinv.h: the p50/p99/max delay of an
 *                       unrelated lock B that shares a bucket with lock A,
 *                       on which a preempted weak thread runs the donation
 *                       slow path; baseline (weak thread idle) and active,
 *                       and sched calls per contended acquisition.
 *     lend-cost         ns for one lend + restore pair applied to a thread
 *                       (plk_sched_apply from its base to a lent context
 *                       and back), per kind and all kinds together, and
 *                       all kinds with the engine's tgkill liveness probe
 *                       before each apply (all-probed).
 */
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

#include "bucketinv.h"
#include "csvrow.h"
#include "proxylock.h"
#include "chain.h"
#include "donate.h"
#include "registry.h"
#include "schedctl.h"
#include "waitq.h"

#define MAX_REPS 64

_Static_assert(BINV_WAITQ_SHIFT == PLK_WAITQ_SHIFT, "bucketinv.h copies lib/waitq.c's hash");

static int reps = 5;
static int cell_ms = 1000;
static long pairs = 10000;
static bool weak_idle, partner_idle;
static int hogs = 1;


/* --- 1. bucket inversion --------------------------------------------- */

#define NM 7  /* metrics per run */

/* One run; out: delay p50, p99, max (us), raw call-to-return p99 (us),
 * sched calls per contended acquisition, W's contended acquisitions/s,
 * sched calls per contended acquisition of W's (W's lends and P's
 * restores, plus the few of the rest: B's lends change nothing). */
static void binv_once(struct binv *s, int variant, double out[NM])
{
	s->weak_active = variant > 0;
	s->split = variant == 2;
	s->weak_idle = weak_idle;
	s->partner_idle = partner_idle;
	s->hogs = hogs;
	s->ms = cell_ms;
	binv_run(s);
	out[0] = (double)binv_pct(s->delay, s->n, 50) / 1000;
	out[1] = (double)binv_pct(s->delay, s->n, 99) / 1000;
	out[2] = (double)binv_pct(s->delay, s->n, 100) / 1000;
	out[3] = (double)binv_pct(s->raw, s->n, 99) / 1000;
	out[4] = binv_calls_per_contended(s);
	out[5] = (double)s->weak_lends * 1000.0 / cell_ms;
	out[6] = s->weak_lends ? (double)(s->st1.setattr_calls + s->st1.setaff_calls -
	                                  s->st0.setattr_calls - s->st0.setaff_calls) /
	                         (double)s->weak_lends : 0;
}

static void bench_bucket_inversion(void)
{
	static union binv_lock locks[BINV_NLOCKS];
	static struct binv s;
	static const char *metrics[NM] = { "delay_p50", "delay_p99", "delay_max", "raw_p99",
	                                   "sched_calls_per_contended", "weak_lends_per_s",
	                                   "sched_calls_per_weak_lend" };
	static const char *units[NM] = { "us", "us", "us", "us", "calls", "1/s", "calls" };
	static const char *names[3] = { "bucket-inversion-baseline", "bucket-inversion",
	                                "bucket-inversion-split" };
	static double v[3][NM][MAX_REPS];
	const char *impl = weak_idle ? "proxylock-weak-idle" : "proxylock";

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "bucketbench: bucket-inversion needs 2 CPUs; skipped\n");
		return;
	}
	if (!binv_pick(&s, locks) || !binv_same_bucket(s.a, s.b)) {
		fprintf(stderr, "bucketbench: no two locks in one bucket (hash copy stale?)\n");
		exit(1);
	}
	/* Interleaved: baseline, active, and (control) active with W's lock
	 * in another bucket, which tells the bucket's share of the delay
	 * from the rest of what W and P do to the machine. */
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < 3; k++) {
			double out[NM];

			binv_once(&s, k, out);
			for (int m = 0; m < NM; m++)
				v[k][m][r] = out[m];
		}
	for (int k = 0; k < 3; k++)
		for (int m = 0; m < NM; m++)
			if (k || m < 4)
				row(names[k], impl, 4 + hogs, (long)BINV_HOLD_NS, metrics[m], v[k][m], reps,
				    units[m]);
	{
		double ratio[MAX_REPS];

		for (int r = 0; r < reps; r++)
			ratio[r] = v[0][1][r] > 0 ? v[1][1][r] / v[0][1][r] : 0;
		row("bucket-inversion", impl, 4 + hogs, (long)BINV_HOLD_NS, "p99_ratio", ratio, reps,
		    "ratio");
	}
}

/* --- main ------------------------------------------------------------ */

static void bench_lend_cost(void);

int main(int argc, char **argv)
{
	const char *w = argc > 1 ? argv[1] : "";

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
			cell_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			pairs = atol(argv[++i]);
		else if (!strcmp(argv[i], "--hogs") && i + 1 < argc)
			hogs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--weak-idle"))
			weak_idle = true;
		else if (!strcmp(argv[i], "--partner-idle"))
			partner_idle = true;
	}
	reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
	printf("# caps=%u donate_kinds=%u preload=0\n", proxylock_caps(), proxylock_donate_kinds());
	if (!strcmp(w, "bucket-inversion"))
		bench_bucket_inversion();
	else if (!strcmp(w, "lend-cost"))
		bench_lend_cost();
	else {
		fprintf(stderr, "usage: bucketbench bucket-inversion|lend-cost [--reps N] [--ms N]"
		                " [--pairs N] [--hogs N] [--weak-idle] [--partner-idle]\n");
		return 2;
	}
	return 0;
}

/* --- 2. lend cost ---------------------------------------------------- */

/* The target of the lends: pinned to CPU 1 at nice 19, asleep. */
struct target {
	pid_t tid;
	int stop;
};

static void *target_main(void *p)
{
	struct target *t = p;

	binv_context(1, SCHED_OTHER, 19);
	__atomic_store_n(&t->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
		usleep(10000);
	return NULL;
}

/* What a waiter on CPU 0 at nice 0, SCHED_FIFO 10, uclamp 1024 would
 * lend, restricted to @kinds, on top of @base. */
static struct plk_sched_ctx lent_ctx(const struct plk_sched_ctx *base, unsigned kinds)
{
	struct plk_sched_ctx l = *base;

	if (kinds & PROXYLOCK_DONATE_AFFINITY) {
		CPU_ZERO(&l.cpus);
		CPU_SET(0, &l.cpus);
	}
	if (kinds & PROXYLOCK_DONATE_NICE)
		l.nice = 0;
	if (kinds & PROXYLOCK_DONATE_RT) {
		l.policy = SCHED_FIFO;
		l.rt_prio = 10;
	}
	if (kinds & PROXYLOCK_DONATE_UCLAMP)
		l.umin = l.umax = 1024;
	return l;
}

/* The liveness probe the engine makes before applying to a thread. */
static void probe(pid_t tid)
{
	syscall(SYS_tgkill, getpid(), tid, 0);
}

/* ns per lend + restore pair over @n pairs, each apply preceded by the
 * liveness probe if @probed; *@calls: sched set calls per pair. */
static double pairs_once(pid_t tid, const struct plk_sched_ctx *base,
                         const struct plk_sched_ctx *lent, long n, bool probed, double *calls)
{
	struct plk_sched_ctx cur = *base;
	struct proxylock_stats a, b;
	uint64_t t0, t1;

	proxylock_stats_get(&a);
	t0 = binv_now();
	for (long i = 0; i < n; i++) {
		if (probed)
			probe(tid);
		plk_sched_apply(tid, &cur, lent, NULL);   /* lend */
		if (probed)
			probe(tid);
		plk_sched_apply(tid, &cur, base, NULL);   /* restore */
	}
	t1 = binv_now();
	proxylock_stats_get(&b);
	*calls = (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
	         (double)n;
	return (double)(t1 - t0) / (double)n;
}

/*
 * The same pair through the whole engine, as a contended lock makes it:
 * under a bucket, the lend is recorded for the target (plk_donate_set),
 * then applied once the bucket is dropped (plk_chain_flush: the token,
 * the liveness probe, the first lend's re-read of the base, the calls);
 * then withdrawn and restored the same way.  The lock is only a key.
 */
static double engine_pairs_once(pid_t tid, const struct plk_sched_ctx *w, unsigned kinds, long n,
                                double *calls)
{
	static int key;
	struct proxylock_stats a, b;
	struct plk_bucket *bk;
	struct plk_lends l;
	uint64_t t0, t1;

	plk_lends_init(&l);
	plk_lend_add(&l.all, w, kinds);
	plk_chain_prepare(NULL);
	(void)plk_registry_reserve(tid);
	proxylock_stats_get(&a);
	t0 = binv_now();
	for (long i = 0; i < n; i++) {
		bk = plk_waitq_lock(&key);
		plk_donate_set(tid, &key, &l, 1);  /* lend */
		plk_waitq_unlock(bk);
		plk_chain_flush();
		bk = plk_waitq_lock(&key);
		plk_donate_withdraw_tid(tid, &key);  /* restore */
		plk_waitq_unlock(bk);
		plk_chain_flush();
	}
	t1 = binv_now();
	proxylock_stats_get(&b);
	*calls = (double)(b.setattr_calls + b.setaff_calls - a.setattr_calls - a.setaff_calls) /
	         (double)n;
	return (double)(t1 - t0) / (double)n;
}

/*
 * One thread applies a lend to a sleeping target and restores it, the
 * calls the engine makes for it (plk_sched_apply: only the fields that
 * differ), timed in batches of --pairs; the median of --reps batches.
 * Kinds the kernel or our privileges refuse are reported as n/a (a
 * comment line; bench/report.py says so in the summary), never timed:
 * plk_sched_apply would skip them and the figure would be a no-op's.
 */
static void bench_lend_cost(void)
{
	static const struct { const char *name; unsigned kinds; bool probed; } ks[] = {
		{ "uclamp", PROXYLOCK_DONATE_UCLAMP, false },
		{ "affinity", PROXYLOCK_DONATE_AFFINITY, false },
		{ "nice", PROXYLOCK_DONATE_NICE, false }, { "rt", PROXYLOCK_DONATE_RT, false },
		{ "all", PROXYLOCK_DONATE_ALL, false },
		{ "all-probed", PROXYLOCK_DONATE_ALL, true },  /* + tgkill before each */
		{ "engine-affinity", PROXYLOCK_DONATE_AFFINITY, false },  /* engine_pairs_once */
		{ "engine-nice", PROXYLOCK_DONATE_NICE, false },
		{ "engine-rt", PROXYLOCK_DONATE_RT, false },
		{ "engine-all", PROXYLOCK_DONATE_ALL, false },
	};
	enum { NK = sizeof(ks) / sizeof(ks[0]) };
#define pairs_of(k, tid, base, lent, n, calls)                                            \
	(!strncmp(ks[k].name, "engine-", 7)                                              \
	         ? engine_pairs_once((tid), (lent), ks[k].kinds & caps, (n), (calls))   \
	         : pairs_once((tid), (base), (lent), (n), ks[k].probed, (calls)))
	static double v[NK][2][MAX_REPS];
	unsigned caps = proxylock_caps();
	struct target t = { 0, 0 };
	struct plk_sched_ctx base, lent[NK];
	pthread_t th;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "bucketbench: lend-cost needs 2 CPUs; skipped\n");
		return;
	}
	pthread_create(&th, NULL, target_main, &t);
	while (!__atomic_load_n(&t.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(20000);  /* its context is set */
	if (plk_sched_read(t.tid, &base) != 0) {
		fprintf(stderr, "bucketbench: cannot read the target's context\n");
		exit(1);
	}
	for (int k = 0; k < NK; k++) {
		unsigned kinds = ks[k].kinds & caps;

		lent[k] = lent_ctx(&base, kinds);
		if (ks[k].kinds != PROXYLOCK_DONATE_ALL && !kinds)
			printf("# lend-cost %s: n/a (not supported by this kernel or these privileges)\n",
			       ks[k].name);
		else if (ks[k].kinds == PROXYLOCK_DONATE_ALL)
			printf("# lend-cost %s: kinds=%u\n", ks[k].name, kinds);
	}
	for (int k = 0; k < NK; k++) {  /* warm up */
		double c;

		pairs_of(k, t.tid, &base, &lent[k], pairs / 10 + 1, &c);
	}
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < NK; k++)
			if ((ks[k].kinds & caps) != 0)
				v[k][0][r] = pairs_of(k, t.tid, &base, &lent[k], pairs, &v[k][1][r]);
	for (int k = 0; k < NK; k++) {
		char name[64];

		if (!(ks[k].kinds & caps))
			continue;
		snprintf(name, sizeof(name), "lend-cost-%s", ks[k].name);
		row(name, "proxylock", 1, 0, "pair_ns", v[k][0], reps, "ns");
		row(name, "proxylock", 1, 0, "sched_calls_per_pair", v[k][1], reps, "calls");
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
}

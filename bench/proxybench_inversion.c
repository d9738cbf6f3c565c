/* SPDX-License-Identifier: MIT */
/*
 * proxybench_inversion.c - the inversion (scenario.h): a big task
 * waiting on a small holder on a busy CPU, every contender and proxylock
 * lending one kind at a time ("inversion"; its wait samples to
 * --samples for the CDF plot); the same with a big writer and two small
 * readers ("inversion-rw"); and its reverse, a background waiter that
 * must lend its foreground holder nothing ("inversion-reverse").
 */
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "csvrow.h"
#include "proxybench.h"

struct scenario inv;

/* One run of scenario.h's scenario (an rwlock's: two small readers and
 * a big writer); out: p50, p99, max wait, CS wall, CS CPU (us), sched
 * calls per contended acquisition. */
void inversion_once(const struct impl *im, unsigned kinds, double out[6], FILE *samples,
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

void bench_inversion(void)
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
void bench_inversion_rw(void)
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

void bench_inversion_reverse(void)
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

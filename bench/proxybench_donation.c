/* SPDX-License-Identifier: MIT */
/*
 * proxybench_donation.c - donation's own cost ("donation-cost"): the
 * scheduler calls per contended acquisition between equal threads
 * (unpinned, and each pinned to its own CPU), where nothing may be lent,
 * and in the inversion, where they are its lends and restores; with the
 * library's count of its calls and the scenario's own, for bench/run's
 * strace cross-check.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "csvrow.h"
#include "proxybench.h"

static uint64_t sched_calls(void)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return st.setattr_calls + st.setaff_calls;
}

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
void bench_donation_cost(void)
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

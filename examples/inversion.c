/* SPDX-License-Identifier: MIT */
/*
 * inversion.c - utilization inversion, and its cure, on a 2-CPU machine:
 * the scenario of scenario.h (a big task waiting on a lock held by a
 * small task on a saturated CPU), with donation off, then on.
 *
 *   usage: inversion [seconds-per-mode]     (default 3)
 *
 * Built a second time with -DINVERSION_PTHREAD as inversion-pthread: the
 * same scenario in plain pthread calls, not linked with libproxylock,
 * run once per process; run it with and without
 * LD_PRELOAD=libproxylock-preload.so to see the interposer's cure
 * (examples/run-preload-demo does both).
 */
/* CPU_SET, sched_getcpu: GNU extensions (meson defines this for the
 * whole project; a plain `cc x.c $(pkg-config --cflags --libs
 * proxylock)` does not). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "proxylock.h"
#include "scenario.h"

#ifdef INVERSION_PTHREAD
#include <dlfcn.h>

/* The library's calls, if the interposer is loaded (it exports them). */
static void *loaded(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static unsigned kinds_if_loaded(const char *name)
{
	unsigned (*f)(void);
	void *p = loaded(name);

	memcpy(&f, &p, sizeof(p));
	return p ? f() : 0;
}

static void stats_if_loaded(struct proxylock_stats *st)
{
	void (*f)(struct proxylock_stats *);
	void *p = loaded("proxylock_stats_get");

	memset(st, 0, sizeof(*st));
	memcpy(&f, &p, sizeof(p));
	if (p)
		f(st);
}

#define proxylock_caps() kinds_if_loaded("proxylock_caps")
#define proxylock_donate_kinds() kinds_if_loaded("proxylock_donate_kinds")
#define proxylock_stats_get(st) stats_if_loaded(st)

static pthread_mutex_t lock;

static int demo_lock(void *m)
{
	return pthread_mutex_lock(m);
}

static int demo_unlock(void *m)
{
	return pthread_mutex_unlock(m);
}
#else
static proxylock_mutex_t lock;

static int demo_lock(void *m)
{
	return proxylock_mutex_lock(m);
}

static int demo_unlock(void *m)
{
	return proxylock_mutex_unlock(m);
}
#endif

static struct scenario sc;

static void kinds_str(unsigned k, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", k & PROXYLOCK_DONATE_UCLAMP ? "uclamp," : "",
	         k & PROXYLOCK_DONATE_AFFINITY ? "affinity," : "",
	         k & PROXYLOCK_DONATE_NICE ? "nice," : "", k & PROXYLOCK_DONATE_RT ? "rt," : "",
	         k ? "" : "none");
	if (k)
		buf[strlen(buf) - 1] = 0;
}

/* Run the scenario for @secs with donation on or off; returns p99 in us. */
static uint64_t run(int donate, int secs)
{
	struct proxylock_stats before, after;
	uint64_t p50, p99, cs;
	char lent[64];

#ifdef INVERSION_PTHREAD
	pthread_mutex_init(&lock, NULL);  /* a proxylock under the interposer */
#else
	proxylock_mutexattr_t attr;

	proxylock_mutexattr_init(&attr);
	proxylock_mutexattr_setdonate(&attr, donate ? PROXYLOCK_DONATE_ALL : PROXYLOCK_DONATE_NONE);
	proxylock_mutex_init(&lock, &attr);
#endif
	sc.lock = demo_lock;
	sc.unlock = demo_unlock;
	sc.m = &lock;
	sc.uclamp = proxylock_caps() & PROXYLOCK_DONATE_UCLAMP;
	proxylock_stats_get(&before);
	scenario_run(&sc, secs * 1000);
	proxylock_stats_get(&after);
	p50 = scenario_pct(sc.waits, sc.nwaits, 50) / 1000;
	p99 = scenario_pct(sc.waits, sc.nwaits, 99) / 1000;
	cs = scenario_pct(sc.walls, sc.ncs, 50) / 1000;
	kinds_str(donate ? proxylock_donate_kinds() : 0, lent, sizeof(lent));
	printf("donation=%-3s wait_p50_us=%llu wait_p99_us=%llu cs_wall_us=%llu"
	       " samples=%d lent=%s sched_calls=%llu\n",
	       donate ? "on" : "off", (unsigned long long)p50, (unsigned long long)p99,
	       (unsigned long long)cs, sc.nwaits, lent,
	       (unsigned long long)(after.setattr_calls - before.setattr_calls +
	                            after.setaff_calls - before.setaff_calls));
	fflush(stdout);
	return p99 ? p99 : 1;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 3;
	uint64_t off, on;
	char caps[64];

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "inversion: needs 2 CPUs (a big CPU 0 and a busy little CPU 1)\n");
		return 2;
	}
	kinds_str(proxylock_caps(), caps, sizeof(caps));
	printf("# kernel/privileges allow: %s; critical section: %d us of CPU (the physical limit)\n",
	       caps, SCENARIO_CS_CPU_NS / 1000);
#ifdef INVERSION_PTHREAD
	/* One mode per process: donation is on exactly when the interposer
	 * is loaded. */
	(void)off;
	on = run(proxylock_caps() != 0, secs);
	printf("# pthread mutex, interposer %s: p99 wait %.1f x the physical limit\n",
	       proxylock_caps() ? "loaded" : "not loaded", (double)on * 1000.0 / SCENARIO_CS_CPU_NS);
#else
	off = run(0, secs);
	on = run(1, secs);
	printf("# big task's p99 wait with donation = %.3f x without (%.1f x the physical limit)\n",
	       (double)on / (double)off, (double)on * 1000.0 / SCENARIO_CS_CPU_NS);
#endif
	return 0;
}

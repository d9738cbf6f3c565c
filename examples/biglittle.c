/* SPDX-License-Identifier: MIT */
/*
 * biglittle.c - utilization inversion on a big.LITTLE machine, where the
 * scheduler places a task by its clamped utilization (issue 14, the seed's
 * scenario).  Made for the emulated big.LITTLE arm64 guest
 * (test/arm64/run-arm64.sh biglittle); runs on any machine whose
 * /sys/devices/system/cpu/cpuN/cpu_capacity differ.
 *
 *   - a hog pinned to each little CPU (TCG runs every CPU at one speed:
 *     the hogs make "little" slow for real), capped at uclamp_max 300 as
 *     background work is, so that energy-aware scheduling stays on (a
 *     little CPU whose running tasks do not fit it is "overutilized",
 *     and then the load balancer moves any task anywhere);
 *   - a small task (nice 15, uclamp_max 300, uclamp_min 0) that may run
 *     on every CPU but starts each round on a little one, holding a lock
 *     for BIGLITTLE_CS_US (default 20000) us of work (as measured on an
 *     idle big CPU at start: a fixed amount of work, not of CPU time,
 *     which TCG on a busy host charges with stolen time); its uclamp_max
 *     keeps it little (it never becomes a misfit), unless a waiter lends
 *     it more.  Against the nice-0 hog it gets about 1/30 of its little
 *     CPU: little is that much slower for it;
 *   - a big task (uclamp_min = uclamp_max = 1024) pinned to a big CPU,
 *     taking the lock every BIGLITTLE_BIG_PERIOD_US (1 ms).  It waits
 *     once per critical section and takes the lock free in between, so
 *     its p99 wait sees the critical sections only where they are more
 *     than 1% of its acquisitions; wait_max and the critical section's
 *     wall time always do.
 *
 * Between critical sections the small task goes back to its little CPU
 * (pins itself there, then lets go of the pin) and spins there for 2 ms:
 * it never sleeps, so no wake-up placement decides, and a running task is
 * never moved down again by the scheduler, so this stands in for the
 * energy-aware wake-up that would put a clamped task back on a little
 * CPU.  Every critical section thus starts where the clamp keeps the small
 * task.  While the big task waits, donation lends it the big task's
 * clamps: uclamp_min 1024 does not fit a little CPU, which makes the CPU
 * overutilized and the holder a misfit, and the scheduler moves it to a
 * big one.
 *
 * Why 20 ms of work: the scheduler marks a CPU as holding a misfit only
 * while the misfit task is current there (rq->misfit_task_load, set when
 * it is picked or ticks, cleared when the hog is).  With 2 ms of work (the
 * first version) the whole critical section fit in one or two of the
 * small task's slices on the little CPU, so the move came, if at all,
 * after most of the work: 38-50% of it ran on big CPUs.  With 20 ms, one
 * or two slices of the little CPU pass before the move and about 94% runs
 * on big (docs/design.md, "The big.LITTLE scenario").
 *
 * The reverse scenario (issue 30, BIGLITTLE_REVERSE=1): the same hogs; a
 * big foreground thread (nice 0, uclamp_min = uclamp_max = 1024, free to
 * run anywhere, so on big CPUs) holds the lock for the same critical
 * sections, and a little background thread (nice 15, uclamp_max 300,
 * pinned to the little CPUs) asks for it every BIGLITTLE_BIG_PERIOD_US.
 * The waiter does not outrank the holder, so it lends no CPUs: the
 * holder's work stays on big CPUs as with no waiter at all
 * (BIGLITTLE_REVERSE=2).  A rule that moved a holder onto its waiters'
 * CPUs whoever they are would run it on the crowded little ones.
 *
 * The condvar scenario (issue 31, BIGLITTLE_COND=1): a wait for work, not
 * for a lock.  The same hogs; the big task (as above, on a big CPU) posts
 * a job and waits on a condvar for its result; a worker with the small
 * task's context (nice 15, uclamp_max 300) does the job (the same
 * critical section's work, no lock held) and signals the result under
 * the condvar's mutex.  Between jobs the worker goes home to its little
 * CPU as the small task does, and polls for the next job there (a sleep
 * would let wake-up placement decide where it runs).  The big task's
 * wait lends its clamps to the condvar's learned waker, the worker:
 * uclamp_min 1024 makes it a misfit on the little CPU and the scheduler
 * moves it to a big one.  After each result the worker reads its own
 * attributes (sched_getattr): once its signal and unlock have returned,
 * the wait is over and it must be back at its own clamps (restored=);
 * the next job is posted only after that read, so that the next wait's
 * lend is not what it sees.
 *
 * One mode per process: the library's PROXYLOCK_DONATE decides what is
 * lent (none, uclamp, all).  Built twice: linked with libproxylock, and as
 * biglittle-pthread, plain pthread calls, a proxylock only under the
 * LD_PRELOAD interposer.  Prints one line:
 *   BIGLITTLE impl=... donate=... cs_us= wait_p50_us= wait_p99_us= wait_max_us=
 *     cs_wall_p50_us= cs_wall_p99_us= cs_big_pct= waits= cs=
 *     [scenario=reverse|reverse-alone|cond] [restored=N/M (cond)]
 * cs_big_pct: the share of sched_getcpu() samples, taken all through the
 * critical sections, that were on a big CPU.
 *
 *   usage: biglittle [seconds]        (default 3)
 */
/* CPU_SET, sched_getcpu: GNU extensions (meson defines this for the
 * whole project; a plain `cc x.c $(pkg-config --cflags --libs
 * proxylock)` does not). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "proxylock.h"

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

#include "../lib/sched_attr.h"  /* the raw sched_setattr (glibc 2.36 has none) */

#define MAX_CPUS 64
#define MAX_SAMPLES 20000

#ifdef BIGLITTLE_PTHREAD
static pthread_mutex_t lock;
static pthread_cond_t result_cv;
#define LOCK() pthread_mutex_lock(&lock)
#define UNLOCK() pthread_mutex_unlock(&lock)
#define WAIT_RESULT() pthread_cond_wait(&result_cv, &lock)
#define SIGNAL_RESULT() pthread_cond_signal(&result_cv)

/* The library's calls if the interposer is loaded (it exports them). */
static unsigned kinds_if_loaded(const char *name)
{
	unsigned (*f)(void);
	void *p = dlsym(RTLD_DEFAULT, name);

	memcpy(&f, &p, sizeof(p));
	return p ? f() : 0;
}
#define proxylock_donate_kinds() kinds_if_loaded("proxylock_donate_kinds")
#define IMPL (dlsym(RTLD_DEFAULT, "proxylock_caps") ? "preload" : "glibc")
#else
static proxylock_mutex_t lock;
static proxylock_cond_t result_cv;
#define LOCK() proxylock_mutex_lock(&lock)
#define UNLOCK() proxylock_mutex_unlock(&lock)
#define WAIT_RESULT() proxylock_cond_wait(&result_cv, &lock)
#define SIGNAL_RESULT() proxylock_cond_signal(&result_cv)
#define IMPL "proxylock"
#endif

static int ncpus, big[MAX_CPUS], nbig, little[MAX_CPUS], nlittle;
static bool is_big[MAX_CPUS];
static int stop;
static long cs_us = 20000;      /* the critical section's work, in us on an idle big CPU */
static uint64_t units_per_ms;   /* calibrated on an idle big CPU */
static int small_nice = 15, go_home = 1, hog_umax = 300, gap_sleep_us = 0;
static int gap_us = 2000, big_period_us = 1000, reverse, cond;
static int job, result, checked;    /* the condvar scenario's: posted, done, worker read */
static int restored, restore_checks; /* the worker at its own clamps after a result */

static int nwaits, ncs;
static uint64_t waits[MAX_SAMPLES], walls[MAX_SAMPLES];
static uint64_t samples_big, samples_all, samples_cpu[MAX_CPUS];

/* One unit of CPU-bound work, ending in a sample of where it ran. */
static int work_unit(void)
{
	static volatile uint64_t sink;
	uint64_t x = sink;

	for (int k = 0; k < 256; k++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
	return sched_getcpu();
}

static uint64_t clk(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool running(void)
{
	return !__atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static void pin(const int *cpus, int n)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		CPU_SET(cpus[i], &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("sched_setaffinity");
}

static void context(int nice, int umin, int umax)
{
	struct plk_sched_attr a = { .sched_policy = SCHED_OTHER, .sched_nice = nice,
	                            .sched_flags = PLK_SCHED_FLAG_UTIL_CLAMP,
	                            .sched_util_min = (uint32_t)umin,
	                            .sched_util_max = (uint32_t)umax };
	int err = plk_sched_setattr(0, &a);

	if (err != 0)
		fprintf(stderr, "sched_setattr: %s\n", strerror(err));
}

static uint64_t hog_units[MAX_CPUS];

static void *hog(void *p)
{
	int cpu = (int)(intptr_t)p;
	uint64_t n = 0;

	pin(&cpu, 1);
	context(0, 0, hog_umax);
	while (running()) {
		work_unit();
		n++;
	}
	hog_units[cpu] = n;
	return NULL;
}

/* The critical section's work, sampled: where it ran goes to the counts. */
static void section(void)
{
	uint64_t t0 = clk(CLOCK_MONOTONIC), nb = 0, na = 0;
	uint64_t units = units_per_ms * (uint64_t)cs_us / 1000;

	for (uint64_t u = 0; u < units; u++) {
		int cpu = work_unit();

		na++;
		if (cpu >= 0 && cpu < MAX_CPUS) {
			nb += is_big[cpu];
			samples_cpu[cpu]++;
		}
	}
	if (ncs < MAX_SAMPLES)
		walls[ncs++] = clk(CLOCK_MONOTONIC) - t0;
	samples_big += nb;
	samples_all += na;
}

/* Home: a little CPU, then free to go anywhere. */
static void home(void)
{
	int all[MAX_CPUS];

	for (int i = 0; i < ncpus; i++)
		all[i] = i;
	pin(&little[0], 1);
	pin(all, ncpus);
}

static void *small_task(void *p)
{
	(void)p;
	context(small_nice, 0, 300);
	if (!go_home)
		home();
	while (running()) {
		uint64_t t0;

		if (go_home)
			home();
		/* A gap outside the lock (BIGLITTLE_GAP_US, 2 ms), spinning
		 * on the little CPU: a sleep would let the woken task run its
		 * fresh slice at once, and a migrated task is placed with a
		 * fresh slice too; the gap uses it up, so that the critical
		 * section starts at the little CPU's real pace. */
		t0 = clk(CLOCK_MONOTONIC);
		if (gap_sleep_us)
			usleep((useconds_t)gap_sleep_us);
		else
			while (clk(CLOCK_MONOTONIC) - t0 < (uint64_t)gap_us * 1000 && running())
				;
		/* A fixed amount of work, not of CPU time: under TCG on a busy
		 * host a vCPU's stolen time is charged to whatever it ran. */
		LOCK();
		section();
		UNLOCK();
	}
	return NULL;
}

static void *big_task(void *p)
{
	(void)p;
	pin(&big[0], 1);
	context(0, 1024, 1024);
	while (running()) {
		uint64_t t0 = clk(CLOCK_MONOTONIC);

		LOCK();
		if (nwaits < MAX_SAMPLES)
			waits[nwaits++] = clk(CLOCK_MONOTONIC) - t0;
		UNLOCK();
		usleep((useconds_t)big_period_us);
	}
	return NULL;
}

/* Does the caller run at exactly @nice, uclamp @umin..@umax (the kernel's view)? */
static bool at_context(int nice, int umin, int umax)
{
	struct plk_sched_attr a;

	return plk_sched_getattr(0, &a) == 0 && a.sched_nice == nice &&
	       a.sched_util_min == (uint32_t)umin && a.sched_util_max == (uint32_t)umax;
}

/* The condvar scenario's worker: the small task's context, no lock held
 * for its work; the result is signalled under the mutex. */
static void *cond_worker(void *p)
{
	(void)p;
	context(small_nice, 0, 300);
	while (running()) {
		uint64_t t0;

		home();
		t0 = clk(CLOCK_MONOTONIC);  /* the gap, as the small task's */
		while (clk(CLOCK_MONOTONIC) - t0 < (uint64_t)gap_us * 1000 && running())
			;
		while (!__atomic_load_n(&job, __ATOMIC_ACQUIRE))
			;  /* the waiter posts one more as it leaves */
		__atomic_store_n(&job, 0, __ATOMIC_RELAXED);
		section();
		LOCK();
		result = 1;
		SIGNAL_RESULT();
		UNLOCK();
		restore_checks++;
		restored += at_context(small_nice, 0, 300);
		__atomic_store_n(&checked, 1, __ATOMIC_RELEASE);  /* before the next job's wait lends */
	}
	return NULL;
}

/* The condvar scenario's big task: posts a job, waits for its result. */
static void *cond_waiter(void *p)
{
	(void)p;
	pin(&big[0], 1);
	context(0, 1024, 1024);
	__atomic_store_n(&checked, 1, __ATOMIC_RELAXED);
	while (running()) {
		uint64_t t0;
		int rc = 0;

		while (!__atomic_load_n(&checked, __ATOMIC_ACQUIRE))
			usleep(100);  /* the worker has read its own clamps */
		__atomic_store_n(&checked, 0, __ATOMIC_RELAXED);
		t0 = clk(CLOCK_MONOTONIC);
		LOCK();
		__atomic_store_n(&job, 1, __ATOMIC_RELEASE);
		while (!result && rc == 0)
			rc = WAIT_RESULT();
		result = 0;
		UNLOCK();
		if (nwaits < MAX_SAMPLES)
			waits[nwaits++] = clk(CLOCK_MONOTONIC) - t0;
		usleep((useconds_t)big_period_us);
	}
	__atomic_store_n(&job, 1, __ATOMIC_RELEASE);  /* the worker may be polling for one */
	return NULL;
}

/* The reverse scenario's holder: big, in the foreground, anywhere. */
static void *big_holder(void *p)
{
	(void)p;
	context(0, 1024, 1024);
	while (running()) {
		uint64_t t0;

		LOCK();
		section();
		UNLOCK();
		t0 = clk(CLOCK_MONOTONIC);
		while (clk(CLOCK_MONOTONIC) - t0 < (uint64_t)gap_us * 1000 && running())
			;
	}
	return NULL;
}

/* The reverse scenario's waiter: little, in the background, on little CPUs. */
static void *little_waiter(void *p)
{
	(void)p;
	pin(little, nlittle);
	context(small_nice, 0, 300);
	while (running()) {
		uint64_t t0;

		usleep((useconds_t)big_period_us);
		t0 = clk(CLOCK_MONOTONIC);
		LOCK();
		if (nwaits < MAX_SAMPLES)
			waits[nwaits++] = clk(CLOCK_MONOTONIC) - t0;
		UNLOCK();
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct_us(uint64_t *v, int n, int p)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[(n - 1) * p / 100] / 1000;
}

/* Big CPUs: those of the highest cpu_capacity; 0 if all are equal. */
static int read_capacities(void)
{
	long cap[MAX_CPUS], max = 0, min = 1L << 30;

	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (int i = 0; i < ncpus; i++) {
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpu_capacity", i);
		f = fopen(path, "r");
		if (!f || fscanf(f, "%ld", &cap[i]) != 1)
			cap[i] = 1024;
		if (f)
			fclose(f);
		max = cap[i] > max ? cap[i] : max;
		min = cap[i] < min ? cap[i] : min;
	}
	for (int i = 0; i < ncpus; i++) {
		is_big[i] = cap[i] == max;
		if (is_big[i])
			big[nbig++] = i;
		else
			little[nlittle++] = i;
	}
	return max != min;
}

/* Units of work per ms on an idle big CPU (before the hogs start). */
static void calibrate(void)
{
	uint64_t best = 0;

	pin(&big[0], 1);
	for (int r = 0; r < 5; r++) {
		uint64_t n = 0, t0 = clk(CLOCK_MONOTONIC);

		while (clk(CLOCK_MONOTONIC) - t0 < 20000000) {
			work_unit();
			n++;
		}
		best = n > best ? n : best;  /* the least disturbed of five */
	}
	units_per_ms = best / 20 ? best / 20 : 1;
}

/* A whole decimal number in [lo, hi], or a usage message and exit 2. */
static long number(const char *what, const char *text, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < lo || v > hi) {
		fprintf(stderr, "biglittle: %s must be a number from %ld to %ld, not '%s'\n"
		                "usage: biglittle [seconds]   (knobs: BIGLITTLE_* in the environment,"
		                " see examples/biglittle.c)\n", what, lo, hi, text);
		exit(2);
	}
	return v;
}

/* The knob @name from the environment, or @def. */
static int knob(const char *name, int def, int lo, int hi)
{
	const char *env = getenv(name);

	return env ? (int)number(name, env, lo, hi) : def;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? (int)number("seconds", argv[1], 1, 3600) : 3;
	pthread_t hogs[MAX_CPUS], small, bigt;
	char kinds[64];
	unsigned k;

	if (argc > 2) {
		fprintf(stderr, "usage: biglittle [seconds]\n");
		return 2;
	}
	cs_us = knob("BIGLITTLE_CS_US", (int)cs_us, 1, 10000000);
	small_nice = knob("BIGLITTLE_SMALL_NICE", small_nice, -20, 19);
	go_home = knob("BIGLITTLE_HOME", go_home, 0, 1);
	gap_us = knob("BIGLITTLE_GAP_US", gap_us, 0, 10000000);
	big_period_us = knob("BIGLITTLE_BIG_PERIOD_US", big_period_us, 0, 10000000);
	gap_sleep_us = knob("BIGLITTLE_GAP_SLEEP_US", gap_sleep_us, 0, 10000000);
	hog_umax = knob("BIGLITTLE_HOG_UMAX", hog_umax, 0, 1024);
	reverse = knob("BIGLITTLE_REVERSE", reverse, 0, 2);
	cond = knob("BIGLITTLE_COND", cond, 0, 1);
	if (!read_capacities()) {
		fprintf(stderr, "biglittle: every CPU has the same cpu_capacity: not a big.LITTLE machine"
		                " (run it in the arm64 guest: test/arm64/run-arm64.sh biglittle)\n");
		return 2;
	}
	calibrate();
#ifdef BIGLITTLE_PTHREAD
	pthread_mutex_init(&lock, NULL);  /* a proxylock under the interposer */
	pthread_cond_init(&result_cv, NULL);
#else
	proxylock_mutex_init(&lock, NULL);  /* donates what PROXYLOCK_DONATE allows */
	proxylock_cond_init(&result_cv, CLOCK_REALTIME);
#endif
	for (int i = 0; i < nlittle; i++)
		pthread_create(&hogs[i], NULL, hog, (void *)(intptr_t)little[i]);
	usleep(50000);  /* let the hogs own the little CPUs */
	if (cond) {
		pthread_create(&small, NULL, cond_worker, NULL);
		pthread_create(&bigt, NULL, cond_waiter, NULL);
	} else if (reverse) {
		pthread_create(&bigt, NULL, big_holder, NULL);
		if (reverse == 1)
			pthread_create(&small, NULL, little_waiter, NULL);
	} else {
		pthread_create(&small, NULL, small_task, NULL);
		pthread_create(&bigt, NULL, big_task, NULL);
	}
	usleep((useconds_t)secs * 1000000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(bigt, NULL);
	if (reverse != 2)
		pthread_join(small, NULL);
	for (int i = 0; i < nlittle; i++)
		pthread_join(hogs[i], NULL);

	k = proxylock_donate_kinds();
	snprintf(kinds, sizeof(kinds), "%s%s%s%s", k & PROXYLOCK_DONATE_UCLAMP ? ",uclamp" : "",
	         k & PROXYLOCK_DONATE_AFFINITY ? ",affinity" : "",
	         k & PROXYLOCK_DONATE_NICE ? ",nice" : "", k & PROXYLOCK_DONATE_RT ? ",rt" : "");
	printf("BIGLITTLE impl=%s donate=%s cs_us=%ld wait_p50_us=%llu wait_p99_us=%llu wait_max_us=%llu"
	       " cs_wall_p50_us=%llu cs_wall_p99_us=%llu cs_big_pct=%.1f waits=%d cs=%d",
	       IMPL, k ? kinds + 1 : "none", cs_us,
	       (unsigned long long)pct_us(waits, nwaits, 50),
	       (unsigned long long)pct_us(waits, nwaits, 99),
	       (unsigned long long)pct_us(waits, nwaits, 100),
	       (unsigned long long)pct_us(walls, ncs, 50), (unsigned long long)pct_us(walls, ncs, 99),
	       samples_all ? 100.0 * (double)samples_big / (double)samples_all : 0.0, nwaits, ncs);
	if (reverse)
		printf(" scenario=%s", reverse == 1 ? "reverse" : "reverse-alone");
	if (cond)
		printf(" scenario=cond restored=%d/%d", restored, restore_checks);
	/* How much of a CPU each hog got (its work against an idle big CPU's). */
	printf(" hog_pct=");
	for (int i = 0; i < nlittle; i++)
		printf("%s%.0f", i ? "/" : "",
		       100.0 * (double)hog_units[little[i]] / ((double)units_per_ms * secs * 1000));
	printf(" units_per_ms=%llu cpu_samples=", (unsigned long long)units_per_ms);
	for (int i = 0; i < ncpus; i++)
		printf("%s%llu", i ? "/" : "", (unsigned long long)samples_cpu[i]);
#ifndef BIGLITTLE_PTHREAD
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	printf(" contended=%llu donations=%llu lent_uclamp=%llu lent_cond=%llu setattr_calls=%llu",
	       (unsigned long long)st.contended, (unsigned long long)st.donations,
	       (unsigned long long)st.lent_uclamp, (unsigned long long)st.lent_cond,
	       (unsigned long long)st.setattr_calls);
#endif
	printf("\n");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * inversion.c - utilization inversion, and its cure, on a 2-CPU machine.
 *
 * The "little" CPU 1 is saturated by a CPU hog.  A small task (nice 19,
 * pinned to CPU 1, uclamp_max 128 where the kernel has uclamp) holds a
 * lock for a CPU-bound critical section of about 2 ms.  A big task (nice
 * 0, pinned to CPU 0, uclamp_min 1024 where supported) repeatedly takes
 * the lock.  Without donation the big task waits for the small one to
 * crawl through its critical section on the busy CPU; with donation the
 * small task runs, while the big one waits, with the big one's context:
 * its CPU, its nice, its clamps.
 *
 *   usage: inversion [seconds-per-mode]     (default 3)
 *
 * Built a second time with -DINVERSION_PTHREAD as inversion-pthread: the
 * same scenario in plain pthread calls, not linked with libproxylock,
 * run once per process; run it with and without
 * LD_PRELOAD=libproxylock-preload.so to see the interposer's cure
 * (examples/run-preload-demo does both).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proxylock.h"

#ifdef INVERSION_PTHREAD
#include <dlfcn.h>
typedef pthread_mutex_t demo_lock_t;
#define demo_lock(m) pthread_mutex_lock(m)
#define demo_unlock(m) pthread_mutex_unlock(m)
/* The library's calls, if the interposer is loaded (it exports them). */
static unsigned caps_if_loaded(const char *name)
{
	unsigned (*f)(void);
	void *p = dlsym(RTLD_DEFAULT, name);

	memcpy(&f, &p, sizeof(p));
	return p ? f() : 0;
}
static void stats_if_loaded(struct proxylock_stats *st)
{
	void (*f)(struct proxylock_stats *);
	void *p = dlsym(RTLD_DEFAULT, "proxylock_stats_get");

	memset(st, 0, sizeof(*st));
	memcpy(&f, &p, sizeof(p));
	if (p)
		f(st);
}
#define proxylock_caps() caps_if_loaded("proxylock_caps")
#define proxylock_donate_kinds() caps_if_loaded("proxylock_donate_kinds")
#define proxylock_stats_get(st) stats_if_loaded(st)
#else
typedef proxylock_mutex_t demo_lock_t;
#define demo_lock(m) proxylock_mutex_lock(m)
#define demo_unlock(m) proxylock_mutex_unlock(m)
#endif

#define CS_CPU_NS (2 * 1000 * 1000)   /* the critical section's own CPU time */
#define MAX_SAMPLES 100000

struct sched_attr_v1 {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

static demo_lock_t lock;
static int stop;
static uint64_t waits[MAX_SAMPLES], cs_walls[MAX_SAMPLES];
static int nwaits, ncs;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) != 0) {
		perror("sched_setaffinity");
		exit(1);
	}
}

/* Set our nice and, where the kernel has uclamp, our clamps. */
static void set_context(int nice, int umin, int umax)
{
	struct sched_attr_v1 a = { .size = sizeof(a), .sched_policy = SCHED_OTHER,
	                           .sched_nice = nice };

	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		perror("sched_setattr(nice)");
	if (proxylock_caps() & PROXYLOCK_DONATE_UCLAMP) {
		a.sched_flags = 0x60;  /* SCHED_FLAG_UTIL_CLAMP_MIN | _MAX */
		a.sched_util_min = (uint32_t)umin;
		a.sched_util_max = (uint32_t)umax;
		if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
			perror("sched_setattr(uclamp)");
	}
}

static int running(void)
{
	return !__atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static void *hog(void *arg)
{
	(void)arg;
	pin(1);
	set_context(0, 0, 1024);
	while (running())
		;
	return NULL;
}

static void *small_task(void *arg)
{
	(void)arg;
	pin(1);
	set_context(19, 0, 128);
	while (running()) {
		uint64_t t0, cpu0;

		demo_lock(&lock);
		t0 = clock_ns(CLOCK_MONOTONIC);
		cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 < CS_CPU_NS)
			;
		if (ncs < MAX_SAMPLES)
			cs_walls[ncs++] = clock_ns(CLOCK_MONOTONIC) - t0;
		demo_unlock(&lock);
		usleep(500);
	}
	return NULL;
}

static void *big_task(void *arg)
{
	(void)arg;
	pin(0);
	set_context(0, 1024, 1024);
	while (running()) {
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

		demo_lock(&lock);
		if (nwaits < MAX_SAMPLES)
			waits[nwaits++] = clock_ns(CLOCK_MONOTONIC) - t0;
		demo_unlock(&lock);
		usleep(1000);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, int n, int p)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[(n - 1) * p / 100];
}

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
	pthread_t th[3];
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
	nwaits = ncs = 0;
	stop = 0;
	proxylock_stats_get(&before);
	pthread_create(&th[0], NULL, hog, NULL);
	usleep(100000);  /* let the hog own CPU 1 */
	pthread_create(&th[1], NULL, small_task, NULL);
	pthread_create(&th[2], NULL, big_task, NULL);
	sleep((unsigned)secs);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	proxylock_stats_get(&after);
	p50 = pct(waits, nwaits, 50) / 1000;
	p99 = pct(waits, nwaits, 99) / 1000;
	cs = pct(cs_walls, ncs, 50) / 1000;
	kinds_str(donate ? proxylock_donate_kinds() : 0, lent, sizeof(lent));
	printf("donation=%-3s wait_p50_us=%llu wait_p99_us=%llu cs_wall_us=%llu"
	       " samples=%d lent=%s sched_calls=%llu\n",
	       donate ? "on" : "off", (unsigned long long)p50, (unsigned long long)p99,
	       (unsigned long long)cs, nwaits, lent,
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
	       caps, CS_CPU_NS / 1000);
#ifdef INVERSION_PTHREAD
	/* One mode per process: donation is on exactly when the interposer
	 * is loaded.  (off and on keep the output format of the native demo.) */
	(void)off;
	on = run(proxylock_caps() != 0, secs);
	printf("# pthread mutex, interposer %s: p99 wait %.1f x the physical limit\n",
	       proxylock_caps() ? "loaded" : "not loaded", (double)on * 1000.0 / CS_CPU_NS);
	return 0;
#endif
	off = run(0, secs);
	on = run(1, secs);
	printf("# big task's p99 wait with donation = %.3f x without (%.1f x the physical limit)\n",
	       (double)on / (double)off, (double)on * 1000.0 / CS_CPU_NS);
	return 0;
}

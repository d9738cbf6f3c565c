/* SPDX-License-Identifier: MIT */
/*
 * uncontended.c - uncontended lock+unlock cost, proxylock vs glibc
 * pthread_mutex (NORMAL), in one run: repetitions interleaved, median of
 * each, and the ratio.  A benchmark, not a test: no pass/fail.
 * glibc's functions are called through pointers taken from libc.so.6
 * itself, so that under LD_PRELOAD=libproxylock-preload.so the same run
 * also times plain pthread calls through the interposer ("preload").
 *   usage: [LD_PRELOAD=...] uncontended [pairs-per-rep] [reps]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxylock.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int (*glibc_lock)(pthread_mutex_t *), (*glibc_unlock)(pthread_mutex_t *);

static void *libc_sym(const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *p = libc ? dlsym(libc, name) : NULL;

	if (!p) {
		fprintf(stderr, "uncontended: no %s in libc.so.6\n", name);
		exit(1);
	}
	return p;
}

static double run_glibc(long n)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	uint64_t t0 = now_ns();

	for (long i = 0; i < n; i++) {
		glibc_lock(&m);
		__asm__ __volatile__("" ::: "memory");
		glibc_unlock(&m);
	}
	return (double)(now_ns() - t0) / (double)n;
}

/* Plain pthread calls: glibc's, or the interposer's under LD_PRELOAD. */
static double run_pthread(long n)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	uint64_t t0 = now_ns();

	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		__asm__ __volatile__("" ::: "memory");
		pthread_mutex_unlock(&m);
	}
	return (double)(now_ns() - t0) / (double)n;
}

static double run_proxylock(long n)
{
	static proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	uint64_t t0 = now_ns();

	for (long i = 0; i < n; i++) {
		proxylock_mutex_lock(&m);
		__asm__ __volatile__("" ::: "memory");
		proxylock_mutex_unlock(&m);
	}
	return (double)(now_ns() - t0) / (double)n;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	double g[64], p[64], t[64];
	bool preloaded;
	void *lock_sym = libc_sym("pthread_mutex_lock");

	memcpy(&glibc_lock, &lock_sym, sizeof(lock_sym));
	lock_sym = libc_sym("pthread_mutex_unlock");
	memcpy(&glibc_unlock, &lock_sym, sizeof(lock_sym));
	preloaded = dlsym(RTLD_DEFAULT, "pthread_mutex_lock") != libc_sym("pthread_mutex_lock");
	if (reps > 64)
		reps = 64;
	run_glibc(n / 10);  /* warm up */
	run_proxylock(n / 10);
	run_pthread(n / 10);
	for (int r = 0; r < reps; r++) {
		g[r] = run_glibc(n);
		p[r] = run_proxylock(n);
		t[r] = run_pthread(n);
	}
	qsort(g, (size_t)reps, sizeof(double), cmp_d);
	qsort(p, (size_t)reps, sizeof(double), cmp_d);
	qsort(t, (size_t)reps, sizeof(double), cmp_d);
	printf("uncontended lock+unlock ns/pair (median of %d x %ld): glibc-normal %.2f [%.2f..%.2f]"
	       " proxylock %.2f [%.2f..%.2f] ratio %.3f", reps, n, g[reps / 2], g[0], g[reps - 1],
	       p[reps / 2], p[0], p[reps - 1], p[reps / 2] / g[reps / 2]);
	if (preloaded)
		printf(" preload %.2f [%.2f..%.2f] ratio %.3f", t[reps / 2], t[0], t[reps - 1],
		       t[reps / 2] / g[reps / 2]);
	printf("\n");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * rwfast.c - the uncontended rwlock paths against glibc's, in one run:
 * rdlock+unlock and wrlock+unlock pairs, ns per pair, repetitions
 * interleaved, medians reported, with a second (sleeping) thread in the
 * process as every program that needs a lock has.  glibc's functions are
 * called through pointers taken from libc.so.6 itself.
 *   usage: rwfast [pairs per repetition] [repetitions]
 *          rwfast PAIRS 1 glibc-rd|proxylock-rd|glibc-wr|proxylock-wr
 * The second form runs one loop once, for an instruction count that load
 * cannot disturb (valgrind --tool=callgrind; see docs/results.md).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxylock.h"

static int (*g_rdlock)(pthread_rwlock_t *), (*g_wrlock)(pthread_rwlock_t *),
	(*g_unlock)(pthread_rwlock_t *);

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int reps = argc > 2 ? atoi(argv[2]) : 11;
	void *libc = dlopen("libc.so.6", RTLD_NOW);
	static pthread_rwlock_t g = PTHREAD_RWLOCK_INITIALIZER;
	static proxylock_rwlock_t p = PROXYLOCK_RWLOCK_INITIALIZER;
	double t[4][64];
	pthread_t th;

	if (!libc || reps > 64)
		return 1;
	void *fr = dlsym(libc, "pthread_rwlock_rdlock"), *fw = dlsym(libc, "pthread_rwlock_wrlock"),
	     *fu = dlsym(libc, "pthread_rwlock_unlock");
	const char *only = argc > 3 ? argv[3] : NULL;

	if (!fr || !fw || !fu)
		return 1;
	memcpy(&g_rdlock, &fr, sizeof(fr));
	memcpy(&g_wrlock, &fw, sizeof(fw));
	memcpy(&g_unlock, &fu, sizeof(fu));
	pthread_create(&th, NULL, sleeper, NULL);
	proxylock_rwlock_rdlock(&p);  /* claims this thread's read set */
	proxylock_rwlock_unlock(&p);
	g_rdlock(&g);
	g_unlock(&g);
	if (only) {
		if (!strcmp(only, "glibc-rd"))
			for (long i = 0; i < n; i++) {
				g_rdlock(&g);
				g_unlock(&g);
			}
		else if (!strcmp(only, "proxylock-rd"))
			for (long i = 0; i < n; i++) {
				proxylock_rwlock_rdlock(&p);
				proxylock_rwlock_unlock(&p);
			}
		else if (!strcmp(only, "glibc-wr"))
			for (long i = 0; i < n; i++) {
				g_wrlock(&g);
				g_unlock(&g);
			}
		else
			for (long i = 0; i < n; i++) {
				proxylock_rwlock_wrlock(&p);
				proxylock_rwlock_unlock(&p);
			}
		return 0;
	}
	for (int r = 0; r < reps; r++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++) {
			g_rdlock(&g);
			g_unlock(&g);
		}
		double t1 = now_ns();

		for (long i = 0; i < n; i++) {
			proxylock_rwlock_rdlock(&p);
			proxylock_rwlock_unlock(&p);
		}
		double t2 = now_ns();

		for (long i = 0; i < n; i++) {
			g_wrlock(&g);
			g_unlock(&g);
		}
		double t3 = now_ns();

		for (long i = 0; i < n; i++) {
			proxylock_rwlock_wrlock(&p);
			proxylock_rwlock_unlock(&p);
		}
		double t4 = now_ns();

		t[0][r] = (t1 - t0) / n;
		t[1][r] = (t2 - t1) / n;
		t[2][r] = (t3 - t2) / n;
		t[3][r] = (t4 - t3) / n;
	}
	for (int k = 0; k < 4; k++)
		qsort(t[k], (size_t)reps, sizeof(double), cmp);
	printf("rdlock+unlock: glibc %.2f ns, proxylock %.2f ns, ratio %.2f\n", t[0][reps / 2],
	       t[1][reps / 2], t[1][reps / 2] / t[0][reps / 2]);
	printf("wrlock+unlock: glibc %.2f ns, proxylock %.2f ns, ratio %.2f\n", t[2][reps / 2],
	       t[3][reps / 2], t[3][reps / 2] / t[2][reps / 2]);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * race_probe.c - what a race detector makes of proxylocks: run in a TSan
 * build (meson's tsan suite) and under Helgrind and DRD (the valgrind
 * suite):
 *   guarded      a counter every thread updates under one proxylock:
 *                the tool must stay quiet (exit 0);
 *   unguarded    the same, with one thread skipping the lock: the tool
 *                must report the race (the test expects failure);
 *   lock-order   A then B in one thread, later B then A in another: no
 *                deadlock happens, but the tool must report the lock-order
 *                inversion, which it can only do because proxylocks
 *                annotate themselves as mutexes (expects failure).
 * ITERS in the environment sets the loop count (Valgrind is slow).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxylock.h"

static proxylock_mutex_t a = PROXYLOCK_MUTEX_INITIALIZER, b = PROXYLOCK_MUTEX_INITIALIZER;
static long counter;
static int skip_lock_in_second;

static int iters = 100000;

static void *bump(void *arg)
{
	int second = arg != NULL;

	for (int i = 0; i < iters; i++) {
		if (second && skip_lock_in_second) {
			counter++;
			continue;
		}
		proxylock_mutex_lock(&a);
		counter++;
		proxylock_mutex_unlock(&a);
	}
	return NULL;
}

static void *a_then_b(void *arg)
{
	(void)arg;
	proxylock_mutex_lock(&a);
	proxylock_mutex_lock(&b);
	proxylock_mutex_unlock(&b);
	proxylock_mutex_unlock(&a);
	return NULL;
}

static void *b_then_a(void *arg)
{
	(void)arg;
	proxylock_mutex_lock(&b);
	proxylock_mutex_lock(&a);
	proxylock_mutex_unlock(&a);
	proxylock_mutex_unlock(&b);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "guarded";
	pthread_t t1, t2;

	if (getenv("ITERS"))
		iters = atoi(getenv("ITERS"));
	if (!strcmp(mode, "lock-order")) {
		pthread_create(&t1, NULL, a_then_b, NULL);
		pthread_join(t1, NULL);  /* one after the other: no real deadlock */
		pthread_create(&t2, NULL, b_then_a, NULL);
		pthread_join(t2, NULL);
		return 0;
	}
	skip_lock_in_second = !strcmp(mode, "unguarded");
	pthread_create(&t1, NULL, bump, NULL);
	pthread_create(&t2, NULL, bump, (void *)1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("counter %ld\n", counter);
	return skip_lock_in_second || counter == 2L * iters ? 0 : 1;
}

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
 *                annotate themselves as mutexes (expects failure);
 *   rw-guarded   one thread adds to the counter under a proxylock
 *                rwlock's write hold, the other reads it under read
 *                holds and adds under write holds: quiet (exit 0);
 *   rw-readers   both add under read holds only, which exclude writers
 *                but not each other: the tool must report the race,
 *                which it can only do because rwlocks annotate
 *                themselves as reader-writer locks (expects failure);
 *   rw-lock-order  lock-order, with the rwlock (write-held) as B.
 *   rw-set-reuse  a thread read-locks once and exits; a thread alive
 *                before it started then read-locks, taking over the read
 *                set the first gave back (lib/rdset.c), ordered after it
 *                only by the library's own claim: quiet (exit 0).
 * ITERS in the environment sets the loop count (Valgrind is slow).
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxylock.h"

static proxylock_mutex_t a = PROXYLOCK_MUTEX_INITIALIZER, b = PROXYLOCK_MUTEX_INITIALIZER;
static proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
static long counter;
static volatile long seen;
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

static void *rw_bump(void *arg)
{
	int second = arg != NULL;

	for (int i = 0; i < iters; i++) {
		if (skip_lock_in_second) {  /* rw-readers: a write under a read hold */
			proxylock_rwlock_rdlock(&rw);
			counter++;
			proxylock_rwlock_unlock(&rw);
			continue;
		}
		if (second) {
			proxylock_rwlock_rdlock(&rw);
			seen = counter;
			proxylock_rwlock_unlock(&rw);
		}
		proxylock_rwlock_wrlock(&rw);
		counter++;
		proxylock_rwlock_unlock(&rw);
	}
	return NULL;
}

/* rw-set-reuse: the later reader waits on a relaxed flag, which orders
 * nothing for TSan: only the read set's claim orders it after the first
 * reader's exit, which gave the set back. */
static proxylock_rwlock_t rw_reuse = PROXYLOCK_RWLOCK_INITIALIZER;
static int first_reader_gone;

static void *read_once(void *arg)
{
	(void)arg;
	proxylock_rwlock_rdlock(&rw_reuse);
	proxylock_rwlock_unlock(&rw_reuse);
	return NULL;
}

static void *read_after_first_gone(void *arg)
{
	while (!__atomic_load_n(&first_reader_gone, __ATOMIC_RELAXED))
		sched_yield();
	return read_once(arg);
}

static bool b_is_rw;

static void lock_b(void)
{
	if (b_is_rw)
		proxylock_rwlock_wrlock(&rw);
	else
		proxylock_mutex_lock(&b);
}

static void unlock_b(void)
{
	if (b_is_rw)
		proxylock_rwlock_unlock(&rw);
	else
		proxylock_mutex_unlock(&b);
}

static void *a_then_b(void *arg)
{
	(void)arg;
	proxylock_mutex_lock(&a);
	lock_b();
	unlock_b();
	proxylock_mutex_unlock(&a);
	return NULL;
}

static void *b_then_a(void *arg)
{
	(void)arg;
	lock_b();
	proxylock_mutex_lock(&a);
	proxylock_mutex_unlock(&a);
	unlock_b();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "guarded";
	pthread_t t1, t2;

	if (getenv("ITERS"))
		iters = atoi(getenv("ITERS"));
	b_is_rw = !strcmp(mode, "rw-lock-order");
	if (!strcmp(mode, "lock-order") || b_is_rw) {
		pthread_create(&t1, NULL, a_then_b, NULL);
		pthread_join(t1, NULL);  /* one after the other: no real deadlock */
		pthread_create(&t2, NULL, b_then_a, NULL);
		pthread_join(t2, NULL);
		return 0;
	}
	if (!strcmp(mode, "rw-set-reuse")) {
		pthread_create(&t2, NULL, read_after_first_gone, NULL);  /* alive first */
		pthread_create(&t1, NULL, read_once, NULL);
		pthread_join(t1, NULL);
		__atomic_store_n(&first_reader_gone, 1, __ATOMIC_RELAXED);
		pthread_join(t2, NULL);
		return 0;
	}
	bool rw_mode = !strncmp(mode, "rw-", 3);

	skip_lock_in_second = !strcmp(mode, "unguarded") || !strcmp(mode, "rw-readers");
	pthread_create(&t1, NULL, rw_mode ? rw_bump : bump, NULL);
	pthread_create(&t2, NULL, rw_mode ? rw_bump : bump, (void *)1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("counter %ld\n", counter);
	return skip_lock_in_second || counter == 2L * iters ? 0 : 1;
}

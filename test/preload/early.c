/* SPDX-License-Identifier: MIT */
/*
 * early.c - a library whose constructor contends for pthread mutexes and
 * waits on a condvar, preloaded after the interposer so that it runs
 * before the interposer's own constructor (the loader initialises later
 * preloads first).  Prints "early ok" once every count is exact and the
 * lock word showed a proxylock (our TID, where glibc keeps 1 or 2).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>

static pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t early_cond = PTHREAD_COND_INITIALIZER;
static long early_count;

static void *early_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++) {
		pthread_mutex_lock(&early_lock);
		early_count++;
		pthread_mutex_unlock(&early_lock);
	}
	return NULL;
}

static __attribute__((constructor)) void early_init(void)
{
	struct timespec dl;
	pthread_t th[2];
	int err, proxied;

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, early_worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 5000000;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&early_lock);
	proxied = (early_lock.__data.__lock & 0x3fffffff) == gettid();
	err = pthread_cond_timedwait(&early_cond, &early_lock, &dl);
	pthread_mutex_unlock(&early_lock);
	if (early_count == 200000 && err == ETIMEDOUT && proxied && early_lock.__data.__lock == 0)
		printf("early ok\n");
	else
		printf("early FAILED: count %ld, timedwait %d, proxylock %d\n", early_count, err, proxied);
	fflush(stdout);
}

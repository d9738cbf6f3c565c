/* SPDX-License-Identifier: MIT */
/*
 * dead_owner.c - plain pthread code whose thread exits holding a mutex.
 * POSIX keeps such a (non-robust) mutex locked; under the interposer its
 * waiter must still notice and say so (PROXYLOCK_STATS: a line at once
 * and a row in the exit report), not hang silently.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *lock_and_leave(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	return NULL;
}

int main(void)
{
	struct timespec ts;
	pthread_t t;
	int err;

	pthread_create(&t, NULL, lock_and_leave, NULL);
	pthread_join(t, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 300 * 1000 * 1000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	err = pthread_mutex_timedlock(&m, &ts);
	printf("%s\n", err == ETIMEDOUT ? "dead owner ok" : "dead owner: lock did not time out");
	return err == ETIMEDOUT ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * slice_probe.c - a waiter blocked with no deadline for 150 ms, so that
 * it sleeps in several liveness slices (20 ms, then 40, 80...); traced by
 * check-slice-clock.sh, which reads the clock each slice's futex wait
 * is timed on.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "proxylock.h"

static proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;

static void *waiter(void *arg)
{
	(void)arg;
	proxylock_mutex_lock(&m);
	proxylock_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t th;

	proxylock_mutex_lock(&m);
	pthread_create(&th, NULL, waiter, NULL);
	usleep(150000);
	proxylock_mutex_unlock(&m);
	pthread_join(th, NULL);
	puts("slice probe ok");
	return 0;
}

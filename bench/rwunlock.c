/* SPDX-License-Identifier: MIT */
/*
 * rwunlock.c - uncontended pthread_rwlock rdlock+unlock or wrlock+unlock
 * pairs in plain pthread calls, with a second thread asleep (as in every
 * program that needs a lock), for the interposer's instruction count per
 * call under callgrind (docs/results-stats.md, "The rwlock unlock with
 * stats off").  No link to the library: run it with LD_PRELOAD.
 *   usage: rwunlock rd|wr PAIRS
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int wr = argc > 1 && strcmp(argv[1], "wr") == 0;
	long pairs = argc > 2 ? atol(argv[2]) : 100000;

	pthread_create(&t, NULL, sleeper, NULL);
	for (long i = 0; i < pairs; i++) {
		if (wr)
			pthread_rwlock_wrlock(&rw);
		else
			pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	return 0;
}

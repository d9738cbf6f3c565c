/* SPDX-License-Identifier: MIT */
/*
 * stats_kinds.c - every kind of acquisition, each on a lock of its own,
 * with contention and hold times the report must show (stats-kinds.sh
 * reads its JSON): prints "NAME ADDRESS" for each lock.
 *   timed  pthread_mutex_timedlock only, against a holder of 3 ms
 *   clock  pthread_mutex_clocklock only, likewise
 *   plain  pthread_mutex_lock, 20 holds of at least 1 ms
 *   cond   held 5 ms after each condvar wait's re-acquisition
 *   rw     an rwlock: writes held 2 ms, reads held 3 ms
 *   rec    a recursive mutex taken twice per hold: one hold each time
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t timed = PTHREAD_MUTEX_INITIALIZER, clocked = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER, cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t go;
static int turn;

static void hold_ms(int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ms * 1000000L);
}

static struct timespec in_one_second(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += 1;
	return ts;
}

/* 10 holds of 3 ms on each of timed and clock, taken only with the
 * timed calls, by each of two threads. */
static void timed_rounds(void)
{
	for (int i = 0; i < 10; i++) {
		struct timespec rt = in_one_second(CLOCK_REALTIME);

		if (pthread_mutex_timedlock(&timed, &rt) != 0)
			abort();
		hold_ms(3);
		pthread_mutex_unlock(&timed);
		usleep(500);
	}
	pthread_barrier_wait(&go);
	for (int i = 0; i < 10; i++) {
		struct timespec mt = in_one_second(CLOCK_MONOTONIC);

		if (pthread_mutex_clocklock(&clocked, CLOCK_MONOTONIC, &mt) != 0)
			abort();
		hold_ms(3);
		pthread_mutex_unlock(&clocked);
		usleep(500);
	}
}

static void *timed_side(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	timed_rounds();
	return NULL;
}

static void *plain_side(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++) {
		pthread_mutex_lock(&plain);
		hold_ms(1);
		pthread_mutex_unlock(&plain);
	}
	return NULL;
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cm);
	for (int i = 0; i < 3; i++) {
		while (turn != 1)
			pthread_cond_wait(&cv, &cm);
		turn = 0;
		hold_ms(5);  /* held after the re-acquisition */
	}
	pthread_mutex_unlock(&cm);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		pthread_rwlock_rdlock(&rw);
		hold_ms(3);
		pthread_rwlock_unlock(&rw);
		usleep(200);
	}
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_t t[4];

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	pthread_barrier_init(&go, NULL, 2);
	printf("timed %p\nclock %p\nplain %p\ncond %p\nrw %p\nrec %p\n", (void *)&timed,
	       (void *)&clocked, (void *)&plain, (void *)&cm, (void *)&rw, (void *)&rec);
	fflush(stdout);

	/* timed and clock: both sides use only the timed calls. */
	pthread_create(&t[0], NULL, timed_side, NULL);
	pthread_barrier_wait(&go);
	timed_rounds();
	pthread_join(t[0], NULL);

	pthread_create(&t[0], NULL, plain_side, NULL);
	plain_side(NULL);
	pthread_join(t[0], NULL);

	pthread_create(&t[0], NULL, cond_waiter, NULL);
	for (int i = 0; i < 3; i++) {
		usleep(2000);
		pthread_mutex_lock(&cm);
		turn = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&cm);
		while (__atomic_load_n(&turn, __ATOMIC_RELAXED))
			usleep(100);
	}
	pthread_join(t[0], NULL);

	pthread_create(&t[0], NULL, reader, NULL);
	pthread_create(&t[1], NULL, reader, NULL);
	for (int i = 0; i < 5; i++) {
		pthread_rwlock_wrlock(&rw);
		hold_ms(2);
		pthread_rwlock_unlock(&rw);
		usleep(300);
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);

	for (int i = 0; i < 4; i++) {
		pthread_mutex_lock(&rec);
		pthread_mutex_lock(&rec);
		hold_ms(1);
		pthread_mutex_unlock(&rec);
		pthread_mutex_unlock(&rec);
	}
	return 0;
}

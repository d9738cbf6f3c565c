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
 * and, last, a semaphore's waits for work: a thread at nice 0 on CPU 0
 * waits for one at nice 10 on CPU 1 to post, 10 times, each post made
 * while the waiter sleeps; from the second wait on, the wait lends the
 * poster its CPU (issue 31), which the report's lent_to_wakers counts.  "sem-lends 1" says it ran (two CPUs
 * to pin to, and a nice 10 above the program's).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

static sem_t sem;
static int poster_nice;
static pid_t sem_waiter;

/* Whether thread @tid sleeps, by the kernel's view (/proc: state S). */
static int asleep(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int yes = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if ((f = fopen(path, "r"))) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
			yes = p[1] == ' ' && p[2] == 'S';
		fclose(f);
	}
	return yes;
}

/* Pin the calling thread to @cpu; false if it cannot be. */
static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s) == 0;
}

static void *poster(void *arg)
{
	(void)arg;
	pin(1);
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), poster_nice);
	for (int i = 0; i < 10; i++) {
		/* Post to a waiter asleep in sem_wait (its only sleep), so
		 * that each post finds it there; 5 s at most. */
		for (int n = 0; n < 50000 && !asleep(sem_waiter); n++)
			usleep(100);
		sem_post(&sem);
	}
	return NULL;
}

/* The semaphore phase; 1 if it ran, 0 if this machine cannot. */
static int sem_rounds(void)
{
	pthread_t t;
	int nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if (errno || nice > 9 || sysconf(_SC_NPROCESSORS_ONLN) < 2 || !pin(0) || !pin(1) || !pin(0))
		return 0;
	poster_nice = nice + 10;
	sem_waiter = (pid_t)syscall(SYS_gettid);
	sem_init(&sem, 0, 0);
	pthread_create(&t, NULL, poster, NULL);
	for (int i = 0; i < 10; i++)
		sem_wait(&sem);
	pthread_join(t, NULL);
	sem_destroy(&sem);
	return 1;
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

	printf("sem-lends %d\n", sem_rounds());
	return 0;
}

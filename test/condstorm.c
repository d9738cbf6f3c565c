/* SPDX-License-Identifier: MIT */
/*
 * condstorm.c - issue 35, item 3: a signal handler that signals and
 * broadcasts a condvar, delivered by a pthread_kill storm to threads
 * that wait on that condvar and to threads that contend for its mutex,
 * so that handlers land inside the slow lock and unlock paths and the
 * condvar wait, where the thread holds internal (bucket, record) locks.
 * Nothing may hang.  Built twice: with -DCONDSTORM_NATIVE on the
 * proxylock API, and on plain pthread calls to run under the LD_PRELOAD
 * interposer.  Exit 0 if every thread finished; 1, with a message, if
 * any is still stuck 10 s after the storm (a deadlock).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef CONDSTORM_NATIVE
#include <proxylock.h>
typedef proxylock_mutex_t mutex_t;
typedef proxylock_cond_t cond_t;
#define MUTEX_INIT PROXYLOCK_MUTEX_INITIALIZER
#define COND_INIT PROXYLOCK_COND_INITIALIZER
#define mutex_lock proxylock_mutex_lock
#define mutex_unlock proxylock_mutex_unlock
#define cond_timedwait proxylock_cond_timedwait
#define cond_signal proxylock_cond_signal
#define cond_broadcast proxylock_cond_broadcast
#define API "proxylock API"
#else
typedef pthread_mutex_t mutex_t;
typedef pthread_cond_t cond_t;
#define MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define COND_INIT PTHREAD_COND_INITIALIZER
#define mutex_lock pthread_mutex_lock
#define mutex_unlock pthread_mutex_unlock
#define cond_timedwait pthread_cond_timedwait
#define cond_signal pthread_cond_signal
#define cond_broadcast pthread_cond_broadcast
#define API "pthread API"
#endif

#define WAITERS 2
#define CONTENDERS 3
#define NTHREADS (WAITERS + CONTENDERS)
#define STORM_SECONDS 3
#define GRACE_SECONDS 10

static mutex_t m = MUTEX_INIT;
static cond_t c = COND_INIT;
static int stop;         /* the storm is over */
static int finished;     /* threads that returned */
static unsigned long handled, waits, locks;

static void handler(int sig)
{
	unsigned long n = __atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);

	(void)sig;
	if (n & 1)
		cond_signal(&c);
	else
		cond_broadcast(&c);
}

static void *waiter(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 2 * 1000 * 1000;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		mutex_lock(&m);
		cond_timedwait(&c, &m, &t);
		mutex_unlock(&m);
		__atomic_add_fetch(&waits, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *contender(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		mutex_lock(&m);
		for (volatile int i = 0; i < 50; i++)
			;
		mutex_unlock(&m);
		__atomic_add_fetch(&locks, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The handlers' condvar signals never wait for a lock their own thread
 * holds: every thread finishes after a storm of them. */
static int a_handler_signalling_a_condvar_never_deadlocks_its_own_thread(void)
{
	struct sigaction sa;
	pthread_t th[NTHREADS];
	struct timespec end, now;
	unsigned long kills = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, i < WAITERS ? waiter : contender, NULL);

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += STORM_SECONDS;
	do {
		for (int i = 0; i < NTHREADS; i++, kills++)
			pthread_kill(th[i], SIGUSR1);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);

	/* Watchdog: a deadlocked thread never returns; say so and fail. */
	for (int ms = 0; __atomic_load_n(&finished, __ATOMIC_ACQUIRE) < NTHREADS; ms++) {
		if (ms == GRACE_SECONDS * 1000) {
			fprintf(stderr, "FAIL (" API "): %d of %d threads still stuck %d s after a storm of "
			        "%lu signals (%lu handled, %lu waits, %lu locks): a handler's condvar "
			        "signal deadlocked its own thread\n",
			        NTHREADS - __atomic_load_n(&finished, __ATOMIC_ACQUIRE), NTHREADS,
			        GRACE_SECONDS, kills, handled, waits, locks);
			return 1;
		}
		usleep(1000);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	if (handled == 0 || waits == 0 || locks == 0) {
		fprintf(stderr, "FAIL (" API "): the storm did not run (%lu handled, %lu waits, %lu locks)\n",
		        handled, waits, locks);
		return 1;
	}
	printf("ok (" API "): %lu signals handled, %lu waits, %lu locks, no deadlock\n", handled,
	       waits, locks);
	return 0;
}

int main(void)
{
	int rc = a_handler_signalling_a_condvar_never_deadlocks_its_own_thread();

	fflush(stdout);
	_exit(rc);  /* a stuck thread must not keep the process alive */
}

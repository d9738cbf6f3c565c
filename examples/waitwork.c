/* SPDX-License-Identifier: MIT */
/*
 * waitwork.c - a wait for work (issue 31): a nice-0 thread on CPU 0
 * hands a job to a nice-19 worker on CPU 1, which two CPU hogs share,
 * and waits for its result; the job is WORK_NS of the worker's CPU
 * time (the physical limit of the wait).  Plain pthread, semaphore and
 * futex code, for the interposer (run it under `proxylock run`, or with
 * PROXYLOCK_DONATE=none to compare):
 *   cond  the result comes through a pthread condvar (lent to its
 *         signaller, learned from the previous rounds);
 *   sem   through a POSIX semaphore (lent to its poster);
 *   lend  through a raw futex word, a future the library cannot see:
 *         the waiter lends explicitly, proxylock_lend_begin/end, looked
 *         up with dlsym (absent without the interposer: nothing lent).
 *   usage: waitwork cond|sem|lend [SECONDS]
 * Prints the waits' p50 and p99 in microseconds.
 */
#include <dlfcn.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proxylock.h"

#define WORK_NS (2 * 1000 * 1000)
#define MAX_SAMPLES 100000

enum { COND, SEM, LEND };

static int mode, stop;
static pid_t worker_tid;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_c = PTHREAD_COND_INITIALIZER, done_c = PTHREAD_COND_INITIALIZER;
static int job, done;
static sem_t job_s, done_s;
static uint32_t job_f, done_f;  /* futex words: the job posted, the future resolved */
static uint64_t waits[MAX_SAMPLES];
static int nwaits;

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu, int nice)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

static void futex_wait(uint32_t *w, uint32_t v)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void *hog(void *arg)
{
	(void)arg;
	pin(1, 0);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Wait for a job; false when told to stop. */
static int take_job(void)
{
	switch (mode) {
	case COND:
		pthread_mutex_lock(&m);
		while (!job)
			pthread_cond_wait(&job_c, &m);
		job = 0;
		pthread_mutex_unlock(&m);
		break;
	case SEM:
		sem_wait(&job_s);
		break;
	default:
		while (!__atomic_exchange_n(&job_f, 0, __ATOMIC_ACQUIRE))
			futex_wait(&job_f, 0);
	}
	return !__atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static void give_result(void)
{
	switch (mode) {
	case COND:
		pthread_mutex_lock(&m);
		done = 1;
		pthread_cond_signal(&done_c);
		pthread_mutex_unlock(&m);
		break;
	case SEM:
		sem_post(&done_s);
		break;
	default:
		__atomic_store_n(&done_f, 1, __ATOMIC_RELEASE);
		futex_wake(&done_f);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pin(1, 19);
	__atomic_store_n(&worker_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (take_job()) {
		uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

		while (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < WORK_NS)
			;
		give_result();
	}
	return NULL;
}

static void post_job(void)
{
	switch (mode) {
	case COND:
		pthread_mutex_lock(&m);
		job = 1;
		pthread_cond_signal(&job_c);
		pthread_mutex_unlock(&m);
		break;
	case SEM:
		sem_post(&job_s);
		break;
	default:
		__atomic_store_n(&job_f, 1, __ATOMIC_RELEASE);
		futex_wake(&job_f);
	}
}

/* The future: the explicit lend around a wait on a raw futex. */
static void await_future(void)
{
	static int (*begin)(pid_t, unsigned, proxylock_lend_t *);
	static int (*end)(proxylock_lend_t *);
	proxylock_lend_t l;
	int lent;

	if (!begin) {
		*(void **)&begin = dlsym(RTLD_DEFAULT, "proxylock_lend_begin");
		*(void **)&end = dlsym(RTLD_DEFAULT, "proxylock_lend_end");
	}
	lent = begin && begin(worker_tid, PROXYLOCK_DONATE_ALL, &l) == 0;
	while (!__atomic_exchange_n(&done_f, 0, __ATOMIC_ACQUIRE))
		futex_wait(&done_f, 0);
	if (lent)
		end(&l);
}

static void await_result(void)
{
	switch (mode) {
	case COND:
		pthread_mutex_lock(&m);
		while (!done)
			pthread_cond_wait(&done_c, &m);
		done = 0;
		pthread_mutex_unlock(&m);
		break;
	case SEM:
		sem_wait(&done_s);
		break;
	default:
		await_future();
	}
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "cond";
	double secs = argc > 2 ? atof(argv[2]) : 3;
	pthread_t hogs[2], w;
	uint64_t end;

	mode = !strcmp(name, "sem") ? SEM : !strcmp(name, "lend") ? LEND : COND;
	sem_init(&job_s, 0, 0);
	sem_init(&done_s, 0, 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&hogs[i], NULL, hog, NULL);
	pthread_create(&w, NULL, worker, NULL);
	pin(0, 0);
	while (!__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(secs * 1e9);
	while (now_ns(CLOCK_MONOTONIC) < end && nwaits < MAX_SAMPLES) {
		uint64_t t0;

		usleep(1000);
		t0 = now_ns(CLOCK_MONOTONIC);
		post_job();
		await_result();
		waits[nwaits++] = now_ns(CLOCK_MONOTONIC) - t0;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	post_job();
	pthread_join(w, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(hogs[i], NULL);
	qsort(waits, (size_t)nwaits, sizeof(waits[0]), cmp);
	printf("mode=%s donate=%s wait_p50_us=%llu wait_p99_us=%llu samples=%d limit_us=%d\n", name,
	       getenv("PROXYLOCK_DONATE") ? getenv("PROXYLOCK_DONATE") : "default",
	       (unsigned long long)(waits[nwaits / 2] / 1000),
	       (unsigned long long)(waits[nwaits * 99 / 100] / 1000), nwaits, WORK_NS / 1000);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * sem_edges.c - what POSIX lets a program do around semaphore waits,
 * under the interposer, which lends from them (lib/preload_sem.c; the
 * review of issue 31).  Prints "ok sem" and exits 0, or names the
 * property that failed and exits 1; a watchdog ends a hang with 2.
 *   usage: sem_edges [post|lock|cancel]   (default: all three)
 *   - sem_post is async-signal-safe: a handler posts while its thread is
 *     inside the interposer's semaphore code (200,000 waits: the window
 *     is small, about one hang in two runs before the fix);
 *   - a handler that takes a contended mutex while its thread sleeps in
 *     sem_wait gets it (a record is on one queue at a time);
 *   - sem_wait is a cancellation point even when it does not block, and
 *     sem_timedwait refuses a bad deadline before it takes the semaphore,
 *     as glibc's do.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sem_t s;
static pthread_t main_thread;
static volatile int stop;
static const char *phase = "start";

static void on_alarm(int sig)
{
	(void)sig;
	write(2, "HANG in ", 8);
	write(2, phase, strlen(phase));
	write(2, "\n", 1);
	_exit(2);
}

#define CONSUMERS 30

static void post_in_handler(int sig)
{
	(void)sig;
	sem_post(&s);
}

static void *consumer(void *arg)
{
	(void)arg;
	while (!stop)
		sem_wait(&s);
	return NULL;
}

static void *poster(void *arg)
{
	(void)arg;
	while (!stop) {
		sem_post(&s);
		pthread_kill(main_thread, SIGUSR1);
		usleep(5);
	}
	return NULL;
}

static int posts_from_a_handler(void)
{
	struct sigaction sa = { .sa_handler = post_in_handler };
	pthread_t c[CONSUMERS], p;

	phase = "sem_post from a handler";
	sigaction(SIGUSR1, &sa, NULL);
	sem_init(&s, 0, 0);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_create(&c[i], NULL, consumer, NULL);
	pthread_create(&p, NULL, poster, NULL);
	for (int i = 0; i < 200000; i++)
		while (sem_wait(&s) != 0)
			;
	stop = 1;
	pthread_join(p, NULL);
	for (int i = 0; i < CONSUMERS; i++)
		sem_post(&s);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(c[i], NULL);
	signal(SIGUSR1, SIG_IGN);
	return 0;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static volatile int handler_locked;

static void lock_in_handler(int sig)
{
	(void)sig;
	pthread_mutex_lock(&held);  /* contended: the holder sleeps 2 ms */
	pthread_mutex_unlock(&held);
	handler_locked++;
}

static void *holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50; i++) {
		pthread_mutex_lock(&held);
		pthread_kill(main_thread, SIGUSR2);
		usleep(2000);
		pthread_mutex_unlock(&held);
		usleep(1000);
	}
	sem_post(&s);
	return NULL;
}

static int locks_in_a_handler_inside_sem_wait(void)
{
	struct sigaction sa = { .sa_handler = lock_in_handler };
	pthread_t h;

	phase = "a handler's contended lock inside sem_wait";
	sigaction(SIGUSR2, &sa, NULL);
	sem_init(&s, 0, 0);
	sem_post(&s);
	sem_wait(&s);  /* a first wait: the poster below is learned */
	pthread_create(&h, NULL, holder, NULL);
	while (sem_wait(&s) != 0)
		;
	pthread_join(h, NULL);
	if (handler_locked == 0) {
		fprintf(stderr, "the handler never ran\n");
		return 1;
	}
	return 0;
}

static void *wait_cancelled(void *arg)
{
	int old;

	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_cancel(pthread_self());
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	sem_wait(&s);  /* available: must still act on the pending cancel */
	return (void *)1;
}

static int is_a_cancellation_point_and_checks_its_deadline(void)
{
	struct timespec bad = { .tv_sec = time(NULL) + 10, .tv_nsec = 2000000000L };
	pthread_t t;
	void *ret;
	int value;

	phase = "sem_wait's cancellation point";
	sem_init(&s, 0, 1);
	pthread_create(&t, NULL, wait_cancelled, NULL);
	pthread_join(t, &ret);
	sem_getvalue(&s, &value);
	if (ret != PTHREAD_CANCELED || value != 1) {
		fprintf(stderr, "sem_wait with a cancel pending took the semaphore (value %d)\n", value);
		return 1;
	}
	if (sem_timedwait(&s, &bad) != -1 || errno != EINVAL || (sem_getvalue(&s, &value), value) != 1) {
		fprintf(stderr, "sem_timedwait with tv_nsec 2e9 did not say EINVAL (value %d)\n", value);
		return 1;
	}
	return 0;
}

static bool want(int argc, char **argv, const char *mode)
{
	return argc < 2 || strcmp(argv[1], mode) == 0;
}

int main(int argc, char **argv)
{
	signal(SIGALRM, on_alarm);
	alarm(60);
	main_thread = pthread_self();
	if ((want(argc, argv, "post") && posts_from_a_handler()) ||
	    (want(argc, argv, "lock") && locks_in_a_handler_inside_sem_wait()) ||
	    (want(argc, argv, "cancel") && is_a_cancellation_point_and_checks_its_deadline()))
		return 1;
	puts("ok sem");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * many_sites.c - 200 mutexes, each first contended at a call site of its
 * own (200 distinct return addresses), then the program waits to be
 * asked for its report and reads its input: at "fork" it forks a child
 * that exit()s at once (and prints "child PID"), at its end it exits
 * (report-bounded.sh, report-overlap.sh, report-sigpipe.sh).  Its requests are handled
 * on a thread of their own (the main thread blocks the report signal,
 * RTMAX-2): the main thread forks and exits while one is written.  A
 * holder thread takes them all, then lets each go 1 ms after the main
 * thread said it takes it next (so that it waits: it is contended); the
 * main thread locks each at its own site; "ready" says all were taken.
 *   usage: many_sites
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 200

static pthread_mutex_t m[N];
static pthread_mutex_t start = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static int held, next;  /* next: the lock the main thread takes next */

static void *holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++)
		pthread_mutex_lock(&m[i]);
	pthread_mutex_lock(&start);
	held = 1;
	pthread_cond_signal(&started);
	pthread_mutex_unlock(&start);
	for (int i = 0; i < N; i++) {
		while (__atomic_load_n(&next, __ATOMIC_ACQUIRE) < i)
			usleep(50);
		usleep(1000);  /* the main thread is waiting for it by now */
		pthread_mutex_unlock(&m[i]);
	}
	return NULL;
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* One call site per lock: each expansion is a call of its own. */
#define S(k) __atomic_store_n(&next, k, __ATOMIC_RELEASE); \
	pthread_mutex_lock(&m[k]); pthread_mutex_unlock(&m[k]);
#define S10(k) S(k) S(k + 1) S(k + 2) S(k + 3) S(k + 4) S(k + 5) S(k + 6) S(k + 7) S(k + 8) S(k + 9)
#define S50(k) S10(k) S10(k + 10) S10(k + 20) S10(k + 30) S10(k + 40)

int main(void)
{
	pthread_t t;
	sigset_t report;
	char line[64];

	for (int i = 0; i < N; i++)
		pthread_mutex_init(&m[i], NULL);
	pthread_create(&t, NULL, holder, NULL);
	pthread_mutex_lock(&start);
	while (!held)
		pthread_cond_wait(&started, &start);
	pthread_mutex_unlock(&start);
	S50(0) S50(50) S50(100) S50(150)
	pthread_join(t, NULL);
	pthread_create(&t, NULL, idle, NULL);  /* before the mask: it inherits it */
	sigemptyset(&report);
	sigaddset(&report, SIGRTMAX - 2);
	pthread_sigmask(SIG_BLOCK, &report, NULL);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		pid_t pid;

		if (strcmp(line, "fork\n") != 0)
			continue;
		if ((pid = fork()) == 0)
			exit(0);
		waitpid(pid, NULL, 0);
		printf("child %d\n", (int)pid);
		fflush(stdout);
	}
	return 0;
}

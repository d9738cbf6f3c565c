/* SPDX-License-Identifier: MIT */
/*
 * fork() while other threads keep the process's locks busy, in plain
 * pthread code (issue 35, item 1).  Three threads either allocate and
 * free (MODE "malloc": the allocator's own fork handlers then lock its
 * arena mutexes, which are interposed mutexes other threads hold), or
 * take a mutex that a library's prepare handler also takes (MODE
 * "atfork": atfork_locker.c, linked in, so its handlers were registered
 * before the interposer's).  The main thread forks 200 times; each child
 * allocates, takes the mutex and leaves.  Prints "ok MODE" and exits 0;
 * a fork that deadlocks hangs it (the harness's timeout says so).
 *   usage: fork_under_load malloc|atfork
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atfork_locker.h"

#define FORKS 200
#define WORKERS 3

static int stop;
static int mode_atfork;

static void *worker(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (mode_atfork) {
			atfork_locker_work();
			continue;
		}
		void *p[8];

		for (int i = 0; i < 8; i++) {
			n = n * 1103515245u + 12345u;
			p[i] = malloc(16 + (n >> 16) % 8192);
			if (p[i])
				memset(p[i], 1, 16);
		}
		for (int i = 0; i < 8; i++)
			free(p[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[WORKERS];

	if (argc != 2 || (strcmp(argv[1], "malloc") != 0 && strcmp(argv[1], "atfork") != 0)) {
		fprintf(stderr, "usage: %s malloc|atfork\n", argv[0]);
		return 2;
	}
	mode_atfork = strcmp(argv[1], "atfork") == 0;
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	for (int i = 0; i < FORKS; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			void *p = malloc(100);

			atfork_locker_work();
			_exit(p ? 0 : 3);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork child %d: status %#x\n", i, status);
			return 1;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	printf("ok %s\n", argv[1]);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * closed_stderr.c - a program started with stderr closed (2>&-) that
 * opens its data file, which gets file descriptor 2, then uses mutexes:
 * two threads contend, and one thread exits holding a mutex that main
 * then waits for (the interposer notices the dead owner and, with
 * PROXYLOCK_STATS=1, says so at once and in the exit report).  Nothing
 * but the program's own lines may end up in the data file.
 *   usage: closed_stderr DATA-FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, left = PTHREAD_MUTEX_INITIALIZER;
static unsigned long count;

static void *rounds(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++) {
		pthread_mutex_lock(&m);
		count++;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static void *lock_and_leave(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&left);
	return NULL;
}

static void line(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		_exit(3);
}

int main(int argc, char **argv)
{
	struct timespec ts;
	pthread_t t[3];
	int fd, err;

	if (argc != 2)
		return 2;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 2;
	printf("data fd %d\n", fd);
	fflush(stdout);
	line(fd, "data before\n");
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, rounds, NULL);
	pthread_create(&t[2], NULL, lock_and_leave, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 200 * 1000 * 1000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	err = pthread_mutex_timedlock(&left, &ts);
	line(fd, "data after\n");
	printf("%s\n", err == ETIMEDOUT && count == 200000 ? "closed stderr ok" : "closed stderr: wrong");
	return err == ETIMEDOUT && count == 200000 ? 0 : 1;
}

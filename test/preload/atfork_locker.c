/* SPDX-License-Identifier: MIT */
/*
 * atfork_locker.c - a library that keeps its state consistent across
 * fork() the usual way: its prepare handler takes its mutex, the parent
 * and child handlers release it.  Its constructor runs before those of
 * the libraries preloaded after it, so its handlers are registered
 * first and its prepare runs after theirs (glibc runs prepare handlers
 * in reverse order of registration).
 */
#include <pthread.h>

#include "atfork_locker.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long guarded;

static void prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void release(void)
{
	pthread_mutex_unlock(&lock);
}

static __attribute__((constructor)) void atfork_locker_init(void)
{
	pthread_atfork(prepare, release, release);
}

void atfork_locker_work(void)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 50; i++)
		guarded++;
	pthread_mutex_unlock(&lock);
}

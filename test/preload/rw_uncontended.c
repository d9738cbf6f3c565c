/* SPDX-License-Identifier: MIT */
/*
 * rw_uncontended.c - one thread read-locks rwlocks nobody else touches:
 * its first rdlock (before its read set exists) and 11 held at once
 * (past the read set's 8 slots) leave the interposer's fast path, yet
 * no other thread is in the way, so the stats report must count no
 * contended rwlock (it did count 4 here before rw_lock_careful asked
 * the word).
 */
#include <pthread.h>
#include <stdio.h>

#define NLOCKS 12

static pthread_rwlock_t rw[NLOCKS];

int main(void)
{
	for (int i = 0; i < NLOCKS; i++)
		if (pthread_rwlock_init(&rw[i], NULL))
			return 1;
	for (int n = 0; n < 3; n++)
		if (pthread_rwlock_rdlock(&rw[0]) || pthread_rwlock_unlock(&rw[0]))
			return 1;
	for (int i = 1; i < NLOCKS; i++)
		if (pthread_rwlock_rdlock(&rw[i]))
			return 1;
	for (int i = 1; i < NLOCKS; i++)
		if (pthread_rwlock_unlock(&rw[i]))
			return 1;
	puts("one thread ok");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * secure_helper.c - plain pthread code that secure-mode.sh installs
 * set-user-ID root: two threads contend on a mutex (so a stats report,
 * if one were written, would have rows), then it prints whether it runs
 * in secure-execution mode (AT_SECURE), whether the interposer is in
 * the process (its proxylock_mutex_lock), so the script knows it tested
 * what it meant to, and the kinds it lends (proxylock_donate_kinds).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
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

int main(void)
{
	unsigned (*donate_kinds)(void);
	pthread_t t[2];

	*(void **)&donate_kinds = dlsym(RTLD_DEFAULT, "proxylock_donate_kinds");  /* POSIX idiom */

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, rounds, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("secure=%lu interposer=%d count=%lu donate=%u\n", getauxval(AT_SECURE),
	       dlsym(RTLD_DEFAULT, "proxylock_mutex_lock") != NULL, count,
	       donate_kinds ? donate_kinds() : 0u);
	return count == 200000 ? 0 : 1;
}

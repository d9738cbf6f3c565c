/* SPDX-License-Identifier: MIT */
/*
 * A signal handler run inside its thread's own scheduler calls never
 * waits for them (registry.h, plk_thread_token_wait; the review of the
 * overtake).  T, lent through K1 and K2, restores itself at K1's release;
 * its sched_setattr is held (syscall() hook) after its gate; a lend
 * through K2 takes the token over, so T's call is an orphan; then a
 * signal on T runs a handler that releases K2 (withdraws its lend): the
 * handler must return, leaving the new generation to the interrupted
 * call's return.  Before the fix it waited in plk_thread_token_wait for
 * its own orphan for ever.  Exit 0: it returned, and T ends at its base;
 * 1: it did not; 77: no nice lending.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "chain.h"
#include "donate.h"
#include "lend.h"
#include "registry.h"
#include "sched_attr.h"
#include "proxylock.h"
#include "overtake.h"

static long (*real_syscall)(long, ...);

static volatile pid_t hold_setattr_tid;
static sem_t at_hold, release;
static struct plk_thread *self_rec;
static char K1, K2;
static struct plk_lends lend;
static pid_t T;
static volatile int handler_done;
static int nice_at_end, nice_base;

long syscall(long nr, ...)
{
	va_list ap; long a[6];
	va_start(ap, nr);
	syscall_args(ap, a);
	va_end(ap);
	if (!real_syscall) real_syscall = next_syscall();
	if (nr == SYS_sched_setattr && (pid_t)real_syscall(SYS_gettid) == hold_setattr_tid) {
		hold_setattr_tid = 0;
		sem_post(&at_hold);
		while (sem_wait(&release) != 0) ;
		pthread_kill(pthread_self(), SIGUSR1);  /* a signal arrives before the call */
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void on_usr1(int sig)
{
	(void)sig;
	/* The handler unlocks K2 (it holds it; its waiter lends): */
	plk_donate_withdraw(self_rec, &K2);
	plk_chain_flush();
	handler_done = 1;
}

static void *target(void *arg)
{
	self_rec = plk_thread_self();
	T = (pid_t)plk_tid();
	plk_registry_reserve(T);
	plk_donate_set(T, &K1, &lend, 0);   /* lent through K1 (T's first lock) */
	plk_chain_flush();
	hold_setattr_tid = T;
	plk_donate_withdraw(self_rec, &K1);  /* T unlocks K1: restores itself */
	plk_chain_flush();
	errno = 0;
	nice_at_end = getpriority(PRIO_PROCESS, 0);
	return arg;
}

int main(void)
{
	pthread_t tt; int rc; struct timespec ts;

	real_syscall = next_syscall();
	sem_init(&at_hold, 0, 0); sem_init(&release, 0, 0);
	signal(SIGUSR1, on_usr1);
	if ((rc = overtake_lend_prepare(0, &lend, &nice_base)) != 0)
		return rc;
	pthread_create(&tt, NULL, target, NULL);
	sem_wait(&at_hold);               /* T's restore call passed its gate */
	plk_donate_set(T, &K2, &lend, 0); /* a waiter blocks on K2, which T holds: takes over */
	plk_chain_flush();
	struct plk_thread *t = plk_thread_find(T);
	printf("overtaken: orphans %u stale %d token %d\n", t->orphans, t->view_stale, t->applier);
	sem_post(&release);
	clock_gettime(CLOCK_REALTIME, &ts); ts.tv_sec += 2;
	if (pthread_timedjoin_np(tt, NULL, &ts) == ETIMEDOUT) {
		printf("FAIL: T's handler (unlock of K2) still in plk_thread_token_wait after 2 s: handler_done %d orphans %u\n",
		       handler_done, t->orphans);
		fflush(stdout); _exit(1);
	}
	printf("T finished: handler done %d, nice %d (base %d)\n", handler_done, nice_at_end, nice_base);
	if (!handler_done || nice_at_end != nice_base) {
		printf("FAIL: T did not end at its base with its handler run\n");
		return 1;
	}
	return 0;
}

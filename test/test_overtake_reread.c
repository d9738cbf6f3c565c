/* SPDX-License-Identifier: MIT */
/*
 * A signal handler that interrupts its thread's re-read of its own base
 * (holder_read: T's token held, no internal lock) takes a lock H, is lent
 * to through H by a waiter, and unlocks H: the unlock returns (a handler
 * never waits for its own thread's calls: registry.h, plk_tls_applying),
 * and T ends at its base.  Here T is about to wait on a condvar
 * (plk_donate_waiter_refresh, as cond.c calls it).  Before the fix the
 * handler waited in plk_thread_token_wait for ever (the review of the
 * overtake's fix).  Exit 0: it holds; 1: it does not; 77: no nice lending.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "chain.h"
#include "donate.h"
#include "lend.h"
#include "registry.h"
#include "sched_attr.h"
#include "proxylock.h"
#include "overtake.h"

static long (*real_syscall)(long, ...);

static volatile pid_t hold_tid;
static struct plk_thread *self_rec;
static char H;
static struct plk_lends lend;
static pid_t T;
static sem_t holds_h, lent;
static volatile int handler_done;
static int nice_at_end, nice_base;

long syscall(long nr, ...)
{
	va_list ap; long a[6];
	va_start(ap, nr);
	syscall_args(ap, a);
	va_end(ap);
	if (!real_syscall) real_syscall = next_syscall();
	if (nr == SYS_sched_getaffinity && (pid_t)real_syscall(SYS_gettid) == hold_tid) {
		hold_tid = 0;
		pthread_kill(pthread_self(), SIGUSR1);  /* inside holder_read */
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void on_usr1(int sig)
{
	(void)sig;
	/* the handler locks H (uncontended: nothing of the engine's) */
	sem_post(&holds_h);
	while (sem_wait(&lent) != 0) ;  /* a waiter blocks on H, lending to T */
	plk_donate_withdraw(self_rec, &H); /* the handler unlocks H */
	plk_chain_flush();
	handler_done = 1;
}

static void *target(void *arg)
{
	self_rec = plk_thread_self();
	T = (pid_t)plk_tid();
	plk_registry_reserve(T);
	hold_tid = T;
	plk_donate_waiter_refresh(self_rec, 0);  /* about to wait on a condvar */
	plk_chain_flush();
	nice_at_end = getpriority(PRIO_PROCESS, 0);
	return arg;
}

int main(void)
{
	pthread_t tt; int rc; struct timespec ts;

	real_syscall = next_syscall();
	sem_init(&holds_h, 0, 0); sem_init(&lent, 0, 0);
	signal(SIGUSR1, on_usr1);
	if ((rc = overtake_lend_prepare(0, &lend, &nice_base)) != 0)
		return rc;
	pthread_create(&tt, NULL, target, NULL);
	sem_wait(&holds_h);
	plk_donate_set(T, &H, &lend, 0);  /* W blocks on H */
	plk_chain_flush();
	struct plk_thread *t = plk_thread_find(T);
	printf("W lent through H: token %d (T's own, in its re-read) plk_tls_applying n/a\n", t->applier);
	sem_post(&lent);
	clock_gettime(CLOCK_REALTIME, &ts); ts.tv_sec += 2;
	if (pthread_timedjoin_np(tt, NULL, &ts) == ETIMEDOUT) {
		printf("FAIL: T's handler (unlock of H) still in plk_thread_token_wait after 2 s: handler_done %d token %d\n",
		       handler_done, t->applier);
		fflush(stdout); _exit(1);
	}
	printf("T finished: handler done %d, nice %d (base %d)\n", handler_done, nice_at_end, nice_base);
	if (!handler_done || nice_at_end != nice_base) {
		printf("FAIL: T did not end at its base with its handler run\n");
		return 1;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A holder whose apply token was taken over leaves the new holder's "call
 * in flight" mark alone (donate.c, "Overtaking"; the review of the
 * overtake, its critical finding).  Threads are held at chosen system
 * calls by a syscall() hook, and the engine driven through its internal
 * calls: T holds K1, K2, K3, each lent nice -5.  A restores T (K1's
 * waiter left) and is held before its first gate; B lends through K2,
 * takes the token over, then restores (K2's waiter left) with its
 * sched_setattr in flight; A reaches its gate (token lost); C lends
 * through K3 and takes over from B; B's call lands and returns.  The
 * take-over must have seen B's call as an orphan: T's orphan count never
 * wraps, and a later wait for T's token (an unlock, exit, fork) returns.
 * Before the fix A's gate cleared the mark: 'orphans 65535' and the wait
 * hung.  Exit 0: the property holds; 1: it does not; 77: no nice lending.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static volatile pid_t hold_tgkill_tid, hold_setattr_tid;
/* release_a lets A go, release and release2 B: one each, so a post reaches the thread meant. */
static sem_t at_hold, release_a, release, landed, release2, done;

long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	syscall_args(ap, a);
	va_end(ap);
	if (!real_syscall)
		real_syscall = next_syscall();
	pid_t me = (pid_t)real_syscall(SYS_gettid);
	if (nr == SYS_tgkill && me == hold_tgkill_tid) {
		hold_tgkill_tid = 0;
		sem_post(&at_hold);
		while (sem_wait(&release_a) != 0)
			;
	}
	if (nr == SYS_sched_setattr && me == hold_setattr_tid) {
		hold_setattr_tid = 0;
		sem_post(&at_hold);  /* gate passed, call in flight */
		while (sem_wait(&release) != 0)
			;
		long r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		sem_post(&landed);   /* landed; not yet back under T's lock */
		while (sem_wait(&release2) != 0)
			;
		return r;
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static pid_t T;
static struct plk_lends lend;
static char K1, K2, K3;

static int knice(void)
{
	struct plk_sched_attr a;
	plk_sched_getattr(T, &a);
	return a.sched_nice;
}

static void show(const char *when)
{
	struct plk_thread *t = plk_thread_find(T);
	printf("%-58s token %d call_out %d orphans %u stale %d applied.nice %d kernel nice %d nheld %d\n",
	       when, t->applier, t->call_out, t->orphans, t->view_stale, t->applied.nice, knice(),
	       t->nheld);
}

static void *target(void *arg)
{
	__atomic_store_n(&T, (pid_t)real_syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	while (sem_wait(&done) != 0)
		;
	return arg;
}

static void *thread_a(void *arg)
{
	hold_tgkill_tid = (pid_t)real_syscall(SYS_gettid);
	/* A: K1's last waiter leaves; A applies T's restore and is held
	 * after setting call_lowers, before its first gate. */
	plk_donate_withdraw_tid(T, &K1);
	plk_chain_flush();
	return arg;
}

static void *thread_b(void *arg)
{
	/* B: lends through K2 (overtakes A), then its lend goes: B applies
	 * the restore and is held with its setattr in flight. */
	plk_donate_set(T, &K2, &lend, 0);
	plk_chain_flush();
	hold_setattr_tid = (pid_t)real_syscall(SYS_gettid);
	plk_donate_withdraw_tid(T, &K2);
	plk_chain_flush();
	return arg;
}

static void *waiter(void *arg)
{
	struct plk_thread *t = plk_thread_lock_tid(T, PLK_RECORD_FIND);
	if (t && plk_thread_token_wait(t, T))
		plk_thread_token_drop_unlock(t);
	return arg;
}

int main(void)
{
	pthread_t tt, ta, tb, tw;
	int rc;
	struct timespec ts;

	real_syscall = next_syscall();
	sem_init(&at_hold, 0, 0); sem_init(&release, 0, 0); sem_init(&release_a, 0, 0);
	sem_init(&landed, 0, 0); sem_init(&release2, 0, 0);
	sem_init(&done, 0, 0);
	pthread_create(&tt, NULL, target, NULL);
	while (!__atomic_load_n(&T, __ATOMIC_SEQ_CST))
		usleep(1000);
	if ((rc = overtake_lend_prepare(T, &lend, NULL)) != 0)
		return rc;

	plk_registry_reserve(T);
	plk_donate_set(T, &K1, &lend, 0);
	plk_chain_flush();
	plk_donate_set(T, &K3, &(struct plk_lends){ 0 }, 0);
	show("0. lent through K1");

	pthread_create(&ta, NULL, thread_a, NULL);
	sem_wait(&at_hold);
	show("1. A restoring, held before its gate");
	pthread_create(&tb, NULL, thread_b, NULL);
	sem_wait(&at_hold);
	show("2. B overtook A, lent, then restoring: B's call in flight");
	sem_post(&release_a);  /* A runs into its gate */
	pthread_join(ta, NULL);
	show("3. A's gate (token lost) wrote call_out = 0");
	plk_donate_set(T, &K3, &lend, 0);  /* C lends through K3: takes over from B */
	plk_chain_flush();
	show("4. C lent through K3, took over, nothing to call");
	sem_post(&release);  /* B's restore lands */
	sem_wait(&landed);
	show("5. B's uncounted call landed (token free, no orphan, fresh)");
	sem_post(&release2);
	pthread_join(tb, NULL);
	show("6. B back");
	pthread_create(&tw, NULL, waiter, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	if (pthread_timedjoin_np(tw, NULL, &ts) == ETIMEDOUT) {
		printf("FAIL: 7. plk_thread_token_wait(T) (unlock, exit, fork, base_set) still waiting after 2 s\n");
		fflush(stdout);
		_exit(1);
	}
	printf("7. token_wait returned\n");
	struct plk_thread *t = plk_thread_find(T);
	if (t->orphans != 0) {
		printf("FAIL: T's orphan count is %u with no call in flight\n", t->orphans);
		return 1;
	}
	sem_post(&done);  /* T exits: its record is retired with its token */
	pthread_join(tt, NULL);
	return 0;
}

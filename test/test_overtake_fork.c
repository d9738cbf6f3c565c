/* SPDX-License-Identifier: MIT */
/*
 * A fork() from a signal handler that interrupts its thread's own
 * restore call (plk_tls_applying: after the gate, before the call): the
 * child's only thread holds no lock and is lent nothing, so it runs at
 * its base (I1 in the child; donate.c, plk_donate_fork_prepare).  Before
 * the fix the child kept the lend ('child's nice after fork: -5 (base
 * 0)'; the review of the overtake's fix).  Exit 0: it holds; 1: it does
 * not; 77: no nice lending.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
static struct plk_thread *self_rec;
static char K1;
static struct plk_lends lend;
static volatile int child_nice = 99;
static int nice_base;  /* main's alone */

long syscall(long nr, ...)
{
	va_list ap; long a[6];
	va_start(ap, nr);
	syscall_args(ap, a);
	va_end(ap);
	if (!real_syscall) real_syscall = next_syscall();
	if (nr == SYS_sched_setattr && (pid_t)real_syscall(SYS_gettid) == hold_setattr_tid) {
		hold_setattr_tid = 0;
		pthread_kill(pthread_self(), SIGUSR1);  /* past the gate, before the call */
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void on_usr1(int sig)
{
	int fd[2], st;
	(void)sig;
	if (pipe(fd)) return;
	printf("handler: nice now %d (lent), fork\n", getpriority(PRIO_PROCESS, 0));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		int n = getpriority(PRIO_PROCESS, 0);
		(void)!write(fd[1], &n, sizeof n);
		_exit(0);
	}
	int n = 99;
	(void)!read(fd[0], &n, sizeof n);
	waitpid(c, &st, 0);
	child_nice = n;
}

static void *target(void *arg)
{
	self_rec = plk_thread_self();
	pid_t T = (pid_t)plk_tid();
	plk_registry_reserve(T);
	plk_donate_set(T, &K1, &lend, 0);
	plk_chain_flush();
	printf("T lent: nice %d\n", getpriority(PRIO_PROCESS, 0));
	hold_setattr_tid = T;
	plk_donate_withdraw(self_rec, &K1);  /* T unlocks K1: restores itself */
	plk_chain_flush();
	printf("T restored: nice %d\n", getpriority(PRIO_PROCESS, 0));
	return arg;
}

/* fork.c's hooks linked in from the internal archive (as test_registry does). */
PLK_HIDDEN extern bool plk_fork_hooks_installed;

int main(void)
{
	pthread_t tt; int rc;

	real_syscall = next_syscall();
	if (!plk_fork_hooks_installed) {
		printf("FAIL: fork.c's hooks are not installed\n");
		return 1;
	}
	signal(SIGUSR1, on_usr1);
	if ((rc = overtake_lend_prepare(0, &lend, &nice_base)) != 0)
		return rc;
	pthread_create(&tt, NULL, target, NULL);
	pthread_join(tt, NULL);
	printf("child's nice after fork: %d (base %d)\n", child_nice, nice_base);
	if (child_nice != nice_base) {
		printf("FAIL: the fork child keeps a lend nobody makes\n");
		return 1;
	}
	return 0;
}

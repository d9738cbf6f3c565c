/* SPDX-License-Identifier: MIT */
/*
 * overtake.h - what the test_overtake_* programs share: they hold
 * threads at chosen system calls with a syscall() of their own, which
 * passes the rest to glibc's, and drive the donation engine through its
 * internal calls with one lend, a waiter's context at nice -5.
 */
#ifndef PLK_TEST_OVERTAKE_H
#define PLK_TEST_OVERTAKE_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chain.h"
#include "lend.h"
#include "proxylock.h"
#include "sched_attr.h"

/* glibc's syscall(), under ours (a data pointer's bits as a function's:
 * POSIX dlsym's own rule). */
static inline long (*next_syscall(void))(long, ...)
{
	void *p = dlsym(RTLD_NEXT, "syscall");
	long (*f)(long, ...);

	memcpy(&f, &p, sizeof(f));
	return f;
}

/* The six arguments of a syscall() call, from its va_list. */
static inline void syscall_args(va_list ap, long a[6])
{
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
}

/*
 * *@lend: what a waiter at nice -5 lends, over @tid's context now (whose
 * nice goes to *@nice_base if non-NULL), by itself and through locks.
 * Reads the probes and settings first, outside any lock, as a queue's
 * update does.  0, or the program's exit status: 77 (nice cannot be
 * lent here), 2 (@tid unreadable).
 */
static inline int overtake_lend_prepare(pid_t tid, struct plk_lends *lend, int *nice_base)
{
	struct plk_sched_ctx w;

	if (!(proxylock_caps() & PROXYLOCK_DONATE_NICE)) {
		printf("SKIP: nice cannot be lent here\n");
		return 77;
	}
	plk_chain_prepare(NULL);
	if (plk_sched_read(tid, &w) != 0) {
		perror("sched_getattr");
		return 2;
	}
	if (nice_base)
		*nice_base = w.nice;
	w.nice = -5;
	plk_lends_init(lend);
	plk_lend_add(&lend->all, &w, PROXYLOCK_DONATE_NICE);
	plk_lend_add(&lend->by_locks, &w, PROXYLOCK_DONATE_NICE);
	return 0;
}

#endif

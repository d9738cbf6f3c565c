/* SPDX-License-Identifier: MIT */
/*
 * futex.c - futex wait/wake and the internal lock's slow paths.
 * See futex.h for the lock word.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "futex.h"

#define PLK_ILOCK_SPIN 100

int plk_futex_wait(uint32_t *addr, uint32_t val, clockid_t clock,
                   const struct timespec *abstime)
{
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;

	if (abstime && clock == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;
	if (syscall(SYS_futex, addr, op, val, abstime, NULL,
	            FUTEX_BITSET_MATCH_ANY) == 0)
		return 0;
	return errno == EWOULDBLOCK ? EAGAIN : errno;
}

void plk_futex_wake(uint32_t *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

void plk_ilock_lock_slow(plk_ilock_t *l)
{
	uint32_t c;

	for (int i = 0; i < PLK_ILOCK_SPIN; i++) {
		c = 0;
		if (__atomic_compare_exchange_n(&l->word, &c, 1, 0,
		                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		plk_cpu_relax();
	}
	/* Mark contended; whoever sees 2 on unlock wakes one of us. */
	while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
		plk_futex_wait(&l->word, 2, CLOCK_MONOTONIC, NULL);
}

void plk_ilock_unlock_slow(plk_ilock_t *l)
{
	plk_futex_wake(&l->word, 1);
}

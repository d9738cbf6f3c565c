/* SPDX-License-Identifier: MIT */
/*
 * futex.c - futex wait/wake and the internal lock's slow paths.
 * See futex.h for the lock word.
 */
#include <errno.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "futex.h"

#define PLK_ILOCK_SPIN 100

__thread unsigned plk_ilock_depth __attribute__((tls_model("initial-exec")));

#ifdef PLK_DEBUG_INVARIANTS
/* The internal locks this thread holds (futex.h, Owners); NULL: free. */
static __thread const plk_ilock_t *ilock_mine[PLK_ILOCK_MINE_MAX]
	__attribute__((tls_model("initial-exec")));

void plk_ilock_mine_add(const plk_ilock_t *l)
{
	for (int i = 0; i < PLK_ILOCK_MINE_MAX; i++)
		if (!ilock_mine[i]) {
			ilock_mine[i] = l;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);  /* listed before a handler can look */
			return;
		}
	plk_invariant_failed("I5", "at most PLK_ILOCK_MINE_MAX internal locks are held at once (the lock order)",
	                     __func__, __FILE__, __LINE__);
}

void plk_ilock_mine_drop(const plk_ilock_t *l)
{
	for (int i = 0; i < PLK_ILOCK_MINE_MAX; i++)
		if (ilock_mine[i] == l) {
			ilock_mine[i] = NULL;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			return;
		}
	plk_invariant_failed("held", "an internal lock is released by the thread that holds it",
	                     __func__, __FILE__, __LINE__);
}

bool plk_ilock_held_by_me(const plk_ilock_t *l)
{
	for (int i = 0; i < PLK_ILOCK_MINE_MAX; i++)
		if (ilock_mine[i] == l)
			return true;
	return false;
}
#endif

/*
 * The internal lock's own futex calls are the one syscall allowed under
 * an internal lock: with -Dlockcheck=true they skip the check on
 * syscall() (lockcheck.c, the linker's --wrap=syscall) by calling glibc's
 * directly; every other futex call, plk_futex_wait/wake's, is checked.
 */
#ifdef PLK_LOCKCHECK
long __real_syscall(long nr, ...);
#define ILOCK_SYSCALL __real_syscall
#else
#define ILOCK_SYSCALL syscall
#endif

/* FUTEX_WAIT_BITSET on @addr through @sys (syscall or ILOCK_SYSCALL). */
static inline __attribute__((always_inline)) int
futex_wait_via(long (*sys)(long, ...), uint32_t *addr, uint32_t val, clockid_t clock,
               const struct timespec *abstime)
{
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;

	if (abstime && clock == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;
	if (sys(SYS_futex, addr, op, val, abstime, NULL, FUTEX_BITSET_MATCH_ANY) == 0)
		return 0;
	return errno == EWOULDBLOCK ? EAGAIN : errno;
}

/* FUTEX_WAKE of @n sleepers on @addr through @sys. */
static inline __attribute__((always_inline)) void
futex_wake_via(long (*sys)(long, ...), uint32_t *addr, int n)
{
	sys(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

int plk_futex_wait(uint32_t *addr, uint32_t val, clockid_t clock,
                   const struct timespec *abstime)
{
	return futex_wait_via(syscall, addr, val, clock, abstime);
}

void plk_futex_wake(uint32_t *addr, int n)
{
	futex_wake_via(syscall, addr, n);
}

int plk_ilock_busy_refuse(const char *what)
{
#ifdef PLK_LOCKCHECK
	plk_lockcheck_violation(what);
#else
	(void)what;
#endif
	return EDEADLK;
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
		futex_wait_via(ILOCK_SYSCALL, &l->word, 2, CLOCK_MONOTONIC, NULL);
}

/*
 * Wake every sleeper, not one as Drepper's mutex #2 does.  Woken, a
 * sleeper that the scheduler does not run for a while (nice 19 behind a
 * hog) would hold up the others: the word goes to 0 at our unlock, the
 * next taker sets 1 and its unlock wakes nobody, so the rest sleep until
 * the slow one runs, takes the lock and releases it: the inversion this
 * library exists to cure, inside its own lock (test bucket-inversion saw
 * 120 ms stalls).  Woken all, each retries; the losers set 2 and sleep
 * again.  Internal locks are held for a few hundred nanoseconds, so a
 * herd is small and rare.
 */
void plk_ilock_unlock_slow(plk_ilock_t *l)
{
	futex_wake_via(ILOCK_SYSCALL, &l->word, INT32_MAX);
}

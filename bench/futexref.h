/* SPDX-License-Identifier: MIT */
/*
 * futexref.h - the simple reference a futex mutex is measured against:
 * spin, then sleep on the word (proxybench's "futex-ref" contender).
 *
 * It is what "the physical limit" of a futex mutex looks like on this
 * machine: nothing but the two atomic read-modify-writes an uncontended
 * pair cannot avoid (a CAS to take the lock, an exchange to drop it), a
 * bounded spin, and a futex wait once spinning has not helped.  No owner,
 * no recursion or error checking, no donation, no fairness.
 *
 * The word holds one of three states, the idea of the second and third
 * mutex in Drepper's "Futexes Are Tricky":
 *   FREF_FREE      unlocked
 *   FREF_LOCKED    locked, nobody sleeps on it
 *   FREF_WAITERS   locked, someone may sleep on it: unlock must wake one
 * lock:   CAS FREE -> LOCKED (the fast path); else spin up to FREF_SPIN
 *         reads, trying the CAS whenever the word reads FREE; then, until
 *         the exchange to WAITERS returns FREE, sleep while it is WAITERS.
 *         A thread that took the lock by that exchange holds it in state
 *         WAITERS, so its unlock wakes a possible further sleeper (a
 *         spurious wake at worst, never a lost one).
 * unlock: exchange -> FREE; if it was WAITERS, wake one sleeper.
 * Memory order: acquire on every transition that takes the lock, release
 * on the one that drops it (the critical section's accesses stay inside
 * on arm64 too); the spin's reads are relaxed, as the CAS that follows
 * them re-checks with acquire.
 */
#ifndef PLK_BENCH_FUTEXREF_H
#define PLK_BENCH_FUTEXREF_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { FREF_FREE, FREF_LOCKED, FREF_WAITERS };

/* Spin reads before sleeping: about as long as one futex round trip. */
#define FREF_SPIN 100

/* struct fref - the reference mutex: one 32-bit futex word, zero = free. */
struct fref {
	uint32_t word;
};

/* fref_relax - the CPU's spin-wait hint, where it has one. */
static inline void fref_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* fref_futex - FUTEX_WAIT or FUTEX_WAKE (private) on @w; errors are the
 * ordinary EAGAIN and EINTR, which the callers' loops absorb. */
static inline void fref_futex(uint32_t *w, int op, uint32_t val)
{
	syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

/* fref_trylock - one CAS FREE -> LOCKED; nonzero when it took the lock. */
static inline int fref_trylock(struct fref *m)
{
	uint32_t free_ = FREF_FREE;

	return __atomic_compare_exchange_n(&m->word, &free_, FREF_LOCKED, 0, __ATOMIC_ACQUIRE,
	                                   __ATOMIC_RELAXED);
}

/* fref_lock - take @m: CAS, bounded spin, then sleep in state WAITERS. */
static inline int fref_lock(void *p)
{
	struct fref *m = p;

	if (fref_trylock(m))
		return 0;
	for (int i = 0; i < FREF_SPIN; i++) {
		if (__atomic_load_n(&m->word, __ATOMIC_RELAXED) == FREF_FREE && fref_trylock(m))
			return 0;
		fref_relax();
	}
	while (__atomic_exchange_n(&m->word, FREF_WAITERS, __ATOMIC_ACQUIRE) != FREF_FREE)
		fref_futex(&m->word, FUTEX_WAIT, FREF_WAITERS);
	return 0;
}

/* fref_unlock - drop @m; wake one sleeper if the state says there may be one. */
static inline int fref_unlock(void *p)
{
	struct fref *m = p;

	if (__atomic_exchange_n(&m->word, FREF_FREE, __ATOMIC_RELEASE) == FREF_WAITERS)
		fref_futex(&m->word, FUTEX_WAKE, 1);
	return 0;
}

#endif /* PLK_BENCH_FUTEXREF_H */

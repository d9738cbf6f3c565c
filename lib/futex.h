/* SPDX-License-Identifier: MIT */
/*
 * futex.h - futex wait/wake and the library's internal lock.
 *
 * Every futex here is process-private (FUTEX_PRIVATE_FLAG).  Waits take
 * an optional absolute deadline on CLOCK_REALTIME or CLOCK_MONOTONIC and
 * use FUTEX_WAIT_BITSET, the only op that takes an absolute time.
 *
 * plk_ilock_t protects the library's own short critical sections (wait
 * queue buckets, thread records).  It never lends anything, so it cannot
 * recurse into the donation engine.  Word: 0 free, 1 locked, 2 locked
 * with sleepers (Drepper, "Futexes Are Tricky", mutex #2, except that
 * an unlock wakes every sleeper: futex.c says why).
 */
#ifndef PLK_FUTEX_H
#define PLK_FUTEX_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "invariant.h"

#define PLK_HIDDEN __attribute__((visibility("hidden")))

/**
 * plk_futex_wait - sleep while *@addr == @val, until woken, a signal or
 * @abstime (NULL: no deadline) on @clock.  Returns 0, EAGAIN (value
 * changed), EINTR or ETIMEDOUT.  Callers recheck their condition.
 */
PLK_HIDDEN int plk_futex_wait(uint32_t *addr, uint32_t val, clockid_t clock,
                              const struct timespec *abstime);

/** plk_futex_wake - wake up to @n sleepers on @addr. */
PLK_HIDDEN void plk_futex_wake(uint32_t *addr, int n);

/** plk_timespec_valid - POSIX's test of a deadline: 0 <= tv_nsec < 1e9. */
static inline int plk_timespec_valid(const struct timespec *ts)
{
	return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

/** plk_timespec_le - true if @a is no later than @b. */
static inline bool plk_timespec_le(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

/** plk_deadline_passed - true once @clock has reached @abstime. */
static inline int plk_deadline_passed(clockid_t clock, const struct timespec *abstime)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return plk_timespec_le(abstime, &now);
}

/**
 * plk_deadline_within - the sooner of @abstime (NULL: none) and @ns from
 * now, both on @clock: @abstime itself, or @soon, filled in.  Callers
 * tell which by the pointer (a wait that reached @abstime has timed out;
 * one that reached @soon has only had its turn to look around).
 */
static inline const struct timespec *plk_deadline_within(clockid_t clock, uint64_t ns,
                                                         const struct timespec *abstime,
                                                         struct timespec *soon)
{
	clock_gettime(clock, soon);
	soon->tv_nsec += (long)(ns % 1000000000u);
	soon->tv_sec += (time_t)(ns / 1000000000u) + soon->tv_nsec / 1000000000L;
	soon->tv_nsec %= 1000000000L;
	return abstime && plk_timespec_le(abstime, soon) ? abstime : soon;
}

/** plk_now_ns - CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t plk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct { uint32_t word; } plk_ilock_t;

#define PLK_ILOCK_INIT { 0 }

PLK_HIDDEN void plk_ilock_lock_slow(plk_ilock_t *l);
PLK_HIDDEN void plk_ilock_unlock_slow(plk_ilock_t *l);

/*
 * Internal locks the calling thread holds or is taking: counted in every
 * build (one initial-exec TLS word, no syscall), so that a signal handler
 * can tell that it interrupted its own thread inside an internal
 * critical section.  The count goes up before the lock word is taken and
 * down after it is released, each behind a signal fence (a compiler
 * barrier: a handler runs on this CPU, in program order), so a handler
 * that sees 0 interrupted code that holds no internal lock.  Handlers
 * keep it balanced, so the plain increment needs no atomic RMW.
 */
PLK_HIDDEN extern __thread unsigned plk_ilock_depth __attribute__((tls_model("initial-exec")));

/*
 * Condvar signals deferred by a handler that found plk_ilock_depth
 * non-zero (cond.c): the low 32 bits count them, the high 32 bits count
 * changes.  Non-zero low bits at the outermost release run them there
 * (plk_cond_deferred_run).
 */
PLK_HIDDEN extern __thread uint64_t plk_cond_deferred __attribute__((tls_model("initial-exec")));

/** plk_cond_deferred_run - (cond.c) with no internal lock held: carry out
 * the signals a handler deferred while this thread held one. */
PLK_HIDDEN void plk_cond_deferred_run(void);

/*
 * Lock check (meson -Dlockcheck=true, lockcheck.c): under any internal
 * lock no syscall but the lock's own futex calls, no allocation, no
 * cancellation point (design.md, "Checking the rule").  Without the
 * option every hook below is empty.
 */
#ifdef PLK_LOCKCHECK
/** plk_lockcheck_violation - report @what (a fixed string), then abort
 * (or, with PLK_LOCKCHECK=warn in the environment, log it with a backtrace, once per distinct stack). */
PLK_HIDDEN void plk_lockcheck_violation(const char *what);
#endif

/* Does this thread hold or take an internal lock?  Seen from a signal
 * handler: its interrupted code does (a relaxed load: the handler runs
 * on this thread, in program order after the count's store). */
static inline bool plk_ilock_busy(void)
{
	return __atomic_load_n(&plk_ilock_depth, __ATOMIC_RELAXED) != 0;
}

/**
 * plk_ilock_busy_refuse - a signal handler's lock or wait found its
 * thread holding or taking an internal lock (plk_ilock_busy) and cannot
 * have what it asked for at once: it must not wait (docs/design.md,
 * "Signal handlers inside the library"), so it is refused.  Returns
 * EDEADLK; with -Dlockcheck, reports @what (a fixed string) first.
 */
PLK_HIDDEN int plk_ilock_busy_refuse(const char *what);

/* Count an internal lock as held, before its word is taken. */
static inline void plk_ilock_enter(void)
{
	__atomic_store_n(&plk_ilock_depth, plk_ilock_depth + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);  /* counted before the word is ours */
}

/* Uncount it, after its word is released; the outermost release runs
 * what handlers deferred meanwhile (a handler that comes after the count
 * reaches 0 does its own). */
static inline void plk_ilock_leave(void)
{
	unsigned d = plk_ilock_depth - 1;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);  /* the word is released first */
	__atomic_store_n(&plk_ilock_depth, d, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);  /* uncounted before the list is read */
	if (__builtin_expect(d == 0 && (uint32_t)__atomic_load_n(&plk_cond_deferred,
	                                                         __ATOMIC_RELAXED) != 0, 0))
		plk_cond_deferred_run();
}

/*
 * Owners (-Ddebug_invariants=true only, invariant.h): each thread lists
 * the internal locks it holds in PLK_ILOCK_MINE_MAX initial-exec TLS
 * slots (the deepest nesting is two buckets, a record, the free list),
 * added after the word is taken and removed before it is released, so
 * that plk_assert_held() can say "held by this thread", as lockdep does.
 * A handler finds the list as its interrupted code left it: it takes an
 * internal lock only when plk_ilock_busy() is false, that is with no
 * slot of the interrupted code's in use or about to be.  Nothing of ours
 * is held across a fork (fork.c), so a fork child's list is empty.
 * Without the option plk_ilock_t, its fast paths and this list are as
 * they were: the hooks below are empty.
 */
#ifdef PLK_DEBUG_INVARIANTS
#define PLK_ILOCK_MINE_MAX 8
/** plk_ilock_mine_add - (futex.c) note @l as taken by this thread. */
PLK_HIDDEN void plk_ilock_mine_add(const plk_ilock_t *l);
/** plk_ilock_mine_drop - (futex.c) note @l released; abort ("held") if
 * this thread did not hold it. */
PLK_HIDDEN void plk_ilock_mine_drop(const plk_ilock_t *l);
/** plk_ilock_held_by_me - does this thread hold @l? */
PLK_HIDDEN bool plk_ilock_held_by_me(const plk_ilock_t *l);
#define plk_assert_held(l) \
	PLK_INVARIANT("held", plk_ilock_held_by_me(l), "internal lock " #l " is held by this thread")
#else
#define plk_ilock_mine_add(l) ((void)(l))
#define plk_ilock_mine_drop(l) ((void)(l))
/* plk_assert_held - lockdep_assert_held(): abort unless this thread
 * holds internal lock @l (-Ddebug_invariants=true; else nothing). */
#define plk_assert_held(l) ((void)sizeof(l))
#endif

/** plk_ilock_lock - take @l: one CAS when free. */
static inline void plk_ilock_lock(plk_ilock_t *l)
{
	uint32_t zero = 0;

	plk_ilock_enter();
	if (!__atomic_compare_exchange_n(&l->word, &zero, 1, 0,
	                                 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		plk_ilock_lock_slow(l);
	plk_ilock_mine_add(l);
}

/** plk_ilock_unlock - release @l, waking its sleepers if there are any. */
static inline void plk_ilock_unlock(plk_ilock_t *l)
{
	plk_ilock_mine_drop(l);
	if (__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2)
		plk_ilock_unlock_slow(l);
	plk_ilock_leave();
}

/** plk_cpu_relax - spin-wait hint. */
static inline void plk_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/** plk_cpu_relax_times - @n spin-wait hints in a row: the pause between
 * two reads of a spin that backs off (mutex.c). */
static inline void plk_cpu_relax_times(unsigned int n)
{
	while (n--)
		plk_cpu_relax();
}

#endif /* PLK_FUTEX_H */

/* SPDX-License-Identifier: MIT */
/*
 * preload_sem.c - semaphores under the LD_PRELOAD interposer: a thread
 * that must wait on a process-private semaphore lends to the threads
 * that recently posted it (wakers.c), until its wait ends.
 *
 * glibc keeps the semaphore: every call is glibc's, and only the
 * lending is added around a wait that would block.  sem_wait,
 * sem_timedwait and sem_clockwait first try glibc's sem_trywait; only if
 * that says EAGAIN is the caller's record queued under the semaphore's
 * address | PLK_SEM_TAG (it sleeps in glibc, never on that queue), and
 * taken off again when glibc's wait returns, however it returns (a post,
 * a deadline, EINTR, a cancellation: a cleanup handler).  sem_post notes
 * its caller as a waker of the semaphore while a waiter is registered
 * (a lock-free look at the table first, so a post with nobody waiting
 * costs a hash and a load more than glibc's), and if that changed the
 * wakers lent to, updates the lends (K1), before glibc's post wakes
 * anyone.  sem_init and sem_destroy forget the semaphore's wakers.
 *
 * A signal handler that interrupted its thread inside an internal
 * critical section (plk_ilock_busy): its sem_post learns nothing and
 * takes no lock, so it never waits (it is async-signal-safe); its wait
 * that would block is refused with EDEADLK (docs/design.md, "Signal
 * handlers inside the library").
 *
 * Process-shared semaphores (sem_init with pshared, sem_open) pass
 * through untouched: their posters may be other processes.  glibc
 * (64-bit) keeps the futex flag for the semaphore in the int after its
 * 64-bit value word: 0 (LLL_PRIVATE) for a private one, 128
 * (FUTEX_PRIVATE_FLAG's bit, LLL_SHARED) for a shared one, sem_open's
 * included.  That layout was read from glibc's source and checked on
 * the ABIs the project builds and tests on, x86-64 and arm64 (LP64);
 * there the build asserts it.  On any other ABI (32-bit ones keep a
 * 32-bit value word, and the flag elsewhere) no semaphore lends: every
 * call passes through untouched.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "chain.h"
#include "preload.h"
#include "registry.h"
#include "wakers.h"

#define GLIBC_SEM_PRIVATE 0  /* LLL_PRIVATE; LLL_SHARED is 128 */

struct glibc_sem {
	uint64_t data;  /* value, and waiters in the upper half */
	int private;
	int pad;
};

#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
#define SEM_LAYOUT_CHECKED 1
_Static_assert(sizeof(sem_t) == 32 && _Alignof(sem_t) == 8, "glibc's sem_t on x86-64 and arm64");
_Static_assert(sizeof(struct glibc_sem) <= sizeof(sem_t) &&
               offsetof(struct glibc_sem, private) == 8, "glibc's new_sem fits sem_t");
#else
#define SEM_LAYOUT_CHECKED 0  /* an ABI the layout was not checked on: no lending */
#endif

static void *sem_key(sem_t *s)
{
	return (char *)s + PLK_SEM_TAG;
}

static bool sem_lends(const sem_t *s)
{
	return SEM_LAYOUT_CHECKED && ((const struct glibc_sem *)s)->private == GLIBC_SEM_PRIVATE;
}

static void wait_end(void *key)
{
	plk_wakers_wait_end(key);
	plk_chain_flush();
}

enum { WAIT, TIMEDWAIT, CLOCKWAIT };

/* glibc's wait of kind @how, cancellable. */
static int real_wait(sem_t *s, int how, clockid_t clock, const struct timespec *abstime)
{
	const struct plk_real *r = plk_real();

	if (how == WAIT)
		return r->sem_wait(s);
	if (how == TIMEDWAIT || !r->sem_clockwait)
		return r->sem_timedwait(s, abstime);  /* before 2.30: CLOCK_REALTIME only */
	return r->sem_clockwait(s, clock, abstime);
}

/* Would glibc take a timed wait's arguments?  Else it answers them,
 * before it looks at the semaphore (EINVAL, or the crash of a NULL). */
static bool args_valid(int how, clockid_t clock, const struct timespec *abstime)
{
	if (how == WAIT)
		return true;
	if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return false;
	return how == TIMEDWAIT || clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

/* A wait that would block lends to @s's posters while glibc sleeps.  It
 * is a cancellation point even when it does not block, as glibc's is. */
static int sem_wait_lending(sem_t *s, int how, clockid_t clock, const struct timespec *abstime)
{
	void *key = sem_key(s);
	int ret, err;

	if (!sem_lends(s) || !args_valid(how, clock, abstime))
		return real_wait(s, how, clock, abstime);
	pthread_testcancel();
	if (plk_real()->sem_trywait(s) == 0)
		return 0;  /* it would not block: nothing to lend */
	if (errno == EAGAIN && plk_ilock_busy()) {
		/* A handler inside our critical section: no wait (a poster
		 * may need the bucket its thread holds). */
		errno = plk_ilock_busy_refuse("a signal handler's semaphore wait");
		return -1;
	}
	if (errno != EAGAIN || !plk_wakers_wait_begin(key))
		return real_wait(s, how, clock, abstime);
	plk_chain_flush();
	pthread_cleanup_push(wait_end, key);
	ret = real_wait(s, how, clock, abstime);
	err = errno;
	pthread_cleanup_pop(1);
	errno = err;
	return ret;
}

PLK_EXPORT int sem_wait(sem_t *s)
{
	return sem_wait_lending(s, WAIT, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	return sem_wait_lending(s, TIMEDWAIT, CLOCK_REALTIME, abstime);
}

PLK_EXPORT int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	return sem_wait_lending(s, CLOCKWAIT, clock, abstime);
}

PLK_EXPORT int sem_post(sem_t *s)
{
	void *key = sem_key(s);

	/* Async-signal-safe: a handler whose thread holds an internal lock
	 * (plk_ilock_depth) teaches nothing; learning is a hint. */
	if (!plk_ilock_busy() && sem_lends(s) && plk_wakers_awaited(key)) {
		int saved = errno;
		struct plk_bucket *b;

		(void)plk_wakers_prepare(key);
		b = plk_waitq_lock(key);
		if (plk_wakers_note(b, key))
			plk_wakers_update(b, key, 1);  /* K1: a waker replaced is lent no more */
		plk_waitq_unlock(b);
		plk_chain_flush();
		errno = saved;
	}
	return plk_real()->sem_post(s);
}

PLK_EXPORT int sem_init(sem_t *s, int pshared, unsigned value)
{
	int ret = plk_real()->sem_init(s, pshared, value);

	if (ret == 0 && !pshared)
		plk_wakers_forget(sem_key(s));
	return ret;
}

PLK_EXPORT int sem_destroy(sem_t *s)
{
	if (sem_lends(s))
		plk_wakers_forget(sem_key(s));
	return plk_real()->sem_destroy(s);
}

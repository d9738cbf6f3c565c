/* SPDX-License-Identifier: MIT */
/*
 * tsan.h - ThreadSanitizer: PLK_TSAN, 1 in a TSan build and 0 else, and
 * the annotations that describe a proxylock mutex to it (used by
 * mutex.c, mutexattr.c and cond.c, which adds the condvar's own) and a
 * proxylock rwlock (rwlock.c, rwlockattr.c).
 * Everything else the library synchronises with is atomics and futexes,
 * which TSan sees or needs no help with.
 */
#ifndef PLK_TSAN_H
#define PLK_TSAN_H

#include <errno.h>
#include <stdbool.h>

#include "lockword.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define PLK_TSAN 1
#else
#define PLK_TSAN 0
#endif

/*
 * The custom-mutex annotations, as Abseil's Mutex makes them: TSan then
 * knows a proxylock as a lock (reports lock-order inversions and misuse,
 * names held locks in race reports) and ignores the mutex's own atomics
 * between pre and post.  @may_fail: the call can return without the
 * lock (trylock, deadlines, EDEADLK), which TSan wants flagged as a try.
 * They compile to nothing in other builds.
 */
#if PLK_TSAN
static inline unsigned plk_tsan_flags(const proxylock_mutex_t *m, bool may_fail, int err)
{
	return (plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE ? __tsan_mutex_write_reentrant : 0) |
	       (may_fail ? __tsan_mutex_try_lock : 0) | (err ? __tsan_mutex_try_lock_failed : 0);
}
/*
 * Robust mutexes are not described to TSan: nothing in its interface
 * says that a dead thread's hold passed to another (its own pthread
 * interceptor repairs that state internally), so every EOWNERDEAD would
 * read as a double lock.  Their word's acquire/release atomics still
 * give TSan its happens-before edges; lock-order checks are what is lost.
 */
#define plk_tsan_annotated(m) (!((m)->__flags & PLK_ROBUST))
#define plk_tsan_pre_lock(m, may_fail) \
	(plk_tsan_annotated(m) ? __tsan_mutex_pre_lock((m), plk_tsan_flags((m), (may_fail), 0)) : (void)0)
/* EOWNERDEAD: acquired (robust, from a dead owner). */
#define plk_tsan_post_lock(m, may_fail, err) \
	(plk_tsan_annotated(m) ? __tsan_mutex_post_lock((m), plk_tsan_flags((m), (may_fail), \
	                         (err) && (err) != EOWNERDEAD), 0) : (void)0)
#define plk_tsan_pre_unlock(m) (plk_tsan_annotated(m) ? (void)__tsan_mutex_pre_unlock((m), 0) : (void)0)
#define plk_tsan_post_unlock(m) (plk_tsan_annotated(m) ? __tsan_mutex_post_unlock((m), 0) : (void)0)
#define plk_tsan_create(m) \
	(plk_tsan_annotated(m) ? __tsan_mutex_create((m), plk_tsan_flags((m), false, 0)) : (void)0)
#define plk_tsan_destroy(m) (plk_tsan_annotated(m) ? __tsan_mutex_destroy((m), 0) : (void)0)

/*
 * An rwlock is the same kind of custom mutex, its read holds flagged
 * __tsan_mutex_read_lock: TSan then orders a write hold after every
 * earlier hold, a read hold after earlier write holds only (two readers
 * are not ordered by the lock, so their writes race), as for its own
 * pthread_rwlock interceptors.  @read: a read hold; @may_fail: the call
 * can return without it (try, deadline); @err: it did.
 */
static inline unsigned plk_tsan_rw_flags(bool read, bool may_fail, int err)
{
	return (read ? __tsan_mutex_read_lock : 0) | (may_fail ? __tsan_mutex_try_lock : 0) |
	       (err ? __tsan_mutex_try_lock_failed : 0);
}
#define plk_tsan_rw_pre_lock(rw, read, may_fail) \
	__tsan_mutex_pre_lock((rw), plk_tsan_rw_flags((read), (may_fail), 0))
#define plk_tsan_rw_post_lock(rw, read, may_fail, err) \
	__tsan_mutex_post_lock((rw), plk_tsan_rw_flags((read), (may_fail), (err)), 0)
#define plk_tsan_rw_pre_unlock(rw, read) \
	((void)__tsan_mutex_pre_unlock((rw), plk_tsan_rw_flags((read), false, 0)))
#define plk_tsan_rw_post_unlock(rw, read) \
	__tsan_mutex_post_unlock((rw), plk_tsan_rw_flags((read), false, 0))
#define plk_tsan_rw_create(rw) __tsan_mutex_create((rw), 0)
#define plk_tsan_rw_destroy(rw) __tsan_mutex_destroy((rw), 0)
#else
#define plk_tsan_pre_lock(m, may_fail) ((void)0)
#define plk_tsan_post_lock(m, may_fail, err) ((void)0)
#define plk_tsan_pre_unlock(m) ((void)0)
#define plk_tsan_post_unlock(m) ((void)0)
#define plk_tsan_create(m) ((void)0)
#define plk_tsan_destroy(m) ((void)0)
#define plk_tsan_rw_pre_lock(rw, read, may_fail) ((void)0)
#define plk_tsan_rw_post_lock(rw, read, may_fail, err) ((void)0)
#define plk_tsan_rw_pre_unlock(rw, read) ((void)0)
#define plk_tsan_rw_post_unlock(rw, read) ((void)0)
#define plk_tsan_rw_create(rw) ((void)0)
#define plk_tsan_rw_destroy(rw) ((void)0)
#endif

#endif /* PLK_TSAN_H */

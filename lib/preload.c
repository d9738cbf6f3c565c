/* SPDX-License-Identifier: MIT */
/*
 * preload.c - the LD_PRELOAD interposer: pthread and C11 mutexes,
 * condition variables and pthread rwlocks become proxylocks, inside the
 * caller's storage.  This file holds what its files share: the storage's
 * checks, the slow-path depth, the constructor.  The entry points are
 * the files named for what they interpose: preload_mutex.c (pthread_mutex_*
 * and mtx_*), preload_cond.c (pthread_cond_* and cnd_*),
 * preload_rwlock.c (pthread_rwlock_*), preload_sched.c (the scheduler
 * calls), preload_sem.c (semaphores); preload_real.c finds glibc's own.
 *
 * Storage.  A proxylock lies over the head of pthread_mutex_t (proxylock.h):
 * lock word on __lock, recursion depth on __count, flags on __kind, with
 * glibc's type numbers.  So every static initializer is already a
 * proxylock of its type (PTHREAD_MUTEX_INITIALIZER all zero; the _NP
 * RECURSIVE, ERRORCHECK and ADAPTIVE ones set __kind to 1, 2, 3), and
 * zero-filled condvar storage is a proxylock condvar (cond.c).  An
 * rwlock's: preload_rwlock.c.
 *
 * What stays glibc's, decided when the object is initialised and kept
 * in it, so every later call can tell from the object alone:
 *   - mutexes glibc initialised as process-shared, robust,
 *     PTHREAD_PRIO_PROTECT or (see preload_mutex.c) PTHREAD_PRIO_INHERIT:
 *     glibc marks __kind with 0x80, 0x10 (robust implies 0x80), 0x40 or
 *     0x20, bits a proxylock never has; a destroyed mutex gets
 *     __kind = -1, as glibc does, so later calls reach glibc and fail
 *     with its EINVAL;
 *   - process-shared condvars: glibc sets bit 0 of __wrefs, which a
 *     proxylock condvar never sets;
 *   - process-shared rwlocks: glibc sets __shared (preload_rwlock.c).
 *
 * Fast path.  One test, then the proxylock fast path (one CAS):
 *     careful() || (__kind & glibc-only bits)
 * careful() (plk_careful, preload.h) is one load: true while
 * PROXYLOCK_STATS is on, when the careful path counts each operation.
 * Which implementation serves a lock is decided by the lock alone, so
 * each lock is served by one implementation for its whole life.
 * glibc's functions are looked up once, with dlsym(RTLD_NEXT) (see
 * preload_real.c's resolve() for why not under pthread_once); nothing in
 * the fast path allocates, locks or calls dlsym.
 *
 * Semantics follow glibc's where POSIX leaves them open; each file says
 * where and how.
 */
#include <pthread.h>
#include <stddef.h>
#include <threads.h>

#include "config.h"
#include "lockstat.h"
#include "observe.h"
#include "preload.h"
#include "rdset.h"
#include "registry.h"
#include "report.h"
#include "schedctl.h"

_Static_assert(offsetof(pthread_mutex_t, __data.__lock) == offsetof(proxylock_mutex_t, __word) &&
               offsetof(pthread_mutex_t, __data.__count) == offsetof(proxylock_mutex_t, __count) &&
               offsetof(pthread_mutex_t, __data.__kind) == offsetof(proxylock_mutex_t, __flags) &&
               sizeof(proxylock_mutex_t) <= sizeof(pthread_mutex_t),
               "proxylock_mutex_t must lie over the head of pthread_mutex_t");
_Static_assert(offsetof(pthread_cond_t, __data.__wrefs) == offsetof(proxylock_cond_t, __flags) &&
               sizeof(proxylock_cond_t) == sizeof(pthread_cond_t),
               "proxylock_cond_t must lie over pthread_cond_t");
_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t) && sizeof(cnd_t) == sizeof(pthread_cond_t),
               "C11 objects are pthread objects");

/*
 * Our slow paths may still call what allocates if the interposer is
 * entered before its constructor ran (from another library's
 * constructor): the topology probe, the record key; and
 * pthread_setspecific allocates for a key made after 32 others.  An
 * allocator whose locks are pthread mutexes (jemalloc, tcmalloc) calls
 * us back from inside.  A contended lock there must not enter the slow
 * path again: it would allocate again, for ever, or wait on a
 * once-control its own thread is running.  So, while a thread is inside one of our slow
 * paths, its nested contended locks try and yield instead (needing
 * neither the registry nor an allocation), and its nested locks are not
 * counted.  The depth is a TLS word touched only off the fast paths.
 */
__thread unsigned plk_slow_depth __attribute__((tls_model("initial-exec")));

/*
 * What allocates is done here, once, so that no interposed call later
 * takes memory from the program's allocator (design.md, "The LD_PRELOAD
 * interposer"): the stats report's exit handler, glibc's functions
 * (dlsym), the CPU topology (stdio, libnuma), the record key.  Not the
 * caps probe, which makes system calls only and must see privileges the
 * program drops after it starts.  An allocator whose locks are pthread
 * mutexes comes back meanwhile: as in a slow path, its contended locks
 * try and yield (the topology is read under a once-control).
 */
static __attribute__((constructor)) void preload_init(void)
{
	plk_slow_depth++;
	if (plk_config()->stats) {
		plk_lockstat_enable();
		/* The dead-owner lines go where the text report goes. */
		plk_observe_say_to(plk_report_install());
	}
	plk_real();
	plk_sched_probe_places();
	plk_registry_key_init();
	plk_rdset_key_init();
	plk_slow_depth--;
}

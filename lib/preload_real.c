/* SPDX-License-Identifier: MIT */
/*
 * preload_real.c - the LD_PRELOAD interposer's symbol resolver: glibc's
 * own functions, the ones every interposed call falls back to (for the
 * objects that stay glibc's) or is built on, looked up once with
 * dlsym(RTLD_NEXT), dlvsym for the condvar calls' current version; and
 * the clocked calls a glibc before 2.30 lacks, made from the ones it has.
 *
 * Relies on none of the interposer's other files; on futex.h to wait
 * for another thread's lookup, registry.h for the caller's TID, cond.h
 * for a condvar's own clock.  An allocator whose locks are pthread
 * mutexes calls the interposer back from inside dlsym: see resolve().
 * The test build -DPLK_PRELOAD_TEST_OLD_GLIBC (test/preload/meson.build)
 * looks the 2.30 functions up under names no glibc has, so this file's
 * fallbacks run as on an older glibc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "cond.h"
#include "preload_real.h"
#include "registry.h"

static struct plk_real real;

/*
 * Looking glibc's functions up: NONE -> FINDING (one thread, the
 * resolver, looks them up) -> DONE (every function looked up).  Not
 * pthread_once: dlsym allocates (its error message, for a function an
 * older glibc lacks), and an allocator whose locks are pthread mutexes
 * (jemalloc, tcmalloc) then calls our pthread_mutex_lock from inside
 * the lookup, which would wait on the once-control it is running under.
 * Instead the resolver, called back, goes on with what it has: the
 * allocator's mutex is a proxylock, which needs no glibc function.
 * Other threads wait for DONE.
 */
enum { RES_NONE, RES_FINDING, RES_DONE };
static uint32_t res_state;
static uint32_t res_tid;  /* the resolver's TID, once it is running */

/* --- glibc's functions ----------------------------------------------- */

static void *sym(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;

	return p ? p : dlsym(RTLD_NEXT, name);
}

/* POSIX makes dlsym's object pointer a function pointer; ISO C has no
 * cast for it, so copy the bits. */
#define RESOLVE(field, name, version) do {                     \
		void *p_ = sym(name, version);                  \
		memcpy(&real.field, &p_, sizeof(p_));           \
	} while (0)

/* Functions glibc added in 2.30.  The test build (-DPLK_PRELOAD_TEST_OLD_GLIBC)
 * asks for names no glibc has, so dlsym answers as a glibc before 2.30
 * would: NULL, after allocating its error message. */
#ifdef PLK_PRELOAD_TEST_OLD_GLIBC
#define SINCE_2_30(name) name "_not_before_2_30"
#else
#define SINCE_2_30(name) name
#endif

/* The rwlock calls, for process-shared rwlocks. */
static void resolve_rwlock_functions(void)
{
	RESOLVE(rwlock_init, "pthread_rwlock_init", NULL);
	RESOLVE(rwlock_destroy, "pthread_rwlock_destroy", NULL);
	RESOLVE(rwlock_rdlock, "pthread_rwlock_rdlock", NULL);
	RESOLVE(rwlock_tryrdlock, "pthread_rwlock_tryrdlock", NULL);
	RESOLVE(rwlock_timedrdlock, "pthread_rwlock_timedrdlock", NULL);
	RESOLVE(rwlock_wrlock, "pthread_rwlock_wrlock", NULL);
	RESOLVE(rwlock_trywrlock, "pthread_rwlock_trywrlock", NULL);
	RESOLVE(rwlock_timedwrlock, "pthread_rwlock_timedwrlock", NULL);
	RESOLVE(rwlock_unlock, "pthread_rwlock_unlock", NULL);
	RESOLVE(rwlock_clockrdlock, SINCE_2_30("pthread_rwlock_clockrdlock"), NULL);
	RESOLVE(rwlock_clockwrlock, SINCE_2_30("pthread_rwlock_clockwrlock"), NULL);
}

/* The mutex calls first: a glibc-only mutex an allocator might lock
 * from inside a later lookup finds them already there. */
static void resolve_functions(void)
{
	RESOLVE(mutex_init, "pthread_mutex_init", NULL);
	RESOLVE(mutex_destroy, "pthread_mutex_destroy", NULL);
	RESOLVE(mutex_lock, "pthread_mutex_lock", NULL);
	RESOLVE(mutex_trylock, "pthread_mutex_trylock", NULL);
	RESOLVE(mutex_timedlock, "pthread_mutex_timedlock", NULL);
	RESOLVE(mutex_unlock, "pthread_mutex_unlock", NULL);
	/* The condvar calls also exist in a GLIBC_2.2.5 compat version. */
	RESOLVE(cond_init, "pthread_cond_init", "GLIBC_2.3.2");
	RESOLVE(cond_destroy, "pthread_cond_destroy", "GLIBC_2.3.2");
	RESOLVE(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
	RESOLVE(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
	RESOLVE(cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
	RESOLVE(cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
	RESOLVE(sched_setaffinity, "sched_setaffinity", NULL);
	RESOLVE(sched_getaffinity, "sched_getaffinity", NULL);
	RESOLVE(pthread_setaffinity_np, "pthread_setaffinity_np", NULL);
	RESOLVE(pthread_getaffinity_np, "pthread_getaffinity_np", NULL);
	RESOLVE(sched_setscheduler, "sched_setscheduler", NULL);
	RESOLVE(sched_setparam, "sched_setparam", NULL);
	RESOLVE(pthread_setschedparam, "pthread_setschedparam", NULL);
	RESOLVE(pthread_setschedprio, "pthread_setschedprio", NULL);
	RESOLVE(setpriority, "setpriority", NULL);
	RESOLVE(getpriority, "getpriority", NULL);
	/* Optional (NULL before glibc 2.30): every use checks. */
	RESOLVE(mutex_clocklock, SINCE_2_30("pthread_mutex_clocklock"), NULL);
	RESOLVE(cond_clockwait, SINCE_2_30("pthread_cond_clockwait"), NULL);
	resolve_rwlock_functions();
	RESOLVE(sem_wait, "sem_wait", NULL);
	RESOLVE(sem_trywait, "sem_trywait", NULL);
	RESOLVE(sem_timedwait, "sem_timedwait", NULL);
	RESOLVE(sem_clockwait, SINCE_2_30("sem_clockwait"), NULL);
	RESOLVE(sem_post, "sem_post", NULL);
	RESOLVE(sem_init, "sem_init", NULL);
	RESOLVE(sem_destroy, "sem_destroy", NULL);
}

static void res_advance(uint32_t state)
{
	__atomic_store_n(&res_state, state, __ATOMIC_RELEASE);
	plk_futex_wake(&res_state, INT32_MAX);
}

/* Bring resolution to DONE: run it, or wait for the thread that is. */
static __attribute__((noinline)) void resolve(void)
{
	uint32_t s = RES_NONE;

	if (__atomic_compare_exchange_n(&res_state, &s, RES_FINDING, 0, __ATOMIC_ACQUIRE,
	                                __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&res_tid, plk_tid(), __ATOMIC_RELAXED);
		resolve_functions();
		res_advance(RES_DONE);
		return;
	}
	/* Only the resolver can find its own TID here (0 before it is set):
	 * it is calling back from inside dlsym. */
	if (__atomic_load_n(&res_tid, __ATOMIC_RELAXED) == plk_tid())
		return;
	while (s != RES_DONE) {
		plk_futex_wait(&res_state, s, CLOCK_MONOTONIC, NULL);
		s = __atomic_load_n(&res_state, __ATOMIC_ACQUIRE);
	}
}

/*
 * glibc's functions.  On the resolver's own calls back from inside
 * dlsym, those not yet looked up are still NULL: only an allocator's
 * calls come back that way, and they are about its own mutexes, which
 * are proxylocks and need none.
 */
const struct plk_real *plk_real(void)
{
	if (__builtin_expect(__atomic_load_n(&res_state, __ATOMIC_ACQUIRE) != RES_DONE, 0))
		resolve();
	return &real;
}

/* --- the clocked calls before glibc 2.30 ------------------------------ */

/*
 * Deadline @abstime on clock @from, as the same instant on clock @to
 * (both read now).  For a glibc before 2.30, which has only the
 * CLOCK_REALTIME mutex call and the condvar's own clock: a step of the
 * converted-to clock during the wait then moves the deadline, as it
 * moves that of any such call.  An invalid @abstime is left for glibc to
 * refuse with its EINVAL.
 */
static const struct timespec *deadline_on(clockid_t to, clockid_t from,
                                          const struct timespec *abstime, struct timespec *out)
{
	const int64_t ns = 1000000000;
	struct timespec f, t;
	int64_t left, nsec;

	if (to == from || !plk_timespec_valid(abstime))
		return abstime;
	clock_gettime(from, &f);
	clock_gettime(to, &t);
	/* More than 10^9 s away either way: as far on either clock (the
	 * nanosecond sum below would overflow). */
	if (abstime->tv_sec > f.tv_sec + 1000000000)
		return abstime;
	if (abstime->tv_sec < f.tv_sec - 1000000000) {
		*out = (struct timespec){ 0, 0 };
		return out;
	}
	left = ((int64_t)abstime->tv_sec - f.tv_sec) * ns + (abstime->tv_nsec - f.tv_nsec);
	nsec = t.tv_nsec + left % ns;
	out->tv_sec = t.tv_sec + (time_t)(left / ns) + (time_t)(nsec / ns);
	out->tv_nsec = nsec % ns;
	if (out->tv_nsec < 0) {
		out->tv_nsec += ns;
		out->tv_sec--;
	}
	return out;
}

/* glibc's pthread_mutex_clocklock, or before 2.30 its timedlock on the
 * CLOCK_REALTIME equivalent; EINVAL for other clocks, as glibc says. */
int plk_real_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock, const struct timespec *abstime)
{
	const struct plk_real *r = plk_real();
	struct timespec ts;

	if (clock == CLOCK_REALTIME)
		return r->mutex_timedlock(pm, abstime);
	if (r->mutex_clocklock)
		return r->mutex_clocklock(pm, clock, abstime);
	if (clock != CLOCK_MONOTONIC)
		return EINVAL;
	return r->mutex_timedlock(pm, deadline_on(CLOCK_REALTIME, clock, abstime, &ts));
}

/* glibc's pthread_cond_clockwait, or before 2.30 its timedwait on the
 * condvar's own clock (where glibc keeps it, we do: plk_cond_clock). */
int plk_real_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                            const struct timespec *abstime)
{
	const struct plk_real *r = plk_real();
	struct timespec ts;

	if (r->cond_clockwait)
		return r->cond_clockwait(c, pm, clock, abstime);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return r->cond_timedwait(c, pm, deadline_on(plk_cond_clock((proxylock_cond_t *)c), clock,
	                                            abstime, &ts));
}

/* glibc's clocked rwlock call, or before 2.30 its timed one on the
 * CLOCK_REALTIME equivalent; EINVAL for other clocks, as glibc says. */
int plk_real_rwlock_clocklock(pthread_rwlock_t *prw, bool write, clockid_t clock,
                              const struct timespec *abstime)
{
	const struct plk_real *r = plk_real();
	int (*clocked)(pthread_rwlock_t *, clockid_t, const struct timespec *) =
		write ? r->rwlock_clockwrlock : r->rwlock_clockrdlock;
	int (*timed)(pthread_rwlock_t *, const struct timespec *) =
		write ? r->rwlock_timedwrlock : r->rwlock_timedrdlock;
	struct timespec ts;

	if (clock == CLOCK_REALTIME)
		return timed(prw, abstime);
	if (clocked)
		return clocked(prw, clock, abstime);
	if (clock != CLOCK_MONOTONIC)
		return EINVAL;
	return timed(prw, deadline_on(CLOCK_REALTIME, clock, abstime, &ts));
}

/* SPDX-License-Identifier: MIT */
/*
 * preload.c - the LD_PRELOAD interposer: pthread and C11 mutexes and
 * condition variables become proxylocks, inside the caller's storage.
 *
 * Storage.  A proxylock lies over the head of pthread_mutex_t (proxylock.h):
 * lock word on __lock, recursion depth on __count, flags on __kind, with
 * glibc's type numbers.  So every static initializer is already a
 * proxylock of its type (PTHREAD_MUTEX_INITIALIZER all zero; the _NP
 * RECURSIVE, ERRORCHECK and ADAPTIVE ones set __kind to 1, 2, 3), and
 * zero-filled condvar storage is a proxylock condvar (cond.c).
 *
 * What stays glibc's, decided when the object is initialised and kept
 * in it, so every later call can tell from the object alone:
 *   - mutexes glibc initialised as process-shared, robust,
 *     PTHREAD_PRIO_PROTECT or (see below) PTHREAD_PRIO_INHERIT: glibc
 *     marks __kind with 0x80, 0x10 (robust implies 0x80), 0x40 or 0x20,
 *     bits a proxylock never has; a destroyed mutex gets __kind = -1, as
 *     glibc does, so later calls reach glibc and fail with its EINVAL;
 *   - process-shared condvars: glibc sets bit 0 of __wrefs, which a
 *     proxylock condvar never sets.
 * PTHREAD_PRIO_INHERIT mutexes (PROXYLOCK_PI): a proxylock lends RT
 * priority only where sched_setscheduler is permitted, and a thread made
 * RT by rtkit (PipeWire, JACK) without RLIMIT_RTPRIO would lose the
 * kernel PI it asked for.  So by default (auto) they become proxylocks
 * only if RT can be lent when they are initialised (proxylock_donate_kinds()
 * has PROXYLOCK_DONATE_RT, probed once, and the thread still has
 * CAP_SYS_NICE, in the initial user namespace (the only one where the
 * kernel honours it), or RLIMIT_RTPRIO, asked at each init: a daemon may
 * drop them, or unshare its user namespace, after the probe) and stay glibc's kernel PI futexes otherwise;
 * PROXYLOCK_PI=proxy or =kernel decides for every one.  A PI mutex made a
 * proxylock before a drop stays one; its RT lends the kernel then refuses
 * are counted (stats.eperm_skipped, the report).
 *
 * Fast path.  One test, then the proxylock fast path (one CAS):
 *     careful() || (__kind & glibc-only bits)
 * careful() is one load: true while PROXYLOCK_STATS is on, when the
 * careful path counts each operation.  Which implementation serves a
 * lock is decided by the lock alone, so each lock is served by one
 * implementation for its whole life.
 * glibc's functions are looked up once, with dlsym(RTLD_NEXT) (see
 * resolve() for why not under pthread_once); nothing in the fast path
 * allocates, locks or calls dlsym.
 *
 * Semantics follow glibc's: a NORMAL or ADAPTIVE mutex may be unlocked
 * by a thread that does not own it, and unlocking it unlocked succeeds
 * (POSIX leaves both undefined; programs rely on glibc); ERRORCHECK and
 * RECURSIVE return EPERM.  pthread_cond_destroy returns EBUSY while
 * threads wait (POSIX allows it; glibc would wait for them instead).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "cond.h"
#include "config.h"
#include "lockstat.h"
#include "lockword.h"
#include "mutex.h"
#include "observe.h"
#include "preload.h"
#include "registry.h"
#include "report.h"
#include "rwlockword.h"
#include "schedctl.h"
#include "stats.h"

#define PLK_EXPORT __attribute__((visibility("default")))

/* glibc's __kind bits for the mutexes that stay glibc's. */
#define GLIBC_ROBUST 0x10u
#define GLIBC_PRIO_INHERIT 0x20u
#define GLIBC_PRIO_PROTECT 0x40u
#define GLIBC_PSHARED 0x80u
#define GLIBC_ONLY (GLIBC_ROBUST | GLIBC_PRIO_INHERIT | GLIBC_PRIO_PROTECT | GLIBC_PSHARED)

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

/* --- which implementation -------------------------------------------- */

static bool mutex_is_glibc(const pthread_mutex_t *pm)
{
	return ((const proxylock_mutex_t *)pm)->__flags & GLIBC_ONLY;
}

static bool cond_is_glibc(const pthread_cond_t *c)
{
	return ((const proxylock_cond_t *)c)->__flags & PLK_COND_GLIBC_SHARED;
}

/*
 * The one test on every interposed fast path besides the lock's own
 * kind: are operations counted (PROXYLOCK_STATS)?  Acquire pairs with
 * plk_lockstat_enable()'s release, so a caller that counts sees the
 * tables it set up.  On x86 a plain move; on arm64 an ldar.
 */
static inline bool careful(void)
{
	return __atomic_load_n(&plk_lockstat_on, __ATOMIC_ACQUIRE);
}

#define MUTEX_CAREFUL(pm) __builtin_expect(careful() || mutex_is_glibc(pm), 0)

/* The interposed call's caller, for the stats' call sites (lockstat.h):
 * read only on the careful paths, in the exported function itself. */
#define RETURN_ADDRESS() ((uintptr_t)__builtin_return_address(0))

/* --- mutexes --------------------------------------------------------- */

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
static __thread unsigned slow_depth __attribute__((tls_model("initial-exec")));

/* Cleanup handler: a cancelled wait leaves the slow path too. */
static void slow_depth_leave(void *arg)
{
	(void)arg;
	slow_depth--;
}

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
	slow_depth++;
	if (plk_config()->stats) {
		plk_lockstat_enable();
		/* The dead-owner lines go where the text report goes. */
		plk_observe_say_to(plk_report_install());
	}
	plk_real();
	plk_sched_probe_places();
	plk_registry_key_init();
	plk_rdset_key_init();
	slow_depth--;
}

static int lock_nested(proxylock_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	int err;

	while ((err = proxylock_mutex_trylock(m)) == EBUSY) {
		if (plk_owned_by_self(plk_word(m), plk_tid()))
			return EDEADLK;
		if (abstime && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
	return err;
}

/* Lock @m after a failed fast path (@timed: through the deadline checks). */
static __attribute__((noinline)) int lock_slow(proxylock_mutex_t *m, bool timed, clockid_t clock,
                                               const struct timespec *abstime)
{
	int err;

	if (slow_depth)
		return timed && (err = proxylock_mutex_trylock(m)) != EBUSY ? err
		                                                            : lock_nested(m, clock, abstime);
	slow_depth++;
	err = timed ? proxylock_mutex_clocklock(m, clock, abstime) : plk_mutex_lock_slow(m, clock, abstime);
	slow_depth--;
	return err;
}

static __attribute__((noinline)) int unlock_slow(proxylock_mutex_t *m)
{
	int err;

	slow_depth++;
	err = plk_mutex_unlock_slow(m, true);
	slow_depth--;
	return err;
}

enum lock_op { OP_LOCK, OP_TRY, OP_TIMED };

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
static int real_clocklock(pthread_mutex_t *pm, clockid_t clock, const struct timespec *abstime)
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
static int real_clockwait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
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

static int glibc_lock_op(pthread_mutex_t *pm, enum lock_op op, clockid_t clock,
                         const struct timespec *abstime)
{
	switch (op) {
	case OP_TRY:
		return plk_real()->mutex_trylock(pm);
	case OP_TIMED:
		return real_clocklock(pm, clock, abstime);
	default:
		return plk_real()->mutex_lock(pm);
	}
}

/*
 * Stats (PROXYLOCK_STATS, lockstat.h): contended is "found held by
 * another thread" (the word, as the fast path failed or, for a timed
 * call, as peeked before it) or "the core went to its slow path" (its
 * per-thread count moved during the call: a lock freed between the peek
 * and the core's own try, then taken by another first).  The same rule
 * for every kind of call, so that a timed lock's waits count as a
 * lock's do.
 */
static bool found_held(uint32_t w)
{
	return w != 0 && !plk_owned_by_self(w, plk_tid());
}

/* Count the acquisition, outside our slow paths (nested locks are not). */
static void count_mutex(pthread_mutex_t *pm, uintptr_t ra, int err, bool contended, uint64_t t0)
{
	if (!plk_lockstat_on || slow_depth)
		return;
	slow_depth++;  /* a new row maps a slab (no allocation, but a system call) */
	plk_lockstat_mutex(pm, ra, err, contended, t0, ((proxylock_mutex_t *)pm)->__count == 0);
	slow_depth--;
}

/* Lock with everything checked and, if PROXYLOCK_STATS is on, counted. */
static __attribute__((noinline)) int mutex_lock_careful(pthread_mutex_t *pm, uintptr_t ra,
                                                        enum lock_op op, clockid_t clock,
                                                        const struct timespec *abstime)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;
	bool contended = false;
	uint64_t t0 = 0;
	uint32_t core;
	int err;

	if (mutex_is_glibc(pm))
		return glibc_lock_op(pm, op, clock, abstime);
	if (op == OP_TRY) {
		err = proxylock_mutex_trylock(m);
	} else if (op == OP_LOCK && plk_mutex_lock_fast(m)) {
		err = 0;
	} else {
		contended = op == OP_LOCK ? !plk_owned_by_self(plk_word(m), plk_tid())
		                          : found_held(plk_word(m));
		core = plk_tls_contended;
		t0 = plk_lockstat_on ? plk_now_ns() : 0;
		err = lock_slow(m, op == OP_TIMED, clock, abstime);
		contended |= plk_tls_contended != core;
	}
	count_mutex(pm, ra, err, contended, t0);
	return err;
}

static __attribute__((noinline)) int mutex_unlock_careful(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (mutex_is_glibc(pm))
		return plk_real()->mutex_unlock(pm);
	/* The hold ends (not a recursive unlock; nor one that fails). */
	if (plk_lockstat_on && !slow_depth && m->__count == 0 && plk_word(m) != 0) {
		slow_depth++;
		plk_lockstat_mutex_release(pm);
		slow_depth--;
	}
	return plk_mutex_unlock_fast(m) ? 0 : unlock_slow(m);
}

/* PROXYLOCK_PI (see the top): may a PTHREAD_PRIO_INHERIT mutex be ours?
 * auto asks the kernel again at each init: the cached probe may predate
 * a privilege drop, after which a proxylock could lend no RT at all. */
static bool pi_as_proxylock(void)
{
	int pi = plk_config()->pi;

	return pi == PLK_PI_PROXY ||
	       (pi == PLK_PI_AUTO && (proxylock_donate_kinds() & PROXYLOCK_DONATE_RT) &&
	        plk_sched_rt_permitted());
}

PLK_EXPORT int pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *attr)
{
	int type = PTHREAD_MUTEX_NORMAL, pshared = PTHREAD_PROCESS_PRIVATE;
	int robust = PTHREAD_MUTEX_STALLED, protocol = PTHREAD_PRIO_NONE;

	if (attr) {
		pthread_mutexattr_gettype(attr, &type);
		pthread_mutexattr_getpshared(attr, &pshared);
		pthread_mutexattr_getrobust(attr, &robust);
		pthread_mutexattr_getprotocol(attr, &protocol);
	}
	if (pshared != PTHREAD_PROCESS_PRIVATE ||
	    robust != PTHREAD_MUTEX_STALLED || protocol == PTHREAD_PRIO_PROTECT ||
	    (protocol == PTHREAD_PRIO_INHERIT && !pi_as_proxylock()))
		return plk_real()->mutex_init(pm, attr);
	memset(pm, 0, sizeof(*pm));
	((proxylock_mutex_t *)pm)->__flags = (uint32_t)type & PLK_TYPE_MASK;
	if (plk_lockstat_on && !slow_depth) {
		slow_depth++;
		plk_lockstat_init(pm, RETURN_ADDRESS(), false);
		slow_depth--;
	}
	return 0;
}

PLK_EXPORT int pthread_mutex_destroy(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (mutex_is_glibc(pm))
		return plk_real()->mutex_destroy(pm);
	/* Held, or (not robust) a condvar waiter is bound to it: glibc's
	 * __nusers counts both, and its robust kinds skip the check. */
	if (plk_word(m) != 0 || (!(m->__flags & PLK_ROBUST) && plk_mutex_bound(m) != 0))
		return EBUSY;
	m->__flags = UINT32_MAX;  /* glibc's "destroyed": later calls get EINVAL */
	return 0;
}

PLK_EXPORT int pthread_mutex_lock(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, RETURN_ADDRESS(), OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_mutex_lock_fast(m))
		return 0;
	return lock_slow(m, false, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_mutex_unlock(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (MUTEX_CAREFUL(pm))
		return mutex_unlock_careful(pm);
	if (plk_mutex_unlock_fast(m))
		return 0;
	return unlock_slow(m);
}

PLK_EXPORT int pthread_mutex_trylock(pthread_mutex_t *pm)
{
	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, RETURN_ADDRESS(), OP_TRY, CLOCK_REALTIME, NULL);
	return proxylock_mutex_trylock((proxylock_mutex_t *)pm);
}

PLK_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock,
                                       const struct timespec *abstime)
{
	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, RETURN_ADDRESS(), OP_TIMED, clock, abstime);
	return lock_slow((proxylock_mutex_t *)pm, true, clock, abstime);
}

PLK_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abstime)
{
	if (MUTEX_CAREFUL(pm))
		return mutex_lock_careful(pm, RETURN_ADDRESS(), OP_TIMED, CLOCK_REALTIME, abstime);
	return lock_slow((proxylock_mutex_t *)pm, true, CLOCK_REALTIME, abstime);
}

/* --- condition variables --------------------------------------------- */

/* glibc declares the deadlines nonnull; programs pass NULL anyway, and
 * get EINVAL from us rather than a crash. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"

static int glibc_mutex_lock(void *m)
{
	return plk_real()->mutex_lock(m);
}

static int glibc_mutex_unlock(void *m)
{
	return plk_real()->mutex_unlock(m);
}

static const struct plk_mutex_ops glibc_mutex_ops = { glibc_mutex_lock, glibc_mutex_unlock };

/*
 * A process-shared (glibc) condvar used with a proxylock mutex: glibc
 * would release and retake our mutex its own way.  Wait on the condvar
 * over a private glibc mutex, at most 1 ms at a time: a signal that falls
 * between our unlock and glibc's queueing is late, never lost, and the
 * early return is a spurious wake-up, which POSIX allows.
 *
 * Cancelled inside glibc's wait, the thread leaves holding the helper,
 * which glibc retook, and not the application's mutex, which POSIX says
 * its cleanup handlers find held: ours swaps them back first.
 */
struct shared_wait {
	pthread_mutex_t helper;
	pthread_mutex_t *pm;
};

static void shared_wait_cancelled(void *arg)
{
	struct shared_wait *w = arg;

	plk_real()->mutex_unlock(&w->helper);
	pthread_mutex_lock(w->pm);
}

static int shared_cond_wait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                            const struct timespec *abstime)
{
	struct shared_wait w = { .pm = pm };
	struct timespec soon;
	const struct timespec *until = plk_deadline_within(clock, 1000 * 1000, abstime, &soon);
	int err;

	plk_real()->mutex_init(&w.helper, NULL);
	plk_real()->mutex_lock(&w.helper);
	if ((err = pthread_mutex_unlock(pm)) != 0) {
		plk_real()->mutex_unlock(&w.helper);
		return err;
	}
	pthread_cleanup_push(shared_wait_cancelled, &w);
	real_clockwait(c, &w.helper, clock, until);
	pthread_cleanup_pop(0);
	plk_real()->mutex_unlock(&w.helper);
	err = pthread_mutex_lock(pm);
	if (err == 0 && abstime && plk_deadline_passed(clock, abstime))
		err = ETIMEDOUT;
	return err;
}

static int cond_wait_any(pthread_cond_t *c, pthread_mutex_t *pm, uintptr_t ra, clockid_t clock,
                         const struct timespec *abstime)
{
	bool counted;
	uint32_t core;
	int err;

	if (plk_lockstat_on && !slow_depth) {
		slow_depth++;
		plk_lockstat_cond(c);
		slow_depth--;
	}
	if (cond_is_glibc(c)) {
		if (abstime && !plk_timespec_valid(abstime))
			return EINVAL;
		if (mutex_is_glibc(pm))
			return abstime ? real_clockwait(c, pm, clock, abstime)
			               : plk_real()->cond_wait(c, pm);
		return shared_cond_wait(c, pm, clock, abstime);
	}
	/* With stats, the wait ends the mutex's hold, and the core's
	 * re-acquisition is one of its acquisitions (contended if the core
	 * took its slow path: the wait's time is the condvar's). */
	counted = plk_lockstat_on && !slow_depth && !mutex_is_glibc(pm);
	if (counted && ((proxylock_mutex_t *)pm)->__count == 0) {
		slow_depth++;
		plk_lockstat_mutex_release(pm);
		slow_depth--;
	}
	core = counted ? plk_tls_contended : 0;
	/* Its first wait may probe the kernel's caps (which allocates).  A
	 * wait is a cancellation point: the depth comes back down then too. */
	slow_depth++;
	pthread_cleanup_push(slow_depth_leave, NULL);
	err = plk_cond_wait((proxylock_cond_t *)c, pm, mutex_is_glibc(pm) ? &glibc_mutex_ops : NULL,
	                    clock, abstime);
	pthread_cleanup_pop(1);
	if (counted && !slow_depth) {
		slow_depth++;
		plk_lockstat_reacquired(pm, ra, err == ETIMEDOUT ? 0 : err, plk_tls_contended != core,
		                        ((proxylock_mutex_t *)pm)->__count == 0);
		slow_depth--;
	}
	return err;
}

PLK_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;
	clockid_t clock = CLOCK_REALTIME;

	if (attr) {
		pthread_condattr_getpshared(attr, &pshared);
		pthread_condattr_getclock(attr, &clock);
	}
	if (pshared != PTHREAD_PROCESS_PRIVATE)
		return plk_real()->cond_init(c, attr);
	return proxylock_cond_init((proxylock_cond_t *)c, clock);
}

PLK_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
	if (cond_is_glibc(c))
		return plk_real()->cond_destroy(c);
	/* Not proxylock_cond_destroy: glibc leaves a destroyed condvar usable
	 * enough that programs get away with it, and so do we. */
	if (__atomic_load_n(&((proxylock_cond_t *)c)->__waiters, __ATOMIC_ACQUIRE))
		return EBUSY;
	plk_cond_forget((proxylock_cond_t *)c);
	return 0;
}

PLK_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *pm)
{
	return cond_wait_any(c, pm, RETURN_ADDRESS(), plk_cond_clock((proxylock_cond_t *)c), NULL);
}

PLK_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *pm,
                                      const struct timespec *abstime)
{
	if (!abstime)
		return EINVAL;
	/* glibc keeps its clock bit where we keep ours: right for both. */
	return cond_wait_any(c, pm, RETURN_ADDRESS(), plk_cond_clock((proxylock_cond_t *)c), abstime);
}

PLK_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                                      const struct timespec *abstime)
{
	if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
		return EINVAL;
	return cond_wait_any(c, pm, RETURN_ADDRESS(), clock, abstime);
}

PLK_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	if (cond_is_glibc(c))
		return plk_real()->cond_signal(c);
	slow_depth++;  /* the first lend may probe the kernel's caps (allocates) */
	plk_cond_wake((proxylock_cond_t *)c, false);
	slow_depth--;
	return 0;
}

PLK_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (cond_is_glibc(c))
		return plk_real()->cond_broadcast(c);
	slow_depth++;  /* the first lend may probe the kernel's caps (allocates) */
	plk_cond_wake((proxylock_cond_t *)c, true);
	slow_depth--;
	return 0;
}

/* --- reader-writer locks --------------------------------------------- */

/*
 * A proxylock rwlock lies over glibc's pthread_rwlock_t (proxylock.h,
 * rwlockattr.c): the word on __readers, the kind on __flags, where
 * glibc's static initializers put it, every other byte zero.  glibc's
 * pthread_rwlock_init sets __shared to 1 for a process-shared rwlock,
 * and a proxylock rwlock keeps that int zero: those stay glibc's.  The
 * attribute object stays glibc's too (pthread_rwlockattr_* are not
 * interposed): init reads its kind and pshared through glibc's getters,
 * so pthread_rwlockattr_setkind_np takes effect.
 *
 * destroy answers as glibc's does: 0, held or not (by the caller, or by
 * a thread that exited holding it), and changes nothing, so the rwlock
 * stays usable after it and pthread_rwlock_init makes it new again,
 * for the caller's read set too (plk_rw_forget_own_reads; another live
 * thread's read hold of the old lock is that program's error)
 * (proxylock_rwlock_destroy, the direct API, refuses a held one with
 * EBUSY instead).  Kept different: unlock by a thread holding nothing is
 * EPERM (glibc corrupts its counts and returns 0).
 */
_Static_assert(offsetof(pthread_rwlock_t, __data.__shared) >
               offsetof(proxylock_rwlock_t, __word) &&
               offsetof(pthread_rwlock_t, __data.__shared) + sizeof(int) <=
               offsetof(proxylock_rwlock_t, __flags),
               "glibc's __shared lies in a proxylock rwlock's reserved bytes");

static bool rwlock_is_glibc(const pthread_rwlock_t *prw)
{
	return prw->__data.__shared != 0;
}

#define RW_CAREFUL(prw) __builtin_expect(careful() || rwlock_is_glibc(prw), 0)

/*
 * Ask for @prw's line exclusive before rwlock_is_glibc() reads it: that
 * read fetches the line shared, and the fast path's CAS on the word
 * beside it would then take a second trip (cpu.h).  Only once the
 * thread has a read set, which carries the CPU's answer.
 */
static inline __attribute__((always_inline)) void rw_line_prefetch(const pthread_rwlock_t *prw)
{
	const struct plk_rdset *s = plk_tls_rdset;

	if (s)
		plk_prefetch_for_write(prw, s->prefetchw);
}

/* glibc's clocked rwlock call, or before 2.30 its timed one on the
 * CLOCK_REALTIME equivalent; EINVAL for other clocks, as glibc says. */
static int real_rw_clocklock(pthread_rwlock_t *prw, bool write, clockid_t clock,
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

static int glibc_rw_op(pthread_rwlock_t *prw, bool write, enum lock_op op, clockid_t clock,
                       const struct timespec *abstime)
{
	const struct plk_real *r = plk_real();

	switch (op) {
	case OP_TRY:
		return write ? r->rwlock_trywrlock(prw) : r->rwlock_tryrdlock(prw);
	case OP_TIMED:
		return real_rw_clocklock(prw, write, clock, abstime);
	default:
		return write ? r->rwlock_wrlock(prw) : r->rwlock_rdlock(prw);
	}
}

static int proxy_rw_op(proxylock_rwlock_t *rw, bool write, enum lock_op op, clockid_t clock,
                       const struct timespec *abstime)
{
	switch (op) {
	case OP_TRY:
		return write ? proxylock_rwlock_trywrlock(rw) : proxylock_rwlock_tryrdlock(rw);
	case OP_TIMED:
		return write ? proxylock_rwlock_clockwrlock(rw, clock, abstime)
		             : proxylock_rwlock_clockrdlock(rw, clock, abstime);
	default:
		return write ? proxylock_rwlock_wrlock(rw) : proxylock_rwlock_rdlock(rw);
	}
}

/* Inside one of our slow paths (an allocator's lock, see slow_depth):
 * try and yield, as lock_nested does for a mutex. */
static int rw_lock_nested(proxylock_rwlock_t *rw, bool write, enum lock_op op, clockid_t clock,
                          const struct timespec *abstime)
{
	int err;

	if (op == OP_TIMED && !abstime)
		return proxy_rw_op(rw, write, op, clock, abstime);  /* its EINVAL, or the lock */
	while ((err = proxy_rw_op(rw, write, OP_TRY, clock, abstime)) == EBUSY && op != OP_TRY) {
		if (op == OP_TIMED && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
	return err;
}

/* A deadline glibc refuses before it tries the lock (POSIX lets a free
 * lock be taken regardless; the core does so): a clock it does not
 * wait on, or a tv_nsec out of range.  NULL is the core's EINVAL. */
static bool rw_deadline_bad(clockid_t clock, const struct timespec *abstime)
{
	return (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) ||
	       (abstime && !plk_timespec_valid(abstime));
}

/* Lock @rw after a failed fast path (the core's calls try it again);
 * the timed calls come here first, for glibc's checks. */
static __attribute__((noinline)) int rw_lock_slow(proxylock_rwlock_t *rw, bool write,
                                                  enum lock_op op, clockid_t clock,
                                                  const struct timespec *abstime)
{
	int err;

	if (op == OP_TIMED && rw_deadline_bad(clock, abstime))
		return EINVAL;
	if (slow_depth)
		return rw_lock_nested(rw, write, op, clock, abstime);
	slow_depth++;
	err = proxy_rw_op(rw, write, op, clock, abstime);
	slow_depth--;
	return err;
}

/* Lock with everything checked and, if PROXYLOCK_STATS is on, counted
 * (contended: as a mutex's, count_mutex). */
static __attribute__((noinline)) int rw_lock_careful(pthread_rwlock_t *prw, uintptr_t ra,
                                                     bool write, enum lock_op op, clockid_t clock,
                                                     const struct timespec *abstime)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;
	bool contended = false;
	uint64_t t0 = 0;
	uint32_t w, core = plk_tls_contended;
	int err;

	if (rwlock_is_glibc(prw))
		return glibc_rw_op(prw, write, op, clock, abstime);
	/* A timed read with no deadline is the core's EINVAL, given before
	 * its fast path: after ours, the retraction a failed one may leave
	 * would go unconsumed (rwlockword.h). */
	if (op == OP_TRY ||
	    (op == OP_TIMED && (rw_deadline_bad(clock, abstime) || (!write && !abstime)))) {
		err = rw_lock_slow(rw, write, op, clock, abstime);
	} else if (op == OP_LOCK && (write ? plk_rw_wrlock_fast(rw) : plk_rw_rdlock_fast(rw))) {
		err = 0;
	} else {
		/* A writer finds it held if the word shows any holder; a
		 * reader, if it shows a writer, or waiters it would queue
		 * behind.  (A reader also leaves the fast path with nobody in
		 * its way: to join a solo hold, at its thread's first counted
		 * rdlock, with every slot of its read set taken; relaxed: a
		 * peek for a count, it orders nothing.) */
		w = __atomic_load_n(&rw->__word, __ATOMIC_RELAXED);
		contended = write ? (w & ~PLK_RW_WAITERS) != 0 || (w & PLK_RW_WAITERS)
		                  : (w & (PLK_RW_WRITER | PLK_RW_WAITERS)) != 0;
		t0 = plk_lockstat_on ? plk_now_ns() : 0;
		err = rw_lock_slow(rw, write, op, clock, abstime);
	}
	contended |= plk_tls_contended != core;
	if (plk_lockstat_on && !slow_depth) {
		slow_depth++;  /* a new row maps a slab (no allocation, but a system call) */
		plk_lockstat_rwlock(prw, ra, write, err, contended, t0);
		slow_depth--;
	}
	return err;
}

/* Unlock after the fast paths: @fast is what plk_rw_rdunlock_fast did. */
static __attribute__((noinline)) int rw_unlock_slow(proxylock_rwlock_t *rw, int fast)
{
	int err = 0;

	slow_depth++;
	if (fast == PLK_RD_CLEARED)
		plk_rw_unlock_cleared(rw);
	else
		err = proxylock_rwlock_unlock(rw);
	slow_depth--;
	return err;
}

/* Inlined: pthread_rwlock_unlock's uncontended path is this body, with
 * no call (issue 34's careful() split had made it a jump). */
static inline __attribute__((always_inline)) int rw_unlock(proxylock_rwlock_t *rw)
{
	int fast = plk_rw_rdunlock_fast(rw);

	if (fast == PLK_RD_DONE || (fast == PLK_RD_SLOW && plk_rw_wrunlock_fast(rw)))
		return 0;
	return rw_unlock_slow(rw, fast);
}

PLK_EXPORT int pthread_rwlock_init(pthread_rwlock_t *prw, const pthread_rwlockattr_t *attr)
{
	int kind = PTHREAD_RWLOCK_DEFAULT_NP, pshared = PTHREAD_PROCESS_PRIVATE;
	proxylock_rwlockattr_t pa;
	int err;

	if (attr) {
		pthread_rwlockattr_getkind_np(attr, &kind);
		pthread_rwlockattr_getpshared(attr, &pshared);
	}
	if (pshared != PTHREAD_PROCESS_PRIVATE)
		return plk_real()->rwlock_init(prw, attr);
	proxylock_rwlockattr_init(&pa);
	if ((err = proxylock_rwlockattr_setkind(&pa, kind)) != 0)
		return err;
	err = proxylock_rwlock_init((proxylock_rwlock_t *)prw, &pa);
	if (err == 0 && plk_lockstat_on && !slow_depth) {
		slow_depth++;
		plk_lockstat_init(prw, RETURN_ADDRESS(), true);
		slow_depth--;
	}
	return err;
}

PLK_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *prw)
{
	if (rwlock_is_glibc(prw))
		return plk_real()->rwlock_destroy(prw);
	/* glibc's destroy does nothing and returns 0, held or not (LTP's
	 * timed{rd,wr}lock_6-2 destroy one held by an exited thread); so
	 * do we, leaving the word as it is: a later unlock or init finds it
	 * as the holders left it. */
	return 0;
}

PLK_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *prw)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;

	rw_line_prefetch(prw);
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), false, OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_rw_rdlock_fast(rw))
		return 0;
	return rw_lock_slow(rw, false, OP_LOCK, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *prw)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), false, OP_TRY, CLOCK_REALTIME, NULL);
	return rw_lock_slow((proxylock_rwlock_t *)prw, false, OP_TRY, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *prw, clockid_t clock,
                                          const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), false, OP_TIMED, clock, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, false, OP_TIMED, clock, abstime);
}

PLK_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *prw, const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), false, OP_TIMED, CLOCK_REALTIME, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, false, OP_TIMED, CLOCK_REALTIME, abstime);
}

PLK_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *prw)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;

	rw_line_prefetch(prw);
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), true, OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_rw_wrlock_fast(rw))
		return 0;
	return rw_lock_slow(rw, true, OP_LOCK, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *prw)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), true, OP_TRY, CLOCK_REALTIME, NULL);
	return rw_lock_slow((proxylock_rwlock_t *)prw, true, OP_TRY, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *prw, clockid_t clock,
                                          const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), true, OP_TIMED, clock, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, true, OP_TIMED, clock, abstime);
}

PLK_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *prw, const struct timespec *abstime)
{
	if (RW_CAREFUL(prw))
		return rw_lock_careful(prw, RETURN_ADDRESS(), true, OP_TIMED, CLOCK_REALTIME, abstime);
	return rw_lock_slow((proxylock_rwlock_t *)prw, true, OP_TIMED, CLOCK_REALTIME, abstime);
}

/* Unlock with everything checked; with stats, the caller's hold ends: a
 * write hold if the word names it the writer, else a read hold. */
static __attribute__((noinline)) int rw_unlock_careful(pthread_rwlock_t *prw)
{
	proxylock_rwlock_t *rw = (proxylock_rwlock_t *)prw;
	uint32_t w;

	if (rwlock_is_glibc(prw))
		return plk_real()->rwlock_unlock(prw);
	if (plk_lockstat_on && !slow_depth) {
		w = __atomic_load_n(&rw->__word, __ATOMIC_RELAXED);
		slow_depth++;
		plk_lockstat_rwlock_release(prw, (w & PLK_RW_WRITER) &&
		                                 (w & PLK_RW_VALUE) == (uint32_t)plk_tid());
		slow_depth--;
	}
	return rw_unlock(rw);
}

PLK_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *prw)
{
	rw_line_prefetch(prw);
	if (RW_CAREFUL(prw))
		return rw_unlock_careful(prw);
	return rw_unlock((proxylock_rwlock_t *)prw);
}

/* --- C11 threads ----------------------------------------------------- */

static int thrd_of(int err)
{
	switch (err) {
	case 0:
		return thrd_success;
	case EBUSY:
		return thrd_busy;
	case ETIMEDOUT:
		return thrd_timedout;
	case ENOMEM:
		return thrd_nomem;
	default:
		return thrd_error;
	}
}

PLK_EXPORT int mtx_init(mtx_t *mtx, int type)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)mtx;

	/* glibc takes any type: recursive if that bit is set. */
	memset(mtx, 0, sizeof(*mtx));
	m->__flags = (type & mtx_recursive) ? PROXYLOCK_MUTEX_RECURSIVE : PROXYLOCK_MUTEX_NORMAL;
	return thrd_success;
}

PLK_EXPORT int mtx_lock(mtx_t *m)
{
	return thrd_of(pthread_mutex_lock((pthread_mutex_t *)m));
}

PLK_EXPORT int mtx_trylock(mtx_t *m)
{
	return thrd_of(pthread_mutex_trylock((pthread_mutex_t *)m));
}

PLK_EXPORT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict ts)
{
	return thrd_of(pthread_mutex_timedlock((pthread_mutex_t *)m, ts));
}

PLK_EXPORT int mtx_unlock(mtx_t *m)
{
	return thrd_of(pthread_mutex_unlock((pthread_mutex_t *)m));
}

PLK_EXPORT void mtx_destroy(mtx_t *m)
{
	pthread_mutex_destroy((pthread_mutex_t *)m);
}

PLK_EXPORT int cnd_init(cnd_t *c)
{
	return thrd_of(pthread_cond_init((pthread_cond_t *)c, NULL));
}

PLK_EXPORT int cnd_signal(cnd_t *c)
{
	return thrd_of(pthread_cond_signal((pthread_cond_t *)c));
}

PLK_EXPORT int cnd_broadcast(cnd_t *c)
{
	return thrd_of(pthread_cond_broadcast((pthread_cond_t *)c));
}

PLK_EXPORT int cnd_wait(cnd_t *c, mtx_t *m)
{
	return thrd_of(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

PLK_EXPORT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                             const struct timespec *restrict ts)
{
	return thrd_of(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts));
}

PLK_EXPORT void cnd_destroy(cnd_t *c)
{
	pthread_cond_destroy((pthread_cond_t *)c);
}

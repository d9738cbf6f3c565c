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
 *   - mutexes glibc initialised as process-shared, robust or
 *     PTHREAD_PRIO_PROTECT: glibc marks __kind with 0x80, 0x10 (robust
 *     implies 0x80) or 0x40, bits a proxylock never has; a destroyed
 *     mutex gets __kind = -1, as glibc does, so later calls reach glibc
 *     and fail with its EINVAL;
 *   - process-shared condvars: glibc sets bit 0 of __wrefs, which a
 *     proxylock condvar never sets.
 * PTHREAD_PRIO_INHERIT mutexes become proxylocks, which lend RT priority
 * (where permitted) along with everything else.
 *
 * liburcu's own mutexes and condvars stay glibc's too: our slow paths
 * run inside urcu-bp read-side sections, so a proxylock inside liburcu
 * could wait on itself (synchronize_rcu waiting for a reader parked on
 * the grace-period lock).  They are told by the caller: a call whose
 * return address lies in liburcu's code goes to glibc.  liburcu touches
 * only its own locks and only from its own code, so each lock is served
 * by one implementation for its whole life.
 *
 * Fast path.  One test, then the proxylock fast path (one CAS):
 *     plk_careful(return address) || (__kind & glibc-only bits)
 * plk_careful() is a subtract and compare against a window that covers
 * liburcu's code once it is known, and everything before that (calls
 * from other libraries' constructors, before ours ran) and while
 * PROXYLOCK_STATS is on; the careful path then decides exactly.
 * glibc's functions are looked up once, with dlsym(RTLD_NEXT), under
 * pthread_once; nothing in the fast path allocates, locks or calls dlsym.
 *
 * Semantics follow glibc's: a NORMAL or ADAPTIVE mutex may be unlocked
 * by a thread that does not own it, and unlocking it unlocked succeeds
 * (POSIX leaves both undefined; programs rely on glibc); ERRORCHECK and
 * RECURSIVE return EPERM.  pthread_cond_destroy returns EBUSY while
 * threads wait (POSIX allows it; glibc would wait for them instead).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "cond.h"
#include "config.h"
#include "lockstat.h"
#include "mutex.h"
#include "preload.h"

#define PLK_EXPORT __attribute__((visibility("default")))

/* glibc's __kind bits for the mutexes that stay glibc's. */
#define GLIBC_ROBUST 0x10u
#define GLIBC_PRIO_PROTECT 0x40u
#define GLIBC_PSHARED 0x80u
#define GLIBC_ONLY (GLIBC_ROBUST | GLIBC_PRIO_PROTECT | GLIBC_PSHARED)

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

uintptr_t plk_preload_careful_lo = 0, plk_preload_careful_span = UINTPTR_MAX;

static struct plk_real real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

#define URCU_RANGES 8
static struct { uintptr_t lo, hi; } urcu_text[URCU_RANGES];
static int n_urcu_text;

/* --- glibc's functions and liburcu's code ---------------------------- */

static void *sym(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;

	return p ? p : dlsym(RTLD_NEXT, name);
}

static int find_urcu(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/liburcu"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && n_urcu_text < URCU_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			urcu_text[n_urcu_text].lo = info->dlpi_addr + ph->p_vaddr;
			urcu_text[n_urcu_text].hi = urcu_text[n_urcu_text].lo + ph->p_memsz;
			n_urcu_text++;
		}
	}
	return 0;
}

/* Narrow the careful window to liburcu's code, unless stats want all. */
static void careful_window_publish(void)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	if (plk_lockstat_on) {
		lo = 0;
		hi = UINTPTR_MAX;
	}
	for (int i = 0; i < n_urcu_text; i++) {
		lo = urcu_text[i].lo < lo ? urcu_text[i].lo : lo;
		hi = urcu_text[i].hi > hi ? urcu_text[i].hi : hi;
	}
	__atomic_store_n(&plk_preload_careful_span, hi > lo ? hi - lo : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&plk_preload_careful_lo, lo, __ATOMIC_RELAXED);
}

/* POSIX makes dlsym's object pointer a function pointer; ISO C has no
 * cast for it, so copy the bits. */
#define RESOLVE(field, name, version) do {                     \
		void *p_ = sym(name, version);                  \
		memcpy(&real.field, &p_, sizeof(p_));           \
	} while (0)

static void resolve(void)
{
	RESOLVE(mutex_init, "pthread_mutex_init", NULL);
	RESOLVE(mutex_destroy, "pthread_mutex_destroy", NULL);
	RESOLVE(mutex_lock, "pthread_mutex_lock", NULL);
	RESOLVE(mutex_trylock, "pthread_mutex_trylock", NULL);
	RESOLVE(mutex_timedlock, "pthread_mutex_timedlock", NULL);
	RESOLVE(mutex_clocklock, "pthread_mutex_clocklock", NULL);
	RESOLVE(mutex_unlock, "pthread_mutex_unlock", NULL);
	/* The condvar calls also exist in a GLIBC_2.2.5 compat version. */
	RESOLVE(cond_init, "pthread_cond_init", "GLIBC_2.3.2");
	RESOLVE(cond_destroy, "pthread_cond_destroy", "GLIBC_2.3.2");
	RESOLVE(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
	RESOLVE(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
	RESOLVE(cond_clockwait, "pthread_cond_clockwait", NULL);
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
	dl_iterate_phdr(find_urcu, NULL);
	careful_window_publish();
}

const struct plk_real *plk_real(void)
{
	pthread_once(&real_once, resolve);
	return &real;
}

bool plk_preload_from_urcu(uintptr_t ra)
{
	plk_real();
	for (int i = 0; i < n_urcu_text; i++)
		if (ra >= urcu_text[i].lo && ra < urcu_text[i].hi)
			return true;
	return false;
}

static __attribute__((constructor)) void preload_init(void)
{
	if (plk_config()->stats)
		plk_lockstat_enable();
	plk_real();
	careful_window_publish();
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

/* Exact test, for the careful paths: is this call glibc's business? */
static bool caller_is_urcu(uintptr_t ra)
{
	return plk_careful(ra) && plk_preload_from_urcu(ra);
}

#define RETURN_ADDRESS() ((uintptr_t)__builtin_return_address(0))
#define MUTEX_CAREFUL(pm, ra) \
	__builtin_expect(plk_careful(ra) || mutex_is_glibc(pm), 0)

/* --- mutexes --------------------------------------------------------- */

enum lock_op { OP_LOCK, OP_TRY, OP_TIMED };

static int glibc_lock_op(pthread_mutex_t *pm, enum lock_op op, clockid_t clock,
                         const struct timespec *abstime)
{
	switch (op) {
	case OP_TRY:
		return plk_real()->mutex_trylock(pm);
	case OP_TIMED:
		return clock == CLOCK_REALTIME ? plk_real()->mutex_timedlock(pm, abstime)
		                               : plk_real()->mutex_clocklock(pm, clock, abstime);
	default:
		return plk_real()->mutex_lock(pm);
	}
}

/* Lock with everything checked and, if PROXYLOCK_STATS is on, counted. */
static __attribute__((noinline)) int mutex_lock_careful(pthread_mutex_t *pm, uintptr_t ra,
                                                        enum lock_op op, clockid_t clock,
                                                        const struct timespec *abstime)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;
	bool contended = false;
	uint64_t t0 = 0;
	int err;

	if (caller_is_urcu(ra) || mutex_is_glibc(pm))
		return glibc_lock_op(pm, op, clock, abstime);
	if (op == OP_TRY) {
		err = proxylock_mutex_trylock(m);
	} else if (op == OP_TIMED) {
		err = proxylock_mutex_clocklock(m, clock, abstime);
	} else if (plk_mutex_lock_fast(m)) {
		err = 0;
	} else {
		contended = !plk_owned_by_self(plk_word(m), plk_tid());
		t0 = plk_now_ns();
		err = plk_mutex_lock_slow(m, CLOCK_REALTIME, NULL);
	}
	if (err == 0 && plk_lockstat_on)
		plk_lockstat_mutex(pm, contended, contended ? plk_now_ns() - t0 : 0);
	return err;
}

static __attribute__((noinline)) int mutex_unlock_careful(pthread_mutex_t *pm, uintptr_t ra)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (caller_is_urcu(ra) || mutex_is_glibc(pm))
		return plk_real()->mutex_unlock(pm);
	return plk_mutex_unlock_fast(m) ? 0 : plk_mutex_unlock_slow(m, true);
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
	if (caller_is_urcu(RETURN_ADDRESS()) || pshared != PTHREAD_PROCESS_PRIVATE ||
	    robust != PTHREAD_MUTEX_STALLED || protocol == PTHREAD_PRIO_PROTECT)
		return plk_real()->mutex_init(pm, attr);
	memset(pm, 0, sizeof(*pm));
	((proxylock_mutex_t *)pm)->__flags = (uint32_t)type & PLK_TYPE_MASK;
	return 0;
}

PLK_EXPORT int pthread_mutex_destroy(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;

	if (caller_is_urcu(RETURN_ADDRESS()) || mutex_is_glibc(pm))
		return plk_real()->mutex_destroy(pm);
	if (plk_word(m) != 0)
		return EBUSY;
	m->__flags = UINT32_MAX;  /* glibc's "destroyed": later calls get EINVAL */
	return 0;
}

PLK_EXPORT int pthread_mutex_lock(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;
	uintptr_t ra = RETURN_ADDRESS();

	if (MUTEX_CAREFUL(pm, ra))
		return mutex_lock_careful(pm, ra, OP_LOCK, CLOCK_REALTIME, NULL);
	if (plk_mutex_lock_fast(m))
		return 0;
	return plk_mutex_lock_slow(m, CLOCK_REALTIME, NULL);
}

PLK_EXPORT int pthread_mutex_unlock(pthread_mutex_t *pm)
{
	proxylock_mutex_t *m = (proxylock_mutex_t *)pm;
	uintptr_t ra = RETURN_ADDRESS();

	if (MUTEX_CAREFUL(pm, ra))
		return mutex_unlock_careful(pm, ra);
	if (plk_mutex_unlock_fast(m))
		return 0;
	return plk_mutex_unlock_slow(m, true);
}

PLK_EXPORT int pthread_mutex_trylock(pthread_mutex_t *pm)
{
	uintptr_t ra = RETURN_ADDRESS();

	if (MUTEX_CAREFUL(pm, ra))
		return mutex_lock_careful(pm, ra, OP_TRY, CLOCK_REALTIME, NULL);
	return proxylock_mutex_trylock((proxylock_mutex_t *)pm);
}

PLK_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock,
                                       const struct timespec *abstime)
{
	uintptr_t ra = RETURN_ADDRESS();

	if (MUTEX_CAREFUL(pm, ra))
		return mutex_lock_careful(pm, ra, OP_TIMED, clock, abstime);
	return proxylock_mutex_clocklock((proxylock_mutex_t *)pm, clock, abstime);
}

PLK_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abstime)
{
	uintptr_t ra = RETURN_ADDRESS();

	if (MUTEX_CAREFUL(pm, ra))
		return mutex_lock_careful(pm, ra, OP_TIMED, CLOCK_REALTIME, abstime);
	return proxylock_mutex_clocklock((proxylock_mutex_t *)pm, CLOCK_REALTIME, abstime);
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
 */
static int shared_cond_wait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                            const struct timespec *abstime)
{
	pthread_mutex_t helper;
	struct timespec soon;
	const struct timespec *until = plk_deadline_within(clock, 1000 * 1000, abstime, &soon);
	int err;

	plk_real()->mutex_init(&helper, NULL);
	plk_real()->mutex_lock(&helper);
	if ((err = pthread_mutex_unlock(pm)) != 0) {
		plk_real()->mutex_unlock(&helper);
		return err;
	}
	plk_real()->cond_clockwait(c, &helper, clock, until);
	plk_real()->mutex_unlock(&helper);
	err = pthread_mutex_lock(pm);
	if (err == 0 && abstime && plk_deadline_passed(clock, abstime))
		err = ETIMEDOUT;
	return err;
}

static int cond_wait_any(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                         const struct timespec *abstime)
{
	if (plk_lockstat_on)
		plk_lockstat_cond(c);
	if (cond_is_glibc(c)) {
		if (abstime && !plk_timespec_valid(abstime))
			return EINVAL;
		if (mutex_is_glibc(pm))
			return abstime ? plk_real()->cond_clockwait(c, pm, clock, abstime)
			               : plk_real()->cond_wait(c, pm);
		return shared_cond_wait(c, pm, clock, abstime);
	}
	return plk_cond_wait((proxylock_cond_t *)c, pm, mutex_is_glibc(pm) ? &glibc_mutex_ops : NULL,
	                     clock, abstime);
}

PLK_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;
	clockid_t clock = CLOCK_REALTIME;

	if (attr) {
		pthread_condattr_getpshared(attr, &pshared);
		pthread_condattr_getclock(attr, &clock);
	}
	if (caller_is_urcu(RETURN_ADDRESS()) || pshared != PTHREAD_PROCESS_PRIVATE)
		return plk_real()->cond_init(c, attr);
	return proxylock_cond_init((proxylock_cond_t *)c, clock);
}

PLK_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
	if (caller_is_urcu(RETURN_ADDRESS()) || cond_is_glibc(c))
		return plk_real()->cond_destroy(c);
	/* Not proxylock_cond_destroy: glibc leaves a destroyed condvar usable
	 * enough that programs get away with it, and so do we. */
	return __atomic_load_n(&((proxylock_cond_t *)c)->__waiters, __ATOMIC_ACQUIRE) ? EBUSY : 0;
}

PLK_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *pm)
{
	if (caller_is_urcu(RETURN_ADDRESS()))
		return plk_real()->cond_wait(c, pm);
	return cond_wait_any(c, pm, plk_cond_clock((proxylock_cond_t *)c), NULL);
}

PLK_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *pm,
                                      const struct timespec *abstime)
{
	if (caller_is_urcu(RETURN_ADDRESS()))
		return plk_real()->cond_timedwait(c, pm, abstime);
	if (!abstime)
		return EINVAL;
	/* glibc keeps its clock bit where we keep ours: right for both. */
	return cond_wait_any(c, pm, plk_cond_clock((proxylock_cond_t *)c), abstime);
}

PLK_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                                      const struct timespec *abstime)
{
	if (caller_is_urcu(RETURN_ADDRESS()))
		return plk_real()->cond_clockwait(c, pm, clock, abstime);
	if (!abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
		return EINVAL;
	return cond_wait_any(c, pm, clock, abstime);
}

PLK_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	if (caller_is_urcu(RETURN_ADDRESS()) || cond_is_glibc(c))
		return plk_real()->cond_signal(c);
	plk_cond_wake((proxylock_cond_t *)c, false);
	return 0;
}

PLK_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (caller_is_urcu(RETURN_ADDRESS()) || cond_is_glibc(c))
		return plk_real()->cond_broadcast(c);
	plk_cond_wake((proxylock_cond_t *)c, true);
	return 0;
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

/* SPDX-License-Identifier: MIT */
/*
 * test_preload.c - plain pthread and C11 code, run under the LD_PRELOAD
 * interposer (meson sets LD_PRELOAD): POSIX semantics and error codes
 * for every mutex type and static initializer, what passes through to
 * glibc, condvars, and the application's own scheduler calls while it is
 * being lent to, checked against the kernel's view.  Not linked with
 * libproxylock: it only sees the interposer through the pthread calls
 * (and asserts that it is there, from the lock word's encoding).
 */
#include <dlfcn.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <threads.h>

#include "helpers.h"

/* glibc's lock word holds 1 or 2 when locked; a proxylock's, our TID. */
static bool word_is_tid(pthread_mutex_t *m)
{
	return (pid_t)(m->__data.__lock & 0x3fffffff) == gettid_();
}

START_TEST(the_interposer_is_loaded_and_owns_default_mutexes)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	ck_assert_msg(dlsym(RTLD_DEFAULT, "proxylock_caps"), "run me with LD_PRELOAD=libproxylock-preload.so");
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_msg(word_is_tid(&m), "lock word %#x is glibc's, not a proxylock's", m.__data.__lock);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(m.__data.__lock, 0);
}
END_TEST

/* --- types, through static initializers and attributes ---------------- */

START_TEST(static_initializers_give_each_type_its_posix_semantics)
{
	pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_mutex_t chk = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_t ada = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_mutex_lock(&rec), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&rec), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_mutex_unlock(&rec), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&rec), EPERM);

	ck_assert_int_eq(pthread_mutex_lock(&chk), 0);
	ck_assert(word_is_tid(&chk));
	ck_assert_int_eq(pthread_mutex_lock(&chk), EDEADLK);
	ck_assert_int_eq(pthread_mutex_trylock(&chk), EBUSY);
	ck_assert_int_eq(pthread_mutex_destroy(&chk), EBUSY);
	ck_assert_int_eq(pthread_mutex_unlock(&chk), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&chk), EPERM);

	ck_assert_int_eq(pthread_mutex_lock(&ada), 0);
	ck_assert(word_is_tid(&ada));
	ck_assert_int_eq(pthread_mutex_trylock(&ada), EBUSY);
	ck_assert_int_eq(pthread_mutex_unlock(&ada), 0);
}
END_TEST

START_TEST(attributes_select_the_type)
{
	static const int types[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
	                             PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP };
	pthread_mutexattr_t a;
	pthread_mutex_t m;

	for (int i = 0; i < 4; i++) {
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, types[i]);
		ck_assert_int_eq(pthread_mutex_init(&m, &a), 0);
		ck_assert_int_eq(pthread_mutex_lock(&m), 0);
		ck_assert(word_is_tid(&m));
		if (types[i] == PTHREAD_MUTEX_RECURSIVE) {
			ck_assert_int_eq(pthread_mutex_lock(&m), 0);
			ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		} else if (types[i] == PTHREAD_MUTEX_ERRORCHECK) {
			ck_assert_int_eq(pthread_mutex_lock(&m), EDEADLK);
		} else {
			ck_assert_int_eq(pthread_mutex_trylock(&m), EBUSY);
		}
		ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
		ck_assert_int_eq(pthread_mutex_lock(&m), EINVAL);  /* destroyed, as glibc says */
		pthread_mutexattr_destroy(&a);
	}
}
END_TEST

static void *lock_and_exit(void *m)
{
	pthread_mutex_lock(m);
	return NULL;
}

START_TEST(timed_locks_check_their_arguments_and_time_out)
{
	pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct timespec bad = { 0, -1 }, dl;
	pthread_t th;

	ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad), 0);  /* free: no check needed */
	pthread_mutex_unlock(&m);
	ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &bad), EINVAL);
	pthread_create(&th, NULL, lock_and_exit, &m);
	pthread_join(th, NULL);  /* m now held by a thread that is gone */
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &bad), EINVAL);
	dl = abstime_in(CLOCK_MONOTONIC, 10 * 1000000L);
	ck_assert_int_eq(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
	dl = abstime_in(CLOCK_REALTIME, 10 * 1000000L);
	ck_assert_int_eq(pthread_mutex_timedlock(&m, &dl), ETIMEDOUT);
}
END_TEST

static void *unlock_other(void *m)
{
	return (void *)(intptr_t)pthread_mutex_unlock(m);
}

START_TEST(a_normal_mutex_may_be_unlocked_by_another_thread_as_in_glibc)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_t th;
	void *rc;

	pthread_mutex_lock(&m);
	pthread_create(&th, NULL, unlock_other, &m);
	pthread_join(th, &rc);
	ck_assert_int_eq((intptr_t)rc, 0);
	ck_assert_int_eq(m.__data.__lock, 0);
	ck_assert_int_eq(pthread_mutex_trylock(&m), 0);
	pthread_mutex_lock(&e);
	pthread_create(&th, NULL, unlock_other, &e);
	pthread_join(th, &rc);
	ck_assert_int_eq((intptr_t)rc, EPERM);
	ck_assert(word_is_tid(&e));
}
END_TEST

/* --- what stays glibc's ------------------------------------------------ */

START_TEST(robust_shared_and_protect_mutexes_stay_glibcs_and_keep_its_semantics)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	pthread_t th;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	ck_assert_int_eq(pthread_mutex_init(&m, &a), 0);
	pthread_create(&th, NULL, lock_and_exit, &m);
	pthread_join(th, NULL);
	ck_assert_int_eq(pthread_mutex_lock(&m), EOWNERDEAD);
	ck_assert_int_eq(pthread_mutex_consistent(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	pthread_mutex_destroy(&m);

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
	ck_assert_int_eq(pthread_mutex_init(&m, &a), 0);
	ck_assert_msg(m.__data.__kind & 0x40, "glibc did not initialise the PRIO_PROTECT mutex");
	ck_assert_int_eq(pthread_mutex_getprioceiling(&m, &(int){ 0 }), 0);
	pthread_mutex_destroy(&m);
}
END_TEST

/* A process-shared mutex and condvar in shared memory, across fork. */
START_TEST(a_process_shared_mutex_and_condvar_work_across_processes)
{
	struct shared { pthread_mutex_t m; pthread_cond_t c; int ready; } *s;
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	int status;
	pid_t pid;

	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(s, MAP_FAILED);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&s->m, &ma);
	pthread_cond_init(&s->c, &ca);
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&s->m);
		s->ready = 1;
		pthread_cond_signal(&s->c);
		pthread_mutex_unlock(&s->m);
		_exit(0);
	}
	pthread_mutex_lock(&s->m);
	while (!s->ready)
		ck_assert_int_eq(pthread_cond_wait(&s->c, &s->m), 0);
	pthread_mutex_unlock(&s->m);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(status, 0);
}
END_TEST

/* --- condition variables ---------------------------------------------- */

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static int q_items, q_taken;

static void *q_consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&q_lock);
		while (q_items == 0 && q_taken < 40000)
			pthread_cond_wait(&q_cond, &q_lock);
		if (q_taken == 40000) {
			pthread_mutex_unlock(&q_lock);
			return NULL;
		}
		q_items--;
		if (++q_taken == 40000)
			pthread_cond_broadcast(&q_cond);
		pthread_mutex_unlock(&q_lock);
	}
}

START_TEST(static_condvars_carry_every_item_with_no_lost_wakeup)
{
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, q_consumer, NULL);
	for (int i = 0; i < 40000; i++) {
		pthread_mutex_lock(&q_lock);
		q_items++;
		pthread_cond_signal(&q_cond);
		pthread_mutex_unlock(&q_lock);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(q_taken, 40000);
	ck_assert_int_eq(q_items, 0);
}
END_TEST

START_TEST(condattr_clock_is_honoured_and_bad_deadlines_refused)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_condattr_t a;
	pthread_cond_t c;
	struct timespec dl, bad = { 0, 1000000000L };
	uint64_t t0;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&c, &a);
	pthread_mutex_lock(&m);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
	/* A deadline 20 ms ahead on CLOCK_MONOTONIC is about 50 years in
	 * the past on CLOCK_REALTIME: read on the wrong clock, no wait. */
	t0 = mono_ns();  /* before the deadline's clock read */
	dl = abstime_in(CLOCK_MONOTONIC, 20 * 1000000L);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &dl), ETIMEDOUT);
	ck_assert_uint_ge(mono_ns() - t0, 19 * 1000000ull);
	ck_assert(word_is_tid(&m));
	dl = abstime_in(CLOCK_REALTIME, 10 * 1000000L);
	ck_assert_int_eq(pthread_cond_clockwait(&c, &m, CLOCK_REALTIME, &dl), ETIMEDOUT);
	ck_assert_int_eq(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
	pthread_mutex_unlock(&m);
	ck_assert_int_eq(pthread_cond_destroy(&c), 0);
}
END_TEST

/* Deadlines on glibc's own objects reach glibc's clock-taking calls, or,
 * on a glibc without them (the preload-oldglibc test), their fallbacks. */
static bool timed_out_after_20ms(int err, uint64_t t0)
{
	return err == ETIMEDOUT && mono_ns() - t0 >= 19 * 1000000ull;
}

/* Waits may wake spuriously (and a glibc condvar with a proxylock mutex
 * does, every 1 ms): wait again until the deadline answers. */
static int clockwait_until_timeout(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                   const struct timespec *dl)
{
	int err;

	while ((err = pthread_cond_clockwait(c, m, clock, dl)) == 0)
		;
	return err;
}

static void *clocklock_from_other_thread(void *pm)
{
	uint64_t t0 = mono_ns();  /* before the deadline's clock read */
	struct timespec dl = abstime_in(CLOCK_MONOTONIC, 20 * 1000000L);

	return (void *)(intptr_t)timed_out_after_20ms(pthread_mutex_clocklock(pm, CLOCK_MONOTONIC, &dl), t0);
}

START_TEST(glibc_objects_take_deadlines_on_either_clock)
{
	static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	pthread_mutex_t pm, m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	pthread_cond_t c[2];
	struct timespec dl;
	pthread_t th;
	void *ok;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_mutex_init(&pm, &ma), 0);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_cond_init(&c[0], &ca), 0);                 /* CLOCK_REALTIME */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ck_assert_int_eq(pthread_cond_init(&c[1], &ca), 0);

	ck_assert_int_eq(pthread_mutex_lock(&pm), 0);
	dl = abstime_in(CLOCK_MONOTONIC, 1000000L);
	ck_assert_int_eq(pthread_mutex_clocklock(&pm, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
	pthread_create(&th, NULL, clocklock_from_other_thread, &pm);
	pthread_join(th, &ok);
	ck_assert_msg(ok, "clocklock(CLOCK_MONOTONIC) on a glibc mutex did not time out after 20 ms");
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < 2; k++) {
			uint64_t t0 = mono_ns();

			dl = abstime_in(clocks[k], 20 * 1000000L);
			ck_assert_msg(timed_out_after_20ms(clockwait_until_timeout(&c[i], &pm, clocks[k], &dl), t0),
			              "glibc condvar %d, glibc mutex, clock %d", i, (int)clocks[k]);
			t0 = mono_ns();
			ck_assert_int_eq(pthread_mutex_lock(&m), 0);
			dl = abstime_in(clocks[k], 20 * 1000000L);
			ck_assert_msg(timed_out_after_20ms(clockwait_until_timeout(&c[i], &m, clocks[k], &dl), t0),
			              "glibc condvar %d, proxylock mutex, clock %d", i, (int)clocks[k]);
			ck_assert(word_is_tid(&m));
			ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
		}
	}
	ck_assert_int_eq(pthread_mutex_unlock(&pm), 0);
	pthread_cond_destroy(&c[0]);
	pthread_cond_destroy(&c[1]);
	pthread_mutex_destroy(&pm);
}
END_TEST

START_TEST(c11_mutexes_and_condvars_keep_their_return_codes)
{
	mtx_t m, r;
	cnd_t c;
	struct timespec dl;

	ck_assert_int_eq(mtx_init(&m, mtx_timed), thrd_success);
	ck_assert_int_eq(mtx_init(&r, mtx_plain | mtx_recursive), thrd_success);
	ck_assert_int_eq(cnd_init(&c), thrd_success);
	ck_assert_int_eq(mtx_lock(&m), thrd_success);
	ck_assert(word_is_tid((pthread_mutex_t *)&m));
	ck_assert_int_eq(mtx_trylock(&m), thrd_busy);
	dl = abstime_in(CLOCK_REALTIME, 5 * 1000000L);  /* TIME_UTC is CLOCK_REALTIME */
	ck_assert_int_eq(cnd_timedwait(&c, &m, &dl), thrd_timedout);
	ck_assert_int_eq(cnd_signal(&c), thrd_success);
	ck_assert_int_eq(cnd_broadcast(&c), thrd_success);
	ck_assert_int_eq(mtx_unlock(&m), thrd_success);
	ck_assert_int_eq(mtx_lock(&r), thrd_success);
	ck_assert_int_eq(mtx_lock(&r), thrd_success);
	ck_assert_int_eq(mtx_unlock(&r), thrd_success);
	ck_assert_int_eq(mtx_unlock(&r), thrd_success);
	cnd_destroy(&c);
	mtx_destroy(&m);
	mtx_destroy(&r);
}
END_TEST

/* --- the application's scheduler calls while lent to ------------------ */

static pthread_mutex_t lend_lock = PTHREAD_MUTEX_INITIALIZER;
static int waiter_in;

static void *pinned_waiter(void *arg)
{
	(void)arg;
	pin_self(0);
	setpriority(PRIO_PROCESS, 0, 0);  /* created at its creator's nice 10 */
	__atomic_store_n(&waiter_in, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&lend_lock);
	pthread_mutex_unlock(&lend_lock);
	return NULL;
}

/*
 * Holder pinned to CPU 1 at nice 10; a waiter pinned to CPU 0 blocks.
 * While lent CPU 0 and nice 0, the holder sets nice 5 (nice()), its CPUs
 * to {1}, then nice 7 (sched_setattr): the getters report that base, the
 * lend stays on top, and after unlock the kernel shows exactly what the
 * application set.
 */
START_TEST(scheduler_calls_made_while_lent_to_change_the_base_not_the_loan)
{
	cpu_set_t one, got;
	pthread_t th;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	pin_self(1);
	ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 10), 0);
	pthread_mutex_lock(&lend_lock);
	pthread_create(&th, NULL, pinned_waiter, NULL);
	ck_assert(eventually(__atomic_load_n(&waiter_in, __ATOMIC_ACQUIRE) && affinity_is(0, 0, -1), 3000));
	ck_assert_int_eq(kview_of(0).nice, 0);                 /* lent the waiter's nice */
	ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), 10);    /* the base, as set */
	ck_assert_int_eq(nice(-5), 5);                         /* from the base: 10 - 5 */
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(got), &got), 0);
	ck_assert(CPU_EQUAL(&got, &one));
	ck_assert_msg(affinity_is(0, 0, -1), "the loan was dropped by the application's call");
	ck_assert_int_eq(kview_of(0).nice, 0);
	/* glibc 2.41's sched_setattr(), which the interposer provides. */
	{
		int (*setattr)(pid_t, void *, unsigned);
		void *p = dlsym(RTLD_DEFAULT, "sched_setattr");
		struct plk_sched_attr a = { .size = sizeof(a), .sched_policy = SCHED_OTHER,
		                            .sched_nice = 7 };

		ck_assert_ptr_nonnull(p);
		memcpy(&setattr, &p, sizeof(p));
		ck_assert_int_eq(setattr(0, &a, 0), 0);
		ck_assert_int_eq(kview_of(0).nice, 0);  /* still lent */
		ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), 7);
	}
	pthread_mutex_unlock(&lend_lock);
	ck_assert(affinity_is(0, 1, -1));
	ck_assert_int_eq(kview_of(0).nice, 7);
	pthread_join(th, NULL);
}
END_TEST

/*
 * The application renices a blocked waiter (review of issue 30): H (nice
 * 5, CPU 1) holds the lock, W (nice 0, CPU 0) waits and lends H nice 0
 * and CPU 0; the main thread sets W to nice 19 with setpriority().  What
 * W lends changes with its base at once: H goes back to nice 5 and CPU 1
 * (W no longer outranks it), while W still waits.
 */
static pthread_mutex_t rn_lock = PTHREAD_MUTEX_INITIALIZER;
static int rn_h, rn_w, rn_release;

static void *rn_holder(void *arg)
{
	(void)arg;
	pin_self(1);
	setpriority(PRIO_PROCESS, 0, 5);
	usleep(2000);  /* past any copy of the base (PLK_BASE_TTL_NS) */
	pthread_mutex_lock(&rn_lock);
	__atomic_store_n(&rn_h, gettid_(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&rn_release, __ATOMIC_ACQUIRE))
		usleep(1000);
	pthread_mutex_unlock(&rn_lock);
	return NULL;
}

static void *rn_waiter(void *arg)
{
	(void)arg;
	pin_self(0);
	setpriority(PRIO_PROCESS, 0, 0);
	usleep(2000);
	__atomic_store_n(&rn_w, gettid_(), __ATOMIC_RELEASE);
	pthread_mutex_lock(&rn_lock);
	pthread_mutex_unlock(&rn_lock);
	return NULL;
}

START_TEST(renicing_a_blocked_waiter_changes_what_it_lends_at_once)
{
	pthread_t h, w;
	pid_t ht, wt;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pthread_create(&h, NULL, rn_holder, NULL);
	ck_assert(eventually(__atomic_load_n(&rn_h, __ATOMIC_ACQUIRE) != 0, 3000));
	ht = __atomic_load_n(&rn_h, __ATOMIC_ACQUIRE);
	pthread_create(&w, NULL, rn_waiter, NULL);
	ck_assert_msg(eventually(kview_of(ht).nice == 0 && affinity_is(ht, 0, -1), 3000),
	              "H was never lent W's nice 0 and CPU 0");
	wt = __atomic_load_n(&rn_w, __ATOMIC_ACQUIRE);
	ck_assert_int_eq(setpriority(PRIO_PROCESS, (id_t)wt, 19), 0);
	ck_assert_msg(eventually(kview_of(ht).nice == 5 && affinity_is(ht, 1, -1), 2000),
	              "W reniced to 19 while it waits: H still at nice %d, %s", kview_of(ht).nice,
	              affinity_is(ht, 0, -1) ? "on W's CPU 0" : "not on CPU 0 alone");
	ck_assert_int_eq(kview_of(wt).nice, 19);
	__atomic_store_n(&rn_release, 1, __ATOMIC_RELEASE);
	pthread_join(w, NULL);
	pthread_join(h, NULL);
}
END_TEST

/* --- another thread's TID, from a caller whose TID collides (issue 29) -- */

/*
 * glibc's struct pthread has words before its TID field that can equal
 * the caller's TID: header.multiple_threads (1 once a second thread
 * exists: TID 1, the main thread of a PID namespace's first process)
 * and the high half of the TCB's own address (0x7fxx on x86_64).  A
 * caller with such a TID must still map another thread's pthread_t to
 * that thread's TID.  The check: B (nice 1) holds a mutex and is lent
 * CPU 0 by a nice-0 waiter; the colliding main thread sets B's CPUs to {1} and reads them
 * back ({1}: the base, while lent), and after B's unlock the kernel
 * shows {1}, what the application set.  Run in children, so plain
 * return codes: 0, or the step that failed.
 */
static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static int tc_tid_b, tc_held, tc_release;
static cpu_set_t tc_after;  /* B's CPUs as the kernel has them after its unlock */

static void *tc_holder(void *arg)
{
	(void)arg;
	/* Ranked below the waiter, which lends CPUs only if it outranks
	 * (docs/design.md, "The rule: lending never hurts"); older than a
	 * base copy may stand in for (PLK_BASE_TTL_NS). */
	setpriority(PRIO_PROCESS, 0, 1);
	usleep(2000);
	pthread_mutex_lock(&tc_lock);
	__atomic_store_n(&tc_tid_b, gettid_(), __ATOMIC_RELEASE);
	__atomic_store_n(&tc_held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&tc_release, __ATOMIC_ACQUIRE))
		usleep(1000);
	pthread_mutex_unlock(&tc_lock);
	CPU_ZERO(&tc_after);
	syscall(SYS_sched_getaffinity, 0, sizeof(tc_after), &tc_after);
	return NULL;
}

static void *tc_waiter(void *arg)
{
	cpu_set_t zero;

	(void)arg;
	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	syscall(SYS_sched_setaffinity, 0, sizeof(zero), &zero);
	pthread_mutex_lock(&tc_lock);
	pthread_mutex_unlock(&tc_lock);
	return NULL;
}

/* The kernel's CPUs of @tid are exactly {@a} or {@a, @b}, without
 * check's asserts (this runs in a child of the test). */
static bool tc_cpus_are(pid_t tid, int a, int b)
{
	cpu_set_t got, want;

	CPU_ZERO(&want);
	CPU_SET(a, &want);
	if (b >= 0)
		CPU_SET(b, &want);
	CPU_ZERO(&got);
	return syscall(SYS_sched_getaffinity, tid, sizeof(got), &got) >= 0 && CPU_EQUAL(&got, &want);
}

static int tc_scenario(void)
{
	cpu_set_t both, one, got;
	pthread_t b, w;
	bool lent = false;

	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	if (syscall(SYS_sched_setaffinity, 0, sizeof(both), &both) != 0)
		return 2;
	pthread_create(&b, NULL, tc_holder, NULL);
	while (!__atomic_load_n(&tc_held, __ATOMIC_ACQUIRE))
		usleep(1000);
	pthread_create(&w, NULL, tc_waiter, NULL);
	for (int i = 0; i < 3000 && !lent; i++, usleep(1000))
		lent = tc_cpus_are(__atomic_load_n(&tc_tid_b, __ATOMIC_ACQUIRE), 0, -1);
	if (!lent)
		return 3;  /* B never lent the waiter's CPU 0 */
	if (pthread_setaffinity_np(b, sizeof(one), &one) != 0)
		return 4;
	if (pthread_getaffinity_np(b, sizeof(got), &got) != 0 || !CPU_EQUAL(&got, &one))
		return 5;  /* not B's base: another thread's */
	__atomic_store_n(&tc_release, 1, __ATOMIC_RELEASE);
	pthread_join(w, NULL);
	pthread_join(b, NULL);
	if (!CPU_EQUAL(&tc_after, &one))
		return 6;  /* B's unlock restored another base: the application's {1} lost */
	return 0;
}

/* Wait for @pid; its exit code, or 100 + signal. */
static int tc_wait(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 90;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/*
 * In a new PID namespace: its first process (TID 1) forks, with the
 * namespace's last PID set so, a child whose TID is the high half of its
 * main thread's TCB address (fork keeps the address); each runs the
 * scenario before any lookup of another thread's TID.  Returns 0, 10 +
 * TID 1's failed step, 40 + the high-half child's, or 80 (the child
 * could not be made), 81 (it did not get that TID).
 */
static int tc_pid_one(void)
{
	unsigned hi = (unsigned)((uintptr_t)pthread_self() >> 32);
	int hi_result = 80, one_result;  /* 80: not run */
	FILE *f;

	if (gettid_() != 1)
		return 91;
	if (hi > 1 && hi < 32768 && (f = fopen("/proc/sys/kernel/ns_last_pid", "w"))) {
		fprintf(f, "%u", hi - 1);
		if (fclose(f) == 0) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(gettid_() == (pid_t)hi ? tc_scenario() : 81);
			hi_result = tc_wait(pid);
		}
	}
	one_result = tc_scenario();
	if (one_result)
		return 10 + one_result;
	return hi_result > 0 && hi_result < 10 ? 40 + hi_result : hi_result;
}

START_TEST(another_threads_tid_is_found_from_a_caller_whose_tid_matches_an_earlier_word)
{
	pid_t pid;
	int rc;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pid = fork();
	if (pid == 0) {
		pid_t one;

		if (unshare(CLONE_NEWPID) != 0)
			_exit(errno == EINVAL ? 93 : 92);  /* EINVAL: no PID namespaces here */
		if ((one = fork()) == 0)
			_exit(tc_pid_one());
		_exit(tc_wait(one));
	}
	rc = tc_wait(pid);
	if (rc == 93) {
		fprintf(stderr, "SKIP: this kernel has no PID namespaces (CONFIG_PID_NS)\n");
		return;
	}
	require_privilege(rc != 92, "unshare(CLONE_NEWPID) refused (run as root)");
	ck_assert_msg(rc == 0,
	              "code %d: %s", rc,
	              rc == 92 ? "unshare(CLONE_NEWPID) refused (needs root)"
	              : rc > 40 && rc < 50 ? "caller with the TCB address's high half as TID: step (code - 40)"
	              : rc > 10 && rc < 20 ? "caller with TID 1: step (code - 10)"
	              : rc == 80 || rc == 81 ? "no child with the TCB address's high half as TID"
	                                     : "setup failed");
}
END_TEST

/* --- the base is never stale (issue 13) ------------------------------ */

static pthread_mutex_t sb_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sb_lock = PTHREAD_MUTEX_INITIALIZER;
static int sb_round, sb_gate_held, sb_holding, sb_lender_done, sb_stop;

/* Holds the gate for 200 us each round, so that the holder blocks on it
 * (its copy of its base is fresh then: the setters just before it read
 * it back, so as a waiter it does not re-read it). */
static void *sb_gatekeeper(void *arg)
{
	(void)arg;
	for (int r = 1; !__atomic_load_n(&sb_stop, __ATOMIC_ACQUIRE); r++) {
		while (__atomic_load_n(&sb_round, __ATOMIC_ACQUIRE) < r &&
		       !__atomic_load_n(&sb_stop, __ATOMIC_ACQUIRE))
			;
		pthread_mutex_lock(&sb_gate);
		__atomic_store_n(&sb_gate_held, r, __ATOMIC_RELEASE);
		usleep(200);
		pthread_mutex_unlock(&sb_gate);
	}
	return NULL;
}

/* At nice 0 on CPUs {0, 1}: each round, blocks on sb_lock once. */
static void *sb_lender(void *arg)
{
	cpu_set_t both;

	(void)arg;
	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(both), &both), 0);
	ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 0), 0);
	for (int r = 1; !__atomic_load_n(&sb_stop, __ATOMIC_ACQUIRE); r++) {
		while (__atomic_load_n(&sb_holding, __ATOMIC_ACQUIRE) < r &&
		       !__atomic_load_n(&sb_stop, __ATOMIC_ACQUIRE))
			;
		if (__atomic_load_n(&sb_stop, __ATOMIC_ACQUIRE))
			break;
		pthread_mutex_lock(&sb_lock);
		pthread_mutex_unlock(&sb_lock);
		__atomic_store_n(&sb_lender_done, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* PLK_WAITERS (bit 31) in the interposer's lock word: someone is queued. */
static bool has_waiters(pthread_mutex_t *m)
{
	return __atomic_load_n((uint32_t *)m, __ATOMIC_ACQUIRE) & 0x80000000u;
}

/*
 * The holder's copy of its base is fresh (it just waited, on CPUs {0,1}
 * at nice 0); it then sets CPUs {1} and nice 5, takes a lock, and a
 * waiter with exactly the old context (CPUs {0,1}, nice 0) blocks on it,
 * well within the copy's 1 ms: against the stale copy the lend changes
 * nothing.  The getters must still say what the application set ({1},
 * nice 5, so nice(1) gives 6), and the kernel must show it after unlock.
 */
START_TEST(the_base_answered_is_what_the_application_set_never_a_stale_copy)
{
	cpu_set_t one, both, got;
	pthread_t gk, ld;
	int stale_cpus = 0, stale_nice = 0, rounds = 50;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	pthread_create(&gk, NULL, sb_gatekeeper, NULL);
	pthread_create(&ld, NULL, sb_lender, NULL);
	for (int r = 1; r <= rounds; r++) {
		ck_assert_int_eq(sched_setaffinity(0, sizeof(both), &both), 0);
		ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 0), 0);
		__atomic_store_n(&sb_round, r, __ATOMIC_RELEASE);
		while (__atomic_load_n(&sb_gate_held, __ATOMIC_ACQUIRE) < r)
			;
		pthread_mutex_lock(&sb_gate);  /* waits, on the copy just read back */
		pthread_mutex_unlock(&sb_gate);
		ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
		ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 5), 0);
		pthread_mutex_lock(&sb_lock);
		__atomic_store_n(&sb_holding, r, __ATOMIC_RELEASE);
		ck_assert(eventually(has_waiters(&sb_lock), 3000));
		ck_assert_int_eq(sched_getaffinity(0, sizeof(got), &got), 0);
		stale_cpus += !CPU_EQUAL(&got, &one);
		stale_nice += getpriority(PRIO_PROCESS, 0) != 5;
		errno = 0;
		ck_assert_int_eq(nice(1), 6);
		pthread_mutex_unlock(&sb_lock);
		ck_assert(affinity_is(0, 1, -1));
		ck_assert_int_eq(kview_of(0).nice, 6);
		ck_assert(eventually(__atomic_load_n(&sb_lender_done, __ATOMIC_ACQUIRE) >= r, 3000));
	}
	__atomic_store_n(&sb_stop, 1, __ATOMIC_RELEASE);
	pthread_join(gk, NULL);
	pthread_join(ld, NULL);
	ck_assert_msg(stale_cpus == 0 && stale_nice == 0,
	              "%d of %d rounds answered a stale CPU mask, %d a stale nice", stale_cpus,
	              rounds, stale_nice);
}
END_TEST

/* --- cancellation and fork ------------------------------------------- */

static pthread_mutex_t cx_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cx_cond = PTHREAD_COND_INITIALIZER;
static int cx_owned_in_cleanup;

static void cx_cleanup(void *arg)
{
	(void)arg;
	cx_owned_in_cleanup = word_is_tid(&cx_lock);
	pthread_mutex_unlock(&cx_lock);
}

static void *cx_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cx_lock);
	pthread_cleanup_push(cx_cleanup, NULL);
	for (;;)
		pthread_cond_wait(&cx_cond, &cx_lock);
	pthread_cleanup_pop(1);
	return NULL;
}

START_TEST(pthread_cond_wait_is_a_cancellation_point_that_retakes_the_mutex)
{
	pthread_t th;
	void *rc;

	pthread_create(&th, NULL, cx_waiter, NULL);
	ck_assert(eventually(((proxylock_cond_t *)&cx_cond)->__waiters == 1, 5000));
	pthread_cancel(th);
	pthread_join(th, &rc);  /* hangs if the wait is no cancellation point */
	ck_assert_ptr_eq(rc, PTHREAD_CANCELED);
	ck_assert(cx_owned_in_cleanup);
	ck_assert_int_eq(cx_lock.__data.__lock, 0);
	ck_assert_uint_eq(((proxylock_cond_t *)&cx_cond)->__waiters, 0);
}
END_TEST

/* The same with a process-shared (so glibc's) condvar and an ERRORCHECK
 * proxylock mutex: the cleanup handler must find the mutex its own. */
static pthread_mutex_t sx_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t sx_cond;
static int sx_waiting, sx_unlock_in_cleanup = -1;

static void sx_cleanup(void *arg)
{
	(void)arg;
	sx_unlock_in_cleanup = pthread_mutex_unlock(&sx_lock);
}

static void *sx_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&sx_lock);
	__atomic_store_n(&sx_waiting, 1, __ATOMIC_RELEASE);
	pthread_cleanup_push(sx_cleanup, NULL);
	for (;;)
		pthread_cond_wait(&sx_cond, &sx_lock);
	pthread_cleanup_pop(1);
	return NULL;
}

START_TEST(cancelling_a_wait_on_a_shared_condvar_retakes_the_proxylock_mutex)
{
	pthread_condattr_t ca;
	pthread_t th;
	void *rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_cond_init(&sx_cond, &ca), 0);
	pthread_create(&th, NULL, sx_waiter, NULL);
	/* Waiting: it has said so under the mutex, and released it. */
	while (!__atomic_load_n(&sx_waiting, __ATOMIC_ACQUIRE) || pthread_mutex_trylock(&sx_lock) != 0)
		usleep(100);
	ck_assert_int_eq(pthread_mutex_unlock(&sx_lock), 0);
	usleep(5000);
	pthread_cancel(th);
	pthread_join(th, &rc);
	ck_assert_ptr_eq(rc, PTHREAD_CANCELED);
	ck_assert_msg(sx_unlock_in_cleanup == 0,
	              "the cleanup handler's unlock returned %d: the mutex was not retaken", sx_unlock_in_cleanup);
	ck_assert_int_eq(pthread_mutex_trylock(&sx_lock), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&sx_lock), 0);
	ck_assert_int_eq(pthread_cond_destroy(&sx_cond), 0);
}
END_TEST

static pthread_mutex_t fk_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_cond = PTHREAD_COND_INITIALIZER;
static int fk_stop;

static void *fk_churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&fk_stop, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&fk_busy);
		pthread_cond_signal(&fk_cond);
		pthread_mutex_unlock(&fk_busy);
	}
	return NULL;
}

/* The child of a multithreaded parent: the locks its one thread held are
 * its own, and fresh locks, condvars and timed waits work. */
static int fork_child_checks(pthread_mutex_t *held)
{
	pthread_mutex_t fresh = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec dl = abstime_in(CLOCK_REALTIME, 5 * 1000000L);

	if (pthread_mutex_unlock(held) != 0 || pthread_mutex_lock(&fresh) != 0 ||
	    !word_is_tid(&fresh) || pthread_cond_timedwait(&c, &fresh, &dl) != ETIMEDOUT ||
	    pthread_mutex_unlock(&fresh) != 0)
		return 1;
	return 0;
}

START_TEST(a_fork_child_of_a_busy_process_has_consistent_locks)
{
	pthread_mutex_t held = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_t th[3];
	int status;
	pid_t pid;

	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, fk_churn, NULL);
	pthread_mutex_lock(&held);
	usleep(10000);
	pid = fork();
	if (pid == 0)
		_exit(fork_child_checks(&held));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	__atomic_store_n(&fk_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(pthread_mutex_unlock(&held), 0);
}
END_TEST

/* --- PTHREAD_PRIO_INHERIT: PROXYLOCK_PI ------------------------------- */

static const char *pi_mode(void)
{
	const char *s = getenv("PROXYLOCK_PI");

	return s && *s ? s : "auto";
}

static unsigned caps_of_interposer(void)
{
	unsigned (*caps)(void);
	void *p = dlsym(RTLD_DEFAULT, "proxylock_caps");

	ck_assert_ptr_nonnull(p);
	memcpy(&caps, &p, sizeof(p));
	return caps();
}

/* glibc's PTHREAD_MUTEX_PRIO_INHERIT_NP bit in __kind: glibc initialised
 * the mutex as a kernel PI one, and keeps it. */
static bool kept_glibc_pi(const pthread_mutex_t *m)
{
	return m->__data.__kind & 0x20;
}

static void pi_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	ck_assert_int_eq(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

/* The priority the scheduler runs @tid at, boosts included (field 18 of
 * its stat: 20 + nice, or -1 - RT priority); sched_getattr shows only
 * the base, which kernel PI leaves alone and a proxylock's RT loan sets. */
static int sched_prio_of(pid_t tid)
{
	char path[64], buf[512], *p;
	int prio = 1000;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %d", &prio);
	fclose(f);
	return prio;
}

static pthread_mutex_t pi_lock;

static void *pi_fifo_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pi_lock);
	pthread_mutex_unlock(&pi_lock);
	return NULL;
}

/* Where RT can be lent (root): auto and proxy make a proxylock, which
 * lends the FIFO waiter's policy to the holder; kernel keeps glibc's PI
 * mutex, and the kernel boosts the holder without touching its policy. */
START_TEST(priority_inherit_follows_PROXYLOCK_PI_where_rt_can_be_lent)
{
	bool kernel = strcmp(pi_mode(), "kernel") == 0;
	struct sched_param sp = { .sched_priority = 10 };
	pthread_attr_t ta;
	pthread_t th;

	require_privilege(caps_of_interposer() & PROXYLOCK_DONATE_RT, "needs RT permission (root)");
	pi_mutex_init(&pi_lock);
	ck_assert_int_eq(kept_glibc_pi(&pi_lock), kernel);
	ck_assert_int_eq(kview_of(0).policy, SCHED_OTHER);
	ck_assert_int_eq(pthread_mutex_lock(&pi_lock), 0);
	pthread_attr_init(&ta);
	pthread_attr_setinheritsched(&ta, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&ta, SCHED_FIFO);
	pthread_attr_setschedparam(&ta, &sp);
	ck_assert_int_eq(pthread_create(&th, &ta, pi_fifo_waiter, NULL), 0);
	ck_assert_msg(eventually(sched_prio_of(gettid_()) == -11, 3000),
	              "holder not boosted to FIFO 10: prio %d", sched_prio_of(gettid_()));
	ck_assert_int_eq(kview_of(0).policy, kernel ? SCHED_OTHER : SCHED_FIFO);
	ck_assert_int_eq(pthread_mutex_unlock(&pi_lock), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(kview_of(0).policy, SCHED_OTHER);
	ck_assert_int_ne(sched_prio_of(gettid_()), -11);
	ck_assert_int_eq(pthread_mutex_destroy(&pi_lock), 0);
}
END_TEST

static void *trylock_other(void *m)
{
	return (void *)(intptr_t)pthread_mutex_trylock(m);
}

/* proxylock_stats_get, through the interposer (this test is not linked
 * with libproxylock). */
static uint64_t eperm_skipped_now(void)
{
	void (*get)(struct proxylock_stats *);
	void *p = dlsym(RTLD_DEFAULT, "proxylock_stats_get");
	struct proxylock_stats st;

	if (!p)
		return UINT64_MAX;
	memcpy(&get, &p, sizeof(p));
	get(&st);
	return st.eperm_skipped;
}

static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;
static int ep_held;  /* ep_holder holds ep_lock, or gave up (-1) */

/* At nice 0 (raised from its creator's -5, which needs no privilege),
 * holds ep_lock until someone has queued on it and waited 20 ms. */
static void *ep_holder(void *arg)
{
	(void)arg;
	if (setpriority(PRIO_PROCESS, 0, 0) != 0) {
		__atomic_store_n(&ep_held, -1, __ATOMIC_RELEASE);
		return (void *)1;
	}
	pthread_mutex_lock(&ep_lock);
	__atomic_store_n(&ep_held, 1, __ATOMIC_RELEASE);
	while (!(__atomic_load_n((uint32_t *)&ep_lock, __ATOMIC_ACQUIRE) & 0x80000000u))
		usleep(1000);
	usleep(20 * 1000);
	pthread_mutex_unlock(&ep_lock);
	return NULL;
}

/* In a child without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 (a thread made
 * RT by rtkit): a PI mutex stays glibc's, unless PROXYLOCK_PI=proxy.
 * @probe_first: the interposer probed its privileges before the drop (a
 * daemon that contended as root); then also a nice lend the kernel now
 * refuses is counted (stats.eperm_skipped).  @userns: the child keeps
 * CAP_SYS_NICE but in a new user namespace (unshare -U), where capget
 * shows it and the kernel, which checks it against the initial one,
 * refuses RT and nice all the same. */
static int pi_child_without_rt(bool want_glibc, bool probe_first, bool userns)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	struct rlimit zero = { 0, 0 };
	struct sched_param sp = { .sched_priority = 1 };
	pthread_mutex_t m;
	pthread_t th;
	void *busy;

	if (probe_first && (!(caps_of_interposer() & PROXYLOCK_DONATE_RT) ||
	                    setpriority(PRIO_PROCESS, 0, -5) != 0))
		return 9;  /* root, probed: RT and nice lendable, and we are at nice -5 */
	if (setrlimit(RLIMIT_RTPRIO, &zero) != 0 || setrlimit(RLIMIT_NICE, &zero) != 0 ||
	    syscall(SYS_capget, &hdr, data) != 0)
		return 10;
	if (userns) {
		if (unshare(CLONE_NEWUSER) != 0)
			return errno == EINVAL ? 77 : 18;  /* EINVAL: no user namespaces here */
		if (syscall(SYS_capget, &hdr, data) != 0)
			return 18;
		if (!(data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE)))
			return 19;  /* the case is CAP_SYS_NICE shown, not honoured */
	} else {
		for (int i = 0; i < 2; i++)
			data[i].effective = data[i].permitted = data[i].inheritable = 0;
		if (syscall(SYS_capset, &hdr, data) != 0)
			return 11;
	}
	if (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp) != -1 || errno != EPERM)
		return 12;  /* RT must really be refused here */
	if (!probe_first && (caps_of_interposer() & PROXYLOCK_DONATE_RT))
		return 13;  /* probed before we dropped it, or believed capget */
	if (userns && !probe_first && (caps_of_interposer() & PROXYLOCK_DONATE_NICE) &&
	    setpriority(PRIO_PROCESS, 0, -1) != 0)
		return 20;  /* nice claimed lendable, which the kernel refuses */
	pi_mutex_init(&m);
	if (kept_glibc_pi(&m) != want_glibc)
		return 14;
	if (pthread_mutex_lock(&m) != 0 || (!want_glibc && !word_is_tid(&m)))
		return 15;  /* glibc's PI word is the TID too: checked only for proxylocks */
	pthread_create(&th, NULL, trylock_other, &m);
	pthread_join(th, &busy);
	if ((intptr_t)busy != EBUSY || pthread_mutex_unlock(&m) != 0 || pthread_mutex_destroy(&m) != 0)
		return 16;
	if (probe_first) {
		uint64_t before = eperm_skipped_now();
		void *ret;

		pthread_create(&th, NULL, ep_holder, NULL);
		while (!__atomic_load_n(&ep_held, __ATOMIC_ACQUIRE))
			usleep(1000);  /* else we may take it first, and it waits for us for ever */
		pthread_mutex_lock(&ep_lock);  /* lends nice -5: refused now */
		pthread_mutex_unlock(&ep_lock);
		pthread_join(th, &ret);
		if (ret || before == UINT64_MAX || eperm_skipped_now() <= before)
			return 17;
	}
	return 0;
}

static void pi_child_check(bool probe_first, bool userns)
{
	bool want_glibc = strcmp(pi_mode(), "proxy") != 0;
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(pi_child_without_rt(want_glibc, probe_first, userns));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (userns && WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		fprintf(stderr, "SKIP: this kernel has no user namespaces (CONFIG_USER_NS)\n");
		return;
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "PROXYLOCK_PI=%s: child failed at step %d (status %#x)", pi_mode(),
	              WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
}

START_TEST(priority_inherit_stays_the_kernels_where_rt_cannot_be_lent)
{
	pi_child_check(false, false);
}
END_TEST

/* The same after a probe made with privileges (issue 29): auto decides
 * at each PI init from what the thread may do then. */
START_TEST(priority_inherit_stays_the_kernels_after_a_privilege_drop_that_followed_the_probe)
{
	pi_child_check(true, false);
}
END_TEST

/* CAP_SYS_NICE in a user namespace other than the initial one (issue 29
 * review): the kernel does not honour it, so neither the probe nor the
 * check at each PI init may count it. */
START_TEST(priority_inherit_stays_the_kernels_in_a_user_namespace_where_cap_sys_nice_does_not_count)
{
	pi_child_check(false, true);
}
END_TEST

START_TEST(priority_inherit_stays_the_kernels_after_unsharing_the_user_namespace_past_the_probe)
{
	pi_child_check(true, true);
}
END_TEST

static Suite *preload_suite(void)
{
	Suite *s = suite_create("preload");
	TCase *tc = tcase_create("preload");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_interposer_is_loaded_and_owns_default_mutexes);
	tcase_add_test(tc, static_initializers_give_each_type_its_posix_semantics);
	tcase_add_test(tc, attributes_select_the_type);
	tcase_add_test(tc, timed_locks_check_their_arguments_and_time_out);
	tcase_add_test(tc, a_normal_mutex_may_be_unlocked_by_another_thread_as_in_glibc);
	tcase_add_test(tc, robust_shared_and_protect_mutexes_stay_glibcs_and_keep_its_semantics);
	tcase_add_test(tc, a_process_shared_mutex_and_condvar_work_across_processes);
	tcase_add_test(tc, static_condvars_carry_every_item_with_no_lost_wakeup);
	tcase_add_test(tc, condattr_clock_is_honoured_and_bad_deadlines_refused);
	tcase_add_test(tc, glibc_objects_take_deadlines_on_either_clock);
	tcase_add_test(tc, c11_mutexes_and_condvars_keep_their_return_codes);
	tcase_add_test(tc, scheduler_calls_made_while_lent_to_change_the_base_not_the_loan);
	tcase_add_test(tc, renicing_a_blocked_waiter_changes_what_it_lends_at_once);
	tcase_add_test(tc, the_base_answered_is_what_the_application_set_never_a_stale_copy);
	tcase_add_test(tc, another_threads_tid_is_found_from_a_caller_whose_tid_matches_an_earlier_word);
	tcase_add_test(tc, pthread_cond_wait_is_a_cancellation_point_that_retakes_the_mutex);
	tcase_add_test(tc, cancelling_a_wait_on_a_shared_condvar_retakes_the_proxylock_mutex);
	tcase_add_test(tc, a_fork_child_of_a_busy_process_has_consistent_locks);
	suite_add_tcase(s, tc);
	tc = tcase_create("pi");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, priority_inherit_follows_PROXYLOCK_PI_where_rt_can_be_lent);
	tcase_add_test(tc, priority_inherit_stays_the_kernels_where_rt_cannot_be_lent);
	tcase_add_test(tc, priority_inherit_stays_the_kernels_after_a_privilege_drop_that_followed_the_probe);
	tcase_add_test(tc, priority_inherit_stays_the_kernels_in_a_user_namespace_where_cap_sys_nice_does_not_count);
	tcase_add_test(tc, priority_inherit_stays_the_kernels_after_unsharing_the_user_namespace_past_the_probe);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(preload_suite)

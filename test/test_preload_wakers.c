/* SPDX-License-Identifier: MIT */
/*
 * test_preload_wakers.c - plain pthread code and POSIX semaphores under
 * the LD_PRELOAD interposer (meson sets LD_PRELOAD): a thread waiting on
 * a semaphore or a condvar lends to the thread that posted or signalled
 * it before, until its wait ends, checked against the kernel's view.
 * Not linked with libproxylock (it reads the counters through dlsym).
 * Needs 2 CPUs and root (to lower nice).
 */
#include <dlfcn.h>
#include <semaphore.h>

#include "helpers.h"

/* A worker thread at nice @nice that runs the function posted to it. */
struct worker {
	pthread_t th;
	pid_t tid;
	int nice;
	int (*fn)(void *);
	void *arg;
	int busy, rc, ready;
};

/* Posted to a worker: it returns. */
static int worker_exit(void *arg)
{
	return arg != NULL;
}

static void *worker_main(void *p)
{
	struct worker *w = p;

	w->tid = gettid_();
	set_nice_self(w->nice);
	__atomic_store_n(&w->ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		int (*fn)(void *);

		while (!(fn = __atomic_load_n(&w->fn, __ATOMIC_ACQUIRE)))
			usleep(100);
		if (fn == worker_exit)
			return NULL;
		w->rc = fn(w->arg);
		__atomic_store_n(&w->fn, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&w->busy, 0, __ATOMIC_RELEASE);
	}
}

static void worker_start(struct worker *w, int nice)
{
	memset(w, 0, sizeof(*w));
	w->nice = nice;
	ck_assert_int_eq(pthread_create(&w->th, NULL, worker_main, w), 0);
	while (!__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE))
		usleep(100);
}

static void worker_post(struct worker *w, int (*fn)(void *), void *arg)
{
	w->arg = arg;
	__atomic_store_n(&w->busy, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->fn, fn, __ATOMIC_RELEASE);
}

static int worker_wait(struct worker *w)
{
	ck_assert_msg(eventually(!__atomic_load_n(&w->busy, __ATOMIC_ACQUIRE), bound_ms(5000)),
	              "worker %d stuck", w->tid);
	return w->rc;
}

static void worker_quit(struct worker *w)
{
	worker_post(w, worker_exit, NULL);
	pthread_join(w->th, NULL);
}

static void require_root_two_cpus(void)
{
	ck_assert_msg(dlsym(RTLD_DEFAULT, "proxylock_caps"), "run me with LD_PRELOAD=libproxylock-preload.so");
	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	ck_assert_msg(geteuid() == 0, "needs root (to lower nice)");
}

/* --- semaphores ------------------------------------------------------ */

static sem_t sem;
static long sem_timeout_ns;

static int sem_waits(void *arg)
{
	struct timespec dl = abstime_in(CLOCK_MONOTONIC, sem_timeout_ns);

	(void)arg;
	if (sem_timeout_ns)
		return sem_clockwait(&sem, CLOCK_MONOTONIC, &dl) ? errno : 0;
	return sem_wait(&sem) ? errno : 0;
}

static int sem_posts(void *arg)
{
	(void)arg;
	return sem_post(&sem);
}

/* glibc's count of threads asleep on @s (the upper half of its 64-bit
 * value word); a thread counts itself in only once our wrapper has
 * registered it. */
static uint32_t sem_sleepers(sem_t *s)
{
	return (uint32_t)(__atomic_load_n((uint64_t *)s, __ATOMIC_ACQUIRE) >> 32);
}

/* @w waits on sem, asleep in glibc. */
static void sem_block(struct worker *w)
{
	worker_post(w, sem_waits, NULL);
	ck_assert(eventually(sem_sleepers(&sem) == 1 && thread_sleeping(w->tid), bound_ms(2000)));
}

/* Waiter @w at nice 0, poster @p at @poster_nice, and if @set_clamps
 * is given, run on each of them (@w first) before @p teaches: @p's post
 * to a sleeping @w makes it a poster of sem. */
static void sem_scene_start(struct worker *w, struct worker *p, int poster_nice,
                            void (*set_clamps)(struct worker *, bool waiter))
{
	ck_assert_int_eq(sem_init(&sem, 0, 0), 0);
	sem_timeout_ns = 0;
	worker_start(w, 0);
	worker_start(p, poster_nice);
	if (set_clamps) {
		set_clamps(w, true);
		set_clamps(p, false);
	}
	sem_block(w);
	worker_post(p, sem_posts, NULL);
	ck_assert_int_eq(worker_wait(p), 0);
	ck_assert_int_eq(worker_wait(w), 0);
}

static void sem_scene(struct worker *w, struct worker *p)
{
	require_root_two_cpus();
	sem_scene_start(w, p, 19, NULL);
}

static void sem_scene_end(struct worker *w, struct worker *p)
{
	worker_quit(w);
	worker_quit(p);
	ck_assert_int_eq(sem_destroy(&sem), 0);
}

/*
 * The scenarios written once for nice (here) and uclamp (in the x86
 * guest): how the waiter and the poster are set up, and how to tell from
 * the kernel's view that the poster is lent to, or at its own context.
 */
struct sem_lending {
	void (*scene)(struct worker *w, struct worker *p);  /* taught: p is sem's poster */
	bool (*lent)(pid_t tid);
	bool (*at_base)(pid_t tid);
	void (*say)(pid_t tid, char *buf, size_t len);  /* the kernel's view, in words */
};

/* @w sleeps on sem: eventually the poster @p is lent to. */
static void sem_lent_while_asleep(const struct sem_lending *l, struct worker *w, struct worker *p)
{
	char now[64];
	bool lent;

	sem_block(w);
	lent = eventually(l->lent(p->tid), bound_ms(2000));
	l->say(p->tid, now, sizeof(now));
	ck_assert_msg(lent, "the poster is at %s while its waiter sleeps", now);
}

/* The poster posts: the waiter withdraws before its wait returns. */
static void sem_waiter_lends_until_the_post(const struct sem_lending *l)
{
	struct worker w, p;
	char now[64];

	l->scene(&w, &p);
	sem_lent_while_asleep(l, &w, &p);
	worker_post(&p, sem_posts, NULL);
	ck_assert_int_eq(worker_wait(&p), 0);
	ck_assert_int_eq(worker_wait(&w), 0);
	l->say(p.tid, now, sizeof(now));
	ck_assert_msg(l->at_base(p.tid), "the poster stays at %s after the wait", now);
	sem_scene_end(&w, &p);
}

/* The waiter times out: withdrawn before its wait returns. */
static void sem_waiter_times_out_and_withdraws(const struct sem_lending *l)
{
	struct worker w, p;
	char now[64];

	l->scene(&w, &p);
	sem_timeout_ns = 300 * 1000 * 1000;
	sem_lent_while_asleep(l, &w, &p);
	ck_assert_int_eq(worker_wait(&w), ETIMEDOUT);
	l->say(p.tid, now, sizeof(now));
	ck_assert_msg(l->at_base(p.tid), "the poster is still at %s after the timeout", now);
	sem_scene_end(&w, &p);
}

static bool at_nice_0(pid_t tid)
{
	return nice_of(tid) == 0;
}

static bool at_nice_19(pid_t tid)
{
	return nice_of(tid) == 19;
}

static void say_nice(pid_t tid, char *buf, size_t len)
{
	snprintf(buf, len, "nice %d", nice_of(tid));
}

/* A nice-0 waiter, a nice-19 poster. */
static const struct sem_lending nice_lending = { sem_scene, at_nice_0, at_nice_19, say_nice };

START_TEST(a_semaphore_waiter_lends_to_its_poster_until_its_wait_ends)
{
	sem_waiter_lends_until_the_post(&nice_lending);
}
END_TEST

START_TEST(a_semaphore_wait_that_times_out_withdraws_its_lend)
{
	sem_waiter_times_out_and_withdraws(&nice_lending);
}
END_TEST

START_TEST(a_semaphore_that_can_be_taken_lends_nothing)
{
	struct worker w, p;

	sem_scene(&w, &p);
	ck_assert_int_eq(sem_post(&sem), 0);
	worker_post(&w, sem_waits, NULL);  /* takes it at once */
	ck_assert_int_eq(worker_wait(&w), 0);
	ck_assert_int_eq(nice_of(p.tid), 19);
	sem_scene_end(&w, &p);
}
END_TEST

/* --- semaphores, uclamp (in the x86 guest, test/vm/run-vm.sh) ------- */

/* The kernel does uclamp: else a SKIP, unless PLK_REQUIRE_UCLAMP=1 (the
 * guest's /init sets it), where its absence is a failure. */
static void require_uclamp(void)
{
	unsigned (*caps)(void);
	void *p = dlsym(RTLD_DEFAULT, "proxylock_caps");
	const char *must = getenv("PLK_REQUIRE_UCLAMP");

	require_root_two_cpus();
	memcpy(&caps, &p, sizeof(p));
	if (!(caps() & PROXYLOCK_DONATE_UCLAMP) && !(must && *must == '1')) {
		fprintf(stderr, "SKIP: this kernel has no uclamp (the x86 guest runs these: test/vm)\n");
		exit(0);
	}
	ck_assert_msg(caps() & PROXYLOCK_DONATE_UCLAMP, "no uclamp to lend: caps %#x", caps());
}

/* Run on a worker: it sets its clamps to arg[0]..arg[1]. */
static int set_clamps(void *arg)
{
	const int *c = arg;
	struct plk_sched_attr a = { .sched_policy = SCHED_OTHER,
	                            .sched_flags = PLK_SCHED_FLAG_UTIL_CLAMP,
	                            .sched_util_min = (uint32_t)c[0],
	                            .sched_util_max = (uint32_t)c[1] };

	return plk_sched_setattr(0, &a);
}

/* The high waiter's clamps (1024..1024), the low poster's (0..100). */
static void waiter_high_poster_low(struct worker *w, bool waiter)
{
	int c[2] = { waiter ? 1024 : 0, waiter ? 1024 : 100 };

	worker_post(w, set_clamps, c);
	ck_assert_int_eq(worker_wait(w), 0);
}

static bool clamps_are(pid_t tid, uint32_t umin, uint32_t umax)
{
	struct kview v = kview_of(tid);

	return v.umin == umin && v.umax == umax;
}

/* A high waiter (1024..1024), a poster capped low (0..100), at nice 0
 * both. */
static void sem_uclamp_scene(struct worker *w, struct worker *p)
{
	require_uclamp();
	sem_scene_start(w, p, 0, waiter_high_poster_low);
}

static bool at_1024(pid_t tid)
{
	return clamps_are(tid, 1024, 1024);
}

static bool at_0_100(pid_t tid)
{
	return clamps_are(tid, 0, 100);
}

static void say_uclamp(pid_t tid, char *buf, size_t len)
{
	struct kview v = kview_of(tid);

	snprintf(buf, len, "uclamp %u..%u", v.umin, v.umax);
}

static const struct sem_lending uclamp_lending = { sem_uclamp_scene, at_1024, at_0_100,
                                                   say_uclamp };

START_TEST(a_semaphore_waiter_lends_its_uclamp_to_its_poster_until_its_wait_ends)
{
	sem_waiter_lends_until_the_post(&uclamp_lending);
}
END_TEST

START_TEST(a_semaphore_waiter_that_times_out_takes_its_uclamp_back_from_the_poster)
{
	sem_waiter_times_out_and_withdraws(&uclamp_lending);
}
END_TEST

/*
 * The second review of issue 31 (C1): a semaphore waiter whose context
 * was never read lends no context it does not have.  W1 and W2 (19),
 * new threads that never used the library, wait before any poster is
 * learned (so nothing made them read their context); P (19) posts once:
 * learned, it is lent what the waiter still asleep has: 19, not a new
 * record's zeroes (nice 0).
 */
START_TEST(a_semaphore_waiter_whose_context_was_never_read_lends_only_what_it_has)
{
	struct worker w1, w2, p;

	require_root_two_cpus();
	ck_assert_int_eq(sem_init(&sem, 0, 0), 0);
	sem_timeout_ns = 0;
	worker_start(&w1, 19);
	worker_start(&w2, 19);
	worker_start(&p, 19);
	worker_post(&w1, sem_waits, NULL);
	ck_assert(eventually(sem_sleepers(&sem) == 1 && thread_sleeping(w1.tid), bound_ms(2000)));
	worker_post(&w2, sem_waits, NULL);
	ck_assert(eventually(sem_sleepers(&sem) == 2 && thread_sleeping(w2.tid), bound_ms(2000)));
	worker_post(&p, sem_posts, NULL);
	ck_assert_int_eq(worker_wait(&p), 0);
	/* The one woken has left (its wait's end lent the other's context). */
	ck_assert(eventually(!__atomic_load_n(&w1.busy, __ATOMIC_ACQUIRE) ||
	                     !__atomic_load_n(&w2.busy, __ATOMIC_ACQUIRE), bound_ms(2000)));
	ck_assert_msg(nice_of(p.tid) == 19, "poster nice %d (kernel's view) while only nice-19 "
	              "threads wait", nice_of(p.tid));
	ck_assert_int_eq(sem_post(&sem), 0);
	ck_assert_int_eq(worker_wait(&w1), 0);
	ck_assert_int_eq(worker_wait(&w2), 0);
	worker_quit(&w1);
	worker_quit(&w2);
	worker_quit(&p);
	ck_assert_int_eq(sem_destroy(&sem), 0);
}
END_TEST

/* --- condvars -------------------------------------------------------- */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;

static int cond_waits(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cm);
	int rc = pthread_cond_wait(&cc, &cm);

	pthread_mutex_unlock(&cm);
	return rc;
}

static int cond_signals(void *arg)
{
	(void)arg;
	return pthread_cond_signal(&cc);
}

static void cond_block(struct worker *w)
{
	worker_post(w, cond_waits, NULL);
	ck_assert(eventually(((proxylock_cond_t *)&cc)->__waiters == 1 && thread_sleeping(w->tid),
	                     bound_ms(2000)));
}

static void cond_round(struct worker *w, struct worker *s)
{
	cond_block(w);
	worker_post(s, cond_signals, NULL);
	ck_assert_int_eq(worker_wait(s), 0);
	ck_assert_int_eq(worker_wait(w), 0);
}

START_TEST(a_pthread_condvar_waiter_lends_to_its_signaller)
{
	struct worker w, s;

	require_root_two_cpus();
	worker_start(&w, 0);
	worker_start(&s, 19);
	cond_round(&w, &s);  /* teaches */
	cond_block(&w);
	ck_assert_msg(eventually(nice_of(s.tid) == 0, bound_ms(2000)),
	              "the signaller is at nice %d while its nice-0 waiter sleeps", nice_of(s.tid));
	worker_post(&s, cond_signals, NULL);
	ck_assert_int_eq(worker_wait(&s), 0);
	ck_assert_int_eq(nice_of(s.tid), 19);
	ck_assert_int_eq(worker_wait(&w), 0);
	worker_quit(&w);
	worker_quit(&s);
}
END_TEST

/* Scheduler calls made so far, through the interposer's counters. */
static uint64_t sched_calls(void)
{
	void (*get)(struct proxylock_stats *);
	void *p = dlsym(RTLD_DEFAULT, "proxylock_stats_get");
	struct proxylock_stats st;

	ck_assert_ptr_nonnull(p);
	memcpy(&get, &p, sizeof(p));
	get(&st);
	return st.setattr_calls + st.setaff_calls;
}

START_TEST(semaphore_and_condvar_waits_between_equals_make_no_scheduler_call)
{
	struct worker w, p;
	uint64_t calls;

	require_root_two_cpus();
	ck_assert_int_eq(sem_init(&sem, 0, 0), 0);
	sem_timeout_ns = 0;
	worker_start(&w, 0);
	worker_start(&p, 0);
	calls = sched_calls();
	for (int round = 0; round < 20; round++) {
		sem_block(&w);
		worker_post(&p, sem_posts, NULL);
		ck_assert_int_eq(worker_wait(&p), 0);
		ck_assert_int_eq(worker_wait(&w), 0);
		cond_round(&w, &p);
	}
	ck_assert_msg(sched_calls() == calls, "%lu scheduler calls for 40 waits between equals",
	              (unsigned long)(sched_calls() - calls));
	sem_scene_end(&w, &p);
}
END_TEST

static Suite *preload_wakers_suite(void)
{
	Suite *s = suite_create("preload-wakers");
	TCase *tc = tcase_create("wakers");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_semaphore_waiter_lends_to_its_poster_until_its_wait_ends);
	tcase_add_test(tc, a_semaphore_wait_that_times_out_withdraws_its_lend);
	tcase_add_test(tc, a_semaphore_that_can_be_taken_lends_nothing);
	tcase_add_test(tc, a_semaphore_waiter_whose_context_was_never_read_lends_only_what_it_has);
	tcase_add_test(tc, a_pthread_condvar_waiter_lends_to_its_signaller);
	tcase_add_test(tc, semaphore_and_condvar_waits_between_equals_make_no_scheduler_call);
	suite_add_tcase(s, tc);
	/* CK_RUN_CASE=uclamp: these alone (the x86 guest's /init). */
	tc = tcase_create("uclamp");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_semaphore_waiter_lends_its_uclamp_to_its_poster_until_its_wait_ends);
	tcase_add_test(tc, a_semaphore_waiter_that_times_out_takes_its_uclamp_back_from_the_poster);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(preload_wakers_suite)

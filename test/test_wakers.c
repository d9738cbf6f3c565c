/* SPDX-License-Identifier: MIT */
/*
 * test_wakers.c - condvar waiters lend to the threads that wake them
 * (lib/wakers.c), checked against the kernel's view.  A waker is
 * learned from a signal that found waiters, so each scenario first
 * teaches it one (condactor.h).  Needs 2 CPUs and the privilege to lower nice.
 */
#include <sys/wait.h>

#include "condactor.h"

#define RAISED(tid) eventually(nice_of(tid) == 0, bound_ms(2000))

/* The common scene: a nice-0 waiter @w, a nice-19 signaller @s taught. */
static void scene_start(struct actor *w, struct actor *s, struct cv *v)
{
	require_nice_lending();
	actor_start(w, 0, -1);
	actor_start(s, 19, -1);
	teach(w, s, v);
}

/* @s wakes with @fn on @v and is back at its base when the call returns. */
static void wake_restores(struct actor *s, int (*fn)(struct actor *), struct cv *v)
{
	actor_call(s, fn, v);
	ck_assert_int_eq(actor_wait(s), 0);
	ck_assert_msg(kview_equal(&s->after, &s->base), "waker at nice %d after its wake",
	              s->after.nice);
}

/* Wait on @v's condvar holding its mutex already (taken by ACT_LOCK). */
static int cv_wait_held(struct actor *a)
{
	struct cv *v = a->arg;
	int rc = proxylock_cond_wait(&v->c, &v->m);

	proxylock_mutex_unlock(&v->m);
	return rc;
}

/*
 * The review of issue 31 (C2): W holds the condvar's mutex with a nice
 * -10 waiter Y queued on it, so W runs at -10; W waits on the condvar,
 * releasing the mutex to Y, which takes it and lets go.  Only W's own
 * nice 0 waits now: the learned waker K is lent nice 0, not Y's -10.
 */
START_TEST(a_wait_that_releases_a_contended_mutex_lends_its_wakers_only_what_still_waits)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, k, y;

	scene_start(&w, &k, &v);
	actor_start(&y, -10, -1);
	actor_do(&w, ACT_LOCK, &v.m, 0);
	actor_block_on(&y, ACT_LOCK, &v.m);
	ck_assert(eventually(nice_of(w.tid) == -10, bound_ms(2000)));
	actor_call(&w, cv_wait_held, &v);
	ck_assert_int_eq(actor_wait(&y), 0);
	actor_do(&y, ACT_UNLOCK, &v.m, 0);
	ck_assert(eventually(thread_sleeping(w.tid), bound_ms(2000)));
	ck_assert_msg(eventually(nice_of(k.tid) == 0, bound_ms(2000)),
	              "Y took the mutex and left; K still at nice %d, W waits at %d",
	              nice_of(k.tid), nice_of(w.tid));
	wake_restores(&k, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_quit(&w);
	actor_quit(&k);
	actor_quit(&y);
}
END_TEST

/* The cast of the cycle scenes: A and B at 19, the source X at 0, and Y
 * (19), which teaches them. */
static void cycle_cast(struct actor *a, struct actor *b, struct actor *x, struct actor *y)
{
	require_nice_lending();
	actor_start(a, 19, -1);
	actor_start(b, 19, -1);
	actor_start(x, 0, -1);
	actor_start(y, 19, -1);
}

/*
 * The review of issue 31 (S2): learned wakers can wait for each other
 * without a deadlock.  A waits on C, whose waker is B; B waits on D,
 * whose waker is A; X (nice 0) waits on E, whose waker is A, and its
 * wait ends.  Nobody at nice 0 waits any more: A and B are back at 19
 * (a lend passed round the cycle kept itself before).  A wait for work
 * passes on what its waiter holds by locks, not by other waits for work.
 */
START_TEST(a_cycle_of_wakers_keeps_no_lend_after_its_source_stops_waiting)
{
	struct cv c = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct cv d = c, e = c;
	struct actor a, b, x, y;

	cycle_cast(&a, &b, &x, &y);
	teach(&y, &b, &c);
	teach(&y, &a, &d);
	teach(&y, &a, &e);
	wait_on(&a, &c, 1);
	wait_on(&b, &d, 1);
	wait_on(&x, &e, 1);
	ck_assert_msg(RAISED(a.tid), "A, E's waker, at nice %d while X waits", nice_of(a.tid));
	ck_assert_int_eq(proxylock_cond_signal(&e.c), 0);
	ck_assert_int_eq(actor_wait(&x), 0);
	ck_assert_msg(eventually(nice_of(a.tid) == 19 && nice_of(b.tid) == 19, bound_ms(2000)),
	              "X's wait ended: A at nice %d, B at nice %d, not 19", nice_of(a.tid),
	              nice_of(b.tid));
	ck_assert_int_eq(proxylock_cond_signal(&c.c), 0);
	ck_assert_int_eq(actor_wait(&a), 0);
	ck_assert_int_eq(proxylock_cond_signal(&d.c), 0);
	ck_assert_int_eq(actor_wait(&b), 0);
	actor_quit(&a);
	actor_quit(&b);
	actor_quit(&x);
	actor_quit(&y);
}
END_TEST

/* A nice-0 waiter, a nice-19 worker. */
static void nice_waiter(struct actor *a)
{
	require_nice_lending();
	actor_start(a, 0, -1);
}

static void nice_worker(struct actor *a)
{
	actor_start(a, 19, -1);
}

static bool runs_at_nice_0(struct actor *a)
{
	return nice_of(a->tid) == 0;
}

static bool at_its_base(struct actor *a)
{
	struct kview now = kview_of(a->tid);

	return kview_equal(&now, &a->base);
}

static void say_nice(struct actor *a, char *buf, size_t len)
{
	snprintf(buf, len, "nice %d", nice_of(a->tid));
}

static const struct cv_lending nice_lending = { nice_waiter, nice_worker, runs_at_nice_0,
                                                at_its_base, say_nice };

/*
 * The second review of issue 31 (S1): a cycle through a mutex and a
 * condvar.  A (19) holds M and waits on C, whose learned waker is B
 * (19); B blocks on M; X (0) blocks on M with a deadline and times out.
 * Nobody at nice 0 waits any more: A and B are back at 19 (C's lend to
 * B came back to A through M's entry, which folds E(B), and kept itself).
 */
START_TEST(a_cycle_through_a_mutex_and_a_condvar_keeps_no_lend)
{
	struct cv c = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor a, b, x, y;

	cycle_cast(&a, &b, &x, &y);
	teach(&y, &b, &c);
	actor_do(&a, ACT_LOCK, &m, 0);
	wait_on(&a, &c, 1);
	actor_block_on(&b, ACT_LOCK, &m);
	x.timeout_ns = 1000L * 1000 * 1000;
	actor_block_on(&x, ACT_TIMEDLOCK, &m);
	ck_assert_msg(eventually(nice_of(a.tid) == 0 && nice_of(b.tid) == 0, bound_ms(2000)),
	              "while X waits: A at %d, B at %d", nice_of(a.tid), nice_of(b.tid));
	ck_assert_int_eq(actor_wait(&x), ETIMEDOUT);
	ck_assert_msg(eventually(nice_of(a.tid) == 19 && nice_of(b.tid) == 19, bound_ms(2000)),
	              "X timed out and left: A at nice %d, B at nice %d, not 19", nice_of(a.tid),
	              nice_of(b.tid));
	ck_assert_int_eq(proxylock_cond_signal(&c.c), 0);
	ck_assert_int_eq(actor_wait(&a), 0);
	actor_do(&a, ACT_UNLOCK, &m, 0);
	ck_assert_int_eq(actor_wait(&b), 0);
	actor_do(&b, ACT_UNLOCK, &m, 0);
	actor_quit(&a);
	actor_quit(&b);
	actor_quit(&x);
	actor_quit(&y);
}
END_TEST

/*
 * The second review of issue 31 (S2): what a waiter passes on to its
 * wakers changes while its E does not.  A (19) holds M with Y (0)
 * waiting on it with a deadline; A waits on C (waker B); X (0) waits on
 * D, whose waker is A, so E(A) is 0 twice over.  Y times out: E(A) stays
 * 0 (X's lend), but A passes on to B only what its locks lend it, now
 * nothing: B is back at 19.
 */
START_TEST(a_lock_lend_gone_under_an_unchanged_E_is_withdrawn_from_the_wakers)
{
	struct cv c = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct cv d = c;
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor a, b, x, y, t;

	require_nice_lending();
	actor_start(&a, 19, -1);
	actor_start(&b, 19, -1);
	actor_start(&x, 0, -1);
	actor_start(&y, 0, -1);
	actor_start(&t, 19, -1);
	teach(&t, &b, &c);
	teach(&t, &a, &d);
	actor_do(&a, ACT_LOCK, &m, 0);
	y.timeout_ns = 1000L * 1000 * 1000;
	actor_block_on(&y, ACT_TIMEDLOCK, &m);
	wait_on(&a, &c, 1);
	wait_on(&x, &d, 1);
	ck_assert_msg(eventually(nice_of(a.tid) == 0 && nice_of(b.tid) == 0, bound_ms(2000)),
	              "while Y waits: A at %d, B at %d", nice_of(a.tid), nice_of(b.tid));
	ck_assert_int_eq(actor_wait(&y), ETIMEDOUT);
	ck_assert_msg(eventually(nice_of(b.tid) == 19, bound_ms(2000)),
	              "Y timed out and left: B at nice %d, not 19 (A at %d, lent by X)",
	              nice_of(b.tid), nice_of(a.tid));
	ck_assert_int_eq(proxylock_cond_signal(&d.c), 0);
	ck_assert_int_eq(actor_wait(&x), 0);
	ck_assert_int_eq(proxylock_cond_signal(&c.c), 0);
	ck_assert_int_eq(actor_wait(&a), 0);
	actor_do(&a, ACT_UNLOCK, &m, 0);
	actor_quit(&a);
	actor_quit(&b);
	actor_quit(&x);
	actor_quit(&y);
	actor_quit(&t);
}
END_TEST

/*
 * The second review of issue 31 (C1): a waiter whose context was never
 * read lends no context it does not have.  W1 and W2 (19), whose records
 * are new, wait on a condvar whose mutex lends nothing, before any waker
 * is learned (so nothing made them read their context); S (19) signals
 * once: learned, it is lent what W2, still waiting, has: 19, not a new
 * record's zeroes (nice 0).
 */
START_TEST(a_condvar_waiter_whose_context_was_never_read_lends_only_what_it_has)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	proxylock_mutexattr_t at;
	struct actor w1, w2, s;

	require_nice_lending();
	ck_assert_int_eq(proxylock_mutexattr_init(&at), 0);
	ck_assert_int_eq(proxylock_mutexattr_setdonate(&at, 0), 0);
	ck_assert_int_eq(proxylock_mutex_init(&v.m, &at), 0);
	actor_start(&w1, 19, -1);
	actor_start(&w2, 19, -1);
	actor_start(&s, 19, -1);
	wait_on(&w1, &v, 1);
	wait_on(&w2, &v, 2);
	actor_call(&s, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&s), 0);
	ck_assert_msg(s.after.nice == 19 && nice_of(s.tid) == 19,
	              "the signaller is at nice %d (%d right after its signal) while only "
	              "nice-19 threads wait", nice_of(s.tid), s.after.nice);
	ck_assert_int_eq(proxylock_cond_broadcast(&v.c), 0);
	ck_assert_int_eq(actor_wait(&w1), 0);
	ck_assert_int_eq(actor_wait(&w2), 0);
	actor_quit(&w1);
	actor_quit(&w2);
	actor_quit(&s);
}
END_TEST

START_TEST(a_waiter_lends_to_its_signaller_until_the_signal_that_ends_its_wait)
{
	cv_waiter_lends_until_the_signal(&nice_lending);
}
END_TEST

START_TEST(two_waiters_lend_to_the_broadcaster_and_its_broadcast_restores_it)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w1, w2, s;

	require_nice_lending();
	actor_start(&w1, 0, -1);
	actor_start(&w2, 5, -1);
	actor_start(&s, 19, -1);
	teach(&w1, &s, &v);
	wait_on(&w1, &v, 1);
	wait_on(&w2, &v, 2);
	ck_assert_msg(RAISED(s.tid), "broadcaster at nice %d", nice_of(s.tid));
	wake_restores(&s, cv_broadcast, &v);
	ck_assert_int_eq(actor_wait(&w1), 0);
	ck_assert_int_eq(actor_wait(&w2), 0);
	actor_quit(&w1);
	actor_quit(&w2);
	actor_quit(&s);
}
END_TEST

START_TEST(a_waiter_that_times_out_withdraws_its_lend)
{
	cv_waiter_times_out_and_withdraws(&nice_lending);
}
END_TEST

static void unlock_cleanup(void *m)
{
	proxylock_mutex_unlock(m);
}

static void *cancelled_waiter(void *p)
{
	struct cv *v = p;

	proxylock_mutex_lock(&v->m);
	pthread_cleanup_push(unlock_cleanup, &v->m);
	for (;;)
		proxylock_cond_wait(&v->c, &v->m);
	pthread_cleanup_pop(1);
	return NULL;
}

START_TEST(a_cancelled_waiter_withdraws_its_lend)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, s;
	pthread_t th;

	scene_start(&w, &s, &v);
	ck_assert_int_eq(pthread_create(&th, NULL, cancelled_waiter, &v), 0);
	ck_assert(eventually(__atomic_load_n(&v.c.__waiters, __ATOMIC_ACQUIRE) == 1, bound_ms(2000)));
	ck_assert_msg(RAISED(s.tid), "signaller at nice %d", nice_of(s.tid));
	pthread_cancel(th);
	pthread_join(th, NULL);
	ck_assert_msg(nice_of(s.tid) == 19, "signaller still at nice %d after the cancellation",
	              nice_of(s.tid));
	ck_assert_int_eq(v.c.__waiters, 0);
	actor_quit(&w);
	actor_quit(&s);
}
END_TEST

/* A condvar on the heap, its mutex elsewhere: the waiters still unlock
 * the mutex after the condvar is freed. */
struct heap_cv {
	proxylock_cond_t *c;
	proxylock_mutex_t m;
};

static int heap_wait(struct actor *a)
{
	struct heap_cv *v = a->arg;
	int rc;

	proxylock_mutex_lock(&v->m);
	rc = proxylock_cond_wait(v->c, &v->m);
	proxylock_mutex_unlock(&v->m);
	return rc;
}

static int heap_signal(struct actor *a)
{
	return proxylock_cond_signal(((struct heap_cv *)a->arg)->c);
}

/* The broadcaster destroys and frees the condvar as soon as its
 * broadcast returns, as POSIX allows: nothing is lent through it any
 * more, and nothing touches it (ASan builds watch the memory). */
static int broadcast_destroy_free(struct actor *a)
{
	struct heap_cv *v = a->arg;
	int rc = proxylock_cond_broadcast(v->c);

	ck_assert_int_eq(proxylock_cond_destroy(v->c), 0);
	free(v->c);
	return rc;
}

static void heap_wait_on(struct actor *w, struct heap_cv *v)
{
	actor_call(w, heap_wait, v);
	ck_assert(eventually(__atomic_load_n(&v->c->__waiters, __ATOMIC_ACQUIRE) == 1 &&
	                     thread_sleeping(w->tid), bound_ms(2000)));
}

START_TEST(a_condvar_destroyed_and_freed_after_a_broadcast_leaves_no_lend)
{
	struct heap_cv v = { calloc(1, sizeof(proxylock_cond_t)), PROXYLOCK_MUTEX_INITIALIZER };
	struct actor w, s;

	require_nice_lending();
	ck_assert_int_eq(proxylock_cond_init(v.c, CLOCK_REALTIME), 0);
	actor_start(&w, 0, -1);
	actor_start(&s, 19, -1);
	heap_wait_on(&w, &v);  /* teach: s wakes the condvar's waiter once */
	actor_call(&s, heap_signal, &v);
	ck_assert_int_eq(actor_wait(&s), 0);
	ck_assert_int_eq(actor_wait(&w), 0);
	heap_wait_on(&w, &v);
	ck_assert_msg(RAISED(s.tid), "broadcaster at nice %d", nice_of(s.tid));
	actor_call(&s, broadcast_destroy_free, &v);
	ck_assert_int_eq(actor_wait(&s), 0);
	ck_assert_msg(kview_equal(&s.after, &s.base), "broadcaster at nice %d after its broadcast",
	              s.after.nice);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_quit(&w);
	actor_quit(&s);
}
END_TEST

/* A waker that exits while the waiter sleeps lends to nobody alive; the
 * thread that wakes the waiter instead is learned and lent to. */
START_TEST(a_signaller_that_exits_gives_way_to_the_next_signaller)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, gone, s;

	require_nice_lending();
	actor_start(&w, 0, -1);
	actor_start(&gone, 19, -1);
	actor_start(&s, 19, -1);
	teach(&w, &gone, &v);
	wait_on(&w, &v, 1);
	actor_quit(&gone);
	actor_call(&s, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&s), 0);
	ck_assert_int_eq(actor_wait(&w), 0);
	wait_on(&w, &v, 1);
	ck_assert_msg(RAISED(s.tid), "the new signaller is at nice %d", nice_of(s.tid));
	wake_restores(&s, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_quit(&w);
	actor_quit(&s);
}
END_TEST

/* The signaller waits on a mutex: the lend goes on to its owner. */
START_TEST(a_signaller_blocked_on_a_mutex_passes_the_lend_to_its_owner)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	proxylock_mutex_t m2 = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor w, s, owner;

	scene_start(&w, &s, &v);
	actor_start(&owner, 19, -1);
	actor_do(&owner, ACT_LOCK, &m2, 0);
	actor_block_on(&s, ACT_LOCK, &m2);
	wait_on(&w, &v, 1);
	ck_assert_msg(RAISED(owner.tid), "the owner of the mutex the signaller waits on is at "
	              "nice %d", nice_of(owner.tid));
	actor_do(&owner, ACT_UNLOCK, &m2, 0);
	ck_assert_int_eq(actor_wait(&s), 0);
	ck_assert(kview_equal(&owner.after, &owner.base));
	actor_do(&s, ACT_UNLOCK, &m2, 0);
	wake_restores(&s, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_quit(&w);
	actor_quit(&s);
	actor_quit(&owner);
}
END_TEST

/* A waker asleep on the same condvar is no worker: lent nothing. */
START_TEST(a_signaller_waiting_on_the_same_condvar_is_lent_nothing)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, s, x;

	scene_start(&w, &s, &v);
	actor_start(&x, 19, -1);
	wait_on(&s, &v, 1);
	wait_on(&w, &v, 2);
	usleep(50 * 1000);
	ck_assert_msg(nice_of(s.tid) == 19, "a waker waiting beside the waiter is at nice %d",
	              nice_of(s.tid));
	actor_call(&x, cv_broadcast, &v);
	ck_assert_int_eq(actor_wait(&x), 0);
	ck_assert_int_eq(actor_wait(&s), 0);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_quit(&w);
	actor_quit(&s);
	actor_quit(&x);
}
END_TEST

/* Lent to, the signaller forks: the child runs at the signaller's base;
 * the parent stays lent to until the signal. */
static int fork_child_nice(struct actor *a)
{
	int status;
	pid_t child;

	(void)a;
	if ((child = fork()) == 0)
		_exit(kview_of(0).nice == 19 ? 0 : 1);
	if (waitpid(child, &status, 0) != child)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(a_lent_signaller_that_forks_has_a_child_at_its_base)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, s;

	scene_start(&w, &s, &v);
	wait_on(&w, &v, 1);
	ck_assert_msg(RAISED(s.tid), "signaller at nice %d", nice_of(s.tid));
	actor_call(&s, fork_child_nice, NULL);
	ck_assert_msg(actor_wait(&s) == 0, "the fork child of a lent signaller is not at nice 19");
	ck_assert_int_eq(nice_of(s.tid), 0);
	wake_restores(&s, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_quit(&w);
	actor_quit(&s);
}
END_TEST

/* Sched calls (sched_setattr and sched_setaffinity) made so far. */
static uint64_t sched_calls(void)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return st.setattr_calls + st.setaff_calls;
}

START_TEST(waits_between_equal_threads_make_no_scheduler_call)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, s;
	uint64_t calls;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	actor_start(&w, 0, 0);
	actor_start(&s, 0, 1);
	calls = sched_calls();
	for (int round = 0; round < 20; round++)
		teach(&w, &s, &v);
	ck_assert_msg(sched_calls() == calls, "%lu scheduler calls for 20 condvar waits between "
	              "equal threads", (unsigned long)(sched_calls() - calls));
	actor_quit(&w);
	actor_quit(&s);
}
END_TEST

static Suite *wakers_suite(void)
{
	Suite *s = suite_create("wakers");
	TCase *tc = tcase_create("condvar");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_waiter_lends_to_its_signaller_until_the_signal_that_ends_its_wait);
	tcase_add_test(tc, a_cycle_of_wakers_keeps_no_lend_after_its_source_stops_waiting);
	tcase_add_test(tc, a_wait_that_releases_a_contended_mutex_lends_its_wakers_only_what_still_waits);
	tcase_add_test(tc, a_cycle_through_a_mutex_and_a_condvar_keeps_no_lend);
	tcase_add_test(tc, a_lock_lend_gone_under_an_unchanged_E_is_withdrawn_from_the_wakers);
	tcase_add_test(tc, a_condvar_waiter_whose_context_was_never_read_lends_only_what_it_has);
	tcase_add_test(tc, two_waiters_lend_to_the_broadcaster_and_its_broadcast_restores_it);
	tcase_add_test(tc, a_waiter_that_times_out_withdraws_its_lend);
	tcase_add_test(tc, a_cancelled_waiter_withdraws_its_lend);
	tcase_add_test(tc, a_condvar_destroyed_and_freed_after_a_broadcast_leaves_no_lend);
	tcase_add_test(tc, a_signaller_that_exits_gives_way_to_the_next_signaller);
	tcase_add_test(tc, a_signaller_blocked_on_a_mutex_passes_the_lend_to_its_owner);
	tcase_add_test(tc, a_signaller_waiting_on_the_same_condvar_is_lent_nothing);
	tcase_add_test(tc, a_lent_signaller_that_forks_has_a_child_at_its_base);
	tcase_add_test(tc, waits_between_equal_threads_make_no_scheduler_call);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(wakers_suite)

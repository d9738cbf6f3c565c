/* SPDX-License-Identifier: MIT */
/*
 * test_rwlock.c - proxy-aware rwlocks: POSIX behaviour (readers share,
 * writers exclude, trylock EBUSY, timeouts, EINVAL, EDEADLK, EPERM,
 * destroy while held), glibc's preference kinds, and donation in both
 * directions, checked against the kernel's view (sched_getattr,
 * sched_getaffinity), never the library's bookkeeping.  Donation tests
 * need 2 CPUs and the privilege to lower nice (root).
 */
#include <limits.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "rwscenario.h"

/* Is thread @tid running as a nice-0 thread on CPU 0 only (lent to)? */
static bool lent_to(pid_t tid)
{
	struct kview v = kview_of(tid);

	return v.nice == 0 && affinity_is(tid, 0, -1);
}

/* Is thread @a exactly at its base, in the kernel's view? */
static bool at_base(struct actor *a)
{
	struct kview v = kview_of(a->tid);

	return kview_equal(&v, &a->base);
}

static void *trywr(void *arg)
{
	return (void *)(intptr_t)proxylock_rwlock_trywrlock(arg);
}

static int trywr_elsewhere(proxylock_rwlock_t *rw)
{
	pthread_t t;
	void *rc;

	ck_assert_int_eq(pthread_create(&t, NULL, trywr, rw), 0);
	pthread_join(t, &rc);
	return (int)(intptr_t)rc;
}

/* --- POSIX behaviour ------------------------------------------------- */

/* The writer @w, waiting on @rw, enters once the readers have left,
 * and its unlock leaves @rw free. */
static void writer_enters_and_leaves(struct actor *w, proxylock_rwlock_t *rw)
{
	ck_assert_int_eq(actor_wait(w), 0);
	actor_do(w, ACT_RWUNLOCK, rw, 0);
	ck_assert_uint_eq(rw->__word, 0);
}

START_TEST(readers_share_and_a_writer_excludes_everyone)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor a, b;

	actor_start(&a, 0, -1);
	actor_start(&b, 0, -1);
	actor_do(&a, ACT_RDLOCK, &rw, 0);
	actor_do(&b, ACT_RDLOCK, &rw, 0);               /* readers share */
	ck_assert_int_eq(proxylock_rwlock_trywrlock(&rw), EBUSY);
	actor_do(&a, ACT_RWUNLOCK, &rw, 0);
	ck_assert_int_eq(proxylock_rwlock_trywrlock(&rw), EBUSY);  /* b still reads */
	actor_do(&b, ACT_RWUNLOCK, &rw, 0);
	ck_assert_int_eq(proxylock_rwlock_trywrlock(&rw), 0);
	actor_do(&a, ACT_TRYRDLOCK, &rw, EBUSY);        /* the writer excludes readers */
	ck_assert_int_eq(trywr_elsewhere(&rw), EBUSY);  /* and writers */
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw.__word, 0);
	actor_quit(&a);
	actor_quit(&b);
}
END_TEST

START_TEST(a_blocked_writer_gets_the_lock_when_the_last_reader_leaves)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r1, r2, w;

	actor_start(&r1, 0, -1);
	actor_start(&r2, 0, -1);
	actor_start(&w, 0, -1);
	actor_do(&r1, ACT_RDLOCK, &rw, 0);
	actor_do(&r2, ACT_RDLOCK, &rw, 0);
	actor_block_on(&w, ACT_WRLOCK, &rw);
	actor_do(&r1, ACT_RWUNLOCK, &rw, 0);
	usleep(20000);
	ck_assert(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));  /* r2 still reads */
	actor_do(&r2, ACT_RWUNLOCK, &rw, 0);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&r1, ACT_TRYRDLOCK, &rw, EBUSY);
	actor_do(&w, ACT_RWUNLOCK, &rw, 0);
	ck_assert_uint_eq(rw.__word, 0);
	actor_quit(&r1);
	actor_quit(&r2);
	actor_quit(&w);
}
END_TEST

START_TEST(blocked_readers_all_enter_together_when_the_writer_leaves)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r[3];

	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), 0);
	for (int i = 0; i < 3; i++) {
		actor_start(&r[i], 0, -1);
		actor_block_on(&r[i], ACT_RDLOCK, &rw);
	}
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(actor_wait(&r[i]), 0);
	ck_assert_uint_eq(rw.__word, 3);  /* three read holds, nobody queued */
	for (int i = 0; i < 3; i++) {
		actor_do(&r[i], ACT_RWUNLOCK, &rw, 0);
		actor_quit(&r[i]);
	}
	ck_assert_uint_eq(rw.__word, 0);
}
END_TEST

START_TEST(timed_locks_time_out_and_refuse_bad_deadlines_and_clocks)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000L }, past = { 0, 0 };
	struct actor a;
	uint64_t t0;

	actor_start(&a, 0, -1);
	actor_do(&a, ACT_RDLOCK, &rw, 0);
	/* Could be taken at once: the deadline is not looked at. */
	ck_assert_int_eq(proxylock_rwlock_timedrdlock(&rw, &bad), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	/* Would block: a bad deadline is EINVAL, a past one ETIMEDOUT. */
	ck_assert_int_eq(proxylock_rwlock_timedwrlock(&rw, &bad), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_timedwrlock(&rw, &past), ETIMEDOUT);
	ck_assert_int_eq(proxylock_rwlock_clockwrlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_clockrdlock(&rw, CLOCK_THREAD_CPUTIME_ID, &past), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, NULL), EINVAL);
	t0 = mono_ns();
	struct timespec dl = abstime_in(CLOCK_MONOTONIC, 50000000);

	ck_assert_int_eq(proxylock_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
	ck_assert_uint_ge(mono_ns() - t0, 50000000);
	actor_do(&a, ACT_RWUNLOCK, &rw, 0);
	ck_assert_uint_eq(rw.__word, 0);  /* the timed-out writer left no bit behind */
	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), 0);
	dl = abstime_in(CLOCK_REALTIME, 30000000);
	a.timeout_ns = 30000000;
	actor_do(&a, ACT_TIMEDRDLOCK, &rw, ETIMEDOUT);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw.__word, 0);
	actor_quit(&a);
}
END_TEST

/* A timed write lock on @clock with the farthest deadline there is. */
struct far_wr {
	proxylock_rwlock_t *rw;
	clockid_t clock;
};

static void *wrlock_far(void *p)
{
	struct far_wr *a = p;
	struct timespec far = { .tv_sec = LONG_MAX, .tv_nsec = 0 };
	int err = proxylock_rwlock_clockwrlock(a->rw, a->clock, &far);

	if (err == 0)
		ck_assert_int_eq(proxylock_rwlock_unlock(a->rw), 0);
	return (void *)(intptr_t)err;
}

START_TEST(a_writer_queued_with_a_far_deadline_waits_for_the_lock)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };

	for (int i = 0; i < 2; i++) {
		proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
		struct far_wr a = { &rw, clocks[i] };
		pthread_t t;
		void *rc;

		ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
		ck_assert_int_eq(pthread_create(&t, NULL, wrlock_far, &a), 0);
		/* Queued (WAITERS, bit 31), then a few of its rescan slices. */
		ck_assert(eventually(__atomic_load_n(&rw.__word, __ATOMIC_RELAXED) & 0x80000000u,
		                     bound_ms(2000)));
		usleep(20000);
		ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
		pthread_join(t, &rc);
		ck_assert_msg((int)(intptr_t)rc == 0, "clock %d: the writer gave %d",
		              (int)clocks[i], (int)(intptr_t)rc);
	}
}
END_TEST

START_TEST(destroy_while_held_is_ebusy_and_a_destroyed_rwlock_is_einval)
{
	proxylock_rwlock_t rw;
	struct timespec dl = abstime_in(CLOCK_REALTIME, 1000000);

	ck_assert_int_eq(proxylock_rwlock_init(&rw, NULL), 0);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_destroy(&rw), EBUSY);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_destroy(&rw), EBUSY);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_destroy(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_destroy(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_tryrdlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_timedrdlock(&rw, &dl), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_trywrlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_timedwrlock(&rw, &dl), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_init(&rw, NULL), 0);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	/* NULL and garbage storage are refused without a write. */
	ck_assert_int_eq(proxylock_rwlock_rdlock(NULL), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_unlock(NULL), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_init(NULL, NULL), EINVAL);
	memset(&rw, 0xa5, sizeof(rw));
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_tryrdlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_destroy(&rw), EINVAL);
	ck_assert_uint_eq(rw.__word, 0xa5a5a5a5u);
}
END_TEST

START_TEST(relocking_for_writing_or_reading_while_writing_is_edeadlk_trylock_ebusy)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;

	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), EDEADLK);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), EDEADLK);
	ck_assert_int_eq(proxylock_rwlock_trywrlock(&rw), EBUSY);
	ck_assert_int_eq(proxylock_rwlock_tryrdlock(&rw), EBUSY);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw.__word, 0);
}
END_TEST

START_TEST(unlock_by_a_thread_that_holds_nothing_is_eperm_and_changes_nothing)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor a;
	uint32_t held;

	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), EPERM);  /* free */
	actor_start(&a, 0, -1);
	actor_do(&a, ACT_RDLOCK, &rw, 0);
	held = rw.__word;
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), EPERM);  /* another's (solo) read hold */
	ck_assert_uint_eq(rw.__word, held);
	/* The same with the hold counted: a second hold of ours joins it. */
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	held = rw.__word;
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), EPERM);  /* another's (converted) read hold */
	ck_assert_uint_eq(rw.__word, held);
	actor_do(&a, ACT_RWUNLOCK, &rw, 0);
	actor_do(&a, ACT_RWUNLOCK, &rw, EPERM);                      /* once too often */
	actor_do(&a, ACT_WRLOCK, &rw, 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), EPERM);  /* another's write hold */
	ck_assert_uint_ne(rw.__word, 0);
	actor_do(&a, ACT_RWUNLOCK, &rw, 0);
	ck_assert_uint_eq(rw.__word, 0);
	actor_quit(&a);
}
END_TEST

START_TEST(read_holds_overflowing_the_count_are_eagain)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;

	/* 2^29 - 1 read holds from elsewhere, set by hand: the count is the
	 * word's low 29 bits (docs/design.md). */
	rw.__word = 0x1fffffff;
	ck_assert_int_eq(proxylock_rwlock_tryrdlock(&rw), EAGAIN);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), EAGAIN);
	ck_assert_uint_eq(rw.__word, 0x1fffffff);
	rw.__word = 0x1ffffffe;
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_uint_eq(rw.__word, 0x1fffffff);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_uint_eq(rw.__word, 0x1ffffffe);
}
END_TEST

START_TEST(attributes_validate_and_init_applies_them)
{
	proxylock_rwlockattr_t at;
	proxylock_rwlock_t rw;
	int kind;
	unsigned kinds;

	ck_assert_int_eq(proxylock_rwlockattr_init(&at), 0);
	ck_assert_int_eq(proxylock_rwlockattr_getkind(&at, &kind), 0);
	ck_assert_int_eq(kind, PROXYLOCK_RWLOCK_PREFER_READER);
	ck_assert_int_eq(proxylock_rwlockattr_setkind(&at, 3), EINVAL);
	ck_assert_int_eq(proxylock_rwlockattr_setkind(&at, -1), EINVAL);
	ck_assert_int_eq(proxylock_rwlockattr_setkind(&at, PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE), 0);
	ck_assert_int_eq(proxylock_rwlockattr_setdonate(&at, 0x10), EINVAL);
	ck_assert_int_eq(proxylock_rwlockattr_setdonate(&at, PROXYLOCK_DONATE_AFFINITY), 0);
	ck_assert_int_eq(proxylock_rwlockattr_getdonate(&at, &kinds), 0);
	ck_assert_uint_eq(kinds, PROXYLOCK_DONATE_AFFINITY);
	ck_assert_int_eq(proxylock_rwlock_init(&rw, &at), 0);
	ck_assert_uint_eq(rw.__flags & 3, PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE);
	ck_assert_int_eq(proxylock_rwlockattr_destroy(&at), 0);
	ck_assert_int_eq(proxylock_rwlockattr_destroy(&at), EINVAL);
	ck_assert_int_eq(proxylock_rwlock_init(&rw, &at), EINVAL);
	/* glibc's layout: 56 bytes, the kind where glibc's initializers put it. */
	ck_assert_uint_eq(sizeof(proxylock_rwlock_t), sizeof(pthread_rwlock_t));
	pthread_rwlock_t g = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

	memcpy(&rw, &g, sizeof(rw));
	ck_assert_uint_eq(rw.__flags, PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
}
END_TEST

/* --- preference kinds ------------------------------------------------ */

/* A reader holds, a writer waits: may a new reader enter, and may the
 * holder read-lock again? */
static void preference_scenario(int kind, int want_new_reader)
{
	proxylock_rwlockattr_t at;
	proxylock_rwlock_t rw;
	struct actor r, w, n;

	proxylock_rwlockattr_init(&at);
	proxylock_rwlockattr_setkind(&at, kind);
	proxylock_rwlock_init(&rw, &at);
	actor_start(&r, 0, -1);
	actor_start(&w, 0, -1);
	actor_start(&n, 0, -1);
	actor_do(&r, ACT_RDLOCK, &rw, 0);
	actor_block_on(&w, ACT_WRLOCK, &rw);
	actor_do(&n, ACT_TRYRDLOCK, &rw, want_new_reader);
	if (want_new_reader == 0) {
		actor_do(&r, ACT_RDLOCK, &rw, 0);   /* recursive: never behind the writer */
		actor_do(&r, ACT_RWUNLOCK, &rw, 0);
		actor_do(&n, ACT_RWUNLOCK, &rw, 0);
	}
	actor_do(&r, ACT_RWUNLOCK, &rw, 0);
	writer_enters_and_leaves(&w, &rw);
	actor_quit(&r);
	actor_quit(&w);
	actor_quit(&n);
}

START_TEST(prefer_reader_lets_new_and_recursive_readers_past_a_waiting_writer)
{
	preference_scenario(PROXYLOCK_RWLOCK_PREFER_READER, 0);
}
END_TEST

START_TEST(prefer_writer_is_prefer_reader_as_in_glibc)
{
	preference_scenario(PROXYLOCK_RWLOCK_PREFER_WRITER, 0);
}
END_TEST

START_TEST(prefer_writer_nonrecursive_holds_new_readers_behind_a_waiting_writer)
{
	preference_scenario(PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE, EBUSY);
}
END_TEST

START_TEST(a_writer_timing_out_lets_the_readers_queued_behind_it_in)
{
	proxylock_rwlockattr_t at;
	proxylock_rwlock_t rw;
	struct actor r, w, n;

	proxylock_rwlockattr_init(&at);
	proxylock_rwlockattr_setkind(&at, PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE);
	proxylock_rwlock_init(&rw, &at);
	actor_start(&r, 0, -1);
	actor_start(&w, 0, -1);
	actor_start(&n, 0, -1);
	actor_do(&r, ACT_RDLOCK, &rw, 0);
	w.timeout_ns = 100000000;
	actor_block_on(&w, ACT_TIMEDWRLOCK, &rw);
	actor_block_on(&n, ACT_RDLOCK, &rw);           /* behind the writer */
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);
	ck_assert_int_eq(actor_wait(&n), 0);   /* granted when the writer left */
	actor_do(&n, ACT_RWUNLOCK, &rw, 0);
	actor_do(&r, ACT_RWUNLOCK, &rw, 0);
	ck_assert_uint_eq(rw.__word, 0);
	actor_quit(&r);
	actor_quit(&w);
	actor_quit(&n);
}
END_TEST

/* --- donation -------------------------------------------------------- */

static void start_low(struct actor *a, int i)
{
	(void)i;
	actor_start(a, 19, 1);
}

static void start_high(struct actor *a, int i)
{
	(void)i;
	actor_start(a, 0, 0);
}

static bool actor_lent_to(struct actor *a, int n)
{
	(void)n;
	return lent_to(a->tid);
}

/* rwscenario.h's low threads at nice 19 on CPU 1, high ones at nice 0 on CPU 0. */
static const struct rw_lending nice_and_cpus = { start_low, start_high, actor_lent_to, at_base };

static void writer_lends_to_readers(int n)
{
	require_nice_lending();
	rw_writer_lends_to_readers(&nice_and_cpus, n);
}

START_TEST(a_waiting_writer_lends_to_its_one_reader_restored_at_unlock)
{
	writer_lends_to_readers(1);
}
END_TEST

START_TEST(a_waiting_writer_lends_to_both_readers_each_restored_at_its_own_unlock)
{
	writer_lends_to_readers(2);
}
END_TEST

START_TEST(a_waiting_writer_lends_to_all_8_readers_each_restored_at_its_own_unlock)
{
	writer_lends_to_readers(8);
}
END_TEST

/* Two readers at nice 19 on CPU 1 and a writer at nice 0 on CPU 0. */
static void start_readers_and_writer(struct actor *r1, struct actor *r2, struct actor *w)
{
	require_nice_lending();
	actor_start(r1, 19, 1);
	actor_start(r2, 19, 1);
	actor_start(w, 0, 0);
}

START_TEST(a_reader_joining_past_a_waiting_writer_is_lent_to_as_well)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r1, r2, w;

	start_readers_and_writer(&r1, &r2, &w);
	actor_do(&r1, ACT_RDLOCK, &rw, 0);
	actor_block_on(&w, ACT_WRLOCK, &rw);
	actor_do(&r2, ACT_RDLOCK, &rw, 0);          /* prefer reader: joins */
	ck_assert_msg(eventually(lent_to(r2.tid), 2000), "late reader not lent to");
	ck_assert(lent_to(r1.tid));
	actor_do(&r2, ACT_RWUNLOCK, &rw, 0);
	ck_assert(kview_equal(&r2.after, &r2.base));
	actor_do(&r1, ACT_RWUNLOCK, &rw, 0);
	ck_assert(kview_equal(&r1.after, &r1.base));
	writer_enters_and_leaves(&w, &rw);
	actor_quit(&r1);
	actor_quit(&r2);
	actor_quit(&w);
}
END_TEST

/* A lone reader holds L solo (the word names it); a second reader's join
 * converts that hold (__solo names its reader, rwlockword.h).  A writer
 * queued after must lend to both, and each is restored at its own
 * unlock, the converted one first (@converted_first) or last. */
static void joined_solo_hold_scenario(bool converted_first)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r1, r2, w;

	start_readers_and_writer(&r1, &r2, &w);
	actor_do(&r1, ACT_RDLOCK, &rw, 0);          /* solo */
	actor_do(&r2, ACT_RDLOCK, &rw, 0);          /* joins: r1's hold converted */
	actor_block_on(&w, ACT_WRLOCK, &rw);
	ck_assert_msg(eventually(lent_to(r1.tid), 2000), "the converted reader not lent to");
	ck_assert_msg(eventually(lent_to(r2.tid), 2000), "the joining reader not lent to");
	struct actor *first = converted_first ? &r1 : &r2, *last = converted_first ? &r2 : &r1;

	actor_do(first, ACT_RWUNLOCK, &rw, 0);
	ck_assert(kview_equal(&first->after, &first->base));
	ck_assert_msg(lent_to(last->tid), "the reader still holding lost its lend");
	actor_do(last, ACT_RWUNLOCK, &rw, 0);
	ck_assert(kview_equal(&last->after, &last->base));
	writer_enters_and_leaves(&w, &rw);
	actor_quit(&r1);
	actor_quit(&r2);
	actor_quit(&w);
}

START_TEST(a_joined_lone_reader_is_lent_to_and_restored_at_its_unlock_before_the_other)
{
	joined_solo_hold_scenario(true);
}
END_TEST

START_TEST(a_joined_lone_reader_is_lent_to_and_restored_at_its_unlock_after_the_other)
{
	joined_solo_hold_scenario(false);
}
END_TEST

/* A lone reader that read-locks L again (its second hold joins its own
 * solo one) keeps the writer's lend until its last unlock. */
START_TEST(a_lone_reader_relocking_keeps_the_lend_until_its_last_unlock)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r, w;

	require_nice_lending();
	actor_start(&r, 19, 1);
	actor_start(&w, 0, 0);
	actor_do(&r, ACT_RDLOCK, &rw, 0);           /* solo */
	actor_block_on(&w, ACT_WRLOCK, &rw);
	ck_assert_msg(eventually(lent_to(r.tid), 2000), "the lone reader not lent to");
	actor_do(&r, ACT_RDLOCK, &rw, 0);           /* prefer reader: joins its own hold */
	actor_do(&r, ACT_RWUNLOCK, &rw, 0);
	ck_assert_msg(lent_to(r.tid), "the reader lost its lend while it still holds");
	actor_do(&r, ACT_RWUNLOCK, &rw, 0);
	ck_assert(kview_equal(&r.after, &r.base));
	writer_enters_and_leaves(&w, &rw);
	actor_quit(&r);
	actor_quit(&w);
}
END_TEST

START_TEST(readers_waiting_on_a_writer_lend_to_it_until_its_unlock)
{
	require_nice_lending();
	rw_readers_lend_to_writer(&nice_and_cpus);
}
END_TEST

START_TEST(a_writer_that_times_out_withdraws_from_every_reader)
{
	require_nice_lending();
	rw_writer_times_out_and_withdraws(&nice_and_cpus);
}
END_TEST

START_TEST(a_reader_that_exits_holding_the_lock_leaves_the_others_exact)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	struct actor r1, r2, w, n;

	start_readers_and_writer(&r1, &r2, &w);
	actor_do(&r1, ACT_RDLOCK, &rw, 0);
	actor_do(&r2, ACT_RDLOCK, &rw, 0);
	w.timeout_ns = 400000000;
	actor_block_on(&w, ACT_TIMEDWRLOCK, &rw);
	ck_assert(eventually(lent_to(r1.tid) && lent_to(r2.tid), 2000));
	actor_post(&r1, ACT_EXIT, NULL);       /* exits holding: its hold stays counted */
	pthread_join(r1.th, NULL);
	actor_do(&r2, ACT_RWUNLOCK, &rw, 0);
	ck_assert_msg(kview_equal(&r2.after, &r2.base), "r2 not restored at its unlock");
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);  /* as glibc: the dead hold stays */
	/* A new thread (it may get r1's read set) is not lent to. */
	actor_start(&n, 19, 1);
	actor_do(&n, ACT_RDLOCK, &rw, 0);
	ck_assert(at_base(&n));
	actor_do(&n, ACT_RWUNLOCK, &rw, 0);
	ck_assert(kview_equal(&n.after, &n.base));
	ck_assert_uint_eq(rw.__word & 0x3fffffff, 1);
	actor_quit(&r2);
	actor_quit(&w);
	actor_quit(&n);
}
END_TEST

/* W (nice 0, CPU 0) waits on L1 <- R (nice 19) waits on M <- H waits on L2 <- R2. */
START_TEST(a_chain_rwlock_mutex_rwlock_lends_the_first_writers_context_to_the_last_reader)
{
	require_nice_lending();
	rw_chain_rwlock_mutex_rwlock(&nice_and_cpus);
}
END_TEST

START_TEST(uncontended_read_and_write_paths_make_no_syscall)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER, lone = PROXYLOCK_RWLOCK_INITIALIZER;
	struct proxylock_stats a, b;

	/* Warm up: a second read hold joins the first (a solo one) and
	 * claims this thread's read set; from then on @rw's reads are
	 * counted.  @lone is read one hold at a time: solo holds. */
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
	proxylock_stats_get(&a);
	/* Every slow path that may wait counts itself (contended); the
	 * syscall count is strace's job (docs/results.md gives the command). */
	for (int i = 0; i < 100000; i++) {
		ck_assert_int_eq(proxylock_rwlock_rdlock(&lone), 0);
		ck_assert_int_eq(proxylock_rwlock_unlock(&lone), 0);
		ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
		ck_assert_int_eq(proxylock_rwlock_rdlock(&rw), 0);
		ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
		ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
		ck_assert_int_eq(proxylock_rwlock_wrlock(&rw), 0);
		ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
		ck_assert_int_eq(proxylock_rwlock_wrlock(&lone), 0);
		ck_assert_int_eq(proxylock_rwlock_unlock(&lone), 0);
	}
	ck_assert_uint_eq(lone.__solo, 0);  /* never joined: solo throughout */
	proxylock_stats_get(&b);
	ck_assert_uint_eq(b.contended, a.contended);
	ck_assert_uint_eq(b.sleeps, a.sleeps);
	ck_assert_uint_eq(b.setattr_calls + b.setaff_calls, a.setattr_calls + a.setaff_calls);
}
END_TEST

/* --- a read lock released from a late pthread key destructor -------- */

static pthread_key_t late_key;
static int late_unlock_rc = -1;

static void late_key_destructor(void *rw)
{
	late_unlock_rc = proxylock_rwlock_unlock(rw);
}

static void *read_then_exit_via_late_key(void *rw)
{
	ck_assert_int_eq(proxylock_rwlock_rdlock(rw), 0);  /* the library's key exists now */
	ck_assert_int_eq(pthread_key_create(&late_key, late_key_destructor), 0);
	ck_assert_int_eq(pthread_setspecific(late_key, rw), 0);
	ck_assert_int_eq(proxylock_rwlock_rdlock(rw), 0);  /* recursive: depth 2 */
	ck_assert_int_eq(proxylock_rwlock_unlock(rw), 0);
	return NULL;
}

START_TEST(a_read_lock_released_by_a_later_key_destructor_is_released)
{
	proxylock_rwlock_t rw = PROXYLOCK_RWLOCK_INITIALIZER;
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, read_then_exit_via_late_key, &rw), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	pthread_key_delete(late_key);
	ck_assert_int_eq(late_unlock_rc, 0);
	ck_assert_uint_eq(rw.__word, 0);
	ck_assert_int_eq(proxylock_rwlock_trywrlock(&rw), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);
}
END_TEST

/* --- more queued readers than one grant batch ----------------------- */

struct many_readers {
	proxylock_rwlock_t rw;
	int n, entered, ok, max_count;
};

static void *many_reader_main(void *p)
{
	struct many_readers *m = p;
	struct timespec dl;
	uint64_t end;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t)(time_bound_ns(5000000000ull) / 1000000000ull);  /* memcheck: 20x */
	rc = proxylock_rwlock_clockrdlock(&m->rw, CLOCK_MONOTONIC, &dl);
	if (rc != 0)
		return NULL;
	__atomic_add_fetch(&m->ok, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->entered, 1, __ATOMIC_ACQ_REL);
	/* Hold until every reader is in (or 5 s): the count must reach n. */
	end = mono_ns() + time_bound_ns(5000000000ull);
	while (__atomic_load_n(&m->entered, __ATOMIC_ACQUIRE) < m->n && mono_ns() < end)
		sched_yield();
	int count = (int)(__atomic_load_n(&m->rw.__word, __ATOMIC_RELAXED) & 0x3fffffff);
	int seen = __atomic_load_n(&m->max_count, __ATOMIC_RELAXED);
	while (count > seen && !__atomic_compare_exchange_n(&m->max_count, &seen, count, false,
	                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	proxylock_rwlock_unlock(&m->rw);
	return NULL;
}

/*
 * @n readers queue behind a writer (more than one grant batch, PLK_UNPARK_BATCH);
 * the writer unlocks: every one gets the lock, before its deadline, all
 * holding at once (the word counts them all).
 */
static void readers_past_a_grant_batch_all_enter(int n)
{
	struct many_readers m = { .rw = PROXYLOCK_RWLOCK_INITIALIZER, .n = n };
	pthread_t th[140];
	uint64_t before;

	ck_assert_int_eq(proxylock_rwlock_wrlock(&m.rw), 0);
	before = sleeps_so_far();
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, many_reader_main, &m), 0);
	ck_assert_msg(eventually(sleeps_so_far() - before >= (uint64_t)n, 4000),
	              "the %d readers did not all queue", n);
	ck_assert_int_eq(proxylock_rwlock_unlock(&m.rw), 0);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(m.ok, n);
	ck_assert_int_eq(m.max_count, n);
	ck_assert_uint_eq(m.rw.__word, 0);
}

START_TEST(seventy_readers_queued_behind_a_writer_all_get_the_lock)
{
	readers_past_a_grant_batch_all_enter(70);
}
END_TEST

START_TEST(a_hundred_forty_readers_queued_behind_a_writer_all_get_the_lock)
{
	readers_past_a_grant_batch_all_enter(140);
}
END_TEST

/* --- a lone reader that exits holding the lock (issue 29) ------------- */

static proxylock_rwlock_t dr_lock;
static int dr_tid, dr_reuse_go, dr_reuse_stop;

static void *dr_read_and_exit(void *arg)
{
	(void)arg;
	__atomic_store_n(&dr_tid, gettid_(), __ATOMIC_RELEASE);
	return (void *)(intptr_t)proxylock_rwlock_rdlock(&dr_lock);
}

static void *dr_join_and_leave(void *arg)
{
	(void)arg;
	if (proxylock_rwlock_rdlock(&dr_lock) != 0)
		return (void *)1;
	return (void *)(intptr_t)proxylock_rwlock_unlock(&dr_lock);
}

/* A thread of ours that merely exists, on CPUs {0, 1}. */
static void *dr_idle(void *arg)
{
	(void)arg;
	__atomic_store_n(&dr_reuse_go, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&dr_reuse_stop, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/* A timed write lock of dr_lock, from CPU 0: times out (the dead hold). */
static int dr_timed_wrlock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 30 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return proxylock_rwlock_timedwrlock(&dr_lock, &ts);
}

/* The kernel's CPUs of @tid are {0, 1}; no check asserts (a child). */
static bool dr_cpus_both(pid_t tid)
{
	cpu_set_t got;

	CPU_ZERO(&got);
	return syscall(SYS_sched_getaffinity, tid, sizeof(got), &got) >= 0 && CPU_COUNT(&got) == 2 &&
	       CPU_ISSET(0, &got) && CPU_ISSET(1, &got);
}

static int dr_writer_done;

/* Pinned to CPU 0, retries a timed write lock 10 times (300 ms). */
static void *dr_writer(void *arg)
{
	cpu_set_t zero;
	void *ret = NULL;

	(void)arg;
	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	syscall(SYS_sched_setaffinity, 0, sizeof(zero), &zero);
	for (int i = 0; i < 10 && !ret; i++)
		if (dr_timed_wrlock() != ETIMEDOUT)
			ret = (void *)1;
	__atomic_store_n(&dr_writer_done, 1, __ATOMIC_RELEASE);
	return ret;
}

/*
 * As PID 1 of a new PID namespace (so that ns_last_pid is ours): reader
 * R takes a lone read hold (@converted: joined by another reader, which
 * leaves) and exits; a writer pinned to CPU 0 times out on the lock,
 * then a new thread is given R's TID, and the writer retries, its every
 * wait lending to the lock's readers.  Nothing may reach the new thread:
 * its CPUs stay {0, 1}.  Returns 0, or what failed.
 */
static int dr_child(bool converted)
{
	pthread_t r, t, wr;
	void *ret;
	int lent = 0;
	FILE *f;
	cpu_set_t both;

	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	if (syscall(SYS_sched_setaffinity, 0, sizeof(both), &both) != 0)
		return 2;
	proxylock_rwlock_init(&dr_lock, NULL);
	pthread_create(&r, NULL, dr_read_and_exit, NULL);
	pthread_join(r, &ret);
	if (ret)
		return 3;
	if (converted) {
		pthread_create(&t, NULL, dr_join_and_leave, NULL);
		pthread_join(t, &ret);
		if (ret)
			return 4;
	}
	if (dr_timed_wrlock() != ETIMEDOUT)  /* first contact with the dead hold */
		return 5;
	f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!f || fprintf(f, "%d", dr_tid - 1) < 0 || fclose(f) != 0)
		return 6;
	pthread_create(&t, NULL, dr_idle, NULL);
	while (!__atomic_load_n(&dr_reuse_go, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (!dr_cpus_both(dr_tid) || syscall(SYS_tgkill, getpid(), dr_tid, 0) != 0)
		return 7;  /* the new thread did not get R's TID */
	pthread_create(&wr, NULL, dr_writer, NULL);
	while (!__atomic_load_n(&dr_writer_done, __ATOMIC_ACQUIRE)) {
		lent += !dr_cpus_both(dr_tid);  /* a retry lent the new thread CPU 0 */
		usleep(2000);
	}
	pthread_join(wr, &ret);
	__atomic_store_n(&dr_reuse_stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	if (ret)
		return 8;
	return lent ? 20 + (lent < 99 ? lent : 99) : 0;
}

/* Run @child(@arg) as the first process of a new PID namespace, where
 * ns_last_pid can hand a dead thread's TID to a new one; its exit code
 * (90: unshare refused, needs root; 91: it did not exit). */
static int in_new_pid_namespace(int (*child)(int), int arg)
{
	int status;
	pid_t pid;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pid = fork();
	if (pid == 0) {
		pid_t one;

		if (unshare(CLONE_NEWPID) != 0)
			_exit(90);
		if ((one = fork()) == 0)
			_exit(child(arg));
		_exit(waitpid(one, &status, 0) == one && WIFEXITED(status) ? WEXITSTATUS(status) : 91);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int dr_child_of(int converted)
{
	return dr_child(converted != 0);
}

static void dr_check(bool converted)
{
	int code = in_new_pid_namespace(dr_child_of, converted);

	require_privilege(code != 90, "unshare(CLONE_NEWPID) refused (run as root)");
	ck_assert_msg(code == 0,
	              "child: %d (20 + n: in n samples of about 150 the thread given the dead "
	              "reader's TID had been lent CPU 0; 90: unshare refused, needs root; else a "
	              "setup step)", code);
}

START_TEST(a_lone_reader_that_exited_holding_the_lock_is_not_lent_to_nor_is_its_tids_next_owner)
{
	dr_check(false);
}
END_TEST

START_TEST(a_converted_reader_that_exited_holding_the_lock_is_not_lent_to_nor_is_its_tids_next_owner)
{
	dr_check(true);
}
END_TEST

/*
 * The same reader exits while a writer already waits on its hold: that
 * writer queued when the reader was alive (and lent to it), so its queue
 * keeps naming the reader's TID; later lend updates (the queued writer's
 * rescans, readers queueing or timing out behind it) must ask again.
 */
static int dq_tid, dq_exit, dq_reuse_go, dq_reuse_stop;

static void *dq_read_until_told(void *arg)
{
	(void)arg;
	/* At nice 1, so that the nice-0 writer outranks it and lends it CPU
	 * 0 (lend.c's rule), once its base copy is old enough to be read
	 * again (PLK_BASE_TTL_NS). */
	setpriority(PRIO_PROCESS, 0, 1);
	usleep(2000);
	__atomic_store_n(&dq_tid, gettid_(), __ATOMIC_RELEASE);
	if (proxylock_rwlock_rdlock(&dr_lock) != 0)
		return (void *)1;
	while (!__atomic_load_n(&dq_exit, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;  /* exits holding the lock */
}

static void dq_pin_to_cpu0(void)
{
	cpu_set_t zero;

	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	syscall(SYS_sched_setaffinity, 0, sizeof(zero), &zero);
}

/* Pinned to CPU 0, waits for the write lock for good (the dead hold). */
static void *dq_writer(void *arg)
{
	(void)arg;
	dq_pin_to_cpu0();
	return (void *)(intptr_t)proxylock_rwlock_wrlock(&dr_lock);
}

static void *dq_idle(void *arg)
{
	(void)arg;
	__atomic_store_n(&dq_reuse_go, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&dq_reuse_stop, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/* Pinned to CPU 0 at nice -5 (more than the first writer lends), timed
 * read and write locks of 20 ms each, in turn: a reader queues behind
 * the writer (NONRECURSIVE) or joins past it, a writer queues; each
 * times out or leaves, and every step updates the queue's lend. */
static void *dq_retries(void *arg)
{
	(void)arg;
	dq_pin_to_cpu0();
	setpriority(PRIO_PROCESS, 0, -5);
	for (int i = 0; i < 6; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if ((i % 2 ? proxylock_rwlock_timedwrlock(&dr_lock, &ts) :
		             proxylock_rwlock_timedrdlock(&dr_lock, &ts)) == 0)
			proxylock_rwlock_unlock(&dr_lock);
	}
	return NULL;
}

/* The thread @tid (at nice 0, on CPUs {0, 1}) was lent something. */
static bool dq_lent(pid_t tid)
{
	errno = 0;
	return !dr_cpus_both(tid) || getpriority(PRIO_PROCESS, (id_t)tid) != 0;
}

static int dq_child(int kind)
{
	proxylock_rwlockattr_t attr;
	pthread_t r, t, w, rd;
	int lent = 0, tid;
	cpu_set_t both;
	void *ret;
	FILE *f;

	CPU_ZERO(&both);
	CPU_SET(0, &both);
	CPU_SET(1, &both);
	if (syscall(SYS_sched_setaffinity, 0, sizeof(both), &both) != 0)
		return 2;
	proxylock_rwlockattr_init(&attr);
	proxylock_rwlockattr_setkind(&attr, kind);
	proxylock_rwlock_init(&dr_lock, &attr);
	pthread_create(&r, NULL, dq_read_until_told, NULL);
	while (!(__atomic_load_n(&dr_lock.__word, __ATOMIC_ACQUIRE) & 0x20000000u))
		usleep(1000);  /* R's solo hold */
	tid = __atomic_load_n(&dq_tid, __ATOMIC_ACQUIRE);
	pthread_create(&w, NULL, dq_writer, NULL);
	if (!eventually(!dr_cpus_both(tid), bound_ms(5000)))
		return 3;  /* the queued writer never lent to the live R */
	__atomic_store_n(&dq_exit, 1, __ATOMIC_RELEASE);
	pthread_join(r, &ret);
	if (ret)
		return 4;
	(void)eventually(__atomic_load_n(&dr_lock.__reserved0[0], __ATOMIC_RELAXED) == (uint32_t)tid,
	                 bound_ms(3000));
	f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	if (!f || fprintf(f, "%d", tid - 1) < 0 || fclose(f) != 0)
		return 6;
	pthread_create(&t, NULL, dq_idle, NULL);
	while (!__atomic_load_n(&dq_reuse_go, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (dq_lent(tid) || syscall(SYS_tgkill, getpid(), tid, 0) != 0)
		return 7;  /* the new thread did not get R's TID */
	pthread_create(&rd, NULL, dq_retries, NULL);
	for (int i = 0; i < 100; i++) {
		lent += dq_lent(tid);
		usleep(2000);
	}
	pthread_join(rd, NULL);
	lent += dq_lent(tid);
	__atomic_store_n(&dq_reuse_stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	return lent ? 20 + (lent < 99 ? lent : 99) : 0;  /* the writer still waits: _exit */
}

static void dq_check(int kind)
{
	int code = in_new_pid_namespace(dq_child, kind);

	require_privilege(code != 90, "unshare(CLONE_NEWPID) refused (run as root)");
	ck_assert_msg(code == 0,
	              "child: %d (20 + n: in n samples of about 100 the thread given the dead "
	              "reader's TID had been lent CPU 0 or nice -5; 90: unshare refused, needs root; else a "
	              "setup step)", code);
}

START_TEST(a_reader_that_exits_while_a_nonrecursive_writer_waits_is_not_lent_to_nor_is_its_tids_next_owner)
{
	SKIP_UNDER_TSAN("a thread of its own may be given the TID the test hands on");
	dq_check(PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE);
}
END_TEST

START_TEST(a_reader_that_exits_while_a_prefer_reader_writer_waits_is_not_lent_to_nor_is_its_tids_next_owner)
{
	SKIP_UNDER_TSAN("a thread of its own may be given the TID the test hands on");
	dq_check(PROXYLOCK_RWLOCK_PREFER_READER);
}
END_TEST

/* --- the cost of asking whether a lone reader still exists ----------- */

static proxylock_rwlock_t cost_lock = PROXYLOCK_RWLOCK_INITIALIZER;

/* read(2) calls this thread has made so far (the kernel's syscr). */
static long reads_so_far(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/thread-self/io", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "syscr: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* 2000 timed write locks with a deadline already passed, each of which
 * contends (and times out); returns the read(2) calls they made. */
static void *cost_writer(void *arg)
{
	long before = reads_so_far(), after;
	int timeouts = 0;

	(void)arg;
	for (int i = 0; i < 2000; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		timeouts += proxylock_rwlock_timedwrlock(&cost_lock, &ts) == ETIMEDOUT;
	}
	after = reads_so_far();
	return (void *)(intptr_t)(timeouts == 2000 && before >= 0 ? after - before - 1 : -1);
}

/*
 * The leader's lone read hold: a contended write lock asks whether the
 * named reader still exists, and for the leader (a zombie after
 * pthread_exit, so tgkill cannot tell) that is a read of /proc/self/stat.
 * Its answer is kept 50 ms: 2000 contended calls read it a few times,
 * not once (or twice) each.  Check runs each test in a child process, of
 * which this thread is the leader.
 */
START_TEST(contended_write_locks_against_the_leaders_lone_read_hold_seldom_read_proc)
{
	pthread_t t;
	void *reads;

	ck_assert_int_eq(gettid_(), getpid());
	ck_assert_msg(reads_so_far() >= 0, "no /proc/thread-self/io");
	ck_assert_int_eq(proxylock_rwlock_rdlock(&cost_lock), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, cost_writer, NULL), 0);
	pthread_join(t, &reads);
	ck_assert_int_eq(proxylock_rwlock_unlock(&cost_lock), 0);
	ck_assert_msg((intptr_t)reads >= 0 && (intptr_t)reads < 200,
	              "2000 contended write locks made %ld read(2) calls (-1: a lock did not "
	              "time out)", (long)(intptr_t)reads);
}
END_TEST

static Suite *rwlock_suite(void)
{
	Suite *s = suite_create("rwlock");
	TCase *tc = tcase_create("rwlock");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, readers_share_and_a_writer_excludes_everyone);
	tcase_add_test(tc, a_blocked_writer_gets_the_lock_when_the_last_reader_leaves);
	tcase_add_test(tc, blocked_readers_all_enter_together_when_the_writer_leaves);
	tcase_add_test(tc, seventy_readers_queued_behind_a_writer_all_get_the_lock);
	tcase_add_test(tc, a_hundred_forty_readers_queued_behind_a_writer_all_get_the_lock);
	tcase_add_test(tc, a_read_lock_released_by_a_later_key_destructor_is_released);
	tcase_add_test(tc, timed_locks_time_out_and_refuse_bad_deadlines_and_clocks);
	tcase_add_test(tc, a_writer_queued_with_a_far_deadline_waits_for_the_lock);
	tcase_add_test(tc, destroy_while_held_is_ebusy_and_a_destroyed_rwlock_is_einval);
	tcase_add_test(tc, relocking_for_writing_or_reading_while_writing_is_edeadlk_trylock_ebusy);
	tcase_add_test(tc, unlock_by_a_thread_that_holds_nothing_is_eperm_and_changes_nothing);
	tcase_add_test(tc, read_holds_overflowing_the_count_are_eagain);
	tcase_add_test(tc, attributes_validate_and_init_applies_them);
	tcase_add_test(tc, prefer_reader_lets_new_and_recursive_readers_past_a_waiting_writer);
	tcase_add_test(tc, prefer_writer_is_prefer_reader_as_in_glibc);
	tcase_add_test(tc, prefer_writer_nonrecursive_holds_new_readers_behind_a_waiting_writer);
	tcase_add_test(tc, a_writer_timing_out_lets_the_readers_queued_behind_it_in);
	tcase_add_test(tc, a_waiting_writer_lends_to_its_one_reader_restored_at_unlock);
	tcase_add_test(tc, a_waiting_writer_lends_to_both_readers_each_restored_at_its_own_unlock);
	tcase_add_test(tc, a_waiting_writer_lends_to_all_8_readers_each_restored_at_its_own_unlock);
	tcase_add_test(tc, a_reader_joining_past_a_waiting_writer_is_lent_to_as_well);
	tcase_add_test(tc, a_joined_lone_reader_is_lent_to_and_restored_at_its_unlock_before_the_other);
	tcase_add_test(tc, a_joined_lone_reader_is_lent_to_and_restored_at_its_unlock_after_the_other);
	tcase_add_test(tc, a_lone_reader_relocking_keeps_the_lend_until_its_last_unlock);
	tcase_add_test(tc, readers_waiting_on_a_writer_lend_to_it_until_its_unlock);
	tcase_add_test(tc, a_writer_that_times_out_withdraws_from_every_reader);
	tcase_add_test(tc, a_reader_that_exits_holding_the_lock_leaves_the_others_exact);
	tcase_add_test(tc, a_lone_reader_that_exited_holding_the_lock_is_not_lent_to_nor_is_its_tids_next_owner);
	tcase_add_test(tc, a_converted_reader_that_exited_holding_the_lock_is_not_lent_to_nor_is_its_tids_next_owner);
	tcase_add_test(tc, a_reader_that_exits_while_a_nonrecursive_writer_waits_is_not_lent_to_nor_is_its_tids_next_owner);
	tcase_add_test(tc, a_reader_that_exits_while_a_prefer_reader_writer_waits_is_not_lent_to_nor_is_its_tids_next_owner);
	tcase_add_test(tc, a_chain_rwlock_mutex_rwlock_lends_the_first_writers_context_to_the_last_reader);
	tcase_add_test(tc, uncontended_read_and_write_paths_make_no_syscall);
	tcase_add_test(tc, contended_write_locks_against_the_leaders_lone_read_hold_seldom_read_proc);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(rwlock_suite)

/* SPDX-License-Identifier: MIT */
/*
 * test_park.c - the parking lot (lib/park.h) on its own, on keys no lock
 * owns: a validation that answers never queues or sleeps; a queued hook
 * that answers leaves the queue; a deadline leaves the waiter queued for
 * plk_park_leave; an unparker's park word lands after its finish hook;
 * a filter picks whom to take; a requeue moves sleepers that sleep on.
 * Linked against the internal archive to reach the parking lot directly.
 */
#include "helpers.h"
#include "park.h"
#include "registry.h"

#include <pthread.h>

static uint32_t key_a __attribute__((aligned(8)));
static uint32_t key_b __attribute__((aligned(8)));

/* --- hooks ------------------------------------------------------------- */

static int answer_42(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	(void)b, (void)p, (void)ctx;
	return 42;
}

static int sleep_please(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	(void)b, (void)p, (void)ctx;
	return PLK_PARK_SLEEP;
}

static int answer_7(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	(void)b, (void)p, (void)ctx;
	return 7;
}

/* What a left hook saw, returned through ctx. */
struct seen_left {
	uint32_t st;
	bool queued;
};

static int note_left(struct plk_bucket *b, struct plk_park *p, uint32_t st, bool queued,
                     void *ctx)
{
	struct seen_left *s = ctx;

	(void)b, (void)p;
	s->st = st;
	s->queued = queued;
	return 5;
}

static bool is_queued(void *key, struct plk_thread *t)
{
	uint32_t seq;

	return plk_waitq_snapshot(t, &seq) == key;
}

/* --- a parking thread -------------------------------------------------- */

static const struct plk_park_ops sleeper_ops = { .validate = sleep_please };

struct sleeper {
	pthread_t th;
	void *key;
	struct plk_thread *me;  /* its record, once it has one */
	uint32_t st;            /* what plk_park returned */
	int done;
};

static void *sleeper_run(void *arg)
{
	struct sleeper *s = arg;
	struct plk_park p = { .key = s->key, .clock = CLOCK_MONOTONIC };

	p.me = plk_thread_self();
	__atomic_store_n(&s->me, p.me, __ATOMIC_RELEASE);
	s->st = plk_park(&p, &sleeper_ops, NULL);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Start @s parking on @key and wait until it is queued there. */
static void sleeper_start(struct sleeper *s, void *key)
{
	s->key = key;
	s->me = NULL;
	s->done = 0;
	ck_assert_int_eq(pthread_create(&s->th, NULL, sleeper_run, s), 0);
	ck_assert(eventually(__atomic_load_n(&s->me, __ATOMIC_ACQUIRE) &&
	                     is_queued(key, s->me), 5000));
}

static uint32_t sleeper_join(struct sleeper *s)
{
	ck_assert_int_eq(pthread_join(s->th, NULL), 0);
	return s->st;
}

/* --- tests ------------------------------------------------------------- */

START_TEST(a_validation_that_answers_never_queues_nor_sleeps)
{
	static const struct plk_park_ops ops = { .validate = answer_42 };
	struct plk_park p = { .key = &key_a, .me = plk_thread_self() };  /* no deadline */

	ck_assert_ptr_nonnull(p.me);
	ck_assert_uint_eq(plk_park(&p, &ops, NULL), PLK_PARK_ANSWERED);
	ck_assert_int_eq(p.answer, 42);
	ck_assert(!is_queued(&key_a, p.me));
}
END_TEST

START_TEST(a_queued_hook_that_answers_takes_the_waiter_off_again)
{
	static const struct plk_park_ops ops = { .validate = sleep_please, .queued = answer_7 };
	struct plk_park p = { .key = &key_a, .me = plk_thread_self() };

	ck_assert_uint_eq(plk_park(&p, &ops, NULL), PLK_PARK_ANSWERED);
	ck_assert_int_eq(p.answer, 7);
	ck_assert(!is_queued(&key_a, p.me));
	ck_assert_uint_eq(__atomic_load_n(&p.me->park, __ATOMIC_ACQUIRE), PLK_PARK_WAITING);
}
END_TEST

START_TEST(a_deadline_leaves_the_waiter_queued_for_plk_park_leave)
{
	static const struct plk_park_ops ops = { .validate = sleep_please, .left = note_left };
	struct timespec past = { 1, 0 };
	struct plk_park p = { .key = &key_a, .me = plk_thread_self(),
	                      .clock = CLOCK_MONOTONIC, .abstime = &past };
	struct seen_left seen = { 99, false };

	ck_assert_uint_eq(plk_park(&p, &ops, NULL), PLK_PARK_WAITING);
	ck_assert(is_queued(&key_a, p.me));
	ck_assert_int_eq(plk_park_leave(&p, &ops, &seen), 5);
	ck_assert(seen.queued);
	ck_assert_uint_eq(seen.st, PLK_PARK_WAITING);
	ck_assert(!is_queued(&key_a, p.me));
}
END_TEST

/* What an unpark saw of its sleeper's park word in its finish hook. */
struct told {
	struct plk_thread *t;
	uint32_t park_at_finish;
	int finished_with;
};

static uint32_t hand_it(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	struct told *k = ctx;

	(void)b;
	k->t = t;
	return PLK_PARK_HANDED;
}

static void note_finish(struct plk_bucket *b, int n, void *ctx)
{
	struct told *k = ctx;

	(void)b;
	k->finished_with = n;
	k->park_at_finish = k->t ? __atomic_load_n(&k->t->park, __ATOMIC_RELAXED) : 99;
}

START_TEST(an_unparked_thread_is_told_after_the_finish_hook_and_returns_what_it_was_told)
{
	static const struct plk_unpark_ops ops = { .unparked = hand_it, .finish = note_finish };
	struct sleeper s;
	struct told k = { NULL, 99, -1 };

	sleeper_start(&s, &key_a);
	ck_assert_int_eq(plk_unpark_one(&key_a, &ops, &k), 1);
	ck_assert_ptr_eq(k.t, s.me);
	ck_assert_int_eq(k.finished_with, 1);
	ck_assert_uint_eq(k.park_at_finish, PLK_PARK_WAITING);  /* M4: the park word last */
	ck_assert_uint_eq(sleeper_join(&s), PLK_PARK_HANDED);
	ck_assert(!is_queued(&key_a, s.me));
}
END_TEST

static uint32_t wake_it(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	(void)b, (void)t, (void)ctx;
	return PLK_PARK_WOKEN;
}

static enum plk_unpark_pick skip_the_record(struct plk_bucket *b, struct plk_thread *t,
                                            void *ctx)
{
	(void)b;
	return t == ctx ? PLK_UNPARK_SKIP : PLK_UNPARK_TAKE;
}

START_TEST(a_filtered_unpark_takes_only_whom_its_filter_picks)
{
	static const struct plk_unpark_ops skip_ops = { .filter = skip_the_record,
	                                                .unparked = wake_it };
	static const struct plk_unpark_ops all_ops = { .unparked = wake_it };
	struct sleeper s[3];

	for (int i = 0; i < 3; i++)
		sleeper_start(&s[i], &key_a);
	ck_assert_int_eq(plk_unpark_filtered(&key_a, PLK_UNPARK_BATCH, &skip_ops, s[1].me), 2);
	ck_assert_uint_eq(sleeper_join(&s[0]), PLK_PARK_WOKEN);
	ck_assert_uint_eq(sleeper_join(&s[2]), PLK_PARK_WOKEN);
	ck_assert(is_queued(&key_a, s[1].me));
	ck_assert(!__atomic_load_n(&s[1].done, __ATOMIC_ACQUIRE));
	ck_assert_int_eq(plk_unpark_all(&key_a, &all_ops, NULL), 1);
	ck_assert_uint_eq(sleeper_join(&s[1]), PLK_PARK_WOKEN);
}
END_TEST

static enum plk_requeue_pick move_it(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	(void)b, (void)t, (void)ctx;
	return PLK_REQUEUE_MOVE;
}

START_TEST(a_requeued_sleeper_sleeps_on_until_unparked_from_its_new_queue)
{
	static const struct plk_requeue_ops move_ops = { .pick = move_it };
	static const struct plk_unpark_ops all_ops = { .unparked = wake_it };
	struct sleeper s[2];

	for (int i = 0; i < 2; i++)
		sleeper_start(&s[i], &key_a);
	ck_assert(!plk_requeue(&key_a, &key_b, &move_ops, NULL));
	for (int i = 0; i < 2; i++) {
		ck_assert(is_queued(&key_b, s[i].me));
		ck_assert_uint_eq(__atomic_load_n(&s[i].me->park, __ATOMIC_ACQUIRE),
		                  PLK_PARK_WAITING);
	}
	usleep(20 * 1000);
	ck_assert(!__atomic_load_n(&s[0].done, __ATOMIC_ACQUIRE));
	ck_assert(!__atomic_load_n(&s[1].done, __ATOMIC_ACQUIRE));
	ck_assert_int_eq(plk_unpark_all(&key_a, &all_ops, NULL), 0);  /* nobody left there */
	ck_assert_int_eq(plk_unpark_all(&key_b, &all_ops, NULL), 2);
	ck_assert_uint_eq(sleeper_join(&s[0]), PLK_PARK_WOKEN);
	ck_assert_uint_eq(sleeper_join(&s[1]), PLK_PARK_WOKEN);
}
END_TEST

static Suite *park_suite(void)
{
	Suite *s = suite_create("park");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_validation_that_answers_never_queues_nor_sleeps);
	tcase_add_test(tc, a_queued_hook_that_answers_takes_the_waiter_off_again);
	tcase_add_test(tc, a_deadline_leaves_the_waiter_queued_for_plk_park_leave);
	tcase_add_test(tc, an_unparked_thread_is_told_after_the_finish_hook_and_returns_what_it_was_told);
	tcase_add_test(tc, a_filtered_unpark_takes_only_whom_its_filter_picks);
	tcase_add_test(tc, a_requeued_sleeper_sleeps_on_until_unparked_from_its_new_queue);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(park_suite)

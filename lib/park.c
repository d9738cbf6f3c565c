/* SPDX-License-Identifier: MIT */
/*
 * park.c - the parking lot (see park.h): park, leave, unpark, requeue.
 *
 * The order every wait and every wake follows, whoever the client is:
 *  - the bucket is taken with no internal lock held, after the client's
 *    prepare (which may make syscalls: none may be made under it);
 *  - a decision to sleep is made under the bucket, from the lock word
 *    read there, and the waiter is queued in the same hold: so an
 *    unparker, which changes the word and looks at the queue under the
 *    same bucket, either finds the waiter queued or the waiter sees its
 *    change (no lost wake-up: mutex.c's M1, rwlock.c's RW1);
 *  - a thread taken off a queue by someone else is told so by its park
 *    word, set once, under the bucket, after everything the unparker
 *    does there (the lock word names a handed-off thread first: M4,
 *    RW4), with release order; the futex wake follows once the bucket
 *    is dropped (records are type-stable: waitq.c);
 *  - a waiter that leaves by itself (a deadline, a cancellation, an
 *    answer of its queued hook) takes itself off under the bucket and
 *    leaves its park word WAITING; one that finds it changed was
 *    unparked first, and the client decides what that owes (M5);
 *  - every bucket drop is followed, with no lock held, by the flush of
 *    the deferred applies (plk_chain_flush), after the futex wakes of an
 *    unpark (the woken first) and before those of a requeue (its moved
 *    lend first).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "chain.h"
#include "park.h"

/* --- parking ---------------------------------------------------------- */

static void park_prepare(struct plk_park *p, const struct plk_park_ops *ops, void *ctx)
{
	if (ops->prepare)
		ops->prepare(p, ctx);
}

/*
 * The part of plk_park under the bucket: validate, and queue if told
 * to.  Returns PLK_PARK_SLEEP if @p->me is queued, PLK_PARK_AGAIN, or an
 * answer; the bucket is dropped and the flush done either way.
 */
static int park_queue(struct plk_park *p, const struct plk_park_ops *ops, void *ctx)
{
	struct plk_bucket *b;
	int v;

	park_prepare(p, ops, ctx);
	b = plk_waitq_lock(p->key);
	p->at_head = false;
	v = ops->validate(b, p, ctx);
	if (v == PLK_PARK_SLEEP) {
		plk_waitq_enqueue(b, p->me, p->key, p->at_head);
		if (ops->queued && (v = ops->queued(b, p, ctx)) != PLK_PARK_SLEEP)
			plk_waitq_dequeue(p->me);  /* our own leaving: park stays WAITING */
	}
	plk_waitq_unlock(b);
	plk_chain_flush();
	return v;
}

/* An answer @v, as plk_park returns it. */
static uint32_t park_answer(struct plk_park *p, int v)
{
	p->answer = v;
	return PLK_PARK_ANSWERED;
}

uint32_t plk_park(struct plk_park *p, const struct plk_park_ops *ops, void *ctx)
{
	int v;

	while ((v = park_queue(p, ops, ctx)) == PLK_PARK_AGAIN)
		;
	if (v != PLK_PARK_SLEEP)
		return park_answer(p, v);
	if (ops->before_sleep && (v = ops->before_sleep(p, ctx)) != PLK_PARK_SLEEP)
		return park_answer(p, v);
	return ops->sleep ? ops->sleep(p, ctx) : plk_park_sleep(p, ops, ctx);
}

uint32_t plk_park_sleep(struct plk_park *p, const struct plk_park_ops *ops, void *ctx)
{
	for (;;) {
		struct timespec slice;
		clockid_t clock = p->clock;
		const struct timespec *until =
			ops->sleep_until ? ops->sleep_until(p, ctx, &clock, &slice) : p->abstime;
		bool timedout;
		uint32_t st;
		int v;

		/* Spurious wake-ups sleep on to the same end of slice. */
		do
			st = plk_waitq_park(p->me, clock, until, &timedout);
		while (st == PLK_PARK_WAITING && !timedout);
		if (st != PLK_PARK_WAITING || until == p->abstime)
			return st;
		p->checks++;
		if (ops->slice_over && (v = ops->slice_over(p, ctx)) != PLK_PARK_SLEEP)
			return park_answer(p, v);
	}
}

int plk_park_leave(struct plk_park *p, const struct plk_park_ops *ops, void *ctx)
{
	struct plk_bucket *b;
	bool queued;
	uint32_t st;
	int v;

	park_prepare(p, ops, ctx);
	b = plk_waitq_lock(p->key);
	st = __atomic_load_n(&p->me->park, __ATOMIC_ACQUIRE);
	queued = __atomic_load_n(&p->me->blocked_on, __ATOMIC_RELAXED) == p->key;
	if (queued)
		plk_waitq_dequeue(p->me);
	v = ops->left(b, p, st, queued, ctx);
	plk_waitq_unlock(b);
	plk_chain_flush();
	return v;
}

uint32_t plk_park_until_unparked(struct plk_thread *me)
{
	uint32_t st;
	bool timedout;

	while ((st = plk_waitq_park(me, CLOCK_REALTIME, NULL, &timedout)) == PLK_PARK_WAITING)
		;
	return st;
}

/* --- unparking -------------------------------------------------------- */

/* Tell each of @t[0 .. @n) its @st, under the bucket, last (see the top). */
static void tell(struct plk_thread **t, const uint32_t *st, int n)
{
	for (int i = 0; i < n; i++)
		plk_waitq_unpark_prepare(t[i], st[i]);
}

static void wake(struct plk_thread **t, int n)
{
	for (int i = 0; i < n; i++)
		plk_waitq_unpark(t[i]);
}

int plk_unpark_filtered(void *key, int max, const struct plk_unpark_ops *ops, void *ctx)
{
	struct plk_thread *taken[PLK_UNPARK_BATCH], *t, *next;
	uint32_t st[PLK_UNPARK_BATCH];
	struct plk_bucket *b;
	int n = 0;

	if (max > PLK_UNPARK_BATCH)
		max = PLK_UNPARK_BATCH;
	if (ops->prepare)
		ops->prepare(ctx);
	b = plk_waitq_lock(key);
	if (!ops->begin || ops->begin(b, ctx)) {
		cds_list_for_each_entry_safe(t, next, &b->waiters, wnode) {
			if (n == max)
				break;
			if (__atomic_load_n(&t->blocked_on, __ATOMIC_RELAXED) != key)
				continue;
			enum plk_unpark_pick pick = ops->filter ? ops->filter(b, t, ctx) : PLK_UNPARK_TAKE;

			if (pick == PLK_UNPARK_STOP)
				break;
			if (pick == PLK_UNPARK_SKIP)
				continue;
			plk_waitq_dequeue(t);
			taken[n] = t;
			st[n++] = ops->unparked(b, t, ctx);
		}
	}
	if (ops->finish)
		ops->finish(b, n, ctx);
	tell(taken, st, n);
	plk_waitq_unlock(b);
	wake(taken, n);
	plk_chain_flush();  /* after the wake-ups: the woken first */
	return n;
}

int plk_unpark_one(void *key, const struct plk_unpark_ops *ops, void *ctx)
{
	return plk_unpark_filtered(key, 1, ops, ctx);
}

int plk_unpark_all(void *key, const struct plk_unpark_ops *ops, void *ctx)
{
	int n, all = 0;

	do
		all += n = plk_unpark_filtered(key, PLK_UNPARK_BATCH, ops, ctx);
	while (n == PLK_UNPARK_BATCH);
	return all;
}

/* --- requeueing ------------------------------------------------------- */

bool plk_requeue(void *from, void *to, const struct plk_requeue_ops *ops, void *ctx)
{
	struct plk_thread *woken[PLK_UNPARK_BATCH], *t;
	uint32_t st[PLK_UNPARK_BATCH];
	struct plk_bucket *bf, *bt;
	int n = 0, moved = 0;
	bool more = false;

	if (ops->prepare)
		ops->prepare(ctx);
	plk_waitq_lock2(from, to, &bf, &bt);
	if (!ops->validate || ops->validate(bf, bt, ctx)) {
		while ((t = plk_waitq_first(bf, from))) {
			if (n == PLK_UNPARK_BATCH) {
				more = true;
				break;
			}
			enum plk_requeue_pick how = ops->pick(bf, t, ctx);

			if (how == PLK_REQUEUE_STOP)
				break;
			plk_waitq_dequeue(t);
			bool go_on = !ops->taken || ops->taken(t, how, ctx);

			if (how == PLK_REQUEUE_WAKE) {
				st[n] = PLK_PARK_WOKEN;
				woken[n++] = t;
			} else {
				plk_waitq_enqueue(bt, t, to, false);
				moved++;
			}
			if (!go_on)
				break;
		}
	}
	if (ops->finish)
		ops->finish(bf, bt, n, moved, ctx);
	tell(woken, st, n);
	if (bf != bt)
		plk_waitq_unlock(bf);
	plk_waitq_unlock(bt);
	plk_chain_flush();  /* the moved lend first: the woken only retake */
	wake(woken, n);
	return more;
}

/* SPDX-License-Identifier: MIT */
/*
 * park.h - the parking lot: the one way a lock's slow path waits on, and
 * wakes from, the wait queues (waitq.h), in the shape of WebKit's
 * ParkingLot.  A waiter parks if a validation made under its queue's
 * bucket holds; an unparker takes waiters off under the bucket, a
 * callback deciding what each is told.  The client (mutex.c, cond.c,
 * rwlock.c) says what to validate and what to do; this module owns the
 * order around it: the bucket, the queue position, the park word, the
 * sleep, the leaving on a deadline or a cancellation, and the flush of
 * the deferred applies (chain.h) once the bucket is dropped.
 *
 * Its own module, above waitq (the buckets) and chain (the flush, which
 * walks chains through waitq's buckets): in waitq itself the flush
 * would close an import cycle (test/check-layering.sh).
 *
 * Hooks called "under the bucket" hold an internal lock: no syscall, no
 * allocation, no cancellation point, no other bucket (I5', donate.c).
 * An unpark's or a requeue's hooks queue and dequeue nobody themselves
 * (the parking lot is walking the queue); a park's may (a leaving
 * waiter's left hook may grant the lock to others, for one).
 * Hooks "with no lock held" may do all of these.
 */
#ifndef PLK_PARK_H
#define PLK_PARK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "registry.h"
#include "waitq.h"

/*
 * Verdicts of the park hooks that may answer (validate, queued,
 * before_sleep, slice_over); any value >= 0 is an answer instead: the
 * park ends and plk_park returns PLK_PARK_ANSWERED with the value in
 * plk_park.answer (the client's own codes: 0, errno values, ...).
 */
#define PLK_PARK_SLEEP (-1)  /* validate: queue me and sleep; the others: sleep (on) */
#define PLK_PARK_AGAIN (-2)  /* validate: drop the bucket, flush, take it again */

/* plk_park's result when a hook answered: no park word value. */
#define PLK_PARK_ANSWERED 8u

/* Most threads one unpark or requeue takes off per bucket hold. */
#define PLK_UNPARK_BATCH 32

/** struct plk_park - one park: what the client asks and what it is told. */
struct plk_park {
	void *key;                       /* the queue: a lock address, maybe tagged */
	struct plk_thread *me;           /* the caller's record, on no queue */
	clockid_t clock;                 /* of @abstime */
	const struct timespec *abstime;  /* the deadline; NULL: none */
	bool at_head;                    /* validate's: first in our rank (M3, RW8) */
	int checks;                      /* liveness slices ended so far (plk_park_sleep) */
	int answer;                      /* a hook's answer (PLK_PARK_ANSWERED) */
};

/**
 * struct plk_park_ops - what a client of plk_park says.  NULL hooks are
 * skipped (validate and left excepted, which the calls using them need).
 *
 * @prepare: with no lock held, before each time the bucket is taken
 *   (plk_park, plk_park_leave): what a hook under it will need, e.g.
 *   plk_chain_prepare, or the clock read (never under the bucket).
 * @validate: under the bucket, on no queue: read the lock word and
 *   decide.  PLK_PARK_SLEEP: queue me (set ->at_head to go first in my
 *   rank), then sleep; PLK_PARK_AGAIN: the word moved, try again; an
 *   answer: done without sleeping (e.g. the lock was taken).  It sets
 *   the word's waiters bit if it asks to sleep (M1).
 * @queued: under the bucket, just queued: update what the queue lends
 *   (e.g. plk_chain_update), or answer, e.g. EDEADLK; an answer takes us
 *   off the queue again, the park word left WAITING (our own leaving).
 * @before_sleep: with no lock held, queued, after the flush: e.g. a
 *   condvar releases its mutex here.  An answer ends the park still
 *   queued (or unparked since): the client leaves with plk_park_leave.
 * @sleep: the whole sleep, for a client with its own (a cancellable or
 *   rescanning one); returns the park word seen (acquire): HANDED or
 *   WOKEN, or WAITING once ->abstime has passed; or PLK_PARK_ANSWERED
 *   with ->answer set.  NULL: plk_park_sleep with the two hooks below.
 * @sleep_until: with no lock held, queued: when the next slice of the
 *   sleep ends: ->abstime, or a time in *@slice on *@clock (which it may
 *   change; it starts as ->clock).  NULL: ->abstime, one slice.
 * @slice_over: with no lock held: a slice other than ->abstime's ended
 *   (->checks counts them, this one included): PLK_PARK_SLEEP to sleep
 *   on, or an answer (we are then off the queue, or it is the client's
 *   to leave it).
 * @left: under the bucket, in plk_park_leave: we were on the queue
 *   (@queued; now off it) or someone took us off first and set park
 *   word @st; returns plk_park_leave's answer.
 */
struct plk_park_ops {
	void (*prepare)(struct plk_park *p, void *ctx);
	int (*validate)(struct plk_bucket *b, struct plk_park *p, void *ctx);
	int (*queued)(struct plk_bucket *b, struct plk_park *p, void *ctx);
	int (*before_sleep)(struct plk_park *p, void *ctx);
	uint32_t (*sleep)(struct plk_park *p, void *ctx);
	const struct timespec *(*sleep_until)(struct plk_park *p, void *ctx, clockid_t *clock,
	                                      struct timespec *slice);
	int (*slice_over)(struct plk_park *p, void *ctx);
	int (*left)(struct plk_bucket *b, struct plk_park *p, uint32_t st, bool queued, void *ctx);
};

/**
 * plk_park - wait on @p->key's queue if @ops->validate says so, with no
 * internal lock held.  In order: prepare; take the bucket; validate
 * (AGAIN: drop it, flush, start over); enqueue (@p->at_head); queued;
 * drop the bucket; flush (plk_chain_flush); before_sleep; sleep.
 * Returns the park word an unparker set (PLK_PARK_HANDED: the lock is
 * ours; PLK_PARK_WOKEN: off the queue, to try again), PLK_PARK_WAITING
 * when @p->abstime passed first (maybe still queued: leave with
 * plk_park_leave), or PLK_PARK_ANSWERED (@p->answer).  Every bucket
 * drop is followed by a flush.
 */
PLK_HIDDEN uint32_t plk_park(struct plk_park *p, const struct plk_park_ops *ops, void *ctx);

/**
 * plk_park_sleep - the default sleep of a queued @p->me: park in the
 * slices @ops->sleep_until gives, to @p->abstime, asking @ops->slice_over
 * at the end of each other slice; a spurious wake-up (a stale wake of a
 * recycled record, a signal) sleeps on to the same end.  Returns as
 * @ops->sleep does.  Exposed for a client's own sleep to fall back on.
 */
PLK_HIDDEN uint32_t plk_park_sleep(struct plk_park *p, const struct plk_park_ops *ops,
                                   void *ctx);

/**
 * plk_park_leave - a park on @p->key ended without an unpark (deadline,
 * cancellation, a failed before_sleep): prepare, take the bucket, take
 * @p->me off the queue if it is still on it, and let @ops->left decide
 * (under the bucket) with the park word it reads (acquire); then drop
 * the bucket and flush.  Returns what @ops->left returned.
 */
PLK_HIDDEN int plk_park_leave(struct plk_park *p, const struct plk_park_ops *ops, void *ctx);

/** plk_park_until_unparked - sleep, with no deadline, until an unparker's
 * park word lands (we are off every queue, or being moved); returns it. */
PLK_HIDDEN uint32_t plk_park_until_unparked(struct plk_thread *me);

/* What an unpark's filter says of a queued thread (plk_unpark_filtered). */
enum plk_unpark_pick {
	PLK_UNPARK_TAKE,   /* take it off */
	PLK_UNPARK_SKIP,   /* leave it queued, look at the next */
	PLK_UNPARK_STOP,   /* leave it and the rest */
};

/**
 * struct plk_unpark_ops - what a client of plk_unpark_* says.  All hooks
 * but @unparked may be NULL.
 *
 * @prepare: with no lock held, before the bucket (each batch).
 * @begin: under the bucket, before any thread is looked at: false takes
 *   nobody (finish still runs, with 0).
 * @filter: under the bucket, a thread @t queued on the key, in queue
 *   order: take it, skip it or stop (NULL: take).
 * @unparked: under the bucket, @t just taken off the queue (the next
 *   waiter is the queue's head now): what @t is told, PLK_PARK_WOKEN or
 *   PLK_PARK_HANDED (the client has made the lock @t's before).
 * @finish: under the bucket, after the last thread taken (@n of them,
 *   maybe 0), before any park word is set: clear or keep the waiters
 *   bit, update what the queue lends.
 */
struct plk_unpark_ops {
	void (*prepare)(void *ctx);
	bool (*begin)(struct plk_bucket *b, void *ctx);
	enum plk_unpark_pick (*filter)(struct plk_bucket *b, struct plk_thread *t, void *ctx);
	uint32_t (*unparked)(struct plk_bucket *b, struct plk_thread *t, void *ctx);
	void (*finish)(struct plk_bucket *b, int n, void *ctx);
};

/**
 * plk_unpark_filtered - with no internal lock held: take off @key's
 * queue, in queue order, up to @max (at most PLK_UNPARK_BATCH) of the
 * threads @ops->filter picks, in one bucket hold.  Each one's park word
 * is set (release) after @ops->finish, so the lock word shows what it
 * was told before it can see it (M4, RW4); the futex wakes are issued
 * after the bucket is dropped, then the flush.  Returns how many.
 */
PLK_HIDDEN int plk_unpark_filtered(void *key, int max, const struct plk_unpark_ops *ops,
                                   void *ctx);

/** plk_unpark_one - plk_unpark_filtered of @key's head (at most one). */
PLK_HIDDEN int plk_unpark_one(void *key, const struct plk_unpark_ops *ops, void *ctx);

/**
 * plk_unpark_all - plk_unpark_filtered in batches of PLK_UNPARK_BATCH,
 * the bucket dropped between them, until a batch is not full.  Returns
 * how many in all.
 */
PLK_HIDDEN int plk_unpark_all(void *key, const struct plk_unpark_ops *ops, void *ctx);

/* What a requeue's pick says of the first thread queued on the source. */
enum plk_requeue_pick {
	PLK_REQUEUE_STOP,  /* leave it, and the rest, where they are */
	PLK_REQUEUE_WAKE,  /* take it off, told PLK_PARK_WOKEN */
	PLK_REQUEUE_MOVE,  /* take it off, queue it at the tail of the target */
};

/**
 * struct plk_requeue_ops - what a client of plk_requeue says.  Hooks run
 * under both buckets (the only place two are held, donate.c's I5); all
 * but @pick may be NULL.
 *
 * @prepare: with no lock held, before the buckets.
 * @validate: may anything move?  false: nothing is taken off.
 * @pick: the source's first thread @t, still queued: stop, wake or move.
 * @taken: @t just taken off the source as @how said, before it is
 *   queued on the target; returns false to make it the last.
 * @finish: after the last (@woken, @moved of them), before any park
 *   word is set: e.g. update what both queues lend.
 */
struct plk_requeue_ops {
	void (*prepare)(void *ctx);
	bool (*validate)(struct plk_bucket *bfrom, struct plk_bucket *bto, void *ctx);
	enum plk_requeue_pick (*pick)(struct plk_bucket *bfrom, struct plk_thread *t, void *ctx);
	bool (*taken)(struct plk_thread *t, enum plk_requeue_pick how, void *ctx);
	void (*finish)(struct plk_bucket *bfrom, struct plk_bucket *bto, int woken, int moved,
	               void *ctx);
};

/**
 * plk_requeue - with no internal lock held: move threads queued on @from
 * onto @to's queue, or wake them, in @from's order, as @ops says, with
 * both buckets held (taken in address order: plk_waitq_lock2), at most
 * PLK_UNPARK_BATCH woken.  A moved thread keeps sleeping, its park word
 * WAITING, now on @to.  Then the buckets are dropped, the flush runs
 * (a move's lend first), then the woken are woken.  Returns true if it
 * stopped with its batch of woken full and @from's head not yet picked.
 */
PLK_HIDDEN bool plk_requeue(void *from, void *to, const struct plk_requeue_ops *ops, void *ctx);

#endif /* PLK_PARK_H */

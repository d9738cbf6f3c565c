/* SPDX-License-Identifier: MIT */
/*
 * cond.c - condition variables that work with proxylock mutexes.
 *
 * glibc's pthread_cond_wait releases and retakes its mutex through
 * internal calls no interposer sees, so proxylock mutexes need a condvar
 * of their own.  Its waiters use the mutex wait queues (waitq.c): each is
 * queued under the condvar's address with PLK_COND_TAG set (so a chain
 * walk never takes the condvar for a mutex) and sleeps on its own park
 * word.
 *
 * Storage, 48 bytes laid over glibc's pthread_cond_t; zero-filled is a
 * CLOCK_REALTIME condvar, so PTHREAD_COND_INITIALIZER works:
 *   __waiters (offset 0)   threads queued; written under the condvar's
 *                          bucket lock, read without it so that signal
 *                          and broadcast return at once when nobody waits
 *   __mutex   (offset 8)   the mutex the current waiters use (POSIX: one
 *                          at a time), bit 0 set if it is a glibc mutex
 *   __flags   (offset 36)  PLK_COND_MONOTONIC (glibc's clock bit);
 *                          glibc's pshared bit 0 is never set here, so
 *                          the interposer tells a glibc condvar by it
 *
 * Every wait and wake here is a client of the parking lot (park.h): a
 * wait is plk_park, signal and broadcast plk_unpark_one/all, the move
 * onto a mutex plk_requeue, leaving plk_park_leave.
 *
 * Wait: under the condvar's bucket lock, count and queue ourselves and
 * note the mutex; then release the mutex and park.  Queued before the
 * release, we are found by every signal issued after it, and so after
 * any change of the predicate made under the mutex: no lost wake-up.
 *
 * Signal and broadcast take one or every waiter off the queue.  When the
 * mutex is a proxylock that is held (usually by the signaller), they are
 * moved onto its queue instead of woken: "wait morphing", the userspace
 * FUTEX_CMP_REQUEUE.  Woken, they would only block on the mutex; moved,
 * they sleep until unlock passes it on, one at a time, and lend its
 * owner their context meanwhile.  When the mutex is free, the first is
 * woken to take it and the rest are moved (mutex.c's M1 allows a queue
 * behind a free word while a woken waiter is on its way).  The move holds
 * both bucket locks, taken in address order: the only place two are held
 * (donate.c's I5); record locks, always innermost, may be taken inside.
 * With a
 * glibc mutex, which has no queue of ours, they are simply woken.
 *
 * Waits for work lend to the workers (wakers.c): while queued on the
 * condvar, its waiters lend to its wakers, the threads that lately
 * signalled or broadcast it with waiters queued.  Every change of the
 * queue is followed, under its bucket, by plk_wakers_update; a signal
 * or broadcast that takes waiters off notes its caller as a waker first.
 * A signal or broadcast with nobody waiting returns before any of it.
 *
 * A waiter taken off never touches the condvar's storage again, so it
 * may be destroyed as soon as broadcast returns.  A waiter whose deadline
 * passes leaves the queue under the bucket lock if it is still there;
 * otherwise a signal won the race and it returns 0 as signalled.
 *
 * c->__mutex is a hint, never cleared: a move first checks, under the
 * condvar's bucket, that a waiter bound to that mutex is still queued,
 * and only then touches it (bound_waiter_queued); the mutex may have been
 * freed once its last waiter left.
 *
 * Signal and broadcast from a signal handler (not async-signal-safe in
 * POSIX, but glibc's survive it): a handler that interrupted its own
 * thread while it holds or takes an internal lock (plk_ilock_depth != 0,
 * futex.h) takes no lock; it pushes the call onto the thread's bounded
 * TLS list (defer_wake), as a broadcast, and returns, and the thread's
 * outermost internal unlock runs the list (plk_cond_deferred_run, never
 * nested), at a point that holds no internal lock, as a handler arriving
 * there would.  A full list (32 condvars) aborts with a message.  Not safe still: a handler's signal inside the thread's
 * first library call (pthread_once probes, slab allocation); see
 * docs/design.md, "Signal and broadcast from a signal handler".
 *
 * Waiting is a cancellation point, as POSIX wants: the park runs with
 * asynchronous cancellation enabled (only a futex syscall and a load are
 * inside that window; a TSan build polls instead, see cond_park), and a
 * cleanup handler takes a cancelled waiter off whichever queue it is on,
 * condvar's or mutex's, retakes the mutex, and passes on a signal that
 * had taken it off, before the application's own cleanup handlers run.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "chain.h"
#include "cond.h"
#include "donate.h"
#include "invcheck.h"
#include "liveness.h"
#include "lockword.h"
#include "mutex.h"
#include "park.h"
#include "registry.h"
#include "robust.h"
#include "tsan.h"
#include "vgclient.h"
#include "waitq.h"
#include "wakers.h"

#define MUTEX_IS_GLIBC 1u  /* bit 0 of __mutex */
#define PLK_PARK_OWNERDEAD 3  /* cond_sleep's own: m taken from a dead owner */

static void *cond_key(proxylock_cond_t *c)
{
	return (char *)c + PLK_COND_TAG;
}

/* --- public API ------------------------------------------------------ */

/* A condvar the public calls accept: initialised (or zero) and not destroyed. */
static bool cond_valid(const proxylock_cond_t *c)
{
	/* Relaxed: a check of the caller's own object, which a destroy right
	 * after a broadcast may write while a woken waiter is still on its
	 * way out (ordered by the bucket lock, which TSan does not see). */
	return c && (__atomic_load_n(&c->__flags, __ATOMIC_RELAXED) & ~PLK_COND_MONOTONIC) == 0;
}

int proxylock_cond_init(proxylock_cond_t *c, clockid_t clock)
{
	if (!c || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
		return EINVAL;
	*c = (proxylock_cond_t)PROXYLOCK_COND_INITIALIZER;
	if (clock == CLOCK_MONOTONIC)
		c->__flags = PLK_COND_MONOTONIC;
	plk_wakers_forget(cond_key(c));  /* a new condvar: none of an old one's wakers */
	return 0;
}

int proxylock_cond_destroy(proxylock_cond_t *c)
{
	if (!cond_valid(c))
		return EINVAL;
	if (__atomic_load_n(&c->__waiters, __ATOMIC_ACQUIRE))
		return EBUSY;
	__atomic_store_n(&c->__flags, c->__flags | PLK_COND_DESTROYED, __ATOMIC_RELAXED);
	plk_cond_forget(c);
	return 0;
}

void plk_cond_forget(proxylock_cond_t *c)
{
	plk_wakers_forget(cond_key(c));
}

/* The checks every wait makes before plk_cond_wait's own (which says
 * EPERM for a mutex the caller does not own, NOTRECOVERABLE included). */
static int wait_args(const proxylock_cond_t *c, const proxylock_mutex_t *m)
{
	if (!cond_valid(c) || !m || !plk_flags_valid(m))
		return EINVAL;
	return plk_word_reserved(plk_word(m)) && plk_word(m) != PLK_TID_NOTRECOVERABLE ? EINVAL : 0;
}

int proxylock_cond_wait(proxylock_cond_t *c, proxylock_mutex_t *m)
{
	int err = wait_args(c, m);

	return err ? err : plk_cond_wait(c, m, NULL, CLOCK_REALTIME, NULL);
}

int proxylock_cond_timedwait(proxylock_cond_t *c, proxylock_mutex_t *m,
                             const struct timespec *abstime)
{
	int err = wait_args(c, m);

	if (err || !abstime)
		return EINVAL;
	return plk_cond_wait(c, m, NULL, plk_cond_clock(c), abstime);
}

int proxylock_cond_clockwait(proxylock_cond_t *c, proxylock_mutex_t *m,
                             clockid_t clock, const struct timespec *abstime)
{
	int err = wait_args(c, m);

	if (err || !abstime || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
		return EINVAL;
	return plk_cond_wait(c, m, NULL, clock, abstime);
}

int proxylock_cond_signal(proxylock_cond_t *c)
{
	if (!cond_valid(c))
		return EINVAL;
	plk_cond_wake(c, false);
	return 0;
}

int proxylock_cond_broadcast(proxylock_cond_t *c)
{
	if (!cond_valid(c))
		return EINVAL;
	plk_cond_wake(c, true);
	return 0;
}

/* --- waiting --------------------------------------------------------- */

/* What releasing a proxylock for a wait leaves to restore on retaking it. */
struct held {
	uint32_t depth;  /* RECURSIVE relocks beyond the first */
	int tsan_rec;    /* TSan's count of them (tsan.h) */
};

#if PLK_TSAN
#define tsan_release_begin(m, h) \
	((h)->tsan_rec = plk_tsan_annotated(m) ? __tsan_mutex_pre_unlock((m), __tsan_mutex_recursive_unlock) : 0)
#define tsan_release_end(m) \
	(plk_tsan_annotated(m) ? __tsan_mutex_post_unlock((m), __tsan_mutex_recursive_unlock) : (void)0)
#define tsan_retake_begin(m) (plk_tsan_annotated(m) ? __tsan_mutex_pre_lock((m), 0) : (void)0)
#define tsan_retake_end(m, h) \
	(plk_tsan_annotated(m) ? __tsan_mutex_post_lock((m), __tsan_mutex_recursive_lock, (h)->tsan_rec) : (void)0)
/* The condvar's own work on the wait queues, as TSan's condvar
 * annotations allow: ignored like the mutex's (its sync and accesses
 * are not the application's; waiters get their edges from the mutex). */
#define tsan_internal_begin(c) __tsan_mutex_pre_signal((c), 0)
#define tsan_internal_end(c) __tsan_mutex_post_signal((c), 0)
/* The one edge the ignored internals still owe: a wake that finds a
 * waiter queued comes after that wait began, so what the waiter did
 * before it (e.g. its read of @c) comes before what the waker does
 * after (e.g. destroy and free @c, as POSIX allows after a broadcast). */
#define tsan_wait_begun(c) __tsan_release(c)
#define tsan_wake_done(c) __tsan_acquire(c)
#else
#define tsan_internal_begin(c) ((void)(c))
#define tsan_internal_end(c) ((void)(c))
#define tsan_wait_begun(c) ((void)(c))
#define tsan_wake_done(c) ((void)(c))
#define tsan_release_begin(m, h) ((void)(h))
#define tsan_release_end(m) ((void)0)
#define tsan_retake_begin(m) ((void)0)
#define tsan_retake_end(m, h) ((void)(h))
#endif

/* Release @m completely, noting in *@h what to restore. */
static int mutex_release(void *m, const struct plk_mutex_ops *ops, struct held *h)
{
	proxylock_mutex_t *pm = m;
	int err;

	if (ops)
		return ops->unlock(m);
	tsan_release_begin(pm, h);
	plk_vg(plk_vg_unlock_pre(pm));
	h->depth = pm->__count;
	pm->__count = 0;
	err = plk_mutex_unlock_fast(pm) ? 0 : plk_mutex_unlock_slow(pm, false);
	tsan_release_end(pm);
	plk_vg(plk_vg_unlock_post(pm));
	return err;
}

/* Take @m, after a wait that ended in park state @st. */
static int mutex_take(proxylock_mutex_t *m, struct plk_thread *me, uint32_t st)
{
	if (st == PLK_PARK_HANDED)
		return 0;  /* moved to m's queue, then handed m by its unlock */
	if (st == PLK_PARK_OWNERDEAD)
		return EOWNERDEAD;  /* moved to m's queue, then took it from a dead owner */
	if (st == PLK_PARK_WOKEN && me->requeued)
		return plk_mutex_lock_requeued(m, me);
	return plk_mutex_lock_fast(m) ? 0 : plk_mutex_lock_retake(m);
}

/* Retake @m after a wait that ended in park state @st; restore *@h. */
static int mutex_retake(void *m, const struct plk_mutex_ops *ops, struct plk_thread *me,
                        uint32_t st, const struct held *h)
{
	proxylock_mutex_t *pm = m;
	int err;

	if (ops)
		return ops->lock(m);
	tsan_retake_begin(pm);
	plk_vg(plk_vg_lock_pre(pm, false));
	err = mutex_take(pm, me, st);
	pm->__count = h->depth;
	tsan_retake_end(pm, h);
	if (err == 0 || err == EOWNERDEAD)
		plk_vg(plk_vg_lock_post(pm));
	return err;
}

/* Before @p->key's bucket: what our change of its queue lends needs. */
static void wakers_prepare(struct plk_park *p, void *ctx)
{
	(void)ctx;
	(void)plk_wakers_prepare(p->key);
}

/* Under condvar @ctx's bucket, leaving: if we were still @queued, the
 * count and our lend to its wakers go (K1).  Returns @queued. */
static int leave_left(struct plk_bucket *b, struct plk_park *p, uint32_t st, bool queued,
                      void *ctx)
{
	proxylock_cond_t *c = ctx;

	(void)st;
	if (queued) {
		__atomic_store_n(&c->__waiters, c->__waiters - 1, __ATOMIC_RELAXED);
		plk_wakers_update(b, p->key, 1);  /* our lend to its wakers goes (K1) */
	}
	return queued;
}

static const struct plk_park_ops cond_leave_ops = {
	.prepare = wakers_prepare,
	.left = leave_left,
};

/* Leave @c's queue, where we still are (a failed release, a deadline). */
static bool cond_leave(proxylock_cond_t *c, struct plk_thread *me)
{
	struct plk_park p = { .key = cond_key(c), .me = me };
	bool queued;

	tsan_internal_begin(c);
	queued = plk_park_leave(&p, &cond_leave_ops, c);
	tsan_internal_end(c);
	return queued;
}

/* Our deadline passed.  Still queued on @c: leave, and report the
 * timeout (PLK_PARK_WAITING).  Otherwise a signal took us off first:
 * sleep until what it made of us lands (woken; or moved to the mutex,
 * then woken or handed it by an unlock). */
static uint32_t cond_timedout(proxylock_cond_t *c, struct plk_thread *me)
{
	return cond_leave(c, me) ? PLK_PARK_WAITING : plk_park_until_unparked(me);
}

/* What a wait shares with its park hooks and its cancellation cleanup
 * (cond_wait_cancelled). */
struct cond_wait {
	proxylock_cond_t *c;
	void *m;
	const struct plk_mutex_ops *ops;
	struct plk_thread *me;
	struct held held;
	bool released;  /* the mutex was released for the sleep */
};

/* Under @c's bucket, a waiter of @c just taken off its queue: one fewer,
 * told WOKEN (a signal or broadcast takes no lock for it). */
static uint32_t cond_unparked(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	proxylock_cond_t *c = ctx;

	(void)b;
	(void)t;
	__atomic_store_n(&c->__waiters, c->__waiters - 1, __ATOMIC_RELAXED);
	return PLK_PARK_WOKEN;
}

static void cond_unpark_prepare(void *ctx)
{
	(void)plk_wakers_prepare(cond_key(ctx));
}

/* A waiter passed a signal on: the queue changed, not its wakers. */
static void pass_on_finish(struct plk_bucket *b, int n, void *ctx)
{
	if (n)
		plk_wakers_update(b, cond_key(ctx), 1);  /* not a waker: it passes one on */
}

static const struct plk_unpark_ops pass_on_unpark = {
	.prepare = cond_unpark_prepare,
	.unparked = cond_unparked,
	.finish = pass_on_finish,
};

/*
 * A cancelled waiter that a signal had already taken off the condvar
 * must not consume it (POSIX): pass it on to the first waiter still
 * queued on @c, woken (never moved: a wake is always correct, and a
 * spurious one is allowed).  Only the bucket table is touched unless
 * such a waiter exists; then @c is in use and may be written, so a
 * condvar destroyed (and its memory reused) after a broadcast that woke
 * us is never touched.
 */
static void cond_pass_on(proxylock_cond_t *c)
{
	plk_unpark_one(cond_key(c), &pass_on_unpark, c);
}

/*
 * AddressSanitizer: a cancellation unwinds to cond_sleep's cleanup buffer
 * with glibc's own longjmp, which ASan does not see, so the redzones of
 * the frames it abandoned (cond_park, the futex wait) stay poisoned, and
 * the handler's calls, which reuse that stack, would be reported.  Clear
 * the shadow of the stack first, as ASan does itself before a noreturn.
 */
#if defined(__SANITIZE_ADDRESS__)
void __asan_handle_no_return(void);
#define asan_forget_unwound_frames() __asan_handle_no_return()
#else
#define asan_forget_unwound_frames() ((void)0)
#endif

/* Cleanup handler of a cancelled wait: leave our queue, retake the mutex,
 * and pass on a signal we were taken off by. */
static void cond_wait_cancelled(void *arg)
{
	struct cond_wait *w = arg;
	bool signalled = true;
	uint32_t st;

	asan_forget_unwound_frames();

	if (cond_leave(w->c, w->me)) {
		st = PLK_PARK_WAITING;  /* still on the condvar: just left it */
		signalled = false;
	} else if (!w->ops && plk_blocked_mutex(w->me) == w->m) {
		tsan_internal_begin(w->c);  /* moved onto the mutex: leave its queue too */
		st = plk_mutex_abandon_wait(w->m, w->me) ? PLK_PARK_HANDED : PLK_PARK_WAITING;
		tsan_internal_end(w->c);
	} else {
		st = plk_park_until_unparked(w->me);  /* taken off by a signal or an unlock */
	}
	mutex_retake(w->m, w->ops, w->me, st, &w->held);
	if (!w->ops)
		plk_mutex_bound_add(w->m, -1);  /* retaken: bound no more */
	if (signalled)
		cond_pass_on(w->c);
}

/* Park once, cancellable (see the top). */
#if PLK_TSAN
/*
 * ThreadSanitizer's runtime is not async-cancel-safe: a thread cancelled
 * inside its atomic-load hook leaves the internal lock of that address
 * held, and the next thread given the recycled record hangs on its park
 * word.  So a TSan build parks in slices of at most 10 ms and takes a
 * deferred cancellation at their ends; a slice that ends before @abstime
 * reads as a spurious wake-up.
 */
#define COND_PARK_SLICE_NS (10 * 1000 * 1000)

static uint32_t cond_park(struct plk_thread *me, clockid_t clock,
                          const struct timespec *abstime, bool *timedout)
{
	struct timespec slice;
	const struct timespec *until;
	uint32_t st;

	pthread_testcancel();
	if (!abstime)
		clock = CLOCK_MONOTONIC;  /* a poll immune to wall-clock steps */
	until = plk_deadline_within(clock, COND_PARK_SLICE_NS, abstime, &slice);
	st = plk_waitq_park(me, clock, until, timedout);
	if (until != abstime)
		*timedout = false;
	pthread_testcancel();
	return st;
}
#else
static uint32_t cond_park(struct plk_thread *me, clockid_t clock,
                          const struct timespec *abstime, bool *timedout)
{
	uint32_t st;
	int type;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
	st = plk_waitq_park(me, clock, abstime, timedout);
	pthread_setcanceltype(type, NULL);
	return st;
}
#endif

/*
 * Sleep until taken off @w's condvar or until @abstime (then
 * PLK_PARK_WAITING), undoing the wait if cancelled.  Its own function:
 * pthread_cleanup_push is a setjmp, and nothing here outlives it.
 */
static uint32_t cond_sleep_loop(struct cond_wait *w, clockid_t clock,
                                const struct timespec *abstime)
{
	const struct timespec *until = abstime;
	clockid_t park_clock = clock;
	struct timespec slice;
	bool sliced = false, timedout;
	int checks = 0;
	uint32_t st;

	for (;;) {
		/* Moved onto a proxylock's queue: watch its owner, as its
		 * own waiters do (robust.c).  With a robust mutex, slice from
		 * the start: the mover's wake-up to start slicing may come
		 * before we sleep.  (plk_robust_owner_check acts only once we
		 * are on the mutex's queue.)  A slice's end stays put across
		 * spurious wake-ups (a TSan build's polls are such). */
		if (!sliced && !w->ops && (__atomic_load_n(&w->me->requeued, __ATOMIC_ACQUIRE) ||
		                           (((proxylock_mutex_t *)w->m)->__flags & PLK_ROBUST))) {
			until = plk_liveness_sleep_until(w->m, checks, &park_clock, abstime, &slice);
			sliced = true;
		}
		st = cond_park(w->me, park_clock, until, &timedout);
		if (st != PLK_PARK_WAITING || (timedout && until == abstime))
			return st;
		if (!timedout)
			continue;
		checks++;
		sliced = false;
		if (plk_robust_owner_check(w->m, w->me) == EOWNERDEAD)
			return PLK_PARK_OWNERDEAD;
	}
}

static uint32_t cond_sleep(struct cond_wait *w, clockid_t clock,
                           const struct timespec *abstime)
{
	uint32_t st;

	pthread_cleanup_push(cond_wait_cancelled, w);
	st = cond_sleep_loop(w, clock, abstime);
	pthread_cleanup_pop(0);
	return st;
}

/* No memory for a thread record: release, yield, retake; POSIX allows
 * the spurious wake-up this is. */
static int cond_wait_unqueued(void *m, const struct plk_mutex_ops *ops)
{
	struct held h = { 0, 0 };
	int err;

	if (!ops)
		plk_mutex_bound_add(m, 1);
	err = mutex_release(m, ops, &h);
	if (!err) {
		sched_yield();
		err = mutex_retake(m, ops, NULL, PLK_PARK_WAITING, &h);
	}
	if (!ops)
		plk_mutex_bound_add(m, -1);
	return err;
}

/* Phase "queue", under @c's bucket: count ourselves in, note the mutex
 * (the next signal moves us onto it), then queue (no lock word here to
 * validate: a signal finds us queued once we release the mutex). */
static int wait_validate(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	struct cond_wait *w = ctx;
	uintptr_t tagged = (uintptr_t)w->m | (w->ops ? MUTEX_IS_GLIBC : 0);

	(void)b;
	__atomic_store_n(&w->c->__mutex, (void *)tagged, __ATOMIC_RELAXED);
	__atomic_store_n(&w->c->__waiters, w->c->__waiters + 1, __ATOMIC_RELAXED);
	p->me->requeued = 0;
	p->me->cond_mutex = w->m;
	return PLK_PARK_SLEEP;
}

/* Phase "queue", queued: lend to the condvar's wakers while queued. */
static int wait_queued(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	(void)ctx;
	plk_wakers_update(b, p->key, 1);
	return PLK_PARK_SLEEP;
}

/*
 * Phase "release", with no lock held, queued: release the mutex, bound
 * to it from before its release until after its retake, or the
 * cancellation cleanup's (plk_mutex_bound: destroy's EBUSY).  A failed
 * release answers its error, still queued (plk_cond_wait leaves).
 */
static int wait_release(struct plk_park *p, void *ctx)
{
	struct cond_wait *w = ctx;
	int err;

	(void)p;
	tsan_internal_end(w->c);
	if (!w->ops)
		plk_mutex_bound_add(w->m, 1);
	err = mutex_release(w->m, w->ops, &w->held);
	if (!err) {
		w->released = true;
		return PLK_PARK_SLEEP;
	}
	if (!w->ops)
		plk_mutex_bound_add(w->m, -1);
	return err;
}

/* Phase "park": cond_sleep, cancellable; a mutex taken from a dead owner
 * is an answer. */
static uint32_t wait_sleep(struct plk_park *p, void *ctx)
{
	uint32_t st = cond_sleep(ctx, p->clock, p->abstime);

	if (st != PLK_PARK_OWNERDEAD)
		return st;
	p->answer = EOWNERDEAD;
	return PLK_PARK_ANSWERED;
}

static const struct plk_park_ops cond_wait_park = {
	.validate = wait_validate,
	.queued = wait_queued,
	.before_sleep = wait_release,
	.sleep = wait_sleep,
};

/* The mutex release failed with @err: leave @c's queue, and return it. */
static int wait_unreleased(proxylock_cond_t *c, struct plk_thread *me, int err)
{
	if (cond_leave(c, me))
		return err;
	/* A signal took us off meanwhile (it can only have woken us:
	 * nothing is moved onto a glibc mutex); wait for its wake-up
	 * to land, so that our park word is quiet for the next wait. */
	plk_park_until_unparked(me);
	return err;
}

/* A condvar wait is long: what it lends, to its mutex's next owner or to
 * the condvar's wakers, is read now; if it lends to neither, a copy
 * never verified is, so that a waker learned while it waits is lent
 * what it has (C1). */
static void wait_refresh(proxylock_cond_t *c, void *m, const struct plk_mutex_ops *ops,
                         struct plk_thread *me)
{
	if (plk_wakers_prepare(cond_key(c)) || (!ops && plk_chain_kinds(m)))
		plk_donate_waiter_refresh(me, 0);
	else if (proxylock_donate_kinds())
		plk_donate_waiter_refresh(me, PLK_REFRESH_UNVERIFIED);
}

/*
 * Wait on @c, a client of the parking lot in phases: queue on @c
 * (wait_validate), release @m (wait_release), park (cond_sleep), then
 * retake @m as the park ended (mutex_retake).
 */
int plk_cond_wait(proxylock_cond_t *c, void *m, const struct plk_mutex_ops *ops,
                  clockid_t clock, const struct timespec *abstime)
{
	struct cond_wait w = { .c = c, .m = m, .ops = ops };
	struct plk_park p = { .key = cond_key(c), .clock = clock, .abstime = abstime };
	uint32_t st;
	int err, ret = 0;

	if (abstime && !plk_timespec_valid(abstime))
		return EINVAL;
	if (!ops && !plk_owned_by_self(plk_word(m), plk_tid()))
		return EPERM;
	/* A handler inside our critical section: no record made, no wait,
	 * the mutex kept (docs/design.md, "Signal handlers inside the
	 * library"). */
	if (plk_ilock_busy())
		return plk_ilock_busy_refuse("a signal handler's condvar wait");
	tsan_wait_begun(c);
	tsan_internal_begin(c);
	w.me = p.me = plk_thread_self();
	if (!w.me || plk_blocked_key(w.me)) {  /* no record, or queued (a handler's wait) */
		tsan_internal_end(c);
		return cond_wait_unqueued(m, ops);
	}
	wait_refresh(c, m, ops, w.me);
	st = plk_park(&p, &cond_wait_park, &w);
	if (st == PLK_PARK_ANSWERED && !w.released)
		return wait_unreleased(c, w.me, p.answer);
	if (st == PLK_PARK_ANSWERED)
		st = PLK_PARK_OWNERDEAD;
	if (st == PLK_PARK_WAITING) {
		st = cond_timedout(c, w.me);
		ret = st == PLK_PARK_WAITING ? ETIMEDOUT : 0;
	}
	err = mutex_retake(m, ops, w.me, st, &w.held);
	if (!ops)
		plk_mutex_bound_add(m, -1);
	return err ? err : ret;
}

/* --- waking ---------------------------------------------------------- */

/*
 * Signals deferred by a handler (see the top): this thread's list, in
 * static TLS.  Entry: the condvar's address | 1 for a broadcast (a
 * condvar is 8-byte aligned).  plk_cond_deferred (futex.h): count in the
 * low half, changes in the high half.
 *
 * Only handlers push, and only while plk_ilock_depth != 0; only code
 * running at depth 0 pops (plk_cond_deferred_run).  So a push never
 * interleaves with a pop, but a push may be interrupted by a nested
 * handler's push, and a pop by a handler's pops (a handler that
 * interrupts the popping code at depth 0 may run the list itself, and
 * push again inside its own wake).  Both therefore write their slot
 * first and publish with one compare-and-swap of the whole word, whose
 * change count makes a slot reused meanwhile (ABA) fail the CAS; each
 * retries from a fresh read.  Relaxed order and signal fences suffice:
 * everything here is the one thread's, a handler included, and a
 * single-instruction CAS (or an LL/SC pair, which an exception return
 * breaks) is atomic with respect to that thread's handlers.
 */
#define DEFER_MAX 32
__thread uint64_t plk_cond_deferred __attribute__((tls_model("initial-exec")));
static __thread uintptr_t deferred_wakes[DEFER_MAX] __attribute__((tls_model("initial-exec")));

#define DEFER_ONE ((1ull << 32) + 1)  /* one more entry, one more change */
#define DEFER_POP ((1ull << 32) - 1)  /* one fewer entry, one more change */

/* More than DEFER_MAX signals from handlers inside one internal critical
 * section: say so and stop, rather than lose a wake-up or hang. */
static void __attribute__((noreturn)) defer_full(void)
{
	static const char msg[] = "libproxylock: more than 32 condvar signals from signal handlers "
	                          "during one internal critical section; aborting\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	abort();
}

/*
 * A handler's signal or broadcast of @c, run as a broadcast when its
 * thread leaves the internal lock it interrupted.  A broadcast, because
 * only it is sure to wake a thread that was blocked when the handler
 * called: the queue is ranked, and the interrupted thread may itself
 * queue on @c ahead of it before its critical section ends (an RT
 * thread entering its own wait); the others' wake-ups are spurious,
 * which POSIX allows.  So a condvar is pushed once however often its
 * handlers signal it.
 */
static void defer_wake(proxylock_cond_t *c)
{
	uintptr_t v = (uintptr_t)c | 1;

	for (;;) {
		uint64_t s = __atomic_load_n(&plk_cond_deferred, __ATOMIC_RELAXED);
		uint32_t n = (uint32_t)s;

		/* A broadcast of @c already pending wakes everyone this could. */
		for (uint32_t i = 0; i < n; i++)
			if (__atomic_load_n(&deferred_wakes[i], __ATOMIC_RELAXED) == ((uintptr_t)c | 1))
				return;
		if (n == DEFER_MAX)
			defer_full();
		__atomic_store_n(&deferred_wakes[n], v, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);  /* the slot, then the count */
		if (__atomic_compare_exchange_n(&plk_cond_deferred, &s, s + DEFER_ONE, false,
		                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

/* Set while this thread runs its list: a wake run from it releases
 * internal locks too, and their outermost release must not run the list
 * again from inside (one nesting level of stack per entry). */
static __thread bool deferred_running __attribute__((tls_model("initial-exec")));

void plk_cond_deferred_run(void)
{
	int saved = errno;  /* from a handler's point of view, not ours to change */

	if (deferred_running)
		return;  /* the run below this frame pops what is left */
	do {
		deferred_running = true;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		for (;;) {
			uint64_t s = __atomic_load_n(&plk_cond_deferred, __ATOMIC_RELAXED);
			uint32_t n = (uint32_t)s;
			uintptr_t v;

			if (n == 0)
				break;
			v = __atomic_load_n(&deferred_wakes[n - 1], __ATOMIC_RELAXED);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);  /* the slot, then the count */
			if (__atomic_compare_exchange_n(&plk_cond_deferred, &s, s + DEFER_POP, false,
			                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				plk_cond_wake((proxylock_cond_t *)(v & ~(uintptr_t)1), v & 1);
		}
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		deferred_running = false;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		/* A handler that came after the last pop and before the flag
		 * dropped may have pushed (in a critical section of its own
		 * wake) and found the flag set: run that too. */
	} while ((uint32_t)__atomic_load_n(&plk_cond_deferred, __ATOMIC_RELAXED) != 0);
	errno = saved;
}

/* Under @c's bucket @b, having taken waiters off: the caller is a waker
 * of @c, and what the rest lend follows (wakers.c, K1). */
static void wakers_woke(struct plk_bucket *b, proxylock_cond_t *c)
{
	(void)plk_wakers_note(b, cond_key(c));
	plk_wakers_update(b, cond_key(c), 1);  /* the queue changed too */
}

/* Signal or broadcast took waiters off: the caller is a waker (K1). */
static void woke_finish(struct plk_bucket *b, int n, void *ctx)
{
	if (n)
		wakers_woke(b, ctx);
}

static const struct plk_unpark_ops wake_unpark = {
	.prepare = cond_unpark_prepare,
	.unparked = cond_unparked,
	.finish = woke_finish,
};

/* Wake one or every waiter of @c, in batches. */
static void wake_queued(proxylock_cond_t *c, bool all)
{
	if (all)
		plk_unpark_all(cond_key(c), &wake_unpark, c);
	else
		plk_unpark_one(cond_key(c), &wake_unpark, c);
}

/*
 * Make sure @m's word shows PLK_WAITERS before anyone is moved onto its
 * queue (M1), unless it is free or unusable (destroyed, not recoverable:
 * nobody will unlock it, so its waiters are woken instead, and their
 * retake reports why).  Under @m's bucket lock.  Returns true if waiters
 * may be moved.
 */
static bool mutex_mark_waiters(proxylock_mutex_t *m)
{
	for (;;) {
		uint32_t w = plk_word(m);

		if (w == 0 || plk_word_reserved(w))
			return false;
		if ((w & PLK_WAITERS) || plk_cas_word(m, w, w | PLK_WAITERS))
			return true;
	}
}

/*
 * Under @c's bucket @bc: is a waiter whose own mutex is @m queued on @c
 * (@all: anywhere in the queue; else first, the one a signal takes)?
 * c->__mutex is only a hint, never cleared: the waiters it was written
 * for may all have left (a deadline, a cancellation), and then @m may be
 * unlocked, destroyed and freed, as POSIX allows once no waiter is bound
 * to it.  A queued waiter bound to @m keeps @m alive, and cannot leave
 * while we hold @bc; so @m is touched only if this says true.
 */
static bool bound_waiter_queued(struct plk_bucket *bc, proxylock_cond_t *c,
                                proxylock_mutex_t *m, bool all)
{
	struct plk_thread *t;

	plk_waitq_for_each(bc, cond_key(c), t) {
		if (t->cond_mutex == m)
			return true;
		if (!all)
			break;
	}
	return false;
}

/* What move_to_mutex did. */
enum { MOVE_RETRY, MOVE_DONE, MOVE_MORE, MOVE_WAKE };

/* One move of @c's waiters onto @m: what the requeue hooks share. */
struct move {
	proxylock_cond_t *c;
	proxylock_mutex_t *m;
	bool all;         /* a broadcast: every waiter, else the first */
	bool held;        /* @m is held: its waiters are moved */
	bool free_woken;  /* @m is free: the first of its waiters was woken */
	int ret;          /* MOVE_* */
	uint64_t now;     /* their M3 clock starts at the move */
	int nk;
	struct plk_thread *kicked[PLK_UNPARK_BATCH];  /* moved onto a robust @m */
#ifdef PLK_DEBUG_INVARIANTS
	struct plk_thread *inv_woken;  /* the one woken onto a free @m (invcheck.h) */
#endif
};

static void move_prepare(void *ctx)
{
	struct move *mv = ctx;

	plk_chain_prepare(NULL);  /* m's word is read once m is known to be c's */
	(void)plk_wakers_prepare(cond_key(mv->c));
}

/* Under both buckets: may anything be moved onto @mv->m (see the top)? */
static bool move_validate(struct plk_bucket *bc, struct plk_bucket *bm, void *ctx)
{
	struct move *mv = ctx;

	(void)bm;
	if (__atomic_load_n(&mv->c->__mutex, __ATOMIC_RELAXED) != (void *)mv->m) {
		mv->ret = MOVE_RETRY;
		return false;
	}
	/* Only waiters of other mutexes (or none): wake them (move_pick), and
	 * never touch m, which may be gone (freed). */
	if (!bound_waiter_queued(bc, mv->c, mv->m, mv->all))
		return true;
	if (!(mv->held = mutex_mark_waiters(mv->m)) && plk_word(mv->m) != 0) {
		mv->ret = MOVE_WAKE;
		return false;
	}
	return true;
}

/* @t, first on @c: a waiter with another mutex is woken to retake its
 * own; with @m free, the first of @m's is woken to take it; the others
 * are moved. */
static enum plk_requeue_pick move_pick(struct plk_bucket *bc, struct plk_thread *t, void *ctx)
{
	struct move *mv = ctx;

	(void)bc;
	if (mv->nk == PLK_UNPARK_BATCH) {
		mv->ret = MOVE_MORE;
		return PLK_REQUEUE_STOP;
	}
	if (t->cond_mutex != mv->m)
		return PLK_REQUEUE_WAKE;
	if (!mv->held && !mv->free_woken) {
		mv->free_woken = true;
		PLK_INV_ONLY(mv->inv_woken = t);
		return PLK_REQUEUE_WAKE;
	}
	return PLK_REQUEUE_MOVE;
}

static bool move_taken(struct plk_thread *t, enum plk_requeue_pick how, void *ctx)
{
	struct move *mv = ctx;

	__atomic_store_n(&mv->c->__waiters, mv->c->__waiters - 1, __ATOMIC_RELAXED);
	if (t->cond_mutex != mv->m)
		return mv->all;  /* woken: retakes its own */
	__atomic_store_n(&t->requeued, 1, __ATOMIC_RELEASE);  /* its sleep reads it */
	t->enq_ns = mv->now;
	/* Its sleep has no end: for a robust m, wake it once so it sleeps
	 * again in liveness slices and can take m from a dead owner.
	 * (Moved onto another lock it sleeps on; a dead owner of that is
	 * reported by its own waiters.) */
	if (how == PLK_REQUEUE_MOVE && (mv->m->__flags & PLK_ROBUST))
		mv->kicked[mv->nk++] = t;
	return mv->all;
}

static void move_finish(struct plk_bucket *bc, struct plk_bucket *bm, int woken, int moved,
                        void *ctx)
{
	struct move *mv = ctx;

	if (woken || moved)
		wakers_woke(bc, mv->c);
	if (moved)
		plk_chain_update(bm, mv->m);
	/* The waiter woken onto a free m owes those moved behind it M1;
	 * then M1 (m is alive: bound waiters were on c). */
	PLK_INV_ONLY(if (mv->free_woken) plk_inv_woken(bm, mv->inv_woken, mv->m);
	             if (moved || mv->free_woken) plk_inv_mutex_m1(bm, mv->m));
}

static const struct plk_requeue_ops move_requeue = {
	.prepare = move_prepare,
	.validate = move_validate,
	.pick = move_pick,
	.taken = move_taken,
	.finish = move_finish,
};

/*
 * Move one or every waiter of @c onto proxylock @m's queue (see the top).
 * MOVE_RETRY: @c's waiters no longer use @m; MOVE_WAKE: @m is unusable,
 * so nothing was moved and they are to be woken; MOVE_MORE: a batch of
 * waiters that wait with another mutex (POSIX leaves that undefined;
 * glibc tolerates it, so do we) was woken, call again for the rest.
 * Only a waiter whose own mutex is @m is ever moved onto @m.
 */
static int move_to_mutex(proxylock_cond_t *c, proxylock_mutex_t *m, bool all)
{
	struct move mv = { .c = c, .m = m, .all = all, .ret = MOVE_DONE, .now = plk_now_ns() };

	if (plk_requeue(cond_key(c), m, &move_requeue, &mv))
		mv.ret = MOVE_MORE;
	/* After the buckets (I5); a stale kick of a recycled record is a
	 * spurious wake-up, which every park loop tolerates. */
	for (int i = 0; i < mv.nk; i++)
		plk_futex_wake(&mv.kicked[i]->park, 1);
	return mv.ret;
}

/* With waiters: errno as it was on entry (a handler may call it, and a
 * lend's scheduler call or a futex call may set it). */
static void cond_wake_queued(proxylock_cond_t *c, bool all);

void plk_cond_wake(proxylock_cond_t *c, bool all)
{
	int saved;

	if (__atomic_load_n(&c->__waiters, __ATOMIC_ACQUIRE) == 0)
		return;
	saved = errno;
	cond_wake_queued(c, all);
	errno = saved;
}

static void cond_wake_queued(proxylock_cond_t *c, bool all)
{
	uintptr_t mu;
	int moved = MOVE_WAKE;

	/* A signal handler that interrupted its own thread inside one of our
	 * internal critical sections: no bucket may be taken here. */
	if (__builtin_expect(__atomic_load_n(&plk_ilock_depth, __ATOMIC_RELAXED) != 0, 0)) {
		defer_wake(c);
		return;
	}
	tsan_internal_begin(c);
	for (;;) {
		mu = (uintptr_t)__atomic_load_n(&c->__mutex, __ATOMIC_RELAXED);
		if (!mu || (mu & MUTEX_IS_GLIBC)) {
			moved = MOVE_WAKE;  /* no queue of ours to move onto */
			break;
		}
		moved = move_to_mutex(c, (proxylock_mutex_t *)mu, all);
		if (moved != MOVE_RETRY && moved != MOVE_MORE)
			break;
	}
	if (moved == MOVE_WAKE)
		wake_queued(c, all);
	tsan_internal_end(c);
	tsan_wake_done(c);
}

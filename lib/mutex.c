/* SPDX-License-Identifier: MIT */
/*
 * mutex.c - the proxylock mutex's lock protocol: the slow paths of lock,
 * trylock, timed lock and unlock; queueing, handoff, EDEADLK detection.
 *
 * The lock word's encoding and the one-CAS fast paths are lockword.h's;
 * attributes, init and destroy are mutexattr.c's; whether an owner still
 * exists (liveness slices) is liveness.c's; owners that exited holding a
 * lock (EOWNERDEAD, not recoverable) are robust.c's, which writes the
 * word and the queue under the same invariants.
 *
 * Slow lock, a client of the parking lot (park.h), in phases: spin a
 * bounded number of times while nobody is queued (lock_slow); join:
 * under the lock's bucket, take the lock if free, else set PLK_WAITERS
 * (join_validate); queue: check for a cycle and lend our context to the
 * owner (queue_queued, donate.c); park: sleep on our own park word in
 * liveness slices (park_sleep_until).  A deadline leaves by
 * timedout_left.
 *
 * Slow unlock, the parking lot's plk_unpark_one: under the bucket, either
 *   - hand off: the first waiter (the queue's head, M3) has waited
 *     PROXYLOCK_HANDOFF_US (default 500 us) or more: the word gets its
 *     TID directly and the remaining waiters' donation moves to it; or
 *   - release and wake: the word becomes 0 and the head is taken off
 *     the queue and woken to compete (barging keeps throughput up;
 *     the handoff bounds how long anyone waits behind bargers).
 * Exactly one waiter is woken per unlock.  Only then do we withdraw what
 * we were lent: restoring first would send a boosted holder back to its
 * busy CPU (or nice 19) to finish the unlock there, delaying the waiter.
 * Unlock returns with our kernel view back at its base.
 *
 * Invariants, under the bucket lock (stated and argued once, in
 * docs/design.md, "Invariants (mutex)"; cited here by name):
 *  M1  no lost wake-up: a queued waiter means WAITERS, or a woken waiter
 *      on its way back
 *  M2  only the release clears WAITERS
 *  M3  a woken waiter that lost goes back to the tail inside the handoff
 *      bound, first past it
 *  M4  the word names a handed-off waiter before its park word says so
 *  M5  a waiter leaving without the lock keeps M1's duty
 *  M6  WAITERS is never set on a reserved word
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>

#include "chain.h"
#include "config.h"
#include "donate.h"
#include "invcheck.h"
#include "liveness.h"
#include "lockword.h"
#include "mutex.h"
#include "park.h"
#include "probes.h"
#include "registry.h"
#include "robust.h"
#include "stats.h"
#include "tsan.h"
#include "vgclient.h"
#include "waitq.h"

/*
 * The spin before queueing reads the word 9 times, pausing 1, 2, 4, ...
 * PLK_SPIN_PAUSE_MAX times after each read (511 pauses: about 9 us on
 * this project's x86 VM, about what a futex sleep and wake-up cost there,
 * so a spinner that gives up has lost at most what sleeping at once
 * would have cost).  Few reads leave the owner's line alone, so an owner
 * that unlocks and relocks keeps it hot: 100 reads one pause apart gave
 * 0.74-0.94x glibc's throughput with an empty critical section.  Caps of
 * 512 and 1024 measured better still at 2 threads and burn more CPU; at
 * the 64 cap, an extra read after the last pause measured worse
 * (docs/results.md, "Contended throughput").
 */
#define PLK_SPIN_PAUSE_MAX 256u

/* --- helpers --------------------------------------------------------- */

/* A relock by the owner: RECURSIVE counts, ERRORCHECK refuses, NORMAL
 * returns -1 and goes on to wait (POSIX: deadlock). */
static int relock(proxylock_mutex_t *m)
{
	switch (plk_type(m)) {
	case PROXYLOCK_MUTEX_RECURSIVE:
		if (m->__count == UINT32_MAX)
			return EAGAIN;
		m->__count++;
		return 0;
	case PROXYLOCK_MUTEX_ERRORCHECK:
		return EDEADLK;
	default:
		return -1;
	}
}

/* One step of an owner chain: a lock's word named @owner, a thread whose
 * record @t was, at queue-change count @seq, waiting on @on (the next
 * step's lock).  24 bytes: would_deadlock keeps PROXYLOCK_CHAIN_MAX of
 * them on the caller's stack (the stack budget, docs/design.md). */
struct chain_step {
	void *on;
	struct plk_thread *t;
	pid_t owner;
	uint32_t seq;
};

/* Read one step at @m; returns the next lock (NULL: the chain ends). */
static const proxylock_mutex_t *chain_read(const proxylock_mutex_t *m, struct chain_step *s)
{
	s->owner = plk_owner_tid_locked(plk_word(m));
	s->t = s->owner ? plk_thread_find(s->owner) : NULL;
	if (!s->t)
		return NULL;
	s->on = plk_waitq_snapshot(s->t, &s->seq);
	if (__atomic_load_n(&s->t->tid, __ATOMIC_RELAXED) != s->owner)
		return NULL;  /* recycled for another thread since the lookup */
	/* A condvar, or an rwlock (whose holders this walk cannot name):
	 * the chain ends, and no cycle through it is reported. */
	return ((uintptr_t)s->on & (PLK_COND_TAG | PLK_RW_TAG)) ? NULL : s->on;
}

/*
 * Would waiting on @m close a cycle of owners waiting on each other?
 * EDEADLK must mean a cycle that existed at one instant, and the chain
 * is read without locks, so it is read twice, in the same order: owner
 * of m, what that owner waits on, owner of that lock, and so on, back to
 * us.  If the second reading equals the first, with every waiter's queue
 * count unchanged, then at the instant between the two readings each
 * waiter was queued on its lock without interruption (its count would
 * have moved), and each lock was held by the next waiter, which could
 * not have released it while queued (nor been handed a lock it was not
 * queued on).  A real deadlock is stable, so it is always seen.
 */
static bool would_deadlock(const proxylock_mutex_t *m, uint32_t self)
{
	struct chain_step steps[PROXYLOCK_CHAIN_MAX], again;
	const proxylock_mutex_t *l = m;
	int n;

	for (n = 0; plk_owner_tid_locked(plk_word(l)) != (pid_t)self; n++)
		if (n == PROXYLOCK_CHAIN_MAX || !(l = chain_read(l, &steps[n])))
			return false;
	for (int i = 0; i < n; i++)
		if (chain_read(i ? steps[i - 1].on : m, &again) != steps[i].on ||
		    again.owner != steps[i].owner ||
		    again.t != steps[i].t || again.seq != steps[i].seq)
			return false;
	/* The lock that comes back to us is still ours (a lax foreign
	 * unlock under the interposer could have released it). */
	return n > 0 && plk_owner_tid_locked(plk_word(l)) == (pid_t)self;
}

/*
 * What a lock call on @m, whose word is @w, answers without waiting:
 * EINVAL for a destroyed mutex or storage no init wrote, ENOTRECOVERABLE
 * for a robust one unlocked while inconsistent; 0 if @m is usable.
 */
static int unusable(const proxylock_mutex_t *m, uint32_t w)
{
	if (!plk_flags_valid(m))
		return EINVAL;
	if (!plk_word_reserved(w))
		return 0;
	return (m->__flags & PLK_ROBUST) && (w & PLK_TID_MASK) == PLK_TID_NOTRECOVERABLE ?
	       ENOTRECOVERABLE : EINVAL;
}

/* --- slow lock: queue and sleep -------------------------------------- */

/*
 * Out of memory for a thread record, or a signal handler's lock inside
 * a wait of its thread: wait without queueing (no donation), yielding.
 * The owner never sees PLK_WAITERS from us, so M1 is unaffected.
 */
static int lock_yielding(proxylock_mutex_t *m, uint32_t self, clockid_t clock,
                         const struct timespec *abstime)
{
	for (;;) {
		if (plk_cas_word(m, 0, self))
			return 0;
		if (abstime && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
}

/*
 * Take @m, free in the locked bucket @b, as @self.  If others are queued,
 * set PLK_WAITERS and receive their donation (M1).
 */
static bool acquire_locked(struct plk_bucket *b, proxylock_mutex_t *m, uint32_t self)
{
	bool more = plk_waitq_first(b, m) != NULL;

	if (!plk_cas_word(m, 0, self | (more ? PLK_WAITERS : 0)))
		return false;
	if (more)
		plk_chain_update(b, m);  /* we wait on nothing; the parking lot flushes */
	return true;
}

/* Under @m's bucket @b, @me (if woken: M1's duty is ours) just took @m:
 * the duty is done.  Returns 0, the answer. */
static inline int took(struct plk_bucket *b, proxylock_mutex_t *m, struct plk_thread *me)
{
	plk_inv_back(b, me, m);
	plk_inv_mutex_m1(b, m);
	return 0;
}

/* One wait for @m: what the park hooks below share (ctx). */
struct lock_wait {
	proxylock_mutex_t *m;
	uint32_t self;
	bool robust;      /* @m is robust: ask whether its owner exists */
	bool woken;       /* woken off @m's queue, or moved to it (M3: keep enq_ns) */
	bool retake;      /* a condvar's retake: no cycle check */
	bool dead_taken;  /* join took @m from @dead: plk_dead_done reports */
	pid_t dead;       /* join's prepare: @m's owner, exited; or 0 */
	uint64_t now_ns;  /* join's prepare: the clock, read before the bucket */
};

/*
 * Phase "join", with no lock held, before each look under the bucket:
 * what may need a syscall (the owner's liveness, the clock) and a record
 * for the owner, whom our queueing lends to.
 */
static void join_prepare(struct plk_park *p, void *ctx)
{
	struct lock_wait *lw = ctx;

	(void)p;
	lw->dead = lw->robust ? plk_liveness_dead_owner(plk_word(lw->m), lw->self) : 0;
	lw->now_ns = plk_now_ns();
	plk_chain_prepare(lw->m);
}

/*
 * Phase "join", under @m's bucket: take @m if it is free, else make sure
 * the word shows PLK_WAITERS before we queue (M1), or answer why @m
 * cannot be waited for.
 */
static int join_validate(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	struct lock_wait *lw = ctx;
	proxylock_mutex_t *m = lw->m;
	uint32_t w = plk_word(m);
	int err;

	plk_inv_mutex_m1(b, m);
	if ((err = unusable(m, w))) {
		plk_inv_back(b, p->me, m);  /* woken: nobody is left to wake (M6) */
		return err;  /* NOTRECOVERABLE woke us off the queue */
	}
	if (lw->dead && plk_take_from_dead(b, m, w, lw->self, p->me, lw->dead) == PLK_DEAD_TAKEN) {
		plk_inv_back(b, p->me, m);  /* woken: we took m (M1's duty done) */
		lw->dead_taken = true;
		return EOWNERDEAD;
	}
	if (w == 0)
		return acquire_locked(b, m, lw->self) ? took(b, m, p->me) : PLK_PARK_AGAIN;  /* a barger */
	if (!(w & PLK_WAITERS) && !plk_cas_word(m, w, w | PLK_WAITERS))
		return PLK_PARK_AGAIN;
	if (!lw->woken)
		p->me->enq_ns = lw->now_ns;
	/* M3: at the tail, or first in our rank once past the bound */
	p->at_head = lw->woken && plk_waited_bound(p->me, lw->now_ns);
	return PLK_PARK_SLEEP;
}

/*
 * Phase "queue", under the bucket, queued: the cycle check, then our
 * lend to the owner.  Queued first, then the walk: our blocked_on store
 * and its loads are seq_cst (waitq.c), so of two threads closing a
 * cycle at once at least one sees the other queued.
 */
static int queue_queued(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	struct lock_wait *lw = ctx;

	(void)p;
	plk_inv_back(b, p->me, lw->m);  /* woken: queued behind WAITERS (M1's duty done) */
	if (!lw->retake && plk_type(lw->m) == PROXYLOCK_MUTEX_ERRORCHECK &&
	    would_deadlock(lw->m, lw->self)) {
		/* M1 as the bucket drops: our own leaving cannot break it. */
		plk_inv_mutex_m1(b, lw->m);
		return EDEADLK;  /* off the queue again; PLK_WAITERS stays, as in timedout_left */
	}
	plk_chain_update(b, lw->m);
	plk_inv_mutex_m1(b, lw->m);  /* queued behind WAITERS */
	return PLK_PARK_SLEEP;
}

/* Phase "park": with no lock held, queued and flushed. */
static int park_before_sleep(struct plk_park *p, void *ctx)
{
	(void)p;
	(void)ctx;
	plk_stat_inc(sleeps);
	return PLK_PARK_SLEEP;
}

/* Phase "park": we sleep in liveness slices (liveness.h)... */
static const struct timespec *park_sleep_until(struct plk_park *p, void *ctx, clockid_t *clock,
                                               struct timespec *slice)
{
	struct lock_wait *lw = ctx;

	return plk_liveness_sleep_until(lw->m, p->checks, clock, p->abstime, slice);
}

/* ...and between them ask whether the owner still exists (robust.c). */
static int park_slice_over(struct plk_park *p, void *ctx)
{
	struct lock_wait *lw = ctx;
	int err = plk_robust_owner_check(lw->m, p->me);

	return err >= 0 ? err : PLK_PARK_SLEEP;
}

static const struct plk_park_ops lock_park = {
	.prepare = join_prepare,
	.validate = join_validate,
	.queued = queue_queued,
	.before_sleep = park_before_sleep,
	.sleep_until = park_sleep_until,
	.slice_over = park_slice_over,
};

/*
 * Our wait on @m ended without the lock (deadline, or a cancelled
 * condvar wait), and the parking lot took us off the queue if we were
 * still on it: leave.  Returns 0 if @m turned out to be ours (handed to
 * us, or free and taken), else ETIMEDOUT (or why @m is unusable).
 *
 * If an unlock took us off the queue and woke us (park WOKEN) before we
 * got here, the duty of the woken waiter (M1) is ours: the word may be 0
 * with others still queued, or held by a barger that will unlock on the
 * fast path.  So we do not leave until one of these holds, each read
 * under the bucket, where only a fast-path CAS can still change the
 * word: we took @m; the queue is empty (what we lent is withdrawn); or
 * the word is held with PLK_WAITERS set, so its unlock takes the slow
 * path and wakes the next waiter.  PLK_WAITERS is never cleared here,
 * even with the queue empty: the owner's apply of the withdrawal may
 * still be deferred or in flight, and its slow unlock is what waits for
 * it (donate.c, I1); it finds the queue empty and just releases.
 */
static int timedout_left(struct plk_bucket *b, struct plk_park *p, uint32_t st, bool queued,
                         void *ctx)
{
	struct lock_wait *lw = ctx;
	proxylock_mutex_t *m = lw->m;

	(void)p;
	(void)queued;
	plk_inv_mutex_m1(b, m);  /* our own leaving (if queued) cannot break it */
	if (st == PLK_PARK_HANDED)
		return 0;
	for (;;) {
		bool more = plk_waitq_first(b, m) != NULL;
		uint32_t w = plk_word(m);

		if (w == 0) {
			if (acquire_locked(b, m, lw->self))
				return took(b, m, p->me);
			continue;  /* a barger took it: look again */
		}
		if (plk_word_reserved(w)) {
			plk_inv_back(b, p->me, m);  /* woken meanwhile: nobody to wake (M6) */
			plk_inv_mutex_m1(b, m);
			return unusable(m, w);  /* its waiters were all woken */
		}
		if (!more || (w & PLK_WAITERS) || plk_cas_word(m, w, w | PLK_WAITERS)) {
			/* Held, and (if anyone is queued) PLK_WAITERS set: what
			 * we lent comes off the owner; with nobody queued the
			 * owner's entry goes, PLK_WAITERS stays (see above). */
			if ((w & PLK_WAITERS) || more)
				plk_chain_update(b, m);
			plk_inv_back(b, p->me, m);  /* woken meanwhile: M1's duty done (M5) */
			plk_inv_mutex_m1(b, m);
			return ETIMEDOUT;
		}
	}
}

static void leave_prepare(struct plk_park *p, void *ctx)
{
	(void)p;
	plk_chain_prepare(((struct lock_wait *)ctx)->m);
}

static const struct plk_park_ops lock_leave = {
	.prepare = leave_prepare,
	.left = timedout_left,
};

/* Leave @m's queue (timedout_left says how); 0 if @m is ours after all. */
static int lock_timedout(proxylock_mutex_t *m, struct plk_thread *me, uint32_t self)
{
	struct lock_wait lw = { .m = m, .self = self };
	struct plk_park p = { .key = m, .me = me };

	return plk_park_leave(&p, &lock_leave, &lw);
}

/*
 * Queue and sleep until @m is ours: park (join, queue, park: the hooks
 * above) until handed @m, or until an answer or the deadline; woken to
 * compete, park again.  @woken: we were woken off @m's queue, or a
 * condvar moved us to it and woke us.  @retake: a condvar wait retaking
 * its mutex, which may not fail, so no cycle check (it waits, as glibc's
 * would).  Returns 0, ETIMEDOUT, EDEADLK, or why @m is unusable or
 * EOWNERDEAD.
 */
static int lock_block(proxylock_mutex_t *m, struct plk_thread *me, uint32_t self,
                      clockid_t clock, const struct timespec *abstime, bool woken, bool retake)
{
	struct lock_wait lw = {
		.m = m, .self = self, .robust = m->__flags & PLK_ROBUST,
		.woken = woken, .retake = retake,
	};
	struct plk_park p = { .key = m, .me = me, .clock = clock, .abstime = abstime };

	plk_chain_prepare(m);
	/* A copy of our base read in the last PLK_BASE_TTL_NS stands: with
	 * the re-read's two syscalls before every sleep, our p99 wait with
	 * 100 ns critical sections was about 10 us at 4-16 threads, without
	 * them 41-120 ns (docs/results.md, "Contended throughput"). */
	if (plk_chain_kinds(m))
		plk_donate_waiter_refresh(me, PLK_BASE_TTL_NS);
	for (;;) {
		uint32_t st = plk_park(&p, &lock_park, &lw);

		if (st == PLK_PARK_HANDED)
			return 0;
		if (st == PLK_PARK_WAITING)
			return lock_timedout(m, me, self);
		if (st == PLK_PARK_ANSWERED)
			return lw.dead_taken ? plk_dead_done(m, lw.dead, PLK_DEAD_TAKEN) : p.answer;
		lw.woken = true;  /* PLK_PARK_WOKEN: off the queue, compete again */
	}
}


/* The caller's record, if it may queue: not one already queued elsewhere
 * (a signal handler's lock inside a wait of its thread: a record is on
 * one queue at a time), which takes the lock yielding, lending nothing. */
static struct plk_thread *queueable_self(void)
{
	struct plk_thread *me = plk_thread_self();

	return me && !plk_blocked_key(me) ? me : NULL;
}

/* After a failed fast path: relock rules (unless @retake), spin, block. */
static int lock_slow(proxylock_mutex_t *m, clockid_t clock, const struct timespec *abstime,
                     bool retake)
{
	uint32_t self = plk_tid(), w = plk_word(m);
	struct plk_thread *me;
	uint64_t t0;
	int err;

	if ((err = unusable(m, w)))
		return err;
	if (!retake && plk_owned_by_self(w, self) && (err = relock(m)) >= 0)
		return err;
	if (abstime && !plk_timespec_valid(abstime))
		return EINVAL;
	for (unsigned int pauses = 1; pauses <= PLK_SPIN_PAUSE_MAX; pauses *= 2) {
		w = plk_word(m);
		if (w == 0 && plk_cas_word(m, 0, self))
			return 0;
		if (w & PLK_WAITERS)
			break;  /* others are seen queued: do not barge past them by spinning */
		plk_cpu_relax_times(pauses);
	}
	/* A handler inside our critical section: no record made, no wait. */
	if (plk_ilock_busy())
		return plk_ilock_busy_refuse("a signal handler's contended mutex lock");
	plk_stat_contended();
	t0 = plk_now_ns();
	PLK_PROBE3(contended_acquire, m, plk_owner_tid(w), self);
	me = queueable_self();
	err = me ? lock_block(m, me, self, clock, abstime, false, retake)
	         : lock_yielding(m, self, clock, abstime);
	if (err == 0)
		PLK_PROBE3(acquired, m, self, plk_now_ns() - t0);
	return err;
}

__attribute__((noinline)) int plk_mutex_lock_slow(proxylock_mutex_t *m, clockid_t clock,
                                                  const struct timespec *abstime)
{
	return lock_slow(m, clock, abstime, false);
}

int plk_mutex_lock_retake(proxylock_mutex_t *m)
{
	return lock_slow(m, CLOCK_REALTIME, NULL, true);
}

bool plk_mutex_abandon_wait(proxylock_mutex_t *m, struct plk_thread *me)
{
	return lock_timedout(m, me, plk_tid()) == 0;
}

int plk_mutex_lock_requeued(proxylock_mutex_t *m, struct plk_thread *me)
{
	plk_stat_contended();
	return lock_block(m, me, plk_tid(), CLOCK_REALTIME, NULL, true, true);
}

/* --- lock ------------------------------------------------------------ */

/*
 * What ThreadSanitizer (tsan.h) and Valgrind's tools (vgclient.h) are
 * told around each public call; nothing in other builds, and one
 * untaken branch in a Valgrind-capable build not run under Valgrind.
 * EOWNERDEAD is an acquisition.
 */
#define note_lock_pre(m, may_fail) do {                                  \
		plk_tsan_pre_lock((m), (may_fail));                      \
		plk_vg(plk_vg_lock_pre((m), (may_fail)));                \
	} while (0)
#define note_lock_post(m, may_fail, err) do {                            \
		plk_tsan_post_lock((m), (may_fail), (err));              \
		if ((err) == 0 || (err) == EOWNERDEAD)                   \
			plk_vg(plk_vg_lock_post(m));                     \
	} while (0)

/** plk_lock_may_fail - can a blocking lock of @m return without it? */
static inline bool plk_lock_may_fail(const proxylock_mutex_t *m)
{
	return plk_type(m) == PROXYLOCK_MUTEX_ERRORCHECK || plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE ||
	       (m->__flags & PLK_ROBUST);
}

/* Tools watching (PLK_TSAN build, or under Valgrind): lock and tell them. */
static __attribute__((noinline)) int lock_noted(proxylock_mutex_t *m)
{
	int err;

	note_lock_pre(m, plk_lock_may_fail(m));
	err = plk_mutex_lock_fast(m) ? 0 : plk_mutex_lock_slow(m, CLOCK_REALTIME, NULL);
	note_lock_post(m, plk_lock_may_fail(m), err);
	return err;
}

int proxylock_mutex_lock(proxylock_mutex_t *m)
{
	if (__builtin_expect(!m, 0))
		return EINVAL;
	if (PLK_TSAN || plk_vg_active())
		return lock_noted(m);
	if (plk_mutex_lock_fast(m))
		return 0;
	return plk_mutex_lock_slow(m, CLOCK_REALTIME, NULL);
}

static int trylock(proxylock_mutex_t *m)
{
	uint32_t self = plk_tid(), w;
	int err;

	do {
		w = plk_word(m);
		if (w == 0 && plk_cas_word(m, 0, self))
			return 0;
	} while (w == 0);
	if ((err = unusable(m, w)))
		return err;
	if (plk_owned_by_self(w, self) && (err = relock(m)) >= 0)
		return err == EDEADLK ? EBUSY : err;
	if (m->__flags & PLK_ROBUST)
		return plk_trylock_dead(m, w, self);
	return EBUSY;
}

int proxylock_mutex_trylock(proxylock_mutex_t *m)
{
	int err;

	if (!m)
		return EINVAL;
	note_lock_pre(m, true);
	err = trylock(m);
	note_lock_post(m, true, err);
	return err;
}

static int clocklock(proxylock_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	if (plk_mutex_lock_fast(m))
		return 0;
	if (!abstime)
		return EINVAL;
	return plk_mutex_lock_slow(m, clock, abstime);
}

int proxylock_mutex_clocklock(proxylock_mutex_t *m, clockid_t clock,
                              const struct timespec *abstime)
{
	int err;

	if (!m)
		return EINVAL;
	note_lock_pre(m, true);
	err = clocklock(m, clock, abstime);
	note_lock_post(m, true, err);
	return err;
}

int proxylock_mutex_timedlock(proxylock_mutex_t *m, const struct timespec *abstime)
{
	return proxylock_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

/* --- unlock ---------------------------------------------------------- */

/* One slow unlock of @m: what the unpark hooks below share (ctx). */
struct release {
	proxylock_mutex_t *m;
	uint64_t now_ns;  /* read before the bucket: I5 */
	pid_t foreign;    /* a non-owner's unlock: the owner's TID (else 0) */
	pid_t head_tid;   /* the waiter woken (it may exit once woken), or 0 */
	int handed;       /* ... and handed @m */
};

/* Under the bucket, first: a foreign unlock's owner, pinned now by
 * PLK_WAITERS and the bucket. */
static bool release_begin(struct plk_bucket *b, void *ctx)
{
	struct release *r = ctx;

	(void)b;
	plk_inv_mutex_m1(b, r->m);
	plk_inv_mutex_m2_release(b, r->m, r->foreign != 0);
	if (r->foreign)
		r->foreign = plk_owner_tid_locked(plk_word(r->m));
	return true;
}

/* @head, the queue's head (M3), is off the queue: hand @m off to it if it
 * has waited the bound, else release @m and wake it to compete. */
static uint32_t release_unparked(struct plk_bucket *b, struct plk_thread *head, void *ctx)
{
	struct release *r = ctx;
	proxylock_mutex_t *m = r->m;

	r->head_tid = head->tid;
	if (!plk_waited_bound(head, r->now_ns)) {
		__atomic_store_n(&m->__word, 0, __ATOMIC_RELEASE);
		plk_inv_woken(b, head, m);  /* it owes the rest of the queue M1 */
		return PLK_PARK_WOKEN;
	}
	r->handed = 1;
	/* The word names head before head can see HANDED (M4: the parking
	 * lot sets the park word last): it may return from its futex wait
	 * at any moment and unlock. */
	__atomic_store_n(&m->__word, (uint32_t)head->tid |
	                 (plk_waitq_first(b, m) ? PLK_WAITERS : 0), __ATOMIC_RELEASE);
	plk_chain_update(b, m);  /* head waits on nothing now */
	plk_stat_inc(handoffs);
	plk_inv_mutex_m4(m, head);
	return PLK_PARK_HANDED;
}

/* Under the bucket, last: nobody was queued (a waiter that left), so just
 * release; a foreign owner's entry for @m goes. */
static void release_finish(struct plk_bucket *b, int n, void *ctx)
{
	struct release *r = ctx;

	(void)b;
	if (n == 0)
		__atomic_store_n(&r->m->__word, 0, __ATOMIC_RELEASE);
	if (r->foreign)
		plk_donate_withdraw_tid(r->foreign, r->m);
	plk_inv_mutex_m1(b, r->m);
}

static const struct plk_unpark_ops release_unpark = {
	.begin = release_begin,
	.unparked = release_unparked,
	.finish = release_finish,
};

/*
 * Release @m, which has waiters: hand off or release, and wake exactly
 * one waiter.  The owner's entry for @m goes (I1): if the owner is the
 * caller @me, only after the wake (I3), so the rest of the unlock never
 * runs at our own, possibly starved, speed; if it is thread @foreign
 * (glibc's rules let a non-owner unlock), under the bucket, before
 * anyone can take @m, so it cannot strip a later lend to a new owner.
 */
static void unlock_wake(proxylock_mutex_t *m, struct plk_thread *me, pid_t foreign)
{
	struct release r = { .m = m, .now_ns = plk_now_ns(), .foreign = foreign };

	plk_unpark_one(m, &release_unpark, &r);
	PLK_PROBE4(release, m, plk_tid(), r.head_tid, r.handed);
	if (me) {
		plk_donate_withdraw(me, m);
		plk_chain_flush();
	}
}

/*
 * Release @m on behalf of its owner (glibc lets any thread unlock a
 * NORMAL mutex; the interposer keeps that): the owner's record, if it
 * has one, gives up what @m's waiters lent it.
 */
static int unlock_foreign(proxylock_mutex_t *m, uint32_t w)
{
	if (w == 0)
		return 0;  /* glibc: unlocking an unlocked NORMAL mutex succeeds */
	if (!(w & PLK_WAITERS)) {
		plk_inv_mutex_m1_bare_release(m);
		return plk_cas_word(m, w, 0) ? 0 : -1;
	}
	unlock_wake(m, NULL, plk_owner_tid(w));
	return 0;
}

/* Out of line, so the fast paths stay a few instructions long. */
__attribute__((noinline)) int plk_mutex_unlock_slow(proxylock_mutex_t *m, bool lax)
{
	uint32_t self = plk_tid(), w;
	int err;

	for (;;) {
		w = plk_word(m);
		if ((err = unusable(m, w)))
			return err == ENOTRECOVERABLE ? EPERM : EINVAL;
		if (!plk_owned_by_self(w, self)) {
			if (!lax || plk_type(m) == PROXYLOCK_MUTEX_ERRORCHECK ||
			    plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE)
				return EPERM;
			if ((err = unlock_foreign(m, w)) >= 0)
				return err;
			continue;
		}
		if (m->__count > 0) {
			m->__count--;
			return 0;
		}
		if (w & PLK_OWNER_DIED) {
			plk_mutex_make_unrecoverable(m);
			return 0;
		}
		if (w & PLK_WAITERS)
			break;
		plk_inv_mutex_m1_bare_release(m);
		if (__atomic_compare_exchange_n(&m->__word, &w, 0, 0,
		                                __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
	}
	unlock_wake(m, plk_thread_self(), 0);
	return 0;
}

/* Tools watching: unlock and tell them, unless the unlock is refused
 * (EPERM, EINVAL), which is an answer, not an unlock. */
static __attribute__((noinline)) int unlock_noted(proxylock_mutex_t *m)
{
	int err;

	if (!plk_owned_by_self(plk_word(m), plk_tid()))
		return plk_mutex_unlock_slow(m, false);
	plk_tsan_pre_unlock(m);
	plk_vg(plk_vg_unlock_pre(m));
	err = plk_mutex_unlock_fast(m) ? 0 : plk_mutex_unlock_slow(m, false);
	plk_tsan_post_unlock(m);
	plk_vg(plk_vg_unlock_post(m));
	return err;
}

int proxylock_mutex_unlock(proxylock_mutex_t *m)
{
	if (__builtin_expect(!m, 0))
		return EINVAL;
	if (PLK_TSAN || plk_vg_active())
		return unlock_noted(m);
	if (plk_mutex_unlock_fast(m))
		return 0;
	return plk_mutex_unlock_slow(m, false);
}

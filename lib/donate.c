/* SPDX-License-Identifier: MIT */
/*
 * donate.c - the donation engine: what a thread is lent, and making the
 * kernel agree.
 *
 * Contract.  Each thread T has a base context B(T) (policy and RT
 * priority, nice, uclamp_min, uclamp_max, CPU affinity) and an effective
 * context E(T) = B(T) combined with the lends of every lock T holds with
 * blocked waiters (the rules are lend.c's; a lend folds its waiters'
 * E(W), so chains compose).  The engine knows locks only as keys: the
 * lock layer (chain.c) says who owns what and what its queue lends.
 *
 * Two lends.  Beside E(T), T has E_L(T): B(T) combined with only what
 * its locks and explicit lends pass on, which is what T lends the wakers
 * of a condvar or semaphore it waits on (wakers.c says why, and why no
 * lend then keeps itself round a cycle).  So each entry of T.held holds
 * both folds of its queue (struct plk_lends): of the waiters' E(W), and
 * of their E_L(W); a wait for work's entry has nothing in the second.
 * A change of either is a change of what T lends where it waits, and
 * walks the chain; only E(T) is applied.
 *
 * Order.  E(T) is computed under internal locks: a lock's bucket lock
 * (which pins its owner) and T's record lock.  The kernel is made to
 * agree later, by plk_donate_apply(), once the caller holds no internal
 * lock at all: no syscall, allocation or cancellation point ever runs
 * under one (I5).  Between the two, the work is carried in the caller's
 * deferred-apply list (defer(), drained by chain.c's plk_chain_flush), as
 * the kernel's wake_q carries wake-ups out of a spinlock.
 *
 * The apply token.  T.applier marks the one thread making sched calls
 * for T.  Every change of E(T) bumps T.gen under T's lock; the token is
 * taken and dropped under T's lock too, and is dropped only after the
 * holder saw T.applied_gen == T.gen there.  Before each call the holder
 * checks again, under T's lock, that the token is still its own and
 * T.gen unchanged (call_gate), else it makes no more calls and starts
 * over.  A thread whose bump finds the token taken leaves: the holder
 * sees the bump at its gate or its re-check and applies it.  So each
 * generation installed is no older than the one before, and no bump is
 * left unapplied.  Lenders never wait for the token.  Those that do,
 * always with no internal lock held: T's own unlock (I1), an
 * application's scheduler call on T (plk_donate_base_set), T's exit
 * (registry.c: the record is retired only with the token) and T's
 * fork() (plk_donate_fork_prepare, which drops it before returning).
 *
 * Overtaking (docs/design.md, "Overtaking").  A holder restoring T may be
 * T itself, sent by its own call among hogs at nice 19 and starved inside
 * it.  So a lend (E(T) now above B(T)) that finds the holder making a
 * restore's calls (T.call_lowers) takes the token over (T.token_epoch++);
 * the holder's call in flight (T.call_out), if any, becomes an orphan
 * (T.orphans) that may land before or after the new holder's calls, and
 * T.applied is stale (T.view_stale) until a holder re-reads the kernel's
 * view with no orphan out.  The last one out repairs: a holder drops the
 * token with the view stale only while an orphan is out; an orphan back
 * to a free token takes it.  Waiting for the token waits for no orphan
 * out too.  Every field named here is under T's lock: the holder's gate
 * (mark call_out, then read gen) and the lender's bump and overtake
 * (write gen, then read call_out) are ordered by it, so one of the two
 * sees the other; no atomic of their own.
 *
 * Invariants (stated and argued once, in docs/design.md, "Invariants
 * (donation)"; cited here by name):
 *  I1  a thread holding no lock with waiters, waking no waiting thread
 *      and lent to by no one is lent nothing, and its unlock returns
 *      with the kernel at its base
 *  I2  T.applied is what the kernel has, unless T.view_stale; calls only
 *      for fields that differ
 *  I3  no donation to a former owner
 *  I4  B(T) is read only by the token holder with nothing of ours in the
 *      kernel; nothing is lent to a dead TID
 *  I5  no syscall, allocation or cancellation point under an internal
 *      lock; lock order bucket, record, free list
 */
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "donate.h"
#include "invcheck.h"
#include "observe.h"
#include "probes.h"
#include "schedctl.h"
#include "stats.h"

/* --- process-wide kinds ---------------------------------------------- */

unsigned proxylock_caps(void)
{
	return plk_sched_caps();
}

unsigned proxylock_donate_kinds(void)
{
	return plk_sched_caps() & plk_config()->donate;
}

/* --- computing E(T), under T's lock ---------------------------------- */

static void lend_env(struct plk_lend_env *env)
{
	env->affinity = __atomic_load_n(&plk_config()->affinity, __ATOMIC_RELAXED);
	env->allowed = plk_sched_cpuset();
	env->numa = plk_sched_numa();
	env->capacity = plk_sched_capacity();
}

/* Make *@ctx, *@cpus B(T) combined with T.held's lends (@by_locks: the
 * second of each entry's two); true if that changed them.  t->lock held. */
static bool combine_held(struct plk_thread *t, const struct plk_lend_env *env, bool by_locks,
                         struct plk_sched_ctx *ctx, struct plk_cpu_owner *cpus)
{
	struct plk_sched_ctx eff;
	struct plk_cpu_owner own;
	struct plk_lend all;

	plk_assert_held(&t->lock);
	plk_lend_init(&all);
	for (int i = 0; i < t->nheld; i++)
		plk_lend_merge(&all, by_locks ? &t->held[i].lend.by_locks : &t->held[i].lend.all);
	plk_lend_combine(&t->base, &all, env, &eff, &own);
	if (plk_sched_equal(&eff, ctx) && own.rank == cpus->rank && CPU_EQUAL(&own.cpus, &cpus->cpus))
		return false;
	*ctx = eff;
	*cpus = own;
	return true;
}

/*
 * E(T) and E_L(T) from B(T) and T.held; bump T.gen if E(T) changed.
 * t->lock held.  The CPUs T passes on and their rank are part of it: a
 * change of those alone (a lender of the CPUs T already has comes or
 * goes) changes what T lends the lock it waits on, so it is a new
 * generation too, and the chain is walked; the apply then finds nothing
 * to set.  Returns true if E_L(T) changed (what T lends a wait for
 * work's wakers: the chain is walked for that too).
 */
static bool recompute(struct plk_thread *t)
{
	struct plk_lend_env env;

	bool locks_changed;

	lend_env(&env);
	if (combine_held(t, &env, false, &t->eff, &t->eff_cpus))
		t->gen++;
	locks_changed = combine_held(t, &env, true, &t->eff_locks, &t->eff_locks_cpus);
	plk_inv_i1_target(t);
	return locks_changed;
}

/* Is work due for the token holder?  t->lock held. */
static bool apply_due(const struct plk_thread *t)
{
	plk_assert_held(&t->lock);
	return t->gen != t->applied_gen || t->base_check;
}

static int held_find(const struct plk_thread *t, const void *lock)
{
	for (int i = 0; i < t->nheld; i++)
		if (t->held[i].lock == lock)
			return i;
	return -1;
}

/*
 * T.held goes from empty to non-empty (I4).  If something we installed
 * is still in the kernel, or may be (a restore not yet applied, or a
 * call in flight: the token is taken), the copy is B(T) as verified
 * before that call.  Else the kernel's view is B(T), and the copy stands
 * in until a call is due; the apply checks its age (base_check) and
 * re-reads it past PLK_BASE_TTL_NS even if the lend seems to change
 * nothing.  t->lock held.
 */
static void held_first(struct plk_thread *t)
{
	plk_assert_held(&t->lock);
	if (t->applier || t->view_stale || !plk_sched_equal(&t->applied, &t->base))
		return;
	t->base_unverified = true;
	t->base_check = true;
}

/* Set (l->all.kinds != 0) or clear t's entry for @lock, and recompute
 * E(T) and E_L(T).  t->lock held.  Returns true if either changed: what
 * T lends where it waits changed. */
static bool held_set(struct plk_thread *t, const void *lock, const struct plk_lends *l)
{
	uint64_t gen = t->gen;
	int i = held_find(t, lock);
	bool locks_changed;

	plk_assert_held(&t->lock);
	if (l->all.kinds == 0) {
		if (i < 0)
			return false;
		t->held[i] = t->held[--t->nheld];
	} else {
		if (i < 0) {
			if (t->nheld == PLK_HELD_MAX) {
				plk_stat_inc(chain_truncated);
				return false;
			}
			if (t->nheld == 0)
				held_first(t);
			i = t->nheld++;
			t->held[i].lock = lock;
		}
		t->held[i].lend = *l;
	}
	locks_changed = recompute(t);
	if (t->gen != gen)
		t->lent_lock = lock;
	return t->gen != gen || locks_changed;
}

/* --- the deferred-apply list ----------------------------------------- */

/* A writer lends to PLK_RW_LEND_MAX (32) readers in one hold.  Not the
 * real bound: a timed-out rwlock waiter's hold does two lend updates
 * (rw_timedout's, then grant's), up to 66 applies; more is static TLS,
 * which the dlopen tests run out of (docs/design.md, "Read sets"). */
#define DEFER_MAX 40

static __thread struct plk_apply deferred[DEFER_MAX];
static __thread int ndeferred;

/* Defer an apply of @t (as @tid), unless one is already deferred. */
static void defer(struct plk_thread *t, pid_t tid, void *next, int depth)
{
	for (int i = 0; i < ndeferred; i++)
		if (deferred[i].t == t && deferred[i].tid == tid) {
			if (next && !deferred[i].next) {
				deferred[i].next = next;
				deferred[i].depth = depth;
			}
			return;
		}
	if (ndeferred == DEFER_MAX) {
		/* Never seen: a mutex's bucket hold defers at most two, an
		 * rwlock's PLK_RW_LEND_MAX + 2, but 2 * PLK_RW_LEND_MAX + 2
		 * when a timed-out waiter with more than 32 readers holding
		 * grants (rare; counted).  The newest generation is still
		 * installed by T's next apply. */
		plk_stat_inc(chain_truncated);
		return;
	}
	deferred[ndeferred++] = (struct plk_apply){ t, tid, next, depth };
}

bool plk_donate_next_deferred(struct plk_apply *out)
{
	if (ndeferred == 0)
		return false;
	*out = deferred[0];
	memmove(&deferred[0], &deferred[1], --ndeferred * sizeof(deferred[0]));
	return true;
}

/* --- entry points under a bucket lock -------------------------------- */

/*
 * Has @w's context ever been read?  A new record's B(W) is zeroes
 * (SCHED_OTHER, nice 0), which it must never lend: a waiter re-reads
 * its own before it queues where its wait lends (plk_donate_waiter_refresh),
 * and until then lends only what it is lent (fold_lent), over no base
 * (the second review of issue 31, C1: two nice-19 semaphore waiters lent
 * their poster nice 0; the third, F2: a waiter lent to, whose first read
 * was the deferred apply of that lend, passed nothing on, and the apply
 * re-reads without walking).  base_ns is set by every read.  w->lock held.
 */
static bool context_read(const struct plk_thread *w)
{
	plk_assert_held(&w->lock);
	return w->base_ns != 0;
}

/* Fold into @l, for @kinds, what @w's locks and explicit lends lend it
 * (@by_locks: each entry's second fold): E(W), or E_L(W), with B(W)
 * left out.  w->lock held. */
static void fold_lent(struct plk_lend *l, const struct plk_thread *w, bool by_locks,
                      unsigned kinds)
{
	plk_assert_held(&w->lock);
	for (int i = 0; i < w->nheld; i++) {
		struct plk_lend m = by_locks ? w->held[i].lend.by_locks : w->held[i].lend.all;

		m.kinds &= kinds;
		plk_lend_merge(l, &m);
	}
}

void plk_donate_fold(struct plk_lends *l, struct plk_thread *w, unsigned kinds)
{
	plk_ilock_lock(&w->lock);
	if (context_read(w)) {
		plk_lend_add_ranked(&l->all, &w->eff, &w->eff_cpus, kinds);
		plk_lend_add_ranked(&l->by_locks, &w->eff_locks, &w->eff_locks_cpus, kinds);
	} else {
		fold_lent(&l->all, w, false, kinds);
		fold_lent(&l->by_locks, w, true, kinds);
	}
	plk_ilock_unlock(&w->lock);
}

void plk_donate_fold_for_wakers(struct plk_lend *l, struct plk_thread *w, unsigned kinds)
{
	plk_ilock_lock(&w->lock);
	if (context_read(w))
		plk_lend_add_ranked(l, &w->eff_locks, &w->eff_locks_cpus, kinds);
	else
		fold_lent(l, w, true, kinds);
	plk_ilock_unlock(&w->lock);
}

void plk_donate_set(pid_t owner, const void *lock, const struct plk_lends *l, int depth)
{
	struct plk_thread *o = plk_thread_lock_tid(owner, PLK_RECORD_RESERVED);
	bool changed;
	void *next;

	if (!o) {
		if (l->all.kinds)
			plk_stat_inc(chain_truncated);  /* no record to spare */
		return;
	}
	changed = held_set(o, lock, l);
	/* The queue it waits on, for the chain walk: read here, where the
	 * record is known to be @owner's.  A change of E_L alone walks with
	 * nothing to apply. */
	next = changed ? plk_blocked_key(o) : NULL;
	if (apply_due(o) || next)
		defer(o, owner, next, depth);
	plk_thread_unlock(o);
}

void plk_donate_withdraw_tid(pid_t tid, const void *lock)
{
	struct plk_lends none = { .all.kinds = 0, .by_locks.kinds = 0 };
	struct plk_thread *t = plk_thread_lock_tid(tid, PLK_RECORD_FIND);

	void *next;

	if (!t)
		return;
	next = held_set(t, lock, &none) ? plk_blocked_key(t) : NULL;
	if (apply_due(t) || next)
		defer(t, tid, next, 0);
	plk_thread_unlock(t);
}

/* --- applying, with no internal lock held ---------------------------- */

/* Is @tid a live thread of this process?  TIDs are system-wide: an
 * owner that exited holding a lock leaves its TID in the word, and the
 * TID may be reused elsewhere; we must never touch another process. */
static bool tid_is_ours(pid_t tid)
{
	return (uint32_t)tid == plk_tid() || syscall(SYS_tgkill, plk_pid(), tid, 0) == 0;
}

/* Count and trace what a call for @t changed (no lock held); returns
 * the kinds a lend changed, for the observer (told once the token is
 * dropped: an observer may take locks of its own). */
static unsigned count_apply(const void *lock, pid_t tid, bool lent,
                            const struct plk_sched_ctx *before, const struct plk_sched_ctx *a)
{
	unsigned kinds = plk_lend_kinds_changed(before, a);

	if (!lent) {
		plk_stat_inc(restores);
		PLK_PROBE6(restore, tid, a->nice, a->rt_prio, a->umin, a->umax, CPU_COUNT(&a->cpus));
		return 0;
	}
	plk_stat_inc(donations);
	if (((uintptr_t)lock & PLK_SEM_TAG) == PLK_COND_TAG)
		plk_stat_inc(lent_cond);  /* wakers.c: a condvar's waiters */
	else if (((uintptr_t)lock & PLK_SEM_TAG) == PLK_SEM_TAG)
		plk_stat_inc(lent_sem);
	if (kinds & PROXYLOCK_DONATE_UCLAMP)
		plk_stat_inc(lent_uclamp);
	if (kinds & PROXYLOCK_DONATE_AFFINITY)
		plk_stat_inc(lent_affinity);
	if (kinds & PROXYLOCK_DONATE_NICE)
		plk_stat_inc(lent_nice);
	if (kinds & PROXYLOCK_DONATE_RT)
		plk_stat_inc(lent_rt);
	PLK_PROBE8(donate, lock, tid, plk_tid(), a->nice, a->rt_prio, a->umin, a->umax,
	           CPU_COUNT(&a->cpus));
	return kinds;
}

/*
 * Drop t->lock for a call made holding @t's token (or with our call out
 * as an orphan), marking @t as the record this thread makes calls for
 * (plk_tls_applying): a signal handler run there never waits for @t's
 * token, which is its own thread's (registry.h).  Returns the mark to
 * put back with holding_relock().
 */
static const struct plk_thread *holding_unlock(struct plk_thread *t)
{
	const struct plk_thread *outer = plk_tls_applying;

	plk_tls_applying = t;
	plk_ilock_unlock(&t->lock);
	return outer;
}

static void holding_relock(struct plk_thread *t, const struct plk_thread *outer)
{
	plk_ilock_lock(&t->lock);
	plk_tls_applying = outer;
}

/*
 * The kernel's view of @tid, read for T's token holder with t->lock
 * dropped around the calls (and *@ns, the time after).  False if the
 * thread is gone: nothing is left to make agree (what is lent stays
 * recorded until its locks withdraw it); the token is dropped and t
 * unlocked.
 */
static bool holder_read(struct plk_thread *t, pid_t tid, struct plk_sched_ctx *now, uint64_t *ns)
{
	bool adopted = t->adopted, ok;
	const struct plk_thread *outer = holding_unlock(t);

	ok = (adopted || tid_is_ours(tid)) && plk_sched_read(tid, now) == 0;
	*ns = plk_now_ns();
	holding_relock(t, outer);
	if (!ok) {
		t->applied_gen = t->gen;
		t->base_check = false;
		plk_thread_token_drop_unlock(t);
	}
	return ok;
}

/*
 * Re-read B(T) for the token holder (I4).  Called with t->lock held and
 * returns with it held; false if the record is no longer @tid's or the
 * thread is gone (then the token is dropped and t unlocked).
 */
static bool base_reread(struct plk_thread *t, pid_t tid)
{
	struct plk_sched_ctx now;
	uint64_t ns;

	plk_assert_held(&t->lock);
	PLK_INVARIANT("I4", t->applier, "B(T) is read from the kernel only by T's token holder");

	if (!holder_read(t, tid, &now, &ns))
		return false;
	t->base = now;
	t->applied = now;
	t->base_ns = ns;
	t->base_unverified = false;
	t->base_check = false;
	(void)recompute(t);  /* applied, not walked: docs/design.md, Known limits */
	return true;
}

/* The fork being prepared (see Fork below): a call about to be made on
 * its thread sets fork_lent_late, under that thread's record lock. */
static uint32_t fork_watch_tid;  /* under the forking thread's record lock; 0: no fork */
static bool fork_lent_late;

static void fork_note_apply(pid_t tid)
{
	if ((uint32_t)tid == __atomic_load_n(&fork_watch_tid, __ATOMIC_RELAXED))
		__atomic_store_n(&fork_lent_late, true, __ATOMIC_SEQ_CST);
}

/* One holder's run of apply_locked, as its calls' gate sees it. */
struct apply_run {
	struct plk_thread *t;
	uint64_t gen;     /* the generation being installed */
	uint32_t epoch;   /* T.token_epoch while the token is ours */
	bool out;         /* we marked a call in flight (T.call_out) */
	bool lost;        /* a lender took the token over (Overtaking) */
};

/*
 * Back from a call, or before the first: record what the kernel has now
 * (@cur), unless the token was taken over meanwhile; then a call we had
 * in flight was counted an orphan, and is counted off, and the view is
 * stale (it may have landed after the new holder's calls or read).
 * False if the token is no longer ours.  t->lock held.
 */
static bool call_back(struct apply_run *r, const struct plk_sched_ctx *cur)
{
	struct plk_thread *t = r->t;

	plk_assert_held(&t->lock);
	if (r->lost)
		return false;
	if (t->token_epoch == r->epoch) {
		t->applied = *cur;
		t->call_out = false;
		r->out = false;
		return true;
	}
	r->lost = true;
	if (r->out) {
		t->orphans--;
		t->view_stale = true;
	}
	return false;
}

/* The gate before each call (schedctl.h): the token still ours and no
 * newer generation computed; then the call is in flight. */
static bool call_gate(void *arg, const struct plk_sched_ctx *cur)
{
	struct apply_run *r = arg;
	struct plk_thread *t = r->t;
	bool open;

	plk_ilock_lock(&t->lock);
	open = call_back(r, cur) && t->gen == r->gen;
	PLK_INVARIANT("I2", !open || (t->applier && t->token_epoch == r->epoch),
	              "only the token holder makes calls");
	if (!r->lost)  /* T.call_out is the holder's: not ours to write once taken over */
		t->call_out = open;
	r->out = open;
	plk_ilock_unlock(&t->lock);
	return open;
}

/*
 * A lend that finds the token taken by a holder making a restore's
 * calls takes the token over (docs/design.md, "Overtaking"): the
 * holder's call in flight, if any, becomes an orphan, and the kernel's
 * view is stale until re-read.  t->lock held; true if the token is ours.
 */
static bool overtake(struct plk_thread *t)
{
	plk_assert_held(&t->lock);
	if (!t->call_lowers || t->nheld == 0 || plk_sched_equal(&t->eff, &t->base))
		return false;
	t->token_epoch++;
	t->call_lowers = false;
	if (t->call_out) {
		t->call_out = false;
		t->orphans++;
		t->view_stale = true;
	}
	return true;
}

/*
 * T.applied from the kernel, the view being stale (I2).  Not B(T): what
 * the kernel has may be ours (I4).  It clears the mark only if no orphan
 * was in flight when it began: one that lands later would make it stale
 * again.  t->lock held on entry and on a true return; false if the
 * thread is gone (then the token is dropped and t unlocked).
 */
static bool view_reread(struct plk_thread *t, pid_t tid)
{
	struct plk_sched_ctx now;
	bool clean = t->orphans == 0;
	uint64_t ns;

	if (!holder_read(t, tid, &now, &ns))
		return false;
	t->applied = now;
	if (clean)
		t->view_stale = false;
	return true;
}

/*
 * The token holder's loop: install E(T) until no newer generation is
 * left.  @now_ns: CLOCK_MONOTONIC, read before t->lock was taken.
 * t->lock held on entry; dropped on return.  False if the token was
 * taken over and is held by another (then what is due is its to apply;
 * a caller that must see E(T) installed waits for the token again).
 */
static bool apply_locked(struct plk_thread *t, pid_t tid, uint64_t now_ns)
{
	struct apply_run r = { .t = t, .epoch = t->token_epoch };
	struct plk_sched_gate gate = { call_gate, &r };
	const void *seen_lock = NULL;
	unsigned seen_kinds = 0;
	bool reread = false;

	plk_assert_held(&t->lock);
	PLK_INVARIANT("I2", t->applier, "the apply loop runs holding T's token");
	for (;;) {
		/* The stale view is re-read before any call, and again once
		 * the last orphan is back. */
		if (t->view_stale && (!reread || t->orphans == 0)) {
			if (!view_reread(t, tid))
				return true;
			reread = true;
			continue;
		}

		struct plk_sched_ctx want = t->eff, have = t->applied, before = t->applied;
		const void *lock = t->lent_lock;
		bool lent = t->nheld > 0;
		uint64_t gen = t->gen;

		bool old = t->base_check && now_ns - t->base_ns > PLK_BASE_TTL_NS;

		t->base_check = false;
		if (t->base_unverified && (old || !plk_sched_equal(&want, &have))) {
			if (!base_reread(t, tid))
				return true;
			continue;
		}
		if (plk_sched_equal(&want, &have)) {
			t->applied_gen = gen;
			break;
		}
		/* An adopted record's thread is alive while we hold its token:
		 * its key destructor takes the token before retiring it. */
		bool adopted = t->adopted;

		PLK_INVARIANT("I2", t->applier && t->token_epoch == r.epoch,
		              "only the token holder makes calls");
		fork_note_apply(tid);
		t->call_lowers = !lent;
		r.gen = gen;
		const struct plk_thread *outer = holding_unlock(t);
		bool ours = adopted || tid_is_ours(tid);

		if (ours && plk_sched_apply(tid, &have, &want, &gate)) {
			seen_kinds = count_apply(lock, tid, lent, &before, &have);
			seen_lock = lock;
		}
		holding_relock(t, outer);
		if (!call_back(&r, &have)) {
			/* Taken over.  Back from an orphan with the token free,
			 * we repair what it may have undone; else its holder
			 * does (at its re-check, the view being stale). */
			if (!plk_thread_token_take(t)) {
				plk_ilock_unlock(&t->lock);
				plk_observe_lent(seen_lock, seen_kinds);
				return false;
			}
			r = (struct apply_run){ .t = t, .epoch = t->token_epoch };
			reread = false;
			continue;
		}
		t->call_lowers = false;
		t->applied_gen = gen;
		if (!ours)
			break;
		if (t->gen == gen && !(t->view_stale && t->orphans == 0))
			break;
	}
	plk_thread_token_drop_unlock(t);
	plk_observe_lent(seen_lock, seen_kinds);
	return true;
}

void plk_donate_apply(const struct plk_apply *a)
{
	struct plk_thread *t = a->t;
	uint64_t now_ns = plk_now_ns();

	plk_ilock_lock(&t->lock);
	if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) != a->tid || !apply_due(t) ||
	    !(plk_thread_token_take(t) || overtake(t))) {
		plk_ilock_unlock(&t->lock);  /* recycled, done, or the holder will */
		return;
	}
	apply_locked(t, a->tid, now_ns);
}


void plk_donate_waiter_refresh(struct plk_thread *self, uint64_t max_age_ns)
{
	pid_t tid = (pid_t)plk_tid();
	uint64_t now_ns = plk_now_ns();

	plk_ilock_lock(&self->lock);
	/* Only while nothing is lent or being installed: then the kernel's
	 * view is B(self).  A copy read within @max_age_ns stands, unless it
	 * says RT (a policy or priority changed since must never be lent:
	 * I4), or is unverified and the caller asks only for that. */
	if (self->nheld == 0 && !apply_due(self) && !self->view_stale &&
	    (now_ns - self->base_ns >= max_age_ns || plk_sched_is_rt(self->base.policy) ||
	     (max_age_ns == PLK_REFRESH_UNVERIFIED && self->base_unverified)) &&
	    plk_sched_equal(&self->applied, &self->base) && plk_thread_token_take(self)) {
		self->base_unverified = true;
		if (base_reread(self, tid))
			apply_locked(self, tid, now_ns);
		return;
	}
	plk_ilock_unlock(&self->lock);
}

/* --- fork ------------------------------------------------------------ */

/*
 * Fork.  Nothing is held across it (fork.c): prepare copies the forking
 * thread's base and what the kernel has of ours under its token, drops
 * the token, and names the thread in fork_watch_tid, so that a call
 * that makes the kernel differ for it afterwards (a lend that reaches it
 * while the prepare handlers registered before ours run) sets
 * fork_lent_late first.  The child sets back only what a lend can have
 * changed: nothing if nothing of ours was installed at the copy and none
 * came late (no syscall), else the fields where the kernel's view
 * differs from the copied base, but for those the kernel itself resets
 * in a SCHED_RESET_ON_FORK child.
 *
 * Order: the forking thread stores fork_watch_tid before it drops its
 * token (under its record lock), and a later holder reads it under that
 * lock after taking the token, so a late call is seen; the flag is
 * stored before the call's syscalls, so a child whose kernel state shows
 * the call was copied from memory that shows the flag.
 */
bool plk_donate_fork_prepare(struct plk_donate_fork_copy *copy)
{
	struct plk_thread *me = plk_thread_self_cached();
	pid_t tid = (pid_t)plk_tid();
	uint64_t now_ns = plk_now_ns();

	if (!me)
		return false;
	(void)plk_config();  /* read now, not by recompute under the lock (pthread_once: I5) */
	plk_ilock_lock(&me->lock);
	if (plk_tls_applying == me) {
		/* A handler's fork inside this thread's own calls: their
		 * outcome is not known, so the child reads the kernel and sets
		 * back the base (unless nothing of ours is in it: an unverified
		 * copy is re-read before any call).  Inside base_set's call the
		 * base copied is the one before the application's change. */
		copy->base = me->base;
		copy->applied = me->base_unverified ? me->base : me->applied;
		__atomic_store_n(&fork_lent_late, !me->base_unverified, __ATOMIC_RELAXED);
		plk_ilock_unlock(&me->lock);
		return true;
	}
	if (!plk_thread_token_wait(me, tid))
		return false;
	if (me->base_unverified && !base_reread(me, tid))
		return false;
	copy->base = me->base;
	copy->applied = me->applied;
	/* A stale view (Overtaking) is not known: the child reads the kernel. */
	__atomic_store_n(&fork_lent_late, me->view_stale, __ATOMIC_RELAXED);
	__atomic_store_n(&fork_watch_tid, (uint32_t)tid, __ATOMIC_RELAXED);  /* before the token drops */
	apply_locked(me, tid, now_ns);  /* installs what is due, drops the token and the lock */
	return true;
}

void plk_donate_fork_parent(void)
{
	__atomic_store_n(&fork_watch_tid, 0, __ATOMIC_RELAXED);
}

void plk_donate_fork_child(const struct plk_donate_fork_copy *copy)
{
	const struct plk_sched_ctx *base = &copy->base;
	struct plk_sched_ctx now, want;

	__atomic_store_n(&fork_watch_tid, 0, __ATOMIC_RELAXED);
	if (plk_sched_equal(&copy->applied, base) && !__atomic_load_n(&fork_lent_late, __ATOMIC_SEQ_CST))
		return;
	if (plk_sched_read(0, &now) != 0)
		return;
	want = *base;
	if (base->flags & PLK_SCHED_FLAG_RESET_ON_FORK) {
		/* What the kernel makes of the base in such a child
		 * (sched_setscheduler(2)): an RT policy becomes SCHED_OTHER,
		 * a negative nice 0, the clamps their defaults (as read now),
		 * and the flag is not inherited. */
		if (plk_sched_is_rt(want.policy)) {
			want.policy = SCHED_OTHER;
			want.rt_prio = 0;
		}
		if (want.nice < 0)
			want.nice = 0;
		want.umin = now.umin;
		want.umax = now.umax;
		want.flags = now.flags;
	}
	plk_sched_apply(0, &now, &want, NULL);
}

/* --- the application sets its own context ---------------------------- */

/*
 * @tid's record, locked, with its apply token ours (waited for with no
 * internal lock held); NULL if @tid is not one of ours or is gone.  Our
 * own record is adopted (the common case: a thread asking about or
 * setting its own context); another thread's, if made here, is recycled
 * when the token is dropped unless something is lent to it by then.
 * @probe: run the probes first (a setter recomputes E(T), which reads
 * them under T's lock).
 */
static struct plk_thread *token_for(pid_t tid, bool probe)
{
	struct plk_thread *t;

	(void)plk_config();  /* read once, before any internal lock */
	if (probe)
		plk_sched_probe();
	if ((uint32_t)tid == plk_tid() && (t = plk_thread_self()))
		plk_ilock_lock(&t->lock);
	else
		t = tid_is_ours(tid) ? plk_thread_lock_tid(tid, PLK_RECORD_CREATE) : NULL;
	if (!t || !plk_thread_token_wait(t, tid))
		return NULL;
	return t;
}

/*
 * Holding the token, nothing of ours can land in T's kernel view between
 * the check and the real getter's read: without it, a lender could
 * install its lend (deferred past its bucket) just after a check that
 * found nothing lent, and the getter would read the lend back as the
 * application's own value.  No probe: a getter may run before the
 * libraries the probe uses are initialised (jemalloc counts CPUs with
 * sched_getaffinity from inside libnuma's constructor), and it needs
 * none: it recomputes nothing, and what lenders left it to apply they
 * computed after their own probe.
 */
bool plk_donate_base_get(pid_t tid, struct plk_sched_ctx *out, void (*read)(void *), void *arg)
{
	uint64_t ns = plk_now_ns();  /* before any internal lock */
	struct plk_thread *t = token_for(tid, false);
	bool lent;

	if (!t) {
		read(arg);
		return false;
	}
	/* The kernel's view is B(T) unless something we installed is in it.
	 * While the copy is unverified nothing of ours is (no call is made
	 * before it is re-read), so it is never answered: it may be stale,
	 * or a new record's zeroes. */
	lent = !t->base_unverified && (t->view_stale || !plk_sched_equal(&t->applied, &t->base));
	if (lent) {
		*out = t->base;
	} else {
		const struct plk_thread *outer = holding_unlock(t);

		read(arg);
		ns = plk_now_ns();
		holding_relock(t, outer);
	}
	if (apply_due(t))
		apply_locked(t, tid, ns);  /* what lenders left us; drops the token */
	else
		plk_thread_token_drop_unlock(t);
	return lent;
}

/* Take into B(T) the @fields the application just set in the kernel. */
static void base_adopt(struct plk_sched_ctx *base, const struct plk_sched_ctx *now,
                       unsigned fields)
{
	if (fields & PLK_FIELD_CPUS)
		base->cpus = now->cpus;
	if (fields & PLK_FIELD_NICE)
		base->nice = now->nice;
	if (fields & PLK_FIELD_POLICY) {
		base->policy = now->policy;
		base->rt_prio = now->rt_prio;
	}
	if (fields & PLK_FIELD_UMIN)
		base->umin = now->umin;
	if (fields & PLK_FIELD_UMAX)
		base->umax = now->umax;
}

/*
 * Unlike a lender, which leaves its generation to the token holder, the
 * releaser waits for the token: its unlock must not return before its
 * kernel view is B(self) again (I1).  The holder holds no lock; its
 * calls are a handful, but it may be preempted between them, and nothing
 * is lent to it (docs/design.md, Known limits).  Before the token
 * existed, the releaser waited for the record lock held across the same
 * calls, with the bucket too.
 */
void plk_donate_withdraw(struct plk_thread *self, const void *lock)
{
	struct plk_lends none = { .all.kinds = 0, .by_locks.kinds = 0 };
	pid_t tid = (pid_t)plk_tid();
	uint64_t now_ns = plk_now_ns();

	bool changed;

	plk_ilock_lock(&self->lock);
	changed = held_set(self, lock, &none);
	if (!changed && !apply_due(self) && !self->applier && !self->orphans) {
		plk_ilock_unlock(&self->lock);  /* nothing was lent through @lock */
		plk_inv_i1_restored(self);
		return;
	}
	/* Released on the way into a wait (a condvar's, queued first): what
	 * @self lends there changed too; the caller's flush walks on. */
	if (changed && plk_blocked_key(self))
		defer(self, tid, plk_blocked_key(self), 0);
	/* Taken over by a lender (Overtaking): back for the token, and make
	 * sure of what the lender left once it is ours. */
	while (plk_thread_token_wait(self, tid) && !apply_locked(self, tid, now_ns))
		plk_ilock_lock(&self->lock);
	plk_inv_i1_restored(self);
}

bool plk_donate_base_set(pid_t tid, unsigned fields, bool (*set)(void *), void *arg)
{
	struct plk_sched_ctx now, eff0;
	struct plk_cpu_owner own0;
	struct plk_thread *t;
	uint64_t ns;
	bool ok, read, locks_changed = false;

	if (!(t = token_for(tid, true)))
		return set(arg);
	eff0 = t->eff;
	own0 = t->eff_cpus;
	/* Holding the token, no lock: no donation call for T can run
	 * between the application's call and our reading back what it set. */
	const struct plk_thread *outer = holding_unlock(t);

	ok = set(arg);
	read = ok && plk_sched_read(tid, &now) == 0;
	ns = plk_now_ns();
	holding_relock(t, outer);
	if (read) {
		if ((plk_sched_equal(&t->applied, &t->base) && !t->view_stale) || t->base_unverified) {
			/* Nothing of ours in the kernel: it is all B(T). */
			t->base = now;
			t->base_unverified = false;
			t->base_ns = ns;
		} else {
			base_adopt(&t->base, &now, fields);
		}
		t->applied = now;
		t->eff = now;        /* E(T) changed: a new generation, as always */
		t->gen++;
		locks_changed = recompute(t);  /* and the lend again on top of the new base */
	}
	/* If T waits on a lock, what it lends that lock's owner changed too:
	 * the caller's plk_chain_flush walks the chain (nothing is applied
	 * twice: the apply below leaves nothing due). */
	if (read && (locks_changed || !plk_sched_equal(&eff0, &t->eff) ||
	             own0.rank != t->eff_cpus.rank || !CPU_EQUAL(&own0.cpus, &t->eff_cpus.cpus)) &&
	    plk_blocked_key(t))
		defer(t, tid, plk_blocked_key(t), 0);
	apply_locked(t, tid, ns);
	return ok;
}

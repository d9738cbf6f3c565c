/* SPDX-License-Identifier: MIT */
/*
 * donate.c - the donation engine.
 *
 * Contract.  Each thread T has a base context B(T) (policy and RT
 * priority, nice, uclamp_min, uclamp_max, CPU affinity) and an effective
 * context E(T) = B(T) combined with E(W) of every W blocked on a proxylock
 * T holds (so chains propagate: W waits on T, T waits on U => U gets W's
 * context):
 *   uclamp_min = max, uclamp_max = max (and >= uclamp_min, so a low
 *     uclamp_max on the holder never caps the donated minimum);
 *   nice = min, non-RT policy = highest of IDLE < BATCH < OTHER;
 *   RT = highest SCHED_FIFO/SCHED_RR priority, if above the holder's;
 *   CPUs = the waiters' CPUs (default), or their union with the holder's
 *     (PROXYLOCK_AFFINITY_UNION), or that union within the waiters' NUMA
 *     nodes (PROXYLOCK_AFFINITY_NODE); always within the process's
 *     cpuset (other CPUs are dropped; nothing left => B(T)'s CPUs).
 *   A SCHED_DEADLINE thread is never changed.
 *
 * Invariants (each thread record's fields are under its own lock; the
 * entry for lock L in T.held is written only under L's bucket lock):
 *  I1  T.held has an entry for L only while T owns L with PLK_WAITERS
 *      set, or is inside unlock(L) between releasing the word and
 *      returning; so when T holds no lock with blocked waiters (and is
 *      not mid-unlock), T.held is empty, E(T) = B(T) and the kernel's
 *      view equals B(T).
 *  I2  T.applied is what the last successful sched_* calls left in the
 *      kernel; calls are made only for fields where E(T) != T.applied.
 *  I3  A donation is applied to T only by a thread holding L's bucket
 *      lock having seen T's TID and PLK_WAITERS in L's word.  T cannot
 *      release L without that bucket lock (its one-CAS unlock fails while
 *      PLK_WAITERS is set), so the owner cannot change between reading
 *      the TID and the syscall.  A releaser withdraws its own entry
 *      after releasing the word and waking the next owner (nobody can
 *      lend to it through L any more) and before unlock returns; a
 *      non-owner's (lax) unlock withdraws the owner's entry under the
 *      bucket, before anyone can take L and be lent to through it.
 *  I4  B(T) is read from the kernel when T.held goes from empty to
 *      non-empty (T is not boosted then, so the kernel's view is B(T)),
 *      and by a waiter, of itself, before it queues unboosted.  A copy
 *      read less than PLK_BASE_TTL_NS (1 ms) before may stand in for the
 *      first read only to conclude that the lend changes nothing, so no
 *      call is ever made on a stale base.  Nothing is lent to a TID that
 *      is not a live thread of this process.
 *  I5  Lock order: a bucket lock (two only while a condvar moves its
 *      waiters onto a mutex queue, cond.c, in address order), then at
 *      most one record lock, then the registry's free-list lock (a
 *      leaf).  A chain walk drops one bucket before taking the next and
 *      revalidates (T still waits on L), as rt_mutex_adjust_prio_chain
 *      does; it is bounded by PROXYLOCK_CHAIN_MAX, so it never loops on
 *      a cycle.  (Still to move out from under these locks: the sched_*
 *      calls made here, and a new record's slab mmap.)
 */
#include <numa.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "donate.h"
#include "lockstat.h"
#include "probes.h"
#include "mutex.h"
#include "schedctl.h"
#include "stats.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* --- process-wide kinds ---------------------------------------------- */

unsigned proxylock_caps(void)
{
	return plk_sched_caps();
}

unsigned proxylock_donate_kinds(void)
{
	return plk_sched_caps() & plk_config()->donate;
}

unsigned plk_donate_lock_kinds(const proxylock_mutex_t *m)
{
	unsigned off = (m->__flags >> PLK_NODONATE_SHIFT) & PROXYLOCK_DONATE_ALL;

	return off == PROXYLOCK_DONATE_ALL ? 0 : proxylock_donate_kinds() & ~off;
}

/* --- folding waiters' contexts into a lend --------------------------- */

/* Rank of the non-RT policies: a lend may lift IDLE to BATCH to OTHER. */
static int fair_rank(uint32_t policy)
{
	return policy == SCHED_IDLE ? 0 : policy == SCHED_BATCH ? 1 : 2;
}

static void lend_init(struct plk_lend *l)
{
	memset(l, 0, sizeof(*l));
	l->ctx.nice = 20;               /* above any nice: min() identity */
	l->ctx.policy = SCHED_IDLE;     /* lowest fair rank */
}

/* Fold waiter context @w, for @kinds, into @l. */
static void lend_add(struct plk_lend *l, const struct plk_sched_ctx *w, unsigned kinds)
{
	l->kinds |= kinds;
	if (kinds & PROXYLOCK_DONATE_UCLAMP) {
		if (w->umin > l->ctx.umin)
			l->ctx.umin = w->umin;
		if (w->umax > l->ctx.umax)
			l->ctx.umax = w->umax;
	}
	if ((kinds & PROXYLOCK_DONATE_NICE) && !plk_sched_is_rt(w->policy)) {
		if (w->nice < l->ctx.nice)
			l->ctx.nice = w->nice;
		if (fair_rank(w->policy) > fair_rank(l->ctx.policy))
			l->ctx.policy = w->policy;
	}
	if ((kinds & PROXYLOCK_DONATE_RT) && plk_sched_is_rt(w->policy) &&
	    w->rt_prio > l->ctx.rt_prio) {
		l->ctx.rt_prio = w->rt_prio;
		l->rt_policy = w->policy;
	}
	if (kinds & PROXYLOCK_DONATE_AFFINITY)
		CPU_OR(&l->ctx.cpus, &l->ctx.cpus, &w->cpus);
}

static void lend_merge(struct plk_lend *into, const struct plk_lend *l)
{
	unsigned kinds = l->kinds & ~PROXYLOCK_DONATE_RT;

	lend_add(into, &l->ctx, kinds);
	if ((l->kinds & PROXYLOCK_DONATE_RT) && l->ctx.rt_prio > into->ctx.rt_prio) {
		into->ctx.rt_prio = l->ctx.rt_prio;
		into->rt_policy = l->rt_policy;
	}
	into->kinds |= l->kinds;
}

/* --- combining a lend with a base ------------------------------------ */

static void cpus_of_nodes(const cpu_set_t *cpus, cpu_set_t *out)
{
	struct bitmask *node_cpus = numa_allocate_cpumask();
	bool seen[1024] = { false };

	CPU_ZERO(out);
	for (int cpu = 0; cpu < CPU_SETSIZE && node_cpus; cpu++) {
		int node = CPU_ISSET(cpu, cpus) ? numa_node_of_cpu(cpu) : -1;

		if (node < 0 || node >= 1024 || seen[node])
			continue;
		seen[node] = true;
		if (numa_node_to_cpus(node, node_cpus) != 0)
			continue;
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (numa_bitmask_isbitset(node_cpus, c))
				CPU_SET(c, out);
	}
	if (node_cpus)
		numa_bitmask_free(node_cpus);
}

static void combine_affinity(const struct plk_sched_ctx *base, const cpu_set_t *lent,
                             cpu_set_t *out)
{
	cpu_set_t nodes;

	switch (__atomic_load_n(&plk_config()->affinity, __ATOMIC_RELAXED)) {
	case PROXYLOCK_AFFINITY_UNION:
		CPU_OR(out, &base->cpus, lent);
		break;
	case PROXYLOCK_AFFINITY_NODE:
		CPU_OR(out, &base->cpus, lent);
		cpus_of_nodes(lent, &nodes);
		CPU_AND(out, out, &nodes);
		break;
	default:
		*out = *lent;
	}
	CPU_AND(out, out, plk_sched_cpuset());
	if (CPU_COUNT(out) == 0)
		*out = base->cpus;
}

static void combine(const struct plk_sched_ctx *base, const struct plk_lend *l,
                    struct plk_sched_ctx *out)
{
	*out = *base;
	if (base->policy == SCHED_DEADLINE)
		return;
	if (l->kinds & PROXYLOCK_DONATE_UCLAMP) {
		out->umin = l->ctx.umin > base->umin ? l->ctx.umin : base->umin;
		out->umax = l->ctx.umax > base->umax ? l->ctx.umax : base->umax;
		if (out->umax < out->umin)
			out->umax = out->umin;
	}
	if ((l->kinds & PROXYLOCK_DONATE_RT) && l->ctx.rt_prio > 0 &&
	    (!plk_sched_is_rt(base->policy) || l->ctx.rt_prio > base->rt_prio)) {
		out->policy = l->rt_policy;
		out->rt_prio = l->ctx.rt_prio;
	}
	if ((l->kinds & PROXYLOCK_DONATE_NICE) && !plk_sched_is_rt(out->policy) &&
	    l->ctx.nice <= 19) {
		if (l->ctx.nice < out->nice)
			out->nice = l->ctx.nice;
		if (fair_rank(l->ctx.policy) > fair_rank(out->policy))
			out->policy = l->ctx.policy;
	}
	if ((l->kinds & PROXYLOCK_DONATE_AFFINITY) && CPU_COUNT(&l->ctx.cpus) > 0)
		combine_affinity(base, &l->ctx.cpus, &out->cpus);
}

/* --- a record's entries and the kernel ------------------------------- */

/* Count, process-wide and for @lock, the kinds a donation changed. */
static void count_lent(const void *lock, const struct plk_sched_ctx *before,
                       const struct plk_sched_ctx *now)
{
	unsigned kinds = 0;

	if (before->umin != now->umin || before->umax != now->umax) {
		plk_stat_inc(lent_uclamp);
		kinds |= PROXYLOCK_DONATE_UCLAMP;
	}
	if (!CPU_EQUAL(&before->cpus, &now->cpus)) {
		plk_stat_inc(lent_affinity);
		kinds |= PROXYLOCK_DONATE_AFFINITY;
	}
	if (before->nice != now->nice || (before->policy != now->policy &&
	                                  !plk_sched_is_rt(now->policy))) {
		plk_stat_inc(lent_nice);
		kinds |= PROXYLOCK_DONATE_NICE;
	}
	if (plk_sched_is_rt(now->policy) &&
	    (before->policy != now->policy || before->rt_prio != now->rt_prio)) {
		plk_stat_inc(lent_rt);
		kinds |= PROXYLOCK_DONATE_RT;
	}
	if (lock)
		plk_lockstat_lent(lock, kinds);
}

/* Is @tid a live thread of this process?  TIDs are system-wide: an
 * owner that exited holding a lock leaves its TID in the word, and the
 * TID may be reused elsewhere; we must never touch another process. */
static bool tid_is_ours(pid_t tid)
{
	return (uint32_t)tid == plk_tid() || syscall(SYS_tgkill, plk_pid(), tid, 0) == 0;
}

/* Recompute t->eff from t->base and t->held; apply.  t->lock held.
 * @lock: the lock whose waiters changed (for the per-lock counts), or
 * NULL.  Returns true if E(T) changed. */
static bool base_refresh(struct plk_thread *t);

static bool recompute(struct plk_thread *t, const void *lock)
{
	struct plk_sched_ctx eff, before = t->applied;
	struct plk_lend all;

	lend_init(&all);
	for (int i = 0; i < t->nheld; i++)
		lend_merge(&all, &t->held[i].lend);
	combine(&t->base, &all, &eff);
	if (plk_sched_equal(&eff, &t->eff))
		return false;
	if (t->base_unverified) {
		/* A call is due: read the base first (I4).  Nothing has been
		 * applied since the copy, so the kernel's view is B(T). */
		if (!base_refresh(t))
			return false;
		combine(&t->base, &all, &eff);
		if (plk_sched_equal(&eff, &t->eff))
			return false;
	}
	if (!tid_is_ours(t->tid))
		return false;
	t->eff = eff;
	if (plk_sched_apply(t->tid, &t->applied, &t->eff)) {
		const struct plk_sched_ctx *a = &t->applied;

		if (t->nheld) {
			plk_stat_inc(donations);
			count_lent(lock, &before, a);
			PLK_PROBE8(donate, lock, t->tid, plk_tid(), a->nice, a->rt_prio, a->umin,
			           a->umax, CPU_COUNT(&a->cpus));
		} else {
			plk_stat_inc(restores);
			PLK_PROBE6(restore, t->tid, a->nice, a->rt_prio, a->umin, a->umax,
			           CPU_COUNT(&a->cpus));
		}
	}
	return true;
}

/* Refresh B(T) from the kernel (I4).  t->lock held, t->held empty.
 * False if T is not (any longer) one of our threads. */
static bool base_refresh(struct plk_thread *t)
{
	if (!tid_is_ours(t->tid) || plk_sched_read(t->tid, &t->base) != 0)
		return false;
	t->applied = t->base;
	t->eff = t->base;
	t->base_ns = plk_now_ns();
	t->base_unverified = false;
	return true;
}

/*
 * Before the first lend to an unboosted T (I4): may the copy of B(T) we
 * hold stand in for a fresh read?  Only to conclude that @l changes
 * nothing, and only if it is younger than PLK_BASE_TTL_NS: then nothing
 * is applied, so a stale copy can at worst miss a boost for that long,
 * never clobber a setting.  This spares symmetric contention (every
 * lend a no-op) two syscalls per sleep.  t->lock held, t->held empty.
 */
static bool base_copy_suffices(const struct plk_thread *t, const struct plk_lend *l)
{
	struct plk_sched_ctx eff;

	if (t->base_ns == 0 || plk_now_ns() - t->base_ns > PLK_BASE_TTL_NS)
		return false;
	combine(&t->base, l, &eff);
	return plk_sched_equal(&eff, &t->base);
}

static int held_find(const struct plk_thread *t, const void *lock)
{
	for (int i = 0; i < t->nheld; i++)
		if (t->held[i].lock == lock)
			return i;
	return -1;
}

/* Set (l->kinds != 0) or clear t's entry for @lock; then recompute.
 * t->lock held.  Returns true if E(T) changed. */
static bool held_set(struct plk_thread *t, const void *lock, const struct plk_lend *l)
{
	int i = held_find(t, lock);

	if (l->kinds == 0) {
		if (i < 0)
			return false;
		t->held[i] = t->held[--t->nheld];
		return recompute(t, NULL);
	}
	if (i < 0) {
		if (t->nheld == PLK_HELD_MAX) {
			plk_stat_inc(chain_truncated);
			return false;
		}
		if (t->nheld == 0) {
			if (base_copy_suffices(t, l))
				t->base_unverified = true;  /* read before any call */
			else if (!base_refresh(t))
				return false;
		}
		i = t->nheld++;
		t->held[i].lock = lock;
	}
	t->held[i].lend = *l;
	return recompute(t, lock);
}

/* --- entry points ---------------------------------------------------- */

void plk_donate_waiter_refresh(struct plk_thread *self)
{
	plk_ilock_lock(&self->lock);
	if (self->nheld == 0)
		(void)base_refresh(self);
	plk_ilock_unlock(&self->lock);
}

bool plk_donate_update(struct plk_bucket *b, proxylock_mutex_t *m,
                       struct plk_thread **owner, proxylock_mutex_t **next)
{
	unsigned kinds = plk_donate_lock_kinds(m);
	uint32_t w = plk_word(m);
	struct plk_thread *t, *o;
	struct plk_lend lend;
	bool changed;

	if (!kinds || !(w & PLK_WAITERS) || (w & PLK_TID_MASK) == 0)
		return false;
	lend_init(&lend);
	plk_waitq_for_each(b, m, t) {
		plk_ilock_lock(&t->lock);
		lend_add(&lend, &t->eff, kinds);
		plk_ilock_unlock(&t->lock);
	}
	o = plk_thread_lock_tid(plk_owner_tid(w), true);
	if (!o)
		return false;
	changed = held_set(o, m, &lend);
	*owner = o;
	*next = plk_blocked_mutex(o);
	plk_thread_unlock(o);
	return changed;
}

void plk_donate_propagate(struct plk_thread *via, proxylock_mutex_t *next)
{
	for (int depth = 1; next; depth++) {
		struct plk_bucket *b;
		bool changed = false;

		if (depth >= PROXYLOCK_CHAIN_MAX) {
			plk_stat_inc(chain_truncated);
			return;
		}
		b = plk_waitq_lock(next);
		/* Revalidate: via may have stopped waiting since we looked. */
		if (__atomic_load_n(&via->blocked_on, __ATOMIC_ACQUIRE) == next) {
			plk_stat_inc(chain_steps);
			changed = plk_donate_update(b, next, &via, &next);
		}
		plk_waitq_unlock(b);
		if (!changed)
			return;
	}
}

void plk_donate_withdraw(struct plk_thread *self, const proxylock_mutex_t *m)
{
	struct plk_lend none = { .kinds = 0 };

	plk_ilock_lock(&self->lock);
	held_set(self, m, &none);
	plk_ilock_unlock(&self->lock);
}

void plk_donate_withdraw_tid(pid_t tid, const proxylock_mutex_t *m)
{
	struct plk_lend none = { .kinds = 0 };
	struct plk_thread *t = plk_thread_lock_tid(tid, false);

	if (!t)
		return;
	held_set(t, m, &none);
	plk_thread_unlock(t);
}

/* --- the application sets its own context ---------------------------- */

bool plk_donate_base_get(pid_t tid, struct plk_sched_ctx *out)
{
	struct plk_thread *t = plk_thread_lock_tid(tid, false);
	bool lent;

	if (!t)
		return false;
	if ((lent = t->nheld > 0))
		*out = t->base;
	plk_thread_unlock(t);
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

bool plk_donate_base_set(pid_t tid, unsigned fields, bool (*set)(void *), void *arg)
{
	struct plk_sched_ctx now;
	struct plk_thread *t;
	bool ok;

	/* Our own record is adopted (the common case: a thread setting its
	 * own context); another thread's, if created here, is recycled at
	 * the unlock below unless something is lent to it by then. */
	if ((uint32_t)tid == plk_tid() && (t = plk_thread_self()))
		plk_ilock_lock(&t->lock);
	else
		t = tid_is_ours(tid) ? plk_thread_lock_tid(tid, true) : NULL;
	if (!t)
		return set(arg);
	/* Under the record's lock no donation can slip in between the
	 * application's call and our adopting what it set. */
	ok = set(arg);
	if (ok && t->nheld > 0 && plk_sched_read(tid, &now) == 0) {
		base_adopt(&t->base, &now, fields);
		t->applied = now;
		t->eff = now;
		recompute(t, NULL);  /* lend again on top of the new base */
	}
	plk_thread_unlock(t);
	return ok;
}

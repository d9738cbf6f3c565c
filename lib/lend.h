/* SPDX-License-Identifier: MIT */
/*
 * lend.h - the lend algebra: what blocked waiters lend a lock's owner,
 * and the effective context that makes of the owner's base.  Pure
 * functions of plain values: no syscall, no lock, no global state, so
 * they run under internal locks and are unit-tested without privileges
 * (test/test_lend.c).  The rules are stated at the top of lend.c.
 */
#ifndef PLK_LEND_H
#define PLK_LEND_H

#include <stdint.h>

#include "schedctl.h"

/* What the waiters of one lock lend its owner: the kinds, and the fold of
 * the waiters' effective contexts for those kinds. */
struct plk_lend {
	unsigned kinds;          /* PROXYLOCK_DONATE_* present */
	uint32_t rt_policy;      /* SCHED_FIFO/RR of the top rt prio */
	uint64_t cpu_rank;       /* plk_lend_rank of the waiters in ctx.cpus */
	struct plk_sched_ctx ctx; /* ctx.policy: highest fair policy lent;
	                           * ctx.cpus: the CPUs of the top-ranked
	                           * waiters only (lend.c, the CPU rule) */
};

/* What a queue lends a thread (donate.c, "Two lends"): @all, the fold of
 * its waiters' E(W); @by_locks, the fold of their E_L(W), which is all
 * that passes on from there to a wait for work's wakers. */
struct plk_lends {
	struct plk_lend all;
	struct plk_lend by_locks;
};

/* Everything a combination depends on besides the base and the lend. */
struct plk_lend_env {
	int affinity;                        /* PROXYLOCK_AFFINITY_* */
	const cpu_set_t *allowed;            /* the process's cpuset */
	const struct plk_numa_map *numa;     /* for PROXYLOCK_AFFINITY_NODE */
	const struct plk_capacity_map *capacity; /* NULL: CPUs all alike */
};

/**
 * plk_lend_rank - the rank of context @c in the order a waiter must beat
 * to lend its CPUs (lend.c): greater is more urgent.  Equal ranks are
 * equal contexts for that order.
 */
PLK_HIDDEN uint64_t plk_lend_rank(const struct plk_sched_ctx *c);

/** plk_lend_init - an empty lend: the identity of plk_lend_add/merge. */
PLK_HIDDEN void plk_lend_init(struct plk_lend *l);

/**
 * plk_lend_add - fold waiter context @w, for @kinds, into @l; its CPUs
 * rank as @w itself (plk_lend_rank(@w)): right for a waiter that is lent
 * nothing, and for a fold's own context.
 */
PLK_HIDDEN void plk_lend_add(struct plk_lend *l, const struct plk_sched_ctx *w, unsigned kinds);

/*
 * The CPUs a thread passes on when it waits, and the rank of the thread
 * they belong to: a lender's (those it lent, within the cpuset) if E(T)'s
 * CPUs were lent, else T's own base CPUs at T's base rank.
 */
struct plk_cpu_owner {
	uint64_t rank;
	cpu_set_t cpus;
};

/**
 * plk_lend_add_ranked - plk_lend_add, but @w's CPUs are @own's: for a
 * waiter's effective context E(W), so that a chain never lends one
 * thread's CPUs with another's rank.
 */
PLK_HIDDEN void plk_lend_add_ranked(struct plk_lend *l, const struct plk_sched_ctx *w,
                                    const struct plk_cpu_owner *own, unsigned kinds);

/** plk_lends_init - both lends of @l empty. */
static inline void plk_lends_init(struct plk_lends *l)
{
	plk_lend_init(&l->all);
	plk_lend_init(&l->by_locks);
}

/** plk_lend_merge - fold lend @l (another lock's) into @into. */
PLK_HIDDEN void plk_lend_merge(struct plk_lend *into, const struct plk_lend *l);

/**
 * plk_lend_combine - E(T): base @base with lend @l on top, under @env's
 * affinity policy, cpuset and CPU capacities, into *@out.  CPUs are lent
 * only if @l's top-ranked waiters outrank @base and the capacity rule
 * allows.  A SCHED_DEADLINE base is returned unchanged.  If @own is not
 * NULL, it receives the CPUs T passes on when it waits (struct
 * plk_cpu_owner).
 */
PLK_HIDDEN void plk_lend_combine(const struct plk_sched_ctx *base, const struct plk_lend *l,
                                 const struct plk_lend_env *env, struct plk_sched_ctx *out,
                                 struct plk_cpu_owner *own);

/**
 * plk_lend_kinds_changed - the PROXYLOCK_DONATE_* kinds in which context
 * @now differs from @before (what a donation changed, for the counts).
 */
PLK_HIDDEN unsigned plk_lend_kinds_changed(const struct plk_sched_ctx *before,
                                           const struct plk_sched_ctx *now);

#endif /* PLK_LEND_H */

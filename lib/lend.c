/* SPDX-License-Identifier: MIT */
/*
 * lend.c - the lend algebra (see lend.h).
 *
 * A lend folds the effective contexts E(W) of the waiters blocked on one
 * lock, for the kinds that lock lends; the owner's effective context is
 * its base B(T) combined with the merge of the lends of every lock it
 * holds with waiters:
 *   uclamp_min = max, uclamp_max = max (and >= uclamp_min, so a low
 *     uclamp_max on the holder never caps the donated minimum);
 *   nice = min, non-RT policy = highest of IDLE < BATCH < OTHER;
 *   RT = highest SCHED_FIFO/SCHED_RR priority (FIFO before RR at equal
 *     priority), if above the holder's;
 *   CPUs = the waiters' CPUs (PROXYLOCK_AFFINITY_WAITERS), or their union
 *     with the holder's (UNION), or that union within the waiters' NUMA
 *     nodes (NODE); always within the process's cpuset (other CPUs are
 *     dropped; nothing left => B(T)'s CPUs);
 *   a SCHED_DEADLINE thread is never changed.
 * Since E(W) already holds what W itself is lent, chains compose.
 */
#include <string.h>

#include "lend.h"
#include "proxylock.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* Rank of the non-RT policies: a lend may lift IDLE to BATCH to OTHER. */
static int fair_rank(uint32_t policy)
{
	return policy == SCHED_IDLE ? 0 : policy == SCHED_BATCH ? 1 : 2;
}

/* Does RT @policy at @prio outrank what @l lends?  At equal priority
 * SCHED_FIFO outranks SCHED_RR, so that a fold or a merge does not depend
 * on the order of the waiters or of the locks. */
static bool rt_above(uint32_t policy, uint32_t prio, const struct plk_lend *l)
{
	return prio > l->ctx.rt_prio ||
	       (prio > 0 && prio == l->ctx.rt_prio && policy == SCHED_FIFO &&
	        l->rt_policy != SCHED_FIFO);
}

void plk_lend_init(struct plk_lend *l)
{
	memset(l, 0, sizeof(*l));
	l->ctx.nice = 20;               /* above any nice: min() identity */
	l->ctx.policy = SCHED_IDLE;     /* lowest fair rank */
}

void plk_lend_add(struct plk_lend *l, const struct plk_sched_ctx *w, unsigned kinds)
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
		/* Rank 2 is SCHED_OTHER's: a policy of that rank that is not a
		 * fair one (SCHED_DEADLINE) is lent as SCHED_OTHER. */
		if (fair_rank(w->policy) > fair_rank(l->ctx.policy))
			l->ctx.policy = fair_rank(w->policy) == 2 ? SCHED_OTHER : w->policy;
	}
	if ((kinds & PROXYLOCK_DONATE_RT) && plk_sched_is_rt(w->policy) &&
	    rt_above(w->policy, w->rt_prio, l)) {
		l->ctx.rt_prio = w->rt_prio;
		l->rt_policy = w->policy;
	}
	if (kinds & PROXYLOCK_DONATE_AFFINITY)
		CPU_OR(&l->ctx.cpus, &l->ctx.cpus, &w->cpus);
}

void plk_lend_merge(struct plk_lend *into, const struct plk_lend *l)
{
	/* The fold of a lend is a context whose policy field holds the fair
	 * policy: add it as one for every kind but RT, then RT by itself. */
	plk_lend_add(into, &l->ctx, l->kinds & ~PROXYLOCK_DONATE_RT);
	if ((l->kinds & PROXYLOCK_DONATE_RT) && rt_above(l->rt_policy, l->ctx.rt_prio, into)) {
		into->ctx.rt_prio = l->ctx.rt_prio;
		into->rt_policy = l->rt_policy;
	}
	into->kinds |= l->kinds;
}

/* The CPUs of the NUMA nodes of the CPUs in @cpus. */
static void cpus_of_nodes(const struct plk_numa_map *numa, const cpu_set_t *cpus, cpu_set_t *out)
{
	CPU_ZERO(out);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		int node = CPU_ISSET(cpu, cpus) ? numa->node_of[cpu] : -1;

		if (node >= 0 && node < numa->nnodes)
			CPU_OR(out, out, &numa->cpus_of[node]);
	}
}

static void combine_affinity(const struct plk_sched_ctx *base, const cpu_set_t *lent,
                             const struct plk_lend_env *env, cpu_set_t *out)
{
	cpu_set_t nodes;

	switch (env->affinity) {
	case PROXYLOCK_AFFINITY_UNION:
		CPU_OR(out, &base->cpus, lent);
		break;
	case PROXYLOCK_AFFINITY_NODE:
		CPU_OR(out, &base->cpus, lent);
		if (env->numa && env->numa->nnodes > 0) {
			cpus_of_nodes(env->numa, lent, &nodes);
			CPU_AND(out, out, &nodes);
		}
		break;
	default:
		*out = *lent;
	}
	if (env->allowed)
		CPU_AND(out, out, env->allowed);
	if (CPU_COUNT(out) == 0)
		*out = base->cpus;
}

void plk_lend_combine(const struct plk_sched_ctx *base, const struct plk_lend *l,
                      const struct plk_lend_env *env, struct plk_sched_ctx *out)
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
		combine_affinity(base, &l->ctx.cpus, env, &out->cpus);
}

unsigned plk_lend_kinds_changed(const struct plk_sched_ctx *before, const struct plk_sched_ctx *now)
{
	unsigned kinds = 0;

	if (before->umin != now->umin || before->umax != now->umax)
		kinds |= PROXYLOCK_DONATE_UCLAMP;
	if (!CPU_EQUAL(&before->cpus, &now->cpus))
		kinds |= PROXYLOCK_DONATE_AFFINITY;
	if (before->nice != now->nice ||
	    (before->policy != now->policy && !plk_sched_is_rt(now->policy)))
		kinds |= PROXYLOCK_DONATE_NICE;
	if (plk_sched_is_rt(now->policy) &&
	    (before->policy != now->policy || before->rt_prio != now->rt_prio))
		kinds |= PROXYLOCK_DONATE_RT;
	return kinds;
}

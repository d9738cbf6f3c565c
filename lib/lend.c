/* SPDX-License-Identifier: MIT */
/*
 * lend.c - the lend algebra (see lend.h).
 *
 * A lend folds the effective contexts E(W) of the waiters blocked on one
 * lock, for the kinds that lock lends; the owner's effective context is
 * its base B(T) combined with the merge of the lends of every lock it
 * holds with waiters.
 *
 * The rule: a lend never leaves the holder less able to run than its
 * base.  Per kind, "less able" and what is lent:
 *   uclamp_min = max, uclamp_max = max (and >= uclamp_min, so a low
 *     uclamp_max on the holder never caps the donated minimum);
 *   nice = min, non-RT policy = highest of IDLE < BATCH < OTHER (a
 *     SCHED_IDLE thread's nice is latent, below nice 19's weight: as a
 *     waiter it lends no nice better than 19; as a holder lifted out of
 *     IDLE it runs at the lent nice, not its latent one);
 *   RT = highest SCHED_FIFO/SCHED_RR priority (FIFO before RR at equal
 *     priority), if above the holder's;
 *   CPUs: only waiters that outrank the holder's base (plk_lend_rank,
 *     below) lend CPUs, and of those only the top-ranked ones (their
 *     union); they give the holder their CPUs (PROXYLOCK_AFFINITY_WAITERS),
 *     or their union with the holder's (UNION), or that union within
 *     their NUMA nodes (NODE); always within the process's cpuset (other
 *     CPUs are dropped; nothing left => B(T)'s CPUs).  Where CPU
 *     capacities differ, the result is never of lower best capacity than
 *     the best CPU B(T)'s own CPUs offer within the cpuset: a WAITERS lend
 *     that would be is refused (the holder keeps B(T)'s CPUs: WAITERS
 *     means only where the waiters run), and NODE gets those best CPUs of
 *     the base added back (UNION always has them).  Waiters that do not
 *     outrank the holder lend no CPUs, so a lend between equals changes
 *     nothing and costs no scheduler call;
 *   a SCHED_DEADLINE thread is never changed.
 * Every kind but CPUs only rises, so E(T) >= B(T) there by construction;
 * CPUs are not ordered by themselves, hence the rank.
 *
 * The rank order, most significant first: the scheduling class
 * (SCHED_DEADLINE > RT > the fair policies > SCHED_IDLE), then the RT
 * priority, then nice (lower first), then SCHED_OTHER over SCHED_BATCH,
 * then uclamp_min.  It is the order in which the kernel itself picks who
 * runs: class first; within RT, priority; within the fair class, weight
 * (nice; SCHED_IDLE's weight is below nice 19's, so it ranks as a class
 * below); BATCH differs from OTHER only in not preempting on wake-up, a
 * tie-breaker.  uclamp_min decides no pick, only frequency and placement,
 * so it ranks last: it is what makes a big waiter outrank an equally
 * nice small holder.  Nice is ignored for RT, DEADLINE and IDLE threads,
 * as the kernel ignores it.
 *
 * CPUs carry the rank of the thread they belong to, not of whoever holds
 * them.  A waiter W folds E(W) for every kind, so chains compose (E(W)
 * already holds what W itself is lent), but of CPUs it passes on those
 * of one owner with that owner's rank (struct plk_cpu_owner, kept beside
 * E(W)): the CPUs lent to W, within the cpuset, at their lender's rank,
 * if W was lent CPUs; else W's own, at W's base rank.  Under UNION and
 * NODE, W's own CPUs in E(W) are not passed on with the lender's rank.
 * So a thread raised by a nice or uclamp lend never lends its own CPUs
 * with its lender's rank, and a lender's CPUs reach the end of a chain
 * when they are the top-ranked ones at every hop and outrank the last
 * owner (a middle thread that outranks the lender passes on its own).
 *
 * Fold and merge are commutative and associative: every kind is a max
 * or a min, and the CPUs are a max of rank with the union at equal rank.
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

uint64_t plk_lend_rank(const struct plk_sched_ctx *c)
{
	uint64_t tier, prio = 0, nice = 0, other = 0;

	if (c->policy == SCHED_DEADLINE) {
		tier = 3;
	} else if (plk_sched_is_rt(c->policy)) {
		tier = 2;
		prio = c->rt_prio > 255 ? 255 : c->rt_prio;
	} else if (c->policy == SCHED_IDLE) {
		tier = 0;
	} else {
		int n = c->nice < -20 ? -20 : c->nice > 19 ? 19 : c->nice;

		tier = 1;
		nice = (uint64_t)(19 - n);  /* 0 (nice 19) .. 39 (nice -20) */
		other = c->policy != SCHED_BATCH;
	}
	return tier << 56 | prio << 48 | nice << 40 | other << 32 |
	       (c->umin > 1024 ? 1024 : c->umin);
}

/* Fold CPUs @cpus of waiters of rank @rank into @l: the top rank's only. */
static void add_cpus(struct plk_lend *l, uint64_t rank, const cpu_set_t *cpus)
{
	if (rank > l->cpu_rank) {
		l->cpu_rank = rank;
		l->ctx.cpus = *cpus;
	} else if (rank == l->cpu_rank) {
		CPU_OR(&l->ctx.cpus, &l->ctx.cpus, cpus);
	}
}

void plk_lend_init(struct plk_lend *l)
{
	memset(l, 0, sizeof(*l));
	l->ctx.nice = 20;               /* above any nice: min() identity */
	l->ctx.policy = SCHED_IDLE;     /* lowest fair rank */
}

void plk_lend_add_ranked(struct plk_lend *l, const struct plk_sched_ctx *w,
                         const struct plk_cpu_owner *own, unsigned kinds)
{
	l->kinds |= kinds;
	if (kinds & PROXYLOCK_DONATE_UCLAMP) {
		if (w->umin > l->ctx.umin)
			l->ctx.umin = w->umin;
		if (w->umax > l->ctx.umax)
			l->ctx.umax = w->umax;
	}
	if ((kinds & PROXYLOCK_DONATE_NICE) && !plk_sched_is_rt(w->policy)) {
		/* A SCHED_IDLE thread's nice is latent: its weight is below
		 * nice 19's, so it lends no nice better than 19 (and, lifted
		 * out of IDLE by a lend, takes the lent nice: combine). */
		int nice = w->policy == SCHED_IDLE && w->nice < 19 ? 19 : w->nice;

		if (nice < l->ctx.nice)
			l->ctx.nice = nice;
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
		add_cpus(l, own->rank, &own->cpus);
}

void plk_lend_add(struct plk_lend *l, const struct plk_sched_ctx *w, unsigned kinds)
{
	struct plk_cpu_owner own = { plk_lend_rank(w), w->cpus };

	plk_lend_add_ranked(l, w, &own, kinds);
}

void plk_lend_merge(struct plk_lend *into, const struct plk_lend *l)
{
	/* The fold of a lend is a context whose policy field holds the fair
	 * policy: add it as one for every kind but RT and CPUs, then those
	 * by themselves (the CPUs with their own rank, not the fold's). */
	plk_lend_add(into, &l->ctx, l->kinds & ~(PROXYLOCK_DONATE_RT | PROXYLOCK_DONATE_AFFINITY));
	if (l->kinds & PROXYLOCK_DONATE_AFFINITY)
		add_cpus(into, l->cpu_rank, &l->ctx.cpus);
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

/* The highest capacity of a CPU in @cpus (0: none known). */
static unsigned best_capacity(const struct plk_capacity_map *cap, const cpu_set_t *cpus)
{
	unsigned best = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, cpus) && cap->of[cpu] > best)
			best = cap->of[cpu];
	return best;
}

/* The best capacity that @base may use: of its CPUs within the cpuset,
 * or of its own CPUs if none is in it; those CPUs in *@own. */
static unsigned base_best_capacity(const struct plk_sched_ctx *base, const struct plk_lend_env *env,
                                   cpu_set_t *own)
{
	*own = base->cpus;
	if (env->allowed)
		CPU_AND(own, own, env->allowed);
	if (CPU_COUNT(own) == 0)
		*own = base->cpus;
	return best_capacity(env->capacity, own);
}

/*
 * The capacity rule, where capacities differ: if @out's best CPU is below
 * the best that @base may use, a `waiters` lend is refused (false: the
 * holder keeps its own CPUs; its meaning is "only where the waiters
 * run", and those are all slower), and a `node` lend gets those best CPUs
 * of the base added back (a `union` always holds them).
 */
static bool keep_best_capacity(const struct plk_sched_ctx *base, const struct plk_lend_env *env,
                               cpu_set_t *out)
{
	const struct plk_capacity_map *cap = env->capacity;
	cpu_set_t own;
	unsigned best = base_best_capacity(base, env, &own);

	if (best_capacity(cap, out) >= best)
		return true;
	if (env->affinity == PROXYLOCK_AFFINITY_WAITERS)
		return false;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &own) && cap->of[cpu] == best)
			CPU_SET(cpu, out);
	return true;
}

/* @base's CPUs under @lent, by @env's policy, into *@out; false (and *@out
 * untouched) if the capacity rule refuses the lend. */
static bool combine_affinity(const struct plk_sched_ctx *base, const cpu_set_t *lent,
                             const struct plk_lend_env *env, cpu_set_t *out)
{
	cpu_set_t cpus, nodes;

	switch (env->affinity) {
	case PROXYLOCK_AFFINITY_UNION:
		CPU_OR(&cpus, &base->cpus, lent);
		break;
	case PROXYLOCK_AFFINITY_NODE:
		CPU_OR(&cpus, &base->cpus, lent);
		if (env->numa && env->numa->nnodes > 0) {
			cpus_of_nodes(env->numa, lent, &nodes);
			CPU_AND(&cpus, &cpus, &nodes);
		}
		break;
	default:
		cpus = *lent;
	}
	if (env->allowed)
		CPU_AND(&cpus, &cpus, env->allowed);
	if (CPU_COUNT(&cpus) == 0)
		return false;
	if (env->capacity && env->capacity->differ && !keep_best_capacity(base, env, &cpus))
		return false;
	*out = cpus;
	return true;
}

/* What T passes on of CPUs lent to it: the lent ones, within the cpuset. */
static void lent_cpus_owned(const struct plk_lend *l, const struct plk_lend_env *env,
                            struct plk_cpu_owner *own)
{
	own->rank = l->cpu_rank;
	own->cpus = l->ctx.cpus;
	if (env->allowed)
		CPU_AND(&own->cpus, &own->cpus, env->allowed);
}

void plk_lend_combine(const struct plk_sched_ctx *base, const struct plk_lend *l,
                      const struct plk_lend_env *env, struct plk_sched_ctx *out,
                      struct plk_cpu_owner *own)
{
	uint64_t base_rank = plk_lend_rank(base);

	*out = *base;
	if (own) {
		own->rank = base_rank;
		own->cpus = base->cpus;
	}
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
		bool lifted = fair_rank(l->ctx.policy) > fair_rank(out->policy);

		/* A SCHED_IDLE base's nice is latent: lifted out of IDLE, the
		 * holder runs at the lent nice, never at its own. */
		if (l->ctx.nice < out->nice || (lifted && out->policy == SCHED_IDLE))
			out->nice = l->ctx.nice;
		if (lifted)
			out->policy = l->ctx.policy;
	}
	if ((l->kinds & PROXYLOCK_DONATE_AFFINITY) && CPU_COUNT(&l->ctx.cpus) > 0 &&
	    l->cpu_rank > base_rank && combine_affinity(base, &l->ctx.cpus, env, &out->cpus) &&
	    own)
		lent_cpus_owned(l, env, own);
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

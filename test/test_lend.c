/* SPDX-License-Identifier: MIT */
/*
 * test_lend.c - the lend algebra (lib/lend.c) as pure functions of plain
 * values: every policy, every combination rule, merges, chains, the
 * cpuset clipping and the NUMA-node policy.  No threads, no syscalls, no
 * privileges: contexts are built by hand and compared field by field.
 * Linked against the internal archive to reach plk_lend_*.
 */
#include "helpers.h"
#include "lend.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

#define U PROXYLOCK_DONATE_UCLAMP
#define A PROXYLOCK_DONATE_AFFINITY
#define N PROXYLOCK_DONATE_NICE
#define R PROXYLOCK_DONATE_RT
#define ALL PROXYLOCK_DONATE_ALL

/* --- building and comparing values ----------------------------------- */

/* A CPU set from a list of CPUs ended by -1. */
static cpu_set_t cpus_(const int *list)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	for (; *list >= 0; list++)
		CPU_SET(*list, &s);
	return s;
}
#define CPUS(...) cpus_((const int[]){ __VA_ARGS__, -1 })
#define NOCPUS cpus_((const int[]){ -1 })

static struct plk_sched_ctx fair(uint32_t policy, int nice)
{
	struct plk_sched_ctx c;

	memset(&c, 0, sizeof(c));
	c.policy = policy;
	c.nice = nice;
	c.umax = 1024;
	CPU_SET(0, &c.cpus);
	return c;
}

static struct plk_sched_ctx rt(uint32_t policy, uint32_t prio)
{
	struct plk_sched_ctx c = fair(policy, 0);

	c.rt_prio = prio;
	return c;
}

static struct plk_sched_ctx with_uclamp(struct plk_sched_ctx c, uint32_t umin, uint32_t umax)
{
	c.umin = umin;
	c.umax = umax;
	return c;
}

static struct plk_sched_ctx with_cpus(struct plk_sched_ctx c, cpu_set_t cpus)
{
	c.cpus = cpus;
	return c;
}

static const char *policy_name(uint32_t p)
{
	switch (p) {
	case SCHED_OTHER: return "OTHER";
	case SCHED_FIFO: return "FIFO";
	case SCHED_RR: return "RR";
	case SCHED_BATCH: return "BATCH";
	case SCHED_IDLE: return "IDLE";
	case SCHED_DEADLINE: return "DEADLINE";
	default: return "?";
	}
}

/* "{0-3,5}" */
static void cpus_str(const cpu_set_t *s, char *buf, size_t len)
{
	size_t n = 0;
	bool first = true;

	n += (size_t)snprintf(buf + n, len - n, "{");
	for (int c = 0; c < CPU_SETSIZE && n < len; c++) {
		int e = c;

		if (!CPU_ISSET(c, s))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, s))
			e++;
		if (e == c)
			n += (size_t)snprintf(buf + n, len - n, "%s%d", first ? "" : ",", c);
		else
			n += (size_t)snprintf(buf + n, len - n, "%s%d-%d", first ? "" : ",", c, e);
		first = false;
		c = e;
	}
	if (n < len)
		snprintf(buf + n, len - n, "}");
}

/* A readable diff of every field of @got against @want; "" if equal. */
static void ctx_diff(const struct plk_sched_ctx *got, const struct plk_sched_ctx *want, char *buf,
                     size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
#define DIFF(field, fmt, g, w)                                                               \
	do {                                                                                 \
		if (n < len)                                                                 \
			n += (size_t)snprintf(buf + n, len - n, "\n  %-7s got " fmt ", want " fmt, \
			                      field, g, w);                                       \
	} while (0)
	if (got->policy != want->policy)
		DIFF("policy", "%s", policy_name(got->policy), policy_name(want->policy));
	if (got->nice != want->nice)
		DIFF("nice", "%d", got->nice, want->nice);
	if (got->rt_prio != want->rt_prio)
		DIFF("rt_prio", "%u", got->rt_prio, want->rt_prio);
	if (got->umin != want->umin)
		DIFF("umin", "%u", got->umin, want->umin);
	if (got->umax != want->umax)
		DIFF("umax", "%u", got->umax, want->umax);
	if (got->flags != want->flags)
		DIFF("flags", "%#llx", (unsigned long long)got->flags,
		     (unsigned long long)want->flags);
	if (!CPU_EQUAL(&got->cpus, &want->cpus)) {
		char g[256], w[256];

		cpus_str(&got->cpus, g, sizeof(g));
		cpus_str(&want->cpus, w, sizeof(w));
		DIFF("cpus", "%s", g, w);
	}
#undef DIFF
}

#define assert_ctx_eq(got, want, ...)                                                \
	do {                                                                         \
		char diff_[1024], what_[256];                                        \
		ctx_diff((got), (want), diff_, sizeof(diff_));                       \
		snprintf(what_, sizeof(what_), __VA_ARGS__);                         \
		ck_assert_msg(diff_[0] == '\0', "%s: contexts differ:%s", what_, diff_); \
	} while (0)

static void assert_lend_eq_(const struct plk_lend *got, const struct plk_lend *want,
                            const char *what)
{
	char diff[1024];

	ck_assert_msg(got->kinds == want->kinds, "%s: lend kinds got %#x, want %#x", what,
	              got->kinds, want->kinds);
	ck_assert_msg(got->cpu_rank == want->cpu_rank, "%s: lend cpu_rank got %#llx, want %#llx",
	              what, (unsigned long long)got->cpu_rank, (unsigned long long)want->cpu_rank);
	ck_assert_msg(got->ctx.rt_prio == 0 || got->rt_policy == want->rt_policy,
	              "%s: lend rt_policy got %s, want %s", what, policy_name(got->rt_policy),
	              policy_name(want->rt_policy));
	ctx_diff(&got->ctx, &want->ctx, diff, sizeof(diff));
	ck_assert_msg(diff[0] == '\0', "%s: lend contexts differ:%s", what, diff);
}
#define assert_lend_eq(got, want, ...)                                               \
	do {                                                                         \
		char what_[256];                                                     \
		snprintf(what_, sizeof(what_), __VA_ARGS__);                         \
		assert_lend_eq_((got), (want), what_);                               \
	} while (0)

/* The lend of one lock: @n waiters folded for @kinds. */
static struct plk_lend lend_of(const struct plk_sched_ctx *w, int n, unsigned kinds)
{
	struct plk_lend l;

	plk_lend_init(&l);
	for (int i = 0; i < n; i++)
		plk_lend_add(&l, &w[i], kinds);
	return l;
}

static const struct plk_lend_env env_waiters = { .affinity = PROXYLOCK_AFFINITY_WAITERS };

/* E = combine(base, lend of @n waiters for @kinds), WAITERS affinity, no cpuset. */
static struct plk_sched_ctx lent(const struct plk_sched_ctx *base, const struct plk_sched_ctx *w,
                                 int n, unsigned kinds)
{
	struct plk_lend l = lend_of(w, n, kinds);
	struct plk_sched_ctx out;

	plk_lend_combine(base, &l, &env_waiters, &out, NULL);
	return out;
}

static struct plk_sched_ctx combine_env(const struct plk_sched_ctx *base, const struct plk_lend *l,
                                        const struct plk_lend_env *env)
{
	struct plk_sched_ctx out;

	/* Garbage in *out must not leak into the result. */
	memset(&out, 0xa5, sizeof(out));
	plk_lend_combine(base, l, env, &out, NULL);
	return out;
}

/* --- uclamp ---------------------------------------------------------- */

START_TEST(uclamp_min_lent_is_the_max_of_the_waiters_and_the_base)
{
	struct plk_sched_ctx base = with_uclamp(fair(SCHED_OTHER, 0), 300, 1024);
	struct plk_sched_ctx w[3] = {
		with_uclamp(fair(SCHED_OTHER, 0), 100, 1024),
		with_uclamp(fair(SCHED_OTHER, 0), 700, 1024),
		with_uclamp(fair(SCHED_OTHER, 0), 500, 1024),
	};
	struct plk_sched_ctx want = with_uclamp(base, 700, 1024);
	struct plk_sched_ctx got = lent(&base, w, 3, U);

	assert_ctx_eq(&got, &want, "waiters 100,700,500 on base 300");
	/* Waiters all below the base: the base's minimum stays. */
	got = lent(&base, w, 1, U);
	assert_ctx_eq(&got, &base, "waiter 100 on base 300");
	/* The order of the waiters does not matter. */
	struct plk_sched_ctx rev[3] = { w[2], w[1], w[0] };
	got = lent(&base, rev, 3, U);
	assert_ctx_eq(&got, &want, "waiters 500,700,100 on base 300");
}
END_TEST

START_TEST(uclamp_max_lent_is_the_max_of_the_waiters_and_the_base)
{
	struct plk_sched_ctx base = with_uclamp(fair(SCHED_OTHER, 0), 0, 400);
	struct plk_sched_ctx w[2] = {
		with_uclamp(fair(SCHED_OTHER, 0), 0, 600),
		with_uclamp(fair(SCHED_OTHER, 0), 0, 200),
	};
	struct plk_sched_ctx want = with_uclamp(base, 0, 600);
	struct plk_sched_ctx got = lent(&base, w, 2, U);

	assert_ctx_eq(&got, &want, "umax 600,200 on base 400");
	/* A waiter's lower maximum never lowers the holder's. */
	got = lent(&base, &w[1], 1, U);
	assert_ctx_eq(&got, &base, "umax 200 on base 400");
}
END_TEST

START_TEST(a_low_uclamp_max_on_the_holder_never_caps_the_donated_minimum)
{
	/* Holder capped at 100; the waiter asks for at least 800 but itself
	 * has a maximum (500) below that minimum... */
	struct plk_sched_ctx base = with_uclamp(fair(SCHED_OTHER, 0), 0, 100);
	struct plk_sched_ctx w = with_uclamp(fair(SCHED_OTHER, 0), 800, 500);
	struct plk_sched_ctx want = with_uclamp(base, 800, 800);
	struct plk_sched_ctx got = lent(&base, &w, 1, U);

	/* ... the result's maximum is raised to the lent minimum. */
	assert_ctx_eq(&got, &want, "umin 800 on a holder capped at 100");
	ck_assert_uint_ge(got.umax, got.umin);
	/* A lent maximum above the minimum is kept as it is. */
	w = with_uclamp(fair(SCHED_OTHER, 0), 800, 900);
	want = with_uclamp(base, 800, 900);
	got = lent(&base, &w, 1, U);
	assert_ctx_eq(&got, &want, "umin 800 umax 900 on a holder capped at 100");
}
END_TEST

/* --- nice and the fair policies --------------------------------------- */

START_TEST(nice_lent_is_the_min_and_never_raises_the_holders_nice)
{
	struct plk_sched_ctx base = fair(SCHED_OTHER, 5);
	struct plk_sched_ctx w[3] = { fair(SCHED_OTHER, 10), fair(SCHED_OTHER, -3),
		                      fair(SCHED_OTHER, 0) };
	struct plk_sched_ctx want = fair(SCHED_OTHER, -3);
	struct plk_sched_ctx got = lent(&base, w, 3, N);

	assert_ctx_eq(&got, &want, "nice 10,-3,0 on base 5");
	/* A nicer (higher) waiter never raises the holder's nice. */
	got = lent(&base, w, 1, N);
	assert_ctx_eq(&got, &base, "nice 10 on base 5");
	/* The extremes. */
	base = fair(SCHED_OTHER, 19);
	w[0] = fair(SCHED_OTHER, -20);
	want = fair(SCHED_OTHER, -20);
	got = lent(&base, w, 1, N);
	assert_ctx_eq(&got, &want, "nice -20 on base 19");
	w[0] = fair(SCHED_OTHER, 19);
	got = lent(&base, w, 1, N);
	assert_ctx_eq(&got, &base, "nice 19 on base 19");
	base = fair(SCHED_IDLE, 19);
	w[0] = fair(SCHED_OTHER, 19);
	want = fair(SCHED_OTHER, 19);
	got = lent(&base, w, 1, N);
	assert_ctx_eq(&got, &want, "OTHER nice 19 on IDLE nice 19");
}
END_TEST

START_TEST(fair_policy_is_lifted_idle_to_batch_to_other_never_lowered)
{
	static const uint32_t order[] = { SCHED_IDLE, SCHED_BATCH, SCHED_OTHER };

	for (int b = 0; b < 3; b++) {
		for (int x = 0; x < 3; x++) {
			for (int y = 0; y < 3; y++) {
				struct plk_sched_ctx base = fair(order[b], 0);
				struct plk_sched_ctx w[2] = { fair(order[x], 0), fair(order[y], 0) };
				int top = b > x ? (b > y ? b : y) : (x > y ? x : y);
				struct plk_sched_ctx want = fair(order[top], 0);
				struct plk_sched_ctx got = lent(&base, w, 2, N);

				assert_ctx_eq(&got, &want, "waiters %s,%s on %s",
				              policy_name(order[x]), policy_name(order[y]),
				              policy_name(order[b]));
			}
		}
	}
}
END_TEST

/* --- RT ---------------------------------------------------------------- */

START_TEST(rt_priority_is_lent_only_if_above_the_holders)
{
	struct plk_sched_ctx w[3] = { rt(SCHED_FIFO, 10), rt(SCHED_RR, 30), rt(SCHED_FIFO, 20) };
	struct plk_sched_ctx base, want, got;

	/* A fair holder takes the top waiter's priority and policy. */
	base = fair(SCHED_OTHER, 0);
	want = rt(SCHED_RR, 30);
	got = lent(&base, w, 3, R);
	assert_ctx_eq(&got, &want, "FIFO 10, RR 30, FIFO 20 on OTHER");
	base = fair(SCHED_IDLE, 7);
	want = rt(SCHED_FIFO, 10);
	want.nice = 7;
	got = lent(&base, w, 1, R);
	assert_ctx_eq(&got, &want, "FIFO 10 on IDLE nice 7");

	/* An RT holder: only a higher priority is lent. */
	base = rt(SCHED_FIFO, 20);
	got = lent(&base, &w[0], 1, R);
	assert_ctx_eq(&got, &base, "FIFO 10 on FIFO 20");
	got = lent(&base, &w[2], 1, R);
	assert_ctx_eq(&got, &base, "FIFO 20 on FIFO 20");
	got = lent(&base, w, 3, R);
	want = rt(SCHED_RR, 30);
	assert_ctx_eq(&got, &want, "RR 30 on FIFO 20");
	base = rt(SCHED_RR, 30);
	struct plk_sched_ctx fifo30 = rt(SCHED_FIFO, 30);
	got = lent(&base, &fifo30, 1, R);
	assert_ctx_eq(&got, &base, "FIFO 30 on RR 30: not above, policy kept");
	base = rt(SCHED_RR, 5);
	want = rt(SCHED_FIFO, 99);
	struct plk_sched_ctx top = rt(SCHED_FIFO, 99);
	got = lent(&base, &top, 1, R);
	assert_ctx_eq(&got, &want, "FIFO 99 on RR 5");
}
END_TEST

START_TEST(equal_rt_priorities_lend_the_same_policy_in_any_order)
{
	struct plk_sched_ctx ab[2] = { rt(SCHED_FIFO, 40), rt(SCHED_RR, 40) };
	struct plk_sched_ctx ba[2] = { ab[1], ab[0] };
	struct plk_sched_ctx base = fair(SCHED_OTHER, 0);
	struct plk_sched_ctx g1 = lent(&base, ab, 2, R), g2 = lent(&base, ba, 2, R);
	struct plk_lend la = lend_of(&ab[0], 1, R), lb = lend_of(&ab[1], 1, R);
	struct plk_lend m1 = la, m2 = lb;

	assert_ctx_eq(&g1, &g2, "waiters FIFO 40,RR 40 vs RR 40,FIFO 40");
	plk_lend_merge(&m1, &lb);
	plk_lend_merge(&m2, &la);
	assert_lend_eq(&m1, &m2, "merge(FIFO 40, RR 40) vs merge(RR 40, FIFO 40)");
}
END_TEST

START_TEST(rt_waiters_lend_no_nice_and_fair_waiters_lend_no_rt)
{
	struct plk_sched_ctx base = fair(SCHED_BATCH, 10);
	struct plk_sched_ctx w = rt(SCHED_FIFO, 50);
	struct plk_sched_ctx got;

	/* An RT waiter (nice -15 as far as the value goes) on a lock lending
	 * nice only: neither its nice nor its policy reaches the holder. */
	w.nice = -15;
	got = lent(&base, &w, 1, N);
	assert_ctx_eq(&got, &base, "RT waiter, nice-only lock");
	/* A fair waiter on a lock lending RT only: nothing. */
	w = fair(SCHED_OTHER, -15);
	got = lent(&base, &w, 1, R);
	assert_ctx_eq(&got, &base, "fair waiter, RT-only lock");
	/* A fair waiter with a stray rt_prio lends no RT either. */
	w.rt_prio = 50;
	got = lent(&base, &w, 1, R);
	assert_ctx_eq(&got, &base, "fair waiter with rt_prio 50, RT-only lock");
	got = lent(&base, &w, 1, R | N);
	struct plk_sched_ctx want = fair(SCHED_OTHER, -15);
	assert_ctx_eq(&got, &want, "fair waiter with rt_prio 50, RT+nice lock");
}
END_TEST

START_TEST(nice_is_not_lent_to_a_thread_that_is_rt_by_its_base_or_by_the_lend)
{
	struct plk_sched_ctx w[2] = { rt(SCHED_RR, 60), fair(SCHED_OTHER, -20) };
	struct plk_sched_ctx base = rt(SCHED_FIFO, 10), want, got;

	base.nice = 3;
	got = lent(&base, &w[1], 1, N | R);
	assert_ctx_eq(&got, &base, "nice -20 on FIFO 10");
	/* Boosted to RT by one waiter, lent no nice by the other. */
	base = fair(SCHED_IDLE, 3);
	want = rt(SCHED_RR, 60);
	want.nice = 3;
	got = lent(&base, w, 2, N | R);
	assert_ctx_eq(&got, &want, "RR 60 + nice -20 on IDLE nice 3");
}
END_TEST

/* --- deadline ----------------------------------------------------------- */

START_TEST(a_deadline_holder_is_never_changed)
{
	struct plk_sched_ctx base = fair(SCHED_DEADLINE, 0);
	struct plk_sched_ctx w[3] = {
		with_cpus(with_uclamp(rt(SCHED_FIFO, 99), 1024, 1024), CPUS(1, 2)),
		with_cpus(with_uclamp(fair(SCHED_OTHER, -20), 900, 1024), CPUS(3)),
		fair(SCHED_BATCH, -5),
	};
	struct plk_sched_ctx got;

	base.umin = 10;
	base.umax = 20;
	base.flags = 1;
	got = lent(&base, w, 3, ALL);
	assert_ctx_eq(&got, &base, "every kind lent to a DEADLINE holder");
	for (int pol = PROXYLOCK_AFFINITY_WAITERS; pol <= PROXYLOCK_AFFINITY_NODE; pol++) {
		struct plk_lend l = lend_of(w, 3, ALL);
		cpu_set_t allowed = CPUS(0, 1, 2, 3);
		struct plk_lend_env env = { .affinity = pol, .allowed = &allowed };

		got = combine_env(&base, &l, &env);
		assert_ctx_eq(&got, &base, "DEADLINE holder, affinity policy %d", pol);
	}
}
END_TEST

/* A deadline waiter's context, as sched_getattr reads it (nice 0, no RT
 * priority), never turns a fair holder into a SCHED_DEADLINE thread with
 * no runtime, deadline or period. */
START_TEST(a_deadline_waiter_never_lends_its_policy)
{
	static const uint32_t bases[] = { SCHED_IDLE, SCHED_BATCH, SCHED_OTHER };
	struct plk_sched_ctx w = fair(SCHED_DEADLINE, 0);

	for (int b = 0; b < 3; b++) {
		struct plk_sched_ctx base = fair(bases[b], 10);
		struct plk_sched_ctx got = lent(&base, &w, 1, ALL);

		ck_assert_msg(got.policy == SCHED_IDLE || got.policy == SCHED_BATCH ||
		                      got.policy == SCHED_OTHER,
		              "a DEADLINE waiter made a %s holder %s", policy_name(bases[b]),
		              policy_name(got.policy));
		ck_assert_int_le(got.nice, 10);
		ck_assert_uint_eq(got.rt_prio, 0);
	}
}
END_TEST

/* --- kinds ------------------------------------------------------------- */

START_TEST(kinds_not_lent_by_the_lock_leave_the_base_unchanged)
{
	/* One waiter that would change every field; a base it would change. */
	struct plk_sched_ctx base = with_cpus(with_uclamp(fair(SCHED_IDLE, 10), 100, 200), CPUS(0));
	struct plk_sched_ctx wf = with_cpus(with_uclamp(fair(SCHED_OTHER, -10), 900, 1000), CPUS(5));
	struct plk_sched_ctx wr = with_cpus(with_uclamp(rt(SCHED_FIFO, 40), 900, 1000), CPUS(5));

	for (unsigned kinds = 0; kinds <= ALL; kinds++) {
		struct plk_sched_ctx want = base, got;

		if (kinds & U)
			want = with_uclamp(want, 900, 1000);
		if (kinds & A)
			want.cpus = CPUS(5);
		if (kinds & N) {
			want.policy = SCHED_OTHER;
			want.nice = -10;
		}
		got = lent(&base, &wf, 1, kinds);
		assert_ctx_eq(&got, &want, "fair waiter, kinds %#x", kinds);

		want = base;
		if (kinds & U)
			want = with_uclamp(want, 900, 1000);
		if (kinds & A)
			want.cpus = CPUS(5);
		if (kinds & R) {
			want.policy = SCHED_FIFO;
			want.rt_prio = 40;
		}
		got = lent(&base, &wr, 1, kinds);
		assert_ctx_eq(&got, &want, "RT waiter, kinds %#x", kinds);
	}
}
END_TEST

/* --- affinity ---------------------------------------------------------- */

/* The holder nice 0, its waiters nice -1: they outrank it, so the policy
 * alone decides where it runs. */
static struct plk_sched_ctx affinity_of(int policy, cpu_set_t base_cpus, const cpu_set_t *lent_cpus,
                                        int nlent, const cpu_set_t *allowed,
                                        const struct plk_numa_map *numa)
{
	struct plk_sched_ctx base = with_cpus(fair(SCHED_OTHER, 0), base_cpus);
	struct plk_lend_env env = { .affinity = policy, .allowed = allowed, .numa = numa };
	struct plk_lend l;

	plk_lend_init(&l);
	for (int i = 0; i < nlent; i++) {
		struct plk_sched_ctx w = with_cpus(fair(SCHED_OTHER, -1), lent_cpus[i]);

		plk_lend_add(&l, &w, A);
	}
	return combine_env(&base, &l, &env);
}

#define assert_cpus(got, want, ...)                                                  \
	do {                                                                         \
		cpu_set_t want_ = (want);                                            \
		struct plk_sched_ctx g_ = (got), w_ = g_;                             \
		w_.cpus = want_;                                                     \
		assert_ctx_eq(&g_, &w_, __VA_ARGS__);                                \
	} while (0)

START_TEST(waiters_policy_gives_the_waiters_cpus)
{
	cpu_set_t w[2] = { CPUS(2, 3), CPUS(3, 6) };

	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_WAITERS, CPUS(0, 1), w, 2, NULL, NULL),
	            CPUS(2, 3, 6), "waiters {2,3},{3,6} on {0,1}");
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_WAITERS, CPUS(0, 1), w, 1, NULL, NULL),
	            CPUS(2, 3), "waiter {2,3} on {0,1}");
	/* An unknown policy value behaves as WAITERS, the default. */
	assert_cpus(affinity_of(7, CPUS(0, 1), w, 2, NULL, NULL), CPUS(2, 3, 6),
	            "unknown policy 7");
	/* Far CPUs count as well as near ones. */
	cpu_set_t far = CPUS(CPU_SETSIZE - 1);
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_WAITERS, CPUS(0), &far, 1, NULL, NULL), far,
	            "waiter on CPU %d", CPU_SETSIZE - 1);
}
END_TEST

START_TEST(union_policy_adds_the_holders_cpus)
{
	cpu_set_t w[2] = { CPUS(2, 3), CPUS(3, 6) };

	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_UNION, CPUS(0, 1), w, 2, NULL, NULL),
	            CPUS(0, 1, 2, 3, 6), "waiters {2,3},{3,6} on {0,1}");
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_UNION, CPUS(2, 3), w, 1, NULL, NULL),
	            CPUS(2, 3), "waiter {2,3} on {2,3}");
}
END_TEST

/* Two nodes: 0-3 and 4-7; CPU 8 of no known node; CPU 9 of node 5, which
 * a 2-node map does not have. */
static struct plk_numa_map two_nodes(void)
{
	struct plk_numa_map m;

	memset(&m, 0, sizeof(m));
	m.nnodes = 2;
	for (int c = 0; c < CPU_SETSIZE; c++)
		m.node_of[c] = -1;
	for (int c = 0; c < 8; c++) {
		m.node_of[c] = (int16_t)(c / 4);
		CPU_SET(c, &m.cpus_of[c / 4]);
	}
	m.node_of[9] = 5;
	return m;
}

START_TEST(node_policy_keeps_the_union_within_the_waiters_nodes)
{
	struct plk_numa_map numa = two_nodes();
	cpu_set_t w[2] = { CPUS(5), CPUS(1) };

	/* Holder on node 0, waiter on node 1: the holder's CPUs go. */
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 1), w, 1, NULL, &numa), CPUS(5),
	            "waiter {5} on {0,1}");
	/* Holder's CPU on the waiter's node: kept, with the waiter's. */
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 4), w, 1, NULL, &numa), CPUS(4, 5),
	            "waiter {5} on {0,4}");
	/* Waiters on both nodes: the whole union. */
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 6, 8), w, 2, NULL, &numa),
	            CPUS(0, 1, 5, 6), "waiters {5},{1} on {0,6,8}");
	/* Only the waiters' nodes count, not every CPU of them. */
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(2), &w[1], 1, NULL, &numa),
	            CPUS(1, 2), "waiter {1} on {2}");
	/* A waiter CPU of no node, or of a node the map lacks, adds no node. */
	cpu_set_t w158 = CPUS(1, 5, 8);
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 4), &w158, 1, NULL, &numa),
	            CPUS(0, 1, 4, 5), "waiter {1,5,8} on {0,4}");
	cpu_set_t w19 = CPUS(1, 9);
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 4), &w19, 1, NULL, &numa),
	            CPUS(0, 1), "waiter {1,9} on {0,4}");
}
END_TEST

START_TEST(node_policy_without_numa_information_is_the_union)
{
	struct plk_numa_map none;
	cpu_set_t w = CPUS(5);

	memset(&none, 0, sizeof(none));
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 1), &w, 1, NULL, NULL),
	            CPUS(0, 1, 5), "no map");
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 1), &w, 1, NULL, &none),
	            CPUS(0, 1, 5), "a map of 0 nodes");
}
END_TEST

START_TEST(cpus_outside_the_cpuset_are_dropped)
{
	cpu_set_t allowed = CPUS(1, 2, 3, 4, 5);
	cpu_set_t w[2] = { CPUS(0, 2), CPUS(5, 7) };
	struct plk_numa_map numa = two_nodes();

	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_WAITERS, CPUS(1), w, 2, &allowed, NULL),
	            CPUS(2, 5), "WAITERS");
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_UNION, CPUS(1, 6), w, 2, &allowed, NULL),
	            CPUS(1, 2, 5), "UNION");
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(1, 6), &w[1], 1, &allowed, &numa),
	            CPUS(5), "NODE");
}
END_TEST

START_TEST(nothing_left_in_the_cpuset_falls_back_to_the_base_cpus)
{
	cpu_set_t allowed = CPUS(0, 1);
	cpu_set_t w = CPUS(6, 7);
	struct plk_numa_map numa = two_nodes();

	for (int pol = PROXYLOCK_AFFINITY_WAITERS; pol <= PROXYLOCK_AFFINITY_NODE; pol++) {
		/* The base's CPUs come back even where the cpuset excludes them. */
		assert_cpus(affinity_of(pol, CPUS(3), &w, 1, &allowed, &numa), CPUS(3),
		            "waiter {6,7} on {3}, cpuset {0,1}, policy %d", pol);
	}
	/* NODE: the holder's CPUs are all off the waiters' node. */
	assert_cpus(affinity_of(PROXYLOCK_AFFINITY_NODE, CPUS(0, 1), &w, 1, &allowed, &numa),
	            CPUS(0, 1), "NODE, holder off the waiter's node");
}
END_TEST

/* --- who may lend CPUs: the rank order ---------------------------------- */

/* The holder's CPUs after one waiter @w lends everything to @base. */
static cpu_set_t cpus_lent_by(struct plk_sched_ctx base, struct plk_sched_ctx w)
{
	base.cpus = CPUS(0);
	w.cpus = CPUS(1);
	return lent(&base, &w, 1, ALL).cpus;
}

#define assert_moves(base, w, what)                                                  \
	do {                                                                         \
		cpu_set_t got_ = cpus_lent_by((base), (w)), want_ = CPUS(1);          \
		ck_assert_msg(CPU_EQUAL(&got_, &want_), "%s: the waiter outranks, yet its " \
		              "CPU is not lent", what);                                \
		got_ = cpus_lent_by((w), (base));                                     \
		want_ = CPUS(0);                                                     \
		ck_assert_msg(CPU_EQUAL(&got_, &want_), "%s, reversed: a lower waiter " \
		              "moved the holder", what);                               \
	} while (0)

START_TEST(cpus_are_lent_only_by_a_waiter_that_outranks_the_holder)
{
	struct plk_sched_ctx other0 = fair(SCHED_OTHER, 0);

	/* Each step of the order, the waiter first, the holder second. */
	assert_moves(other0, rt(SCHED_FIFO, 1), "RT 1 over nice -20");
	assert_moves(fair(SCHED_OTHER, -20), rt(SCHED_RR, 1), "RR 1 over nice -20");
	assert_moves(rt(SCHED_FIFO, 10), rt(SCHED_RR, 11), "RT 11 over RT 10");
	assert_moves(other0, fair(SCHED_OTHER, -1), "nice -1 over nice 0");
	assert_moves(fair(SCHED_BATCH, 0), fair(SCHED_BATCH, -5), "BATCH nice -5 over BATCH 0");
	assert_moves(fair(SCHED_OTHER, 5), fair(SCHED_BATCH, 4), "nice before BATCH/OTHER");
	assert_moves(fair(SCHED_BATCH, 0), other0, "OTHER over BATCH at equal nice");
	assert_moves(fair(SCHED_IDLE, -20), fair(SCHED_BATCH, 19), "any fair over IDLE");
	assert_moves(with_uclamp(other0, 0, 1024), with_uclamp(other0, 1, 1024),
	             "uclamp_min 1 over 0 at equal nice");
	assert_moves(with_uclamp(other0, 1024, 1024), with_uclamp(fair(SCHED_OTHER, -1), 0, 0),
	             "nice before uclamp_min");
	assert_moves(with_uclamp(rt(SCHED_FIFO, 5), 0, 0), with_uclamp(rt(SCHED_FIFO, 5), 9, 9),
	             "uclamp_min at equal RT priority");

	/* Equals lend no CPUs: not RT FIFO/RR at one priority, not nice
	 * that RT, DEADLINE or IDLE ignore, not a higher uclamp_max. */
	struct plk_sched_ctx eq[][2] = {
		{ other0, other0 },
		{ rt(SCHED_FIFO, 7), rt(SCHED_RR, 7) },
		{ with_uclamp(other0, 300, 400), with_uclamp(other0, 300, 1024) },
		{ fair(SCHED_IDLE, 19), fair(SCHED_IDLE, -20) },
		{ rt(SCHED_RR, 3), with_cpus(rt(SCHED_RR, 3), CPUS(1)) },
	};
	eq[3][1].nice = -20;
	for (size_t i = 0; i < sizeof(eq) / sizeof(eq[0]); i++) {
		cpu_set_t got = cpus_lent_by(eq[i][0], eq[i][1]), want = CPUS(0);

		ck_assert_msg(CPU_EQUAL(&got, &want), "pair %zu: an equal waiter moved the holder",
		              i);
		got = cpus_lent_by(eq[i][1], eq[i][0]);
		ck_assert_msg(CPU_EQUAL(&got, &want), "pair %zu reversed: an equal waiter moved "
		              "the holder", i);
	}
	/* A DEADLINE waiter outranks every RT holder. */
	struct plk_sched_ctx dl = fair(SCHED_DEADLINE, 0);
	assert_moves(rt(SCHED_FIFO, 99), dl, "DEADLINE over RT 99");
}
END_TEST

START_TEST(only_the_top_ranked_waiters_lend_their_cpus)
{
	struct plk_sched_ctx base = with_cpus(fair(SCHED_OTHER, 0), CPUS(0));
	struct plk_sched_ctx w[4] = {
		with_cpus(fair(SCHED_OTHER, -3), CPUS(2)),
		with_cpus(fair(SCHED_OTHER, -5), CPUS(3)),
		with_cpus(fair(SCHED_OTHER, 10), CPUS(4)),   /* below the holder */
		with_cpus(fair(SCHED_OTHER, -5), CPUS(5)),
	};
	struct plk_sched_ctx got = lent(&base, w, 4, A);

	assert_cpus(got, CPUS(3, 5), "the nice -5 waiters' CPUs only");
	got = lent(&base, &w[2], 1, ALL);
	assert_ctx_eq(&got, &base, "a nice-10 waiter lends nothing to a nice-0 holder");
	/* A chain: E(W)'s rank counts, raised by what W is lent. */
	struct plk_sched_ctx low = with_cpus(fair(SCHED_OTHER, 10), CPUS(4));
	struct plk_sched_ctx ew = lent(&low, &w[1], 1, N);
	got = lent(&base, &ew, 1, A);
	assert_cpus(got, CPUS(4), "a waiter lent nice -5 outranks a nice-0 holder");
}
END_TEST

/* CPUs 0-1 capacity 1024, 2-3 capacity 512, 4-5 160; 6 unknown. */
static struct plk_capacity_map three_sizes(void)
{
	struct plk_capacity_map m;

	memset(&m, 0, sizeof(m));
	m.differ = true;
	for (int c = 0; c < 6; c++)
		m.of[c] = c < 2 ? 1024 : c < 4 ? 512 : 160;
	return m;
}

START_TEST(where_capacities_differ_no_lend_takes_the_holder_off_its_best_cpus)
{
	struct plk_capacity_map cap = three_sizes();
	struct plk_sched_ctx big = with_cpus(with_uclamp(fair(SCHED_OTHER, 0), 0, 1024), CPUS(0));
	/* Outranks by nice, sits on a little CPU. */
	struct plk_sched_ctx little = with_cpus(with_uclamp(fair(SCHED_OTHER, -5), 0, 160), CPUS(4));
	struct plk_lend l = lend_of(&little, 1, ALL);
	struct plk_lend_env env = { .affinity = PROXYLOCK_AFFINITY_WAITERS, .capacity = &cap };
	struct plk_sched_ctx got;

	/* WAITERS means "only where the waiters run": all slower, so the
	 * holder keeps its own CPUs (it was moved to CPUs 0 and 4 before:
	 * the add-back made WAITERS a union). */
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(0), "WAITERS, big holder, little waiter: no CPU lent");
	env.affinity = PROXYLOCK_AFFINITY_UNION;
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(0, 4), "UNION");
	/* NODE (no NUMA map here: the union) keeps the base's best CPUs, and
	 * only those within the cpuset. */
	big.cpus = CPUS(0, 1, 2, 3);
	env.affinity = PROXYLOCK_AFFINITY_WAITERS;
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(0, 1, 2, 3), "WAITERS, base on 0-3: no CPU lent");
	struct plk_numa_map numa = { .nnodes = 2 };
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		numa.node_of[cpu] = cpu < 4 ? 0 : 1;
	numa.cpus_of[0] = CPUS(0, 1, 2, 3);
	numa.cpus_of[1] = CPUS(4, 5, 6, 7);
	env.affinity = PROXYLOCK_AFFINITY_NODE;
	env.numa = &numa;
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(0, 1, 4), "NODE, base on 0-3: the waiter's node plus the base's best");
	cpu_set_t allowed = CPUS(1, 2, 3, 4);
	env.allowed = &allowed;
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(1, 4), "NODE, base on 0-3, cpuset 1-4");
	env.numa = NULL;
	env.affinity = PROXYLOCK_AFFINITY_WAITERS;
	env.allowed = NULL;
	/* A waiter on a CPU as big as the holder's best moves it there. */
	little.cpus = CPUS(1, 5);
	l = lend_of(&little, 1, ALL);
	big.cpus = CPUS(0);
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(1, 5), "waiter on a big CPU");
	/* A little holder may be moved to a big waiter's CPU, or a middle one. */
	struct plk_sched_ctx small = with_cpus(fair(SCHED_OTHER, 19), CPUS(4));
	struct plk_sched_ctx mid = with_cpus(fair(SCHED_OTHER, 0), CPUS(2));
	l = lend_of(&mid, 1, ALL);
	got = combine_env(&small, &l, &env);
	assert_cpus(got, CPUS(2), "little holder, middle waiter");
	/* Equal capacities everywhere (differ false): the policy alone. */
	cap.differ = false;
	l = lend_of(&little, 1, ALL);
	little.cpus = CPUS(4);
	l = lend_of(&little, 1, ALL);
	got = combine_env(&big, &l, &env);
	assert_cpus(got, CPUS(4), "capacities alike");
}
END_TEST

START_TEST(an_empty_lend_is_the_identity)
{
	struct plk_sched_ctx bases[] = {
		with_cpus(with_uclamp(fair(SCHED_IDLE, 19), 0, 0), CPUS(3)),
		with_uclamp(fair(SCHED_BATCH, -20), 1024, 1024),
		fair(SCHED_OTHER, 0),
		rt(SCHED_FIFO, 1),
		rt(SCHED_RR, 99),
	};
	struct plk_lend empty, zero = { .kinds = 0 }, all;
	cpu_set_t allowed = CPUS(1);
	struct plk_lend_env env = { .affinity = PROXYLOCK_AFFINITY_UNION, .allowed = &allowed };

	plk_lend_init(&empty);
	/* Kinds that are lent with no waiter folded in lend nothing. */
	all = empty;
	all.kinds = ALL;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		struct plk_sched_ctx got;

		bases[i].flags = 1;
		got = combine_env(&bases[i], &empty, &env);
		assert_ctx_eq(&got, &bases[i], "plk_lend_init, base %zu", i);
		got = combine_env(&bases[i], &zero, &env);
		assert_ctx_eq(&got, &bases[i], "{ .kinds = 0 }, base %zu", i);
		got = combine_env(&bases[i], &all, &env);
		assert_ctx_eq(&got, &bases[i], "all kinds, no waiter, base %zu", i);
	}
	/* Merged into a lend, an empty one only adds its kinds; a lend
	 * started with plk_lend_init (not { .kinds = 0 }, whose nice 0 and
	 * SCHED_OTHER are not the identities of min and lift) takes in
	 * another one unchanged. */
	struct plk_sched_ctx w[2] = { with_cpus(with_uclamp(rt(SCHED_RR, 9), 300, 600), CPUS(2)),
		                      fair(SCHED_BATCH, -4) };
	struct plk_lend x = lend_of(w, 2, ALL), y;
	for (int i = 0; i < 3; i++) {
		const struct plk_lend *e = i == 0 ? &empty : i == 1 ? &zero : &all;

		y = x;
		plk_lend_merge(&y, e);
		assert_lend_eq(&y, &x, "lend + empty lend %d", i);
		if (e == &zero)
			continue;
		y = *e;
		plk_lend_merge(&y, &x);
		assert_lend_eq(&y, &x, "empty lend %d + lend", i);
	}
}
END_TEST

/* --- merging: generated cases --------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64*: deterministic, seeded per test. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 33) % n;
}

static struct plk_sched_ctx random_ctx(void)
{
	static const uint32_t policies[] = { SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO,
		                             SCHED_RR };
	struct plk_sched_ctx c;
	uint32_t a = rnd(1025), b = rnd(1025);

	memset(&c, 0, sizeof(c));
	c.policy = policies[rnd(5)];
	c.nice = (int32_t)rnd(40) - 20;
	/* Few RT priorities: ties between FIFO and RR are frequent. */
	c.rt_prio = plk_sched_is_rt(c.policy) ? 1 + rnd(4) : 0;
	c.umin = a < b ? a : b;
	c.umax = a < b ? b : a;
	if (rnd(8) == 0)
		c.umin = c.umax + 1 > 1024 ? 1024 : c.umax + 1;  /* min above max */
	for (int cpu = 0; cpu < 12; cpu++)
		if (rnd(4) == 0)
			CPU_SET(cpu, &c.cpus);
	return c;
}

#define CASES 2000
#define MAXW 4

struct lock_case {
	unsigned kinds;
	int n;
	struct plk_sched_ctx w[MAXW];
};

static struct lock_case random_lock(void)
{
	struct lock_case c;

	c.kinds = rnd(ALL + 1);
	c.n = (int)rnd(MAXW + 1);
	for (int i = 0; i < c.n; i++)
		c.w[i] = random_ctx();
	return c;
}

static struct plk_lend lend_of_case(const struct lock_case *c)
{
	return lend_of(c->w, c->n, c->kinds);
}

static struct plk_numa_map gen_numa;
static struct plk_capacity_map gen_capacity;
static cpu_set_t gen_allowed;

static struct plk_lend_env random_env(void)
{
	struct plk_lend_env env = {
		.affinity = (int)rnd(3),
		.allowed = rnd(2) ? &gen_allowed : NULL,
		.numa = &gen_numa,
		.capacity = rnd(2) ? &gen_capacity : NULL,
	};

	return env;
}

static void generator_setup(uint64_t seed)
{
	rng_state = seed;
	gen_numa = two_nodes();
	for (int c = 8; c < 12; c++) {  /* a third node, 8-11 */
		gen_numa.node_of[c] = 2;
		CPU_SET(c, &gen_numa.cpus_of[2]);
	}
	gen_numa.nnodes = 3;
	gen_allowed = CPUS(0, 1, 2, 4, 5, 8, 9, 10);
	/* Capacities: 1024 on 0-2, 512 on 3-7, 160 on 8-10, 11 unknown. */
	memset(&gen_capacity, 0, sizeof(gen_capacity));
	gen_capacity.differ = true;
	for (int c = 0; c < 11; c++)
		gen_capacity.of[c] = c < 3 ? 1024 : c < 8 ? 512 : 160;
}

START_TEST(merging_lends_of_two_locks_equals_folding_all_their_waiters)
{
	generator_setup(0x13);
	for (int i = 0; i < CASES; i++) {
		struct lock_case a = random_lock(), b = random_lock();
		struct plk_sched_ctx base = random_ctx(), g1, g2;
		struct plk_lend_env env = random_env();
		struct plk_lend merged = lend_of_case(&a), lb = lend_of_case(&b), all;

		plk_lend_merge(&merged, &lb);
		/* A ∪ B: every waiter folded for its own lock's kinds. */
		plk_lend_init(&all);
		for (int k = 0; k < a.n; k++)
			plk_lend_add(&all, &a.w[k], a.kinds);
		for (int k = 0; k < b.n; k++)
			plk_lend_add(&all, &b.w[k], b.kinds);
		g1 = combine_env(&base, &merged, &env);
		g2 = combine_env(&base, &all, &env);
		assert_ctx_eq(&g1, &g2, "case %d: combine(base, merge(A, B)) vs combine(base, A u B)",
		              i);
		/* Merging a lend with no waiters (kinds 0) changes nothing. */
		struct plk_lend empty, x = merged;
		plk_lend_init(&empty);
		plk_lend_merge(&x, &empty);
		assert_lend_eq(&x, &merged, "case %d: merge(x, empty)", i);
		x = empty;
		plk_lend_merge(&x, &merged);
		assert_lend_eq(&x, &merged, "case %d: merge(empty, x)", i);
	}
}
END_TEST

START_TEST(merge_is_commutative_and_associative)
{
	generator_setup(0x2a);
	for (int i = 0; i < CASES; i++) {
		struct lock_case ca = random_lock(), cb = random_lock(), cc = random_lock();
		struct plk_lend a = lend_of_case(&ca), b = lend_of_case(&cb), c = lend_of_case(&cc);
		struct plk_lend ab = a, ba = b, ab_c, a_bc = a, bc = b;
		struct plk_sched_ctx base = random_ctx(), g1, g2;
		struct plk_lend_env env = random_env();

		plk_lend_merge(&ab, &b);
		plk_lend_merge(&ba, &a);
		assert_lend_eq(&ab, &ba, "case %d: A+B vs B+A", i);
		g1 = combine_env(&base, &ab, &env);
		g2 = combine_env(&base, &ba, &env);
		assert_ctx_eq(&g1, &g2, "case %d: combine(A+B) vs combine(B+A)", i);

		ab_c = ab;
		plk_lend_merge(&ab_c, &c);
		plk_lend_merge(&bc, &c);
		plk_lend_merge(&a_bc, &bc);
		assert_lend_eq(&ab_c, &a_bc, "case %d: (A+B)+C vs A+(B+C)", i);
		g1 = combine_env(&base, &ab_c, &env);
		g2 = combine_env(&base, &a_bc, &env);
		assert_ctx_eq(&g1, &g2, "case %d: combine((A+B)+C) vs combine(A+(B+C))", i);
	}
}
END_TEST

/* Properties that hold for every generated case. */
START_TEST(a_lend_never_lowers_the_holder)
{
	generator_setup(0x99);
	for (int i = 0; i < CASES; i++) {
		struct lock_case c = random_lock();
		struct plk_sched_ctx base = random_ctx(), got;
		struct plk_lend l = lend_of_case(&c);
		struct plk_lend_env env = random_env();

		got = combine_env(&base, &l, &env);
		ck_assert_msg(got.umin >= base.umin && got.umax >= base.umax,
		              "case %d: uclamp lowered", i);
		ck_assert_msg(got.umax >= got.umin || (!(l.kinds & U) && base.umax < base.umin),
		              "case %d: umax %u below umin %u", i, got.umax, got.umin);
		if (plk_sched_is_rt(base.policy)) {
			ck_assert_msg(plk_sched_is_rt(got.policy) && got.rt_prio >= base.rt_prio,
			              "case %d: RT holder lowered", i);
			ck_assert_int_eq(got.nice, base.nice);
		} else if (!plk_sched_is_rt(got.policy)) {
			/* A SCHED_IDLE base's nice is latent: lifted out of
			 * IDLE, any fair nice is above it. */
			ck_assert_msg(got.nice <= base.nice ||
			              (base.policy == SCHED_IDLE && got.policy != SCHED_IDLE),
			              "case %d: nice raised", i);
		}
		ck_assert_uint_eq(got.flags, base.flags);
		ck_assert_int_gt(CPU_COUNT(&got.cpus) + (CPU_COUNT(&base.cpus) == 0), 0);
	}
}
END_TEST

/* The stated order (lend.c), written out independently of plk_lend_rank:
 * < 0, 0, > 0 as @a ranks below, with, above @b. */
static int class_of(uint32_t p)
{
	return p == SCHED_DEADLINE ? 3 : plk_sched_is_rt(p) ? 2 : p == SCHED_IDLE ? 0 : 1;
}

static int rank_cmp(const struct plk_sched_ctx *a, const struct plk_sched_ctx *b)
{
	int ca = class_of(a->policy), cb = class_of(b->policy);

	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca == 2 && a->rt_prio != b->rt_prio)
		return a->rt_prio < b->rt_prio ? -1 : 1;
	if (ca == 1) {
		if (a->nice != b->nice)
			return a->nice > b->nice ? -1 : 1;
		if ((a->policy == SCHED_BATCH) != (b->policy == SCHED_BATCH))
			return a->policy == SCHED_BATCH ? -1 : 1;
	}
	if (a->umin != b->umin)
		return a->umin < b->umin ? -1 : 1;
	return 0;
}

/* The best capacity in @cpus. */
static unsigned best_cap(const struct plk_capacity_map *cap, const cpu_set_t *cpus)
{
	unsigned best = 0;

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, cpus) && cap->of[c] > best)
			best = cap->of[c];
	return best;
}

/* A base the kernel could hold: uclamp_min <= uclamp_max, nice 0 if RT. */
static struct plk_sched_ctx random_base(void)
{
	struct plk_sched_ctx b = random_ctx();

	if (b.umin > b.umax)
		b.umin = b.umax;
	if (plk_sched_is_rt(b.policy))
		b.nice = 0;
	if (CPU_COUNT(&b.cpus) == 0)
		CPU_SET(rnd(12), &b.cpus);
	return b;
}

START_TEST(no_lend_leaves_the_holder_below_its_base_in_any_kind)
{
	generator_setup(0x30);
	for (int i = 0; i < CASES; i++) {
		struct lock_case c = random_lock();
		struct plk_sched_ctx base = random_base(), got;
		struct plk_lend l = lend_of_case(&c);
		struct plk_lend_env env = random_env();
		bool outranked = false;

		for (int k = 0; k < c.n; k++)
			outranked |= (c.kinds & A) && rank_cmp(&c.w[k], &base) > 0;
		got = combine_env(&base, &l, &env);
		ck_assert_msg(rank_cmp(&got, &base) >= 0, "case %d: E(T) ranks below B(T)", i);
		ck_assert_msg(got.umin >= base.umin && got.umax >= base.umax,
		              "case %d: uclamp lowered", i);
		if (plk_sched_is_rt(base.policy))
			ck_assert_msg(plk_sched_is_rt(got.policy) && got.rt_prio >= base.rt_prio,
			              "case %d: RT holder lowered", i);
		else if (!plk_sched_is_rt(got.policy))
			ck_assert_msg((got.nice <= base.nice ||
			               (base.policy == SCHED_IDLE && got.policy != SCHED_IDLE)) &&
			              (got.policy == SCHED_IDLE) <= (base.policy == SCHED_IDLE),
			              "case %d: nice or fair policy lowered", i);
		ck_assert_msg(outranked || CPU_EQUAL(&got.cpus, &base.cpus),
		              "case %d: the holder's CPUs changed, with no waiter of a lock "
		              "lending CPUs outranking it", i);
		if (env.capacity) {
			cpu_set_t own = base.cpus;

			if (env.allowed)
				CPU_AND(&own, &own, env.allowed);
			if (CPU_COUNT(&own) == 0)
				own = base.cpus;
			ck_assert_msg(best_cap(env.capacity, &got.cpus) >=
			              best_cap(env.capacity, &own),
			              "case %d: best capacity %u, below the base's %u", i,
			              best_cap(env.capacity, &got.cpus), best_cap(env.capacity, &own));
		}
	}
}
END_TEST

/* A context no higher than @b in any kind, and not above it in rank. */
static struct plk_sched_ctx random_not_above(const struct plk_sched_ctx *b)
{
	struct plk_sched_ctx w = random_ctx();

	w.umin = b->umin ? rnd(b->umin + 1) : 0;
	w.umax = b->umax ? rnd(b->umax + 1) : 0;
	if (plk_sched_is_rt(b->policy)) {
		/* RT at or below its priority, or anything fair. */
		if (plk_sched_is_rt(w.policy))
			w.rt_prio = 1 + rnd(b->rt_prio);
	} else {
		if (plk_sched_is_rt(w.policy))
			w.policy = SCHED_IDLE;
		if (b->policy == SCHED_IDLE)
			w.policy = SCHED_IDLE;
		else if (b->policy == SCHED_BATCH && w.policy == SCHED_OTHER)
			w.policy = SCHED_BATCH;
		w.rt_prio = 0;
		w.nice = b->nice + (int32_t)rnd((uint32_t)(20 - b->nice));
	}
	return w;
}

START_TEST(waiters_equal_to_or_below_the_holder_leave_it_exactly_at_its_base)
{
	generator_setup(0x31);
	for (int i = 0; i < CASES; i++) {
		struct plk_sched_ctx base = random_base(), got;
		struct lock_case a = random_lock(), b = random_lock();
		struct plk_lend_env env = random_env();
		struct plk_lend l;

		for (int k = 0; k < a.n; k++)
			a.w[k] = rnd(4) ? random_not_above(&base) : with_cpus(base, a.w[k].cpus);
		for (int k = 0; k < b.n; k++)
			b.w[k] = random_not_above(&base);
		l = lend_of_case(&a);
		struct plk_lend lb = lend_of_case(&b);
		plk_lend_merge(&l, &lb);
		got = combine_env(&base, &l, &env);
		assert_ctx_eq(&got, &base, "case %d: %d and %d waiters no higher than the holder",
		              i, a.n, b.n);
	}
}
END_TEST

START_TEST(waiters_that_do_not_outrank_the_holder_lend_no_cpus)
{
	generator_setup(0x32);
	for (int i = 0; i < CASES; i++) {
		struct plk_sched_ctx base = random_base(), got;
		struct lock_case c = random_lock();
		struct plk_lend_env env = random_env();
		struct plk_lend l;
		int n = 0;

		/* Any context at all, as long as its rank is not above. */
		for (int k = 0; k < c.n; k++)
			if (rank_cmp(&c.w[k], &base) <= 0)
				c.w[n++] = c.w[k];
		c.n = n;
		l = lend_of_case(&c);
		got = combine_env(&base, &l, &env);
		ck_assert_msg(CPU_EQUAL(&got.cpus, &base.cpus),
		              "case %d: %d waiters not outranking the holder moved it", i, n);
	}
}
END_TEST

START_TEST(plk_lend_rank_follows_the_stated_order)
{
	generator_setup(0x33);
	for (int i = 0; i < CASES * 5; i++) {
		struct plk_sched_ctx a = random_base(), b = random_base();
		uint64_t ra, rb;
		int want, got;

		if (rnd(4) == 0)
			b = with_cpus(a, b.cpus);  /* ties */
		else if (rnd(3) == 0)
			b.nice = a.nice, b.policy = a.policy, b.rt_prio = a.rt_prio;
		ra = plk_lend_rank(&a);
		rb = plk_lend_rank(&b);
		want = rank_cmp(&a, &b);
		got = ra < rb ? -1 : ra > rb;
		ck_assert_msg(got == want, "case %d: plk_lend_rank says %d, the order %d", i, got,
		              want);
	}
}
END_TEST

/* --- chains ------------------------------------------------------------- */

START_TEST(a_chain_passes_the_waiters_context_through_an_intermediate_owner)
{
	/* W waits on L1, held by T; T waits on L2, held by V. */
	struct plk_sched_ctx w = with_cpus(with_uclamp(rt(SCHED_FIFO, 50), 800, 1024), CPUS(3));
	struct plk_sched_ctx bt = with_cpus(with_uclamp(fair(SCHED_OTHER, 0), 0, 1024), CPUS(1));
	struct plk_sched_ctx bv = with_cpus(with_uclamp(fair(SCHED_BATCH, 5), 0, 300), CPUS(2));
	struct plk_sched_ctx et, ev, want;
	struct plk_lend l1, l2;

	l1 = lend_of(&w, 1, ALL);
	plk_lend_combine(&bt, &l1, &env_waiters, &et, NULL);
	want = with_cpus(with_uclamp(rt(SCHED_FIFO, 50), 800, 1024), CPUS(3));
	assert_ctx_eq(&et, &want, "E(T)");
	l2 = lend_of(&et, 1, ALL);  /* L2's lend folds E(T), not B(T) */
	plk_lend_combine(&bv, &l2, &env_waiters, &ev, NULL);
	want = with_cpus(with_uclamp(rt(SCHED_FIFO, 50), 800, 1024), CPUS(3));
	want.nice = 5;
	assert_ctx_eq(&ev, &want, "E(V): W's boost through T");

	/* A fair chain: W's nice and policy reach V through an IDLE T. */
	w = fair(SCHED_OTHER, -12);
	bt = fair(SCHED_IDLE, 19);
	bv = fair(SCHED_IDLE, 10);
	l1 = lend_of(&w, 1, N);
	plk_lend_combine(&bt, &l1, &env_waiters, &et, NULL);
	l2 = lend_of(&et, 1, N);
	plk_lend_combine(&bv, &l2, &env_waiters, &ev, NULL);
	want = fair(SCHED_OTHER, -12);
	assert_ctx_eq(&ev, &want, "E(V): W's nice through T");

	/* A kind the middle lock does not lend stops there. */
	w = with_uclamp(fair(SCHED_OTHER, -12), 900, 1024);
	l1 = lend_of(&w, 1, U | N);
	plk_lend_combine(&bt, &l1, &env_waiters, &et, NULL);
	l2 = lend_of(&et, 1, U);
	plk_lend_combine(&bv, &l2, &env_waiters, &ev, NULL);
	want = with_uclamp(bv, 900, 1024);
	assert_ctx_eq(&ev, &want, "E(V): nice stops at a uclamp-only L2");

	/* Three hops, the middle owner also holding a second lock. */
	struct plk_sched_ctx x = rt(SCHED_RR, 70), bu = fair(SCHED_OTHER, 0), eu;
	struct plk_lend lx = lend_of(&x, 1, R), all;
	w = rt(SCHED_FIFO, 50);
	bt = fair(SCHED_OTHER, 0);
	l1 = lend_of(&w, 1, R);
	plk_lend_init(&all);
	plk_lend_merge(&all, &l1);
	plk_lend_merge(&all, &lx);
	plk_lend_combine(&bt, &all, &env_waiters, &et, NULL);  /* T holds L1 and LX */
	l2 = lend_of(&et, 1, R);
	plk_lend_combine(&bu, &l2, &env_waiters, &eu, NULL);
	struct plk_lend l3 = lend_of(&eu, 1, R);
	plk_lend_combine(&bv, &l3, &env_waiters, &ev, NULL);
	want = rt(SCHED_RR, 70);
	want.nice = bv.nice;
	assert_ctx_eq(&ev, &want, "E(V) three hops from X");
}
END_TEST

/* E(T) and the rank of its CPUs, for a chain's next fold. */
static struct plk_lend chain_hop(const struct plk_sched_ctx *bt, const struct plk_lend *l,
                                 unsigned next_kinds, struct plk_sched_ctx *et)
{
	struct plk_cpu_owner own;
	struct plk_lend next;

	plk_lend_combine(bt, l, &env_waiters, et, &own);
	plk_lend_init(&next);
	plk_lend_add_ranked(&next, et, &own, next_kinds);
	return next;
}

START_TEST(a_chain_lends_cpus_with_the_rank_of_the_thread_they_belong_to)
{
	/* X waits on L2, held by W; W waits on L1, held by H. */
	struct plk_sched_ctx x = with_cpus(fair(SCHED_OTHER, 0), CPUS(0));
	struct plk_sched_ctx bw = with_cpus(fair(SCHED_OTHER, 19), CPUS(1));
	struct plk_sched_ctx bh = with_cpus(fair(SCHED_OTHER, 5), CPUS(2));
	struct plk_sched_ctx ew, eh, want;
	struct plk_lend l1, l2;

	/* L2 lends nice only: W runs at X's nice 0 on its own CPU 1, a
	 * nice-19 thread's CPU.  H (nice 5) is outranked by E(W) but not by
	 * the owner of CPU 1: it gets the nice and keeps its CPU. */
	l2 = lend_of(&x, 1, N);
	l1 = chain_hop(&bw, &l2, ALL, &ew);
	assert_cpus(ew, CPUS(1), "E(W)");
	ck_assert_int_eq(ew.nice, 0);
	plk_lend_combine(&bh, &l1, &env_waiters, &eh, NULL);
	want = with_cpus(fair(SCHED_OTHER, 0), CPUS(2));
	assert_ctx_eq(&eh, &want, "E(H): X's nice through W, not W's CPU");

	/* L2 lends CPUs only: W moves to X's CPU 0 at its own nice 19, and
	 * H gets X's CPU, X outranking H: the chain carries X's rank. */
	l2 = lend_of(&x, 1, A);
	l1 = chain_hop(&bw, &l2, ALL, &ew);
	assert_cpus(ew, CPUS(0), "E(W)");
	ck_assert_int_eq(ew.nice, 19);
	plk_lend_combine(&bh, &l1, &env_waiters, &eh, NULL);
	want = with_cpus(fair(SCHED_OTHER, 5), CPUS(0));
	assert_ctx_eq(&eh, &want, "E(H): X's CPU through W");

	/* Uclamp alone raises W above H, whose CPUs stay its own. */
	struct plk_sched_ctx big = with_cpus(with_uclamp(fair(SCHED_OTHER, 19), 1024, 1024), CPUS(0));
	bw = with_cpus(fair(SCHED_OTHER, 0), CPUS(1));
	bh = with_cpus(with_uclamp(fair(SCHED_OTHER, 0), 512, 1024), CPUS(2));
	l2 = lend_of(&big, 1, ALL);  /* big does not outrank W: no CPUs */
	l1 = chain_hop(&bw, &l2, ALL, &ew);
	assert_cpus(ew, CPUS(1), "E(W)");
	ck_assert_int_eq(ew.umin, 1024);
	plk_lend_combine(&bh, &l1, &env_waiters, &eh, NULL);
	want = with_cpus(with_uclamp(fair(SCHED_OTHER, 0), 1024, 1024), CPUS(2));
	assert_ctx_eq(&eh, &want, "E(H): big's uclamp through W, not W's CPU");
}
END_TEST

START_TEST(a_sched_idle_waiter_lends_no_nice_better_than_19)
{
	struct plk_sched_ctx idle = fair(SCHED_IDLE, 0);  /* nice 0 is latent under IDLE */
	struct plk_sched_ctx holder = fair(SCHED_OTHER, 10), got;

	got = lent(&holder, &idle, 1, ALL);
	assert_ctx_eq(&got, &holder, "an OTHER nice-10 holder, a SCHED_IDLE waiter");
	holder = fair(SCHED_BATCH, 19);
	got = lent(&holder, &idle, 1, ALL);
	assert_ctx_eq(&got, &holder, "a BATCH nice-19 holder, a SCHED_IDLE waiter");
	holder = fair(SCHED_IDLE, 19);
	got = lent(&holder, &idle, 1, ALL);
	assert_ctx_eq(&got, &holder, "an IDLE nice-19 holder, a SCHED_IDLE nice-0 waiter");
}
END_TEST

/* C3's mirror (review of issue 30).  A SCHED_IDLE holder's nice is latent too: a
 * lend of SCHED_OTHER at nice 19 must not wake its nice 0 (weight 1024,
 * far above the waiter's 15). */
START_TEST(a_sched_idle_holder_lifted_by_a_lend_runs_at_the_lent_nice_not_its_latent_one)
{
	struct plk_sched_ctx holder = fair(SCHED_IDLE, 0), waiter = fair(SCHED_OTHER, 19), got, want;

	got = lent(&holder, &waiter, 1, N);
	want = fair(SCHED_OTHER, 19);
	assert_ctx_eq(&got, &want, "IDLE nice-0 holder, OTHER nice-19 waiter");
}
END_TEST

/* UNION, X (nice 0, CPU 0) -> L2 (CPUs only) -> W (nice 19,
 * CPU 1) -> L1 -> H (nice 5, CPU 2).  E(W) = {0,1}, ranked as X; H gets
 * W's CPU 1 too, which X's own lend would not give it. */
START_TEST(under_union_a_chain_passes_on_the_lenders_cpus_not_the_middle_threads)
{
	struct plk_sched_ctx x = with_cpus(fair(SCHED_OTHER, 0), CPUS(0));
	struct plk_sched_ctx bw = with_cpus(fair(SCHED_OTHER, 19), CPUS(1));
	struct plk_sched_ctx bh = with_cpus(fair(SCHED_OTHER, 5), CPUS(2));
	struct plk_lend_env env = { .affinity = PROXYLOCK_AFFINITY_UNION };
	struct plk_sched_ctx ew, eh, direct;
	struct plk_lend l2 = lend_of(&x, 1, A), l1, lx = lend_of(&x, 1, A);
	struct plk_cpu_owner own;

	plk_lend_combine(&bw, &l2, &env, &ew, &own);
	plk_lend_init(&l1);
	plk_lend_add_ranked(&l1, &ew, &own, ALL);
	plk_lend_combine(&bh, &l1, &env, &eh, NULL);
	plk_lend_combine(&bh, &lx, &env, &direct, NULL);
	assert_cpus(direct, CPUS(0, 2), "X's lend straight to H");
	assert_cpus(eh, CPUS(0, 2), "X's lend to H through W (W is nice 19: its CPU 1 must not come)");
}
END_TEST

/* Generated chains X -> L2 -> W -> L1 -> H, no cpuset, NUMA or
 * capacities: every CPU H is given belongs to H or to a thread whose
 * base outranks H's. */
START_TEST(a_chain_gives_the_holder_only_cpus_of_threads_that_outrank_it)
{
	int bad[3] = { 0, 0, 0 }, first[3] = { -1, -1, -1 };

	generator_setup(0x3030);
	for (int i = 0; i < CASES * 5; i++) {
		struct plk_sched_ctx x = random_base(), bw = random_base(), bh = random_base();
		unsigned k2 = rnd(ALL + 1), k1 = rnd(ALL + 1);
		struct plk_lend_env env = random_env();

		env.numa = NULL;
		if (env.affinity == PROXYLOCK_AFFINITY_NODE)
			env.affinity = PROXYLOCK_AFFINITY_WAITERS;
		struct plk_sched_ctx ew, eh;
		struct plk_lend l2 = lend_of(&x, 1, k2), l1;
		cpu_set_t may = bh.cpus;
		struct plk_cpu_owner own;

		plk_lend_combine(&bw, &l2, &env, &ew, &own);
		plk_lend_init(&l1);
		plk_lend_add_ranked(&l1, &ew, &own, k1);
		plk_lend_combine(&bh, &l1, &env, &eh, NULL);
		if (rank_cmp(&x, &bh) > 0)
			CPU_OR(&may, &may, &x.cpus);
		if (rank_cmp(&bw, &bh) > 0)
			CPU_OR(&may, &may, &bw.cpus);
		cpu_set_t extra;
		CPU_AND(&extra, &eh.cpus, &may);
		if (!CPU_EQUAL(&extra, &eh.cpus)) {
			if (first[env.affinity] < 0)
				first[env.affinity] = i;
			bad[env.affinity]++;
		}
	}
	ck_assert_msg(bad[PROXYLOCK_AFFINITY_WAITERS] == 0 && bad[PROXYLOCK_AFFINITY_UNION] == 0,
	              "chains giving H CPUs of a thread it outranks: WAITERS %d (first case %d), "
	              "UNION %d (first case %d)",
	              bad[PROXYLOCK_AFFINITY_WAITERS], first[PROXYLOCK_AFFINITY_WAITERS],
	              bad[PROXYLOCK_AFFINITY_UNION], first[PROXYLOCK_AFFINITY_UNION]);
}
END_TEST

/* W holds L2 and L3 (up to 2 waiters each), waits on L1 held by
 * H, which also holds L4 with waiter Z; WAITERS, random cpuset and
 * capacities.  Every CPU H is given belongs to H or to a thread whose
 * base outranks H's. */
START_TEST(a_multi_lock_chain_gives_the_holder_only_cpus_of_outranking_threads)
{
	int bad = 0, first = -1;

	generator_setup(0x3031);
	for (int i = 0; i < CASES * 5; i++) {
		struct plk_sched_ctx t[6], bw = random_base(), bh = random_base(), ew, eh;
		unsigned k[4];
		struct plk_lend_env env = random_env();
		struct plk_lend l2, l3, l4, l1, all;
		cpu_set_t may = bh.cpus, extra;
		struct plk_cpu_owner own;

		env.numa = NULL;
		env.affinity = PROXYLOCK_AFFINITY_WAITERS;
		for (int j = 0; j < 6; j++)
			t[j] = random_base();
		for (int j = 0; j < 4; j++)
			k[j] = rnd(ALL + 1);
		l2 = lend_of(&t[0], (int)rnd(3), k[0]);
		l3 = lend_of(&t[2], (int)rnd(3), k[1]);
		plk_lend_init(&all);
		plk_lend_merge(&all, &l3);
		plk_lend_merge(&all, &l2);
		plk_lend_combine(&bw, &all, &env, &ew, &own);
		plk_lend_init(&l1);
		plk_lend_add_ranked(&l1, &ew, &own, k[2]);
		l4 = lend_of(&t[4], 1, k[3]);
		plk_lend_merge(&l1, &l4);
		plk_lend_combine(&bh, &l1, &env, &eh, NULL);
		for (int j = 0; j < 6; j++)
			if (rank_cmp(&t[j], &bh) > 0)
				CPU_OR(&may, &may, &t[j].cpus);
		if (rank_cmp(&bw, &bh) > 0)
			CPU_OR(&may, &may, &bw.cpus);
		CPU_AND(&extra, &eh.cpus, &may);
		if (!CPU_EQUAL(&extra, &eh.cpus) && bad++ == 0)
			first = i;
	}
	ck_assert_msg(bad == 0, "%d cases (first %d)", bad, first);
}
END_TEST

/* X (nice 0, CPU 0) -> L2 (CPUs) -> W (nice -5, CPU 1) -> L1 -> H (nice
 * 5, CPU 2).  X outranks H but not W: W keeps its CPU and passes it on
 * at its own rank, which outranks H (lend.c: the top-ranked CPUs at
 * every hop). */
START_TEST(a_middle_thread_that_outranks_the_lender_passes_on_its_own_cpus)
{
	struct plk_sched_ctx x = with_cpus(fair(SCHED_OTHER, 0), CPUS(0));
	struct plk_sched_ctx bw = with_cpus(fair(SCHED_OTHER, -5), CPUS(1));
	struct plk_sched_ctx bh = with_cpus(fair(SCHED_OTHER, 5), CPUS(2));
	struct plk_sched_ctx ew, eh;
	struct plk_lend l2 = lend_of(&x, 1, A), l1;
	struct plk_cpu_owner own;

	plk_lend_combine(&bw, &l2, &env_waiters, &ew, &own);
	plk_lend_init(&l1);
	plk_lend_add_ranked(&l1, &ew, &own, ALL);
	plk_lend_combine(&bh, &l1, &env_waiters, &eh, NULL);
	assert_cpus(eh, CPUS(1), "E(H): W's CPU");
}
END_TEST

/* --- kinds changed ----------------------------------------------------- */

START_TEST(plk_lend_kinds_changed_names_exactly_the_kinds_that_differ)
{
	struct plk_sched_ctx a = with_cpus(with_uclamp(fair(SCHED_OTHER, 0), 100, 900), CPUS(0, 1));
	struct plk_sched_ctx b;

	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &a), 0);
	b = a;
	b.flags = 1;  /* not a kind */
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), 0);
	b = a;
	b.umin = 101;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), U);
	b = a;
	b.umax = 1024;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), U);
	b = a;
	CPU_SET(2, &b.cpus);
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), A);
	b = a;
	b.nice = -1;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), N);
	b = a;
	b.policy = SCHED_BATCH;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), N);
	b = rt(SCHED_FIFO, 10);
	b.umin = a.umin;
	b.umax = a.umax;
	b.cpus = a.cpus;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), R);  /* fair -> RT */
	a = b;
	b.rt_prio = 11;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), R);
	b = a;
	b.policy = SCHED_RR;
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), R);
	b = a;
	b.umin = 0;  /* RT, same policy and priority: no RT change */
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), U);
	b = a;
	b.rt_prio = 11;
	b.umin = 0;
	CPU_CLR(0, &b.cpus);
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), R | U | A);
	/* Everything at once, fair. */
	a = with_cpus(with_uclamp(fair(SCHED_IDLE, 10), 0, 1024), CPUS(0));
	b = with_cpus(with_uclamp(fair(SCHED_OTHER, 0), 500, 1024), CPUS(1));
	ck_assert_uint_eq(plk_lend_kinds_changed(&a, &b), U | A | N);
	/* What combine makes of a lend, for each kind alone. */
	struct plk_sched_ctx wf = with_cpus(with_uclamp(fair(SCHED_OTHER, -5), 700, 1024), CPUS(4));
	struct plk_sched_ctx wr = with_cpus(with_uclamp(rt(SCHED_RR, 5), 700, 1024), CPUS(4));
	for (unsigned k = U; k <= R; k <<= 1) {
		struct plk_sched_ctx e = lent(&a, k == R ? &wr : &wf, 1, k);

		ck_assert_uint_eq(plk_lend_kinds_changed(&a, &e), k);
	}
}
END_TEST

static Suite *lend_suite(void)
{
	Suite *s = suite_create("lend");
	TCase *tc = tcase_create("lend");

	tcase_add_test(tc, uclamp_min_lent_is_the_max_of_the_waiters_and_the_base);
	tcase_add_test(tc, uclamp_max_lent_is_the_max_of_the_waiters_and_the_base);
	tcase_add_test(tc, a_low_uclamp_max_on_the_holder_never_caps_the_donated_minimum);
	tcase_add_test(tc, nice_lent_is_the_min_and_never_raises_the_holders_nice);
	tcase_add_test(tc, fair_policy_is_lifted_idle_to_batch_to_other_never_lowered);
	tcase_add_test(tc, rt_priority_is_lent_only_if_above_the_holders);
	tcase_add_test(tc, equal_rt_priorities_lend_the_same_policy_in_any_order);
	tcase_add_test(tc, rt_waiters_lend_no_nice_and_fair_waiters_lend_no_rt);
	tcase_add_test(tc, nice_is_not_lent_to_a_thread_that_is_rt_by_its_base_or_by_the_lend);
	tcase_add_test(tc, a_deadline_holder_is_never_changed);
	tcase_add_test(tc, a_deadline_waiter_never_lends_its_policy);
	tcase_add_test(tc, kinds_not_lent_by_the_lock_leave_the_base_unchanged);
	tcase_add_test(tc, waiters_policy_gives_the_waiters_cpus);
	tcase_add_test(tc, union_policy_adds_the_holders_cpus);
	tcase_add_test(tc, node_policy_keeps_the_union_within_the_waiters_nodes);
	tcase_add_test(tc, node_policy_without_numa_information_is_the_union);
	tcase_add_test(tc, cpus_outside_the_cpuset_are_dropped);
	tcase_add_test(tc, nothing_left_in_the_cpuset_falls_back_to_the_base_cpus);
	tcase_add_test(tc, cpus_are_lent_only_by_a_waiter_that_outranks_the_holder);
	tcase_add_test(tc, only_the_top_ranked_waiters_lend_their_cpus);
	tcase_add_test(tc, where_capacities_differ_no_lend_takes_the_holder_off_its_best_cpus);
	tcase_add_test(tc, an_empty_lend_is_the_identity);
	tcase_add_test(tc, merging_lends_of_two_locks_equals_folding_all_their_waiters);
	tcase_add_test(tc, merge_is_commutative_and_associative);
	tcase_add_test(tc, a_lend_never_lowers_the_holder);
	tcase_add_test(tc, no_lend_leaves_the_holder_below_its_base_in_any_kind);
	tcase_add_test(tc, waiters_equal_to_or_below_the_holder_leave_it_exactly_at_its_base);
	tcase_add_test(tc, waiters_that_do_not_outrank_the_holder_lend_no_cpus);
	tcase_add_test(tc, plk_lend_rank_follows_the_stated_order);
	tcase_add_test(tc, a_chain_passes_the_waiters_context_through_an_intermediate_owner);
	tcase_add_test(tc, a_chain_lends_cpus_with_the_rank_of_the_thread_they_belong_to);
	tcase_add_test(tc, a_sched_idle_waiter_lends_no_nice_better_than_19);
	tcase_add_test(tc, a_sched_idle_holder_lifted_by_a_lend_runs_at_the_lent_nice_not_its_latent_one);
	tcase_add_test(tc, under_union_a_chain_passes_on_the_lenders_cpus_not_the_middle_threads);
	tcase_add_test(tc, a_chain_gives_the_holder_only_cpus_of_threads_that_outrank_it);
	tcase_add_test(tc, a_multi_lock_chain_gives_the_holder_only_cpus_of_outranking_threads);
	tcase_add_test(tc, a_middle_thread_that_outranks_the_lender_passes_on_its_own_cpus);
	tcase_add_test(tc, plk_lend_kinds_changed_names_exactly_the_kinds_that_differ);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(lend_suite)

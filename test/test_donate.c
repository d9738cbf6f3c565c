/* SPDX-License-Identifier: MIT */
/*
 * test_donate.c - the donation engine, checked against the kernel's view
 * (sched_getattr, sched_getaffinity), never the library's bookkeeping.
 * Needs 2 CPUs and the privilege to lower nice (root or CAP_SYS_NICE);
 * uclamp is proven in the VM suite (test/vm), not here.
 */
#include <linux/capability.h>

#include "actor.h"

/* --- capabilities ---------------------------------------------------- */

START_TEST(caps_report_uclamp_exactly_when_the_kernel_accepts_it)
{
	struct plk_sched_attr a;
	bool kernel_uclamp;

	ck_assert_int_eq(plk_sched_getattr(0, &a), 0);
	a.sched_flags = PLK_SCHED_FLAG_KEEP_ALL | PLK_SCHED_FLAG_UTIL_CLAMP;
	kernel_uclamp = plk_sched_setattr(0, &a) == 0;
	ck_assert_int_eq(!!(proxylock_caps() & PROXYLOCK_DONATE_UCLAMP), kernel_uclamp);
	ck_assert(proxylock_caps() & PROXYLOCK_DONATE_AFFINITY);
	ck_assert_uint_eq(proxylock_donate_kinds() & ~proxylock_caps(), 0);
}
END_TEST

START_TEST(donate_env_selects_what_is_lent)
{
	/* Check runs each test in a fresh process: the variable is read
	 * at first use, which is here. */
	setenv("PROXYLOCK_DONATE", "affinity,nice", 1);
	ck_assert_uint_eq(proxylock_donate_kinds(),
	                  proxylock_caps() & (PROXYLOCK_DONATE_AFFINITY | PROXYLOCK_DONATE_NICE));
}
END_TEST

/* A nice-0 waiter on CPU 0 blocks on @m held by a nice-19 holder on
 * CPU 1: the holder must stay exactly as it is. */
static void assert_waiter_lends_nothing(proxylock_mutex_t *m)
{
	struct actor h, w;

	actor_start(&h, 19, 1);
	actor_start(&w, 0, 0);
	actor_do(&h, ACT_LOCK, m, 0);
	actor_block_on(&w, ACT_LOCK, m);
	usleep(20000);
	ck_assert_int_eq(nice_of(h.tid), 19);
	ck_assert(affinity_is(h.tid, 1, -1));
	actor_do(&h, ACT_UNLOCK, m, 0);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, m, 0);
	actor_quit(&h);
	actor_quit(&w);
}

START_TEST(donate_env_none_lends_nothing)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;

	setenv("PROXYLOCK_DONATE", "none", 1);
	ck_assert_uint_eq(proxylock_donate_kinds(), 0);
	assert_waiter_lends_nothing(&m);
}
END_TEST

/* --- affinity -------------------------------------------------------- */

/* A nice-1 holder on CPU 1, a nice-0 waiter on CPU 0: the waiter
 * outranks it, so it lends its CPU. */
static void affinity_scenario(int want_a, int want_b)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor h, w;

	require_nice_lending();
	actor_start(&h, 1, 1);
	actor_start(&w, 0, 0);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&w, ACT_LOCK, &m);
	ck_assert_msg(eventually(affinity_is(h.tid, want_a, want_b), 2000),
	              "holder did not get the waiter's CPU");
	actor_do(&h, ACT_UNLOCK, &m, 0);
	ck_assert_msg(kview_equal(&h.after, &h.base), "holder not back to its base after unlock");
	ck_assert(affinity_is(h.tid, 1, -1));
	ck_assert_int_eq(actor_wait(&w), 0);
	ck_assert_msg(kview_equal(&w.after, &w.base), "waiter changed by acquiring");
	actor_do(&w, ACT_UNLOCK, &m, 0);
	actor_quit(&h);
	actor_quit(&w);
}

START_TEST(holder_pinned_to_cpu1_runs_on_the_waiters_cpu0_and_returns_to_exactly_cpu1)
{
	affinity_scenario(0, -1);
}
END_TEST

START_TEST(union_policy_gives_the_holder_its_cpu_plus_the_waiters)
{
	ck_assert_int_eq(proxylock_affinity_policy_set(PROXYLOCK_AFFINITY_UNION), 0);
	affinity_scenario(0, 1);
}
END_TEST

START_TEST(node_policy_keeps_the_union_within_the_waiters_numa_node)
{
	/* One node here: node 0 holds both CPUs, so the union survives. */
	ck_assert_int_eq(proxylock_affinity_policy_set(PROXYLOCK_AFFINITY_NODE), 0);
	ck_assert_int_eq(proxylock_affinity_policy_set(42), EINVAL);
	affinity_scenario(0, 1);
}
END_TEST

/* --- nice ------------------------------------------------------------ */

START_TEST(holder_at_nice_19_runs_at_the_waiters_nice_0_and_returns_to_19)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor h, w;

	require_nice_lending();
	actor_start(&h, 19, -1);
	actor_start(&w, 0, -1);
	ck_assert_int_eq(h.base.nice, 19);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&w, ACT_LOCK, &m);
	ck_assert_msg(eventually(nice_of(h.tid) == 0, 2000), "holder still at nice %d", nice_of(h.tid));
	actor_do(&h, ACT_UNLOCK, &m, 0);
	ck_assert_int_eq(h.after.nice, 19);
	ck_assert(kview_equal(&h.after, &h.base));
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&w.after, &w.base));
	actor_quit(&h);
	actor_quit(&w);
}
END_TEST

START_TEST(per_lock_attribute_none_lends_nothing)
{
	proxylock_mutexattr_t attr;
	proxylock_mutex_t m;

	require_nice_lending();
	proxylock_mutexattr_init(&attr);
	ck_assert_int_eq(proxylock_mutexattr_setdonate(&attr, PROXYLOCK_DONATE_NONE), 0);
	proxylock_mutex_init(&m, &attr);
	assert_waiter_lends_nothing(&m);
}
END_TEST

START_TEST(per_lock_attribute_affinity_only_leaves_nice_alone)
{
	proxylock_mutexattr_t attr;
	proxylock_mutex_t m;
	struct actor h, w;

	require_nice_lending();
	proxylock_mutexattr_init(&attr);
	proxylock_mutexattr_setdonate(&attr, PROXYLOCK_DONATE_AFFINITY);
	proxylock_mutex_init(&m, &attr);
	actor_start(&h, 19, 1);
	actor_start(&w, 0, 0);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&w, ACT_LOCK, &m);
	ck_assert(eventually(affinity_is(h.tid, 0, -1), 2000));
	ck_assert_int_eq(nice_of(h.tid), 19);
	actor_do(&h, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&h.after, &h.base));
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, &m, 0);
	actor_quit(&h);
	actor_quit(&w);
}
END_TEST

/* Drop CAP_SYS_NICE from this (Check-forked) test process. */
static void drop_cap_sys_nice(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	ck_assert_int_eq(syscall(SYS_capget, &hdr, data), 0);
	for (int i = 0; i < 2; i++)
		data[i].effective = data[i].permitted = data[i].inheritable = 0;
	ck_assert_int_eq(syscall(SYS_capset, &hdr, data), 0);
}

START_TEST(a_nice_boost_the_kernel_refuses_is_skipped_and_counted_not_an_error)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct proxylock_stats st;
	struct actor h, w;

	/* Probed while privileged; then the privilege goes (as after a
	 * setuid, or with an RLIMIT_NICE that allows only part of a boost). */
	require_nice_lending();
	drop_cap_sys_nice();  /* per thread: the actors inherit it */
	actor_start(&w, 0, 0);
	actor_start(&h, 19, 1);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&w, ACT_LOCK, &m);
	ck_assert_msg(eventually(affinity_is(h.tid, 0, -1), 2000), "affinity not lent");
	ck_assert_int_eq(nice_of(h.tid), 19);  /* nice 0 refused: left as it was */
	proxylock_stats_get(&st);
	ck_assert_uint_gt(st.eperm_skipped, 0);
	actor_do(&h, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&h.after, &h.base));
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, &m, 0);
	actor_quit(&h);
	actor_quit(&w);
}
END_TEST

/* --- RT -------------------------------------------------------------- */

START_TEST(an_rt_waiter_lends_its_fifo_priority_and_the_holder_returns_to_cfs)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor h, w;

	require_rt_lending();
	actor_start(&h, 10, -1);
	memset(&w, 0, sizeof(w));
	w.cpu = -1;
	w.policy = SCHED_FIFO;
	w.rt_prio = 7;
	actor_launch(&w);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&w, ACT_LOCK, &m);
	ck_assert_msg(eventually(kview_of(h.tid).policy == SCHED_FIFO, 2000), "no RT lent");
	ck_assert_int_eq(kview_of(h.tid).rt_prio, 7);
	actor_do(&h, ACT_UNLOCK, &m, 0);
	ck_assert_int_eq(h.after.policy, SCHED_OTHER);
	ck_assert_int_eq(h.after.nice, 10);
	ck_assert(kview_equal(&h.after, &h.base));
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&w.after, &w.base));
	actor_quit(&h);
	actor_quit(&w);
}
END_TEST

static proxylock_mutex_t rtd_gate = PROXYLOCK_MUTEX_INITIALIZER;
static proxylock_mutex_t rtd_lock = PROXYLOCK_MUTEX_INITIALIZER;

/* At nice 0 and SCHED_FIFO 7: waits on rtd_gate (its base is read
 * then: RT), drops to SCHED_OTHER behind the library's back, and at once
 * waits on rtd_lock, well within the copy's 1 ms. */
static void *rt_dropper(void *arg)
{
	struct sched_param fifo = { .sched_priority = 7 }, other = { .sched_priority = 0 };

	(void)arg;
	set_nice_self(0);
	ck_assert_int_eq(sched_setscheduler(0, SCHED_FIFO, &fifo), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&rtd_gate), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&rtd_gate), 0);
	ck_assert_int_eq(sched_setscheduler(0, SCHED_OTHER, &other), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&rtd_lock), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&rtd_lock), 0);
	return NULL;
}

/*
 * A mutex waiter lends a copy of its context up to 1 ms old, but never
 * an RT one: a thread that dropped its RT policy since the copy was read
 * lends its nice 0, never SCHED_FIFO 7 (the copy would say FIFO).
 */
START_TEST(a_waiter_that_dropped_rt_since_its_last_wait_never_lends_rt)
{
	struct actor h;
	pthread_t w;
	uint64_t until;
	struct kview v;

	require_rt_lending();
	actor_start(&h, 10, -1);
	actor_do(&h, ACT_LOCK, &rtd_lock, 0);
	ck_assert_int_eq(proxylock_mutex_lock(&rtd_gate), 0);
	ck_assert_int_eq(pthread_create(&w, NULL, rt_dropper, NULL), 0);
	/* Release the gate the moment the dropper is queued on it, so that
	 * its next wait starts within microseconds of its base's read. */
	until = mono_ns() + time_bound_ns(5000000000ull);
	while (!(__atomic_load_n(&rtd_gate.__word, __ATOMIC_ACQUIRE) & 0x80000000u))
		ck_assert_msg(mono_ns() < until, "the dropper never queued on the gate");
	ck_assert_int_eq(proxylock_mutex_unlock(&rtd_gate), 0);
	ck_assert_msg(eventually((v = kview_of(h.tid)).policy != SCHED_OTHER || v.nice < 10, 2000),
	              "nothing lent to the holder");
	v = kview_of(h.tid);
	ck_assert_msg(v.policy == SCHED_OTHER, "lent the RT policy the waiter dropped (%d, prio %d)",
	              v.policy, v.rt_prio);
	ck_assert_int_eq(v.nice, 0);
	actor_do(&h, ACT_UNLOCK, &rtd_lock, 0);
	ck_assert(kview_equal(&h.after, &h.base));
	ck_assert_int_eq(pthread_join(w, NULL), 0);
	actor_quit(&h);
}
END_TEST

/* --- chains ---------------------------------------------------------- */

START_TEST(three_thread_chain_lends_the_first_waiters_context_to_the_last_owner)
{
	proxylock_mutex_t l1 = PROXYLOCK_MUTEX_INITIALIZER, l2 = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor a, b, c;

	require_nice_lending();
	actor_start(&a, 0, 0);   /* big: nice 0 on CPU 0 */
	actor_start(&b, 19, 1);
	actor_start(&c, 19, 1);
	actor_do(&c, ACT_LOCK, &l2, 0);
	actor_do(&b, ACT_LOCK, &l1, 0);
	actor_block_on(&b, ACT_LOCK, &l2);   /* B waits on C */
	actor_block_on(&a, ACT_LOCK, &l1);   /* A waits on B: C must get A */
	ck_assert_msg(eventually(nice_of(c.tid) == 0 && affinity_is(c.tid, 0, -1), 2000),
	              "end of chain at nice %d", nice_of(c.tid));
	ck_assert(nice_of(b.tid) == 0 && affinity_is(b.tid, 0, -1));
	actor_do(&c, ACT_UNLOCK, &l2, 0);
	ck_assert(kview_equal(&c.after, &c.base));
	ck_assert_int_eq(actor_wait(&b), 0);  /* B now owns l2 and l1, A still waits */
	ck_assert_int_eq(nice_of(b.tid), 0);
	actor_do(&b, ACT_UNLOCK, &l2, 0);
	ck_assert_int_eq(b.after.nice, 0);    /* l1's waiter still lends */
	actor_do(&b, ACT_UNLOCK, &l1, 0);
	ck_assert(kview_equal(&b.after, &b.base));
	ck_assert_int_eq(actor_wait(&a), 0);
	actor_do(&a, ACT_UNLOCK, &l1, 0);
	ck_assert(kview_equal(&a.after, &a.base));
	actor_quit(&a);
	actor_quit(&b);
	actor_quit(&c);
}
END_TEST

/* The locks of a chain X -> L2 (held by W) -> L1 (held by H): L2 lends
 * @l2_kinds, L1 everything. */
static void chain_locks(proxylock_mutex_t *l1, proxylock_mutex_t *l2, unsigned l2_kinds)
{
	proxylock_mutexattr_t attr;

	proxylock_mutexattr_init(&attr);
	ck_assert_int_eq(proxylock_mutexattr_setdonate(&attr, l2_kinds), 0);
	proxylock_mutex_init(l2, &attr);
	proxylock_mutex_init(l1, NULL);
}

/* Its threads: H nice 5 on @h_cpu, W nice 19 on @w_cpu, X nice 0 on CPU 0. */
static void chain_actors(struct actor *h, struct actor *w, struct actor *x, int h_cpu, int w_cpu)
{
	require_nice_lending();
	actor_start(h, 5, h_cpu);
	actor_start(w, 19, w_cpu);
	actor_start(x, 0, 0);
}

/* H takes L1 and W takes L2, with W on @w_cpu and H on @h_cpu. */
static void chain_hold(struct actor *h, struct actor *w, struct actor *x, proxylock_mutex_t *l1,
                       proxylock_mutex_t *l2, unsigned l2_kinds, int h_cpu, int w_cpu)
{
	chain_locks(l1, l2, l2_kinds);
	chain_actors(h, w, x, h_cpu, w_cpu);
	actor_do(h, ACT_LOCK, l1, 0);
	actor_do(w, ACT_LOCK, l2, 0);
}

/* The chain built with X waiting first, W on CPU 1; chain_unwind
 * releases it all. */
static void chain_start(struct actor *h, struct actor *w, struct actor *x, proxylock_mutex_t *l1,
                        proxylock_mutex_t *l2, unsigned l2_kinds, int h_cpu)
{
	chain_hold(h, w, x, l1, l2, l2_kinds, h_cpu, 1);
	actor_block_on(x, ACT_LOCK, l2);  /* X waits on W */
	actor_block_on(w, ACT_LOCK, l1);  /* W waits on H */
}

/* Unlock H's L1, then W's two locks, then X's L2 if @x_waits; every
 * thread back at its base. */
static void chain_unwind_x(struct actor *h, struct actor *w, struct actor *x, proxylock_mutex_t *l1,
                           proxylock_mutex_t *l2, bool x_waits)
{
	actor_do(h, ACT_UNLOCK, l1, 0);
	ck_assert(kview_equal(&h->after, &h->base));
	ck_assert_int_eq(actor_wait(w), 0);
	actor_do(w, ACT_UNLOCK, l1, 0);
	actor_do(w, ACT_UNLOCK, l2, 0);
	ck_assert(kview_equal(&w->after, &w->base));
	if (x_waits) {
		ck_assert_int_eq(actor_wait(x), 0);
		actor_do(x, ACT_UNLOCK, l2, 0);
	}
	actor_quit(h);
	actor_quit(w);
	actor_quit(x);
}

static void chain_unwind(struct actor *h, struct actor *w, struct actor *x, proxylock_mutex_t *l1,
                         proxylock_mutex_t *l2)
{
	chain_unwind_x(h, w, x, l1, l2, true);
}

/*
 * Review finding C1 of issue 30: W, a nice-19 thread on CPU 1, is lent
 * nice 0 by X through a lock that lends only nice.  E(W) then outranks H
 * (nice 5), but CPU 1 is W's own, a nice-19 thread's: H gets the nice
 * through the chain and stays on its CPU 0.
 */
START_TEST(a_chain_never_moves_the_holder_onto_the_cpus_of_a_thread_it_outranks)
{
	proxylock_mutex_t l1, l2;
	struct actor h, w, x;

	chain_start(&h, &w, &x, &l1, &l2, PROXYLOCK_DONATE_NICE, 0);
	ck_assert_msg(eventually(nice_of(h.tid) == 0, 2000), "H at nice %d, not X's 0",
	              nice_of(h.tid));
	for (int i = 0; i < 20; i++) {
		struct kview v = kview_of(h.tid);

		ck_assert_msg(affinity_is(h.tid, 0, -1), "H moved off CPU 0 (%d CPUs, CPU 1 %s)",
		              CPU_COUNT(&v.cpus), CPU_ISSET(1, &v.cpus) ? "among them" : "not");
		usleep(1000);
	}
	chain_unwind(&h, &w, &x, &l1, &l2);
}
END_TEST

/*
 * Review finding C2 of issue 30: X (nice 0, CPU 0) waits on W through a
 * lock that lends only CPUs, so W stays at nice 19 on X's CPU; W waits
 * on H (nice 5, CPU 1).  X outranks H, so X's CPU reaches H through W,
 * whose own rank would lend nothing.
 */
START_TEST(a_chain_lends_the_first_waiters_cpus_when_it_outranks_the_last_owner)
{
	proxylock_mutex_t l1, l2;
	struct actor h, w, x;

	chain_start(&h, &w, &x, &l1, &l2, PROXYLOCK_DONATE_AFFINITY, 1);
	ck_assert_msg(eventually(affinity_is(h.tid, 0, -1), 2000), "H is not on X's CPU 0");
	ck_assert_int_eq(nice_of(h.tid), 5);
	ck_assert_int_eq(nice_of(w.tid), 19);
	chain_unwind(&h, &w, &x, &l1, &l2);
}
END_TEST

/*
 * X (nice 0, CPU 0) waits on L2 (CPUs only), held by W (nice
 * 19, CPU 0): E(W) is W's base, but its CPUs now rank as X's.  W waits
 * on L1, held by H (nice 5, CPU 1): H gets CPU 0, X's (X outranks H).
 * X times out: CPU 0 is W's again, a nice-19 thread's, which H outranks.
 * H must go back to CPU 1.
 */
START_TEST(a_lender_that_leaves_takes_its_rank_out_of_the_chain)
{
	proxylock_mutex_t l1, l2;
	struct actor h, w, x;

	chain_hold(&h, &w, &x, &l1, &l2, PROXYLOCK_DONATE_AFFINITY, 1, 0);
	x.timeout_ns = 1500 * 1000000L;
	actor_block_on(&x, ACT_TIMEDLOCK, &l2);
	actor_block_on(&w, ACT_LOCK, &l1);
	ck_assert_msg(eventually(affinity_is(h.tid, 0, -1), 2000), "H not on X's CPU 0");
	ck_assert_int_eq(actor_wait(&x), ETIMEDOUT);
	ck_assert_msg(eventually(affinity_is(h.tid, 1, -1), 2000),
	              "X left; H (nice %d) still on CPU 0, the CPU of W (nice %d) which it outranks",
	              nice_of(h.tid), nice_of(w.tid));
	chain_unwind_x(&h, &w, &x, &l1, &l2, false);
}
END_TEST

/*
 * The same chain built in the other order.  W (nice 19, CPU 0)
 * already waits on L1, held by H (nice 5, CPU 1): no CPUs.  Then X (nice
 * 0, CPU 0) waits on L2 (CPUs only), held by W: X outranks H, so X's
 * CPU 0 must reach H, as it does when X waits first (C2's test).
 */
START_TEST(a_lender_joining_a_blocked_chain_reaches_its_end)
{
	proxylock_mutex_t l1, l2;
	struct actor h, w, x;

	chain_hold(&h, &w, &x, &l1, &l2, PROXYLOCK_DONATE_AFFINITY, 1, 0);
	actor_block_on(&w, ACT_LOCK, &l1);
	usleep(50000);
	ck_assert_msg(affinity_is(h.tid, 1, -1), "W alone moved H");
	actor_block_on(&x, ACT_LOCK, &l2);
	ck_assert_msg(eventually(affinity_is(h.tid, 0, -1), 2000),
	              "X (nice 0, CPU 0) waits through W; H (nice %d) not on CPU 0", nice_of(h.tid));
	chain_unwind(&h, &w, &x, &l1, &l2);
}
END_TEST

/* The chain above, H one of two readers of a writer-preferring rwlock
 * that W waits to write. */
START_TEST(a_lender_joining_a_chain_reaches_an_rwlock_reader)
{
	proxylock_mutex_t l2, unused;
	proxylock_rwlock_t rw;
	proxylock_rwlockattr_t rwa;
	struct actor h, h2, w, x;

	chain_locks(&unused, &l2, PROXYLOCK_DONATE_AFFINITY);
	proxylock_rwlockattr_init(&rwa);
	ck_assert_int_eq(proxylock_rwlockattr_setkind(&rwa, PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE), 0);
	ck_assert_int_eq(proxylock_rwlock_init(&rw, &rwa), 0);
	chain_actors(&h, &w, &x, 1, 0);
	actor_start(&h2, 5, 1);
	actor_do(&h, ACT_RDLOCK, &rw, 0);
	actor_do(&h2, ACT_RDLOCK, &rw, 0);
	actor_do(&w, ACT_LOCK, &l2, 0);
	actor_block_on(&w, ACT_WRLOCK, &rw);
	usleep(50000);
	ck_assert_msg(affinity_is(h.tid, 1, -1), "W alone moved H");
	actor_block_on(&x, ACT_LOCK, &l2);
	ck_assert_msg(eventually(affinity_is(h.tid, 0, -1), 2000),
	              "X (nice 0, CPU 0) waits through W; reader H (nice %d) not on CPU 0",
	              nice_of(h.tid));
	actor_do(&h, ACT_RWUNLOCK, &rw, 0);
	actor_do(&h2, ACT_RWUNLOCK, &rw, 0);
	actor_quit(&h2);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_RWUNLOCK, &rw, 0);
	actor_do(&w, ACT_UNLOCK, &l2, 0);
	ck_assert_int_eq(actor_wait(&x), 0);
	actor_do(&x, ACT_UNLOCK, &l2, 0);
	actor_quit(&h);
	actor_quit(&w);
	actor_quit(&x);
}
END_TEST

/*
 * A SCHED_IDLE holder H (latent nice @latent) and a SCHED_OTHER waiter
 * at @waiter_nice: H is lifted to OTHER at the waiter's nice, never at
 * its own latent one (nice 0 is 68 times a nice-19 waiter's weight), and
 * its unlock returns with H exactly at its base: IDLE, its latent nice
 * (sched_setattr ignores the nice it is given with SCHED_IDLE: H came
 * back IDLE at the lent nice, 'policy 5 nice 19; its base is policy 5
 * nice 0', before schedctl set it by itself).
 */
static void idle_holder_case(int latent, int waiter_nice)
{
	proxylock_mutex_t l1 = PROXYLOCK_MUTEX_INITIALIZER;
	struct plk_sched_attr fair = { .sched_policy = SCHED_OTHER, .sched_nice = latent };
	struct plk_sched_attr idle = { .sched_policy = SCHED_IDLE };
	struct actor h, w;
	struct kview base, v;

	require_nice_lending();
	actor_start(&h, 0, 1);
	actor_start(&w, waiter_nice, 1);
	/* The kernel keeps a nice only under a fair policy: set it, then IDLE. */
	ck_assert_int_eq(plk_sched_setattr(h.tid, &fair), 0);
	ck_assert_int_eq(plk_sched_setattr(h.tid, &idle), 0);
	base = kview_of(h.tid);
	ck_assert_int_eq(base.nice, latent);
	actor_do(&h, ACT_LOCK, &l1, 0);
	actor_block_on(&w, ACT_LOCK, &l1);
	ck_assert_msg(eventually(kview_of(h.tid).policy == SCHED_OTHER, 2000), "H not lifted to OTHER");
	v = kview_of(h.tid);
	ck_assert_msg(v.nice == waiter_nice, "SCHED_IDLE H lifted to SCHED_OTHER at nice %d by a nice-%d waiter",
	              v.nice, waiter_nice);
	actor_do(&h, ACT_UNLOCK, &l1, 0);
	ck_assert_msg(kview_equal(&h.after, &base),
	              "H's unlock returned with policy %u nice %d; its base is policy %u nice %d",
	              h.after.policy, h.after.nice, base.policy, base.nice);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, &l1, 0);
	actor_quit(&h);
	actor_quit(&w);
}

START_TEST(a_sched_idle_holder_is_lifted_no_higher_than_its_waiter_and_returns_to_its_latent_nice)
{
	idle_holder_case(0, 19);
	idle_holder_case(10, 0);
}
END_TEST

START_TEST(releasing_one_of_two_held_locks_keeps_the_other_locks_donation)
{
	proxylock_mutex_t l1 = PROXYLOCK_MUTEX_INITIALIZER, l2 = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor t, w1, w2;

	require_nice_lending();
	actor_start(&t, 19, -1);
	actor_start(&w1, 5, -1);
	actor_start(&w2, 0, -1);
	actor_do(&t, ACT_LOCK, &l1, 0);
	actor_do(&t, ACT_LOCK, &l2, 0);
	actor_block_on(&w1, ACT_LOCK, &l1);
	ck_assert(eventually(nice_of(t.tid) == 5, 2000));
	actor_block_on(&w2, ACT_LOCK, &l2);
	ck_assert(eventually(nice_of(t.tid) == 0, 2000));
	actor_do(&t, ACT_UNLOCK, &l2, 0);
	ck_assert_int_eq(t.after.nice, 5);    /* l1's waiter still lends */
	actor_do(&t, ACT_UNLOCK, &l1, 0);
	ck_assert(kview_equal(&t.after, &t.base));
	ck_assert_int_eq(actor_wait(&w1), 0);
	ck_assert_int_eq(actor_wait(&w2), 0);
	actor_do(&w1, ACT_UNLOCK, &l1, 0);
	actor_do(&w2, ACT_UNLOCK, &l2, 0);
	actor_quit(&t);
	actor_quit(&w1);
	actor_quit(&w2);
}
END_TEST

START_TEST(the_remaining_waiters_donation_moves_to_the_next_owner)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor t, w1, w2;

	require_nice_lending();
	actor_start(&t, 19, -1);
	actor_start(&w1, 15, -1);
	actor_start(&w2, 0, -1);
	actor_do(&t, ACT_LOCK, &m, 0);
	actor_block_on(&w1, ACT_LOCK, &m);
	actor_block_on(&w2, ACT_LOCK, &m);
	ck_assert(eventually(nice_of(t.tid) == 0, 2000));
	actor_do(&t, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&t.after, &t.base));
	/* w1 (FIFO first) gets it, and w2, still waiting, lends to w1. */
	ck_assert_int_eq(actor_wait(&w1), 0);
	ck_assert_msg(eventually(nice_of(w1.tid) == 0, 2000), "new owner at nice %d", nice_of(w1.tid));
	actor_do(&w1, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&w1.after, &w1.base));
	ck_assert_int_eq(actor_wait(&w2), 0);
	actor_do(&w2, ACT_UNLOCK, &m, 0);
	actor_quit(&t);
	actor_quit(&w1);
	actor_quit(&w2);
}
END_TEST

START_TEST(a_timed_out_waiter_withdraws_its_donation)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor h, w;

	require_nice_lending();
	actor_start(&h, 19, 1);
	actor_start(&w, 0, 0);
	actor_do(&h, ACT_LOCK, &m, 0);
	w.timeout_ns = 300 * 1000000L;
	actor_block_on(&w, ACT_TIMEDLOCK, &m);
	ck_assert(eventually(nice_of(h.tid) == 0 && affinity_is(h.tid, 0, -1), 2000));
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);
	/* Withdrawn before the waiter returned: the holder, still holding
	 * the lock, is back to exactly its base. */
	ck_assert_int_eq(nice_of(h.tid), 19);
	ck_assert(affinity_is(h.tid, 1, -1));
	ck_assert_int_eq(proxylock_mutex_owner(&m), h.tid);
	actor_do(&h, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&h.after, &h.base));
	ck_assert_uint_eq(m.__word, 0);
	actor_quit(&h);
	actor_quit(&w);
}
END_TEST

START_TEST(a_holder_exiting_while_boosted_leaves_no_trace_on_its_waiter)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER, m2 = PROXYLOCK_MUTEX_INITIALIZER;
	struct proxylock_stats st0, st1;
	struct actor h, w, h2;

	require_nice_lending();
	/* A holder that unlocks and exits at once. */
	actor_start(&h, 19, 1);
	actor_start(&w, 0, 0);
	actor_do(&h, ACT_LOCK, &m, 0);
	actor_block_on(&w, ACT_LOCK, &m);
	ck_assert(eventually(nice_of(h.tid) == 0, 2000));
	actor_do(&h, ACT_UNLOCK, &m, 0);
	actor_post(&h, ACT_EXIT, NULL);
	pthread_join(h.th, NULL);
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&w.after, &w.base));
	/* A holder that exits still holding the lock, boosted. */
	actor_start(&h2, 19, 1);
	actor_do(&h2, ACT_LOCK, &m2, 0);
	w.timeout_ns = 200 * 1000000L;
	actor_block_on(&w, ACT_TIMEDLOCK, &m2);
	ck_assert(eventually(nice_of(h2.tid) == 0, 2000));
	actor_post(&h2, ACT_EXIT, NULL);
	pthread_join(h2.th, NULL);
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);
	ck_assert(kview_equal(&w.after, &w.base));
	/* The dead owner's TID is still in the word: waiting again makes no
	 * sched call toward it.  (That the library also refuses a TID reused
	 * by another process, via tgkill(getpid(), tid, 0), cannot be staged
	 * here: the kernel will not hand out a chosen TID.) */
	proxylock_stats_get(&st0);
	actor_block_on(&w, ACT_TIMEDLOCK, &m2);
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);
	proxylock_stats_get(&st1);
	ck_assert_uint_eq(st1.setattr_calls, st0.setattr_calls);
	ck_assert_uint_eq(st1.setaff_calls, st0.setaff_calls);
	actor_quit(&w);
}
END_TEST

START_TEST(errorcheck_lock_that_would_close_a_cycle_is_edeadlk)
{
	proxylock_mutexattr_t attr;
	proxylock_mutex_t l1, l2;
	struct actor a, b;

	proxylock_mutexattr_init(&attr);
	proxylock_mutexattr_settype(&attr, PROXYLOCK_MUTEX_ERRORCHECK);
	proxylock_mutex_init(&l1, &attr);
	proxylock_mutex_init(&l2, &attr);
	actor_start(&a, 0, -1);
	actor_start(&b, 0, -1);
	actor_do(&a, ACT_LOCK, &l1, 0);
	actor_do(&b, ACT_LOCK, &l2, 0);
	actor_block_on(&a, ACT_LOCK, &l2);     /* A waits on B */
	actor_do(&b, ACT_LOCK, &l1, EDEADLK);  /* B would wait on A */
	actor_do(&b, ACT_UNLOCK, &l2, 0);
	ck_assert_int_eq(actor_wait(&a), 0);
	actor_do(&a, ACT_UNLOCK, &l2, 0);
	actor_do(&a, ACT_UNLOCK, &l1, 0);
	actor_quit(&a);
	actor_quit(&b);
}
END_TEST

START_TEST(a_normal_lock_cycle_deadlocks_without_the_chain_walk_looping)
{
	proxylock_mutex_t l1 = PROXYLOCK_MUTEX_INITIALIZER, l2 = PROXYLOCK_MUTEX_INITIALIZER;
	struct proxylock_stats st;
	struct actor a, b;

	require_nice_lending();
	actor_start(&a, 0, 0);
	actor_start(&b, 19, 1);
	actor_do(&a, ACT_LOCK, &l1, 0);
	actor_do(&b, ACT_LOCK, &l2, 0);
	a.timeout_ns = b.timeout_ns = 300 * 1000000L;
	actor_block_on(&a, ACT_TIMEDLOCK, &l2);
	actor_block_on(&b, ACT_TIMEDLOCK, &l1);  /* the cycle closes */
	ck_assert_int_eq(actor_wait(&a), ETIMEDOUT);
	ck_assert_int_eq(actor_wait(&b), ETIMEDOUT);
	proxylock_stats_get(&st);
	ck_assert_uint_le(st.chain_steps, 4 * PROXYLOCK_CHAIN_MAX);
	actor_do(&a, ACT_UNLOCK, &l1, 0);
	actor_do(&b, ACT_UNLOCK, &l2, 0);
	ck_assert(kview_equal(&a.after, &a.base));
	ck_assert(kview_equal(&b.after, &b.base));
	actor_quit(&a);
	actor_quit(&b);
}
END_TEST

/* --- no syscall when nothing changes --------------------------------- */

static proxylock_mutex_t sym_lock = PROXYLOCK_MUTEX_INITIALIZER;

static void *sym_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		proxylock_mutex_lock(&sym_lock);
		burn_ns(2000);
		if (i % 32 == 0)
			sched_yield();
		proxylock_mutex_unlock(&sym_lock);
	}
	return NULL;
}

START_TEST(symmetric_contention_makes_zero_sched_set_calls)
{
	struct proxylock_stats st;
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, sym_worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	proxylock_stats_get(&st);
	ck_assert_msg(st.sleeps > 100, "too little contention (%lu sleeps)", (unsigned long)st.sleeps);
	ck_assert_uint_eq(st.setattr_calls, 0);
	ck_assert_uint_eq(st.setaff_calls, 0);
}
END_TEST

/* --- lending never hurts: lower and equal waiters lend no CPUs -------- */

/* The CPU thread @tid last ran on: /proc's stat, field 39 (processor). */
static int processor_of(pid_t tid)
{
	char buf[1024], *p;
	int cpu = -1;

	ck_assert(task_file_line(tid, "stat", buf, sizeof(buf)));
	p = strrchr(buf, ')');
	ck_assert_ptr_nonnull(p);
	/* Field 3 (state) follows ") "; the processor is 36 fields on. */
	p += 2;
	for (int field = 3; field < 39 && p; field++)
		if ((p = strchr(p, ' ')))
			p++;
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, "%d", &cpu), 1);
	return cpu;
}

#define LOW_ROUNDS 20
#define LOW_SAMPLES 50

/*
 * The issue-30 case: a nice-0 holder alone on CPU 0 runs short CPU-bound
 * sections; a nice-19 background thread pinned to CPU 1 waits on the same
 * lock now and then.  The waiter does not outrank the holder, so the
 * holder is never moved: sampled by the kernel's view all through each
 * section the background waiter sleeps in (actor_block_on returns once
 * it has queued and lent), its affinity stays exactly {0} and it runs on
 * CPU 0.
 */
START_TEST(a_nice_19_waiter_never_moves_a_nice_0_holder_off_its_cpu)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	pid_t me = gettid_();
	struct kview base;
	struct actor bg;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pin_self(0);
	set_nice_self(0);
	usleep(2000);  /* any copy of our base read before is past PLK_BASE_TTL_NS */
	base = kview_of(0);
	actor_start(&bg, 19, 1);
	for (int round = 0; round < LOW_ROUNDS; round++) {
		ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
		actor_block_on(&bg, ACT_LOCK, &m);
		for (int i = 0; i < LOW_SAMPLES; i++) {
			struct kview now;
			int cpu;

			burn_ns(20000);  /* the section's work */
			now = kview_of(0);
			cpu = processor_of(me);
			ck_assert_msg(CPU_EQUAL(&now.cpus, &base.cpus),
			              "round %d, sample %d: the holder's affinity is %d CPUs "
			              "(CPU 1 %s), not {0}, with a nice-19 waiter on CPU 1",
			              round, i, CPU_COUNT(&now.cpus),
			              CPU_ISSET(1, &now.cpus) ? "in it" : "not in it");
			ck_assert_msg(cpu == 0, "round %d, sample %d: the holder ran on CPU %d",
			              round, i, cpu);
			ck_assert_int_eq(now.nice, 0);
		}
		ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
		ck_assert_int_eq(actor_wait(&bg), 0);
		actor_do(&bg, ACT_UNLOCK, &m, 0);
	}
	actor_quit(&bg);
	{
		struct kview after = kview_of(0);

		ck_assert(kview_equal(&after, &base));
	}
}
END_TEST

/* --- a lend overtakes a restore in flight (issue 31) ------------------ */

static int ot_stop;

static void *ot_hog(void *arg)
{
	(void)arg;
	pin_self(1);
	set_nice_self(0);
	while (!__atomic_load_n(&ot_stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

#define OT_TRIES 10

/*
 * The waitwork case (a worker's unlock restores it among the hogs while
 * its waiter lends again): a nice-19 holder pinned to CPU 1, where a
 * nice-0 hog spins, is lent nice 0 and CPU 0 by a waiter.  Its unlock
 * restores it, holding its apply token; the restore's sched_setaffinity
 * moves it among the hog at nice 19, where it waits to run again inside
 * the call, a hog's slice times 1024/15.  A lend made then (seen once
 * the kernel shows the restore's CPU, with the unlock not returned) is
 * in the kernel when proxylock_lend_begin returns, not when the starved
 * holder comes back; once it ends, the holder is exactly at its base.
 */
START_TEST(a_lend_overtakes_a_restore_in_flight_on_its_starved_holder)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	int in_flight = 0;
	struct actor h, w;
	pthread_t hog;

	require_nice_lending();
	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pin_self(0);
	set_nice_self(0);
	usleep(2000);  /* our copy of the base is past PLK_BASE_TTL_NS */
	actor_start(&h, 19, 1);
	actor_start(&w, 0, 0);
	__atomic_store_n(&ot_stop, 0, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_create(&hog, NULL, ot_hog, NULL), 0);
	for (int i = 0; i < OT_TRIES && !in_flight; i++) {
		proxylock_lend_t l;
		struct kview now;

		actor_do(&h, ACT_LOCK, &m, 0);
		actor_block_on(&w, ACT_LOCK, &m);
		ck_assert_msg(eventually(affinity_is(h.tid, 0, -1) && nice_of(h.tid) == 0, 2000),
		              "the holder was not lent the waiter's CPU 0 and nice 0");
		actor_post(&h, ACT_UNLOCK, &m);
		ck_assert_msg(eventually(affinity_is(h.tid, 1, -1), 2000),
		              "the holder's restore did not move it back to CPU 1");
		in_flight = !__atomic_load_n(&h.done, __ATOMIC_ACQUIRE);
		ck_assert_int_eq(proxylock_lend_begin(h.tid, PROXYLOCK_DONATE_ALL, &l), 0);
		now = kview_of(h.tid);
		if (in_flight) {
			ck_assert_msg(CPU_COUNT(&now.cpus) == 1 && CPU_ISSET(0, &now.cpus) &&
			              now.nice == 0,
			              "try %d: the lend is not in the kernel when it returns: the holder, "
			              "starved inside its restore, has nice %d on %s (its unlock %s)",
			              i, now.nice, CPU_ISSET(1, &now.cpus) ? "CPU 1" : "other CPUs",
			              __atomic_load_n(&h.done, __ATOMIC_ACQUIRE) ? "returned since"
			                                                         : "not returned yet");
		}
		ck_assert_int_eq(proxylock_lend_end(&l), 0);
		ck_assert_int_eq(actor_wait(&h), 0);
		now = kview_of(h.tid);
		ck_assert_msg(kview_equal(&now, &h.base),
		              "try %d: the holder is not at its base once its unlock returned and "
		              "the lend ended: nice %d, %d CPUs", i, now.nice, CPU_COUNT(&now.cpus));
		ck_assert_int_eq(actor_wait(&w), 0);
		actor_do(&w, ACT_UNLOCK, &m, 0);
	}
	__atomic_store_n(&ot_stop, 1, __ATOMIC_RELAXED);
	pthread_join(hog, NULL);
	actor_quit(&h);
	actor_quit(&w);
	/* Memcheck runs one thread at a time: the hog may hold the holder off
	 * anywhere, or nowhere. */
	ck_assert_msg(in_flight || under_valgrind(), "in %d tries the holder's restore never "
	              "stayed in flight long enough to lend during it (is CPU 1's hog running?)",
	              OT_TRIES);
}
END_TEST

#define EQ_ROUNDS 20

/* Sched calls (sched_setattr and sched_setaffinity) made so far. */
static uint64_t sched_calls(void)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return st.setattr_calls + st.setaff_calls;
}

/*
 * Contended acquisitions between equal threads (nice 0, SCHED_OTHER, no
 * clamps) on different CPUs cost no scheduler call: neither outranks the
 * other, so nothing is lent, and the holder's kernel view is its base
 * throughout.  @rw: an rwlock, its waiter a reader or (odd rounds) a
 * writer; else a mutex.
 */
static void equal_threads_contend(bool rw)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	proxylock_rwlock_t l = PROXYLOCK_RWLOCK_INITIALIZER;
	uint64_t calls, sleeps;
	struct actor h, w;
	int moved = -1;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	actor_start(&h, 0, 0);
	actor_start(&w, 0, 1);
	calls = sched_calls();
	sleeps = sleeps_so_far();
	for (int round = 0; round < EQ_ROUNDS; round++) {
		if (rw) {
			actor_do(&h, ACT_WRLOCK, &l, 0);
			actor_block_on(&w, round % 2 ? ACT_WRLOCK : ACT_RDLOCK, &l);
		} else {
			actor_do(&h, ACT_LOCK, &m, 0);
			actor_block_on(&w, ACT_LOCK, &m);
		}
		if (moved < 0 && !(kview_equal(&h.after, &h.base) && affinity_is(h.tid, 0, -1)))
			moved = round;
		actor_do(&h, rw ? ACT_RWUNLOCK : ACT_UNLOCK, rw ? (void *)&l : (void *)&m, 0);
		ck_assert_int_eq(actor_wait(&w), 0);
		actor_do(&w, rw ? ACT_RWUNLOCK : ACT_UNLOCK, rw ? (void *)&l : (void *)&m, 0);
	}
	ck_assert_uint_ge(sleeps_so_far() - sleeps, EQ_ROUNDS);
	ck_assert_msg(sched_calls() == calls, "%lu scheduler calls for %d contended acquisitions "
	              "between equal threads", (unsigned long)(sched_calls() - calls), EQ_ROUNDS);
	ck_assert_msg(moved < 0, "round %d: the holder was changed by an equal waiter", moved);
	actor_quit(&h);
	actor_quit(&w);
}

START_TEST(contended_mutex_acquisitions_between_equal_threads_make_no_scheduler_call)
{
	equal_threads_contend(false);
}
END_TEST

START_TEST(contended_rwlock_acquisitions_between_equal_threads_make_no_scheduler_call)
{
	equal_threads_contend(true);
}
END_TEST

static proxylock_mutex_t eqc_m = PROXYLOCK_MUTEX_INITIALIZER;
static proxylock_cond_t eqc_c = PROXYLOCK_COND_INITIALIZER;
static int eqc_go;

/* Waits for eqc_go under eqc_m, on CPU 1, at the creator's nice and policy. */
static void *eqc_waiter(void *p)
{
	(void)p;
	pin_self(1);
	proxylock_mutex_lock(&eqc_m);
	while (!eqc_go)
		ck_assert_int_eq(proxylock_cond_wait(&eqc_c, &eqc_m), 0);
	proxylock_mutex_unlock(&eqc_m);
	return NULL;
}

/* A condvar waiter moved onto the mutex by a broadcast under it lends the
 * owner nothing when it is the owner's equal (it inherits the owner's
 * nice and policy): no scheduler call, the owner stays on CPU 0. */
START_TEST(a_condvar_waiter_moved_onto_an_equal_owners_mutex_makes_no_scheduler_call)
{
	uint64_t calls;
	int moved = -1;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pin_self(0);
	calls = sched_calls();
	for (int round = 0; round < EQ_ROUNDS; round++) {
		pthread_t th;

		eqc_go = 0;
		ck_assert_int_eq(pthread_create(&th, NULL, eqc_waiter, NULL), 0);
		ck_assert(eventually(__atomic_load_n(&eqc_c.__waiters, __ATOMIC_ACQUIRE) == 1,
		                     bound_ms(5000)));
		proxylock_mutex_lock(&eqc_m);
		eqc_go = 1;
		proxylock_cond_broadcast(&eqc_c);
		ck_assert_msg(__atomic_load_n(&eqc_m.__word, __ATOMIC_RELAXED) & 0x80000000u,
		              "round %d: the waiter was not moved onto the mutex", round);
		if (moved < 0 && !affinity_is(0, 0, -1))
			moved = round;
		proxylock_mutex_unlock(&eqc_m);
		pthread_join(th, NULL);
	}
	ck_assert_msg(sched_calls() == calls, "%lu scheduler calls for %d condvar moves between "
	              "equal threads", (unsigned long)(sched_calls() - calls), EQ_ROUNDS);
	ck_assert_msg(moved < 0, "round %d: the owner was moved by its equal", moved);
}
END_TEST

/* --- storms: the invariant under load -------------------------------- */

#define RND_THREADS 16
#define RND_LOCKS 8
#define RND_OPS_TOTAL 100000

static proxylock_mutex_t rnd_locks[RND_LOCKS];
static int rnd_fail;

struct rnd_arg {
	int id;
	unsigned seed;
	int nlocks;  /* storm over the first nlocks locks */
};

/* A thread that holds nothing must look exactly like its base. */
static void check_at_base(const struct kview *base, const char *when)
{
	struct kview now = kview_of(0);

	if (!kview_equal(&now, base)) {
		__atomic_store_n(&rnd_fail, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "tid %d %s: nice %d (base %d), %d cpus (base %d)\n", gettid_(), when,
		        now.nice, base->nice, CPU_COUNT(&now.cpus), CPU_COUNT(&base->cpus));
	}
}

static void *rnd_worker(void *p)
{
	struct rnd_arg *a = p;
	struct kview base;
	int ops = RND_OPS_TOTAL / RND_THREADS;

	set_nice_self((a->id * 7) % 20);
	if (a->id % 3 < 2)
		pin_self(a->id % 3);
	base = kview_of(0);
	for (int i = 0; i < ops; i++) {
		int first = rand_r(&a->seed) % a->nlocks, n = 1 + rand_r(&a->seed) % 2, held[2], nh = 0;

		for (int k = 0; k < n && first + k < a->nlocks; k++) {
			proxylock_mutex_t *m = &rnd_locks[first + k];
			int rc;

			if (rand_r(&a->seed) % 4 == 0) {
				struct timespec dl = abstime_in(CLOCK_MONOTONIC, 50000);

				rc = proxylock_mutex_clocklock(m, CLOCK_MONOTONIC, &dl);
			} else {
				rc = proxylock_mutex_lock(m);
			}
			if (rc == 0)
				held[nh++] = first + k;
			else
				ck_assert_int_eq(rc, ETIMEDOUT);
		}
		if (rand_r(&a->seed) % 8 == 0)
			burn_ns(20000);
		while (nh > 0)
			ck_assert_int_eq(proxylock_mutex_unlock(&rnd_locks[held[--nh]]), 0);
		check_at_base(&base, "after releasing all");
	}
	return NULL;
}

static void run_storm(int nlocks)
{
	struct rnd_arg args[RND_THREADS];
	pthread_t th[RND_THREADS];
	struct proxylock_stats st;

	require_nice_lending();
	for (int i = 0; i < RND_LOCKS; i++)
		proxylock_mutex_init(&rnd_locks[i], NULL);
	for (int i = 0; i < RND_THREADS; i++) {
		args[i] = (struct rnd_arg){ i, 1234u + (unsigned)i, nlocks };
		pthread_create(&th[i], NULL, rnd_worker, &args[i]);
	}
	for (int i = 0; i < RND_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_msg(!rnd_fail, "a thread holding nothing differed from its base");
	for (int i = 0; i < RND_LOCKS; i++)
		ck_assert_uint_eq(rnd_locks[i].__word, 0);
	proxylock_stats_get(&st);
	if (under_valgrind())
		return;  /* one thread at a time: there may have been no contention */
	ck_assert_msg(st.donations > 100, "only %lu donations: the storm lent nothing",
	              (unsigned long)st.donations);
	ck_assert_msg(st.restores > 100, "only %lu restores", (unsigned long)st.restores);
}

START_TEST(random_ops_over_16_threads_and_8_locks_leave_every_thread_at_its_base)
{
	run_storm(RND_LOCKS);
}
END_TEST

START_TEST(owner_change_races_never_leave_a_donation_on_a_former_owner)
{
	run_storm(1);  /* one lock: the owner changes as often as it can */
}
END_TEST

static Suite *donate_suite(void)
{
	Suite *s = suite_create("donate");
	TCase *tc = tcase_create("donate");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, caps_report_uclamp_exactly_when_the_kernel_accepts_it);
	tcase_add_test(tc, donate_env_selects_what_is_lent);
	tcase_add_test(tc, donate_env_none_lends_nothing);
	tcase_add_test(tc, holder_pinned_to_cpu1_runs_on_the_waiters_cpu0_and_returns_to_exactly_cpu1);
	tcase_add_test(tc, union_policy_gives_the_holder_its_cpu_plus_the_waiters);
	tcase_add_test(tc, node_policy_keeps_the_union_within_the_waiters_numa_node);
	tcase_add_test(tc, holder_at_nice_19_runs_at_the_waiters_nice_0_and_returns_to_19);
	tcase_add_test(tc, per_lock_attribute_none_lends_nothing);
	tcase_add_test(tc, per_lock_attribute_affinity_only_leaves_nice_alone);
	tcase_add_test(tc, a_nice_boost_the_kernel_refuses_is_skipped_and_counted_not_an_error);
	tcase_add_test(tc, an_rt_waiter_lends_its_fifo_priority_and_the_holder_returns_to_cfs);
	tcase_add_test(tc, a_waiter_that_dropped_rt_since_its_last_wait_never_lends_rt);
	tcase_add_test(tc, three_thread_chain_lends_the_first_waiters_context_to_the_last_owner);
	tcase_add_test(tc, a_chain_never_moves_the_holder_onto_the_cpus_of_a_thread_it_outranks);
	tcase_add_test(tc, a_chain_lends_the_first_waiters_cpus_when_it_outranks_the_last_owner);
	tcase_add_test(tc, a_lender_that_leaves_takes_its_rank_out_of_the_chain);
	tcase_add_test(tc, a_lender_joining_a_blocked_chain_reaches_its_end);
	tcase_add_test(tc, a_lender_joining_a_chain_reaches_an_rwlock_reader);
	tcase_add_test(tc, a_sched_idle_holder_is_lifted_no_higher_than_its_waiter_and_returns_to_its_latent_nice);
	tcase_add_test(tc, releasing_one_of_two_held_locks_keeps_the_other_locks_donation);
	tcase_add_test(tc, the_remaining_waiters_donation_moves_to_the_next_owner);
	tcase_add_test(tc, a_timed_out_waiter_withdraws_its_donation);
	tcase_add_test(tc, a_holder_exiting_while_boosted_leaves_no_trace_on_its_waiter);
	tcase_add_test(tc, errorcheck_lock_that_would_close_a_cycle_is_edeadlk);
	tcase_add_test(tc, a_normal_lock_cycle_deadlocks_without_the_chain_walk_looping);
	tcase_add_test(tc, symmetric_contention_makes_zero_sched_set_calls);
	tcase_add_test(tc, a_nice_19_waiter_never_moves_a_nice_0_holder_off_its_cpu);
	tcase_add_test(tc, a_lend_overtakes_a_restore_in_flight_on_its_starved_holder);
	tcase_add_test(tc, contended_mutex_acquisitions_between_equal_threads_make_no_scheduler_call);
	tcase_add_test(tc, contended_rwlock_acquisitions_between_equal_threads_make_no_scheduler_call);
	tcase_add_test(tc, a_condvar_waiter_moved_onto_an_equal_owners_mutex_makes_no_scheduler_call);
	tcase_add_test(tc, random_ops_over_16_threads_and_8_locks_leave_every_thread_at_its_base);
	tcase_add_test(tc, owner_change_races_never_leave_a_donation_on_a_former_owner);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(donate_suite)

/* SPDX-License-Identifier: MIT */
/*
 * test_bucket_inversion.c - issue 13, "the cure must not invert": a weak
 * thread (nice 19 on a CPU a hog saturates) preempted while it runs the
 * donation slow path under a wait-queue bucket must not hold up unrelated
 * locks of that bucket for much more than a scheduler slice.  The
 * scenario is bench/bucketinv.h's (see there); the bench reports the
 * figures (bench/bucketbench bucket-inversion), this test only catches
 * the gross failure, with a generous bound:
 *
 *   p99(B's delay, weak thread active) <= max(10 x p99(baseline), 20 ms)
 *
 * 20 ms is five ticks at HZ=250, several EEVDF slices (0.75 ms base):
 * room for a loaded 2-CPU machine's noise (baseline p99 0.4-1.3 ms here,
 * the same scenario with A in another bucket 4 ms), yet far below what a
 * bucket held across a nice-19 thread's preemption costs: that thread
 * waits for the hog's share, 1024/15 times its own (tens to hundreds of
 * ms).  Three interleaved rounds of each, B's delays pooled per kind
 * (a single stall of 36 ms in 3.6 s is 1%: the p99 sees it).  The weak
 * thread is nice 19: SCHED_IDLE is stronger still (bucketbench
 * --weak-idle), but on a machine loaded by others it may never run at
 * all, and then nothing is shown either way.
 * Linked against the internal archive to check that A and B share a
 * bucket in the library itself, not only in bucketinv.h's copy of its
 * hash.  Needs 2 CPUs.  P runs at nice 0, so W (nice 19) outranks it
 * in nothing and, under the rule that lending never hurts (lend.c), its
 * slow path computes the queue's lend under A's bucket but makes no
 * scheduler call: the property checked is that a weak thread preempted
 * in that slow path still does not stall the bucket's other locks (that
 * no syscall runs under an internal lock is the lockcheck build's to
 * check).  A SCHED_IDLE P, which W would outrank, is itself a weak thread
 * in the slow path, stalled by this very test's other threads.
 */
#include "helpers.h"
#include "bucketinv.h"
#include "waitq.h"

_Static_assert(BINV_WAITQ_SHIFT == PLK_WAITQ_SHIFT, "bucketinv.h copies lib/waitq.c's hash");

#define ROUNDS 3
#define ROUND_MS 1200
#define BOUND_FLOOR_NS (20ull * 1000 * 1000)
#define POOL (ROUNDS * 20000)

static union binv_lock locks[BINV_NLOCKS];
static struct binv s;

/* B's delays of every round of one kind, pooled. */
struct pool {
	uint64_t v[POOL];
	int n;
	uint64_t lends, calls;
};

static struct pool base_pool, active_pool, split_pool;

/* One round into @p; W (nice 19) and P run if @active, on lock C of
 * another bucket if @split (the control: the same load, no shared bucket). */
static void run_round(bool active, bool split, struct pool *p)
{
	s.weak_active = active;
	s.weak_idle = false;
	s.partner_idle = false;
	s.split = split;
	s.hogs = 1;
	s.ms = ROUND_MS;
	binv_run(&s);
	ck_assert_int_gt(s.n, 0);
	fprintf(stderr, "bucket-inversion: round %s: B p99 %.0f us, weak lends %llu\n",
	       split ? "split" : active ? "active" : "baseline", (double)binv_pct(s.delay, s.n, 99) / 1000,
	       (unsigned long long)s.weak_lends);
	for (int i = 0; i < s.n && p->n < POOL; i++)
		p->v[p->n++] = s.delay[i];
	p->lends += s.weak_lends;
	p->calls += s.st1.setattr_calls + s.st1.setaff_calls - s.st0.setattr_calls -
	            s.st0.setaff_calls;
}

START_TEST(a_weak_thread_preempted_in_the_slow_path_does_not_stall_its_buckets_other_locks)
{
	uint64_t base, active, split, noise, bound;

	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	ck_assert(binv_pick(&s, locks));
	ck_assert_msg(binv_same_bucket(s.a, s.b), "bucketinv.h's copy of bucket_of() is stale");
	ck_assert(!binv_same_bucket(s.a, s.c));
	for (int r = 0; r < ROUNDS; r++) {  /* interleaved: noise hits both alike */
		run_round(false, false, &base_pool);
		run_round(true, false, &active_pool);
		run_round(true, true, &split_pool);
	}
	base = binv_pct(base_pool.v, base_pool.n, 99);
	active = binv_pct(active_pool.v, active_pool.n, 99);
	split = binv_pct(split_pool.v, split_pool.n, 99);
	/* The machine's own noise: the worse of the idle baseline and the
	 * same load on another bucket (a shared, loaded machine stalls
	 * everything now and then; only the shared bucket is under test). */
	noise = base > split ? base : split;
	bound = 10 * noise > BOUND_FLOOR_NS ? 10 * noise : BOUND_FLOOR_NS;
	fprintf(stderr, "bucket-inversion: B p99 baseline %.0f us, split %.0f us, weak thread active %.0f us"
	       " (max %.0f us), bound %.0f us; weak lends %llu, sched set calls %llu\n", (double)base / 1000,
	       (double)split / 1000, (double)active / 1000,
	       (double)binv_pct(active_pool.v, active_pool.n, 100) / 1000,
	       (double)bound / 1000, (unsigned long long)active_pool.lends,
	       (unsigned long long)active_pool.calls);
	/* The scenario did run the donation slow path under A's bucket
	 * (contended acquisitions of A by W). */
	ck_assert_msg(active_pool.lends > 0, "the weak thread never waited on A: scenario broken");
	ck_assert_msg(active <= bound,
	              "B's p99 delay %.1f ms with the weak thread active > bound %.1f ms"
	              " (baseline p99 %.2f ms): a preempted thread held the bucket",
	              (double)active / 1e6, (double)bound / 1e6, (double)base / 1e6);
}
END_TEST

static Suite *bucket_inversion_suite(void)
{
	Suite *su = suite_create("bucket_inversion");
	TCase *tc = tcase_create("bucket_inversion");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_weak_thread_preempted_in_the_slow_path_does_not_stall_its_buckets_other_locks);
	suite_add_tcase(su, tc);
	return su;
}

PLK_TEST_MAIN(bucket_inversion_suite)

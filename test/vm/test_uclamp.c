/* SPDX-License-Identifier: MIT */
/*
 * test_uclamp.c - uclamp donation, proven on a kernel with
 * CONFIG_UCLAMP_TASK.  Runs as /init of a qemu guest (run-vm.sh): mounts
 * /proc and /sys, runs the suite with one verdict line per test, prints
 * an end marker and exits, which panics the guest and ends qemu.
 * Checks use sched_getattr and /proc/<pid>/task/<tid>/sched (uclamp.min,
 * effective uclamp.min, printed with CONFIG_SCHED_DEBUG).  Mutexes, then
 * rwlocks (issue 15): test_rwlock.c's scenarios from rwscenario.h (a
 * waiting writer lends to each reader, a timed-out writer withdraws, a
 * chain), and readers combining their clamps on a writer.  Waits for
 * work (issue 31): a condvar's waiter lends to its learned waker until
 * the signal or its timeout, and an explicit lend until its end.  Then,
 * if the initramfs has them, test_preload_wakers' uclamp case runs under
 * the interposer (a semaphore's waiter lends to its poster), and
 * /bin/proxylock caps, each between markers (run-vm.sh checks them).
 */
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <termios.h>

#include "condactor.h"
#include "rwscenario.h"

/* "effective uclamp.min" etc. from /proc/self/task/<tid>/sched; -1 if absent. */
static long proc_sched(pid_t tid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/sched", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (colon && strncmp(line, key, klen) == 0 && (line[klen] == ' ' || line[klen] == ':'))
			v = strtol(colon + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static bool clamps_are(pid_t tid, uint32_t umin, uint32_t umax)
{
	struct kview v = kview_of(tid);

	return v.umin == umin && v.umax == umax && proc_sched(tid, "uclamp.min") == umin &&
	       proc_sched(tid, "uclamp.max") == umax;
}

START_TEST(the_kernel_has_uclamp_and_the_library_sees_it)
{
	ck_assert_msg(proxylock_caps() & PROXYLOCK_DONATE_UCLAMP, "caps %#x", proxylock_caps());
	ck_assert_msg(proc_sched(gettid_(), "uclamp.min") >= 0, "no uclamp.min in /proc sched");
}
END_TEST

/*
 * A holder with clamps @hmin..@hmax holds a lock that a waiter with
 * @wmin..@wmax blocks on: the holder must run at @emin..@emax, and be
 * back at exactly its own clamps after unlock.
 */
static void clamp_scenario(uint32_t hmin, uint32_t hmax, uint32_t wmin, uint32_t wmax,
                           uint32_t emin, uint32_t emax)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor holder, waiter;

	actor_start_uclamp(&holder, (int)hmin, (int)hmax);
	actor_start_uclamp(&waiter, (int)wmin, (int)wmax);
	ck_assert(clamps_are(holder.tid, hmin, hmax));
	actor_do(&holder, ACT_LOCK, &m, 0);
	actor_block_on(&waiter, ACT_LOCK, &m);
	ck_assert_msg(eventually(clamps_are(holder.tid, emin, emax), 2000), "holder clamps %u..%u",
	              kview_of(holder.tid).umin, kview_of(holder.tid).umax);
	ck_assert_int_eq(proc_sched(holder.tid, "effective uclamp.min"), emin);
	actor_do(&holder, ACT_UNLOCK, &m, 0);
	ck_assert(kview_equal(&holder.after, &holder.base));
	ck_assert(clamps_are(holder.tid, hmin, hmax));
	ck_assert_int_eq(proc_sched(holder.tid, "effective uclamp.min"), hmin);
	ck_assert_int_eq(actor_wait(&waiter), 0);
	actor_do(&waiter, ACT_UNLOCK, &m, 0);
	ck_assert(clamps_are(waiter.tid, wmin, wmax));
	actor_quit(&holder);
	actor_quit(&waiter);
}

START_TEST(holder_gets_the_waiters_uclamp_min_and_max_and_returns_exactly)
{
	clamp_scenario(0, 128, 1024, 1024, 1024, 1024);
}
END_TEST

START_TEST(a_low_uclamp_max_on_the_holder_does_not_cap_the_lent_min)
{
	clamp_scenario(0, 100, 512, 600, 512, 600);
}
END_TEST

START_TEST(a_chain_carries_uclamp_to_the_last_owner_and_a_timeout_withdraws_it)
{
	proxylock_mutex_t l1 = PROXYLOCK_MUTEX_INITIALIZER, l2 = PROXYLOCK_MUTEX_INITIALIZER;
	struct actor a, b, c;

	actor_start_uclamp(&a, 800, 900);
	actor_start_uclamp(&b, 0, 200);
	actor_start_uclamp(&c, 0, 100);
	actor_do(&c, ACT_LOCK, &l2, 0);
	actor_do(&b, ACT_LOCK, &l1, 0);
	actor_block_on(&b, ACT_LOCK, &l2);
	a.timeout_ns = 500 * 1000000L;
	actor_block_on(&a, ACT_TIMEDLOCK, &l1);
	ck_assert_msg(eventually(clamps_are(c.tid, 800, 900), 2000), "end of chain %u..%u",
	              kview_of(c.tid).umin, kview_of(c.tid).umax);
	ck_assert(clamps_are(b.tid, 800, 900));
	ck_assert_int_eq(actor_wait(&a), ETIMEDOUT);
	/* Withdrawn along the chain before A returned. */
	ck_assert(clamps_are(b.tid, 0, 200));
	ck_assert(clamps_are(c.tid, 0, 200));  /* C still lent B's own clamps */
	actor_do(&c, ACT_UNLOCK, &l2, 0);
	ck_assert(clamps_are(c.tid, 0, 100));
	ck_assert_int_eq(actor_wait(&b), 0);
	actor_do(&b, ACT_UNLOCK, &l2, 0);
	actor_do(&b, ACT_UNLOCK, &l1, 0);
	ck_assert(kview_equal(&b.after, &b.base));
	actor_quit(&a);
	actor_quit(&b);
	actor_quit(&c);
}
END_TEST

/* --- rwlocks (issue 15): the scenarios of test_rwlock.c, in uclamp ---- */

/* Low: the @i-th at 100i..100+100i.  High: 700..750 and 500..900, so
 * both combined are 700..900, the min of one and the max of the other. */
static void start_low(struct actor *a, int i)
{
	actor_start_uclamp(a, 100 * i, 100 + 100 * i);
}

static void start_high(struct actor *a, int i)
{
	if (i == 0)
		actor_start_uclamp(a, 700, 750);
	else
		actor_start_uclamp(a, 500, 900);
}

/* Lent high 0 (and 1): every low base is below, so max of the mins and
 * max of the maxes are theirs; a low uclamp_max caps nothing. */
static bool runs_lent(struct actor *a, int n)
{
	uint32_t umax = n == 1 ? 750 : 900;

	return clamps_are(a->tid, 700, umax) && proc_sched(a->tid, "effective uclamp.min") == 700;
}

static bool at_its_clamps(struct actor *a)
{
	return clamps_are(a->tid, (uint32_t)a->umin, (uint32_t)a->umax) &&
	       proc_sched(a->tid, "effective uclamp.min") == a->umin;
}

static const struct rw_lending uclamp_lending = { start_low, start_high, runs_lent,
                                                  at_its_clamps };

START_TEST(a_writer_lends_its_uclamp_to_its_one_reader_restored_at_unlock)
{
	rw_writer_lends_to_readers(&uclamp_lending, 1);
}
END_TEST

START_TEST(a_writer_lends_its_uclamp_to_both_readers_each_restored_at_its_own_unlock)
{
	rw_writer_lends_to_readers(&uclamp_lending, 2);
}
END_TEST

START_TEST(readers_waiting_on_a_writer_lend_it_their_combined_uclamp_until_its_unlock)
{
	rw_readers_lend_to_writer(&uclamp_lending);
}
END_TEST

START_TEST(a_writer_timing_out_withdraws_its_uclamp_from_both_readers)
{
	rw_writer_times_out_and_withdraws(&uclamp_lending);
}
END_TEST

START_TEST(a_chain_rwlock_mutex_rwlock_carries_uclamp_to_the_last_reader)
{
	rw_chain_rwlock_mutex_rwlock(&uclamp_lending);
}
END_TEST

/* --- waits for work (issue 31): a condvar's waiter lends to its waker -- */

/* A high waiter (1024..1024) and a worker capped low (0..100): what the
 * waiter lends raises both clamps of the worker to its own. */
#define WAITER_UMIN 1024
#define WORKER_UMAX 100

static void high_waiter(struct actor *a)
{
	actor_start_uclamp(a, WAITER_UMIN, 1024);
}

static void capped_worker(struct actor *a)
{
	actor_start_uclamp(a, 0, WORKER_UMAX);
}

static bool runs_with_the_waiters_uclamp(struct actor *a)
{
	return clamps_are(a->tid, WAITER_UMIN, 1024) &&
	       proc_sched(a->tid, "effective uclamp.min") == WAITER_UMIN;
}

static bool at_its_own_uclamp(struct actor *a)
{
	return clamps_are(a->tid, 0, WORKER_UMAX) && proc_sched(a->tid, "effective uclamp.min") == 0;
}

static void say_uclamp(struct actor *a, char *buf, size_t len)
{
	struct kview v = kview_of(a->tid);

	snprintf(buf, len, "uclamp %u..%u", v.umin, v.umax);
}

static const struct cv_lending uclamp_cv_lending = { high_waiter, capped_worker,
                                                     runs_with_the_waiters_uclamp,
                                                     at_its_own_uclamp, say_uclamp };

START_TEST(a_condvar_waiter_lends_its_uclamp_to_its_learned_waker_until_the_signal)
{
	cv_waiter_lends_until_the_signal(&uclamp_cv_lending);
}
END_TEST

START_TEST(a_condvar_waiter_that_times_out_takes_its_uclamp_back_from_the_waker)
{
	cv_waiter_times_out_and_withdraws(&uclamp_cv_lending);
}
END_TEST

/* --- the explicit lend (proxylock_lend_begin/end) --------------------- */

static proxylock_lend_t lend;

static int lend_begin(struct actor *a)
{
	return proxylock_lend_begin(*(pid_t *)a->arg, PROXYLOCK_DONATE_UCLAMP, &lend);
}

static int lend_end(struct actor *a)
{
	(void)a;
	return proxylock_lend_end(&lend);
}

START_TEST(an_explicit_lend_gives_the_target_the_lenders_uclamp_until_its_end)
{
	struct actor w, k;

	high_waiter(&w);
	capped_worker(&k);
	actor_call(&w, lend_begin, &k.tid);
	ck_assert_int_eq(actor_wait(&w), 0);
	ck_assert_msg(runs_with_the_waiters_uclamp(&k), "the target runs at %u..%u after the begin",
	              kview_of(k.tid).umin, kview_of(k.tid).umax);
	actor_call(&w, lend_end, NULL);
	ck_assert_int_eq(actor_wait(&w), 0);
	ck_assert_msg(at_its_own_uclamp(&k), "the target is at %u..%u after the end",
	              kview_of(k.tid).umin, kview_of(k.tid).umax);
	actor_quit(&w);
	actor_quit(&k);
}
END_TEST

static Suite *uclamp_suite(void)
{
	Suite *s = suite_create("uclamp");
	TCase *tc = tcase_create("uclamp");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_kernel_has_uclamp_and_the_library_sees_it);
	tcase_add_test(tc, holder_gets_the_waiters_uclamp_min_and_max_and_returns_exactly);
	tcase_add_test(tc, a_low_uclamp_max_on_the_holder_does_not_cap_the_lent_min);
	tcase_add_test(tc, a_chain_carries_uclamp_to_the_last_owner_and_a_timeout_withdraws_it);
	tcase_add_test(tc, a_writer_lends_its_uclamp_to_its_one_reader_restored_at_unlock);
	tcase_add_test(tc, a_writer_lends_its_uclamp_to_both_readers_each_restored_at_its_own_unlock);
	tcase_add_test(tc, readers_waiting_on_a_writer_lend_it_their_combined_uclamp_until_its_unlock);
	tcase_add_test(tc, a_writer_timing_out_withdraws_its_uclamp_from_both_readers);
	tcase_add_test(tc, a_chain_rwlock_mutex_rwlock_carries_uclamp_to_the_last_reader);
	tcase_add_test(tc, a_condvar_waiter_lends_its_uclamp_to_its_learned_waker_until_the_signal);
	tcase_add_test(tc, a_condvar_waiter_that_times_out_takes_its_uclamp_back_from_the_waker);
	tcase_add_test(tc, an_explicit_lend_gives_the_target_the_lenders_uclamp_until_its_end);
	suite_add_tcase(s, tc);
	return s;
}

/* Run @path with the one argument @arg (or none), in this environment
 * (PROXYLOCK_VM_APPEND's words among it) plus @env's NAME=VALUE words;
 * its exit status, -1 if it did not exit. */
static int run_child(const char *path, const char *arg, char **env)
{
	char *argv[] = { (char *)path, (char *)arg, NULL };
	pid_t pid;
	int st;

	if ((pid = fork()) == 0) {
		for (; *env; env++)
			putenv(*env);
		execv(path, argv);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (getpid() == 1) {
		mount("proc", "/proc", "proc", 0, NULL);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);  /* Check's pipes */
		setenv("TMPDIR", "/tmp", 1);
	}
	printf("PROXYLOCK-VM: BOOTED %ld cpus\n", sysconf(_SC_NPROCESSORS_ONLN));
	fflush(stdout);
	sr = srunner_create(uclamp_suite());
	srunner_run_all(sr, CK_VERBOSE);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (access("/b/test_preload_wakers", X_OK) == 0) {
		char *env[] = { "LD_PRELOAD=/b/libproxylock-preload.so", "CK_RUN_CASE=uclamp",
		                "PLK_REQUIRE_UCLAMP=1", NULL };
		int status;

		printf("PROXYLOCK-VM: PRELOAD BEGIN\n");
		fflush(stdout);
		status = run_child("/b/test_preload_wakers", NULL, env);
		printf("PROXYLOCK-VM: PRELOAD END status=%d\n", status);
		failed += status != 0;
	}
	if (access("/bin/proxylock", X_OK) == 0) {
		char *env[] = { NULL };
		int status;

		printf("PROXYLOCK-VM: CAPS BEGIN\n");
		fflush(stdout);
		status = run_child("/bin/proxylock", "caps", env);
		printf("PROXYLOCK-VM: CAPS END status=%d\n", status);
	}
	printf("PROXYLOCK-VM: DONE failed=%d\n", failed);
	fflush(stdout);
	if (getpid() == 1) {
		/* As init, returning panics the kernel at once, and the
		 * console may lose what is still in the UART: drain it, then
		 * reboot, which qemu -no-reboot turns into its exit. */
		tcdrain(STDOUT_FILENO);
		sync();
		reboot(RB_AUTOBOOT);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

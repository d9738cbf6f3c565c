/* SPDX-License-Identifier: MIT */
/*
 * test_registry.c - thread records: lock-free lookups racing with
 * threads being created and exiting, lazy creation, adoption, reclaim.
 * Linked against the internal archive to reach the registry directly.
 */
#include "helpers.h"
#include "donate.h"
#include "observe.h"
#include "rdset.h"
#include "rwlockword.h"
#include "registry.h"

#include <sys/wait.h>

#define SLOTS 64
#define WAVE 25
#define TOTAL_THREADS 1000

static pid_t live[SLOTS];
static int readers_stop;
static unsigned long lookups, hits;
static proxylock_mutex_t churn_lock = PROXYLOCK_MUTEX_INITIALIZER;

/* Readers look up whatever TIDs are live; a record found is readable
 * (records are type-stable: ASan/TSan runs catch any use-after-unmap) and
 * names that TID, unless it was retired or recycled since the lookup. */
static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&readers_stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < SLOTS; i++) {
			pid_t tid = __atomic_load_n(&live[i], __ATOMIC_RELAXED);
			struct plk_thread *t;

			if (!tid)
				continue;
			t = plk_thread_find(tid);
			if (t && __atomic_load_n(&t->tid, __ATOMIC_RELAXED) == tid)
				__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&lookups, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	int slot = (int)(long)arg;
	struct plk_thread *t;

	t = plk_thread_self();
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->tid, gettid_());
	ck_assert(t->adopted);
	__atomic_store_n(&live[slot], gettid_(), __ATOMIC_RELAXED);
	proxylock_mutex_lock(&churn_lock);
	usleep(50);
	proxylock_mutex_unlock(&churn_lock);
	__atomic_store_n(&live[slot], 0, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(lookups_race_safely_with_1000_threads_created_and_exiting)
{
	pthread_t readers[2], wave[WAVE];
	unsigned long before = plk_registry_count();

	for (int i = 0; i < 2; i++)
		pthread_create(&readers[i], NULL, reader, NULL);
	for (int done = 0; done < TOTAL_THREADS; done += WAVE) {
		for (int i = 0; i < WAVE; i++)
			ck_assert_int_eq(pthread_create(&wave[i], NULL, short_lived,
			                                (void *)(long)((done + i) % SLOTS)), 0);
		for (int i = 0; i < WAVE; i++)
			pthread_join(wave[i], NULL);
	}
	__atomic_store_n(&readers_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(readers[i], NULL);
	ck_assert_msg(hits > 100, "only %lu of %lu lookups found a record", hits, lookups);
	/* Every exited thread's record was unlinked by its destructor. */
	ck_assert_uint_le(plk_registry_count(), before + 1);
}
END_TEST

static void *fast_path_owner(void *arg)
{
	proxylock_mutex_t *m = arg;

	proxylock_mutex_lock(m);  /* uncontended: no record */
	usleep(50000);
	proxylock_mutex_unlock(m);  /* waiters: slow path, adopts its record */
	return NULL;
}

START_TEST(a_record_created_for_a_fast_path_owner_is_adopted_and_reclaimed)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	pthread_t th;
	pid_t owner;

	ck_assert_uint_eq(plk_registry_count(), 0);  /* lazily: nothing yet */
	pthread_create(&th, NULL, fast_path_owner, &m);
	ck_assert(eventually((owner = proxylock_mutex_owner(&m)) != 0, 1000));
	ck_assert_ptr_null(plk_thread_find(owner));
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);  /* creates the owner's record */
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	pthread_join(th, NULL);
	ck_assert_ptr_null(plk_thread_find(owner));  /* unlinked at its exit */
	ck_assert_ptr_nonnull(plk_thread_find(gettid_()));
}
END_TEST


static int bystander_stop;

static void *bystander(void *arg)
{
	__atomic_store_n((pid_t *)arg, gettid_(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&bystander_stop, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

static bool set_nothing(void *arg)
{
	(void)arg;
	return true;
}

/*
 * The interposer routes an application's scheduler call on another
 * thread through plk_donate_base_set().  A thread nothing is lent to
 * needs no record: one made for the call goes with it, so none is left
 * for a later thread that reuses the TID to inherit.
 */
START_TEST(a_record_made_for_a_scheduler_call_on_another_thread_does_not_outlive_it)
{
	pid_t tid = 0;
	pthread_t th;

	pthread_create(&th, NULL, bystander, &tid);
	ck_assert(eventually(__atomic_load_n(&tid, __ATOMIC_ACQUIRE) != 0, 1000));
	ck_assert_ptr_null(plk_thread_find(tid));
	ck_assert(plk_donate_base_set(tid, PLK_FIELD_NICE, set_nothing, NULL));
	ck_assert_ptr_null(plk_thread_find(tid));
	__atomic_store_n(&bystander_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
}
END_TEST

/* lib/fork.c's; naming it links that file, whose constructor installs
 * the fork handlers (an archive member nothing names is left out). */
PLK_HIDDEN extern bool plk_fork_hooks_installed;

static proxylock_rwlock_t fk_held = PROXYLOCK_RWLOCK_INITIALIZER;
static proxylock_rwlock_t fk_other = PROXYLOCK_RWLOCK_INITIALIZER;
static proxylock_rwlock_t fk_mine = PROXYLOCK_RWLOCK_INITIALIZER;
struct fk_hold {
	proxylock_rwlock_t *lock;
	int stop;
};

/* Holds @arg's lock for reading until told to stop. */
static void *fk_reader(void *arg)
{
	struct fk_hold *h = arg;

	(void)plk_thread_self();  /* a record, linked in the table */
	proxylock_rwlock_rdlock(h->lock);
	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE))
		usleep(1000);
	proxylock_rwlock_unlock(h->lock);
	return NULL;
}

static void *fk_child_reader(void *arg)
{
	pid_t tid = 0;

	proxylock_rwlock_rdlock(&fk_other);
	if (plk_rdset_readers(&fk_other, &tid, 1, false) == 1 && tid == gettid_())
		*(int *)arg = 1;
	proxylock_rwlock_unlock(&fk_other);
	return NULL;
}

/* The child's checks; its exit status names the first that failed. */
static int fk_child(pid_t parent_reader)
{
	pid_t tids[4];
	pthread_t th;
	int ok = 0;

	if (plk_rdset_readers(&fk_held, tids, 4, false) != 0)
		return 1;
	if (plk_rdset_readers(&fk_mine, tids, 4, false) != 1 || tids[0] != gettid_())
		return 2;
	if (plk_registry_count() != 0)
		return 3;
	if (plk_thread_find(parent_reader) != NULL)
		return 4;
	if (!plk_thread_self() || plk_thread_self()->tid != gettid_())
		return 5;
#ifndef __SANITIZE_THREAD__
	/* Not under TSan: its state in a fork child still has the parent's
	 * threads, and a new thread given one's descriptor is a "dup
	 * thread" error (TSan does not support fork with threads). */
	if (pthread_create(&th, NULL, fk_child_reader, &ok) != 0 || pthread_join(th, NULL) != 0 || !ok)
		return 6;
#else
	(void)th;
	(void)ok;
	(void)fk_child_reader;
#endif
	return proxylock_rwlock_unlock(&fk_mine) == 0 ? 0 : 7;
}

/*
 * A fork child starts with no parent thread in the registry or among the
 * readers, whichever way the fork handlers get there (the kernel wipes
 * the table; the read sets are freed up to the first never claimed, past
 * one an exited reader gave back), and the forking thread keeps its own
 * read hold under its new TID.
 */
START_TEST(a_fork_child_finds_no_parent_thread_among_records_or_readers)
{
	struct fk_hold held = { &fk_held, 0 }, other = { &fk_other, 0 };
	pthread_t gone, r[2];
	pid_t pid, parent_reader;
	int status;

	ck_assert(plk_fork_hooks_installed);
	/* Counted read holds, in read sets: the locks say they were shared
	 * (rwlockword.h, __solo), so no hold is a solo one. */
	fk_held.__solo = fk_other.__solo = fk_mine.__solo = PLK_RW_SHARED;
	/* Read sets in table order: ours, r[0]'s, gone's (given back before
	 * the fork), r[1]'s. */
	ck_assert_int_eq(proxylock_rwlock_rdlock(&fk_mine), 0);
	pthread_create(&r[0], NULL, fk_reader, &held);
	ck_assert(eventually(plk_rdset_readers(&fk_held, NULL, 0, false) == 1, 2000));
	pthread_create(&gone, NULL, fk_reader, &other);
	ck_assert(eventually(plk_rdset_readers(&fk_other, NULL, 0, false) == 1, 2000));
	pthread_create(&r[1], NULL, fk_reader, &held);
	ck_assert(eventually(plk_rdset_readers(&fk_held, NULL, 0, false) == 2, 2000));
	__atomic_store_n(&other.stop, 1, __ATOMIC_RELEASE);
	pthread_join(gone, NULL);
	parent_reader = 0;
	plk_rdset_readers(&fk_held, &parent_reader, 1, false);
	ck_assert_ptr_nonnull(plk_thread_find(parent_reader));
	ck_assert_uint_eq(plk_rdset_count(), 4);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0)
		_exit(fk_child(parent_reader));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "fork child status %#x (exit 1: a parent reader listed, 2: our own read hold "
	              "lost, 3/4: parent records linked, 5: no record of our own, 6: a new "
	              "reader not listed, 7: our read unlock failed)", status);
	ck_assert_int_eq(proxylock_rwlock_unlock(&fk_mine), 0);
	__atomic_store_n(&held.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
}
END_TEST

/*
 * A lend that reaches the forking thread after our prepare handler ran
 * (while the prepare handlers of libraries registered before us run;
 * nothing of ours is held then) still leaves the child at the thread's
 * base in the kernel's view.  The forking thread holds a lock it took by
 * the fast path, so it has no record until prepare makes one; the
 * observer's fork hook, run after prepare's copy, lets a waiter in and
 * waits until the kernel shows the lend.
 */
static struct {
	proxylock_mutex_t lock;
	pid_t forker;
	int go, calls, child_status;
	bool lent_in_window, adopted, restored;
} fw = { .lock = PROXYLOCK_MUTEX_INITIALIZER };

static void fw_prepare(void)
{
	struct kview v;

	if (gettid_() != fw.forker || fw.calls++ > 0)
		return;
	__atomic_store_n(&fw.go, 1, __ATOMIC_RELEASE);
	fw.lent_in_window = eventually((v = kview_of(0), v.nice == 0 && affinity_is(0, 0, -1)), 2000);
}

static const struct plk_observer_ops fw_ops = { .fork_prepare = fw_prepare };

static void *fw_waiter(void *arg)
{
	(void)arg;
	pin_self(0);
	while (!__atomic_load_n(&fw.go, __ATOMIC_ACQUIRE))
		usleep(100);
	proxylock_mutex_lock(&fw.lock);
	proxylock_mutex_unlock(&fw.lock);
	return NULL;
}

static void *fw_holder(void *arg)
{
	struct kview base, now;
	pid_t pid;

	(void)arg;
	pin_self(1);
	set_nice_self(19);
	base = kview_of(0);
	ck_assert_int_eq(proxylock_mutex_trylock(&fw.lock), 0);  /* fast path: no record */
	fw.forker = gettid_();
	plk_observers_install(&fw_ops);
	pid = fork();
	if (pid == 0) {
		now = kview_of(0);
		_exit(kview_equal(&now, &base) ? 0 : 1);
	}
	plk_observers_install(NULL);
	if (pid > 0 && waitpid(pid, &fw.child_status, 0) != pid)
		fw.child_status = -1;
	fw.adopted = plk_thread_self_cached() &&
	             plk_thread_self_cached() == plk_thread_find(gettid_());
	proxylock_mutex_unlock(&fw.lock);
	now = kview_of(0);
	fw.restored = kview_equal(&now, &base);
	return NULL;
}

START_TEST(a_lend_made_after_our_prepare_handler_still_leaves_the_child_at_base)
{
	pthread_t h, w;

	require_nice_lending();
	fw.child_status = -1;
	pthread_create(&w, NULL, fw_waiter, NULL);
	pthread_create(&h, NULL, fw_holder, NULL);
	pthread_join(h, NULL);
	pthread_join(w, NULL);
	ck_assert_msg(fw.lent_in_window, "no lend landed after our prepare handler");
	assert_fork_child_at_base(fw.child_status);
	ck_assert_msg(fw.adopted, "the forking thread did not adopt the record made for it");
	ck_assert_msg(fw.restored, "the holder is not back at its base after its unlock");
}
END_TEST

static void *idle_until_cancelled(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* A fork child whose exit status is 0 if the kernel's view of it is @want
 * (policy and CPUs). */
static int fork_and_check(uint32_t policy, const cpu_set_t *cpus)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct kview v = kview_of(0);

		_exit(v.policy != policy ? 1 : !CPU_EQUAL(&v.cpus, cpus) ? 2 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/*
 * A fork child sets back only what a lend changed: with nothing lent,
 * it keeps what the kernel gave it (SCHED_RESET_ON_FORK: SCHED_OTHER,
 * not the parent's SCHED_FIFO) and what the application set without the
 * library seeing it (a raw sched_setaffinity); the child made them the
 * parent's base again when it compared the kernel's view with its copy.
 */
START_TEST(a_fork_child_keeps_what_the_kernel_and_the_application_gave_it)
{
	struct plk_sched_attr a = { .size = sizeof(a) };
	struct kview start = kview_of(0);
	cpu_set_t one;
	pthread_t idle;
	int status;

	ck_assert(plk_fork_hooks_installed);
	ck_assert_int_eq(pthread_create(&idle, NULL, idle_until_cancelled, NULL), 0);
	ck_assert_ptr_nonnull(plk_thread_self());  /* a record, and a copy at each fork */
	ck_assert_int_eq(fork_and_check(start.policy, &start.cpus), 0);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ck_assert_int_eq(syscall(SYS_sched_setaffinity, 0, sizeof(one), &one), 0);
	status = fork_and_check(start.policy, &one);
	ck_assert_msg(status == 0, "a child undid a raw sched_setaffinity (status %#x)", status);
	a.sched_policy = SCHED_FIFO;
	a.sched_priority = 10;
	a.sched_flags = PLK_SCHED_FLAG_RESET_ON_FORK;
	require_privilege(plk_sched_setattr(0, &a) == 0, "SCHED_FIFO needs root");
	status = fork_and_check(SCHED_OTHER, &one);
	a.sched_policy = start.policy;
	a.sched_priority = 0;
	a.sched_flags = 0;
	a.sched_nice = start.nice;
	plk_sched_setattr(0, &a);
	syscall(SYS_sched_setaffinity, 0, sizeof(start.cpus), &start.cpus);
	pthread_cancel(idle);
	pthread_join(idle, NULL);
	ck_assert_msg(status == 0, "a SCHED_RESET_ON_FORK child was given its parent's policy back "
	              "(status %#x)", status);
}
END_TEST

static Suite *registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("registry");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, lookups_race_safely_with_1000_threads_created_and_exiting);
	tcase_add_test(tc, a_record_created_for_a_fast_path_owner_is_adopted_and_reclaimed);
	tcase_add_test(tc, a_record_made_for_a_scheduler_call_on_another_thread_does_not_outlive_it);
	tcase_add_test(tc, a_fork_child_finds_no_parent_thread_among_records_or_readers);
	tcase_add_test(tc, a_lend_made_after_our_prepare_handler_still_leaves_the_child_at_base);
	tcase_add_test(tc, a_fork_child_keeps_what_the_kernel_and_the_application_gave_it);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(registry_suite)

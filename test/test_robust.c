/* SPDX-License-Identifier: MIT */
/*
 * test_robust.c - owners that exit holding a lock.  A robust lock passes
 * to its next locker with EOWNERDEAD and offers proxylock_mutex_consistent();
 * an unrepaired one becomes ENOTRECOVERABLE for everyone; any other lock
 * stays held but is counted, named on stderr (PROXYLOCK_STATS) and never
 * hides the owner's exit.  The owner's exit is the kernel's fact here:
 * threads really return, are cancelled, or vanish across fork.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "helpers.h"

static void robust_init(proxylock_mutex_t *m, int type)
{
	proxylock_mutexattr_t a;

	ck_assert_int_eq(proxylock_mutexattr_init(&a), 0);
	ck_assert_int_eq(proxylock_mutexattr_settype(&a, type), 0);
	ck_assert_int_eq(proxylock_mutexattr_setrobust(&a, PROXYLOCK_MUTEX_ROBUST), 0);
	ck_assert_int_eq(proxylock_mutex_init(m, &a), 0);
	proxylock_mutexattr_destroy(&a);
}

/* A thread that locks @arg and returns holding it. */
static void *lock_and_exit(void *arg)
{
	ck_assert_int_eq(proxylock_mutex_lock(arg), 0);
	return (void *)(long)gettid_();
}

/* Run lock_and_exit to completion; its TID. */
static pid_t die_holding(proxylock_mutex_t *m)
{
	pthread_t t;
	void *tid;

	ck_assert_int_eq(pthread_create(&t, NULL, lock_and_exit, m), 0);
	ck_assert_int_eq(pthread_join(t, &tid), 0);
	/* pthread_join returns once the kernel has cleared the thread's TID
	 * word, before it has reaped the thread, and the library tells a
	 * dead owner by tgkill(2): until that fails the owner still exists
	 * (a trylock in the window got EBUSY, once, in the slow arm64 guest). */
	ck_assert(eventually(syscall(SYS_tgkill, getpid(), (pid_t)(long)tid, 0) != 0, bound_ms(2000)));
	return (pid_t)(long)tid;
}

struct locker {
	proxylock_mutex_t *m;
	pid_t tid;
	int err;
	int done;
};

static void *lock_and_record(void *arg)
{
	struct locker *l = arg;

	__atomic_store_n(&l->tid, gettid_(), __ATOMIC_RELEASE);
	l->err = proxylock_mutex_lock(l->m);
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	if (l->err == EOWNERDEAD || l->err == 0) {
		if (l->err == EOWNERDEAD)
			ck_assert_int_eq(proxylock_mutex_consistent(l->m), 0);
		ck_assert_int_eq(proxylock_mutex_unlock(l->m), 0);
	}
	return NULL;
}

static pid_t start_locker(pthread_t *t, struct locker *l, proxylock_mutex_t *m)
{
	*l = (struct locker){ .m = m };
	ck_assert_int_eq(pthread_create(t, NULL, lock_and_record, l), 0);
	ck_assert(eventually(__atomic_load_n(&l->tid, __ATOMIC_ACQUIRE) != 0, 2000));
	return l->tid;
}

START_TEST(the_next_locker_of_a_robust_lock_whose_owner_exited_gets_it_with_EOWNERDEAD)
{
	static const int types[] = { PROXYLOCK_MUTEX_NORMAL, PROXYLOCK_MUTEX_RECURSIVE,
	                             PROXYLOCK_MUTEX_ERRORCHECK };
	proxylock_mutex_t m;
	pid_t dead;

	robust_init(&m, types[_i]);
	dead = die_holding(&m);
	ck_assert_int_eq(proxylock_mutex_owner(&m), dead);  /* held, by nobody alive */
	ck_assert_int_eq(proxylock_mutex_lock(&m), EOWNERDEAD);
	ck_assert_int_eq(proxylock_mutex_owner(&m), gettid_());
	ck_assert_int_eq(proxylock_mutex_consistent(&m), 0);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), EINVAL);  /* consistent now */
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);  /* an ordinary lock again */
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_destroy(&m), 0);
}
END_TEST

START_TEST(trylock_and_timedlock_take_a_dead_owners_robust_lock_too)
{
	proxylock_mutex_t m;
	struct timespec ts = abstime_in(CLOCK_REALTIME, 2000 * 1000 * 1000L);

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	die_holding(&m);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EOWNERDEAD);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);

	die_holding(&m);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &ts), EOWNERDEAD);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
}
END_TEST

/*
 * The owner sleeps at a cancellation point holding the lock until it is
 * cancelled.  No ck_assert: a fork child copies this thread's Check
 * bookkeeping without the thread, which memcheck calls a leak.
 */
static void *lock_and_sleep(void *arg)
{
	if (proxylock_mutex_lock(arg) != 0)
		abort();
	for (;;)
		pause();
	return NULL;
}

START_TEST(a_waiter_asleep_when_the_owner_is_cancelled_wakes_with_EOWNERDEAD)
{
	proxylock_mutex_t m;
	pthread_t owner, w;
	struct locker l;
	pid_t wtid;
	uint64_t t0;

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(pthread_create(&owner, NULL, lock_and_sleep, &m), 0);
	ck_assert(eventually(proxylock_mutex_owner(&m) != 0, 2000));
	wtid = start_locker(&w, &l, &m);
	ck_assert_msg(eventually(thread_sleeping(wtid) && !__atomic_load_n(&l.done, __ATOMIC_ACQUIRE), 2000),
	              "the waiter never slept");
	usleep(100 * 1000);  /* several liveness checks find the owner alive */
	ck_assert_int_eq(__atomic_load_n(&l.done, __ATOMIC_ACQUIRE), 0);
	t0 = mono_ns();
	ck_assert_int_eq(pthread_cancel(owner), 0);
	ck_assert_int_eq(pthread_join(owner, NULL), 0);
	ck_assert_int_eq(pthread_join(w, NULL), 0);
	ck_assert_int_eq(l.err, EOWNERDEAD);
	/* The slice is at most 8 x 20 ms for a robust lock. */
	ck_assert_msg(mono_ns() - t0 < time_bound_ns(1000ull * 1000 * 1000), "took %llu ms",
	              (unsigned long long)((mono_ns() - t0) / 1000000));
	ck_assert_uint_eq(m.__word, 0);
}
END_TEST

START_TEST(unlocking_without_consistent_makes_the_lock_unrecoverable_for_every_waiter)
{
	enum { N = 3 };
	proxylock_mutex_t m;
	pthread_t w[N];
	struct locker l[N];

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	die_holding(&m);
	ck_assert_int_eq(proxylock_mutex_lock(&m), EOWNERDEAD);
	for (int i = 0; i < N; i++) {
		pid_t tid = start_locker(&w[i], &l[i], &m);

		ck_assert_msg(eventually(thread_sleeping(tid), 2000), "waiter %d never slept", i);
	}
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);  /* not repaired */
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(pthread_join(w[i], NULL), 0);
		ck_assert_int_eq(l[i].err, ENOTRECOVERABLE);
	}
	ck_assert_int_eq(proxylock_mutex_lock(&m), ENOTRECOVERABLE);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), ENOTRECOVERABLE);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), EPERM);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), EINVAL);
	ck_assert_int_eq(proxylock_mutex_destroy(&m), 0);  /* all it is good for */
	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(proxylock_mutex_lock(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
}
END_TEST

START_TEST(only_the_owner_of_an_inconsistent_robust_lock_may_call_consistent)
{
	proxylock_mutex_t m, plain = PROXYLOCK_MUTEX_INITIALIZER;

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), EINVAL);  /* not inconsistent */
	ck_assert_int_eq(proxylock_mutex_lock(&plain), 0);
	ck_assert_int_eq(proxylock_mutex_consistent(&plain), EINVAL);  /* not robust */
	ck_assert_int_eq(proxylock_mutex_unlock(&plain), 0);
	die_holding(&m);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), EINVAL);  /* a dead thread's */
	ck_assert_int_eq(proxylock_mutex_lock(&m), EOWNERDEAD);
	ck_assert_int_eq(proxylock_mutex_consistent(&m), 0);
	ck_assert_int_eq(proxylock_mutex_unlock(&m), 0);
}
END_TEST

/* A condvar waiter moved onto the mutex's queue learns of the death too. */
struct cond_case {
	proxylock_mutex_t m;
	proxylock_cond_t c;
	int waiting, err;
};

static void *cond_waiter(void *arg)
{
	struct cond_case *s = arg;

	ck_assert_int_eq(proxylock_mutex_lock(&s->m), 0);
	__atomic_store_n(&s->waiting, 1, __ATOMIC_RELEASE);
	s->err = proxylock_cond_wait(&s->c, &s->m);
	if (s->err == EOWNERDEAD)
		proxylock_mutex_consistent(&s->m);
	proxylock_mutex_unlock(&s->m);
	return NULL;
}

static void *signal_and_exit(void *arg)
{
	struct cond_case *s = arg;

	ck_assert_int_eq(proxylock_mutex_lock(&s->m), 0);
	ck_assert_int_eq(proxylock_cond_signal(&s->c), 0);
	return NULL;  /* holding s->m, with the waiter moved onto its queue */
}

START_TEST(a_condvar_wait_whose_mutex_owner_exits_returns_EOWNERDEAD_holding_it)
{
	struct cond_case s = { .c = PROXYLOCK_COND_INITIALIZER };
	pthread_t w, t;

	robust_init(&s.m, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(pthread_create(&w, NULL, cond_waiter, &s), 0);
	ck_assert(eventually(__atomic_load_n(&s.waiting, __ATOMIC_ACQUIRE) &&
	                     __atomic_load_n(&s.c.__waiters, __ATOMIC_ACQUIRE) == 1, 2000));
	ck_assert_int_eq(pthread_create(&t, NULL, signal_and_exit, &s), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(pthread_join(w, NULL), 0);
	ck_assert_int_eq(s.err, EOWNERDEAD);
	ck_assert_uint_eq(s.m.__word, 0);
}
END_TEST

/* In a fork child only the forking thread exists: a lock another parent
 * thread held has a dead owner there. */
START_TEST(in_a_fork_child_a_lock_held_by_another_parent_thread_has_a_dead_owner)
{
	proxylock_mutex_t m;
	pthread_t owner;
	int status;
	pid_t child;

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(pthread_create(&owner, NULL, lock_and_sleep, &m), 0);
	ck_assert(eventually(proxylock_mutex_owner(&m) != 0, 2000));
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int err = proxylock_mutex_lock(&m);

		_exit(err == EOWNERDEAD && proxylock_mutex_consistent(&m) == 0 &&
		      proxylock_mutex_unlock(&m) == 0 ? 0 : 10 + err);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EBUSY);  /* the parent's owner lives */
	pthread_cancel(owner);
	pthread_join(owner, NULL);
}
END_TEST

/* A child process made without any fork handler running. */
enum bare_fork { BARE_FORK_LIBC, BARE_FORK_SYSCALL };

static pid_t bare_fork(enum bare_fork how)
{
	if (how == BARE_FORK_LIBC)
		return _Fork();
#ifdef SYS_fork
	return (pid_t)syscall(SYS_fork);
#else
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);  /* arm64 has no fork(2): clone's */
#endif
}

/* Another thread of the calling process tries @m for 200 ms: its result. */
static void *try_for_a_while(void *arg)
{
	struct timespec ts;
	struct locker *l = arg;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 200 * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	l->err = proxylock_mutex_timedlock(l->m, &ts);
	return NULL;
}

static int try_from_another_thread(proxylock_mutex_t *m)
{
	struct locker l = { .m = m };
	pthread_t t;

	if (pthread_create(&t, NULL, try_for_a_while, &l) != 0 || pthread_join(t, NULL) != 0)
		return -1;
	return l.err;
}

/* The child's checks; its exit status names the first that failed. */
static int bare_child(proxylock_mutex_t *before, proxylock_mutex_t *after)
{
	/* Before the survivor has run any lock call here: the lock it took
	 * in the parent is still its own. */
	if (try_from_another_thread(before) != ETIMEDOUT)
		return 2;
	if (proxylock_mutex_lock(after) != 0)
		return 3;
	if (proxylock_mutex_owner(after) != gettid_())
		return 4;  /* the word names a TID the survivor no longer has */
	if (try_from_another_thread(after) != ETIMEDOUT)
		return 5;
	if (try_from_another_thread(before) != ETIMEDOUT)
		return 6;
	if (proxylock_mutex_unlock(after) != 0 || proxylock_mutex_unlock(before) != 0)
		return 7;
	return try_from_another_thread(before) == 0 ? 0 : 8;
}

/* Without MADV_WIPEONFORK (helpers.h) a child no fork handler saw cannot
 * tell it is one (docs/design.md, "Fork"). */
static void check_bare_fork(enum bare_fork how)
{
	static proxylock_mutex_t before, after;
	int status;
	pid_t child;

	if (!wipe_on_fork_works()) {
		fprintf(stderr, "SKIP: this kernel does not do MADV_WIPEONFORK: a child made "
		                "without fork handlers keeps the parent's TID cache\n");
		return;
	}

	robust_init(&before, PROXYLOCK_MUTEX_NORMAL);
	robust_init(&after, PROXYLOCK_MUTEX_NORMAL);
	ck_assert_int_eq(proxylock_mutex_lock(&before), 0);
	child = bare_fork(how);
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(bare_child(&before, &after));
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "child status %#x (exit 2: a lock the survivor held from the parent was "
	              "taken as a dead owner's before it ran a lock call, 3: its lock failed, "
	              "4: its word names a stale TID, 5: a lock it took in the child was taken "
	              "as a dead owner's, 6: the one from the parent was after its first lock "
	              "call, 7: its unlock failed, 8: the lock stayed held)", status);
	ck_assert_int_eq(proxylock_mutex_unlock(&before), 0);
}

/* In a child made without fork handlers, whose survivor has made no
 * lock call yet: a thread made there that exits holding a robust lock
 * is still a dead owner (glibc's robust mutexes say EOWNERDEAD there). */
static int bare_child_dead_owner(void)
{
	static proxylock_mutex_t m;
	pthread_t t;

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	if (pthread_create(&t, NULL, lock_and_exit, &m) != 0 || pthread_join(t, NULL) != 0)
		return 2;
	return try_from_another_thread(&m) == EOWNERDEAD ? 0 : 3;
}

START_TEST(after_Fork_a_thread_made_in_the_child_that_exits_holding_a_lock_is_a_dead_owner)
{
	SKIP_UNDER_TSAN("TSan's state in a child no fork handler of its own saw is the parent's");
	int status;
	pid_t child;

	if (!wipe_on_fork_works())
		return;  /* check_bare_fork says why */
	child = _Fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(bare_child_dead_owner());
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "child status %#x (exit 3: the waiter did not get EOWNERDEAD)", status);
}
END_TEST

/*
 * A process made by _Fork() (glibc 2.34+) or a raw fork syscall runs no
 * fork handler: the surviving thread's identity is still right there.  A
 * lock it takes in the child names its new TID, and one it held from the
 * parent stays its own, so another thread of the child never takes
 * either as a dead owner's (two owners).
 */
START_TEST(after_Fork_the_survivors_locks_are_never_taken_as_a_dead_owners)
{
	SKIP_UNDER_TSAN("TSan's state in a child no fork handler of its own saw is the parent's");
	check_bare_fork(BARE_FORK_LIBC);
}
END_TEST

START_TEST(after_a_raw_fork_syscall_the_survivors_locks_are_never_taken_as_a_dead_owners)
{
	SKIP_UNDER_TSAN("TSan's state in a child no fork handler of its own saw is the parent's");
	check_bare_fork(BARE_FORK_SYSCALL);
}
END_TEST

/* In the child below: wait for the waiter's verdict and send it up the pipe. */
static int verdict_fd = -1;

static void *report_locker(void *arg)
{
	struct locker *l = arg;
	char v;

	while (!__atomic_load_n(&l->done, __ATOMIC_ACQUIRE))
		usleep(1000);
	v = l->err == EOWNERDEAD ? 'D' : l->err == 0 ? '0' : '?';
	if (write(verdict_fd, &v, 1) != 1)
		_exit(4);
	_exit(0);
}

/* The leader stays a zombie after pthread_exit; it must still read as gone. */
START_TEST(a_main_thread_that_leaves_by_pthread_exit_is_a_dead_owner)
{
	static proxylock_mutex_t m;
	int fds[2], status;
	pid_t child;
	char verdict = 0;

	ck_assert_int_eq(pipe(fds), 0);
	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		static struct locker l;
		pthread_t w, r;

		close(fds[0]);
		verdict_fd = fds[1];
		l = (struct locker){ .m = &m };
		if (proxylock_mutex_lock(&m) != 0 ||
		    pthread_create(&w, NULL, lock_and_record, &l) != 0 ||
		    pthread_create(&r, NULL, report_locker, &l) != 0)
			_exit(2);
		pthread_exit(NULL);  /* holding m */
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &verdict, 1), 1);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(verdict == 'D', "waiter said %c", verdict);
	close(fds[0]);
}
END_TEST

/* --- locks that are not robust -------------------------------------- */

START_TEST(a_stalled_lock_whose_owner_exited_stays_held_but_is_counted_and_named)
{
	proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	struct proxylock_stats before, after;
	struct timespec ts;
	char path[] = "/tmp/plk-robust-XXXXXX", buf[4096] = { 0 }, want[128];
	int fd = mkstemp(path), saved = dup(2);
	pid_t dead;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	proxylock_stats_get(&before);
	dead = die_holding(&m);
	dup2(fd, 2);
	ts = abstime_in(CLOCK_REALTIME, 300 * 1000 * 1000L);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &ts), ETIMEDOUT);
	ts = abstime_in(CLOCK_REALTIME, 100 * 1000 * 1000L);
	ck_assert_int_eq(proxylock_mutex_timedlock(&m, &ts), ETIMEDOUT);
	dup2(saved, 2);
	close(saved);
	ck_assert_int_eq(proxylock_mutex_owner(&m), dead);  /* POSIX: it stays held */
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EBUSY);
	proxylock_stats_get(&after);
	/* One waiter, one lock: said once however often it looked. */
	ck_assert_uint_eq(after.owner_dead - before.owner_dead, 1);
	ck_assert_int_gt(pread(fd, buf, sizeof(buf) - 1, 0), 0);
	snprintf(want, sizeof(want), "mutex %p is held by thread %d, which exited", (void *)&m, dead);
	ck_assert_msg(strstr(buf, want), "stderr said: %s", buf);
	ck_assert_msg(strstr(buf, "not robust"), "stderr said: %s", buf);
	close(fd);
}
END_TEST

START_TEST(a_live_owner_is_never_taken_for_dead)
{
	proxylock_mutex_t m;
	struct proxylock_stats before, after;
	struct timespec ts;
	pthread_t owner;

	robust_init(&m, PROXYLOCK_MUTEX_NORMAL);
	proxylock_stats_get(&before);
	ck_assert_int_eq(pthread_create(&owner, NULL, lock_and_sleep, &m), 0);
	ck_assert(eventually(proxylock_mutex_owner(&m) != 0, 2000));
	ts = abstime_in(CLOCK_MONOTONIC, 400 * 1000 * 1000L);  /* many liveness checks */
	ck_assert_int_eq(proxylock_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	ck_assert_int_eq(proxylock_mutex_trylock(&m), EBUSY);
	proxylock_stats_get(&after);
	ck_assert_uint_eq(after.owner_dead, before.owner_dead);
	pthread_cancel(owner);
	pthread_join(owner, NULL);
}
END_TEST

static Suite *robust_suite(void)
{
	Suite *s = suite_create("robust");
	TCase *tc = tcase_create("robust");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, the_next_locker_of_a_robust_lock_whose_owner_exited_gets_it_with_EOWNERDEAD, 0, 3);
	tcase_add_test(tc, trylock_and_timedlock_take_a_dead_owners_robust_lock_too);
	tcase_add_test(tc, a_waiter_asleep_when_the_owner_is_cancelled_wakes_with_EOWNERDEAD);
	tcase_add_test(tc, unlocking_without_consistent_makes_the_lock_unrecoverable_for_every_waiter);
	tcase_add_test(tc, only_the_owner_of_an_inconsistent_robust_lock_may_call_consistent);
	tcase_add_test(tc, a_condvar_wait_whose_mutex_owner_exits_returns_EOWNERDEAD_holding_it);
	tcase_add_test(tc, in_a_fork_child_a_lock_held_by_another_parent_thread_has_a_dead_owner);
	tcase_add_test(tc, a_main_thread_that_leaves_by_pthread_exit_is_a_dead_owner);
	tcase_add_test(tc, a_stalled_lock_whose_owner_exited_stays_held_but_is_counted_and_named);
	tcase_add_test(tc, a_live_owner_is_never_taken_for_dead);
	tcase_add_test(tc, after_Fork_the_survivors_locks_are_never_taken_as_a_dead_owners);
	tcase_add_test(tc, after_a_raw_fork_syscall_the_survivors_locks_are_never_taken_as_a_dead_owners);
	tcase_add_test(tc, after_Fork_a_thread_made_in_the_child_that_exits_holding_a_lock_is_a_dead_owner);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	/* Before the library reads its settings: dead owners are said on stderr. */
	setenv("PROXYLOCK_STATS", "1", 1);
	sr = srunner_create(robust_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

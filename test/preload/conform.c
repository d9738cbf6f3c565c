/* SPDX-License-Identifier: MIT */
/*
 * conform.c - POSIX behaviours of the pthread calls a program makes,
 * which must come out the same under the LD_PRELOAD interposer as with
 * glibc alone (issue 18): mutex and condvar attributes and their EINVAL
 * cases, priority ceilings, condvar clocks, destroying a condvar just
 * broadcast, cancellation and cleanup handlers, pthread_once, pthread_join,
 * and what fork() costs the child of a process that contended.  Written
 * from the POSIX text (XSH pthread_*); every case also passes without the
 * interposer (meson runs it under it, with PROXYLOCK_STATS=0 and =1).
 * Plain pthread code: it does not know the interposer is there.
 */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "helpers.h"

/* Threads of this process, as the kernel lists them. */
static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* --- fork after contention -------------------------------------------- */

static pthread_mutex_t fc_lock = PTHREAD_MUTEX_INITIALIZER;

static void *fc_contend(void *arg)
{
	for (int i = 0; i < 200000; i++) {
		pthread_mutex_lock(&fc_lock);
		pthread_mutex_unlock(&fc_lock);
	}
	return arg;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* The child: one thread (its own), still one after a second's sleep,
 * and that second cost (almost) no CPU.  Its exit status says which
 * check failed. */
static int fork_child_stays_idle(void)
{
	double cpu0;

	if (task_count() != 1)
		return 1;
	cpu0 = cpu_seconds();
	sleep(1);
	if (task_count() != 1)
		return 2;
	if (cpu_seconds() - cpu0 > 0.05)
		return 3;
	return 0;
}

/* Issue 18: after contention the interposer (a liburcu hash table with
 * PROXYLOCK_STATS=1, since replaced) once had a thread of its own, recreated in every
 * fork child, where it spun. */
START_TEST(contention_leaves_no_extra_thread_and_a_fork_child_sleeps_without_cpu)
{
	int before = task_count(), status;
	pthread_t th[2];
	pid_t pid;

	/* Check runs each test in a process of its own: only main so far. */
	ck_assert_msg(before == 1, "%d threads before the program made any", before);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, fc_contend, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ck_assert_msg(task_count() == before, "%d threads after contention, %d before",
	              task_count(), before);
	pid = fork();
	if (pid == 0)
		_exit(fork_child_stays_idle());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "child status %#x", status);
	ck_assert_msg(WEXITSTATUS(status) != 1, "the fork child has a thread it did not create");
	ck_assert_msg(WEXITSTATUS(status) != 2, "a thread appeared in the sleeping fork child");
	ck_assert_msg(WEXITSTATUS(status) != 3, "the sleeping fork child used more than 50 ms of CPU");
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(task_count(), before);
}
END_TEST

/* Minor page faults of a fork child that exits at once (its counters
 * start at the fork, so they include the atfork handlers' page copies). */
static long fork_child_faults(void)
{
	int fd[2], status;
	long faults = -1;
	pid_t pid;

	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	if (pid == 0) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		_exit(write(fd[1], &ru.ru_minflt, sizeof(ru.ru_minflt)) == sizeof(ru.ru_minflt) ? 0 : 1);
	}
	ck_assert_int_eq(read(fd[0], &faults, sizeof(faults)), sizeof(faults));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
	close(fd[0]);
	close(fd[1]);
	return faults;
}

#define FF_THREADS 300
static pthread_mutex_t ff_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ff_cond = PTHREAD_COND_INITIALIZER;
static int ff_waiting, ff_go;

static void *ff_waiter(void *arg)
{
	pthread_mutex_lock(&ff_lock);
	ff_waiting++;
	while (!ff_go)
		pthread_cond_wait(&ff_cond, &ff_lock);
	pthread_mutex_unlock(&ff_lock);
	return arg;
}

/* What a fork child copies must not grow with the threads the process
 * has had: 300 threads that waited and are gone leave the interposer
 * 300 thread records, most of a page each, which its fork handler once
 * wrote in every child (issue 18: a condvar test forking 200 children
 * after 1000 threads ran 20x slower).  Compared in one process, before
 * and after, so the kernel's and glibc's own share cancels out. */
START_TEST(a_fork_child_copies_no_more_pages_after_many_threads_have_come_and_gone)
{
	pthread_attr_t a;
	pthread_t *th = calloc(FF_THREADS, sizeof(*th));
	long before, after;

	for (int i = 0; i < 2; i++)  /* the interposer's records exist */
		pthread_create(&th[i], NULL, fc_contend, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	before = fork_child_faults();
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 0; i < FF_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], &a, ff_waiter, NULL), 0);
	pthread_attr_destroy(&a);
	for (;;) {
		pthread_mutex_lock(&ff_lock);
		if (ff_waiting == FF_THREADS)
			break;
		pthread_mutex_unlock(&ff_lock);
		usleep(1000);
	}
	ff_go = 1;
	pthread_cond_broadcast(&ff_cond);
	pthread_mutex_unlock(&ff_lock);
	for (int i = 0; i < FF_THREADS; i++)
		pthread_join(th[i], NULL);
	free(th);
	fork_child_faults();  /* the first fork after the threads: glibc's stack cache settles */
	after = fork_child_faults();
	ck_assert_msg(after < before + 50, "a fork child took %ld page faults before %d threads had "
	              "come and gone, %ld after", before, FF_THREADS, after);
}
END_TEST

/* --- mutex attributes and priority ceilings --------------------------- */

START_TEST(mutexattr_defaults_and_invalid_values_are_refused)
{
	pthread_mutexattr_t a;
	int v, lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);

	ck_assert_int_eq(pthread_mutexattr_init(&a), 0);
	ck_assert_int_eq(pthread_mutexattr_gettype(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_MUTEX_DEFAULT);
	ck_assert_int_eq(pthread_mutexattr_getprotocol(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_PRIO_NONE);
	ck_assert_int_eq(pthread_mutexattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_PROCESS_PRIVATE);
	ck_assert_int_eq(pthread_mutexattr_getrobust(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_MUTEX_STALLED);

	ck_assert_int_eq(pthread_mutexattr_settype(&a, -1), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_settype(&a, 1000), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_setprotocol(&a, 1000), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_setpshared(&a, 1000), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_setrobust(&a, 1000), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_setprioceiling(&a, hi + 1), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_setprioceiling(&a, lo - 1), EINVAL);
	ck_assert_int_eq(pthread_mutexattr_gettype(&a, &v), 0);  /* refused values change nothing */
	ck_assert_int_eq(v, PTHREAD_MUTEX_DEFAULT);

	ck_assert_int_eq(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE), 0);
	ck_assert_int_eq(pthread_mutexattr_gettype(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_MUTEX_RECURSIVE);
	ck_assert_int_eq(pthread_mutexattr_setprioceiling(&a, hi), 0);
	ck_assert_int_eq(pthread_mutexattr_getprioceiling(&a, &v), 0);
	ck_assert_int_eq(v, hi);
	ck_assert_int_eq(pthread_mutexattr_destroy(&a), 0);
}
END_TEST

/* A mutex initialised from an attribute object keeps its type when the
 * object is changed or destroyed afterwards. */
START_TEST(a_mutex_keeps_its_type_after_its_attribute_object_changes)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	ck_assert_int_eq(pthread_mutex_init(&m, &a), 0);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutexattr_destroy(&a);
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_lock(&m), EDEADLK);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
	ck_assert_int_eq(pthread_mutex_init(&m, NULL), 0);  /* re-initialised after destroy */
	ck_assert_int_eq(pthread_mutex_lock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_destroy(&m), 0);
}
END_TEST

static void *unlock_from_other(void *m)
{
	return (void *)(intptr_t)pthread_mutex_unlock(m);
}

static void *trylock_from_other(void *m)
{
	return (void *)(intptr_t)pthread_mutex_trylock(m);
}

static int in_other_thread(void *(*fn)(void *), pthread_mutex_t *m)
{
	pthread_t th;
	void *rc;

	pthread_create(&th, NULL, fn, m);
	pthread_join(th, &rc);
	return (int)(intptr_t)rc;
}

/* Recursive: the owner relocks, counts, must unlock as often; others get
 * EBUSY from trylock and EPERM from unlock.  Errorcheck: timedlock by
 * the owner is EDEADLK. */
START_TEST(recursive_and_errorcheck_mutexes_answer_owner_and_others_as_posix_says)
{
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct timespec dl = abstime_in(CLOCK_REALTIME, 10 * 1000000L);

	ck_assert_int_eq(pthread_mutex_lock(&r), 0);
	ck_assert_int_eq(pthread_mutex_timedlock(&r, &dl), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&r), 0);
	ck_assert_int_eq(in_other_thread(trylock_from_other, &r), EBUSY);
	ck_assert_int_eq(in_other_thread(unlock_from_other, &r), EPERM);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(in_other_thread(trylock_from_other, &r), EBUSY);
		ck_assert_int_eq(pthread_mutex_unlock(&r), 0);
	}
	ck_assert_int_eq(in_other_thread(trylock_from_other, &r), 0);  /* free: taken, kept */
	ck_assert_int_eq(pthread_mutex_unlock(&r), EPERM);

	ck_assert_int_eq(pthread_mutex_lock(&e), 0);
	ck_assert_int_eq(pthread_mutex_timedlock(&e, &dl), EDEADLK);
	ck_assert_int_eq(pthread_mutex_unlock(&e), 0);
}
END_TEST

/* Priority ceilings belong to PRIO_PROTECT mutexes: get and set work
 * there (set returns the old ceiling) and are EINVAL elsewhere or out of
 * range. */
START_TEST(prioceiling_is_read_and_changed_on_protect_mutexes_only)
{
	int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
	pthread_mutex_t pp, plain = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutexattr_t a;
	int v, old = -1;

	pthread_mutexattr_init(&a);
	ck_assert_int_eq(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT), 0);
	ck_assert_int_eq(pthread_mutexattr_setprioceiling(&a, lo), 0);
	ck_assert_int_eq(pthread_mutex_init(&pp, &a), 0);
	pthread_mutexattr_destroy(&a);
	ck_assert_int_eq(pthread_mutex_getprioceiling(&pp, &v), 0);
	ck_assert_int_eq(v, lo);
	if (geteuid() == 0) {  /* setprioceiling locks it: the caller's priority rises to lo */
		ck_assert_int_eq(pthread_mutex_setprioceiling(&pp, lo + 1, &old), 0);
		ck_assert_int_eq(old, lo);
		ck_assert_int_eq(pthread_mutex_getprioceiling(&pp, &v), 0);
		ck_assert_int_eq(v, lo + 1);
	}
	ck_assert_int_eq(pthread_mutex_setprioceiling(&pp, hi + 1, &old), EINVAL);
	ck_assert_int_eq(pthread_mutex_destroy(&pp), 0);

	ck_assert_int_eq(pthread_mutex_lock(&plain), 0);  /* now the interposer's, if loaded */
	ck_assert_int_eq(pthread_mutex_unlock(&plain), 0);
	ck_assert_int_eq(pthread_mutex_getprioceiling(&plain, &v), EINVAL);
	ck_assert_int_eq(pthread_mutex_setprioceiling(&plain, lo, &old), EINVAL);
	ck_assert_int_eq(pthread_mutex_trylock(&plain), 0);  /* and still a working mutex */
	ck_assert_int_eq(pthread_mutex_unlock(&plain), 0);
}
END_TEST

/* --- condvar attributes and waits ------------------------------------- */

START_TEST(condattr_defaults_and_invalid_values_are_refused)
{
	pthread_condattr_t a;
	clockid_t clock;
	int v;

	ck_assert_int_eq(pthread_condattr_init(&a), 0);
	ck_assert_int_eq(pthread_condattr_getclock(&a, &clock), 0);
	ck_assert_int_eq(clock, CLOCK_REALTIME);
	ck_assert_int_eq(pthread_condattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_PROCESS_PRIVATE);
	ck_assert_int_eq(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(pthread_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
	ck_assert_int_eq(pthread_condattr_setclock(&a, (clockid_t)1000), EINVAL);
	ck_assert_int_eq(pthread_condattr_setpshared(&a, 1000), EINVAL);
	ck_assert_int_eq(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(pthread_condattr_getclock(&a, &clock), 0);
	ck_assert_int_eq(clock, CLOCK_MONOTONIC);
	ck_assert_int_eq(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	ck_assert_int_eq(pthread_condattr_getpshared(&a, &v), 0);
	ck_assert_int_eq(v, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_condattr_destroy(&a), 0);
}
END_TEST

static pthread_mutex_t mw_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t mw_cond;
static int mw_go, mw_waiting;

static void *mw_signaller(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&mw_waiting, __ATOMIC_ACQUIRE))
		usleep(100);
	pthread_mutex_lock(&mw_lock);  /* the waiter is inside the wait: it released the lock */
	mw_go = 1;
	pthread_cond_signal(&mw_cond);
	pthread_mutex_unlock(&mw_lock);
	return NULL;
}

/* A timed wait on a CLOCK_MONOTONIC condvar returns 0 when signalled
 * before its deadline (10 s away), with the mutex its caller's again. */
START_TEST(a_monotonic_timed_wait_returns_when_signalled_with_the_mutex_retaken)
{
	pthread_condattr_t a;
	struct timespec dl;
	pthread_t th;
	int err = 0;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	ck_assert_int_eq(pthread_cond_init(&mw_cond, &a), 0);
	pthread_condattr_destroy(&a);
	pthread_create(&th, NULL, mw_signaller, NULL);
	dl = abstime_in(CLOCK_MONOTONIC, 10 * 1000000000L);
	pthread_mutex_lock(&mw_lock);
	__atomic_store_n(&mw_waiting, 1, __ATOMIC_RELEASE);
	while (!mw_go && err == 0)
		err = pthread_cond_timedwait(&mw_cond, &mw_lock, &dl);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(pthread_mutex_lock(&mw_lock), EDEADLK);  /* ours */
	ck_assert_int_eq(pthread_mutex_unlock(&mw_lock), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(pthread_cond_destroy(&mw_cond), 0);
}
END_TEST

/* A deadline already past: ETIMEDOUT at once, mutex still the caller's. */
START_TEST(a_timed_wait_past_its_deadline_times_out_owning_the_mutex)
{
	pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec past = { 1, 0 };

	pthread_mutex_lock(&m);
	ck_assert_int_eq(pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
	ck_assert_int_eq(pthread_mutex_lock(&m), EDEADLK);
	ck_assert_int_eq(pthread_mutex_unlock(&m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&m), EPERM);
}
END_TEST

/* "It shall be safe to destroy an initialized condition variable upon
 * which no threads are currently blocked": right after a broadcast, the
 * woken waiters still retaking the mutex, the condvar is destroyed and
 * its memory reused; every waiter returns 0 owning the mutex. */
#define DB_WAITERS 4
static pthread_mutex_t db_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t *db_cond;
static int db_waiting, db_go, db_ok;

static void *db_waiter(void *arg)
{
	int err = 0;

	(void)arg;
	pthread_mutex_lock(&db_lock);
	db_waiting++;
	while (!db_go && err == 0)
		err = pthread_cond_wait(db_cond, &db_lock);
	if (err == 0 && pthread_mutex_lock(&db_lock) == EDEADLK)
		db_ok++;
	pthread_mutex_unlock(&db_lock);
	return NULL;
}

START_TEST(a_condvar_may_be_destroyed_and_reused_right_after_its_broadcast)
{
	pthread_t th[DB_WAITERS];

	for (int round = 0; round < 50; round++) {
		db_cond = malloc(sizeof(*db_cond));
		pthread_cond_init(db_cond, NULL);
		db_waiting = db_go = db_ok = 0;
		for (int i = 0; i < DB_WAITERS; i++)
			pthread_create(&th[i], NULL, db_waiter, NULL);
		for (;;) {  /* all waiting: each said so under the lock, and waits */
			pthread_mutex_lock(&db_lock);
			if (db_waiting == DB_WAITERS)
				break;
			pthread_mutex_unlock(&db_lock);
			usleep(100);
		}
		db_go = 1;
		ck_assert_int_eq(pthread_cond_broadcast(db_cond), 0);
		ck_assert_int_eq(pthread_cond_destroy(db_cond), 0);
		memset(db_cond, 0xa5, sizeof(*db_cond));
		free(db_cond);
		pthread_mutex_unlock(&db_lock);
		for (int i = 0; i < DB_WAITERS; i++)
			pthread_join(th[i], NULL);
		ck_assert_int_eq(db_ok, DB_WAITERS);
	}
}
END_TEST

/* --- cancellation and cleanup handlers -------------------------------- */

static pthread_mutex_t ct_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t ct_cond;
static int ct_waiting, ct_cleanup_unlock = -1;

static void ct_cleanup(void *arg)
{
	(void)arg;
	ct_cleanup_unlock = pthread_mutex_unlock(&ct_lock);  /* 0 only if it is ours */
}

static void *ct_timed_waiter(void *arg)
{
	struct timespec dl = abstime_in(CLOCK_MONOTONIC, 60 * 1000000000L);

	(void)arg;
	pthread_mutex_lock(&ct_lock);
	ct_waiting = 1;
	pthread_cleanup_push(ct_cleanup, NULL);
	for (;;)
		pthread_cond_timedwait(&ct_cond, &ct_lock, &dl);
	pthread_cleanup_pop(1);
	return NULL;
}

/* pthread_cond_timedwait is a cancellation point: a cancelled waiter
 * reacquires the mutex before its cleanup handler runs. */
START_TEST(a_cancelled_timed_wait_runs_cleanup_with_the_mutex_retaken)
{
	pthread_condattr_t a;
	pthread_t th;
	void *rc;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&ct_cond, &a);
	pthread_create(&th, NULL, ct_timed_waiter, NULL);
	for (;;) {  /* waiting: it said so under the lock, and released it */
		pthread_mutex_lock(&ct_lock);
		if (ct_waiting)
			break;
		pthread_mutex_unlock(&ct_lock);
		usleep(100);
	}
	pthread_mutex_unlock(&ct_lock);
	ck_assert_int_eq(pthread_cancel(th), 0);
	ck_assert_int_eq(pthread_join(th, &rc), 0);
	ck_assert_ptr_eq(rc, PTHREAD_CANCELED);
	ck_assert_msg(ct_cleanup_unlock == 0, "the cleanup handler's unlock returned %d",
	              ct_cleanup_unlock);
	ck_assert_int_eq(pthread_mutex_trylock(&ct_lock), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&ct_lock), 0);
	ck_assert_int_eq(pthread_cond_destroy(&ct_cond), 0);
}
END_TEST

static int cu_order[4], cu_n;

static void cu_record(void *arg)
{
	cu_order[cu_n++] = (int)(intptr_t)arg;
}

static void *cu_thread(void *arg)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	(void)arg;
	pthread_cleanup_push(cu_record, (void *)1);
	pthread_cleanup_push(cu_record, (void *)2);
	pthread_cleanup_push(cu_record, (void *)3);
	pthread_cleanup_pop(0);  /* removed, not run */
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	pthread_exit((void *)42);  /* runs 2 then 1 */
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

/* pthread_exit runs the pushed handlers in reverse order; pop(0) removes
 * one without running it, pop(1) runs it. */
START_TEST(cleanup_handlers_run_in_reverse_order_on_exit_and_pop)
{
	pthread_t th;
	void *rc;

	pthread_create(&th, NULL, cu_thread, NULL);
	ck_assert_int_eq(pthread_join(th, &rc), 0);
	ck_assert_ptr_eq(rc, (void *)42);
	ck_assert_int_eq(cu_n, 2);
	ck_assert_int_eq(cu_order[0], 2);
	ck_assert_int_eq(cu_order[1], 1);
	cu_n = 0;
	pthread_cleanup_push(cu_record, (void *)7);
	pthread_cleanup_pop(1);
	ck_assert_int_eq(cu_n, 1);
	ck_assert_int_eq(cu_order[0], 7);
}
END_TEST

/* --- once and join ---------------------------------------------------- */

static pthread_once_t on_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t on_lock = PTHREAD_MUTEX_INITIALIZER;
static int on_runs, on_done;

static void on_init(void)
{
	pthread_mutex_lock(&on_lock);  /* contended by the callers below */
	on_runs++;
	usleep(20000);
	on_done = 1;
	pthread_mutex_unlock(&on_lock);
}

static void *on_caller(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&on_lock);
		pthread_mutex_unlock(&on_lock);
	}
	pthread_once(&on_once, on_init);
	return (void *)(intptr_t)__atomic_load_n(&on_done, __ATOMIC_RELAXED);
}

/* The init routine runs once, and no caller returns before it has. */
START_TEST(pthread_once_runs_its_routine_once_and_callers_return_after_it)
{
	pthread_t th[4];
	void *done;

	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, on_caller, NULL);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &done);
		ck_assert_msg(done, "a pthread_once caller returned before the routine completed");
	}
	ck_assert_int_eq(on_runs, 1);
}
END_TEST

static pthread_once_t oc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t oc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t oc_cond = PTHREAD_COND_INITIALIZER;
static int oc_runs, oc_inside;

static void oc_unlock(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&oc_lock);
}

static void oc_init(void)
{
	pthread_mutex_lock(&oc_lock);
	if (oc_runs++ == 0) {  /* the first run waits to be cancelled */
		oc_inside = 1;
		pthread_cleanup_push(oc_unlock, NULL);
		for (;;)
			pthread_cond_wait(&oc_cond, &oc_lock);
		pthread_cleanup_pop(0);
	}
	pthread_mutex_unlock(&oc_lock);
}

static void *oc_caller(void *arg)
{
	pthread_once(&oc_once, oc_init);
	return arg;
}

/* An init routine cancelled in a condvar wait leaves once_control as if
 * pthread_once had never been called: the next call runs it again. */
START_TEST(a_cancelled_once_routine_runs_again_on_the_next_call)
{
	pthread_t th;
	void *rc;

	pthread_create(&th, NULL, oc_caller, NULL);
	ck_assert(eventually(__atomic_load_n(&oc_inside, __ATOMIC_RELAXED), 5000));
	ck_assert_int_eq(pthread_cancel(th), 0);
	ck_assert_int_eq(pthread_join(th, &rc), 0);
	ck_assert_ptr_eq(rc, PTHREAD_CANCELED);
	ck_assert_int_eq(pthread_mutex_trylock(&oc_lock), 0);  /* the cleanup released it */
	ck_assert_int_eq(pthread_mutex_unlock(&oc_lock), 0);
	ck_assert_int_eq(pthread_once(&oc_once, oc_init), 0);
	ck_assert_int_eq(oc_runs, 2);
}
END_TEST

static void *jn_return_arg(void *arg)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return arg;
}

static pthread_mutex_t jn_hold = PTHREAD_MUTEX_INITIALIZER;
static int jn_detached_done;

static void *jn_detached(void *arg)
{
	pthread_mutex_lock(&jn_hold);  /* alive until the test has joined */
	pthread_mutex_unlock(&jn_hold);
	__atomic_store_n(&jn_detached_done, 1, __ATOMIC_RELEASE);
	return arg;
}

static void *jn_join_self(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)pthread_join(pthread_self(), NULL);
}

/* join returns the thread's value; joining oneself is EDEADLK, a
 * detached thread EINVAL. */
START_TEST(pthread_join_returns_the_value_and_refuses_self_and_detached)
{
	pthread_attr_t a;
	pthread_t th;
	void *rc;

	pthread_create(&th, NULL, jn_return_arg, (void *)0x1234);
	ck_assert_int_eq(pthread_join(th, &rc), 0);
	ck_assert_ptr_eq(rc, (void *)0x1234);
	pthread_create(&th, NULL, jn_join_self, NULL);
	ck_assert_int_eq(pthread_join(th, &rc), 0);
	ck_assert_int_eq((int)(intptr_t)rc, EDEADLK);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&jn_hold);
	pthread_create(&th, &a, jn_detached, NULL);
	ck_assert_int_eq(pthread_join(th, NULL), EINVAL);
	pthread_mutex_unlock(&jn_hold);
	pthread_attr_destroy(&a);
	ck_assert(eventually(__atomic_load_n(&jn_detached_done, __ATOMIC_ACQUIRE), 5000));
}
END_TEST

static Suite *conform_suite(void)
{
	Suite *s = suite_create("conform");
	TCase *tc = tcase_create("posix");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, contention_leaves_no_extra_thread_and_a_fork_child_sleeps_without_cpu);
	tcase_add_test(tc, a_fork_child_copies_no_more_pages_after_many_threads_have_come_and_gone);
	tcase_add_test(tc, mutexattr_defaults_and_invalid_values_are_refused);
	tcase_add_test(tc, a_mutex_keeps_its_type_after_its_attribute_object_changes);
	tcase_add_test(tc, recursive_and_errorcheck_mutexes_answer_owner_and_others_as_posix_says);
	tcase_add_test(tc, prioceiling_is_read_and_changed_on_protect_mutexes_only);
	tcase_add_test(tc, condattr_defaults_and_invalid_values_are_refused);
	tcase_add_test(tc, a_monotonic_timed_wait_returns_when_signalled_with_the_mutex_retaken);
	tcase_add_test(tc, a_timed_wait_past_its_deadline_times_out_owning_the_mutex);
	tcase_add_test(tc, a_condvar_may_be_destroyed_and_reused_right_after_its_broadcast);
	tcase_add_test(tc, a_cancelled_timed_wait_runs_cleanup_with_the_mutex_retaken);
	tcase_add_test(tc, cleanup_handlers_run_in_reverse_order_on_exit_and_pop);
	tcase_add_test(tc, pthread_once_runs_its_routine_once_and_callers_return_after_it);
	tcase_add_test(tc, a_cancelled_once_routine_runs_again_on_the_next_call);
	tcase_add_test(tc, pthread_join_returns_the_value_and_refuses_self_and_detached);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(conform_suite)

/* SPDX-License-Identifier: MIT */
/*
 * test_forkstorm.c - fork() never deadlocks, and the child can use
 * proxylocks, while other threads contend and exit: 10^4 forks
 * (PLK_FORKS overrides) while three threads contend on four proxylocks
 * (with condvar timed waits) and a fifth keeps starting short-lived
 * threads that do a timed condvar wait and exit (their exit retires the
 * thread's record).  Each child unlocks the
 * lock the forking thread held across fork(), locks and unlocks a free
 * lock and that one again, and exits 0.  A watchdog thread turns a hang
 * into a failure that says at which fork, and in which step, it hung.
 */
#include <signal.h>
#include <sys/wait.h>

#include "helpers.h"

#define NLOCKS 4
#define CONTENDERS 3

static proxylock_mutex_t locks[NLOCKS];
static proxylock_mutex_t free_lock = PROXYLOCK_MUTEX_INITIALIZER;  /* children only */
static proxylock_cond_t cv = PROXYLOCK_COND_INITIALIZER;
static proxylock_cond_t short_cv = PROXYLOCK_COND_INITIALIZER;
static int stop;
static int bad;  /* a parent thread saw an error: its code */

/* Where the forking thread is, for the watchdog. */
static int cur_fork = -1;
static const char *volatile cur_step = "starting";
static pid_t cur_child;
static uint64_t last_progress_ns;

static void progress(int fork_no, const char *step)
{
	__atomic_store_n(&cur_fork, fork_no, __ATOMIC_RELAXED);
	cur_step = step;
	__atomic_store_n(&last_progress_ns, mono_ns(), __ATOMIC_RELEASE);
}

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static void note_bad(int code)
{
	int zero = 0;

	__atomic_compare_exchange_n(&bad, &zero, code, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Two locks in index order, sometimes a timed condvar wait under the first. */
static void *contender(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned a = rnd(&seed) % NLOCKS, b = rnd(&seed) % NLOCKS, op = rnd(&seed) % 8;

		if (a > b) {
			unsigned t = a;
			a = b;
			b = t;
		}
		if (proxylock_mutex_lock(&locks[a]) != 0)
			note_bad(1);
		if (op == 0) {
			struct timespec dl = abstime_in(CLOCK_REALTIME, 20000 + rnd(&seed) % 200000);
			int err = proxylock_cond_timedwait(&cv, &locks[a], &dl);

			if (err != 0 && err != ETIMEDOUT)
				note_bad(2);
		} else if (op == 1) {
			proxylock_cond_broadcast(&cv);
		}
		if (b != a && proxylock_mutex_lock(&locks[b]) != 0)
			note_bad(3);
		burn_ns(rnd(&seed) % 3000);
		if (b != a)
			proxylock_mutex_unlock(&locks[b]);
		if (op == 2)
			proxylock_cond_signal(&cv);
		if (proxylock_mutex_unlock(&locks[a]) != 0)
			note_bad(4);
		if (op == 3)
			usleep(rnd(&seed) % 200);
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	proxylock_mutex_t *m = arg;
	struct timespec dl = abstime_in(CLOCK_REALTIME, 100000);
	int err;

	proxylock_mutex_lock(m);
	err = proxylock_cond_timedwait(&short_cv, m, &dl);
	if (err != 0 && err != ETIMEDOUT)
		note_bad(5);
	proxylock_mutex_unlock(m);
	return NULL;  /* exit: the key destructor queues a call_rcu */
}

static void *spawner(void *arg)
{
	unsigned seed = 77, n = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_t t;

		if (pthread_create(&t, NULL, short_lived, &locks[rnd(&seed) % NLOCKS]) != 0) {
			note_bad(6);
			break;
		}
		pthread_join(t, NULL);
		n++;
	}
	return (void *)(uintptr_t)n;
}

static uint64_t stall_ns;

static void *watchdog(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t last = __atomic_load_n(&last_progress_ns, __ATOMIC_ACQUIRE);

		if (mono_ns() - last > stall_ns) {
			pid_t child = __atomic_load_n(&cur_child, __ATOMIC_RELAXED);

			fprintf(stderr, "forkstorm: HUNG at fork %d (step: %s) for %llu s "
			        "with no progress; failing\n",
			        __atomic_load_n(&cur_fork, __ATOMIC_RELAXED), cur_step,
			        (unsigned long long)((mono_ns() - last) / 1000000000ull));
			if (child > 0)
				kill(child, SIGKILL);
			/* Not exit(): its handlers may wait on the locks that hang. */
			_exit(EXIT_FAILURE);
		}
		usleep(50000);
	}
	return NULL;
}

static int forks_wanted(void)
{
	const char *s = getenv("PLK_FORKS");

	return s && atoi(s) > 0 ? atoi(s) : 10000;
}

/* The child: only the forking thread exists; it held locks[1] at fork. */
static __attribute__((noreturn)) void child(void)
{
	alarm(under_valgrind() ? 200 : 10);  /* a hung child dies of SIGALRM */
	if (proxylock_mutex_unlock(&locks[1]) != 0)
		_exit(11);
	if (proxylock_mutex_lock(&free_lock) != 0)
		_exit(12);
	if (proxylock_mutex_unlock(&free_lock) != 0)
		_exit(13);
	if (proxylock_mutex_lock(&locks[1]) != 0)
		_exit(14);
	if (proxylock_mutex_unlock(&locks[1]) != 0)
		_exit(15);
	_exit(0);
}

START_TEST(fork_under_contention_and_thread_exits_never_hangs_and_children_can_lock)
{
	pthread_t th[CONTENDERS], sp, wd;
	int n = forks_wanted(), failed_at = -1, status = 0;
	uint64_t t0 = mono_ns();
	void *spawned;

	stall_ns = time_bound_ns(20ull * 1000000000ull);
	for (int i = 0; i < NLOCKS; i++)
		proxylock_mutex_init(&locks[i], NULL);
	progress(-1, "starting threads");
	pthread_create(&wd, NULL, watchdog, NULL);
	for (int i = 0; i < CONTENDERS; i++)
		pthread_create(&th[i], NULL, contender, (void *)(uintptr_t)i);
	pthread_create(&sp, NULL, spawner, NULL);

	for (int i = 0; i < n && failed_at < 0; i++) {
		pid_t pid;

		progress(i, "locking locks[1] before fork");
		ck_assert_int_eq(proxylock_mutex_lock(&locks[1]), 0);
		progress(i, "in fork()");
		pid = fork();
		if (pid == 0)
			child();
		ck_assert_msg(pid > 0, "fork %d: %s", i, strerror(errno));
		__atomic_store_n(&cur_child, pid, __ATOMIC_RELAXED);
		progress(i, "unlocking locks[1] after fork");
		ck_assert_int_eq(proxylock_mutex_unlock(&locks[1]), 0);
		progress(i, "waiting for the child");
		while (waitpid(pid, &status, 0) < 0)
			ck_assert_int_eq(errno, EINTR);
		__atomic_store_n(&cur_child, 0, __ATOMIC_RELAXED);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed_at = i;
	}
	progress(n, "stopping threads");
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < CONTENDERS; i++)
		pthread_join(th[i], NULL);
	pthread_join(sp, &spawned);
	pthread_join(wd, NULL);
	ck_assert_msg(failed_at < 0, "child of fork %d: %s %d (exit codes: 11 unlock of the "
	              "lock held across fork, 12/13 the free lock, 14/15 relock; SIGALRM: hung)",
	              failed_at, WIFEXITED(status) ? "exited with" : "killed by signal",
	              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	ck_assert_msg(bad == 0, "a parent thread got an error (code %d)", bad);
	fprintf(stderr, "forkstorm: %d forks in %.1f s, %lu short-lived threads\n", n,
	        (double)(mono_ns() - t0) / 1e9, (unsigned long)(uintptr_t)spawned);
}
END_TEST

static Suite *forkstorm_suite(void)
{
	Suite *s = suite_create("forkstorm");
	TCase *tc = tcase_create("forkstorm");

	tcase_set_timeout(tc, 280);
	tcase_add_test(tc, fork_under_contention_and_thread_exits_never_hangs_and_children_can_lock);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(forkstorm_suite)

/* SPDX-License-Identifier: MIT */
/*
 * test_minstack.c - every lock operation fits a PTHREAD_STACK_MIN thread
 * with room to spare (issue 18, item 3; docs/design.md, "Stack budget").
 *
 * Each operation runs on a thread created with PTHREAD_STACK_MIN bytes of
 * stack, inside run_at_depth(), which first uses up all of that stack but
 * PLK_STACK_BUDGET bytes: an operation that needs more than the budget
 * runs into the guard page and the test dies with SIGSEGV.  The rest of
 * the stack is filled with a pattern first, and the bytes the operation
 * overwrote are counted afterwards: each case prints its deepest use.
 *
 * Built twice from this file: against the library's API (suite unit),
 * and with -DMINSTACK_PTHREAD as plain pthread code run under the
 * interposer (suite preload, PROXYLOCK_STATS 0 and 1).  Check runs each
 * case in a forked child of a parent that took no lock, so every case's
 * first lock operation is its process's first.  (Before issue 18's fix
 * the capability probe ran there, in the first contended lock, with an
 * 8 KiB frame; it now runs at load.)  Linked -z now, as the libraries
 * are: what is measured is theirs, not the dynamic linker's lazy binding
 * of the test's own first calls.
 *
 * PLK_MINSTACK_BUDGET=N runs with N bytes of budget instead (to find the
 * real need: the smallest N that passes), PLK_MINSTACK_STACK=N on
 * threads of N bytes instead of PTHREAD_STACK_MIN (to measure a library
 * that does not fit).
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* docs/design.md, "Stack budget": the deepest call into the library,
 * including what it calls in libc and libnuma. */
#define PLK_STACK_BUDGET 4096
/* A cancelled wait unwinds with libgcc_s's unwinder, whose own need
 * (5.4 KiB for glibc's own cancelled condvar wait here) is not ours. */
#define PLK_STACK_BUDGET_CANCEL (PLK_STACK_BUDGET + 3072)

#ifdef MINSTACK_PTHREAD
typedef pthread_mutex_t mutex_t;
typedef pthread_cond_t cond_t;
#define MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define COND_INIT PTHREAD_COND_INITIALIZER
#define mutex_lock pthread_mutex_lock
#define mutex_trylock pthread_mutex_trylock
#define mutex_timedlock pthread_mutex_timedlock
#define mutex_unlock pthread_mutex_unlock
#define cond_wait pthread_cond_wait
#define cond_timedwait pthread_cond_timedwait
#define cond_signal pthread_cond_signal
#define cond_broadcast pthread_cond_broadcast
#else
typedef proxylock_mutex_t mutex_t;
typedef proxylock_cond_t cond_t;
#define MUTEX_INIT PROXYLOCK_MUTEX_INITIALIZER
#define COND_INIT PROXYLOCK_COND_INITIALIZER
#define mutex_lock proxylock_mutex_lock
#define mutex_trylock proxylock_mutex_trylock
#define mutex_timedlock proxylock_mutex_timedlock
#define mutex_unlock proxylock_mutex_unlock
#define cond_wait proxylock_cond_wait
#define cond_timedwait proxylock_cond_timedwait
#define cond_signal proxylock_cond_signal
#define cond_broadcast proxylock_cond_broadcast
#endif

#define PATTERN 0xa5

/* The exit case's child runs outside Check: its checks abort. */
static bool outside_check;
#define need(cond) do {                      \
	if (outside_check) {                 \
		if (!(cond))                 \
			abort();             \
	} else {                             \
		ck_assert(cond);             \
	}                                    \
} while (0)

/* One operation on a minimum-stack thread. */
struct run {
	void (*fn)(struct run *r);
	void *arg;
	pthread_t th;
	pid_t tid;           /* set before fn runs */
	size_t budget;       /* stack fn was left */
	unsigned char *lo;   /* lowest usable byte of the stack */
	unsigned char *top;  /* run_at_depth's frame: fn's use is below it */
	size_t used;         /* deepest use below top, in bytes */
	int result;          /* fn's own verdict (an errno value, or 0) */
	int started;
};

static size_t budget(void)
{
	const char *s = getenv("PLK_MINSTACK_BUDGET");

	return s && atoi(s) > 0 ? (size_t)atoi(s) : PLK_STACK_BUDGET;
}

/* Deepest use so far: the first byte from the bottom not the pattern. */
static void scan(struct run *r)
{
	const volatile unsigned char *p = r->lo;

	while (p < r->top && *p == PATTERN)
		p++;
	r->used = (size_t)(r->top - (const unsigned char *)p);
}

/*
 * PLK_MINSTACK_WHO=1: name the return addresses left in the deepest
 * kilobyte used (what used the stack; dladdr sees exported and dynamic
 * symbols only, the rest shows as the object's name and an offset).
 */
static void who(const struct run *r)
{
	const unsigned char *deep = r->top - r->used;
	const char *on = getenv("PLK_MINSTACK_WHO");

	if (!on || *on != '1')
		return;
	for (const unsigned char *p = deep; p < deep + 1024 && p < r->top; p += 8) {
		void *v;
		Dl_info info;

		memcpy(&v, p, sizeof(v));
		if (dladdr(v, &info) && info.dli_fname && (uintptr_t)v > (uintptr_t)info.dli_fbase + 4096)
			fprintf(stderr, "  %+6td %s %s+%#tx\n", p - r->top, info.dli_fname,
			        info.dli_sname ? info.dli_sname : "?",
			        (char *)v - (char *)(info.dli_sname ? info.dli_saddr : info.dli_fbase));
	}
}

static __attribute__((noinline)) void run_at_depth(struct run *r)
{
	unsigned char *here = __builtin_frame_address(0);
	volatile unsigned char *p;

	/* Pattern below us, clear of this frame; fn's use is counted from
	 * here, so this frame's few bytes count too. */
	r->top = here;
	for (p = r->lo; p < here - 256; p++)
		*p = PATTERN;
	__atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
	r->fn(r);
	scan(r);
}

static void *trampoline(void *arg)
{
	struct run *r = arg;
	pthread_attr_t a;
	void *lo;
	size_t size, left;
	unsigned char *sp = __builtin_frame_address(0);
	volatile unsigned char *pad;

	r->tid = gettid_();
	need(pthread_getattr_np(pthread_self(), &a) == 0);
	need(pthread_attr_getstack(&a, &lo, &size) == 0);
	pthread_attr_destroy(&a);
	r->lo = lo;
	left = (size_t)(sp - r->lo);
	need(left > r->budget + 1024);  /* TLS and struct pthread take their share */
	/* Use all but the budget (and run_at_depth's own frame). */
	pad = __builtin_alloca(left - r->budget - 512);
	pad[0] = 0;
	run_at_depth(r);
	__asm__ volatile("" : : "r"(pad) : "memory");
	return NULL;
}

static void run_start_budget(struct run *r, void (*fn)(struct run *), void *arg, size_t budget)
{
	pthread_attr_t a;

	memset(r, 0, sizeof(*r));
	r->fn = fn;
	r->arg = arg;
	r->budget = budget;
	need(pthread_attr_init(&a) == 0);
	need(pthread_attr_setstacksize(&a, getenv("PLK_MINSTACK_STACK") ?
	                                   (size_t)atol(getenv("PLK_MINSTACK_STACK")) :
	                                   PTHREAD_STACK_MIN) == 0);
	need(pthread_create(&r->th, &a, trampoline, r) == 0);
	pthread_attr_destroy(&a);
	while (!__atomic_load_n(&r->started, __ATOMIC_ACQUIRE))
		usleep(100);
}

static void run_start(struct run *r, void (*fn)(struct run *), void *arg)
{
	run_start_budget(r, fn, arg, budget());
}

/* Join @r; its operation must have kept within the budget. */
static int run_join(struct run *r, const char *what)
{
	ck_assert_int_eq(pthread_join(r->th, NULL), 0);
	fprintf(stderr, "minstack: %-28s deepest use %5zu bytes (budget %zu)\n", what, r->used,
	        r->budget);
	who(r);
	ck_assert_uint_le(r->used, r->budget);
	return r->result;
}

static struct timespec in_ms(long ms)
{
	return abstime_in(CLOCK_REALTIME, ms * 1000000L);
}

/* --- the operations -------------------------------------------------- */

static mutex_t m = MUTEX_INIT, m2 = MUTEX_INIT;
static cond_t c = COND_INIT;
static int go, holding, release_it;
static long counter;

static void lock_uncontended(struct run *r)
{
	r->result = mutex_lock(&m) || mutex_trylock(&m2) || mutex_unlock(&m2) || mutex_unlock(&m);
}

START_TEST(the_first_lock_of_a_process_fits)
{
	struct run r;

	run_start(&r, lock_uncontended, NULL);
	ck_assert_int_eq(run_join(&r, "first lock in the process"), 0);
}
END_TEST

/* A holder's or a waiter's part: its lock, and the CPU and nice it
 * takes first (-1: none), through the calls the interposer sees. */
struct part {
	mutex_t *lock;
	int cpu, nice;
};

static int take_context(const struct part *p)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	if (p->cpu >= 0)
		CPU_SET(p->cpu, &one);
	if (p->cpu >= 0 && sched_setaffinity(0, sizeof(one), &one))
		return errno;
	if (p->nice >= 0 && setpriority(PRIO_PROCESS, 0, p->nice))
		return errno;
	return 0;
}

/* Is the caller back at @p's context?  Raw syscalls: the kernel's view. */
static bool at_context(const struct part *p)
{
	cpu_set_t got, want;
	long prio;

	CPU_ZERO(&got);  /* the kernel fills its mask's size only */
	CPU_ZERO(&want);
	CPU_SET(p->cpu, &want);
	prio = syscall(SYS_getpriority, PRIO_PROCESS, 0);  /* 20 - nice */
	return syscall(SYS_sched_getaffinity, 0, sizeof(got), &got) > 0 && CPU_EQUAL(&got, &want) &&
	       (p->nice < 0 || 20 - prio == p->nice);
}

/* Holds until told, then releases: the restore gives its context back. */
static void hold(struct run *r)
{
	const struct part *p = r->arg;

	if ((r->result = take_context(p)) || (r->result = mutex_lock(p->lock))) {
		__atomic_store_n(&holding, -1, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&release_it, __ATOMIC_ACQUIRE))
		usleep(100);
	r->result = mutex_unlock(p->lock);
	if (!r->result && p->cpu >= 0 && !at_context(p))
		r->result = EPROTO;  /* not restored */
}

/* Blocks (lending, checking for a deadlock), gets the lock. */
static void wait_for(struct run *r)
{
	const struct part *p = r->arg;

	if (!(r->result = take_context(p)) && !(r->result = mutex_lock(p->lock)))
		r->result = mutex_unlock(p->lock);
}

/* Holder @hp, then waiter @wp, on minimum stacks; true if the holder
 * was seen lent @wp's CPU and (CAP_SYS_NICE: root) its nice. */
static bool contend(const struct part *hp, const struct part *wp, const char *what)
{
	struct run h, w;
	bool lent = true;

	run_start(&h, hold, (void *)hp);
	ck_assert(eventually(__atomic_load_n(&holding, __ATOMIC_ACQUIRE) != 0, 5000));
	ck_assert_int_eq(holding, 1);
	run_start(&w, wait_for, (void *)wp);
	ck_assert(eventually(thread_sleeping(w.tid), 5000));
	if (wp->cpu >= 0)
		lent = eventually(affinity_is(h.tid, wp->cpu, -1), 5000) &&
		       (geteuid() != 0 || eventually(kview_of(h.tid).nice == 0, 5000));
	__atomic_store_n(&release_it, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(run_join(&w, what), 0);
	ck_assert_msg(run_join(&h, "its holder") == 0, "holder: %s", strerror(h.result));
	return lent;
}

START_TEST(a_contended_lock_that_lends_fits)
{
	struct part hp = { &m, 1, 10 }, wp = { &m, 0, 0 };

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;  /* two CPUs to lend between */
	/* The kernel's view: the holder got the waiter's CPU (always lent)
	 * and, with CAP_SYS_NICE, its nice; at unlock, its own back. */
	ck_assert_msg(contend(&hp, &wp, "contended lock, lending"),
	              "the holder was never lent the waiter's CPU and nice");
}
END_TEST

/* @mx, ERRORCHECK if @errorcheck; robust if @robust, with the
 * library's API only (the interposer leaves robust mutexes to glibc). */
static void init_mutex(mutex_t *mx, bool errorcheck, bool robust)
{
#ifdef MINSTACK_PTHREAD
	pthread_mutexattr_t a;

	(void)robust;
	pthread_mutexattr_init(&a);
	if (errorcheck)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	ck_assert_int_eq(pthread_mutex_init(mx, &a), 0);
#else
	proxylock_mutexattr_t a;

	proxylock_mutexattr_init(&a);
	if (errorcheck)
		proxylock_mutexattr_settype(&a, PROXYLOCK_MUTEX_ERRORCHECK);
	if (robust)
		proxylock_mutexattr_setrobust(&a, PROXYLOCK_MUTEX_ROBUST);
	ck_assert_int_eq(proxylock_mutex_init(mx, &a), 0);
#endif
}

START_TEST(a_contended_errorcheck_lock_fits)
{
	static mutex_t e;
	struct part hp = { &e, -1, -1 }, wp = { &e, -1, -1 };

	init_mutex(&e, true, false);
	/* The waiter's deadlock check walks the owner chain. */
	contend(&hp, &wp, "contended errorcheck lock");
}
END_TEST

static void lock_rounds(struct run *r)
{
	for (int i = 0; i < 20000 && !r->result; i++) {
		r->result = mutex_lock(&m);
		counter++;
		r->result |= mutex_unlock(&m);
	}
}

START_TEST(contended_rounds_fit)
{
	struct run t[4];

	for (int i = 0; i < 4; i++)
		run_start(&t[i], lock_rounds, NULL);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(run_join(&t[i], "contended rounds"), 0);
	ck_assert_int_eq(counter, 4 * 20000);
}
END_TEST

/* Waits for go, then a 1 ms timed wait that times out, then a timed
 * wait that a signal ends. */
static void cond_waiter(struct run *r)
{
	struct timespec ts;
	int err;

	if ((r->result = mutex_lock(&m)))
		return;
	while (!go && !r->result)
		r->result = cond_wait(&c, &m);
	ts = in_ms(1);
	err = cond_timedwait(&c, &m, &ts);
	if (!r->result && err != ETIMEDOUT)
		r->result = err ? err : EAGAIN;
	__atomic_store_n(&holding, 2, __ATOMIC_RELEASE);
	ts = in_ms(10000);
	while (go < 2 && !r->result)
		r->result = cond_timedwait(&c, &m, &ts);
	r->result |= mutex_unlock(&m);
}

/* Signals while holding the mutex: the waiter moves onto it. */
static void cond_waker(struct run *r)
{
	int *phase = r->arg;

	r->result = mutex_lock(&m);
	go = *phase;
	r->result |= *phase == 1 ? cond_broadcast(&c) : cond_signal(&c);
	usleep(1000);
	r->result |= mutex_unlock(&m);
}

START_TEST(cond_waits_and_timed_waits_fit)
{
	struct run w, s1, s2;
	int one = 1, two = 2;

	run_start(&w, cond_waiter, NULL);
	ck_assert(eventually(thread_sleeping(w.tid), 5000));
	run_start(&s1, cond_waker, &one);
	ck_assert_int_eq(run_join(&s1, "cond broadcast"), 0);
	ck_assert(eventually(__atomic_load_n(&holding, __ATOMIC_ACQUIRE) == 2, 5000));
	ck_assert(eventually(thread_sleeping(w.tid), 5000));
	run_start(&s2, cond_waker, &two);
	ck_assert_int_eq(run_join(&s2, "cond signal"), 0);
	ck_assert_int_eq(run_join(&w, "cond wait, timed waits"), 0);
}
END_TEST

static void unlock_and_scan(void *arg)
{
	struct run *r = arg;

	mutex_unlock(&m);
	scan(r);  /* run_at_depth's own scan is unwound past */
}

static void cancelled_waiter(struct run *r)
{
	if ((r->result = mutex_lock(&m)))
		return;
	pthread_cleanup_push(unlock_and_scan, r);
	for (;;)
		cond_wait(&c, &m);
	pthread_cleanup_pop(1);
}

START_TEST(a_cancelled_cond_wait_fits)
{
	struct run w;
	void *ret;

	run_start_budget(&w, cancelled_waiter, NULL, budget() + PLK_STACK_BUDGET_CANCEL - PLK_STACK_BUDGET);
	ck_assert(eventually(thread_sleeping(w.tid), 5000));
	ck_assert_int_eq(pthread_cancel(w.th), 0);
	ck_assert_int_eq(pthread_join(w.th, &ret), 0);
	ck_assert_ptr_eq(ret, PTHREAD_CANCELED);
	fprintf(stderr, "minstack: %-28s deepest use %5zu bytes (budget %zu)\n",
	        "cancelled cond wait", w.used, w.budget);
	ck_assert_uint_le(w.used, w.budget);
	ck_assert_int_eq(mutex_trylock(&m), 0);  /* the handler gave it back */
}
END_TEST

static void *lock_and_leave(void *arg)
{
	mutex_lock(arg);
	return NULL;
}

#ifdef MINSTACK_PTHREAD
/* Non-robust, as pthread code has it: the waiter notices the dead owner
 * (and, with PROXYLOCK_STATS=1, says so on stderr) and times out. */
static void dead_owner_waiter(struct run *r)
{
	struct timespec ts = in_ms(300);

	r->result = mutex_timedlock(r->arg, &ts) == ETIMEDOUT ? 0 : EINVAL;
}
#else
static void dead_owner_waiter(struct run *r)
{
	r->result = mutex_lock(r->arg);
	if (r->result == EOWNERDEAD)
		r->result = proxylock_mutex_consistent(r->arg) || proxylock_mutex_unlock(r->arg);
	else
		r->result = EINVAL;
}
#endif

START_TEST(a_dead_owner_found_fits)
{
	static mutex_t d;
	struct run w;
	pthread_t t;

	init_mutex(&d, false, true);
	ck_assert_int_eq(pthread_create(&t, NULL, lock_and_leave, &d), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	run_start(&w, dead_owner_waiter, &d);
	ck_assert_int_eq(run_join(&w, "dead owner found"), 0);
}
END_TEST

/* --- exit from a minimum-stack thread ------------------------------- */

static void lock_then_exit(struct run *r)
{
	(void)r;
	lock_rounds(r);
	exit(r->result ? 3 : 0);  /* PROXYLOCK_STATS=all: the report runs here */
}

/* The child: contends from two threads, then one calls exit() with only
 * the budget left. */
static int exit_child(void)
{
	struct run t[2];

	run_start(&t[0], lock_rounds, NULL);
	run_start(&t[1], lock_then_exit, NULL);
	pthread_join(t[1].th, NULL);
	return 4;  /* not reached: t[1] exits */
}

START_TEST(exit_with_the_stats_report_fits)
{
	static char report[65536];
	char self[PATH_MAX], dir[] = "/tmp/plk-minstack-XXXXXX", json[PATH_MAX];
	char *argv[] = { self, "exit-child", NULL };
	const char *stats = getenv("PROXYLOCK_STATS");
	extern char **environ;
	ssize_t len, n = 0;
	pid_t pid;
	int st, fd;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(len, 0);
	self[len] = 0;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(json, sizeof(json), "%s/report.json", dir);
	setenv("PROXYLOCK_STATS_FILE", json, 1);  /* the JSON report, there (a new file) */
	ck_assert_int_eq(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit from a minimum stack: %s %d",
	              WIFSIGNALED(st) ? "signal" : "status",
	              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	fd = open(json, O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && n < (ssize_t)sizeof(report) - 1 &&
	       (len = read(fd, report + n, sizeof(report) - 1 - (size_t)n)) > 0)
		n += len;
	if (fd >= 0)
		close(fd);
	unlink(json);
	rmdir(dir);
	/* Under the interposer with PROXYLOCK_STATS=all: the report was
	 * written, to its last line, by that thread. */
	if (dlsym(RTLD_DEFAULT, "proxylock_mutex_lock") && stats && strcmp(stats, "all") == 0)
		ck_assert_msg(strstr(report, "\"version\"") && n > 2 && strcmp(report + n - 2, "}\n") == 0,
		              "no whole report: '%s'", report);
}
END_TEST

static Suite *minstack_suite(void)
{
	Suite *s = suite_create("minstack");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_first_lock_of_a_process_fits);
	tcase_add_test(tc, a_contended_lock_that_lends_fits);
	tcase_add_test(tc, a_contended_errorcheck_lock_fits);
	tcase_add_test(tc, contended_rounds_fit);
	tcase_add_test(tc, cond_waits_and_timed_waits_fit);
	tcase_add_test(tc, a_cancelled_cond_wait_fits);
	tcase_add_test(tc, a_dead_owner_found_fits);
	tcase_add_test(tc, exit_with_the_stats_report_fits);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc > 1 && strcmp(argv[1], "exit-child") == 0) {
		outside_check = true;
		return exit_child();
	}
	if (under_valgrind()) {
		/* The measurement reads the stack below the stack pointer,
		 * which memcheck rightly reports; and Valgrind's own frames
		 * are not the program's. */
		puts("SKIP: stack depths mean nothing under Valgrind");
		return 77;
	}
	sr = srunner_create(minstack_suite());
	srunner_set_fork_status(sr, CK_FORK);  /* a fresh process per case */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - shared test helpers: threads, CPU pinning, and the
 * kernel's view of a thread (sched_getattr, sched_getaffinity), read
 * with raw syscalls so the tests never trust the library's bookkeeping.
 */
#ifndef PLK_TEST_HELPERS_H
#define PLK_TEST_HELPERS_H

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proxylock.h"
#include "../lib/sched_attr.h"

struct kview {
	uint32_t policy;
	int32_t nice;
	uint32_t rt_prio;
	uint32_t umin, umax;
	cpu_set_t cpus;
};

/*
 * The scenarios rank threads by nice values set from nice 0, where a
 * process a shell starts runs.  One started at another nice (`nice -n 10
 * meson test`) is put back to 0 before main, where it may be (root, or
 * RLIMIT_NICE): its threads, made after, start there too.  Where it may
 * not, the tests that lower nice say SKIP, as for any user without the
 * privilege.  Raw system calls: under the interposer, libc's names are
 * its wrappers, and the first would probe what can be lent before a test
 * drops the privileges it probes for.
 */
__attribute__((constructor)) static void plk_test_nice_zero(void)
{
	long k = syscall(SYS_getpriority, PRIO_PROCESS, 0);  /* the kernel's 20 - nice */

	if (k > 0 && k != 20)
		(void)syscall(SYS_setpriority, PRIO_PROCESS, 0, 0);
}

/* Leave a test at once under ThreadSanitizer, saying why on stderr (a
 * test left unregistered there would be unused under -Werror). */
#ifdef __SANITIZE_THREAD__
#define SKIP_UNDER_TSAN(why) \
	do { fprintf(stderr, "SKIP under TSan: %s\n", why); return; } while (0)
#else
#define SKIP_UNDER_TSAN(why) do { } while (0)
#endif

/* The kernel's view of @tid (0: caller). */
static inline struct kview kview_of(pid_t tid)
{
	struct plk_sched_attr a;
	struct kview v;

	memset(&v, 0, sizeof(v));
	ck_assert_int_eq(plk_sched_getattr(tid, &a), 0);
	v.policy = a.sched_policy;
	v.nice = a.sched_nice;
	v.rt_prio = a.sched_priority;
	v.umin = a.sched_util_min;
	v.umax = a.sched_util_max;
	CPU_ZERO(&v.cpus);  /* raw: glibc's wrapper is the interposer's under LD_PRELOAD */
	ck_assert_int_ge(syscall(SYS_sched_getaffinity, tid, sizeof(v.cpus), &v.cpus), 0);
	return v;
}

/* The kernel's nice of @tid. */
static inline int nice_of(pid_t tid)
{
	return kview_of(tid).nice;
}

static inline bool kview_equal(const struct kview *a, const struct kview *b)
{
	return a->policy == b->policy && a->nice == b->nice && a->rt_prio == b->rt_prio &&
	       a->umin == b->umin && a->umax == b->umax && CPU_EQUAL(&a->cpus, &b->cpus);
}

/* Pin the caller to exactly @cpu. */
static inline void pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(s), &s), 0);
}

static inline bool affinity_is(pid_t tid, int cpu_a, int cpu_b)
{
	struct kview v = kview_of(tid);
	cpu_set_t want;

	CPU_ZERO(&want);
	CPU_SET(cpu_a, &want);
	if (cpu_b >= 0)
		CPU_SET(cpu_b, &want);
	return CPU_EQUAL(&v.cpus, &want);
}

static inline void set_nice_self(int nice)
{
	struct plk_sched_attr a = { .sched_policy = SCHED_OTHER, .sched_nice = nice };

	ck_assert_int_eq(plk_sched_setattr(0, &a), 0);
}

/* Set the caller's fair policy (SCHED_OTHER or SCHED_BATCH), keeping its
 * nice.  Either way between them needs no privilege. */
static inline void set_fair_policy_self(uint32_t policy)
{
	struct plk_sched_attr a = { .sched_policy = policy, .sched_nice = kview_of(0).nice };

	ck_assert_int_eq(plk_sched_setattr(0, &a), 0);
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline struct timespec abstime_in(clockid_t clock, long ns)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_nsec += ns % 1000000000L;
	ts.tv_sec += ns / 1000000000L + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

/* Spin for @ns of CPU work. */
static inline void burn_ns(uint64_t ns)
{
	uint64_t end = mono_ns() + ns;

	while (mono_ns() < end)
		;
}

/* Poll @cond (an expression) every 100 us for up to @ms; true if it held. */
#define eventually(cond, ms) __extension__({                                          \
	bool ok_ = false;                                                \
	for (int i_ = 0; i_ < (ms) * 10 && !(ok_ = (cond)); i_++)       \
		usleep(100);                                             \
	ok_ || (cond);                                                   \
})

/*
 * A privilege the test needs (@have), and why.  Missing as root, it is a
 * failure.  Missing without root (a contributor's quick suite) the test
 * says SKIP on stderr and ends there: its forked child exits 0, which
 * Check counts as a pass, so the whole suite can run unprivileged.
 */
static inline void require_privilege(bool have, const char *why)
{
	if (!have && geteuid() != 0) {
		fprintf(stderr, "SKIP without root: %s\n", why);
		exit(0);
	}
	ck_assert_msg(have, "%s", why);
}

/* The test lends nice across two CPUs: it needs both, and the right. */
static inline void require_nice_lending(void)
{
	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	require_privilege(proxylock_caps() & PROXYLOCK_DONATE_NICE,
	                  "needs CAP_SYS_NICE or RLIMIT_NICE (run as root)");
}

/* The test lends RT priority. */
static inline void require_rt_lending(void)
{
	require_privilege(proxylock_caps() & PROXYLOCK_DONATE_RT,
	                  "needs CAP_SYS_NICE or RLIMIT_RTPRIO (run as root)");
}

/* A lent-to thread's fork child, which exits 0 if the kernel's view of
 * it is that thread's base, did. */
#define assert_fork_child_at_base(status)                                                   \
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,                        \
	              "the fork child is not at its thread's base (status %#x)", (status))

/* The first line of /proc/self/task/<tid>/@name into @buf (@len bytes),
 * or false ("" in @buf) if there is none. */
static inline bool task_file_line(pid_t tid, const char *name, char *buf, size_t len)
{
	char path[64];
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, name);
	if ((f = fopen(path, "r"))) {
		ok = fgets(buf, (int)len, f) != NULL;
		fclose(f);
	}
	if (!ok)
		buf[0] = 0;
	return ok;
}

/* Is thread @tid asleep ('S' in /proc/self/task/<tid>/stat)? */
static inline bool thread_sleeping(pid_t tid)
{
	char buf[512], *p;

	return task_file_line(tid, "stat", buf, sizeof(buf)) && (p = strrchr(buf, ')')) &&
	       p[2] == 'S';
}

/* The kernel gives a fork child pages marked MADV_WIPEONFORK zero-filled
 * (Linux 4.14+, madvise built in). */
static inline bool wipe_on_fork_works(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok = p != MAP_FAILED && madvise(p, (size_t)pg, MADV_WIPEONFORK) == 0;

	if (p != MAP_FAILED)
		munmap(p, (size_t)pg);
	return ok;
}

static inline pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * Under `meson test --setup=valgrind` (PROXYLOCK_TEST_UNDER_VALGRIND=1)
 * threads run one at a time, many times slower: time bounds stretch 20x,
 * and checks that a run was concurrent enough to mean anything are
 * waived (memcheck is there for memory errors, not for timing).
 */
static inline bool under_valgrind(void)
{
	const char *s = getenv("PROXYLOCK_TEST_UNDER_VALGRIND");

	return s && *s == '1';
}

static inline uint64_t time_bound_ns(uint64_t ns)
{
	const char *slack = getenv("PLK_STRESS_SLACK");  /* sanitizer runs: .ci/run */

	if (under_valgrind())
		return ns * 20;
	return slack && atoi(slack) > 1 ? ns * (uint64_t)atoi(slack) : ns;
}

/* @ms stretched as time_bound_ns stretches: eventually()'s bound. */
static inline int bound_ms(int ms)
{
	return (int)(time_bound_ns((uint64_t)ms * 1000000u) / 1000000u);
}

/* One Check suite per file, run with CK_NORMAL; exit status = failures. */
#define PLK_TEST_MAIN(make_suite)                                        \
	int main(void)                                                   \
	{                                                                \
		SRunner *sr = srunner_create(make_suite());             \
		int failed;                                              \
		srunner_run_all(sr, CK_NORMAL);                          \
		failed = srunner_ntests_failed(sr);                      \
		srunner_free(sr);                                        \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;             \
	}

/* The first failure of a many-threaded test, kept for the main thread to
 * report: state 0 none, 1 being written, 2 written (release: a reader
 * that acquires 2 sees the whole message).  Later failures are dropped. */
struct first_fail {
	int state;
	char msg[512];
};

static inline __attribute__((format(printf, 3, 4)))
void first_fail_note(struct first_fail *f, const char *who, const char *fmt, ...)
{
	int zero = 0;
	va_list ap;

	if (!__atomic_compare_exchange_n(&f->state, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", who, f->msg);
	__atomic_store_n(&f->state, 2, __ATOMIC_RELEASE);
}

#endif /* PLK_TEST_HELPERS_H */

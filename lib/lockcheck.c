/* SPDX-License-Identifier: MIT */
/*
 * lockcheck.c - the debug check of the rule (I5'): while any internal
 * lock (plk_ilock_t) is held, no syscall but that lock's own futex
 * calls, no allocation, no cancellation point.  Built only with
 * `meson setup -Dlockcheck=true` (PLK_LOCKCHECK); CI runs the unit suite
 * so.
 *
 * Mechanism.  plk_ilock_lock/unlock (futex.h) count the internal locks
 * the thread holds in plk_ilock_depth (initial-exec TLS).  The library,
 * the interposer and every executable linking the internal archive are
 * linked with GNU ld's --wrap=SYMBOL for each symbol below (the list is
 * lockcheck_wrapped in lib/meson.build): every undefined reference the
 * linked objects make to SYMBOL goes to __wrap_SYMBOL here, which aborts
 * if plk_ilock_depth > 0 and otherwise calls glibc's (__real_SYMBOL).
 * --wrap rewrites only the references of the objects being linked, so
 * exactly the library's own calls are checked (a glibc or libnuma
 * function calling malloc inside is checked where the library entered
 * it), and a sanitizer's interceptors still sit behind __real_SYMBOL.
 * The internal lock's own futex calls (futex.c) call __real_syscall and
 * so pass; any other futex call under a lock (plk_futex_wake of a park
 * word) is reported.  A violation writes one fixed line naming the
 * function to stderr and aborts; with PLK_LOCKCHECK=warn in the
 * environment it writes the line and a backtrace (addresses: resolve
 * with addr2line or gdb) once per distinct stack, and goes on, so one
 * run lists every site.
 *
 * The library's undefined symbols (nm -u of libproxylock.so and
 * libproxylock-preload.so, glibc 2.36, libnuma 2.0.16),
 * classified:
 *
 * Wrapped, reported under a lock:
 *   malloc calloc realloc free posix_memalign aligned_alloc memalign,
 *   mmap mmap64 munmap                    allocation (and syscalls)
 *   syscall                               any number: sched_*attr,
 *                                         tgkill, openat/read/close,
 *                                         futex (but the ilock's own)
 *   sched_getaffinity sched_setaffinity sched_setscheduler
 *   sched_getscheduler sched_getparam sched_setparam sched_yield
 *   setpriority getpriority nice getpid gettid getrlimit getrlimit64
 *                                         syscalls
 *   clock_gettime                         only for clocks without a vDSO
 *                                         entry (see below)
 *   open open64 openat openat64 fopen fopen64 fclose fgets read write
 *   close fcntl fcntl64 dprintf           syscalls, cancellation points,
 *                                         stdio allocates
 *   pthread_testcancel pthread_cond_wait pthread_cond_timedwait
 *                                         cancellation points
 *   pthread_mutex_lock pthread_once pthread_key_create
 *   pthread_setspecific __register_atfork  glibc locks (futex) or allocation
 *   qsort                                 allocates above 1 KiB of data
 *   dlsym dlvsym                          the loader's lock, allocation
 *   numa_allocate_cpumask numa_bitmask_free numa_node_of_cpu
 *   numa_node_to_cpus numa_parse_cpustring_all
 *                                         allocate, or read sysfs
 *
 * Allowed under a lock (not wrapped):
 *   memcmp memmove memset strcmp strncmp strcspn strlen strrchr strstr
 *   strtoull __sched_cpucount __errno_location pthread_self getenv
 *   secure_getenv
 *                                         pure, or read-only
 *   snprintf                              the library's formats are
 *                                         fixed: no allocation, no syscall
 *   numa_bitmask_isbitset numa_num_configured_cpus
 *                                         read libnuma's tables
 *   pthread_setcancelstate pthread_setcanceltype __sigsetjmp
 *   __pthread_register_cancel __pthread_unregister_cancel
 *   __pthread_unwind_next                 no syscall, no allocation; an
 *                                         unwind starts only at a
 *                                         cancellation point (checked)
 *   __cxa_atexit __cxa_finalize _ITM_* __gmon_start__
 *                                         crt glue, at load and unload
 *
 * clock_gettime: CLOCK_REALTIME, _MONOTONIC, _MONOTONIC_RAW, _BOOTTIME,
 * _TAI and the _COARSE clocks are read in the vDSO on x86_64 and arm64:
 * no syscall (unless the clocksource has no vDSO support, e.g. some
 * hypervisors; then one short, non-blocking syscall, which we accept),
 * no cancellation point.  Those are allowed; CPU-time clocks, always a
 * syscall, are reported.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "futex.h"

/* Frames kept of a violation's stack in warn mode, and distinct stacks
 * remembered (so each is logged once; beyond that, all are logged). */
#define WARN_FRAMES 32
#define WARN_SEEN 1024

static uint64_t warn_seen[WARN_SEEN];  /* hashes of stacks already logged */

ssize_t __real_write(int fd, const void *buf, size_t n);

/* Write the string @s to stderr, bypassing the check on write(). */
static void say(const char *s)
{
	ssize_t r = __real_write(2, s, strlen(s));

	(void)r;
}

/* PLK_LOCKCHECK=warn: log and go on instead of aborting (read each
 * time: a violation is rare, and a test may set it in a fork child). */
static bool warn_mode(void)
{
	const char *v = getenv("PLK_LOCKCHECK");

	return v && strcmp(v, "warn") == 0;
}

/* True the first time the stack @pc[0..n) is seen (FNV-1a, open addressing). */
static bool stack_is_new(void *const *pc, int n)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)(uintptr_t)pc[i]) * 1099511628211ull;
	h |= 1;  /* never 0, the empty slot */
	for (unsigned i = 0; i < WARN_SEEN; i++) {
		uint64_t *slot = &warn_seen[(h + i) % WARN_SEEN], empty = 0;

		if (__atomic_load_n(slot, __ATOMIC_RELAXED) == h)
			return false;
		if (__atomic_compare_exchange_n(slot, &empty, h, 0, __ATOMIC_RELAXED,
		                                __ATOMIC_RELAXED))
			return true;
		if (empty == h)
			return false;
	}
	return true;
}

/* Warn mode: report @what and its stack, once per distinct stack. */
static void warn(const char *what)
{
	void *pc[WARN_FRAMES];
	int saved = errno, n = backtrace(pc, WARN_FRAMES);

	if (stack_is_new(pc, n)) {
		say("proxylock lockcheck: warning: ");
		say(what);
		say(" with an internal lock held (PLK_LOCKCHECK=warn); stack:\n");
		backtrace_symbols_fd(pc, n, 2);
	}
	errno = saved;
}

void plk_lockcheck_violation(const char *what)
{
	if (warn_mode()) {
		warn(what);
		return;
	}
	say("proxylock lockcheck: ");
	say(what);
	say(" with an internal lock held: aborting (see design.md, \"Checking the rule\")\n");
	abort();
}

/* warn mode: backtrace() loads libgcc's unwinder (dlopen, malloc) on
 * first use; do that now, under no lock. */
static __attribute__((constructor)) void warn_mode_prepare(void)
{
	void *pc[1];

	if (warn_mode())
		(void)backtrace(pc, 1);
}

/* Report @what if the calling thread holds an internal lock. */
static inline void check(const char *what)
{
	if (__builtin_expect(plk_ilock_depth != 0, 0))
		plk_lockcheck_violation(what);
}

/* --- wrappers: fixed arguments --------------------------------------- */

/*
 * WRAP(ret, name, (params), (args)): __wrap_name checks, then returns
 * __real_name(args).  WRAP_VOID for functions returning nothing.
 */
#define WRAP(ret, name, params, args)                   \
	ret __real_##name params;                       \
	ret __wrap_##name params;                       \
	ret __wrap_##name params                        \
	{                                               \
		check(#name "()");                      \
		return __real_##name args;              \
	}
#define WRAP_VOID(name, params, args)                   \
	void __real_##name params;                      \
	void __wrap_##name params;                      \
	void __wrap_##name params                       \
	{                                               \
		check(#name "()");                      \
		__real_##name args;                     \
	}

/* Allocation. */
WRAP(void *, malloc, (size_t n), (n))
WRAP(void *, calloc, (size_t k, size_t n), (k, n))
WRAP(void *, realloc, (void *p, size_t n), (p, n))
WRAP_VOID(free, (void *p), (p))
WRAP(int, posix_memalign, (void **p, size_t a, size_t n), (p, a, n))
WRAP(void *, aligned_alloc, (size_t a, size_t n), (a, n))
WRAP(void *, memalign, (size_t a, size_t n), (a, n))
WRAP(void *, mmap, (void *a, size_t n, int prot, int fl, int fd, off_t off),
     (a, n, prot, fl, fd, off))
WRAP(void *, mmap64, (void *a, size_t n, int prot, int fl, int fd, off64_t off),
     (a, n, prot, fl, fd, off))
WRAP(int, munmap, (void *a, size_t n), (a, n))
WRAP_VOID(qsort, (void *b, size_t n, size_t sz, int (*cmp)(const void *, const void *)),
     (b, n, sz, cmp))

/* Scheduler and process syscalls. */
WRAP(int, sched_getaffinity, (pid_t t, size_t n, cpu_set_t *s), (t, n, s))
WRAP(int, sched_setaffinity, (pid_t t, size_t n, const cpu_set_t *s), (t, n, s))
WRAP(int, sched_setscheduler, (pid_t t, int pol, const struct sched_param *p), (t, pol, p))
WRAP(int, sched_getscheduler, (pid_t t), (t))
WRAP(int, sched_getparam, (pid_t t, struct sched_param *p), (t, p))
WRAP(int, sched_setparam, (pid_t t, const struct sched_param *p), (t, p))
WRAP(int, sched_yield, (void), ())
WRAP(int, setpriority, (int which, id_t who, int prio), (which, who, prio))
WRAP(int, getpriority, (int which, id_t who), (which, who))
WRAP(int, nice, (int inc), (inc))
WRAP(pid_t, getpid, (void), ())
WRAP(pid_t, gettid, (void), ())
WRAP(int, getrlimit, (int r, struct rlimit *l), (r, l))
WRAP(int, getrlimit64, (int r, struct rlimit64 *l), (r, l))

/* Files and stdio (cancellation points). */
WRAP(int, close, (int fd), (fd))
WRAP(ssize_t, read, (int fd, void *b, size_t n), (fd, b, n))
WRAP(ssize_t, write, (int fd, const void *b, size_t n), (fd, b, n))
WRAP(FILE *, fopen, (const char *p, const char *m), (p, m))
WRAP(FILE *, fopen64, (const char *p, const char *m), (p, m))
WRAP(int, fclose, (FILE *f), (f))
WRAP(char *, fgets, (char *s, int n, FILE *f), (s, n, f))

/* glibc's threads: cancellation points, locks, allocation. */
WRAP_VOID(pthread_testcancel, (void), ())
WRAP(int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m))
WRAP(int, pthread_cond_timedwait,
     (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))
WRAP(int, pthread_mutex_lock, (pthread_mutex_t *m), (m))
WRAP(int, pthread_once, (pthread_once_t *o, void (*f)(void)), (o, f))
WRAP(int, pthread_key_create, (pthread_key_t *k, void (*d)(void *)), (k, d))
WRAP(int, pthread_setspecific, (pthread_key_t k, const void *v), (k, v))
WRAP(int, __register_atfork, (void (*p)(void), void (*pa)(void), void (*c)(void), void *d),
     (p, pa, c, d))

/* The loader. */
WRAP(void *, dlsym, (void *h, const char *s), (h, s))
WRAP(void *, dlvsym, (void *h, const char *s, const char *v), (h, s, v))

/* libnuma. */
WRAP(struct bitmask *, numa_allocate_cpumask, (void), ())
WRAP_VOID(numa_bitmask_free, (struct bitmask *b), (b))
WRAP(int, numa_node_of_cpu, (int cpu), (cpu))
WRAP(int, numa_node_to_cpus, (int node, struct bitmask *b), (node, b))
WRAP(struct bitmask *, numa_parse_cpustring_all, (const char *s), (s))

/* --- wrappers: clocks ------------------------------------------------ */

/* Clocks the vDSO reads without a syscall (x86_64, arm64). */
static bool clock_in_vdso(clockid_t c)
{
	switch (c) {
	case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW:
	case CLOCK_REALTIME_COARSE: case CLOCK_MONOTONIC_COARSE: case CLOCK_BOOTTIME:
	case CLOCK_TAI:
		return true;
	default:
		return false;
	}
}

int __real_clock_gettime(clockid_t c, struct timespec *ts);
int __wrap_clock_gettime(clockid_t c, struct timespec *ts);

int __wrap_clock_gettime(clockid_t c, struct timespec *ts)
{
	if (!clock_in_vdso(c))
		check("clock_gettime() of a clock without a vDSO entry");
	return __real_clock_gettime(c, ts);
}

/* --- wrappers: variadic ---------------------------------------------- */

/* syscall(2)'s number, spelled for the report. */
static const char *syscall_name(long nr)
{
	switch (nr) {
	case SYS_futex: return "syscall(SYS_futex) (not the internal lock's own)";
	case SYS_sched_getattr: return "syscall(SYS_sched_getattr)";
	case SYS_sched_setattr: return "syscall(SYS_sched_setattr)";
	case SYS_sched_getaffinity: return "syscall(SYS_sched_getaffinity)";
	case SYS_sched_setaffinity: return "syscall(SYS_sched_setaffinity)";
	case SYS_sched_setscheduler: return "syscall(SYS_sched_setscheduler)";
	case SYS_sched_getscheduler: return "syscall(SYS_sched_getscheduler)";
	case SYS_sched_getparam: return "syscall(SYS_sched_getparam)";
	case SYS_sched_setparam: return "syscall(SYS_sched_setparam)";
	case SYS_setpriority: return "syscall(SYS_setpriority)";
	case SYS_getpriority: return "syscall(SYS_getpriority)";
	case SYS_tgkill: return "syscall(SYS_tgkill)";
	case SYS_gettid: return "syscall(SYS_gettid)";
	case SYS_getpid: return "syscall(SYS_getpid)";
	case SYS_openat: return "syscall(SYS_openat)";
	case SYS_read: return "syscall(SYS_read)";
	case SYS_close: return "syscall(SYS_close)";
	default: return "syscall(another number)";
	}
}

long __real_syscall(long nr, ...);
long __wrap_syscall(long nr, ...);

/* As glibc's syscall(): six argument words, whatever @nr takes.  The
 * words past the caller's arguments are read as glibc's assembly reads
 * them, from registers and the caller's stack, so AddressSanitizer must
 * not check those reads (a capget with two arguments: the sixth word is
 * in the caller's redzone). */
__attribute__((no_sanitize_address)) long __wrap_syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (plk_ilock_depth)
		plk_lockcheck_violation(syscall_name(nr));
	return __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* open(2)'s mode is there only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, ap) \
	(((flags) & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0)

#define WRAP_OPEN(name, params, fixed, last)                    \
	int __real_##name(params, ...);                         \
	int __wrap_##name(params, ...);                         \
	int __wrap_##name(params, ...)                          \
	{                                                       \
		va_list ap;                                     \
		mode_t mode;                                    \
                                                                \
		check(#name "()");                              \
		va_start(ap, last);                             \
		mode = OPEN_MODE(last, ap);                     \
		va_end(ap);                                     \
		return __real_##name(fixed, mode);              \
	}
#define COMMA ,
WRAP_OPEN(open, const char *p COMMA int flags, p COMMA flags, flags)
WRAP_OPEN(open64, const char *p COMMA int flags, p COMMA flags, flags)
WRAP_OPEN(openat, int dfd COMMA const char *p COMMA int flags, dfd COMMA p COMMA flags, flags)
WRAP_OPEN(openat64, int dfd COMMA const char *p COMMA int flags, dfd COMMA p COMMA flags, flags)

/* fcntl(2)'s one argument is an int or a pointer: passed on as a word. */
#define WRAP_FCNTL(name)                                        \
	int __real_##name(int fd, int cmd, ...);                \
	int __wrap_##name(int fd, int cmd, ...);                \
	int __wrap_##name(int fd, int cmd, ...)                 \
	{                                                       \
		va_list ap;                                     \
		void *arg;                                      \
                                                                \
		check(#name "()");                              \
		va_start(ap, cmd);                              \
		arg = va_arg(ap, void *);                       \
		va_end(ap);                                     \
		return __real_##name(fd, cmd, arg);             \
	}
WRAP_FCNTL(fcntl)
WRAP_FCNTL(fcntl64)

int __wrap_dprintf(int fd, const char *fmt, ...);

/* dprintf: checked, then glibc's vdprintf (not wrapped). */
int __wrap_dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int n;

	check("dprintf()");
	va_start(ap, fmt);
	n = vdprintf(fd, fmt, ap);
	va_end(ap);
	return n;
}

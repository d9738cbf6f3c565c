/* SPDX-License-Identifier: MIT */
/*
 * preload_sched.c - the application's own scheduler calls, under the
 * LD_PRELOAD interposer.
 *
 * While a thread is lent to, the kernel's view of it is E(T), not B(T).
 * An application that sets its affinity, nice or policy then means to
 * change B(T); left alone, its call would be undone by the next restore,
 * which puts the old base back.  So each setter here runs glibc's call
 * through plk_donate_base_set(), which (holding the thread's apply token,
 * with no internal lock held) takes what it set into B(T) and lends again
 * on top; and each getter returns B(T) while something lent is in the
 * kernel (never an unverified copy), so that code reading
 * before writing (nice(), get-modify-set of affinity) starts from what
 * the application set, not from what it was lent.
 *
 * Calls aimed at other processes, or at process groups and users, pass
 * through untouched.  glibc 2.36 has no sched_setattr() wrapper (2.41
 * adds one); we define it, over the raw syscall, so that programs built
 * against a newer glibc are covered, but a raw syscall(SYS_sched_setattr)
 * is not seen (and a uclamp or nice set that way while lent is lost at
 * the restore).
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chain.h"
#include "donate.h"
#include "preload.h"
#include "registry.h"

enum call_kind {
	SET_AFFINITY, SET_SCHEDULER, SET_PARAM, SET_PRIORITY, SET_ATTR, /* -1 and errno */
	PTHREAD_SET_AFFINITY, PTHREAD_SET_SCHEDPARAM, PTHREAD_SET_SCHEDPRIO /* errno value */
};

struct sched_call {
	enum call_kind kind;
	pid_t pid;
	pthread_t th;
	int which, policy, prio;
	size_t size;
	const cpu_set_t *mask;
	const struct sched_param *param;
	void *attr;
	unsigned flags;
	int ret, err;
};

/*
 * glibc's struct pthread (what a pthread_t points to, on x86_64 and
 * aarch64 alike) holds the thread's TID at an offset glibc does not
 * publish for programs (pthread_gettid_np is 2.42's), but does for its
 * debugger library: libthread_db reads the field through the
 * GLIBC_PRIVATE descriptor _thread_db_pthread_tid, three uint32_t
 * {size in bits, count, byte offset} (glibc's nptl_db).  We take the
 * offset from there, once, and believe it only if it is a 32-bit field
 * inside struct pthread that holds the caller's own TID.  Scanning the
 * structure for the caller's TID instead can stop at an earlier word
 * that merely equals it (header.multiple_threads, 1, for a caller with
 * TID 1; the high half of the TCB's own address, 0x7fxx, for a caller
 * with that TID), and then every other thread is mapped to a wrong TID.
 * Without the descriptor (or if it fails the check) no other thread's
 * TID is known: those calls pass to glibc untouched, as for a thread we
 * do not track (0).
 */
#define TID_OFFSET_UNKNOWN (-1)  /* not looked up yet */
#define TID_OFFSET_NONE (-2)     /* no usable descriptor */

static long tid_offset = TID_OFFSET_UNKNOWN;

/* The descriptor's offset, checked against the caller; TID_OFFSET_NONE
 * if missing or wrong.  dlsym allocates: no internal lock is held here
 * (the application's own scheduler call, before plk_donate_base_set). */
static long tid_offset_lookup(void)
{
	const uint32_t *desc = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");
	const uint32_t *size = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
	pid_t me = (pid_t)plk_tid(), at;

	if (!desc || desc[0] != 8 * sizeof(pid_t) || desc[1] != 1 || desc[2] % sizeof(pid_t) ||
	    desc[2] + sizeof(pid_t) > (size ? size[0] : 4096u))
		return TID_OFFSET_NONE;
	memcpy(&at, (const char *)pthread_self() + desc[2], sizeof(at));
	return at == me ? (long)desc[2] : TID_OFFSET_NONE;
}

/* @th's TID, 0 if unknown (then the call is glibc's alone). */
static pid_t pthread_tid(pthread_t th)
{
	long off = __atomic_load_n(&tid_offset, __ATOMIC_RELAXED);
	pid_t tid;

	if (pthread_equal(th, pthread_self()))
		return (pid_t)plk_tid();
	if (off == TID_OFFSET_UNKNOWN) {
		off = tid_offset_lookup();
		__atomic_store_n(&tid_offset, off, __ATOMIC_RELAXED);  /* same answer from any thread */
	}
	if (off < 0)
		return 0;
	memcpy(&tid, (const char *)th + off, sizeof(tid));
	return tid;
}

static bool sched_call_run(void *p)
{
	struct sched_call *c = p;
	const struct plk_real *r = plk_real();

	switch (c->kind) {
	case SET_AFFINITY:
		c->ret = r->sched_setaffinity(c->pid, c->size, c->mask);
		break;
	case SET_SCHEDULER:
		c->ret = r->sched_setscheduler(c->pid, c->policy, c->param);
		break;
	case SET_PARAM:
		c->ret = r->sched_setparam(c->pid, c->param);
		break;
	case SET_PRIORITY:
		c->ret = r->setpriority(c->which, (id_t)c->pid, c->prio);
		break;
	case SET_ATTR:
		c->ret = (int)syscall(SYS_sched_setattr, c->pid, c->attr, c->flags);
		break;
	case PTHREAD_SET_AFFINITY:
		return (c->ret = r->pthread_setaffinity_np(c->th, c->size, c->mask)) == 0;
	case PTHREAD_SET_SCHEDPARAM:
		return (c->ret = r->pthread_setschedparam(c->th, c->policy, c->param)) == 0;
	case PTHREAD_SET_SCHEDPRIO:
		return (c->ret = r->pthread_setschedprio(c->th, c->prio)) == 0;
	}
	c->err = errno;
	return c->ret == 0;
}

/* Run @c on thread @tid (0: not one we track) as a change of its base. */
static int sched_call(struct sched_call *c, pid_t tid, unsigned fields)
{
	bool ok = tid > 0 ? plk_donate_base_set(tid, fields, sched_call_run, c) : sched_call_run(c);

	if (tid > 0) {
		int e = errno;

		plk_chain_flush();  /* a waiter's new base reaches its chain */
		errno = e;
	}
	if (!ok && c->err)
		errno = c->err;
	return c->ret;
}

static pid_t tid_of_pid(pid_t pid)
{
	return pid == 0 ? (pid_t)plk_tid() : pid;
}

/* --- setters --------------------------------------------------------- */

PLK_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *mask)
{
	struct sched_call c = { .kind = SET_AFFINITY, .pid = pid, .size = size, .mask = mask };

	return sched_call(&c, tid_of_pid(pid), PLK_FIELD_CPUS);
}

PLK_EXPORT int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *mask)
{
	struct sched_call c = { .kind = PTHREAD_SET_AFFINITY, .th = th, .size = size, .mask = mask };

	return sched_call(&c, pthread_tid(th), PLK_FIELD_CPUS);
}

PLK_EXPORT int sched_setscheduler(pid_t pid, int policy, const struct sched_param *param)
{
	struct sched_call c = { .kind = SET_SCHEDULER, .pid = pid, .policy = policy, .param = param };

	return sched_call(&c, tid_of_pid(pid), PLK_FIELD_POLICY);
}

PLK_EXPORT int sched_setparam(pid_t pid, const struct sched_param *param)
{
	struct sched_call c = { .kind = SET_PARAM, .pid = pid, .param = param };

	return sched_call(&c, tid_of_pid(pid), PLK_FIELD_POLICY);
}

PLK_EXPORT int pthread_setschedparam(pthread_t th, int policy, const struct sched_param *param)
{
	struct sched_call c = { .kind = PTHREAD_SET_SCHEDPARAM, .th = th, .policy = policy,
	                        .param = param };

	return sched_call(&c, pthread_tid(th), PLK_FIELD_POLICY);
}

PLK_EXPORT int pthread_setschedprio(pthread_t th, int prio)
{
	struct sched_call c = { .kind = PTHREAD_SET_SCHEDPRIO, .th = th, .prio = prio };

	return sched_call(&c, pthread_tid(th), PLK_FIELD_POLICY);
}

/* The fields a struct sched_attr sets, from its sched_flags (offset 8). */
static unsigned attr_fields(const void *attr)
{
	uint64_t f;
	unsigned fields = 0;

	memcpy(&f, (const char *)attr + 8, sizeof(f));
	if (!(f & 0x08))        /* SCHED_FLAG_KEEP_POLICY */
		fields |= PLK_FIELD_POLICY;
	if (!(f & 0x10))        /* SCHED_FLAG_KEEP_PARAMS: nice, RT priority */
		fields |= PLK_FIELD_NICE | PLK_FIELD_POLICY;
	if (f & 0x20)           /* SCHED_FLAG_UTIL_CLAMP_MIN */
		fields |= PLK_FIELD_UMIN;
	if (f & 0x40)           /* SCHED_FLAG_UTIL_CLAMP_MAX */
		fields |= PLK_FIELD_UMAX;
	return fields;
}

/* glibc 2.41's prototype; struct sched_attr is the kernel's. */
PLK_EXPORT int sched_setattr(pid_t pid, void *attr, unsigned int flags)
{
	struct sched_call c = { .kind = SET_ATTR, .pid = pid, .attr = attr, .flags = flags };

	if (!attr)
		return (int)syscall(SYS_sched_setattr, pid, attr, flags);  /* the kernel's EINVAL */
	return sched_call(&c, tid_of_pid(pid), attr_fields(attr));
}

static int set_priority(int which, id_t who, int prio)
{
	struct sched_call c = { .kind = SET_PRIORITY, .which = which, .pid = (pid_t)who,
	                        .prio = prio };

	/* On Linux, PRIO_PROCESS names one thread. */
	return sched_call(&c, which == PRIO_PROCESS ? tid_of_pid((pid_t)who) : 0, PLK_FIELD_NICE);
}

PLK_EXPORT int setpriority(__priority_which_t which, id_t who, int prio)
{
	return set_priority((int)which, who, prio);
}

/* --- getters: the base while lent ------------------------------------ */

/* The real getters, run by plk_donate_base_get holding the thread's
 * apply token: arguments and the caller's errno in, result and errno
 * out (the engine's own calls may change errno in between; the caller
 * sees it as the real getter left it, or as it was if the base answers). */
struct real_get {
	int which;          /* getpriority */
	id_t who;
	pid_t pid;          /* sched_getaffinity */
	pthread_t th;       /* pthread_getaffinity_np */
	size_t size;
	cpu_set_t *mask;
	int rc, err;
};

static void real_getpriority(void *arg)
{
	struct real_get *g = arg;

	errno = g->err;
	g->rc = plk_real()->getpriority(g->which, g->who);
	g->err = errno;
}

static void real_sched_getaffinity(void *arg)
{
	struct real_get *g = arg;

	errno = g->err;
	g->rc = plk_real()->sched_getaffinity(g->pid, g->size, g->mask);
	g->err = errno;
}

static void real_pthread_getaffinity(void *arg)
{
	struct real_get *g = arg;

	errno = g->err;
	g->rc = plk_real()->pthread_getaffinity_np(g->th, g->size, g->mask);
	g->err = errno;
}

static int get_priority(int which, id_t who)
{
	struct plk_sched_ctx base;
	struct real_get g = { .which = which, .who = who, .err = errno };
	bool lent;

	if (which != PRIO_PROCESS)
		return plk_real()->getpriority(which, who);
	lent = plk_donate_base_get(tid_of_pid((pid_t)who), &base, real_getpriority, &g);
	errno = g.err;
	return lent ? base.nice : g.rc;
}

PLK_EXPORT int getpriority(__priority_which_t which, id_t who)
{
	return get_priority((int)which, who);
}

/* Copy B(T)'s CPUs into the caller's mask of @size bytes. */
static void base_cpus_copy(const struct plk_sched_ctx *base, size_t size, cpu_set_t *mask)
{
	size_t n = size < sizeof(base->cpus) ? size : sizeof(base->cpus);

	memcpy(mask, &base->cpus, n);
	if (size > n)
		memset((char *)mask + n, 0, size - n);
}

PLK_EXPORT int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *mask)
{
	struct plk_sched_ctx base;
	struct real_get g = { .pid = pid, .size = size, .mask = mask, .err = errno };
	bool lent = plk_donate_base_get(tid_of_pid(pid), &base, real_sched_getaffinity, &g);

	errno = g.err;
	if (!lent)
		return g.rc;
	base_cpus_copy(&base, size, mask);
	return 0;
}

PLK_EXPORT int pthread_getaffinity_np(pthread_t th, size_t size, cpu_set_t *mask)
{
	struct plk_sched_ctx base;
	struct real_get g = { .th = th, .size = size, .mask = mask, .err = errno };
	pid_t tid = pthread_tid(th);
	bool lent;

	if (tid <= 0)
		return plk_real()->pthread_getaffinity_np(th, size, mask);
	lent = plk_donate_base_get(tid, &base, real_pthread_getaffinity, &g);
	errno = g.err;
	if (!lent)
		return g.rc;
	base_cpus_copy(&base, size, mask);
	return 0;
}

/* nice() is getpriority() plus setpriority() inside glibc, where we would
 * not see them: done here on the base. */
PLK_EXPORT int nice(int inc)
{
	int saved = errno, cur, want;

	errno = 0;
	cur = get_priority(PRIO_PROCESS, 0);
	if (cur == -1 && errno)
		return -1;
	want = cur + inc;
	want = want < -20 ? -20 : want > 19 ? 19 : want;
	if (set_priority(PRIO_PROCESS, 0, want) != 0) {
		if (errno == EACCES)
			errno = EPERM;
		return -1;
	}
	errno = saved;
	return want;
}

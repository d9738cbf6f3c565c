/* SPDX-License-Identifier: MIT */
/*
 * sched_attr.h - the kernel's struct sched_attr and the raw
 * sched_getattr(2) and sched_setattr(2) calls, which glibc 2.36 does not
 * wrap.  The one definition for the library, the tests, the tool, the
 * benchmarks and the examples.
 *
 * Self-contained (system headers only, everything static inline), so a
 * file outside lib/ may include it by its path: the examples do, as
 * "../lib/sched_attr.h", and so still build from the source tree with
 * nothing but the installed <proxylock.h> and `pkg-config proxylock`.
 * Not installed: it is no part of the API.
 */
#ifndef PLK_SCHED_ATTR_H
#define PLK_SCHED_ATTR_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* sched_flags bits (linux/sched.h). */
#define PLK_SCHED_FLAG_RESET_ON_FORK 0x01
#define PLK_SCHED_FLAG_KEEP_POLICY 0x08
#define PLK_SCHED_FLAG_KEEP_PARAMS 0x10
#define PLK_SCHED_FLAG_KEEP_ALL 0x18        /* KEEP_POLICY | KEEP_PARAMS */
#define PLK_SCHED_FLAG_UTIL_CLAMP_MIN 0x20
#define PLK_SCHED_FLAG_UTIL_CLAMP_MAX 0x40
#define PLK_SCHED_FLAG_UTIL_CLAMP 0x60      /* UTIL_CLAMP_MIN | UTIL_CLAMP_MAX */

/* SCHED_ATTR_SIZE_VER1 (Linux 5.3, uclamp): 56 bytes. */
struct plk_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
	uint32_t sched_util_min;
	uint32_t sched_util_max;
};

/**
 * plk_sched_getattr - read @tid's (0: the caller's) attributes into *@a
 * (zeroed first).  Returns 0 or an errno value.  A kernel older than
 * 5.3 leaves the clamps 0 and says its own size in a->size.
 */
static inline int plk_sched_getattr(pid_t tid, struct plk_sched_attr *a)
{
	memset(a, 0, sizeof(*a));
	return syscall(SYS_sched_getattr, tid, a, sizeof(*a), 0) == 0 ? 0 : errno;
}

/**
 * plk_sched_setattr - set @tid's (0: the caller's) attributes from *@a,
 * whose size it sets.  Returns 0 or an errno value.
 */
static inline int plk_sched_setattr(pid_t tid, struct plk_sched_attr *a)
{
	a->size = sizeof(*a);
	return syscall(SYS_sched_setattr, tid, a, 0) == 0 ? 0 : errno;
}

#endif /* PLK_SCHED_ATTR_H */

/* SPDX-License-Identifier: MIT */
/*
 * schedctl.h - scheduler back-end: a thread's scheduling context as the
 * kernel sees it, read and written with sched_getattr(2), sched_setattr(2),
 * sched_getaffinity(2) and sched_setaffinity(2), and the probe of what
 * this kernel and these privileges permit.
 */
#ifndef PLK_SCHEDCTL_H
#define PLK_SCHEDCTL_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "futex.h"
#include "sched_attr.h"

/* A scheduling context: what B(T) and E(T) are made of. */
struct plk_sched_ctx {
	uint32_t policy;   /* SCHED_OTHER, _BATCH, _IDLE, _FIFO, _RR */
	int32_t nice;      /* meaningful for the non-RT policies */
	uint32_t rt_prio;  /* meaningful for SCHED_FIFO/SCHED_RR */
	uint32_t umin;     /* uclamp_min, 0..1024 (0 where unsupported) */
	uint32_t umax;     /* uclamp_max, 0..1024 */
	uint64_t flags;    /* PLK_SCHED_FLAG_RESET_ON_FORK as read: the one bit kept */
	cpu_set_t cpus;    /* CPU affinity */
};

/* Most NUMA nodes the NODE affinity policy tells apart. */
#define PLK_NODES_MAX 64

/* The machine's CPUs by NUMA node, read once (schedctl.c's probe). */
struct plk_numa_map {
	int nnodes;                          /* 0: no NUMA information */
	int16_t node_of[CPU_SETSIZE];        /* -1: unknown */
	cpu_set_t cpus_of[PLK_NODES_MAX];
};

/* Each CPU's capacity (/sys/devices/system/cpu/cpuN/cpu_capacity, 0..1024),
 * read once with the cpuset (schedctl.c's probe; a CPU without the file
 * has PLK_CAPACITY_SCALE, as in the kernel).  differ: false where every
 * configured CPU has the same capacity; then the lend ignores capacities
 * (lend.c). */
#define PLK_CAPACITY_SCALE 1024
struct plk_capacity_map {
	bool differ;
	uint16_t of[CPU_SETSIZE];            /* 0: not a configured CPU */
};

/**
 * plk_sched_read - read @tid's (0: the caller's) context from the kernel.
 * Returns 0 or an errno value (ESRCH: the thread is gone).
 */
PLK_HIDDEN int plk_sched_read(pid_t tid, struct plk_sched_ctx *out);

/*
 * A gate asked before each call plk_sched_apply makes: open(arg, cur),
 * with *cur what the kernel has after the calls made so far, returns
 * false to make no more (the donation engine's holder re-checks its
 * generation and token there: donate.c, "The apply token").
 */
struct plk_sched_gate {
	bool (*open)(void *arg, const struct plk_sched_ctx *cur);
	void *arg;
};

/**
 * plk_sched_apply - make the kernel's view of @tid go from *@cur to
 * *@want, issuing only the calls for fields that differ (no call at all
 * when they are equal), each only if @gate (NULL: none) is open.  A part
 * the kernel refuses with EPERM (a nice or RT boost without privilege)
 * is dropped and counted, never reported.  On return *@cur holds what
 * the kernel now has.  Returns true if anything was changed.
 */
PLK_HIDDEN bool plk_sched_apply(pid_t tid, struct plk_sched_ctx *cur,
                                const struct plk_sched_ctx *want,
                                const struct plk_sched_gate *gate);

/** plk_sched_equal - true if @a and @b name the same kernel state. */
PLK_HIDDEN bool plk_sched_equal(const struct plk_sched_ctx *a,
                                const struct plk_sched_ctx *b);

/** plk_sched_is_rt - true for SCHED_FIFO and SCHED_RR. */
static inline bool plk_sched_is_rt(uint32_t policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR;
}

/**
 * plk_sched_caps - PROXYLOCK_DONATE_* kinds the kernel and the process's
 * privileges allow; probed on the first call, cached afterwards.  That
 * call also reads the cpuset and NUMA map if the load did not.
 */
PLK_HIDDEN unsigned plk_sched_caps(void);

/**
 * plk_sched_caps_if_probed - plk_sched_caps' answer into *@out if the
 * probe has run, else false: never runs it (a signal handler's, which
 * may have interrupted the probe's pthread_once on its own thread).
 */
PLK_HIDDEN bool plk_sched_caps_if_probed(unsigned *out);

/* The probe's verdict on one kind, and why. */
struct plk_cap_verdict {
	bool ok;
	char why[2600];  /* room for two CPU lists (proxylock caps) */
};

/* Index of each kind's verdict: bit k of PROXYLOCK_DONATE_*. */
enum { PLK_CAP_UCLAMP, PLK_CAP_AFFINITY, PLK_CAP_NICE, PLK_CAP_RT, PLK_CAP_KINDS };

/**
 * plk_sched_caps_explain - run the capability probe now, uncached, and
 * fill @v with each kind's verdict and its reason (where refused: the
 * errno or the missing privilege, and how to raise a limit).  Returns the
 * kinds allowed: what plk_sched_caps() says when nothing has changed
 * since its probe.  For `proxylock caps`; makes syscalls and formats
 * text: never under an internal lock.
 */
PLK_HIDDEN unsigned plk_sched_caps_explain(struct plk_cap_verdict v[PLK_CAP_KINDS]);

/**
 * plk_sched_rt_permitted - whether this thread may set an RT policy now
 * (CAP_SYS_NICE in the effective set, in the initial user namespace; or a
 * non-zero RLIMIT_RTPRIO): the
 * probe's RT test, asked of the kernel at each call (two syscalls), for
 * decisions that must follow a privilege drop made after the probe.
 */
PLK_HIDDEN bool plk_sched_rt_permitted(void);

/**
 * plk_sched_cpuset - the CPUs the process's cpuset lets its threads use
 * (cgroup v2 cpuset.cpus.effective, else every configured CPU); read once,
 * at load (or on a first call before that).
 */
PLK_HIDDEN const cpu_set_t *plk_sched_cpuset(void);

/**
 * plk_sched_numa - the CPUs of each NUMA node (lend.h), read with the
 * cpuset; nnodes 0 if libnuma knows none.
 */
PLK_HIDDEN const struct plk_numa_map *plk_sched_numa(void);

/**
 * plk_sched_capacity - each CPU's capacity (lend.h), read with the
 * cpuset; differ false on a machine of equal CPUs.
 */
PLK_HIDDEN const struct plk_capacity_map *plk_sched_capacity(void);

/**
 * plk_sched_probe_places - read the cpuset, the NUMA map and the CPU
 * capacities now if the load did not (stdio and libnuma: allocates).  The library's own
 * constructor calls it; the interposer's constructor calls it too, so
 * that an allocator calling back while they are read finds it inside its
 * slow-path depth.
 */
PLK_HIDDEN void plk_sched_probe_places(void);

/**
 * plk_sched_probe - run the probe behind plk_sched_caps, plk_sched_cpuset
 * and plk_sched_numa now: every slow path calls it before taking an
 * internal lock (the probe reads files and allocates).
 */
static inline void plk_sched_probe(void)
{
	(void)plk_sched_caps();
}

#endif /* PLK_SCHEDCTL_H */

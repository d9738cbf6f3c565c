/* SPDX-License-Identifier: MIT */
/*
 * schedctl.c - scheduler back-end.
 *
 * glibc 2.36 has no sched_setattr wrapper: the syscalls and the struct
 * are sched_attr.h's.
 *
 * Capability probing is done once, at the first use:
 *  - uclamp: sched_setattr(0) re-setting the caller's own current clamps
 *    with SCHED_FLAG_KEEP_ALL.  A kernel without CONFIG_UCLAMP_TASK says
 *    EOPNOTSUPP (older ones EINVAL or E2BIG, very old ENOSYS).
 *  - nice, RT: CAP_SYS_NICE in the effective set (capget) of a process
 *    in the initial user namespace (the kernel checks the capability
 *    against that namespace: in any other, capget shows it and nice and
 *    RT are refused all the same), or a non-zero RLIMIT_NICE /
 *    RLIMIT_RTPRIO.  A boost the kernel still refuses with EPERM at run
 *    time is skipped and counted (stats.eperm_skipped).
 *  - affinity: always; CPUs outside the process's cpuset are dropped by
 *    the donation engine before a call is made.
 * The same probe, run again with a verdict to fill, says why for each
 * kind (plk_sched_caps_explain; `proxylock caps` prints it).
 * The cpuset, the CPUs of each NUMA node and each CPU's capacity are
 * read once too, at load (probe_at_load), or at the first use before
 * that; never under an internal lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <linux/capability.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proxylock.h"
#include "sched_attr.h"
#include "schedctl.h"
#include "stats.h"

static int sys_setattr(pid_t tid, struct plk_sched_attr *a)
{
	plk_stat_inc(setattr_calls);
	return plk_sched_setattr(tid, a);
}

/* --- capability probe ------------------------------------------------ */

static unsigned caps_cached;
static pthread_once_t caps_once = PTHREAD_ONCE_INIT;
static cpu_set_t cpuset_allowed;
static struct plk_numa_map numa_map;
static struct plk_capacity_map capacity_map;

/*
 * Whether this process is in the initial user namespace, the only one
 * whose CAP_SYS_NICE the kernel honours for nice and RT (capable(),
 * not ns_capable()).  Its /proc/self/ns/user has the kernel's fixed
 * inode number for that namespace (PROC_USER_INIT_INO, 0xEFFFFFFD,
 * include/linux/proc_ns.h; unchanged since Linux 3.8).  Asked each time
 * (one stat): a single-threaded process may unshare its user namespace
 * after the probe, as it may drop privileges.  Without /proc mounted:
 * assumed yes, as before.  A syscall: never under an internal lock.
 */
#define PLK_USER_INIT_INO 0xEFFFFFFDu

static bool in_initial_user_namespace(void)
{
	struct stat st;

	return stat("/proc/self/ns/user", &st) != 0 || st.st_ino == PLK_USER_INIT_INO;
}

/* CAP_SYS_NICE in the effective set (capget). */
static bool cap_sys_nice_effective(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	return syscall(SYS_capget, &hdr, data) == 0 &&
	       (data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE));
}

/* CAP_SYS_NICE in the effective set, where the kernel honours it. */
static bool has_cap_sys_nice(void)
{
	return cap_sys_nice_effective() && in_initial_user_namespace();
}

static bool rlimit_nonzero(int resource)
{
	struct rlimit rl;

	return getrlimit(resource, &rl) == 0 && rl.rlim_cur > 0;
}

bool plk_sched_rt_permitted(void)
{
	return has_cap_sys_nice() || rlimit_nonzero(RLIMIT_RTPRIO);
}

/*
 * A verdict, with its reason written only when there is a @v to write
 * it in: the library's own probe passes none, and so formats nothing.
 */
static __attribute__((format(printf, 3, 4))) bool verdict(struct plk_cap_verdict *v, bool ok,
                                                          const char *fmt, ...)
{
	va_list ap;

	if (v) {
		v->ok = ok;
		va_start(ap, fmt);
		vsnprintf(v->why, sizeof(v->why), fmt, ap);
		va_end(ap);
	}
	return ok;
}

static const char *errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "an unknown error";
}

/* uclamp: re-set the caller's own clamps (KEEP_ALL: the policy and nice
 * stay; the same clamps: nothing changes if it works). */
static bool probe_uclamp(struct plk_cap_verdict *v)
{
	struct plk_sched_attr a;
	int err = plk_sched_getattr(0, &a);

	if (err)
		return verdict(v, false, "sched_getattr returned %s: kernel older than 3.14",
		               errname(err));
	if (a.size < sizeof(a))
		return verdict(v, false, "kernel too old for uclamp (sched_attr is %u bytes, uclamp "
		               "needs %zu: Linux 5.3)", a.size, sizeof(a));
	a.sched_flags = PLK_SCHED_FLAG_KEEP_ALL | PLK_SCHED_FLAG_UTIL_CLAMP;
	err = plk_sched_setattr(0, &a);
	if (!err)
		return verdict(v, true, "sched_setattr sets clamps (this thread's: min %u, max %u)",
		               a.sched_util_min, a.sched_util_max);
	if (err == EOPNOTSUPP)
		return verdict(v, false, "kernel built without CONFIG_UCLAMP_TASK (sched_setattr "
		               "returned EOPNOTSUPP)");
	if (err == EINVAL || err == E2BIG)
		return verdict(v, false, "kernel without uclamp flags, older than 5.3 (sched_setattr "
		               "returned %s)", errname(err));
	return verdict(v, false, "sched_setattr returned %s", errname(err));
}

/* Nice (@rt false) or RT boosts: CAP_SYS_NICE where the kernel honours
 * it, or a non-zero RLIMIT_NICE / RLIMIT_RTPRIO.  The library trusts
 * them; a boost the kernel still refuses is skipped and counted. */
static bool probe_boost(struct plk_cap_verdict *v, bool rt, bool cap)
{
	const char *lim = rt ? "RLIMIT_RTPRIO" : "RLIMIT_NICE";
	struct rlimit rl = { 0, 0 };
	char limit[48];

	getrlimit(rt ? RLIMIT_RTPRIO : RLIMIT_NICE, &rl);
	if (!cap && rl.rlim_cur == 0) {
		if (!v)
			return false;
		return verdict(v, false, "%s needs CAP_SYS_NICE or a non-zero %s; %s is 0 and "
		               "CAP_SYS_NICE is %s (raise it with %s)",
		               rt ? "an RT priority" : "lowering nice", lim, lim,
		               !cap_sys_nice_effective() ? "not in the effective set"
		               : "in the effective set but outside the initial user namespace, "
		                 "where alone the kernel honours it",
		               rt ? "ulimit -r 99, prlimit --rtprio=99 --pid PID, or an 'rtprio' line "
		                    "in /etc/security/limits.conf"
		                  : "ulimit -e 40, prlimit --nice=40 --pid PID, or a 'nice' line in "
		                    "/etc/security/limits.conf");
	}
	if (!v)
		return true;
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(limit, sizeof(limit), "%s unlimited", lim);
	else
		snprintf(limit, sizeof(limit), "%s %llu", lim, (unsigned long long)rl.rlim_cur);
	return verdict(v, true, "%s%s%s", cap ? "CAP_SYS_NICE in the effective set (" : "", limit,
	               cap ? ")" : "");
}

/*
 * The cpuset reader's buffers: static, not on the stack, because a lock
 * taken before our constructor ran reads the cpuset on its own thread,
 * perhaps one with PTHREAD_STACK_MIN of stack (docs/design.md, the stack
 * budget).  Only places_once_run, under places_once, touches them.
 */
static char cgroup_line[4096];
static char cpuset_path[sizeof(cgroup_line) + 64];

static const char cgroup_root[] = "/sys/fs/cgroup";
static const char cpuset_file[] = "/cpuset.cpus.effective";

/* The v2 cgroup's cpuset file, from /proc/self/cgroup's "0::" line,
 * into cpuset_path; false if there is none or it does not fit. */
static bool find_cpuset_path(void)
{
	bool found = false;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return false;
	while (fgets(cgroup_line, sizeof(cgroup_line), f))
		if (strncmp(cgroup_line, "0::", 3) == 0) {
			const char *rel = cgroup_line + 3;
			size_t len = strcspn(rel, "\n");

			if (sizeof(cgroup_root) + len + sizeof(cpuset_file) > sizeof(cpuset_path))
				continue;
			memcpy(cpuset_path, cgroup_root, sizeof(cgroup_root) - 1);
			memcpy(cpuset_path + sizeof(cgroup_root) - 1, rel, len);
			memcpy(cpuset_path + sizeof(cgroup_root) - 1 + len, cpuset_file,
			       sizeof(cpuset_file));
			found = true;
		}
	fclose(f);
	return found;
}

static void read_cpuset(void)
{
	struct bitmask *bm = NULL;
	FILE *f;

	CPU_ZERO(&cpuset_allowed);
	if (find_cpuset_path() && (f = fopen(cpuset_path, "re"))) {
		if (fgets(cgroup_line, sizeof(cgroup_line), f) && cgroup_line[0] != '\n') {
			cgroup_line[strcspn(cgroup_line, "\n")] = 0;
			bm = numa_parse_cpustring_all(cgroup_line);
		}
		fclose(f);
	}
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (bm ? numa_bitmask_isbitset(bm, cpu) : cpu < numa_num_configured_cpus())
			CPU_SET(cpu, &cpuset_allowed);
	if (bm)
		numa_bitmask_free(bm);
}

/* The CPUs of each NUMA node, for PROXYLOCK_AFFINITY_NODE: read here,
 * once, so that no lend ever asks libnuma (which reads sysfs). */
static void read_numa(void)
{
	struct bitmask *cpus;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		numa_map.node_of[cpu] = -1;
	if (numa_available() < 0 || !(cpus = numa_allocate_cpumask()))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE && cpu < numa_num_configured_cpus(); cpu++) {
		int node = numa_node_of_cpu(cpu);

		if (node < 0 || node >= PLK_NODES_MAX)
			continue;
		numa_map.node_of[cpu] = (int16_t)node;
		if (node >= numa_map.nnodes) {
			for (int n = numa_map.nnodes; n <= node; n++)
				CPU_ZERO(&numa_map.cpus_of[n]);
			numa_map.nnodes = node + 1;
		}
	}
	for (int node = 0; node < numa_map.nnodes; node++) {
		if (numa_node_to_cpus(node, cpus) != 0)
			continue;
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (numa_bitmask_isbitset(cpus, c))
				CPU_SET(c, &numa_map.cpus_of[node]);
	}
	numa_bitmask_free(cpus);
}

/* Each CPU's capacity, for the lend's capacity rule (lend.c): read here,
 * once, so that no lend reads sysfs.  A configured CPU whose file is
 * missing or unreadable has the capacity the kernel gives a CPU its
 * architecture says nothing of, SCHED_CAPACITY_SCALE (1024): never "the
 * smallest", which would let a lend take a holder off it. */
static char capacity_path[64];

static uint16_t read_one_capacity(long cpu)
{
	char buf[16];
	ssize_t n;
	long cap;
	int fd;

	snprintf(capacity_path, sizeof(capacity_path), "/sys/devices/system/cpu/cpu%ld/cpu_capacity",
	         cpu);
	fd = open(capacity_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PLK_CAPACITY_SCALE;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return PLK_CAPACITY_SCALE;
	buf[n] = '\0';
	cap = strtol(buf, NULL, 10);
	return cap <= 0 || cap > PLK_CAPACITY_SCALE ? PLK_CAPACITY_SCALE : (uint16_t)cap;
}

/* The CPUs below @ncpus (a count) and, where numbering is sparse, any
 * above it in the cpuset (read first). */
static void read_capacity(long ncpus)
{
	uint16_t first = 0;

	for (long cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (cpu >= ncpus && !CPU_ISSET(cpu, &cpuset_allowed))
			continue;
		capacity_map.of[cpu] = read_one_capacity(cpu);
		if (first == 0)
			first = capacity_map.of[cpu];
		else if (capacity_map.of[cpu] != first)
			capacity_map.differ = true;
	}
}

/* The probe: the kinds allowed, and with @v each one's reason. */
static unsigned probe_kinds(struct plk_cap_verdict v[PLK_CAP_KINDS])
{
	unsigned caps = PROXYLOCK_DONATE_AFFINITY;
	bool nice_cap = has_cap_sys_nice();

	if (probe_uclamp(v ? &v[PLK_CAP_UCLAMP] : NULL))
		caps |= PROXYLOCK_DONATE_UCLAMP;
	verdict(v ? &v[PLK_CAP_AFFINITY] : NULL, true, "always");
	if (probe_boost(v ? &v[PLK_CAP_NICE] : NULL, false, nice_cap))
		caps |= PROXYLOCK_DONATE_NICE;
	if (probe_boost(v ? &v[PLK_CAP_RT] : NULL, true, nice_cap))
		caps |= PROXYLOCK_DONATE_RT;
	return caps;
}

static void probe_caps(void)
{
	caps_cached = probe_kinds(NULL);
}

unsigned plk_sched_caps_explain(struct plk_cap_verdict v[PLK_CAP_KINDS])
{
	memset(v, 0, sizeof(*v) * PLK_CAP_KINDS);
	return probe_kinds(v);
}

/*
 * Two probes, each run once, outside every internal lock
 * (plk_sched_probe): the caps (a few syscalls, small frames) at first
 * use, since a process may drop its privileges after load (then neither
 * nice nor RT is lent, and a PI mutex stays the kernel's); the places
 * (cpuset, NUMA map: files and libnuma) at load, see probe_at_load.
 * Afterwards an acquire load of the ready flag (release below) is all
 * that is needed to see a probe's results, with no pthread_once call.
 */
static bool caps_ready, places_ready;
static pthread_once_t places_once = PTHREAD_ONCE_INIT;

static void caps_once_run(void)
{
	probe_caps();
	__atomic_store_n(&caps_ready, true, __ATOMIC_RELEASE);
}

/* libnuma sizes its masks in its own constructor; before that (a static
 * program, whose constructors run in link order, or a lock taken from an
 * earlier constructor) every mask it allocates has 0 bits, and it exits
 * the process ("request to allocate mask for invalid number"). */
static bool numa_initialised(void)
{
	return numa_num_possible_cpus() > 0;
}

/* Run from inside lock calls, which are no cancellation point: open,
 * read, close, fopen and fgets are, so a pending cancel waits until the
 * probe is done. */
static void places_once_run(void)
{
	int cancel;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (numa_initialised()) {
		read_cpuset();
		read_numa();
		read_capacity(sysconf(_SC_NPROCESSORS_CONF));
	} else {
		/* Too early for libnuma: every configured CPU, no nodes. */
		long n = sysconf(_SC_NPROCESSORS_CONF);

		CPU_ZERO(&cpuset_allowed);
		for (long cpu = 0; cpu < n && cpu < CPU_SETSIZE; cpu++)
			CPU_SET(cpu, &cpuset_allowed);
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
			numa_map.node_of[cpu] = -1;
		read_capacity(n);
	}
	pthread_setcancelstate(cancel, NULL);
	__atomic_store_n(&places_ready, true, __ATOMIC_RELEASE);
}

static void caps_wait(void)
{
	if (!__atomic_load_n(&caps_ready, __ATOMIC_ACQUIRE))
		pthread_once(&caps_once, caps_once_run);
}

static void places_wait(void)
{
	if (!__atomic_load_n(&places_ready, __ATOMIC_ACQUIRE))
		pthread_once(&places_once, places_once_run);
}

/*
 * The places at load, on the loading thread's stack: libnuma's lazy
 * binding alone (its first calls into libc, through the dynamic linker's
 * resolver, which saves the vector registers) takes about 3 KiB, too
 * much for a lock call on a PTHREAD_STACK_MIN thread (the stack budget,
 * docs/design.md).  A lock before this (from another library's
 * constructor) reads them on first use; the probe's own frames are small.
 */
static __attribute__((constructor)) void probe_at_load(void)
{
	if (numa_initialised())
		places_wait();  /* else on first use, once libnuma's has run */
}

void plk_sched_probe_places(void)
{
	places_wait();
}

bool plk_sched_caps_if_probed(unsigned *out)
{
	if (!__atomic_load_n(&caps_ready, __ATOMIC_ACQUIRE))
		return false;
	*out = caps_cached;
	return true;
}

unsigned plk_sched_caps(void)
{
	/* The places too: callers count on one call, made before their
	 * internal locks, for every probe (plk_sched_probe). */
	places_wait();
	caps_wait();
	return caps_cached;
}

const cpu_set_t *plk_sched_cpuset(void)
{
	places_wait();
	return &cpuset_allowed;
}

const struct plk_numa_map *plk_sched_numa(void)
{
	places_wait();
	return &numa_map;
}

const struct plk_capacity_map *plk_sched_capacity(void)
{
	places_wait();
	return &capacity_map;
}

/* --- reading and applying -------------------------------------------- */

int plk_sched_read(pid_t tid, struct plk_sched_ctx *out)
{
	struct plk_sched_attr a;
	int err = plk_sched_getattr(tid, &a);

	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->policy = a.sched_policy;
	out->nice = plk_sched_is_rt(a.sched_policy) ? 0 : a.sched_nice;
	out->rt_prio = a.sched_priority;
	out->umin = a.sched_util_min;
	out->umax = a.sched_util_max;
	out->flags = a.sched_flags & PLK_SCHED_FLAG_RESET_ON_FORK;
	/* Raw syscalls, never glibc's wrappers: under the interposer those
	 * are ours and answer with the base (preload_sched.c). */
	if (syscall(SYS_sched_getaffinity, tid, sizeof(out->cpus), &out->cpus) < 0)
		return errno;
	return 0;
}

static bool attr_equal(const struct plk_sched_ctx *a, const struct plk_sched_ctx *b)
{
	return a->policy == b->policy && a->rt_prio == b->rt_prio &&
	       (plk_sched_is_rt(a->policy) || a->nice == b->nice) &&
	       a->umin == b->umin && a->umax == b->umax;
}

bool plk_sched_equal(const struct plk_sched_ctx *a, const struct plk_sched_ctx *b)
{
	return attr_equal(a, b) && CPU_EQUAL(&a->cpus, &b->cpus);
}

static int set_attr(pid_t tid, const struct plk_sched_ctx *c, bool uclamp)
{
	struct plk_sched_attr a = {
		.sched_policy = c->policy,
		.sched_flags = c->flags | (uclamp ? PLK_SCHED_FLAG_UTIL_CLAMP : 0),
		.sched_nice = plk_sched_is_rt(c->policy) ? 0 : c->nice,
		.sched_priority = plk_sched_is_rt(c->policy) ? c->rt_prio : 0,
		.sched_util_min = c->umin,
		.sched_util_max = c->umax,
	};

	return sys_setattr(tid, &a);
}

/*
 * sched_setattr ignores sched_nice when it sets SCHED_IDLE, and leaves the
 * nice the thread had (@had): a thread lifted out of IDLE by a lend would
 * go back to IDLE keeping the lent nice, which the kernel uses again the
 * moment it leaves IDLE.  So the latent nice is set by itself (the raw
 * call: under the interposer, setpriority changes a base).  Returns the
 * nice the kernel has.
 */
static int set_idle_nice(pid_t tid, int had, int want)
{
	plk_stat_inc(setattr_calls);
	if (syscall(SYS_setpriority, PRIO_PROCESS, tid, want) == 0)
		return want;
	if (errno == EPERM || errno == EACCES)
		plk_stat_inc(eperm_skipped);
	return had;
}

/*
 * Drop, one at a time, the parts of @try that need privilege: first the
 * RT policy, then the nice boost.  Returns false when nothing is left to
 * drop.
 */
static bool drop_privileged_part(struct plk_sched_ctx *try, const struct plk_sched_ctx *cur)
{
	if (plk_sched_is_rt(try->policy) &&
	    (try->policy != cur->policy || try->rt_prio > cur->rt_prio)) {
		try->policy = cur->policy;  /* keep the nice part, if any */
		try->rt_prio = cur->rt_prio;
		return true;
	}
	if (!plk_sched_is_rt(try->policy) && (try->nice < cur->nice || try->policy != cur->policy)) {
		try->nice = cur->nice;
		try->policy = cur->policy;
		try->rt_prio = cur->rt_prio;
		return true;
	}
	return false;
}

/* Before each call: may it still be made?  (NULL: always.) */
static bool gate_open(const struct plk_sched_gate *g, const struct plk_sched_ctx *cur)
{
	return !g || g->open(g->arg, cur);
}

/* False if the gate closed before a call. */
static bool apply_attr(pid_t tid, struct plk_sched_ctx *cur, const struct plk_sched_ctx *want,
                       const struct plk_sched_gate *g)
{
	bool uclamp = (plk_sched_caps() & PROXYLOCK_DONATE_UCLAMP) &&
	              (cur->umin != want->umin || cur->umax != want->umax);
	struct plk_sched_ctx try = *want;
	int err;

	for (;;) {
		if (!uclamp) {
			try.umin = cur->umin;
			try.umax = cur->umax;
		}
		if (attr_equal(&try, cur))
			return true;
		if (!gate_open(g, cur))
			return false;
		err = set_attr(tid, &try, uclamp);
		if (err == 0)
			break;
		if (err != EPERM)
			return true;  /* ESRCH (gone), EINVAL: leave the kernel as it is */
		plk_stat_inc(eperm_skipped);
		if (!drop_privileged_part(&try, cur)) {
			if (!uclamp)
				return true;
			uclamp = false;
		}
	}
	/* What the kernel has now, before the next call's gate sees it:
	 * setting SCHED_IDLE leaves the nice the thread had. */
	int had = cur->nice;

	cur->policy = try.policy;
	cur->rt_prio = try.rt_prio;
	cur->umin = try.umin;
	cur->umax = try.umax;
	if (try.policy != SCHED_IDLE || try.nice == had) {
		cur->nice = try.nice;
		return true;
	}
	if (!gate_open(g, cur))
		return false;
	cur->nice = set_idle_nice(tid, had, try.nice);
	return true;
}

static void apply_affinity(pid_t tid, struct plk_sched_ctx *cur, const struct plk_sched_ctx *want,
                           const struct plk_sched_gate *g)
{
	if (CPU_EQUAL(&cur->cpus, &want->cpus) || CPU_COUNT(&want->cpus) == 0)
		return;
	if (!gate_open(g, cur))
		return;
	plk_stat_inc(setaff_calls);
	if (syscall(SYS_sched_setaffinity, tid, sizeof(want->cpus), &want->cpus) == 0)
		cur->cpus = want->cpus;
}

bool plk_sched_apply(pid_t tid, struct plk_sched_ctx *cur, const struct plk_sched_ctx *want,
                     const struct plk_sched_gate *g)
{
	struct plk_sched_ctx before = *cur;

	if (apply_attr(tid, cur, want, g))
		apply_affinity(tid, cur, want, g);
	return !plk_sched_equal(&before, cur);
}

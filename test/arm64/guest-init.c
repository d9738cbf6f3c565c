/* SPDX-License-Identifier: MIT */
/*
 * guest-init.c - /init of the arm64 qemu guests (test/arm64/run-arm64.sh).
 * Statically linked; the programs it runs are the cross build's ordinary
 * (dynamically linked) test binaries, with the arm64 runtime libraries in
 * the initramfs.
 *
 * Mounts /proc, /sys, /dev, /tmp and debugfs, says what machine it booted
 * (CPUs, cpu_capacity, whether the scheduler domains are asymmetric), then
 * runs each line of /tests:
 *
 *     NAME TIMEOUT-SECONDS [VAR=VALUE...] PROGRAM [ARG...]
 *
 * with one verdict line per program, an end marker, and powers off (PSCI
 * SYSTEM_OFF ends qemu).  A line of the single word "housekeeping" moves
 * the guest's own work off the little CPUs (init and its later children,
 * every kernel thread that exists and may move, unbound workqueues; the
 * per-CPU kernel threads capped; kernel threads created later are not
 * covered; see housekeeping_on_big()).  Lines on the console, all prefixed
 * PROXYLOCK-ARM64:
 *     BOOTED <n> cpus capacity=<c0>,<c1>,...  asym=<0|1>
 *     RUN <name>
 *     RESULT <name> PASS|FAIL|TIMEOUT rc=<status> secs=<wall>
 *     HOUSEKEEPING cpus=<hex mask> moved=<n> pinned=<n> refused=<n> wq=ok|fail stat=ok|fail
 *     DONE failed=<n>
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched/types.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAXARGS 64

static sigset_t sigchld;  /* blocked in /init, waited for with sigtimedwait */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Write @s to @path; whether it took. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ok = 0;

	if (fd >= 0) {
		ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
		if (!ok)
			perror(path);
		close(fd);
	}
	return ok;
}

/*
 * Energy-aware scheduling: the cpufreq governor of CPU 0's policy, whether
 * an energy model is registered, and whether the scheduler started EAS
 * (toggling sched_energy_aware with sched verbose on makes it say so in
 * the kernel log, which the console's quiet level does not show).
 */
static void describe_eas(void)
{
	char gov[64] = "none", aware[16] = "?";
	static char klog[1 << 17];
	struct stat st;
	int n, eas = 0;

	read_line("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor", gov, sizeof(gov));
	if (read_line("/proc/sys/kernel/sched_energy_aware", aware, sizeof(aware)) == 0) {
		write_file("/proc/sys/kernel/sched_energy_aware", "0");
		write_file("/proc/sys/kernel/sched_energy_aware", "1");
	}
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, klog, sizeof(klog) - 1);
	if (n > 0) {
		klog[n] = 0;
		for (char *l = strtok(klog, "\n"); l; l = strtok(NULL, "\n")) {
			if (strstr(l, "EAS") || strstr(l, "cpufreq") || strstr(l, "energy"))
				printf("PROXYLOCK-ARM64: klog %s\n", l);
			if (strstr(l, "starting EAS"))
				eas = 1;
			if (strstr(l, "stopping EAS"))
				eas = 0;
		}
	}
	printf("PROXYLOCK-ARM64: EAS governor=%s energy_model=%d energy_aware=%s eas=%d\n", gov,
	       stat("/sys/kernel/debug/energy_model/cpu0", &st) == 0, aware, eas);
}

/* CPU @cpu's cpu_capacity (sysfs), or -1 if it has none. */
static long cpu_capacity(long cpu)
{
	char path[96], buf[32];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/cpu_capacity", cpu);
	return read_line(path, buf, sizeof(buf)) == 0 ? atol(buf) : -1;
}

/* CPUs, capacities, and SD_ASYM_CPUCAPACITY in any domain of CPU 0. */
static void describe_machine(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	char caps[256] = "", buf[64], flags[1024], path[128];
	size_t used = 0;
	int asym = 0;

	for (long i = 0; i < n; i++) {
		long cap = cpu_capacity(i);

		if (cap < 0)
			snprintf(buf, sizeof(buf), "?");
		else
			snprintf(buf, sizeof(buf), "%ld", cap);
		if (used + strlen(buf) + 2 < sizeof(caps))
			used += (size_t)sprintf(caps + used, "%s%s", i ? "," : "", buf);
	}
	/* Domain flags are printed by name once verbose is set. */
	write_file("/sys/kernel/debug/sched/verbose", "Y");
	for (int d = 0; d < 4; d++) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/sched/domains/cpu0/domain%d/flags", d);
		if (read_line(path, flags, sizeof(flags)) == 0 && strstr(flags, "SD_ASYM_CPUCAPACITY"))
			asym = 1;
	}
	printf("PROXYLOCK-ARM64: BOOTED %ld cpus capacity=%s asym=%d\n", n, caps, asym);
	describe_eas();
	fflush(stdout);
}

/* Cap @pid's uclamp_max at @cap, keeping the rest of its attributes. */
static int cap_to_little(pid_t pid, long cap)
{
	/* SCHED_FLAG_KEEP_POLICY | _KEEP_PARAMS | _UTIL_CLAMP_MAX (linux/sched.h;
	 * the struct is linux/sched/types.h's, so no glibc sched.h here) */
	struct sched_attr a = { .size = sizeof(a), .sched_util_max = (uint32_t)cap,
	                        .sched_flags = 0x08 | 0x10 | 0x40 };

	return syscall(SYS_sched_setattr, pid, &a, 0) == 0;
}

/*
 * Keep the guest's own work on the big CPUs (those of the highest
 * cpu_capacity), for the big.LITTLE scenario.  A task with the default
 * clamps (uclamp_max 1024) that runs on a little CPU makes the scheduler
 * find that CPU overutilized (1024 does not fit 400), which turns
 * energy-aware placement off until the next balance and lets an idle big
 * CPU pull the scenario's small task off its little CPU, clamp or not.
 * Without this, the RCU grace-period thread and vmstat's workers did
 * that now and then: 0-18% of the undonated critical section ran on big
 * CPUs.  Per-CPU kernel threads cannot move (sched_setaffinity refuses):
 * they are capped at the little CPUs' capacity instead ("pinned"; the
 * stopper and deadline threads refuse that too, and carry no clamp), and
 * vmstat's per-CPU work runs hourly.
 */
static void housekeeping_on_big(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN), cap[64], max = 0, min = 1024;
	char buf[64];
	int moved = 0, pinned = 0, refused = 0, wq_ok, stat_ok;
	unsigned long mask = 0;  /* the kernel's cpumask, in the raw syscall's form */
	struct dirent *e;
	DIR *d;

	if (n > 64)
		n = 64;
	for (long i = 0; i < n; i++) {
		if ((cap[i] = cpu_capacity(i)) < 0)
			cap[i] = 1024;
		max = cap[i] > max ? cap[i] : max;
		min = cap[i] < min ? cap[i] : min;
	}
	for (long i = 0; i < n; i++)
		if (cap[i] == max)
			mask |= 1ul << i;
	d = opendir("/proc");
	while (d && (e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9') {
			pid_t pid = atoi(e->d_name);

			if (syscall(SYS_sched_setaffinity, pid, sizeof(mask), &mask) == 0)
				moved++;
			else if (cap_to_little(pid, min))
				pinned++;
			else
				refused++;
		}
	if (d)
		closedir(d);
	snprintf(buf, sizeof(buf), "%lx", mask);
	wq_ok = write_file("/sys/devices/virtual/workqueue/cpumask", buf);
	stat_ok = write_file("/proc/sys/vm/stat_interval", "3600");
	printf("PROXYLOCK-ARM64: HOUSEKEEPING cpus=%s moved=%d pinned=%d refused=%d wq=%s stat=%s\n",
	       buf, moved, pinned, refused, wq_ok ? "ok" : "fail", stat_ok ? "ok" : "fail");
	fflush(stdout);
}

/* Run one /tests line; returns 0 on a pass. */
static int run_line(char *line)
{
	char *tok[MAXARGS + 1], *save = NULL, *name, *envp_extra[MAXARGS];
	int ntok = 0, nenv = 0, status = 0, timed_out = 0;
	double t0, limit;
	pid_t pid;

	for (char *t = strtok_r(line, " \t\n", &save); t && ntok < MAXARGS;
	     t = strtok_r(NULL, " \t\n", &save))
		tok[ntok++] = t;
	if (ntok == 1 && strcmp(tok[0], "housekeeping") == 0) {
		housekeeping_on_big();
		return 0;
	}
	if (ntok < 3 || tok[0][0] == '#')
		return 0;
	name = tok[0];
	limit = atof(tok[1]);
	int first = 2;

	while (first < ntok && strchr(tok[first], '=') && tok[first][0] != '/')
		envp_extra[nenv++] = tok[first++];
	tok[ntok] = NULL;
	printf("PROXYLOCK-ARM64: RUN %s\n", name);
	fflush(stdout);
	t0 = now();
	pid = fork();
	if (pid < 0) {
		printf("PROXYLOCK-ARM64: RESULT %s FAIL rc=-1 secs=0.0 (fork: %s)\n", name, strerror(errno));
		fflush(stdout);
		return 1;
	}
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &sigchld, NULL);
		setpgid(0, 0);
		for (int i = 0; i < nenv; i++)
			putenv(envp_extra[i]);
		execv(tok[first], &tok[first]);
		fprintf(stderr, "exec %s: %s\n", tok[first], strerror(errno));
		_exit(127);
	}
	/* Sleep until a child exits or the limit passes (SIGCHLD is blocked,
	 * main): no periodic wake-up.  A poll here ran every 20 ms on any
	 * CPU, with the default clamps, and each time it ran on a little CPU
	 * the scheduler found that CPU overutilized (uclamp_max 1024 does
	 * not fit it), which let the big CPUs pull the biglittle scenario's
	 * small task there, its clamp notwithstanding. */
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		double left = limit - (now() - t0);
		struct timespec ts;

		if (r == pid)
			break;
		if (left <= 0) {
			if (!timed_out) {
				timed_out = 1;
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
			}
			left = 1;
		}
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		sigtimedwait(&sigchld, NULL, &ts);
	}
	/* Reap the test's own leftovers (Check's forks, killed groups). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	int pass = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;

	printf("PROXYLOCK-ARM64: RESULT %s %s rc=%d secs=%.1f\n", name,
	       timed_out ? "TIMEOUT" : pass ? "PASS" : "FAIL",
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), now() - t0);
	fflush(stdout);
	return pass ? 0 : 1;
}

int main(void)
{
	char line[4096];
	int failed = 0;
	FILE *f;

	if (getpid() == 1) {
		mount("proc", "/proc", "proc", 0, NULL);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);  /* Check's pipes */
		mount("tmpfs", "/dev/shm", "tmpfs", 0, NULL);
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		setenv("TMPDIR", "/tmp", 1);
		setenv("PATH", "/bin:/t", 1);
		setenv("LD_LIBRARY_PATH", "/lib/aarch64-linux-gnu", 1);
	}
	sigemptyset(&sigchld);
	sigaddset(&sigchld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigchld, NULL);
	describe_machine();
	f = fopen("/tests", "r");
	if (!f) {
		printf("PROXYLOCK-ARM64: no /tests\n");
		failed = 1;
	} else {
		while (fgets(line, sizeof(line), f))
			failed += run_line(line);
		fclose(f);
	}
	printf("PROXYLOCK-ARM64: DONE failed=%d\n", failed);
	fflush(stdout);
	if (getpid() == 1) {
		/* Returning as init panics at once and may lose what is still
		 * in the UART: drain it, then power off (PSCI SYSTEM_OFF). */
		tcdrain(STDOUT_FILENO);
		sync();
		reboot(RB_POWER_OFF);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

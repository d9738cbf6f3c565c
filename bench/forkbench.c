/* SPDX-License-Identifier: MIT */
/*
 * forkbench.c - what fork() costs a process that has contended, natively
 * and under the LD_PRELOAD interposer (issue 18: the interposer's fork
 * handlers run on every fork).
 *
 * The cost is a property of the whole process (its mappings, its atfork
 * handlers), so each contender is a process of its own: the driver, run
 * without the interposer, re-executes itself once per repetition and
 * contender, interleaved, with the environment that contender needs:
 *   glibc          no LD_PRELOAD
 *   preload        LD_PRELOAD=PRELOAD.so PROXYLOCK_STATS=0
 *   preload-stats  LD_PRELOAD=PRELOAD.so PROXYLOCK_STATS=1, and
 *                  PROXYLOCK_STATS_FILE=/dev/null: a file that exists,
 *                  so no report at exit (one line on stderr says so)
 * Each measuring process first makes two threads contend on one pthread
 * mutex (--contend N lock+unlock pairs each), joins them, then times
 * --forks N rounds of fork(), _exit(0) in the child and waitpid(), and
 * writes the mean microseconds per round to the driver through a pipe:
 * wall time, and CPU time (its own and its children's, user + system),
 * which other load on a shared machine disturbs far less.  The driver
 * prints two rows per contender (csvrow.h):
 *   fork-after-contention,IMPL,1,0,fork_us,median,min,max,us
 *   fork-after-contention,IMPL,1,0,fork_cpu_us,median,min,max,us
 *
 *   usage: forkbench --preload PRELOAD.so [--reps N] [--forks N] [--contend N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "csvrow.h"

#define MAX_REPS 64

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static long contend_pairs = 200000;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* CPU time of @who (RUSAGE_SELF or RUSAGE_CHILDREN), microseconds. */
static double cpu_us(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static void *contend(void *arg)
{
	for (long i = 0; i < contend_pairs; i++) {
		pthread_mutex_lock(&contended);
		pthread_mutex_unlock(&contended);
	}
	return arg;
}

/* The measuring process: contend, then fork @forks times; the mean
 * microseconds per fork+_exit+waitpid round, wall and CPU, go to file
 * descriptor @out. */
static int measure(int forks, int out)
{
	pthread_t t[2];
	double start, cpu0;

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, contend, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cpu0 = cpu_us(RUSAGE_SELF) + cpu_us(RUSAGE_CHILDREN);
	start = now_us();
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 1;
	}
	dprintf(out, "%.3f %.3f\n", (now_us() - start) / forks,
	        (cpu_us(RUSAGE_SELF) + cpu_us(RUSAGE_CHILDREN) - cpu0) / forks);
	return 0;
}

struct contender {
	const char *name;
	const char *preload;  /* LD_PRELOAD, or NULL */
	const char *stats;    /* PROXYLOCK_STATS */
};

/* Run one measuring process for @c (this program again, @self being its
 * argv[0]); its microseconds per fork in @us[0] (wall) and @us[1] (CPU).
 * 0, or -1 if it failed. */
static int run_one(const char *self, const struct contender *c, int forks, long pairs,
                   double us[2])
{
	char forks_s[16], pairs_s[24], line[64] = "";
	int fd[2];
	pid_t pid;
	int status;
	FILE *in;

	snprintf(forks_s, sizeof(forks_s), "%d", forks);
	snprintf(pairs_s, sizeof(pairs_s), "%ld", pairs);
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		char fd_s[16];

		close(fd[0]);
		snprintf(fd_s, sizeof(fd_s), "%d", fd[1]);
		if (c->preload) {
			setenv("LD_PRELOAD", c->preload, 1);
			setenv("PROXYLOCK_STATS", c->stats, 1);
			setenv("PROXYLOCK_STATS_FILE", "/dev/null", 1);
		} else {
			unsetenv("LD_PRELOAD");
		}
		execl("/proc/self/exe", self, "--measure", fd_s, "--forks", forks_s, "--contend", pairs_s,
		      (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	in = fdopen(fd[0], "r");
	if (!in || !fgets(line, sizeof(line), in))
		line[0] = '\0';
	if (in)
		fclose(in);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0 || sscanf(line, "%lf %lf", &us[0], &us[1]) != 2) {
		fprintf(stderr, "forkbench: %s: the measuring process failed\n", c->name);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *preload = NULL;
	int reps = 5, forks = 50, measure_fd = -1;
	double wall[3][MAX_REPS], cpu[3][MAX_REPS];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--preload"))
			preload = argv[i + 1];
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--forks"))
			forks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--contend"))
			contend_pairs = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--measure"))
			measure_fd = atoi(argv[i + 1]);
	}
	forks = forks < 1 ? 1 : forks;
	if (measure_fd >= 0)
		return measure(forks, measure_fd);
	if (!preload) {
		fprintf(stderr, "usage: forkbench --preload PRELOAD.so [--reps N] [--forks N]"
		                " [--contend N]\n");
		return 2;
	}
	reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;

	const struct contender cs[3] = {
		{ "glibc", NULL, NULL },
		{ "preload", preload, "0" },
		{ "preload-stats", preload, "1" },
	};

	printf("# forks=%d contend=%ld per thread, 2 threads\n", forks, contend_pairs);
	for (int r = 0; r < reps; r++)
		for (int c = 0; c < 3; c++) {
			double us[2];

			if (run_one(argv[0], &cs[c], forks, contend_pairs, us))
				return 1;
			wall[c][r] = us[0];
			cpu[c][r] = us[1];
		}
	for (int c = 0; c < 3; c++) {
		row("fork-after-contention", cs[c].name, 1, 0, "fork_us", wall[c], reps, "us");
		row("fork-after-contention", cs[c].name, 1, 0, "fork_cpu_us", cpu[c], reps, "us");
	}
	return 0;
}

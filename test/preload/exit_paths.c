/* SPDX-License-Identifier: MIT */
/*
 * exit_paths.c - ways a process ends that the interposer must leave as
 * they are, run under it by allocator-orders.sh (PROXYLOCK_STATS off and
 * on, alone and with jemalloc):
 *
 *   exit_paths pthread-exit  threads contend on a mutex and a condvar;
 *       once a lock was seen held, main leaves by pthread_exit() while
 *       they still run.  The process must end, with status 0, when the
 *       last of them returns: the interposer starts no thread of its own
 *       that would keep it alive (the runner's time limit says so).
 *   exit_paths fork-rlimit   a child forked before the program took any
 *       lock, and after contention one forked by a thread that never took
 *       a lock, cap their address space (RLIMIT_AS) at what is mapped and
 *       call exit(): each must end with status 0, not SIGABRT from an
 *       exit-time report that wants memory (a stdio buffer, or a
 *       per-thread slot an RCU library aborts without).
 *   exit_paths rlimit-exit   the process caps its address space before
 *       it takes any lock, then takes MANY distinct ones and calls exit():
 *       status 0; with stats on, those past the rows mapped at start go
 *       uncounted and the report says so.
 *   exit_paths fork-report   with stats on, runs itself again with each
 *       process's JSON report in a file of its own (PROXYLOCK_STATS_FILE,
 *       "%p"): after contention on one mutex it forks a child that locks
 *       another and calls exit().  Each report counts what its own process
 *       did: the child's lists the child's mutex and not the parent's, the
 *       parent's the other way round (a child's counters start at zero, as
 *       proxylock_stats_get's do).  With stats off: nothing to check.
 *
 * Prints "ok MODE" when the part that decides the result has run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#define ROUNDS 20000
#define MANY 1000  /* more locks than the stats' first slab has rows */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t many[MANY];
static unsigned long counter;
static bool contended;  /* a trylock found m held: guarded by nothing, read relaxed */

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		if (pthread_mutex_trylock(&m) != 0) {
			__atomic_store_n(&contended, true, __ATOMIC_RELAXED);
			pthread_mutex_lock(&m);
		}
		if (++counter % 1000 == 0)
			pthread_cond_broadcast(&c);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

/* Start the workers and wait until one found the lock held (or all
 * ran out of rounds: a machine so loaded that they never overlapped). */
static void contend(pthread_t *t)
{
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	pthread_mutex_lock(&m);
	while (!__atomic_load_n(&contended, __ATOMIC_RELAXED) && counter < WORKERS * ROUNDS) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c, &m, &ts);
	}
	pthread_mutex_unlock(&m);
}

static void join(pthread_t *t)
{
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
}

/* Cap RLIMIT_AS at the size mapped now: no new mapping can succeed
 * (so neither can malloc beyond what its arenas hold). */
static void no_more_memory(void)
{
	char buf[128];
	unsigned long pages = 0;
	struct rlimit rl;
	ssize_t n;
	int fd;

	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0) {
		perror("/proc/self/statm");
		_exit(1);
	}
	close(fd);
	buf[n] = 0;
	pages = strtoul(buf, NULL, 10);
	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE);
	if (setrlimit(RLIMIT_AS, &rl) != 0) {
		perror("setrlimit");
		_exit(1);
	}
}

/* Fork a child that caps its memory and exits; exit(1) unless it ends
 * with status 0. */
static void fork_capped_child(void)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		no_more_memory();
		exit(0);  /* atexit handlers, the interposer's report among them */
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("waitpid");
		exit(1);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "fork child: %s %d\n", WIFEXITED(status) ? "exit status" : "signal",
		        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		exit(1);
	}
}

static pthread_mutex_t child_only = PTHREAD_MUTEX_INITIALIZER;

/* Does report @path (JSON) list a lock at @addr?  -1 if unreadable. */
static int report_lists(const char *path, const void *addr)
{
	char buf[1 << 16], want[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	snprintf(want, sizeof(want), "\"address\": \"%p\"", addr);
	return strstr(buf, want) != NULL;
}

/* fork-report, the measured process: contend on m, then a child locks
 * child_only and exits; prints both PIDs and both mutexes' addresses. */
static int fork_report_run(void)
{
	pthread_t t[WORKERS];
	int status;
	pid_t pid;

	contend(t);
	join(t);
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&child_only);
		pthread_mutex_unlock(&child_only);
		exit(0);  /* the child's report, at its exit */
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return 1;
	printf("%d %d %p %p\n", (int)getpid(), (int)pid, (void *)&m, (void *)&child_only);
	return 0;
}

/* fork-report: run the measured process with a report file per process
 * and check both reports. */
static int fork_report(const char *self)
{
	char dir[] = "/tmp/exit_paths.XXXXXX", files[2][128], cmd[512], line[64];
	const char *stats = getenv("PROXYLOCK_STATS");
	int parent, child, bad = 0;
	void *pm, *cm;  /* m and child_only in the measured process */
	FILE *p;

	if (!stats || strcmp(stats, "1") != 0) {
		printf("ok fork-report\n");
		return 0;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(cmd, sizeof(cmd), "PROXYLOCK_STATS_FILE=%s/r.%%p.json '%s' fork-report-run", dir, self);
	p = popen(cmd, "r");
	if (!p || !fgets(line, sizeof(line), p) || pclose(p) != 0 ||
	    sscanf(line, "%d %d %p %p", &parent, &child, &pm, &cm) != 4) {
		fprintf(stderr, "fork-report: the measured process failed\n");
		return 1;
	}
	snprintf(files[0], sizeof(files[0]), "%s/r.%d.json", dir, parent);
	snprintf(files[1], sizeof(files[1]), "%s/r.%d.json", dir, child);
	if (report_lists(files[0], pm) != 1 || report_lists(files[0], cm) != 0) {
		fprintf(stderr, "fork-report: the parent's report (%s) should list %p, not %p\n",
		        files[0], pm, cm);
		bad = 1;
	}
	if (report_lists(files[1], cm) != 1 || report_lists(files[1], pm) != 0) {
		fprintf(stderr, "fork-report: the child's report (%s) should list %p, not %p\n",
		        files[1], cm, pm);
		bad = 1;
	}
	if (!bad) {
		unlink(files[0]);
		unlink(files[1]);
		rmdir(dir);
		printf("ok fork-report\n");
	}
	return bad;
}

static void *forker(void *arg)
{
	(void)arg;
	fork_capped_child();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[WORKERS], f;
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "pthread-exit") == 0) {
		contend(t);
		printf("ok %s\n", mode);
		fflush(stdout);
		pthread_exit(NULL);  /* the workers still run; the last one ends the process */
	}
	if (strcmp(mode, "fork-rlimit") == 0) {
		fork_capped_child();
		contend(t);
		join(t);
		if (pthread_create(&f, NULL, forker, NULL) != 0 || pthread_join(f, NULL) != 0)
			return 1;
		printf("ok %s\n", mode);
		return 0;
	}
	if (strcmp(mode, "rlimit-exit") == 0) {
		printf("ok %s\n", mode);
		fflush(stdout);
		no_more_memory();
		for (int i = 0; i < MANY; i++) {
			pthread_mutex_lock(&many[i]);
			pthread_mutex_unlock(&many[i]);
		}
		exit(0);
	}
	if (strcmp(mode, "fork-report") == 0)
		return fork_report(argv[0]);
	if (strcmp(mode, "fork-report-run") == 0)
		return fork_report_run();
	fprintf(stderr, "usage: exit_paths pthread-exit|fork-rlimit|rlimit-exit|fork-report\n");
	return 2;
}

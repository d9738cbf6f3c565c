/* SPDX-License-Identifier: MIT */
/*
 * proxylock - run a program under the interposer, and say what this
 * kernel and these privileges let the library lend.  See proxylock(1).
 *
 *   proxylock run [--stats[=all|FILE]] [--sort=KEY] [--top=N] [--report-signal=SIG]
 *                 [--donate=KINDS] [--affinity=POLICY] [--handoff-us=N]
 *                 [--] PROGRAM [ARG...]
 *   proxylock caps
 *
 * run checks each option with the library's own parser (config.c), sets
 * the documented environment variables and LD_PRELOAD, then
 * execs PROGRAM in its own place: its PID, exit status, signals and stdio
 * are the program's.  The interposer is found relative to this binary
 * (PLK_PRELOAD_REL, baked in by meson: libdir as seen from bindir), or
 * where PROXYLOCK_PRELOAD says.
 *
 * caps prints the library's capability probe (plk_sched_caps_explain:
 * each kind's verdict with its reason, an errno, a capability, a limit),
 * adds a trial of each boost allowed on a thread of its own, and checks
 * the fresh probe against the cached one, proxylock_caps(): the two
 * must agree.
 *
 * Exit: run: the program's status; 2 bad usage; 125 the interposer is
 * missing; 126 PROGRAM cannot run under it (set-ID, file capabilities,
 * static, not executable); 127 PROGRAM not found.  caps: 0 something can be lent,
 * 1 nothing, 2 bad usage.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "config.h"
#include "proxylock.h"
#include "schedctl.h"

#ifndef PLK_PRELOAD_REL
#define PLK_PRELOAD_REL "../lib/proxylock/libproxylock-preload.so"
#endif
#ifndef PLK_VERSION
#define PLK_VERSION "unknown"
#endif

enum { EXIT_USAGE = 2, EXIT_OURS = 125, EXIT_CANNOT = 126, EXIT_NOTFOUND = 127 };

static void usage(FILE *f)
{
	fputs("usage: proxylock run [--stats[=all|FILE.json]] [--sort=wait|contended|held|donations]\n"
	      "                     [--top=N] [--report-signal=SIG] [--donate=KINDS]\n"
	      "                     [--affinity=waiters|union|node] [--handoff-us=N]\n"
	      "                     [--] PROGRAM [ARG...]\n"
	      "       proxylock report [--json] PID\n"
	      "       proxylock caps\n"
	      "       proxylock --help | --version\n"
	      "KINDS: a comma-separated list of uclamp, affinity, nice, rt, or all, or none.\n"
	      "See proxylock(1).\n", f);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fputs("proxylock: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	usage(stderr);
	return EXIT_USAGE;
}

/* --- run --------------------------------------------------------------- */

/*
 * @value for PROXYLOCK_@name, checked by the library's own parser
 * (config.c): NULL if it takes it, else what it takes.  So the tool
 * refuses exactly what the library would not take, and takes all it does.
 */
static const char *setting_refused(const char *name, const char *value)
{
	struct plk_config scratch;

	plk_config_defaults(&scratch);
	return plk_setting_parse(name, value, &scratch);
}

/* The interposer: $PROXYLOCK_PRELOAD, or PLK_PRELOAD_REL from here. */
static int find_preload(char *buf, size_t len)
{
	const char *env = secure_getenv("PROXYLOCK_PRELOAD");  /* never a caller's, if privileged */
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		if (snprintf(buf, len, "%s", env) >= (int)len)
			return ENAMETOOLONG;
	} else if (PLK_PRELOAD_REL[0] == '/') {
		snprintf(buf, len, "%s", PLK_PRELOAD_REL);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return errno;
		self[n] = 0;
		*strrchr(self, '/') = 0;
		if (snprintf(buf, len, "%s/%s", self, PLK_PRELOAD_REL) >= (int)len)
			return ENAMETOOLONG;
	}
	if (buf[0] != '/')
		return EINVAL;  /* the program may chdir; and ld.so wants it whole */
	return access(buf, R_OK) == 0 ? 0 : errno;
}

/* Where execvp would find @name: into @buf; an errno if nowhere. */
static int resolve(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	int err = ENOENT;

	if (strchr(name, '/')) {
		snprintf(buf, len, "%s", name);
		return access(buf, X_OK) == 0 ? 0 : errno;
	}
	if (!path)
		path = "/bin:/usr/bin";
	while (*path) {
		size_t dlen = strcspn(path, ":");
		struct stat st;

		snprintf(buf, len, "%.*s%s%s", (int)dlen, path, dlen ? "/" : "./", name);
		if (access(buf, X_OK) == 0 && stat(buf, &st) == 0 && S_ISREG(st.st_mode))
			return 0;
		if (errno == EACCES)
			err = EACCES;
		path += dlen + (path[dlen] == ':');
	}
	return err;
}

/*
 * Whether @path is an ELF file without a program interpreter (static, or
 * static-pie): no dynamic loader will ever read LD_PRELOAD for it.  A
 * "#!" script is judged by its interpreter, once.  Anything unreadable
 * or not ELF is left to exec.
 */
static bool is_static(const char *path, int depth, char *what, size_t what_len)
{
	unsigned char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	uint64_t phoff;
	unsigned phnum, phentsize, type;
	bool has_interp = false;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n >= 4 && buf[0] == '#' && buf[1] == '!' && depth == 0) {
		char *interp = (char *)buf + 2, *end;

		close(fd);
		buf[n] = 0;
		interp += strspn(interp, " \t");
		end = interp + strcspn(interp, " \t\n");
		*end = 0;
		if (!*interp)
			return false;
		snprintf(what, what_len, "%s (the interpreter of %s)", interp, path);
		return is_static(interp, 1, what, what_len);
	}
	if (n < 0 || (size_t)n < sizeof(Elf32_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0 ||
	    buf[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB)) {
		close(fd);
		return false;
	}
	if (buf[EI_CLASS] == ELFCLASS64 && (size_t)n >= sizeof(Elf64_Ehdr)) {
		const Elf64_Ehdr *eh = (const void *)buf;

		type = eh->e_type, phoff = eh->e_phoff, phnum = eh->e_phnum, phentsize = eh->e_phentsize;
	} else if (buf[EI_CLASS] == ELFCLASS32) {
		const Elf32_Ehdr *eh = (const void *)buf;

		type = eh->e_type, phoff = eh->e_phoff, phnum = eh->e_phnum, phentsize = eh->e_phentsize;
	} else {
		close(fd);
		return false;
	}
	if (type != ET_EXEC && type != ET_DYN) {
		close(fd);
		return false;
	}
	for (unsigned i = 0; i < phnum && phentsize >= sizeof(Elf32_Phdr); i++) {
		uint32_t p_type;

		if (pread(fd, &p_type, sizeof(p_type), (off_t)(phoff + (uint64_t)i * phentsize)) !=
		    sizeof(p_type))
			break;
		has_interp |= p_type == PT_INTERP;
	}
	close(fd);
	if (depth == 0)
		snprintf(what, what_len, "%s", path);
	return !has_interp;
}

/* Prepend @so to LD_PRELOAD, saying so if something was there. */
static int set_preload(const char *so)
{
	const char *old = getenv("LD_PRELOAD");
	const char *base = strrchr(so, '/') ? strrchr(so, '/') + 1 : so;
	char *val;
	int err;

	if (old && strspn(old, " :") != strlen(old)) {
		if (strstr(old, base)) {
			fprintf(stderr, "proxylock: LD_PRELOAD already holds %s (\"%s\"): left as it is\n",
			        base, old);
			return 0;
		}
		fprintf(stderr, "proxylock: LD_PRELOAD already holds \"%s\": the interposer goes "
		        "first, those after it\n", old);
		if (asprintf(&val, "%s:%s", so, old) < 0)
			return ENOMEM;
		err = setenv("LD_PRELOAD", val, 1) ? errno : 0;
		free(val);
		return err;
	}
	return setenv("LD_PRELOAD", so, 1) ? errno : 0;
}

/* A run option that is a setting: its variable (after PROXYLOCK_) and
 * value, checked by the library's parser. */
struct run_setting {
	const char *option, *name, *value;
};

static int cmd_run(int argc, char **argv)
{
	enum { O_STATS = 1, O_DONATE, O_AFFINITY, O_HANDOFF, O_SORT, O_TOP, O_SIGNAL };
	static const struct option opts[] = {
		{ "stats", optional_argument, NULL, O_STATS },
		{ "donate", required_argument, NULL, O_DONATE },
		{ "affinity", required_argument, NULL, O_AFFINITY },
		{ "handoff-us", required_argument, NULL, O_HANDOFF },
		{ "sort", required_argument, NULL, O_SORT },
		{ "top", required_argument, NULL, O_TOP },
		{ "report-signal", required_argument, NULL, O_SIGNAL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* In the order of the enum, from O_DONATE. */
	struct run_setting set[] = {
		{ "donate", "DONATE", NULL }, { "affinity", "AFFINITY", NULL },
		{ "handoff-us", "HANDOFF_US", NULL }, { "sort", "STATS_SORT", NULL },
		{ "top", "STATS_TOP", NULL }, { "report-signal", "STATS_SIGNAL", NULL },
	};
	const char *stats = NULL, *stats_file = NULL, *refused;
	char so[PATH_MAX], prog[PATH_MAX], what[PATH_MAX + 64], cwd[PATH_MAX], *file = NULL;
	char var[64];
	struct stat st;
	int c, err;

	opterr = 0;
	optind = 1;
	/* "+": options end at PROGRAM; every later word is the program's. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case O_STATS:
			if (optarg && !*optarg)
				return bad_usage("--stats=: the file name is missing%s", "");
			if (!optarg)
				stats = stats ? stats : "1";
			else if (strcmp(optarg, "all") == 0)
				stats = "all";  /* a file named all: --stats=./all */
			else
				stats_file = optarg;
			break;
		case O_DONATE: case O_AFFINITY: case O_HANDOFF: case O_SORT: case O_TOP: case O_SIGNAL: {
			struct run_setting *r = &set[c - O_DONATE];

			if ((refused = setting_refused(r->name, optarg)) != NULL) {
				fprintf(stderr, "proxylock: --%s=%s: it takes %s\n", r->option, optarg,
				        refused);
				usage(stderr);
				return EXIT_USAGE;
			}
			r->value = optarg;
			/* The report's options ask for the report. */
			if (c >= O_SORT && !stats)
				stats = "1";
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			return bad_usage("run: unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return bad_usage("run: no program%s", "");
	if (stats_file && !stats)
		stats = "1";

	err = find_preload(so, sizeof(so));
	if (err) {
		fprintf(stderr, "proxylock: the interposer is not at %s: %s (set PROXYLOCK_PRELOAD "
		        "to its path)\n", so, strerror(err));
		return EXIT_OURS;
	}
	err = resolve(argv[optind], prog, sizeof(prog));
	if (err) {
		fprintf(stderr, "proxylock: %s: %s\n", argv[optind], strerror(err));
		return err == ENOENT ? EXIT_NOTFOUND : EXIT_CANNOT;
	}
	if (stat(prog, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) && S_ISREG(st.st_mode)) {
		fprintf(stderr, "proxylock: %s is set-%s-ID: the dynamic loader ignores LD_PRELOAD for "
		        "it, so the interposer cannot enter; not run\n", prog,
		        st.st_mode & S_ISUID ? "user" : "group");
		return EXIT_CANNOT;
	}
	/* File capabilities put the program in secure-execution mode as
	 * set-ID bits do (AT_SECURE): the loader ignores LD_PRELOAD. */
	if (getxattr(prog, "security.capability", NULL, 0) > 0) {
		fprintf(stderr, "proxylock: %s has file capabilities: the dynamic loader ignores "
		        "LD_PRELOAD for it, so the interposer cannot enter; not run\n", prog);
		return EXIT_CANNOT;
	}
	if (is_static(prog, 0, what, sizeof(what))) {
		fprintf(stderr, "proxylock: %s is statically linked (no PT_INTERP): no dynamic loader "
		        "runs to load the interposer; not run\n", what);
		return EXIT_CANNOT;
	}

	if (stats_file) {
		/* The program may chdir before it exits: the file, whole. */
		if (stats_file[0] == '/') {
			file = strdup(stats_file);
		} else if (getcwd(cwd, sizeof(cwd))) {
			if (asprintf(&file, "%s/%s", cwd, stats_file) < 0)
				file = NULL;
		} else {
			fprintf(stderr, "proxylock: --stats=%s: %s\n", stats_file, strerror(errno));
			return EXIT_OURS;
		}
		if (!file) {
			perror("proxylock");
			return EXIT_OURS;
		}
		if ((refused = setting_refused("STATS_FILE", file)) != NULL) {
			fprintf(stderr, "proxylock: --stats=%s: it takes %s\n", stats_file, refused);
			return EXIT_USAGE;
		}
		/* No report overwrites a file (report.c): a name without %p
		 * that a file or symlink already takes would get only
		 * PID-named reports.  A device or FIFO is written to. */
		if (!strstr(file, "%p") && lstat(file, &st) == 0 && (S_ISREG(st.st_mode) ||
		                                                    S_ISLNK(st.st_mode))) {
			fprintf(stderr, "proxylock: --stats=%s: %s exists; remove it, or put %%p (the "
			        "process ID) in the name\n", stats_file, file);
			free(file);
			return EXIT_USAGE;
		}
		/* This process becomes the program: its report takes the
		 * name; a helper's that ends first (a shell's, a shim's)
		 * does not (report.c). */
		snprintf(var, sizeof(var), "%d", (int)getpid());
		if (setenv("PROXYLOCK_STATS_FILE", file, 1) || setenv("PROXYLOCK_STATS_PID", var, 1)) {
			perror("proxylock");
			return EXIT_OURS;
		}
		free(file);
	}
	err = 0;
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]) && !err; i++) {
		snprintf(var, sizeof(var), "PROXYLOCK_%s", set[i].name);
		if (set[i].value && setenv(var, set[i].value, 1))
			err = errno;
	}
	if (err || (stats && setenv("PROXYLOCK_STATS", stats, 1)) || (err = set_preload(so))) {
		fprintf(stderr, "proxylock: setting the environment: %s\n", strerror(err ? err : errno));
		return EXIT_OURS;
	}
	execvp(argv[optind], argv + optind);
	err = errno;
	fprintf(stderr, "proxylock: %s: %s\n", argv[optind], strerror(err));
	return err == ENOENT ? EXIT_NOTFOUND : EXIT_CANNOT;
}

/* --- report ------------------------------------------------------------ */

/* The value of @name in /proc/@pid/environ (its environment at exec),
 * into @buf; false if it is not there. */
static bool environ_of(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64], data[65536];
	size_t nlen = strlen(name);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, data, sizeof(data) - 1);
	close(fd);
	if (n <= 0)
		return false;
	data[n] = 0;
	for (char *p = data; p < data + n; p += strlen(p) + 1)
		if (strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
			snprintf(buf, len, "%s", p + nlen + 1);
			return true;
		}
	return false;
}

/* Whether /proc/@pid/status says it catches signal @sig (SigCgt). */
static bool catches(pid_t pid, int sig)
{
	char path[64], line[256];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "SigCgt:", 7) == 0)
			yes = (strtoull(line + 7, NULL, 16) >> (sig - 1)) & 1;
	fclose(f);
	return yes;
}

/* Whether the interposer is mapped in @pid. */
static bool has_interposer(pid_t pid)
{
	char path[64], line[4096];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (!yes && fgets(line, sizeof(line), f))
		yes = strstr(line, "/libproxylock-preload") != NULL;
	fclose(f);
	return yes;
}

/*
 * proxylock report [--json] PID: ask a program running with stats for its
 * report now.  The request signal (PROXYLOCK_STATS_SIGNAL in its
 * environment, else the default) is queued with our PID and a pipe's
 * descriptor number (report.c), and the report is read back from the
 * pipe, to its end mark.  Sent only where the program catches that
 * signal: otherwise it would end it (a real-time signal's default).
 */
static int cmd_report(int argc, char **argv)
{
	struct plk_config c;
	char value[4200], name[16], buf[4096], *end;
	const char *mark = "proxylock: -- end of report --\n";
	size_t have = 0, mlen = strlen(mark);
	bool json = false;
	union sigval v;
	int fds[2], arg = 1;
	long pid;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--json") == 0) {
		json = true;
		arg++;
	}
	if (argc != arg + 1)
		return bad_usage("report: one PID%s", "");
	errno = 0;
	pid = strtol(argv[arg], &end, 10);
	if (errno || *end || pid <= 0 || pid > INT_MAX)
		return bad_usage("report: %s is not a process ID", argv[arg]);
	if (kill((pid_t)pid, 0) != 0) {
		fprintf(stderr, "proxylock: report: %ld: %s\n", pid, strerror(errno));
		return 1;
	}
	plk_config_defaults(&c);
	if (!has_interposer((pid_t)pid) || !environ_of((pid_t)pid, "PROXYLOCK_STATS", value,
	                                                sizeof(value)) ||
	    plk_setting_parse("STATS", value, &c) || !c.stats) {
		fprintf(stderr, "proxylock: report: process %ld does not run under the interposer with "
		        "stats on (proxylock run --stats)\n", pid);
		return 1;
	}
	if (environ_of((pid_t)pid, "PROXYLOCK_STATS_SIGNAL", value, sizeof(value)) &&
	    plk_setting_parse("STATS_SIGNAL", value, &c)) {
		fprintf(stderr, "proxylock: report: process %ld has PROXYLOCK_STATS_SIGNAL=%s, which the "
		        "library does not take\n", pid, value);
		return 1;
	}
	plk_signal_name(c.stats_signal, name, sizeof(name));
	if (!c.stats_signal || !catches((pid_t)pid, c.stats_signal)) {
		fprintf(stderr, "proxylock: report: process %ld does not catch SIG%s, its report "
		        "signal: %s\n", pid, name, c.stats_signal ? "the program took it over, or it was "
		        "not at its default at start; not sent (it might end the program)"
		        : "reports on request are off");
		return 1;
	}
	if (pipe(fds) != 0 || fds[1] >= 512) {
		perror("proxylock: report: pipe");
		return 1;
	}
	v.sival_int = (int)(((unsigned)getpid() << 10) | (unsigned)fds[1] | (json ? 512u : 0u));
	if (sigqueue((pid_t)pid, c.stats_signal, v) != 0) {
		fprintf(stderr, "proxylock: report: SIG%s to %ld: %s\n", name, pid, strerror(errno));
		return 1;
	}
	/* Read to the end mark (we hold the write end too: no EOF). */
	for (;;) {
		struct pollfd p = { fds[0], POLLIN, 0 };
		ssize_t n;
		char *at;

		if (poll(&p, 1, 10000) != 1) {
			fprintf(stderr, "proxylock: report: no report from %ld within 10 s\n", pid);
			return 1;
		}
		if ((n = read(fds[0], buf + have, sizeof(buf) - 1 - have)) <= 0)
			return 1;
		have += (size_t)n;
		buf[have] = 0;
		if ((at = strstr(buf, mark))) {
			fwrite(buf, 1, (size_t)(at - buf), stdout);
			return 0;
		}
		/* Keep the tail that may be the start of the mark. */
		if (have > mlen) {
			fwrite(buf, 1, have - mlen, stdout);
			memmove(buf, buf + have - mlen, mlen);
			have = mlen;
		}
	}
}

/* --- caps -------------------------------------------------------------- */

static const char *errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : strerror(err);
}

/* A trial on a thread of our own, which then exits: what the kernel
 * says to the boost itself (RT group scheduling can refuse even root). */
struct trial {
	bool rt;
	int err;
};

static void *trial_thread(void *arg)
{
	struct trial *t = arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	struct plk_sched_attr a = { .size = sizeof(a) };

	if (t->rt) {
		a.sched_policy = SCHED_FIFO;
		a.sched_priority = 1;
	} else {
		a.sched_policy = SCHED_OTHER;
		a.sched_nice = getpriority(PRIO_PROCESS, 0) - 1;
		if (a.sched_nice < -20) {
			t->err = 0;  /* already at the top: nothing to raise, and it is there */
			return NULL;
		}
	}
	t->err = plk_sched_setattr(tid, &a);
	return NULL;
}

static int trial(bool rt)
{
	struct trial t = { rt, ENOSYS };
	pthread_t th;
	int err = pthread_create(&th, NULL, trial_thread, &t);

	if (err)
		return err;
	pthread_join(th, NULL);
	return t.err;
}

/* The library's verdict on a boost, with a trial added where it is
 * allowed: what the kernel says to the boost itself (RT group
 * scheduling can refuse even root).  The library trusts the capability
 * and limits; a refusal at run time is skipped and counted
 * (eperm_skipped). */
static void add_trial(struct plk_cap_verdict *v, bool rt)
{
	size_t n = strlen(v->why);
	int err;

	if (!v->ok)
		return;
	err = trial(rt);
	snprintf(v->why + n, sizeof(v->why) - n, "; a trial %s on a thread %s%s%s",
	         rt ? "SCHED_FIFO priority 1" : "nice - 1", err ? "returned " : "succeeded",
	         err ? errname(err) : "",
	         err && rt ? " (RT group scheduling without runtime for this cgroup?)" : "");
}

/* Parse a CPU list such as "0-3,8" into @set; false if malformed. */
static bool parse_cpulist(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return false;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < CPU_SETSIZE; c++)
			CPU_SET((int)c, set);
		s = end + (*end == ',');
	}
	return true;
}

static void cpulist(const cpu_set_t *set, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		n += (size_t)snprintf(buf + n, len > n ? len - n : 0, n ? ",%d" : "%d", c);
		if (e > c)
			n += (size_t)snprintf(buf + n, len > n ? len - n : 0, "-%d", e);
		c = e;
	}
}

/* Our CPUs: the affinity mask within the cgroup's effective cpuset. */
static int describe_affinity(struct plk_cap_verdict *v)
{
	cpu_set_t mine, cg;
	char line[4096], path[4200] = "", list[1024];
	FILE *f;
	bool have_cg = false;

	if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
		CPU_ZERO(&mine);
	if ((f = fopen("/proc/self/cgroup", "re"))) {
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "0::", 3) == 0) {
				line[strcspn(line, "\n")] = 0;
				snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpuset.cpus.effective",
				         line + 3);
			}
		fclose(f);
	}
	if (path[0] && (f = fopen(path, "re"))) {
		have_cg = fgets(line, sizeof(line), f) && line[0] != '\n' && parse_cpulist(line, &cg);
		fclose(f);
	}
	cpulist(&mine, list, sizeof(list));
	if (have_cg) {
		char cgl[1024];

		cpulist(&cg, cgl, sizeof(cgl));
		snprintf(v->why, sizeof(v->why), "always; this thread may run on CPUs %s, the cgroup's "
		         "cpuset is %s", list, cgl);
	} else {
		snprintf(v->why, sizeof(v->why), "always; this thread may run on CPUs %s", list);
	}
	return have_cg ? CPU_COUNT(&cg) : CPU_COUNT(&mine);
}

/* /sys/devices/system/cpu/cpuN/cpu_capacity, where the kernel exports it. */
static void print_capacities(void)
{
	char path[96], line[64];
	long cap[CPU_SETSIZE];
	int ncpu = 0, nread = 0;
	long lo = LONG_MAX, hi = 0;
	FILE *f;

	for (int c = 0; c < CPU_SETSIZE; c++) {
		struct stat st;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", c);
		if (stat(path, &st) != 0)
			break;
		ncpu++;
		cap[c] = -1;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpu_capacity", c);
		if ((f = fopen(path, "re"))) {
			if (fgets(line, sizeof(line), f)) {
				cap[c] = strtol(line, NULL, 10);
				nread++;
				lo = cap[c] < lo ? cap[c] : lo;
				hi = cap[c] > hi ? cap[c] : hi;
			}
			fclose(f);
		}
	}
	if (nread == 0) {
		printf("cpu capacity: not exported (no cpu_capacity under /sys/devices/system/cpu/cpu*/ "
		       "for %d CPUs): the scheduler sees symmetric capacity\n", ncpu);
		return;
	}
	printf("cpu capacity:");
	for (int c = 0; c < ncpu; c++)
		if (cap[c] >= 0)
			printf(" cpu%d=%ld", c, cap[c]);
	printf("\ncpu capacity: %s\n", lo == hi ? "symmetric (all equal)"
	       : "asymmetric: the scheduler places tasks by capacity, and uclamp steers them");
}

static int cmd_caps(int argc, char **argv)
{
	static const char *const names[] = { "uclamp", "affinity", "nice", "rt" };
	struct plk_cap_verdict v[PLK_CAP_KINDS];
	unsigned lib = proxylock_caps(), mine;
	bool useful = false;
	struct utsname u;
	int ncpus, status = 0;

	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		return bad_usage("caps takes no arguments: %s", argv[1]);
	}
	uname(&u);
	printf("kernel: %s %s %s; uid %d, euid %d\n", u.sysname, u.release, u.machine, (int)getuid(),
	       (int)geteuid());
	mine = plk_sched_caps_explain(v);
	ncpus = describe_affinity(&v[PLK_CAP_AFFINITY]);
	add_trial(&v[PLK_CAP_NICE], false);
	add_trial(&v[PLK_CAP_RT], true);
	for (int k = 0; k < PLK_CAP_KINDS; k++)
		printf("%s:%*s %-3s  %s\n", names[k], (int)(8 - strlen(names[k])), "",
		       v[k].ok ? "yes" : "no", v[k].why);
	if (ncpus < 2)
		printf("affinity: only %d CPU here: lending it moves nothing\n", ncpus);
	print_capacities();
	useful = (mine & ~PROXYLOCK_DONATE_AFFINITY) || (ncpus >= 2);
	printf("lendable: ");
	for (int k = 0, sep = 0; k < 4; k++)
		if (mine & (1u << k) && (k != 1 || ncpus >= 2))
			printf("%s%s", sep++ ? "," : "", names[k]);
	printf("%s\n", useful ? "" : "none");
	if (mine != lib) {
		fprintf(stderr, "proxylock: the library's cached probe says 0x%x, a new one 0x%x: "
		        "please report this\n", lib, mine);
		status = 1;
	}
	return status ? status : useful ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return bad_usage("a command is missing%s", "");
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "caps") == 0)
		return cmd_caps(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("proxylock %s\n", PLK_VERSION);
		return 0;
	}
	return bad_usage("unknown command: %s", argv[1]);
}

/* SPDX-License-Identifier: MIT */
/*
 * config.c - environment settings (see config.h), read at first use.
 * Every PROXYLOCK_* variable is read with secure_getenv: none in
 * secure-execution mode.
 *
 * One table holds every setting: its variable, its parser, the words
 * that say what it takes and its default.  A parser takes the whole
 * value or nothing: a value it does not take changes nothing and is said
 * on stderr, one line naming the variable, what it takes and the default
 * kept.  No case folding, no prefix or trailing text: "NICE", "nice,"
 * "500us" are refused, not read as something else.  `proxylock run`
 * checks its options with the same table (plk_setting_parse), so the tool
 * refuses exactly what the library would not take.
 *
 * The settings are read from plk_config(), which the library first calls
 * with no internal lock held (chain.c, donate.c: the rule of I5): the
 * warning's write() is then allowed.  Nothing here allocates: the line is
 * formatted on the stack.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proxylock.h"

static struct plk_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

const char *plk_env(const char *name)
{
	return secure_getenv(name);
}

/* --- the parsers: each takes the whole value, or returns false ------- */

/* @s is one of the @n words of @names: its index into *@i. */
static bool one_of(const char *s, size_t len, const char *const *names, int n, int *i)
{
	for (int k = 0; k < n; k++)
		if (strlen(names[k]) == len && strncmp(s, names[k], len) == 0) {
			*i = k;
			return true;
		}
	return false;
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A comma-separated list of kinds, or all, or none: none with anything
 * else, an empty item or an unknown word is refused. */
static bool parse_donate(const char *s, struct plk_config *c)
{
	static const char *const names[] = { "uclamp", "affinity", "nice", "rt", "all", "none" };
	static const unsigned kinds[] = {
		PROXYLOCK_DONATE_UCLAMP, PROXYLOCK_DONATE_AFFINITY, PROXYLOCK_DONATE_NICE,
		PROXYLOCK_DONATE_RT, PROXYLOCK_DONATE_ALL, PROXYLOCK_DONATE_NONE,
	};
	unsigned got = 0;
	int items = 0, none = 0, i;

	for (;;) {
		size_t len = strcspn(s, ",");

		if (!one_of(s, len, names, COUNT(names), &i))
			return false;  /* an empty item too: "", "nice,", ",rt" */
		got |= kinds[i];
		none += kinds[i] == PROXYLOCK_DONATE_NONE;
		items++;
		if (!s[len])
			break;
		s += len + 1;
	}
	if (none && items > 1)
		return false;
	c->donate = got;
	return true;
}

static bool parse_affinity(const char *s, struct plk_config *c)
{
	static const char *const names[] = { "waiters", "union", "node" };
	static const int policy[] = {
		PROXYLOCK_AFFINITY_WAITERS, PROXYLOCK_AFFINITY_UNION, PROXYLOCK_AFFINITY_NODE,
	};
	int i;

	if (!one_of(s, strlen(s), names, COUNT(names), &i))
		return false;
	c->affinity = policy[i];
	return true;
}

/*
 * Decimal microseconds, digits only.  A value whose nanoseconds pass
 * INT64_MAX (about 292 years) is clamped to it: every handoff test
 * (plk_waited_bound) is signed, and the clamped bound, like any bound
 * longer than the wait, means "never handed: woken to compete".  The
 * mutex and the rwlock read this one value (waitq.h).
 */
static bool parse_handoff(const char *s, struct plk_config *c)
{
	const uint64_t max_us = (uint64_t)INT64_MAX / 1000;
	uint64_t us = 0;

	if (!*s)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (us <= max_us)  /* past it, stays past it: no wrap */
			us = us * 10 + (uint64_t)(*p - '0');
	}
	c->handoff_ns = us > max_us ? (uint64_t)INT64_MAX : us * 1000;
	return true;
}

/* Empty is off, as unset: PROXYLOCK_STATS= is how a shell unsets it for
 * one command. */
static bool parse_stats(const char *s, struct plk_config *c)
{
	static const char *const names[] = { "", "0", "1", "all" };
	int i;

	if (!one_of(s, strlen(s), names, COUNT(names), &i))
		return false;
	c->stats = i >= 2;
	c->stats_all = i == 3;
	return true;
}

static bool parse_stats_file(const char *s, struct plk_config *c)
{
	size_t len = strlen(s);

	if (len == 0 || len >= sizeof(c->stats_file))
		return false;
	memcpy(c->stats_file, s, len + 1);
	return true;
}

static bool parse_sort(const char *s, struct plk_config *c)
{
	static const char *const names[] = { "contended", "wait", "held", "donations" };
	static const int key[] = { PLK_SORT_CONTENDED, PLK_SORT_WAIT, PLK_SORT_HELD,
	                           PLK_SORT_DONATIONS };
	int i;

	if (!one_of(s, strlen(s), names, COUNT(names), &i))
		return false;
	c->stats_sort = key[i];
	return true;
}

/* Decimal digits, at most 9 of them after any leading zeros; @min up. */
static bool parse_count(const char *s, unsigned min, unsigned *out)
{
	unsigned long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 99999999)
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v < min)
		return false;
	*out = (unsigned)v;
	return true;
}

static bool parse_top(const char *s, struct plk_config *c)
{
	return parse_count(s, 1, &c->stats_top);
}

static bool parse_stats_pid(const char *s, struct plk_config *c)
{
	return parse_count(s, 1, &c->stats_pid);
}

/* The signals a report may be asked with: the two only ever sent on
 * purpose (USR1, USR2) and the real-time ones glibc leaves to programs
 * (RTMIN to RTMAX); none a terminal, the kernel or the C library sends
 * on its own (HUP, QUIT, WINCH, URG, ...), and INT and TERM already give
 * one (report.c).  A real-time name stays in its range: RTMAX-52 is no
 * name for USR2. */
static const struct { const char *name; int sig; } signal_names[] = {
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
};

static bool signal_allowed(int sig)
{
	return sig == SIGUSR1 || sig == SIGUSR2 || (sig >= SIGRTMIN && sig <= SIGRTMAX);
}

void plk_signal_name(int sig, char *buf, unsigned long len)
{
	for (int i = 0; i < COUNT(signal_names); i++)
		if (signal_names[i].sig == sig) {
			snprintf(buf, len, "%s", signal_names[i].name);
			return;
		}
	if (sig == 0)
		snprintf(buf, len, "none");
	else if (sig >= SIGRTMIN && sig - SIGRTMIN <= SIGRTMAX - sig)
		snprintf(buf, len, "RTMIN+%d", sig - SIGRTMIN);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "RTMAX-%d", SIGRTMAX - sig);
	else
		snprintf(buf, len, "%d", sig);
}

/* USR1, SIGUSR1, RTMIN+N, RTMAX-N (N up to RTMAX - RTMIN), such a
 * signal's number, or none (0). */
static bool parse_signal(const char *s, struct plk_config *c)
{
	unsigned n = 0, span = (unsigned)(SIGRTMAX - SIGRTMIN);
	int sig = -1;

	if (strcmp(s, "none") == 0 || strcmp(s, "0") == 0) {
		c->stats_signal = 0;
		return true;
	}
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (int i = 0; i < COUNT(signal_names); i++)
		if (strcmp(s, signal_names[i].name) == 0)
			sig = signal_names[i].sig;
	if (strcmp(s, "RTMIN") == 0 || strcmp(s, "RTMAX") == 0)
		sig = s[3] == 'I' ? SIGRTMIN : SIGRTMAX;
	else if (strncmp(s, "RTMIN+", 6) == 0 && parse_count(s + 6, 0, &n) && n <= span)
		sig = SIGRTMIN + (int)n;
	else if (strncmp(s, "RTMAX-", 6) == 0 && parse_count(s + 6, 0, &n) && n <= span)
		sig = SIGRTMAX - (int)n;
	else if (sig < 0 && parse_count(s, 1, &n) && n <= 64)
		sig = (int)n;
	if (sig < 0 || !signal_allowed(sig))
		return false;
	c->stats_signal = sig;
	return true;
}

static bool parse_pi(const char *s, struct plk_config *c)
{
	static const char *const names[] = { "auto", "proxy", "kernel" };
	static const int pi[] = { PLK_PI_AUTO, PLK_PI_PROXY, PLK_PI_KERNEL };
	int i;

	if (!one_of(s, strlen(s), names, COUNT(names), &i))
		return false;
	c->pi = pi[i];
	return true;
}

/* --- the table ------------------------------------------------------- */

static const struct setting {
	const char *name;      /* after "PROXYLOCK_" */
	bool (*parse)(const char *s, struct plk_config *c);
	const char *takes;     /* for the message: what the parser takes */
	const char *dflt;      /* for the message: the default kept */
} settings[] = {
	{ "DONATE", parse_donate,
	  "a comma-separated list of uclamp, affinity, nice, rt; or all; or none", "all" },
	{ "AFFINITY", parse_affinity, "waiters, union or node", "waiters" },
	{ "HANDOFF_US", parse_handoff, "a number of microseconds, digits only", "500" },
	{ "STATS", parse_stats, "0 (or empty), 1 or all", "0" },
	{ "STATS_FILE", parse_stats_file, "a file name, at most 4095 bytes", "none: the report "
	  "goes to stderr" },
	{ "STATS_PID", parse_stats_pid, "a process ID", "none: the first process to report "
	  "takes the file's name" },
	{ "STATS_SORT", parse_sort, "contended, wait, held or donations", "contended" },
	{ "STATS_TOP", parse_top, "a number of rows, 1 or more", "10" },
	{ "STATS_SIGNAL", parse_signal, "none, USR1, USR2, RTMIN+N or RTMAX-N with N from 0 to "
	  "RTMAX-RTMIN (30 with glibc), with or without SIG, or such a signal's number",
	  "RTMAX-2" },
	{ "PI", parse_pi, "auto, proxy or kernel", "auto" },
};

void plk_config_defaults(struct plk_config *c)
{
	memset(c, 0, sizeof(*c));
	c->donate = PROXYLOCK_DONATE_ALL;
	c->affinity = PROXYLOCK_AFFINITY_WAITERS;
	c->handoff_ns = 500 * 1000;
	c->stats_sort = PLK_SORT_CONTENDED;
	c->stats_top = 10;
	c->stats_signal = SIGRTMAX - 2;
	c->pi = PLK_PI_AUTO;
}

const char *plk_setting_parse(const char *name, const char *value, struct plk_config *c)
{
	for (int i = 0; i < COUNT(settings); i++)
		if (strcmp(settings[i].name, name) == 0)
			return settings[i].parse(value, c) ? NULL : settings[i].takes;
	return "no such setting";
}

/* One line on fd 2, formatted on the stack; cut at 512 bytes. */
static __attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf)) {
		n = sizeof(buf) - 1;
		buf[n - 1] = '\n';
	}
	(void)!write(2, buf, (size_t)n);
}

/* @s, cut to 64 bytes, control characters as '?': one line. */
static void shown(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 4 < len && n < 64; s++)
		buf[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	if (*s)
		buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
	buf[n] = 0;
}

static void config_read(void)
{
	char var[64], val[72];

	plk_config_defaults(&config);
	for (int i = 0; i < COUNT(settings); i++) {
		const char *s;

		snprintf(var, sizeof(var), "PROXYLOCK_%s", settings[i].name);
		if ((s = plk_env(var)) == NULL || settings[i].parse(s, &config))
			continue;
		shown(s, val, sizeof(val));
		warn("proxylock: %s=\"%s\" not understood (it takes %s); the default is kept: %s\n",
		     var, val, settings[i].takes, settings[i].dflt);
	}
}

static bool config_ready;  /* set (release) once config_read has run */

static void config_read_once(void)
{
	config_read();
	__atomic_store_n(&config_ready, true, __ATOMIC_RELEASE);
}

/* Read once; afterwards one acquire load (no pthread_once call, so it is
 * cheap under internal locks and makes no futex call there). */
struct plk_config *plk_config(void)
{
	if (!__atomic_load_n(&config_ready, __ATOMIC_ACQUIRE))
		pthread_once(&config_once, config_read_once);
	return &config;
}

int proxylock_affinity_policy_set(int policy)
{
	if (policy < PROXYLOCK_AFFINITY_WAITERS || policy > PROXYLOCK_AFFINITY_NODE)
		return EINVAL;
	__atomic_store_n(&plk_config()->affinity, policy, __ATOMIC_RELAXED);
	return 0;
}

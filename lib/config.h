/* SPDX-License-Identifier: MIT */
/*
 * config.h - process-wide settings, read once from the environment:
 *   PROXYLOCK_DONATE      uclamp,affinity,nice,rt | all | none (default all)
 *   PROXYLOCK_AFFINITY    waiters | union | node (default waiters)
 *   PROXYLOCK_HANDOFF_US  a waiter queued this long gets the lock handed
 *                         to it directly, at the next unlock that finds
 *                         it first in line: decimal digits (default 500;
 *                         clamped to INT64_MAX ns, "never")
 *   PROXYLOCK_STATS       0 (or empty) | 1 | all: the interposer's exit
 *                         report (1: only if some lock was contended or
 *                         lent through; all: always), and a line on
 *                         stderr for each lock found held by an exited
 *                         thread
 *   PROXYLOCK_STATS_FILE  the report as JSON in this file ("%p": the
 *                         process ID, implied before the extension when
 *                         absent; report.c)
 *   PROXYLOCK_STATS_PID   with STATS_FILE: the process whose report takes
 *                         the name as given; every other one's has its PID
 *                         (proxylock run: the program's; report.c)
 *   PROXYLOCK_STATS_SORT  wait | contended | held | donations (default
 *                         contended): the order of the report's rows
 *   PROXYLOCK_STATS_TOP   N >= 1: rows in the text report (default 10)
 *   PROXYLOCK_STATS_SIGNAL USR1, USR2 or a real-time signal (RTMIN+3,
 *                         SIGRTMAX-1, a number) that asks for a report
 *                         now, or none (default
 *                         RTMAX-2 while stats are on; report.c)
 *   PROXYLOCK_PI          auto | proxy | kernel (default auto): whether
 *                         the interposer makes PTHREAD_PRIO_INHERIT
 *                         mutexes proxylocks (auto: where RT can be lent)
 *                         or leaves them glibc's kernel PI futexes
 * Every one has one parser (config.c), which `proxylock run` uses too: a
 * value it does not take is said in one line on stderr, naming the
 * variable and what it takes, and the default is kept.
 * In secure-execution mode (getauxval(AT_SECURE): a set-user-ID,
 * set-group-ID or file-capability program) none is read: every setting
 * keeps its default, stats off (plk_env).
 */
#ifndef PLK_CONFIG_H
#define PLK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "futex.h"

#define PLK_STATS_FILE_MAX 4096  /* bytes of PROXYLOCK_STATS_FILE, its NUL included */

struct plk_config {
	unsigned donate;       /* PROXYLOCK_DONATE_* asked for */
	int affinity;          /* PROXYLOCK_AFFINITY_* */
	uint64_t handoff_ns;   /* PROXYLOCK_HANDOFF_US, at most INT64_MAX ns */
	bool stats;            /* PROXYLOCK_STATS 1 or all */
	bool stats_all;        /* PROXYLOCK_STATS=all: report even with nothing contended */
	int stats_sort;        /* PROXYLOCK_STATS_SORT: PLK_SORT_* */
	unsigned stats_top;    /* PROXYLOCK_STATS_TOP */
	int stats_signal;      /* PROXYLOCK_STATS_SIGNAL: a signal number, 0 for none */
	int pi;                /* PROXYLOCK_PI: PLK_PI_* */
	char stats_file[PLK_STATS_FILE_MAX];  /* PROXYLOCK_STATS_FILE, or "" */
	unsigned stats_pid;    /* PROXYLOCK_STATS_PID, or 0: the first to report */
};

enum { PLK_PI_AUTO, PLK_PI_PROXY, PLK_PI_KERNEL };
enum { PLK_SORT_CONTENDED, PLK_SORT_WAIT, PLK_SORT_HELD, PLK_SORT_DONATIONS };

/** plk_env - the PROXYLOCK_* variable @name, or NULL if unset or if the
 * process runs in secure-execution mode (secure_getenv(3)): the
 * environment of a privileged program is its caller's, not to be trusted.
 * Every PROXYLOCK_* variable the library reads goes through here. */
PLK_HIDDEN const char *plk_env(const char *name);

/** plk_config - the settings (parsed on first call). */
PLK_HIDDEN struct plk_config *plk_config(void);

/**
 * plk_setting_parse - parse @value as PROXYLOCK_@name's (the variable's
 * name without the prefix, e.g. "DONATE") into *@c.  Returns NULL if it
 * takes the value, else the words that say what it takes (for a message);
 * *@c is then unchanged.  An unknown @name gives "no such setting".
 * The library's reading of the environment and `proxylock run`'s
 * options both come here: one grammar.
 */
PLK_HIDDEN const char *plk_setting_parse(const char *name, const char *value,
                                         struct plk_config *c);

/** plk_config_defaults - every setting at its default, into *@c. */
PLK_HIDDEN void plk_config_defaults(struct plk_config *c);

/** plk_signal_name - the name of signal @sig ("USR1", "RTMIN+3") into
 * @buf, as PROXYLOCK_STATS_SIGNAL takes it. */
PLK_HIDDEN void plk_signal_name(int sig, char *buf, unsigned long len);

#endif /* PLK_CONFIG_H */

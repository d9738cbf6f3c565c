/* SPDX-License-Identifier: MIT */
/*
 * config.h - process-wide settings, read once from the environment:
 *   PROXYLOCK_DONATE      uclamp,affinity,nice,rt | all | none (default all)
 *   PROXYLOCK_AFFINITY    waiters | union | node (default waiters)
 *   PROXYLOCK_HANDOFF_US  a waiter queued this long gets the lock handed
 *                         to it directly, at the next unlock that finds
 *                         it first in line (default 500; clamped to
 *                         INT64_MAX ns, "never"; not a number: 500)
 *   PROXYLOCK_STATS       non-empty and not "0": the interposer's exit
 *                         report, and a line on stderr for each lock
 *                         found held by an exited thread
 *   PROXYLOCK_PI          auto | proxy | kernel (default auto): whether
 *                         the interposer makes PTHREAD_PRIO_INHERIT
 *                         mutexes proxylocks (auto: where RT can be lent)
 *                         or leaves them glibc's kernel PI futexes
 * In secure-execution mode (getauxval(AT_SECURE): a set-user-ID,
 * set-group-ID or file-capability program) none is read: every setting
 * keeps its default, stats off (plk_env).
 */
#ifndef PLK_CONFIG_H
#define PLK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "futex.h"

struct plk_config {
	unsigned donate;       /* PROXYLOCK_DONATE_* asked for */
	int affinity;          /* PROXYLOCK_AFFINITY_* */
	uint64_t handoff_ns;   /* PROXYLOCK_HANDOFF_US, at most INT64_MAX ns */
	bool stats;            /* PROXYLOCK_STATS */
	int pi;                /* PROXYLOCK_PI: PLK_PI_* */
};

enum { PLK_PI_AUTO, PLK_PI_PROXY, PLK_PI_KERNEL };

/** plk_env - the PROXYLOCK_* variable @name, or NULL if unset or if the
 * process runs in secure-execution mode (secure_getenv(3)): the
 * environment of a privileged program is its caller's, not to be trusted.
 * Every PROXYLOCK_* variable the library reads goes through here. */
PLK_HIDDEN const char *plk_env(const char *name);

/** plk_config - the settings (parsed on first call). */
PLK_HIDDEN struct plk_config *plk_config(void);

#endif /* PLK_CONFIG_H */

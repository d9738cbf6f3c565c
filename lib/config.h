/* SPDX-License-Identifier: MIT */
/*
 * config.h - process-wide settings, read once from the environment:
 *   PROXYLOCK_DONATE      uclamp,affinity,nice,rt | all | none (default all)
 *   PROXYLOCK_AFFINITY    waiters | union | node (default waiters)
 *   PROXYLOCK_HANDOFF_US  a waiter queued this long gets the lock handed
 *                         to it directly at the next unlock (default 500)
 */
#ifndef PLK_CONFIG_H
#define PLK_CONFIG_H

#include <stdint.h>

#include "futex.h"

struct plk_config {
	unsigned donate;       /* PROXYLOCK_DONATE_* asked for */
	int affinity;          /* PROXYLOCK_AFFINITY_* */
	uint64_t handoff_ns;
};

/** plk_config - the settings (parsed on first call). */
PLK_HIDDEN struct plk_config *plk_config(void);

#endif /* PLK_CONFIG_H */

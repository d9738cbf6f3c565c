/* SPDX-License-Identifier: MIT */
/* stats.c - the process-wide counters. */
#include <string.h>

#include "stats.h"

struct proxylock_stats plk_stats;

void proxylock_stats_get(struct proxylock_stats *out)
{
	const uint64_t *src = (const uint64_t *)&plk_stats;
	uint64_t *dst = (uint64_t *)out;

	if (!out)
		return;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void plk_stats_reset(void)
{
	memset(&plk_stats, 0, sizeof(plk_stats));
}

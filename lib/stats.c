/* SPDX-License-Identifier: MIT */
/*
 * stats.c - the process-wide counters.
 *
 * A fork child's counters start at zero (each process reports its own).
 * They sit on a page of their own, marked MADV_WIPEONFORK when that works
 * (Linux 4.14+), so that the child gets that page zero-filled without
 * writing it, and neither side copies it: zeroing by hand cost every fork
 * child one or two page copies (the 120 bytes may straddle a page), a
 * cost a fork without the interposer does not pay (issue 18).
 */
#include <string.h>

#include "stats.h"
#include "wipeonfork.h"

union plk_stats_page plk_stats_page __attribute__((aligned(4096)));
__thread uint32_t plk_tls_contended __attribute__((tls_model("initial-exec")));
static bool stats_wipe_on_fork;

void proxylock_stats_get(struct proxylock_stats *out)
{
	const uint64_t *src = (const uint64_t *)&plk_stats_page.s;
	uint64_t *dst = (uint64_t *)out;

	if (!out)
		return;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void plk_stats_fork_init(void)
{
	stats_wipe_on_fork = plk_bss_wipe_on_fork(&plk_stats_page, sizeof(plk_stats_page));
}

void plk_stats_fork_child(void)
{
	if (!stats_wipe_on_fork)
		memset(&plk_stats_page.s, 0, sizeof(plk_stats_page.s));
}

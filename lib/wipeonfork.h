/* SPDX-License-Identifier: MIT */
/*
 * wipeonfork.h - MADV_WIPEONFORK for the library's own .bss tables
 * (waitq.c's buckets, stats.c's counters page): a fork child then finds
 * them zero without touching them.  Mappings the library makes itself
 * (registry.c, lockstat.c) are page-aligned by mmap and have their own
 * policy for a refusal.
 */
#ifndef PLK_WIPEONFORK_H
#define PLK_WIPEONFORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/**
 * plk_bss_wipe_on_fork - mark @bytes at @p MADV_WIPEONFORK, at load.
 * True if the kernel did; false (the caller resets by hand in the child)
 * if it refused or if @p and @bytes are not whole kernel pages: with
 * pages larger than the object's alignment (16 or 64 KiB on some arm64
 * kernels) the advice would wipe the .bss after it in the child too.
 * sysconf(_SC_PAGESIZE) comes from the auxv: no syscall.
 */
static inline bool plk_bss_wipe_on_fork(void *p, size_t bytes)
{
	long pg = sysconf(_SC_PAGESIZE);

	return pg > 0 && bytes % (size_t)pg == 0 && (uintptr_t)p % (uintptr_t)pg == 0 &&
	       madvise(p, bytes, MADV_WIPEONFORK) == 0;
}

#endif /* PLK_WIPEONFORK_H */

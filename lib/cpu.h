/* SPDX-License-Identifier: MIT */
/*
 * cpu.h - what the CPU offers the fast paths beyond C11 atomics: a
 * prefetch for writing, issued before a load that a CAS on the same word
 * follows (the read fast paths, rwlockword.h).
 *
 * A load-then-CAS on a line another CPU wrote pays two coherence
 * transactions: the load fetches the line shared, the CAS then takes it
 * exclusive, and a second reader's load in between sends it back.  A
 * prefetch for writing asks for the line exclusive at once.  It is a
 * hint: it orders nothing, and each fast path's atomics keep their own
 * orders (docs/design.md, "Memory order on arm64").
 *
 * x86: PREFETCHW (CPUID 0x80000001, ECX bit 8), used only if the CPU
 * says it has it (plk_cpu_prefetchw, probed by a constructor; before it
 * runs, no prefetch).  The caller passes the flag, or a copy of it on a
 * line it reads anyway (a read set's: rdset.h): a separate load of the
 * global measured 0.5-1 ns on an uncontended rdlock+unlock pair of about
 * 16 ns.  arm64 and others: the compiler's prefetch for writing (PRFM
 * PSTL1KEEP on arm64), always present.
 */
#ifndef PLK_CPU_H
#define PLK_CPU_H

#include <stdbool.h>

#include "futex.h"  /* PLK_HIDDEN */

/* x86: the CPU has PREFETCHW.  Written once, by cpu.c's constructor. */
PLK_HIDDEN extern bool plk_cpu_prefetchw;

/** plk_prefetch_for_write - ask for @p's cache line exclusive (a hint);
 * @have_prefetchw: plk_cpu_prefetchw or a copy of it (x86 only). */
static inline __attribute__((always_inline)) void plk_prefetch_for_write(const void *p,
                                                                         bool have_prefetchw)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(have_prefetchw, 1))
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	(void)have_prefetchw;
	__builtin_prefetch(p, 1, 3);
#endif
}

#endif /* PLK_CPU_H */

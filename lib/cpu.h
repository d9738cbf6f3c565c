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
 * x86 only: PREFETCHW (CPUID 0x80000001, ECX bit 8), used only if the
 * CPU says it has it (plk_cpu_has_prefetchw).  The caller passes the
 * answer, or a copy of it on a line it reads anyway (a read set's:
 * rdset.h): a separate load of a global measured 0.5-1 ns on an
 * uncontended rdlock+unlock pair of about 16 ns.  Elsewhere no hint is
 * issued: arm64's PRFM PSTL1KEEP is unmeasured, and with far (LSE)
 * atomics pulling the line near first may cost rather than save.
 */
#ifndef PLK_CPU_H
#define PLK_CPU_H

#include <stdbool.h>

#include "futex.h"  /* PLK_HIDDEN */

/**
 * plk_cpu_has_prefetchw - whether x86's PREFETCHW may be issued (false
 * elsewhere).  CPUID on the first call, then a cached answer; no
 * syscall, no lock, callable from any thread at any time.
 */
PLK_HIDDEN bool plk_cpu_has_prefetchw(void);

/** plk_prefetch_for_write - ask for @p's cache line exclusive (a hint);
 * @have_prefetchw: plk_cpu_has_prefetchw()'s answer or a copy of it. */
static inline __attribute__((always_inline)) void plk_prefetch_for_write(const void *p,
                                                                         bool have_prefetchw)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(have_prefetchw, 1))
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	(void)p;
	(void)have_prefetchw;
#endif
}

#endif /* PLK_CPU_H */

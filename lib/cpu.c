/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - probe, once at load, what cpu.h's fast-path helpers may use.
 */
#include "cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

bool plk_cpu_prefetchw;

/* CPUID is not a syscall and takes no lock: safe in any constructor
 * order.  The flag is a plain bool: a fast path that reads it before
 * this runs (another library's constructor) just skips the hint. */
static __attribute__((constructor)) void cpu_probe(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	if (__get_cpuid(0x80000001u, &a, &b, &c, &d))
		plk_cpu_prefetchw = (c & bit_PRFCHW) != 0;
#endif
}

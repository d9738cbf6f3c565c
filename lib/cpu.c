/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - probe, on first use, what cpu.h's fast-path helpers may use.
 */
#include <stdint.h>

#include "cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

bool plk_cpu_has_prefetchw(void)
{
#if defined(__x86_64__) || defined(__i386__)
	/* 0: not probed yet, 1: no, 2: yes.  Relaxed: every prober computes
	 * and stores the same answer, and nothing else is published with it.
	 * CPUID is neither a syscall nor a lock (a VM exit under a
	 * hypervisor: microseconds, once per process). */
	static uint8_t known;
	uint8_t k = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (!k) {
		unsigned a, b, c, d;

		k = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & bit_PRFCHW) ? 2 : 1;
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k == 2;
#else
	return false;
#endif
}

/* SPDX-License-Identifier: MIT */
/*
 * callsite.h - which code took a lock: a short stack of return addresses
 * taken when a lock is first contended or initialised (stats on only),
 * and its names, found at report time (callsite.c).
 */
#ifndef PLK_CALLSITE_H
#define PLK_CALLSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "futex.h"

#define PLK_SITE_FRAMES 6

/* A stack taken once: claimed by one thread (CAS on claimed), published
 * by ready (release after pc[]).  pc[0] is the caller of the interposed
 * call, then its callers; 0 ends a shorter stack. */
struct plk_site {
	int claimed, ready;
	uintptr_t pc[PLK_SITE_FRAMES];
};

/** plk_callsite_init - ready the unwinder (libgcc_s, loaded now, where
 * loading may allocate: the interposer's constructor).  Without it a
 * site is its first frame only. */
PLK_HIDDEN void plk_callsite_init(void);

/**
 * plk_site_take - fill @s, if no thread has, with the stack of the
 * interposed call whose return address is @ra: @ra, then up to
 * PLK_SITE_FRAMES - 1 of its callers (libgcc's unwinder: no allocation,
 * no lock of the program's; at most PLK_SITE_FRAMES + 8 frames walked).
 */
PLK_HIDDEN void plk_site_take(struct plk_site *s, uintptr_t ra);

/* Names for addresses, from /proc/self/maps and the symbol tables of the
 * mapped files (mapped here, read-only): system calls only, no
 * allocation, no lock, so a report may run in a signal handler. */
struct plk_symbols;

/** plk_symbols_open - a lookup for this process's addresses as mapped
 * now, which searches symbol tables for at most @searches addresses
 * (0: no bound) and names the others by module and offset; NULL if
 * /proc/self/maps cannot be read (the names are then bare addresses). */
PLK_HIDDEN struct plk_symbols *plk_symbols_open(unsigned searches);

/** plk_symbols_by_offset - how many names @sy gave by module and offset
 * because its searches had run out. */
PLK_HIDDEN unsigned long plk_symbols_by_offset(const struct plk_symbols *sy);

/** plk_symbols_close - unmap all @sy mapped (NULL: nothing). */
PLK_HIDDEN void plk_symbols_close(struct plk_symbols *sy);

/** plk_symbol_name - return address @pc as "module!function+0xoff",
 * "module+0xaddr" where no symbol covers it or no search is left, or
 * "0xaddr" where no file does, into @buf. */
PLK_HIDDEN void plk_symbol_name(struct plk_symbols *sy, uintptr_t pc, char *buf, size_t len);

#endif /* PLK_CALLSITE_H */

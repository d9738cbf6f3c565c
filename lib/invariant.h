/* SPDX-License-Identifier: MIT */
/*
 * invariant.h - executable invariants (meson -Ddebug_invariants=true).
 *
 * The invariants are stated once, in docs/design.md (M1-M6, I1-I5,
 * RW1-RW9) and atop the files that keep them (K1-K2 atop wakers.c, the
 * queue's atop waitq.c).  With the option (PLK_DEBUG_INVARIANTS) the
 * library also asserts them at the points those comments name, as the
 * kernel's lockdep_assert_held() and WARN_ON() do: a failed check writes
 * one line to stderr naming the invariant, what failed and where, and
 * aborts.  Without the option every check compiles to nothing: its
 * condition is not evaluated (sizeof keeps it type-checked), so the
 * default build's code is the same as before the checks were written.
 *
 * PLK_INVARIANT(name, cond, what): @name is the invariant as design.md
 * names it ("M1", "RW4", "I1"; "held" for a lock that must be held by
 * the caller), @cond what must be true, @what a fixed string saying it.
 * The report is made with write(2) alone: no stdio, no allocation, no
 * lock, async-signal-safe, so a check may fail under any internal lock
 * (and in a -Dlockcheck build it bypasses that check's wrapper).
 *
 * What an internal lock's owner is (plk_assert_held) is futex.h's; the
 * named checks of the lock protocols are invcheck.h's.
 *
 * This header includes nothing of the library's: every module may use it.
 */
#ifndef PLK_INVARIANT_H
#define PLK_INVARIANT_H

/**
 * plk_invariant_failed - report invariant @name broken (@what, at
 * @func, @file:@line) on stderr and abort.  Only the checks call it.
 */
__attribute__((visibility("hidden"), noreturn, cold))
void plk_invariant_failed(const char *name, const char *what, const char *func,
                          const char *file, int line);

#ifdef PLK_DEBUG_INVARIANTS
#define PLK_INVARIANTS_ON 1
#define PLK_INVARIANT(name, cond, what) do {                                      \
		if (__builtin_expect(!(cond), 0))                                 \
			plk_invariant_failed((name), (what), __func__, __FILE__, __LINE__); \
	} while (0)
/* A statement only the checks need (a read, a call into invcheck.c). */
#define PLK_INV_ONLY(stmt) do { stmt; } while (0)
#else
#define PLK_INVARIANTS_ON 0
#define PLK_INVARIANT(name, cond, what) ((void)sizeof(!(cond)))
#define PLK_INV_ONLY(stmt) ((void)0)
#endif

#endif /* PLK_INVARIANT_H */

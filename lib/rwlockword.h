/* SPDX-License-Identifier: MIT */
/*
 * rwlockword.h - the proxylock rwlock's lock word: its encoding, the
 * accessors every layer reads it with, and the fast paths (one CAS on
 * the word plus the caller's read set, rdset.h).  The protocol that
 * writes it under a bucket lock, and its invariants RW1-RW8, head
 * rwlock.c; docs/design.md has both at length.
 *
 * Lock word (32 bits):
 *
 *   bit 31      PLK_RW_WAITERS: some thread is queued on this rwlock (or
 *               was, until the release that frees it); every path that
 *               would change who holds it goes through the bucket
 *   bit 30      PLK_RW_WRITER: held for writing, bits 0..29 are the
 *               writer's TID (the mutex word's convention, so
 *               plk_owner_tid_locked() names it); PLK_TID_DESTROYED
 *               there: destroyed
 *   bit 29      PLK_RW_SOLO (without PLK_RW_WRITER): held for reading by
 *               one hold of one thread, whose TID is bits 0..28; that
 *               hold is in no read set: the word names its reader, as it
 *               names a writer
 *   bits 0..28  with neither: the number of read holds (0 free)
 *
 * __solo: bit 31 PLK_RW_SHARED, set by the first join of a solo hold and
 * kept until init: from then on every read hold is counted (no new solo
 * hold), so readers that overlap pay the join once; bits 0..28 the TID
 * of the converted reader (0 none): the thread whose solo hold a join
 * turned into a counted one, which it holds in no read set.  Only the
 * bucket holder that joins sets the TID, only that reader clears it
 * (RW9, rwlock.c).
 *
 * __reserved0[0] (plk_rw_dead_reader): the TID of a lone reader, the
 * solo word's or the converted one in __solo, found to have exited still
 * named here (0 none; zero at init).  Written only under the bucket, by a
 * waiter that asked the kernel (rwlock.c, dead_reader_check); lend
 * updates, under the bucket, lend nothing to a reader named by that TID.
 * Not part of the word protocol: it stops lends, it changes no hold.
 *
 * __flags: the preference kind (glibc's numbers) in bits 0..1, the kinds
 * not lent from bit 24 (as a mutex's).  Waiters queue in the bucket
 * table under the rwlock's address | PLK_RW_TAG (registry.h).
 *
 * Fast paths: rdlock of a free rwlock whose __solo says not shared is
 * one CAS 0 -> PLK_RW_SOLO|TID (acquire), unlock one CAS back to 0
 * (release), as the write pair.  Otherwise rdlock publishes the rwlock
 * in a free slot of the caller's read set (a relaxed store), then CASes
 * the word from a count with none of PLK_RW_WRITER, PLK_RW_SOLO and
 * PLK_RW_WAITERS to one more reader, with acquire (the critical section)
 * and release (the slot before the count: a writer that later sets
 * PLK_RW_WAITERS with an acquire RMW sees the slot); it refuses while a
 * retraction of an earlier fast path is pending (s->retracted), which
 * only the slow path consumes.  Unlock of the last read hold of a thread
 * clears the slot first, then CASes the count down with release; with
 * PLK_RW_WAITERS set it clears the slot by exchange and leaves the same
 * way unless a scan named it (PLK_RD_NAMED) or its hold is the last
 * (slow path).  A solo word is joined only in the bucket (rwlock.c: the
 * join converts it), and a solo hold with PLK_RW_WAITERS set, or a
 * converted one, is released there.  The read paths load the word and
 * then CAS it, so each first asks for its line exclusive
 * (plk_prefetch_for_write, cpu.h; a hint, no order).  wrlock is one CAS
 * 0 -> WRITER|TID, unlock one CAS back to 0.  None touches the registry
 * or makes a syscall; a thread's first counted read lock claims its read
 * set (slow path).
 */
#ifndef PLK_RWLOCKWORD_H
#define PLK_RWLOCKWORD_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu.h"
#include "lockword.h"
#include "proxylock.h"
#include "rdset.h"
#include "registry.h"

#define PLK_RW_WAITERS 0x80000000u
#define PLK_RW_WRITER 0x40000000u
#define PLK_RW_SOLO 0x20000000u
#define PLK_RW_VALUE 0x3fffffffu          /* with PLK_RW_WRITER: the writer's TID */
#define PLK_RW_COUNT 0x1fffffffu          /* else: the solo reader's TID, or the count */
#define PLK_RW_READERS_MAX PLK_RW_COUNT
#define PLK_RW_SHARED 0x80000000u         /* in __solo: solo holds are over */
#define PLK_RW_DESTROYED (PLK_RW_WRITER | PLK_TID_DESTROYED)

#define PLK_RW_KIND_MASK 0x3u
#define PLK_RW_FLAGS_KNOWN (PLK_RW_KIND_MASK | \
                            ((uint32_t)PROXYLOCK_DONATE_ALL << PLK_NODONATE_SHIFT))

/** plk_rw_word - @rw's lock word (acquire). */
static inline uint32_t plk_rw_word(const proxylock_rwlock_t *rw)
{
	return __atomic_load_n(&rw->__word, __ATOMIC_ACQUIRE);
}

/** plk_rw_cas - CAS @rw's word from @expect to @want (acquire and
 * release: any change of the word may publish a slot or a critical
 * section, and every change is an RMW, so release sequences hold). */
static inline bool plk_rw_cas(proxylock_rwlock_t *rw, uint32_t expect, uint32_t want)
{
	return __atomic_compare_exchange_n(&rw->__word, &expect, want, 0,
	                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/** plk_rw_readers - the read holds word @w stands for (a solo one: 1). */
static inline uint32_t plk_rw_readers(uint32_t w)
{
	if (w & PLK_RW_WRITER)
		return 0;
	return (w & PLK_RW_SOLO) ? 1 : (w & PLK_RW_COUNT);
}

/** plk_rw_solo_word - the word of a solo read hold by the caller
 * (TIDs stay below PID_MAX_LIMIT, 2^22: they fit bits 0..28). */
static inline uint32_t plk_rw_solo_word(void)
{
	return PLK_RW_SOLO | plk_tid();
}

/** plk_rw_solo_field - @rw's __solo (relaxed: the word's RMWs order it;
 * rwlock.c, RW9). */
static inline uint32_t plk_rw_solo_field(const proxylock_rwlock_t *rw)
{
	return __atomic_load_n(&rw->__solo, __ATOMIC_RELAXED);
}

/** plk_rw_dead_reader - @rw's lone reader found exited, 0 none (relaxed:
 * written and read for decisions under the bucket; a peek outside it is a
 * hint). */
static inline uint32_t plk_rw_dead_reader(const proxylock_rwlock_t *rw)
{
	return __atomic_load_n(&rw->__reserved0[0], __ATOMIC_RELAXED);
}

/** plk_rw_key - the wait-queue key (blocked_on) of @rw's waiters. */
static inline void *plk_rw_key(const proxylock_rwlock_t *rw)
{
	return (char *)rw + PLK_RW_TAG;
}

/** plk_rw_kind - @rw's preference kind, PROXYLOCK_RWLOCK_PREFER_*. */
static inline int plk_rw_kind(const proxylock_rwlock_t *rw)
{
	return (int)(rw->__flags & PLK_RW_KIND_MASK);
}

/** plk_rw_flags_valid - false for storage no init wrote. */
static inline bool plk_rw_flags_valid(const proxylock_rwlock_t *rw)
{
	return (rw->__flags & ~PLK_RW_FLAGS_KNOWN) == 0 &&
	       plk_rw_kind(rw) <= PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE;
}

/* --- fast paths ------------------------------------------------------ */

/* A new read hold of @rw, word @w (neither held for writing nor
 * waited for, nor solo), in a free slot of @s: publish, then count. */
static inline bool plk_rw_rdlock_fast_new(proxylock_rwlock_t *rw, struct plk_rdset *s,
                                          uint32_t w)
{
	int i = plk_rdset_free_slot(s);

	if (i < 0)
		return false;
	__atomic_store_n(&s->lock[i], (uintptr_t)rw, __ATOMIC_RELAXED);
	do {
		if (__atomic_compare_exchange_n(&rw->__word, &w, w + 1, 1, __ATOMIC_ACQ_REL,
		                                __ATOMIC_RELAXED)) {
			s->depth[i] = 1;
			return true;
		}
		/* Another reader moved the count: try again, still published.
		 * PLK_RW_WAITERS may have been set and cleared meanwhile, and
		 * a scan lent to us; whoever cleared it withdrew that, from
		 * every thread a slot names (rwlock.c, withdraw_publishers). */
	} while (!(w & (PLK_RW_WRITER | PLK_RW_SOLO | PLK_RW_WAITERS)) && w != PLK_RW_READERS_MAX);
	/* Not a reader.  A writer's scan may have seen the slot meanwhile:
	 * the slow path withdraws that (rwlock.c, rd_not_reader). */
	plk_rdset_put(s, i);
	s->retracted = 1;
	return false;
}

/** plk_rw_rdlock_fast - one read hold without waiting, or false (forced
 * inline, as plk_rw_rdunlock_fast: the public calls' fast paths). */
static inline __attribute__((always_inline)) bool plk_rw_rdlock_fast(proxylock_rwlock_t *rw)
{
	struct plk_rdset *s = plk_tls_rdset;
	uint32_t w;
	int i;

	/* A retraction pending (an earlier fast path of this call left it:
	 * the interposer's, then take()'s): only rdlock_slow consumes it
	 * (rd_hold_prepare) and withdraws a scan's lend to the retracted
	 * slot, so refuse; a success here would read and leave by the fast
	 * path with that lend kept (RW6; the model's BROKEN_RW_DBLFAST).
	 * The flag sits beside nused, on a line read already. */
	if (s) {
		if (__builtin_expect(s->retracted, 0))
			return false;
		plk_prefetch_for_write(&rw->__word, s->prefetchw);  /* the CAS follows the load: cpu.h */
	}
	w = __atomic_load_n(&rw->__word, __ATOMIC_RELAXED);
	/* Free and never shared: a solo hold, named by the word alone. */
	if (w == 0 && !(plk_rw_solo_field(rw) & PLK_RW_SHARED))
		return __atomic_compare_exchange_n(&rw->__word, &w, plk_rw_solo_word(), 0,
		                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	if (__builtin_expect(!s, 0) || (w & (PLK_RW_WRITER | PLK_RW_SOLO | PLK_RW_WAITERS)) ||
	    w == PLK_RW_READERS_MAX)
		return false;
	if (__builtin_expect(s->nused == 0, 1) || (i = plk_rdset_find(s, (uintptr_t)rw)) < 0)
		return plk_rw_rdlock_fast_new(rw, s, w);
	/* Recursive: we are a reader already (named, lent to as one). */
	if (s->depth[i] == UINT32_MAX ||
	    !__atomic_compare_exchange_n(&rw->__word, &w, w + 1, 0, __ATOMIC_ACQUIRE,
	                                 __ATOMIC_RELAXED))
		return false;
	s->depth[i]++;
	return true;
}

/* What plk_rw_rdunlock_fast did. */
enum { PLK_RD_SLOW = 0, PLK_RD_DONE = 1, PLK_RD_CLEARED = 2 };

/*
 * The last read hold of @rw, in slot @i of @s, with PLK_RW_WAITERS seen
 * set in @w: a writer waits.  Clear the slot by exchange: every scan
 * that lent to us marked the slot PLK_RD_NAMED first, so the old value
 * carries the mark if one did, and no scan names us after (its mark CAS
 * fails on the cleared slot; rdset.h).
 * Named: the bucket withdraws (PLK_RD_CLEARED).  Not named (we joined
 * since the last scan): decrement here, unless ours is the last hold,
 * whose release must grant (PLK_RD_CLEARED too).  Relaxed exchange: the
 * release CAS orders it before the decrement, and a mark it reads sends
 * us through the bucket, after the scanner's hold.
 */
/* Out of line (cold), so that plk_rw_rdunlock_fast inlines small. */
static __attribute__((noinline, unused)) int plk_rw_rdunlock_waiting(proxylock_rwlock_t *rw,
                                                                     struct plk_rdset *s, int i,
                                                                     uint32_t w)
{
	uintptr_t old = __atomic_exchange_n(&s->lock[i], 0, __ATOMIC_RELAXED);

	plk_rdset_put(s, i);  /* depth, nused; the slot is 0 already */
	if (old & PLK_RD_NAMED)
		return PLK_RD_CLEARED;
	do
		if ((w & PLK_RW_WAITERS) && (w & PLK_RW_COUNT) == 1)
			return PLK_RD_CLEARED;
	while (!__atomic_compare_exchange_n(&rw->__word, &w, w - 1, 1, __ATOMIC_RELEASE,
	                                    __ATOMIC_RELAXED));
	return PLK_RD_DONE;
}

/**
 * plk_rw_rdunlock_fast - drop one read hold of @rw.  PLK_RD_DONE: done.
 * PLK_RD_SLOW: nothing changed (no slot for @rw: a write hold, a solo
 * hold the bucket must release or that a join converted, an untracked
 * read hold, or none).  PLK_RD_CLEARED: it was the caller's last hold in
 * a slot, the slot is cleared, but PLK_RW_WAITERS is set, so the
 * decrement is the slow path's (rwlock.c).  A recursive hold is a plain
 * decrement: the count stays above 0, nobody is released or woken.
 */
static inline __attribute__((always_inline)) int plk_rw_rdunlock_fast(proxylock_rwlock_t *rw)
{
	struct plk_rdset *s = plk_tls_rdset;
	uint32_t w, solo = plk_rw_solo_word();
	int i;

	if (s)
		plk_prefetch_for_write(&rw->__word, s->prefetchw);
	w = __atomic_load_n(&rw->__word, __ATOMIC_RELAXED);
	/* Our solo hold, nobody waiting: back to free.  PLK_RW_WAITERS set
	 * meanwhile fails the CAS: the bucket releases it (rwlock.c). */
	if (w == solo)
		return __atomic_compare_exchange_n(&rw->__word, &w, 0, 0, __ATOMIC_RELEASE,
		                                   __ATOMIC_RELAXED) ? PLK_RD_DONE : PLK_RD_SLOW;
	if (__builtin_expect(!s, 0) || (i = plk_rdset_find(s, (uintptr_t)rw)) < 0 ||
	    (w & (PLK_RW_WRITER | PLK_RW_SOLO)))
		return PLK_RD_SLOW;  /* a slot of ours and a word not counting it: misuse */
	if (s->depth[i] > 1) {
		do
			if ((w & (PLK_RW_WRITER | PLK_RW_SOLO)) || (w & PLK_RW_COUNT) < 2)
				return PLK_RD_SLOW;  /* not ours to decrement: misuse */
		while (!__atomic_compare_exchange_n(&rw->__word, &w, w - 1, 1, __ATOMIC_RELEASE,
		                                    __ATOMIC_RELAXED));
		s->depth[i]--;
		return PLK_RD_DONE;
	}
	if ((w & PLK_RW_COUNT) == 0)
		return PLK_RD_SLOW;
	if (__builtin_expect(s->withdraw[i], 0)) {
		plk_rdset_put(s, i);
		return PLK_RD_CLEARED;  /* a lend may be left from a retraction */
	}
	if (__builtin_expect(w & PLK_RW_WAITERS, 0))
		return plk_rw_rdunlock_waiting(rw, s, i, w);
	/* Cleared before the decrement (release orders it): a writer that
	 * sets PLK_RW_WAITERS after the decrement never names us.  If it
	 * set the bit before, it may have named us (the plain store may
	 * overwrite its mark): the CAS fails on the bit, and the slow path
	 * withdraws.  (The count is ours: no solo word can come of it.) */
	plk_rdset_put(s, i);
	do
		if (w & PLK_RW_WAITERS)
			return PLK_RD_CLEARED;
	while (!__atomic_compare_exchange_n(&rw->__word, &w, w - 1, 1, __ATOMIC_RELEASE,
	                                    __ATOMIC_RELAXED));
	return PLK_RD_DONE;
}

/**
 * plk_rw_unlock_cleared - finish the read unlock plk_rw_rdunlock_fast
 * left at PLK_RD_CLEARED (through the bucket: rwlock.c).  For callers
 * that run the fast paths themselves (the interposer).
 */
PLK_HIDDEN void plk_rw_unlock_cleared(proxylock_rwlock_t *rw);

/** plk_rw_forget_own_reads - at init of @rw (no internal lock held, no
 * thread waiting on it): give back the caller's read-set slot for the
 * rwlock that lived at @rw before, if any, withdrawing what a scan lent
 * through it (rwlock.c). */
PLK_HIDDEN void plk_rw_forget_own_reads(proxylock_rwlock_t *rw);

/** plk_rw_wrlock_fast - one CAS 0 -> WRITER|TID. */
static inline bool plk_rw_wrlock_fast(proxylock_rwlock_t *rw)
{
	uint32_t zero = 0;

	return __atomic_compare_exchange_n(&rw->__word, &zero, PLK_RW_WRITER | plk_tid(), 0,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/** plk_rw_wrunlock_fast - one CAS WRITER|TID -> 0. */
static inline bool plk_rw_wrunlock_fast(proxylock_rwlock_t *rw)
{
	uint32_t self = PLK_RW_WRITER | plk_tid();

	return __atomic_compare_exchange_n(&rw->__word, &self, 0, 0, __ATOMIC_RELEASE,
	                                   __ATOMIC_RELAXED);
}

#endif /* PLK_RWLOCKWORD_H */

/* SPDX-License-Identifier: MIT */
/*
 * rdset.h - reader tracking for rwlocks: which threads hold which
 * rwlock for reading, so that a waiting writer can name every reader.
 *
 * Each thread that ever read-locks a proxylock rwlock claims one read
 * set in a fixed, zero-filled table (no allocation, no syscall, usable
 * before any constructor ran) and keeps it until it exits.  A set has
 * PLK_RD_SLOTS slots, one per rwlock the thread holds for reading, with
 * its recursion depth.  Only the owning thread writes its slots, except
 * that a thread granting a queued reader the lock writes the slot that
 * reader reserved (it is asleep, so it writes none of its own then), and
 * that a scan under the rwlock's bucket marks a held slot PLK_RD_NAMED
 * by CAS (so the owner clears a slot it may be named in by exchange).
 * Slot values: 0 free; the rwlock's address: held for reading; the
 * address | PLK_RD_NAMED: held for reading and named by a scan (lent
 * to; set by the scanner's CAS under the rwlock's bucket, so the owner's
 * exchange at unlock tells whether it must withdraw); the address |
 * PLK_RD_PENDING: reserved by a queued reader (not a reader yet, never
 * lent to).  The protocol's side of the argument (a slot is
 * published before the reader's count increment, with release, and
 * cleared before its decrement) is in rwlock.c and docs/design.md.
 *
 * A solo read hold, and one a join converted, are in no set: the lock
 * word, or the rwlock's __solo, names its reader (rwlockword.h).
 *
 * Overflow rule: a thread that holds more than PLK_RD_SLOTS rwlocks for
 * reading at once, or that finds the table full, holds the extra ones
 * untracked: counted in the lock word, never lent to (stats:
 * chain_truncated), and its unlock of a read-held rwlock it has no slot
 * for is believed while it has untracked holds.
 */
#ifndef PLK_RDSET_H
#define PLK_RDSET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "futex.h"

#define PLK_RD_SLOTS 8       /* rwlocks one thread can hold for reading, tracked */
#define PLK_RDSETS 1024      /* threads tracked at once */
#define PLK_RD_PENDING 1u    /* slot reserved by a queued reader */
#define PLK_RD_NAMED 2u      /* a scan named the slot's reader (rwlock.c) */

struct plk_rdset {
	/* (claims << 32) | TID; TID 0: free.  Read by scanners around the
	 * slots, so that a set released and claimed again in between is
	 * never taken for its new owner's (a seqlock on the owner). */
	uint64_t owner;
	uintptr_t lock[PLK_RD_SLOTS];  /* atomics: scanned by writers */
	uint32_t depth[PLK_RD_SLOTS];  /* recursion; the owner's only */
	uint32_t nused;                /* slots [0, nused) may be in use; owner's */
	/* Owner's: a publication was retracted (its increment failed), so a
	 * writer may have lent to us without our holding the lock; the slow
	 * path takes it over (rwlock.c: rd_hold_prepare, rd_not_reader), and
	 * the read fast path refuses while it is set (rwlockword.h). */
	uint8_t retracted;
	uint8_t withdraw[PLK_RD_SLOTS];  /* owner's: the last unlock must withdraw */
	/* plk_cpu_has_prefetchw() (cpu.h), copied at the claim onto a line
	 * the fast paths read anyway; the owner's. */
	bool prefetchw;
	/* Owner's: the rwlock a pending retraction is for, when a signal
	 * handler refused inside its thread's critical section left it
	 * (rwlock.c: rw_refused); 0: the current call's own. */
	uintptr_t retracted_rw;
} __attribute__((aligned(64)));

/* The caller's set (initial-exec TLS), NULL until its first read lock. */
PLK_HIDDEN extern __thread struct plk_rdset *plk_tls_rdset __attribute__((tls_model("initial-exec")));
/* Read holds of the caller with no slot (the overflow rule). */
PLK_HIDDEN extern __thread uint32_t plk_tls_rd_untracked __attribute__((tls_model("initial-exec")));

/**
 * plk_rdset_self - the caller's set, claimed on first use (no syscall
 * but the TID cache's, no allocation); NULL if the table is full.  No
 * internal lock may be held (the first call creates a pthread key).
 */
PLK_HIDDEN struct plk_rdset *plk_rdset_self(void);

/** plk_rdset_key_init - create the read sets' pthread key now (the
 * interposer's constructor: no first read lock then makes it). */
PLK_HIDDEN void plk_rdset_key_init(void);

/** plk_rdset_find - index of @s's slot holding @v (named or not), or
 * -1.  A pending slot (@v | PLK_RD_PENDING) is not @v. */
static inline int plk_rdset_find(const struct plk_rdset *s, uintptr_t v)
{
	for (uint32_t i = 0; i < s->nused; i++)
		if ((__atomic_load_n(&s->lock[i], __ATOMIC_RELAXED) & ~(uintptr_t)PLK_RD_NAMED) == v)
			return (int)i;
	return -1;
}

/** plk_rdset_free_slot - index of a free slot of @s (the owner's), or -1. */
static inline int plk_rdset_free_slot(struct plk_rdset *s)
{
	for (uint32_t i = 0; i < s->nused; i++)
		if (__atomic_load_n(&s->lock[i], __ATOMIC_RELAXED) == 0)
			return (int)i;
	if (s->nused == PLK_RD_SLOTS)
		return -1;
	return (int)s->nused++;
}

/** plk_rdset_full - whether every slot of @s holds an rwlock (no free
 * slot, none to add: plk_rdset_free_slot would give -1), changing nothing. */
static inline bool plk_rdset_full(const struct plk_rdset *s)
{
	return s->nused == PLK_RD_SLOTS && plk_rdset_find(s, 0) < 0;
}

/** plk_rdset_put - the owner frees slot @i of @s (relaxed: the caller's
 * release on the lock word orders it). */
static inline void plk_rdset_put(struct plk_rdset *s, int i)
{
	__atomic_store_n(&s->lock[i], 0, __ATOMIC_RELAXED);
	s->depth[i] = 0;
	s->withdraw[i] = 0;
	while (s->nused > 0 && __atomic_load_n(&s->lock[s->nused - 1], __ATOMIC_RELAXED) == 0)
		s->nused--;
}

/**
 * plk_rdset_readers - store in @tids (up to @max) the TIDs of the
 * threads whose slot names @lock (read holders, named or not); returns
 * how many were found, which may exceed @max.  @name (only under @lock's
 * bucket lock): mark each slot found PLK_RD_NAMED first, by CAS, and
 * count only those whose mark took or was there (an owner that cleared
 * its slot meanwhile is not a reader).  Loads and slot CASes only:
 * callable under any internal lock.
 */
PLK_HIDDEN int plk_rdset_readers(const void *lock, pid_t *tids, int max, bool name);

/** plk_rdset_count - how many read sets a scan visits (the high-water
 * mark: sets [0, count) have been claimed at least once). */
PLK_HIDDEN uint32_t plk_rdset_count(void);

/**
 * plk_rdset_reader_at - as plk_rdset_readers for read set @i alone: the
 * TID of its owner if a slot of it names @lock, else 0.
 */
PLK_HIDDEN pid_t plk_rdset_reader_at(const void *lock, uint32_t i, bool name);

/** plk_rdset_fork_child - in a fork child: free every set but the
 * forking thread's (the only thread left). */
PLK_HIDDEN void plk_rdset_fork_child(void);

#endif /* PLK_RDSET_H */

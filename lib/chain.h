/* SPDX-License-Identifier: MIT */
/*
 * chain.h - lending through mutexes: what a mutex's queue lends its
 * owner, and carrying changes down owner chains.  The lock layer's side
 * of donation: it reads lock words and queues, and hands the donation
 * engine (donate.h) owner TIDs, lock keys and lends.
 */
#ifndef PLK_CHAIN_H
#define PLK_CHAIN_H

#include "proxylock.h"
#include "waitq.h"

/** plk_chain_kinds - kinds waiters of @m lend (lock attribute restricted
 * by proxylock_donate_kinds()); 0 means no donation work. */
PLK_HIDDEN unsigned plk_chain_kinds(const proxylock_mutex_t *m);

/**
 * plk_chain_prepare - with no internal lock held, before taking @m's
 * bucket on a path that may lend: run the capability probe and make
 * sure a record for @m's owner can be made without a syscall
 * (registry.h: plk_registry_reserve).  @m NULL: a spare record only,
 * for a lock whose word may not be read yet.
 */
PLK_HIDDEN void plk_chain_prepare(const proxylock_mutex_t *m);

/**
 * plk_chain_update - with @m's bucket @b locked: what @m's queued waiters
 * lend its owner, recorded by the engine (which defers the apply).  Does
 * nothing unless the word has PLK_WAITERS set, which pins the owner;
 * with PLK_WAITERS set and nobody queued the owner's entry is dropped.
 */
PLK_HIDDEN void plk_chain_update(struct plk_bucket *b, proxylock_mutex_t *m);

/**
 * plk_chain_flush - with no internal lock held: carry out the caller's
 * deferred applies, and where an owner's effective context changed
 * while it waits on a lock, carry the change to that lock's owner, and
 * so on, at most PROXYLOCK_CHAIN_MAX steps.  Every path that took a
 * bucket calls it after dropping the bucket.
 */
PLK_HIDDEN void plk_chain_flush(void);

/*
 * Rwlocks.  @rw's queue (key plk_rw_key(rw)) lends to every holder: the
 * writer named in the word, or each reader whose read set names @rw
 * (rdset.h), at most PLK_RW_LEND_MAX of them (further readers are
 * counted in chain_truncated).  Lends are keyed by @rw itself, so a
 * writer's lend to N readers is N entries under one key, each withdrawn
 * by its reader's own unlock.
 */
#define PLK_RW_LEND_MAX 32

/** plk_chain_rw_kinds - as plk_chain_kinds, for @rw. */
PLK_HIDDEN unsigned plk_chain_rw_kinds(const proxylock_rwlock_t *rw);

/**
 * plk_chain_rw_prepare - as plk_chain_prepare, for @rw: the holders seen
 * now (the writer, or the readers named in read sets) get their table
 * pages mapped and enough spare records.
 */
PLK_HIDDEN void plk_chain_rw_prepare(const proxylock_rwlock_t *rw);

/**
 * plk_chain_rw_update - with @rw's bucket @b locked: what @rw's queue
 * lends each holder, recorded by the engine (applies deferred).  Does
 * nothing unless PLK_RW_WAITERS is set, which pins the holders: the
 * writer cannot release, nor a reader leave (its last unlock), without
 * this bucket; with it set and nobody queued, every holder's entry goes.
 */
PLK_HIDDEN void plk_chain_rw_update(struct plk_bucket *b, proxylock_rwlock_t *rw);

#endif /* PLK_CHAIN_H */

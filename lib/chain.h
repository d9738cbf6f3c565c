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

/** plk_lend_kinds - kinds waiters of @m lend (lock attribute restricted
 * by proxylock_donate_kinds()); 0 means no donation work. */
PLK_HIDDEN unsigned plk_lend_kinds(const proxylock_mutex_t *m);

/**
 * plk_lend_prepare - with no internal lock held, before taking @m's
 * bucket on a path that may lend: run the capability probe and make
 * sure a record for @m's owner can be made without a syscall
 * (registry.h: plk_registry_reserve).  @m NULL: a spare record only,
 * for a lock whose word may not be read yet.
 */
PLK_HIDDEN void plk_lend_prepare(const proxylock_mutex_t *m);

/**
 * plk_lend_update - with @m's bucket @b locked: what @m's queued waiters
 * lend its owner, recorded by the engine (which defers the apply).  Does
 * nothing unless the word has PLK_WAITERS set, which pins the owner;
 * with PLK_WAITERS set and nobody queued the owner's entry is dropped.
 */
PLK_HIDDEN void plk_lend_update(struct plk_bucket *b, proxylock_mutex_t *m);

/**
 * plk_lend_flush - with no internal lock held: carry out the caller's
 * deferred applies, and where an owner's effective context changed
 * while it waits on a lock, carry the change to that lock's owner, and
 * so on, at most PROXYLOCK_CHAIN_MAX steps.  Every path that took a
 * bucket calls it after dropping the bucket.
 */
PLK_HIDDEN void plk_lend_flush(void);

#endif /* PLK_CHAIN_H */

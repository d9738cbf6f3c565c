/* SPDX-License-Identifier: MIT */
/*
 * wakers.h - waits for work lend to the workers: a condvar's or a
 * semaphore's waiters lend to the threads that recently woke that
 * object's waiters (its wakers), learned as they do it.  The learning
 * rule and the invariants are at the top of wakers.c and in
 * docs/design.md, "Waits for work".
 */
#ifndef PLK_WAKERS_H
#define PLK_WAKERS_H

#include <stdbool.h>

#include "waitq.h"

/* Wakers kept per object, and for how many of the object's wakes a
 * waker that does none of them stays one. */
#define PLK_WAKERS_MAX 2
#define PLK_WAKERS_AGE 8

/**
 * plk_wakers_prepare - with no internal lock held, before taking @key's
 * bucket on a path that may lend through it: run the capability probe,
 * read the configuration, and, if @key has wakers (read without the
 * lock: a hint), make sure records for them can be made without a
 * syscall; the caller's TID is cached (plk_wakers_note reads it).  True
 * if it has any and something may be lent.
 */
PLK_HIDDEN bool plk_wakers_prepare(const void *key);

/**
 * plk_wakers_update - under @key's bucket @b: make what @key's queued
 * waiters lend its wakers the fold of their contexts (nothing once the
 * queue is empty), at chain depth @depth; the applies are deferred
 * (chain.h: plk_chain_flush).  Every change of @key's queue or wakers is
 * followed by one, before @b is dropped.
 */
PLK_HIDDEN void plk_wakers_update(struct plk_bucket *b, const void *key, int depth);

/**
 * plk_wakers_note - under @key's bucket @b: the caller wakes @key's
 * waiters: it becomes (or stays) one of @key's wakers.  Lends nothing by
 * itself; a waker it replaces keeps what it was lent until the update
 * that follows (K1).  True if the wakers lent to changed (a new one, or
 * one aged out or replaced): an update must follow; false if nothing
 * an update would change did.
 */
PLK_HIDDEN bool plk_wakers_note(struct plk_bucket *b, const void *key);

/**
 * plk_wakers_forget - with no internal lock held: @key is initialised or
 * destroyed, with no waiter: forget its wakers.
 */
PLK_HIDDEN void plk_wakers_forget(const void *key);

/**
 * plk_wakers_awaited - without any lock: may a waiter be registered on
 * @key by plk_wakers_wait_begin?  A hint for a semaphore's poster: a
 * false answer costs a waiter one lesson, never a lend left behind.
 */
PLK_HIDDEN bool plk_wakers_awaited(const void *key);

/**
 * plk_wakers_wait_begin - with no internal lock held, before a wait the
 * library does not make itself (a semaphore's, in glibc): queue the
 * caller's record on @key, so that it lends to @key's wakers, and apply
 * what that changes.  False (nothing queued) if there is no record or no
 * room in @key's row of the table.
 * plk_wakers_wait_end - after it: leave @key's queue and withdraw.
 */
PLK_HIDDEN bool plk_wakers_wait_begin(void *key);
PLK_HIDDEN void plk_wakers_wait_end(void *key);

/** plk_wakers_fork_init - at load: mark the table MADV_WIPEONFORK if the
 * kernel can.  plk_wakers_fork_child - zero it if it could not. */
PLK_HIDDEN void plk_wakers_fork_init(void);
PLK_HIDDEN void plk_wakers_fork_child(void);

#endif /* PLK_WAKERS_H */

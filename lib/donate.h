/* SPDX-License-Identifier: MIT */
/*
 * donate.h - the donation engine: what blocked waiters lend their
 * lock's owner, along owner chains.  The contract and its invariants are
 * at the top of donate.c and in docs/design.md.
 */
#ifndef PLK_DONATE_H
#define PLK_DONATE_H

#include <stdbool.h>

#include "proxylock.h"
#include "registry.h"
#include "waitq.h"

/** plk_donate_lock_kinds - kinds waiters of @m lend (lock attribute
 * restricted by proxylock_donate_kinds()); 0 means no donation work. */
PLK_HIDDEN unsigned plk_donate_lock_kinds(const proxylock_mutex_t *m);

/**
 * plk_donate_waiter_refresh - before @self queues: if nothing is lent to
 * it, re-read its base context from the kernel, so that what it lends is
 * what it has now.  No bucket lock held (syscalls).
 */
PLK_HIDDEN void plk_donate_waiter_refresh(struct plk_thread *self);

/**
 * plk_donate_update - with @m's bucket @b locked: recompute what @m's
 * queued waiters lend its owner and make the kernel agree.  Does nothing
 * unless the word has PLK_WAITERS set, which pins the owner (it cannot
 * release @m without @b).  Returns true if the owner's effective context
 * changed; then *@owner is its record and *@next the lock it is blocked
 * on (or NULL), to pass to plk_donate_propagate() once @b is unlocked.
 */
PLK_HIDDEN bool plk_donate_update(struct plk_bucket *b, proxylock_mutex_t *m,
                                  struct plk_thread **owner, proxylock_mutex_t **next);

/**
 * plk_donate_propagate - carry a change of @via's effective context down
 * the chain: @via waits on @next, whose owner may wait on another lock,
 * and so on, at most PROXYLOCK_CHAIN_MAX steps; stops where nothing
 * changes or @via no longer waits on @next.  No bucket lock held.
 */
PLK_HIDDEN void plk_donate_propagate(struct plk_thread *via, proxylock_mutex_t *next);

/**
 * plk_donate_withdraw - @self has released @m: drop what it received
 * through @m and restore the kernel's view.  No bucket lock held.
 */
PLK_HIDDEN void plk_donate_withdraw(struct plk_thread *self, const proxylock_mutex_t *m);

/**
 * plk_donate_withdraw_tid - @m no longer lends to thread @tid, which is
 * not the caller (a foreign unlock, an owner that exited): drop its entry
 * and restore it, if it has a record.  Any locks may be held but @tid's
 * record lock (it is taken innermost).
 */
PLK_HIDDEN void plk_donate_withdraw_tid(pid_t tid, const proxylock_mutex_t *m);

/* Parts of a context an application's scheduler call sets. */
enum {
	PLK_FIELD_CPUS = 1, PLK_FIELD_NICE = 2, PLK_FIELD_POLICY = 4,  /* policy and RT priority */
	PLK_FIELD_UMIN = 8, PLK_FIELD_UMAX = 16
};

/**
 * plk_donate_base_set - run @set(@arg), an application's call that sets
 * the @fields of thread @tid's context, so that it changes B(tid) instead
 * of being undone by the next restore: if @tid is being lent to, the new
 * values are read back into its base and the lend is applied on top.
 * @set returns true on success.  Returns what @set returned.
 */
PLK_HIDDEN bool plk_donate_base_set(pid_t tid, unsigned fields, bool (*set)(void *), void *arg);

/**
 * plk_donate_base_get - if thread @tid is being lent to, store B(tid) in
 * *@out and return true (what the application set, not what it runs
 * with); else false: the kernel's view is its base.
 */
PLK_HIDDEN bool plk_donate_base_get(pid_t tid, struct plk_sched_ctx *out);

#endif /* PLK_DONATE_H */

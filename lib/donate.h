/* SPDX-License-Identifier: MIT */
/*
 * donate.h - the donation engine: what a thread is lent through the
 * locks it holds, and making the kernel agree.  It knows locks only as
 * keys and owners as TIDs; the lock layer (chain.c) reads lock words and
 * queues.  The order (compute under internal locks, apply with none
 * held), the apply token and the invariants are at the top of donate.c
 * and in docs/design.md.
 */
#ifndef PLK_DONATE_H
#define PLK_DONATE_H

#include <stdbool.h>
#include <stdint.h>

#include "lend.h"
#include "registry.h"

/* An apply deferred until every internal lock is dropped: make the
 * kernel agree with E(@t), @t being @tid's record when it was computed;
 * @next: the lock @t waits on, if its E changed (to carry the change
 * down the chain), at chain depth @depth. */
struct plk_apply {
	struct plk_thread *t;
	pid_t tid;
	void *next;
	int depth;
};

/**
 * plk_donate_fold - under the bucket of the lock @w is queued on: fold
 * E(@w) into l->all and E_L(@w) into l->by_locks, for @kinds; if @w's
 * context was never read (a new record's zeroes are no context), only
 * what @w is lent, B(@w) left out.
 */
PLK_HIDDEN void plk_donate_fold(struct plk_lends *l, struct plk_thread *w, unsigned kinds);

/**
 * plk_donate_fold_for_wakers - plk_donate_fold for a wait for work's
 * wakers: E_L(@w) only, what @w's locks and explicit lends lend it, not
 * its waits for work (wakers.c: no lend keeps itself round a cycle).
 */
PLK_HIDDEN void plk_donate_fold_for_wakers(struct plk_lend *l, struct plk_thread *w,
                                           unsigned kinds);

/**
 * plk_donate_set - under @lock's bucket lock, @owner seen owning @lock
 * with PLK_WAITERS set (I3): record that @lock's waiters lend @owner @l
 * (l->all.kinds == 0: nothing, drop the entry) and recompute E(owner)
 * and E_L(owner).  A
 * record for @owner comes from the registry's reserve (no allocation
 * here).  If the kernel must be told, an apply is deferred (see
 * plk_donate_next_deferred); @depth: its chain depth.
 */
PLK_HIDDEN void plk_donate_set(pid_t owner, const void *lock, const struct plk_lends *l,
                               int depth);

/**
 * plk_donate_withdraw_tid - @lock no longer lends to thread @tid, which
 * is not the caller (a foreign unlock, an owner that exited): drop its
 * entry; the apply is deferred.  Any locks may be held but @tid's record
 * lock (taken innermost).
 */
PLK_HIDDEN void plk_donate_withdraw_tid(pid_t tid, const void *lock);

/**
 * plk_donate_next_deferred - pop the caller's oldest deferred apply into
 * *@out; false if there is none.  Called with no internal lock held
 * (chain.c's plk_chain_flush), which then runs plk_donate_apply on it.
 */
PLK_HIDDEN bool plk_donate_next_deferred(struct plk_apply *out);

/**
 * plk_donate_apply - no internal lock held: make the kernel's view of
 * a->t agree with its newest E, unless the record was recycled, there is
 * nothing to do, or another thread holds its apply token (which then
 * does it).
 */
PLK_HIDDEN void plk_donate_apply(const struct plk_apply *a);

/**
 * plk_donate_withdraw - no internal lock held: @self has released @lock:
 * drop what it received through @lock and restore the kernel's view.  If
 * @self is queued on another key (a condvar wait releasing its mutex),
 * the walk down that chain is deferred: the caller runs plk_chain_flush.
 */
PLK_HIDDEN void plk_donate_withdraw(struct plk_thread *self, const void *lock);

/**
 * plk_donate_waiter_refresh - no internal lock held, before @self queues:
 * if nothing is lent to it and its copy of its base context was read
 * @max_age_ns ago or more (0: always; PLK_REFRESH_UNVERIFIED: only if
 * the copy is unverified, a new record's included) or says RT, re-read
 * it from the kernel, so that what it lends is what it has (two
 * syscalls).
 */
#define PLK_REFRESH_UNVERIFIED UINT64_MAX
PLK_HIDDEN void plk_donate_waiter_refresh(struct plk_thread *self, uint64_t max_age_ns);

/* What fork's prepare copies of the forking thread (donate.c, Fork). */
struct plk_donate_fork_copy {
	struct plk_sched_ctx base;     /* B(T) */
	struct plk_sched_ctx applied;  /* what the kernel had of ours */
};

/**
 * plk_donate_fork_prepare - copy the forking thread's base and applied
 * context into *@copy and watch for calls on it until the fork is taken;
 * nothing is held on return; false if it has no record.
 * plk_donate_fork_parent - stop watching.  plk_donate_fork_child - in the
 * child, set back what a lend can have changed.
 */
PLK_HIDDEN bool plk_donate_fork_prepare(struct plk_donate_fork_copy *copy);
PLK_HIDDEN void plk_donate_fork_parent(void);
PLK_HIDDEN void plk_donate_fork_child(const struct plk_donate_fork_copy *copy);

/* Parts of a context an application's scheduler call sets. */
enum {
	PLK_FIELD_CPUS = 1, PLK_FIELD_NICE = 2, PLK_FIELD_POLICY = 4,  /* policy and RT priority */
	PLK_FIELD_UMIN = 8, PLK_FIELD_UMAX = 16
};

/**
 * plk_donate_base_set - run @set(@arg), an application's call that sets
 * the @fields of thread @tid's context, so that it changes B(tid) instead
 * of being undone by the next restore: holding @tid's apply token (it
 * waits for it, with no internal lock held), the new values are read
 * back into its base and any lend is applied on top.  @set returns true
 * on success.  Returns what @set returned.  If @tid waits on a lock, the
 * walk down its chain is deferred: the caller runs plk_chain_flush.
 */
PLK_HIDDEN bool plk_donate_base_set(pid_t tid, unsigned fields, bool (*set)(void *), void *arg);

/**
 * plk_donate_base_get - answer a getter of thread @tid's context: if
 * something the engine installed is in its kernel view, store B(tid) in
 * *@out and return true (what the application set, never an unverified
 * copy); else run @read(@arg), the real getter, and return false (the
 * kernel's view is its base).  Both happen holding @tid's apply token
 * (waited for with no internal lock held; @read runs with none held), so
 * no lend lands between the check and the read.
 */
PLK_HIDDEN bool plk_donate_base_get(pid_t tid, struct plk_sched_ctx *out, void (*read)(void *),
                                    void *arg);

#endif /* PLK_DONATE_H */

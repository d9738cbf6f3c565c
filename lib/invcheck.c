/* SPDX-License-Identifier: MIT */
/*
 * invcheck.c - the named checks of the lock invariants (invcheck.h),
 * built only with -Ddebug_invariants=true.
 *
 * Every check reads what its invariant speaks of under the lock the
 * invariant is stated under (a bucket, a record lock), asserts that the
 * caller holds it, and fails through PLK_INVARIANT with the invariant's
 * name.  No check makes a syscall, allocates or waits: they run under
 * internal locks (I5), and the two that take a lock themselves
 * (plk_inv_mutex_m1_bare_release, plk_inv_i1_restored) are called with
 * none held and take one, as the code around them does.
 *
 * Woken waiters on their way back (invcheck.h): owed[i] counts those
 * woken off a queue hashed to bucket i, written only under that bucket,
 * so plain reads and writes there; T.inv_owes names the key, so that the
 * waiter's return uncounts exactly what its wake counted.  A fork child
 * keeps the parent's counts (its waiters vanished): higher counts only
 * let more pass, so a check never fails on them.
 */
#include "invcheck.h"

static uint32_t owed[PLK_WAITQ_BUCKETS];

/* Is anyone queued on @key in locked bucket @b? */
static bool queued(struct plk_bucket *b, const void *key)
{
	return plk_waitq_first(b, key) != NULL;
}

void plk_inv_bucket_held(const struct plk_bucket *b, const void *key)
{
	(void)key;
	plk_assert_held(&b->lock);
}

void plk_inv_woken(struct plk_bucket *b, struct plk_thread *t, const void *key)
{
	plk_assert_held(&b->lock);
	if (t->inv_owes)
		plk_inv_back(b, t, t->inv_owes);  /* woken again, not back: never seen */
	t->inv_owes = key;
	owed[plk_waitq_index(key)]++;
}

void plk_inv_back(struct plk_bucket *b, struct plk_thread *me, const void *at)
{
	const void *key = me ? me->inv_owes : NULL;

	plk_assert_held(&b->lock);
	if (!key)
		return;
	/* A duty to another bucket stays counted there until this thread
	 * holds that one (a woken waiter goes back to its own). */
	if (plk_waitq_index(at) != plk_waitq_index(key))
		return;
	PLK_INVARIANT("M1", owed[plk_waitq_index(key)] > 0,
	              "a woken waiter coming back was counted on its way");
	owed[plk_waitq_index(key)]--;
	me->inv_owes = NULL;
}

void plk_inv_mutex_m1(struct plk_bucket *b, const proxylock_mutex_t *m)
{
	uint32_t w = plk_word(m);

	plk_assert_held(&b->lock);
	if (plk_word_reserved(w)) {
		PLK_INVARIANT("M6", !(w & PLK_WAITERS), "a reserved word (destroyed, not recoverable) "
		              "never shows WAITERS");
		return;  /* its waiters are all being woken */
	}
	PLK_INVARIANT("M1", (w & PLK_WAITERS) || !queued(b, m) ||
	              owed[plk_waitq_index(m)] > 0,
	              "a mutex with waiters queued shows WAITERS, unless a woken waiter is on its "
	              "way back");
}

void plk_inv_mutex_m2_release(struct plk_bucket *b, const proxylock_mutex_t *m, bool foreign)
{
	uint32_t w = plk_word(m);

	plk_assert_held(&b->lock);
	PLK_INVARIANT("M2", w & PLK_WAITERS,
	              "only the release clears WAITERS: the slow unlock that saw them still sees "
	              "them under the bucket");
	/* No syscall under the bucket (a fork child's plk_tid() renewal, or
	 * plk_owned_by_self's alias check, may make one): the TID cached in
	 * TLS, which the unlock renewed before the bucket, against the owner
	 * as a bucket holder reads it. */
	PLK_INVARIANT("M2", foreign || plk_owner_tid_locked(w) == (pid_t)(uint32_t)plk_tls_id,
	              "the slow unlock's word still names the unlocking owner");
}

void plk_inv_mutex_m1_bare_release(proxylock_mutex_t *m)
{
	struct plk_bucket *b = plk_waitq_lock(m);
	bool ok = !queued(b, m) || owed[plk_waitq_index(m)] > 0;

	plk_waitq_unlock(b);
	PLK_INVARIANT("M1", ok, "a release without the bucket (no WAITERS in the word) leaves "
	              "nobody queued but behind a woken waiter on its way back");
}

void plk_inv_mutex_m4(const proxylock_mutex_t *m, const struct plk_thread *head)
{
	PLK_INVARIANT("M4", (plk_word(m) & PLK_TID_MASK) == (uint32_t)head->tid,
	              "a handoff's word names the waiter before its park word says HANDED");
}

void plk_inv_rw(struct plk_bucket *b, const proxylock_rwlock_t *rw)
{
	uint32_t w = plk_rw_word(rw);
	uint32_t solo = plk_rw_solo_field(rw) & PLK_RW_COUNT;

	plk_assert_held(&b->lock);
	if ((w & ~PLK_RW_WAITERS) == PLK_RW_DESTROYED)
		return;
	PLK_INVARIANT("RW1", (w & PLK_RW_WAITERS) || !queued(b, plk_rw_key(rw)),
	              "an rwlock with waiters queued shows WAITERS");
	PLK_INVARIANT("RW2", w != PLK_RW_WAITERS || owed[plk_waitq_index(plk_rw_key(rw))] > 0,
	              "no bucket hold finds the rwlock free with WAITERS set, but while a woken "
	              "writer is on its way back");
	PLK_INVARIANT("RW9", solo == 0 || plk_rw_dead_reader(rw) == solo ||
	              !((w & (PLK_RW_WRITER | PLK_RW_SOLO)) || (w & PLK_RW_COUNT) == 0),
	              "__solo names a reader only while the word counts read holds");
}

void plk_inv_rw_rw2_clear(struct plk_bucket *b, const proxylock_rwlock_t *rw)
{
	plk_assert_held(&b->lock);
	PLK_INVARIANT("RW2", !queued(b, plk_rw_key(rw)),
	              "WAITERS is cleared only with nobody queued");
}

void plk_inv_rw_rw4(const proxylock_rwlock_t *rw, const struct plk_thread *t)
{
	uint32_t w = plk_rw_word(rw);

	if (t->rw_writer) {
		PLK_INVARIANT("RW4", (w & PLK_RW_WRITER) &&
		              (w & PLK_RW_VALUE) == (uint32_t)t->tid,
		              "a writer's grant shows in the word before its park word says HANDED");
		return;
	}
	PLK_INVARIANT("RW4", plk_rw_readers(w) > 0,
	              "a reader's grant shows in the word before its park word says HANDED");
	PLK_INVARIANT("RW4", !t->rw_grant_slot ||
	              (__atomic_load_n(t->rw_grant_slot, __ATOMIC_RELAXED) &
	               ~(uintptr_t)PLK_RD_NAMED) == (uintptr_t)rw,
	              "a reader's grant shows in its slot before its park word says HANDED");
}

void plk_inv_i1_target(const struct plk_thread *t)
{
	plk_assert_held(&t->lock);
	if (t->nheld != 0)
		return;
	PLK_INVARIANT("I1", plk_sched_equal(&t->eff, &t->base),
	              "a thread lent nothing (T.held empty) has E(T) = B(T)");
	PLK_INVARIANT("I1", plk_sched_equal(&t->eff_locks, &t->base),
	              "a thread lent nothing (T.held empty) has E_L(T) = B(T)");
}

void plk_inv_i1_restored(struct plk_thread *self)
{
	bool settled, restored;

	plk_ilock_lock(&self->lock);
	settled = self->nheld == 0 && !self->applier && self->orphans == 0 &&
	          !self->view_stale && self->gen == self->applied_gen;
	restored = plk_sched_equal(&self->applied, &self->base);
	plk_ilock_unlock(&self->lock);
	PLK_INVARIANT("I1", !settled || restored,
	              "an unlock that leaves its thread lent nothing returns with the kernel's view "
	              "at its base");
}

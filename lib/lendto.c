/* SPDX-License-Identifier: MIT */
/*
 * lendto.c - explicit lends: proxylock_lend_begin/end, for waits the
 * library cannot see (proxylock.h).
 *
 * A lend is an engine entry for the target, keyed by the handle's
 * address, holding the fold of the caller's E at begin for the kinds
 * asked; the engine combines it with the rest of what the target is
 * lent (lend.c: only what raises it) and carries it down the chain if
 * the target waits on a lock, condvar or semaphore (chain.c).  Only the
 * lending thread writes its handle's entry (begin sets it, end drops
 * it), so no bucket serialises it: the engine's record lock does.
 *
 * Invariants:
 *  X1  A handle is begun (its entry may exist) exactly while the table
 *      has a slot for it and its lender (at most PLK_LEND_NEST_MAX a
 *      thread, PLK_LENDS_MAX in all); end takes the slot out and drops
 *      the entry, so nested lends are restored one by one, in any
 *      order, and a double end finds nothing.
 *  X2  A lender that exits with lends begun has them dropped by its
 *      key's destructor, so no target stays raised by a dead thread
 *      (the handles' memory is gone by then: the table keeps copies).
 *  X3  A fork child has no lend begun, however it was made (fork(),
 *      _Fork(), a raw fork): the table and its lock are on a page the
 *      kernel wipes in a child (wipeonfork.h).  Where it cannot (no
 *      MADV_WIPEONFORK, pages over 4 KiB), fork()'s child handler empties
 *      them, and a child made without handlers keeps its parent's.
 *      Every target of a parent's lend is a parent thread.  The survivor's end of a handle it began before
 *      the fork (the handle names its lender's TID, a fork alias in the
 *      child) has nothing to drop and succeeds once.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "chain.h"
#include "config.h"
#include "donate.h"
#include "forkalias.h"
#include "lendto.h"
#include "registry.h"
#include "wipeonfork.h"

#define PLK_LEND_NEST_MAX 8   /* lends begun by one thread at once */
#define PLK_LENDS_MAX 64      /* lends begun in the process at once */
#define LEND_BEGUN 0x4c454e44u  /* "LEND" */

/*
 * The lends begun, process-wide: a fixed table, not TLS (the library's
 * static TLS is what a dlopen must find room for, and this would take
 * 132 bytes a thread).  A slot is free while its handle is NULL.  The
 * lender is named by pthread_self().  Under the table's lock, an
 * internal lock taken alone (a leaf), with no syscall under it.  Both on
 * a page of their own, wiped in a fork child (X3).
 */
struct lend_slot {
	const proxylock_lend_t *handle;
	pthread_t lender;
	pid_t tid;
};

/* Aligned as a type, so that its size is a whole page too. */
struct lend_table {
	struct lend_slot slot[PLK_LENDS_MAX];
	plk_ilock_t lock;
} __attribute__((aligned(4096)));

static struct lend_table lends;
static bool lends_wipe_on_fork;
_Static_assert(sizeof(lends) == 4096, "the table of lends is one page");

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool key_ready;

/* The slot of @lend begun by the caller, or -1; the table's lock held. */
static int slot_of(const proxylock_lend_t *lend)
{
	plk_assert_held(&lends.lock);
	for (int i = 0; i < PLK_LENDS_MAX; i++)
		if (lends.slot[i].handle == lend && pthread_equal(lends.slot[i].lender, pthread_self()))
			return i;
	return -1;
}

/* Is @lend begun, by any thread?  Its address names the lend; the table's lock held. */
static bool handle_begun(const proxylock_lend_t *lend)
{
	plk_assert_held(&lends.lock);
	for (int i = 0; i < PLK_LENDS_MAX; i++)
		if (lends.slot[i].handle == lend)
			return true;
	return false;
}

/* The caller's lends begun; the table's lock held. */
static int begun_by_caller(void)
{
	int n = 0;

	plk_assert_held(&lends.lock);
	for (int i = 0; i < PLK_LENDS_MAX; i++)
		n += lends.slot[i].handle && pthread_equal(lends.slot[i].lender, pthread_self());
	return n;
}

/* Take @lend's slot out of the table (X1) if @take; false if it is not
 * the caller's.  *@tid: its target. */
static bool slot_take(const proxylock_lend_t *lend, pid_t *tid, bool take)
{
	int i;

	plk_ilock_lock(&lends.lock);
	if ((i = slot_of(lend)) >= 0) {
		*tid = lends.slot[i].tid;
		if (take)
			lends.slot[i].handle = NULL;
	}
	plk_ilock_unlock(&lends.lock);
	return i >= 0;
}

/* Drop the entry of @lend's lend to @tid. */
static void lend_drop(const proxylock_lend_t *lend, pid_t tid)
{
	struct plk_lends none = { .all.kinds = 0, .by_locks.kinds = 0 };

	/* As a set, not plk_donate_withdraw_tid: a target blocked on a lock
	 * carries the withdrawal down its chain, as it carried the lend. */
	plk_donate_set(tid, lend, &none, 1);
	plk_chain_flush();
}

/* X2: the lender exits with lends begun.  Each entry goes before its
 * slot, as proxylock_lend_end's: until then a begin of the same handle
 * by another thread is refused (EBUSY), so our drop never takes its new
 * lend's entry (X1). */
static void lender_exit(void *arg)
{
	(void)arg;
	for (;;) {
		const proxylock_lend_t *lend = NULL;
		pid_t tid = 0;

		plk_ilock_lock(&lends.lock);
		for (int i = 0; i < PLK_LENDS_MAX && !lend; i++)
			if (lends.slot[i].handle && pthread_equal(lends.slot[i].lender, pthread_self())) {
				lend = lends.slot[i].handle;
				tid = lends.slot[i].tid;
			}
		plk_ilock_unlock(&lends.lock);
		if (!lend)
			return;
		lend_drop(lend, tid);
		(void)slot_take(lend, &tid, true);
	}
}

static void key_init(void)
{
	key_ready = pthread_key_create(&exit_key, lender_exit) == 0;
}

/* A free slot for @lend to @tid; 0, EBUSY or EAGAIN. */
static int slot_add(const proxylock_lend_t *lend, pid_t tid)
{
	int err = EAGAIN;

	plk_ilock_lock(&lends.lock);
	if (handle_begun(lend)) {
		err = EBUSY;  /* another thread's end would drop both lends' entry */
	} else if (begun_by_caller() < PLK_LEND_NEST_MAX) {
		for (int i = 0; i < PLK_LENDS_MAX && err; i++)
			if (!lends.slot[i].handle) {
				lends.slot[i] = (struct lend_slot){ lend, pthread_self(), tid };
				err = 0;
			}
		PLK_INVARIANT("X1", begun_by_caller() <= PLK_LEND_NEST_MAX,
		              "at most PLK_LEND_NEST_MAX lends begun by one thread");
	}
	plk_ilock_unlock(&lends.lock);
	return err;
}

/* The checks that need no record nor the table; 0 or the errno value. */
static int begin_args(pid_t tid, unsigned kinds, const proxylock_lend_t *lend)
{
	if (!lend || (kinds & ~(unsigned)PROXYLOCK_DONATE_ALL) || tid <= 0 ||
	    (uint32_t)tid == plk_tid())
		return EINVAL;
	return plk_thread_exited(tid) ? ESRCH : 0;
}

int proxylock_lend_begin(pid_t tid, unsigned kinds, proxylock_lend_t *lend)
{
	struct plk_thread *me;
	struct plk_lends l;
	int err = begin_args(tid, kinds, lend);

	if (err)
		return err;
	pthread_once(&key_once, key_init);
	if (!(me = plk_thread_self()) || !key_ready || pthread_setspecific(exit_key, &lends) != 0 ||
	    !plk_registry_reserve(tid))
		return ENOMEM;
	if ((err = slot_add(lend, tid)))
		return err;
	(void)plk_config();  /* read once, here: not under a lock */
	plk_sched_probe();
	kinds &= proxylock_donate_kinds();
	if (kinds)
		plk_donate_waiter_refresh(me, 0);  /* lend what the caller has now */
	plk_lends_init(&l);
	plk_donate_fold(&l, me, kinds);
	*lend = (proxylock_lend_t){ LEND_BEGUN, tid, kinds, (int32_t)plk_tid() };
	if (l.all.kinds) {
		plk_donate_set(tid, lend, &l, 1);
		plk_chain_flush();
	}
	return 0;
}

/* @lend was begun before a fork by the caller, a fork's survivor (X3). */
static bool begun_before_a_fork(const proxylock_lend_t *lend)
{
	return lend->__magic == LEND_BEGUN && plk_tid() == plk_forked_tid() &&
	       plk_fork_alias((uint32_t)lend->__lender);
}

int proxylock_lend_end(proxylock_lend_t *lend)
{
	pid_t tid;

	if (!lend)
		return EINVAL;
	if (!slot_take(lend, &tid, false)) {
		if (!begun_before_a_fork(lend))
			return lend->__magic == LEND_BEGUN ? EPERM : EINVAL;
	} else {
		/* The entry goes before the slot: until then a begin of the
		 * same handle by another thread is refused (EBUSY), so our
		 * drop never takes its new lend's entry (X1). */
		lend_drop(lend, tid);
		(void)slot_take(lend, &tid, true);
	}
	lend->__magic = 0;
	return 0;
}

void plk_lendto_fork_init(void)
{
	lends_wipe_on_fork = plk_bss_wipe_on_fork(&lends, sizeof(lends));
}

void plk_lendto_fork_child(void)
{
	if (!lends_wipe_on_fork)
		memset(&lends, 0, sizeof(lends));
}

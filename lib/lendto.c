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
 * A fork child keeps the forking thread's slots (its pthread_self() is
 * the parent's); their targets are parent threads, of which the child
 * has no record: its ends drop nothing and succeed.
 */
#include <errno.h>
#include <pthread.h>

#include "chain.h"
#include "config.h"
#include "donate.h"
#include "lendto.h"
#include "registry.h"

#define PLK_LEND_NEST_MAX 8   /* lends begun by one thread at once */
#define PLK_LENDS_MAX 64      /* lends begun in the process at once */
#define LEND_BEGUN 0x4c454e44u  /* "LEND" */

/*
 * The lends begun, process-wide: a fixed table, not TLS (the library's
 * static TLS is what a dlopen must find room for, and this would take
 * 132 bytes a thread).  A slot is free while its handle is NULL.  The
 * lender is named by pthread_self(), which a fork child's thread keeps.
 * Under table_lock, an internal lock taken alone (a leaf), with no
 * syscall under it.
 */
struct lend_slot {
	const proxylock_lend_t *handle;
	pthread_t lender;
	pid_t tid;
};

static struct lend_slot table[PLK_LENDS_MAX];
static plk_ilock_t table_lock;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool key_ready;

/* The slot of @lend begun by the caller, or -1; table_lock held. */
static int slot_of(const proxylock_lend_t *lend)
{
	for (int i = 0; i < PLK_LENDS_MAX; i++)
		if (table[i].handle == lend && pthread_equal(table[i].lender, pthread_self()))
			return i;
	return -1;
}

/* Is @lend begun, by any thread?  Its address names the lend; table_lock held. */
static bool handle_begun(const proxylock_lend_t *lend)
{
	for (int i = 0; i < PLK_LENDS_MAX; i++)
		if (table[i].handle == lend)
			return true;
	return false;
}

/* The caller's lends begun; table_lock held. */
static int begun_by_caller(void)
{
	int n = 0;

	for (int i = 0; i < PLK_LENDS_MAX; i++)
		n += table[i].handle && pthread_equal(table[i].lender, pthread_self());
	return n;
}

/* Take @lend's slot out of the table (X1) if @take; false if it is not
 * the caller's.  *@tid: its target. */
static bool slot_take(const proxylock_lend_t *lend, pid_t *tid, bool take)
{
	int i;

	plk_ilock_lock(&table_lock);
	if ((i = slot_of(lend)) >= 0) {
		*tid = table[i].tid;
		if (take)
			table[i].handle = NULL;
	}
	plk_ilock_unlock(&table_lock);
	return i >= 0;
}

/* Drop the entry of @lend's lend to @tid. */
static void lend_drop(const proxylock_lend_t *lend, pid_t tid)
{
	struct plk_lends none = { .all.kinds = 0, .by_locks.kinds = 0 };

	/* As a set, not plk_donate_withdraw_tid: a target blocked on a lock
	 * carries the withdrawal down its chain, as it carried the lend. */
	plk_donate_set(tid, lend, &none, 1);
	plk_lend_flush();
}

/* X2: the lender exits with lends begun. */
static void lender_exit(void *arg)
{
	(void)arg;
	for (;;) {
		const proxylock_lend_t *lend = NULL;
		pid_t tid = 0;

		plk_ilock_lock(&table_lock);
		for (int i = 0; i < PLK_LENDS_MAX && !lend; i++)
			if (table[i].handle && pthread_equal(table[i].lender, pthread_self())) {
				lend = table[i].handle;
				tid = table[i].tid;
				table[i].handle = NULL;
			}
		plk_ilock_unlock(&table_lock);
		if (!lend)
			return;
		lend_drop(lend, tid);
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

	plk_ilock_lock(&table_lock);
	if (handle_begun(lend)) {
		err = EBUSY;  /* another thread's end would drop both lends' entry */
	} else if (begun_by_caller() < PLK_LEND_NEST_MAX) {
		for (int i = 0; i < PLK_LENDS_MAX && err; i++)
			if (!table[i].handle) {
				table[i] = (struct lend_slot){ lend, pthread_self(), tid };
				err = 0;
			}
	}
	plk_ilock_unlock(&table_lock);
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
	if (!(me = plk_thread_self()) || !key_ready || pthread_setspecific(exit_key, table) != 0 ||
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
	*lend = (proxylock_lend_t){ LEND_BEGUN, tid, kinds, 0 };
	if (l.all.kinds) {
		plk_donate_set(tid, lend, &l, 1);
		plk_lend_flush();
	}
	return 0;
}

int proxylock_lend_end(proxylock_lend_t *lend)
{
	pid_t tid;

	if (!lend)
		return EINVAL;
	if (!slot_take(lend, &tid, false))
		return lend->__magic == LEND_BEGUN ? EPERM : EINVAL;
	/* The entry goes before the slot: until then a begin of the same
	 * handle by another thread is refused (EBUSY), so our drop never
	 * takes its new lend's entry (X1). */
	lend_drop(lend, tid);
	(void)slot_take(lend, &tid, true);
	lend->__magic = 0;
	return 0;
}

void plk_lendto_fork_child(void)
{
	/* Only the forking thread lives on: the other lenders' slots go. */
	for (int i = 0; i < PLK_LENDS_MAX; i++)
		if (table[i].handle && !pthread_equal(table[i].lender, pthread_self()))
			table[i].handle = NULL;
	table_lock.word = 0;
}

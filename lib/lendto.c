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
 *  X1  A handle is begun (its entry may exist) exactly while it is in
 *      its lender's TLS list, of at most PLK_LEND_NEST_MAX entries; end
 *      takes it out and drops the entry, so nested lends are restored
 *      one by one, in any order, and a double end finds nothing.
 *  X2  A lender that exits with lends begun has them dropped by its TLS
 *      key's destructor, so no target stays raised by a dead thread
 *      (the handles' memory is gone by then: the list keeps copies).
 * A fork child keeps the list (the forking thread's copy); its targets
 * are parent threads, of which the child has no record: its ends drop
 * nothing and succeed.
 */
#include <errno.h>
#include <pthread.h>

#include "chain.h"
#include "config.h"
#include "donate.h"
#include "registry.h"

#define PLK_LEND_NEST_MAX 8
#define LEND_BEGUN 0x4c454e44u  /* "LEND" */

struct lend_slot {
	const proxylock_lend_t *handle;
	pid_t tid;
};

static __thread struct lend_slot lends[PLK_LEND_NEST_MAX];
static __thread int nlends;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool key_ready;

static int slot_of(const proxylock_lend_t *lend)
{
	for (int i = 0; i < nlends; i++)
		if (lends[i].handle == lend)
			return i;
	return -1;
}

/* Drop the entry of slot @i and take it out of the list (X1). */
static void lend_drop(int i)
{
	struct plk_lend none = { .kinds = 0 };

	/* As a set, not plk_donate_withdraw_tid: a target blocked on a lock
	 * carries the withdrawal down its chain, as it carried the lend. */
	plk_donate_set(lends[i].tid, lends[i].handle, &none, 1);
	plk_lend_flush();
	lends[i] = lends[--nlends];
}

/* X2: the lender exits with lends begun. */
static void lender_exit(void *arg)
{
	(void)arg;
	while (nlends > 0)
		lend_drop(nlends - 1);
}

static void key_init(void)
{
	key_ready = pthread_key_create(&exit_key, lender_exit) == 0;
}

/* The checks that need no record; 0 or the errno value. */
static int begin_args(pid_t tid, unsigned kinds, const proxylock_lend_t *lend)
{
	if (!lend || (kinds & ~(unsigned)PROXYLOCK_DONATE_ALL) || tid <= 0 ||
	    (uint32_t)tid == plk_tid())
		return EINVAL;
	if (lend->__magic == LEND_BEGUN && slot_of(lend) >= 0)
		return EBUSY;
	if (nlends == PLK_LEND_NEST_MAX)
		return EAGAIN;
	return plk_thread_exited(tid) ? ESRCH : 0;
}

int proxylock_lend_begin(pid_t tid, unsigned kinds, proxylock_lend_t *lend)
{
	struct plk_thread *me;
	struct plk_lend l;
	int err = begin_args(tid, kinds, lend);

	if (err)
		return err;
	pthread_once(&key_once, key_init);
	if (!(me = plk_thread_self()) || !key_ready || pthread_setspecific(exit_key, &lends) != 0 ||
	    !plk_registry_reserve(tid))
		return ENOMEM;
	(void)plk_config();  /* read once, here: not under a lock */
	plk_sched_probe();
	kinds &= proxylock_donate_kinds();
	if (kinds)
		plk_donate_waiter_refresh(me, 0);  /* lend what the caller has now */
	plk_lend_init(&l);
	plk_donate_fold(&l, me, kinds);
	*lend = (proxylock_lend_t){ LEND_BEGUN, tid, kinds, 0 };
	lends[nlends++] = (struct lend_slot){ lend, tid };
	if (l.kinds) {
		plk_donate_set(tid, lend, &l, 1);
		plk_lend_flush();
	}
	return 0;
}

int proxylock_lend_end(proxylock_lend_t *lend)
{
	int i;

	if (!lend)
		return EINVAL;
	if ((i = slot_of(lend)) < 0)
		return lend->__magic == LEND_BEGUN ? EPERM : EINVAL;
	lend_drop(i);
	lend->__magic = 0;
	return 0;
}

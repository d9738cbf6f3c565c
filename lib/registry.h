/* SPDX-License-Identifier: MIT */
/*
 * registry.h - per-thread records, found by TID.
 *
 * A record exists for every thread that ever waited on, or was waited on
 * through, a proxylock.  It is created lazily on the first contended
 * operation: by the thread itself when it waits, or by a waiter on behalf
 * of an owner that has only ever taken locks on the fast path (the owner
 * adopts it the first time it enters a slow path).  Records live in a
 * cds_lfht keyed by TID and are read under the urcu-bp read lock; a
 * thread's record is unlinked by its pthread key destructor and freed
 * with call_rcu, so a reader holding rcu_read_lock() never touches freed
 * memory.
 */
#ifndef PLK_REGISTRY_H
#define PLK_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <urcu-bp.h>
#include <urcu/list.h>
#include <urcu/rculfhash.h>

#include "futex.h"
#include "schedctl.h"
#include "tsan.h"

/* Most locks with blocked waiters one thread can be lent through at once;
 * beyond that, further locks' waiters lend nothing (chain_truncated). */
#define PLK_HELD_MAX 16

/* How long a read of B(T) may stand in for another (donate.c, I4). */
#define PLK_BASE_TTL_NS (1000 * 1000)

/* What the waiters of one lock lend its owner: the kinds, and the fold of
 * the waiters' effective contexts for those kinds. */
struct plk_lend {
	unsigned kinds;          /* PROXYLOCK_DONATE_* present */
	uint32_t rt_policy;      /* SCHED_FIFO/RR of the top rt prio */
	struct plk_sched_ctx ctx; /* ctx.policy: highest fair policy lent */
};

struct plk_held {
	const void *lock;
	struct plk_lend lend;
};

/* Values of plk_thread.park, the futex word a waiter sleeps on. */
enum { PLK_PARK_WAITING = 0, PLK_PARK_WOKEN = 1, PLK_PARK_HANDED = 2 };

struct plk_thread {
	pid_t tid;
	struct cds_lfht_node hnode;
	struct rcu_head rcu;

	/* Donation state, under .lock. */
	plk_ilock_t lock;
	struct plk_sched_ctx base;     /* B(T) */
	struct plk_sched_ctx eff;      /* E(T): base plus what is lent */
	struct plk_sched_ctx applied;  /* the kernel's view, as last set/read */
	uint64_t base_ns;              /* CLOCK_MONOTONIC of the last read of base */
	bool base_unverified;          /* base is a copy not re-read since held filled */
	int nheld;                     /* entries in held[] */
	struct plk_held held[PLK_HELD_MAX];

	/* Wait state, under the bucket lock of .blocked_on. */
	void *blocked_on;              /* mutex waited for, or condvar | PLK_COND_TAG;
	                                  atomic for readers */
	int requeued;                  /* a condvar moved us onto a mutex queue */
	struct cds_list_head wnode;    /* in that bucket's queue */
	uint64_t enq_ns;               /* CLOCK_MONOTONIC at first enqueue */
	uint32_t park;                 /* PLK_PARK_*: futex word */
	const void *dead_seen;         /* lock last reported held by an exited owner */
};

/* A condvar waiter queues under its condvar's address with bit 0 set, so
 * chain walks never mistake a condvar for a mutex. */
#define PLK_COND_TAG 1u

/** plk_blocked_mutex - the mutex @t is blocked on, NULL if none (or a condvar). */
static inline void *plk_blocked_mutex(struct plk_thread *t)
{
	void *p = __atomic_load_n(&t->blocked_on, __ATOMIC_ACQUIRE);

	return ((uintptr_t)p & PLK_COND_TAG) ? NULL : p;
}

/**
 * plk_tid - the caller's TID from a TLS cache (one syscall per thread;
 * the fork child handler resets it).  Hot: inlined into the fast path.
 */
PLK_HIDDEN extern __thread uint32_t plk_tls_tid __attribute__((tls_model("initial-exec")));
PLK_HIDDEN uint32_t plk_tid_slow(void);
static inline uint32_t plk_tid(void)
{
	uint32_t tid = plk_tls_tid;

	return __builtin_expect(tid != 0, 1) ? tid : plk_tid_slow();
}

/** plk_pid - getpid(), cached (the fork child handler resets it). */
PLK_HIDDEN pid_t plk_pid(void);

/**
 * plk_prefork_tid - in a fork child, the TID the forking thread had in
 * the parent (locks it held still carry it), else 0.
 */
PLK_HIDDEN uint32_t plk_prefork_tid(void);

/** plk_forked_tid - in a fork child, the forking thread's new TID. */
PLK_HIDDEN uint32_t plk_forked_tid(void);

/**
 * plk_thread_self - the caller's record, created and adopted on first
 * use (so its key destructor reclaims it).  NULL only if out of memory.
 * Must be called under rcu_read_lock() like every lookup.
 */
PLK_HIDDEN struct plk_thread *plk_thread_self(void);

/** plk_thread_find - the record of @tid, or NULL.  Under rcu_read_lock(). */
PLK_HIDDEN struct plk_thread *plk_thread_find(pid_t tid);

/** plk_thread_get - find or create @tid's record.  Under rcu_read_lock(). */
PLK_HIDDEN struct plk_thread *plk_thread_get(pid_t tid);

/* What a grace period orders, for TSan: every read-side section's end
 * against every record_free (see tsan.h). */
PLK_HIDDEN extern int plk_tsan_grace;

/** plk_rcu_unlock - rcu_read_unlock(), telling TSan the section ended. */
static inline void plk_rcu_unlock(void)
{
	plk_tsan_release(&plk_tsan_grace);
	rcu_read_unlock();
}

/**
 * plk_thread_exited - true if no thread of this process has TID @tid
 * any more (the kernel's answer: tgkill signal 0 fails with ESRCH; for
 * the thread-group leader, which stays a zombie after pthread_exit,
 * /proc's).  A TID reused by a new thread of ours reads as alive.
 */
PLK_HIDDEN bool plk_thread_exited(pid_t tid);

/** plk_registry_count - records currently linked (tests, stats). */
PLK_HIDDEN unsigned long plk_registry_count(void);

/** plk_registry_fork_prepare/parent/child - pthread_atfork hooks. */
PLK_HIDDEN void plk_registry_fork_prepare(void);
PLK_HIDDEN void plk_registry_fork_parent(void);
PLK_HIDDEN void plk_registry_fork_child(void);

#endif /* PLK_REGISTRY_H */

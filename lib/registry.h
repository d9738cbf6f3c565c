/* SPDX-License-Identifier: MIT */
/*
 * registry.h - per-thread records, found by TID.
 *
 * A record exists for every thread that waited on, or was waited on
 * through, a proxylock.  It is created lazily on the first contended
 * operation: by the thread itself when it waits, or by a waiter on behalf
 * of an owner that has only ever taken locks on the fast path (the owner
 * adopts it the first time it enters a slow path).  Records are found by
 * TID in a lock-free table (registry.c) and are type-stable: their memory
 * is never returned to the system, only recycled for another thread, so
 * a pointer once found can always be dereferenced.  No read-side section
 * and no grace period is needed; a caller that writes a record whose
 * thread is not pinned (pinned: the caller's own, or a waiter queued in a
 * bucket the caller holds) checks under the record's lock that it still
 * belongs to the TID it looked up (plk_thread_lock_tid).
 */
#ifndef PLK_REGISTRY_H
#define PLK_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <urcu/list.h>

#include "futex.h"
#include "lend.h"
#include "schedctl.h"

/* Most locks with blocked waiters one thread can be lent through at once;
 * beyond that, further locks' waiters lend nothing (chain_truncated). */
#define PLK_HELD_MAX 16

/* How long a read of B(T) may stand in for another (donate.c, I4). */
#define PLK_BASE_TTL_NS (1000 * 1000)

/* What lock @lock's queue lends its holder (donate.c): everything its
 * waiters have, and what passes on to wakers, of their E_L only. */
struct plk_held {
	const void *lock;
	struct plk_lends lend;
};

/* Values of plk_thread.park, the futex word a waiter sleeps on. */
enum { PLK_PARK_WAITING = 0, PLK_PARK_WOKEN = 1, PLK_PARK_HANDED = 2 };

struct plk_thread {
	/* Read without any lock by lookups and chain walks (atomics). */
	pid_t tid;                     /* 0 while the record is free */
	void *blocked_on;              /* mutex waited for, or a tagged queue key (below);
	                                  written under its bucket lock */
	uint32_t wait_seq;             /* odd while blocked_on changes (waitq.c) */
	uint32_t park;                 /* PLK_PARK_*: futex word */

	/* Donation state, under .lock (never reset: a stale finder may be
	 * waiting for it while the record is recycled).  donate.c's top
	 * says how these change: E(T) is computed under internal locks, and
	 * the holder of the apply token makes the kernel agree after every
	 * internal lock is dropped. */
	plk_ilock_t lock;
	/* Never reset either: a thread asleep for the apply token counts
	 * itself in, and sleeps on, these across a recycle. */
	uint32_t apply_waiters;        /* threads waiting for the token */
	uint32_t apply_seq;            /* futex word: bumped when the token is freed */
	/* On the free list (registry.c).  Beside .lock and .apply_waiters:
	 * where the kernel cannot wipe records on fork, a fork child reads
	 * all three in every free record, and a record spans more than a
	 * 4 KiB page (6,840 bytes on x86-64, ~1.7 pages), so apart they
	 * could fault in two pages a record. */
	struct plk_thread *free_next;
	bool adopted;                  /* its own thread holds it (key set) */
	struct plk_sched_ctx base;     /* B(T) */
	struct plk_sched_ctx eff;      /* E(T): base plus what is lent */
	struct plk_cpu_owner eff_cpus; /* the CPUs eff passes on, and their owner's rank (lend.h) */
	struct plk_sched_ctx eff_locks;      /* E_L(T): base plus what locks lend (donate.c) */
	struct plk_cpu_owner eff_locks_cpus; /* the CPUs eff_locks passes on */
	struct plk_sched_ctx applied;  /* the kernel's view, as last set/read */
	uint64_t gen;                  /* bumped whenever eff changes */
	uint64_t applied_gen;          /* the gen of eff that applied is */
	bool applier;                  /* the apply token is taken */
	uint32_t token_epoch;          /* bumped when a lender takes the token over */
	bool call_lowers;              /* the holder is making a restore's calls */
	bool call_out;                 /* the holder has a call in flight */
	uint16_t orphans;              /* calls in flight whose maker lost the token */
	bool view_stale;               /* an orphan may land after applied was known */
	bool base_unverified;          /* base is a copy no call may be made on */
	bool base_check;               /* the apply must check the copy's age */
	uint64_t base_ns;              /* CLOCK_MONOTONIC of the last read of base */
	const void *lent_lock;         /* the lock whose lend changed eff last */
	int nheld;                     /* entries in held[] */
	struct plk_held held[PLK_HELD_MAX];

	/* Wait state, under the bucket lock of .blocked_on. */
	int requeued;                  /* a condvar moved us onto a mutex queue */
	const void *cond_mutex;        /* the mutex our condvar wait releases */
	struct cds_list_head wnode;    /* in that bucket's queue */
	uint64_t enq_ns;               /* CLOCK_MONOTONIC at first enqueue */
	const void *dead_seen;         /* lock last reported held by an exited owner */
	bool rw_writer;                /* queued on an rwlock for writing (else reading) */
	uintptr_t *rw_grant_slot;      /* a queued reader's reserved read-set slot, which
	                                  the granter fills (rdset.h); NULL: untracked */
#ifdef PLK_DEBUG_INVARIANTS
	const void *inv_owes;          /* woken with M1's or RW8's duty to this key's queue,
	                                  not back at its bucket yet (invcheck.c) */
#endif
};

/* A condvar waiter queues under its condvar's address with bit 0 set, so
 * chain walks never mistake a condvar for a mutex; an rwlock waiter
 * under its rwlock's address with bit 1 set, so that chain walks know
 * which protocol the lock speaks (every lock is at least 4-aligned); a
 * semaphore's waiter with both (wakers.h: PLK_SEM_TAG). */
#define PLK_COND_TAG 1u
#define PLK_RW_TAG 2u
#define PLK_SEM_TAG 3u  /* queued without parking there: glibc keeps the semaphore */

/**
 * plk_blocked_mutex - the lock @t is blocked on and that lends to its
 * holders: a mutex, or an rwlock's queue key (tagged PLK_RW_TAG); NULL
 * if none (or a condvar or semaphore, whose waiters lend to its wakers).
 */
static inline void *plk_blocked_mutex(struct plk_thread *t)
{
	void *p = __atomic_load_n(&t->blocked_on, __ATOMIC_ACQUIRE);

	return ((uintptr_t)p & PLK_COND_TAG) ? NULL : p;
}

/**
 * plk_blocked_key - the queue key @t is blocked on, whatever it lends
 * to: a mutex's or rwlock's holders, a condvar's or semaphore's wakers
 * (wakers.h); NULL if none.  What @t is lent its queue lends on (chains).
 */
static inline void *plk_blocked_key(struct plk_thread *t)
{
	return __atomic_load_n(&t->blocked_on, __ATOMIC_ACQUIRE);
}

/*
 * Identity.  plk_tid() is the caller's TID, cached in TLS (plk_tls_id:
 * the TID in the lower half, in the upper the generation of the process
 * that cached it).  The process's generation is kept inverted in
 * plk_proc.key, on a page every fork child gets zero-filled from the
 * kernel (MADV_WIPEONFORK), however it was made: fork(), _Fork(),
 * syscall(SYS_fork), clone() without CLONE_VM.  There the key reads 0,
 * which inverts to a generation never used; a thread that never cached
 * its TID holds generation 0, which no key inverts to.  Either way the
 * comparison fails and plk_tid_slow renews the cache: the first thread
 * of a new process gives it a new generation, and the thread that
 * survived the fork learns its new TID and keeps the old one as an alias
 * (below).  The key is written once per process, so a relaxed load
 * serves: a thread that reads 0 just takes the slow path.
 */
struct plk_proc {
	uint32_t key;                  /* ~generation; 0: none yet in this process */
	uint32_t survivor;             /* the fork's surviving thread renewed its TID */
};
PLK_HIDDEN extern struct plk_proc plk_proc;

PLK_HIDDEN extern __thread uint64_t plk_tls_id __attribute__((tls_model("initial-exec")));
PLK_HIDDEN uint32_t plk_tid_slow(void);

/** plk_tid - the caller's TID (see Identity above).  Hot: inlined into
 * every fast path: one TLS load and one relaxed load of a line no one
 * writes. */
static inline uint32_t plk_tid(void)
{
	uint64_t id = plk_tls_id;

	if (__builtin_expect((uint32_t)(id >> 32) == ~__atomic_load_n(&plk_proc.key, __ATOMIC_RELAXED), 1))
		return (uint32_t)id;
	return plk_tid_slow();
}

/**
 * plk_fork_survivor_pending - this process is a fork child whose
 * surviving thread has not renewed its TID yet (no fork handler of ours
 * ran: _Fork(), a raw fork syscall), so a lock word may name it by a TID
 * no alias list holds yet.  A TID that no thread of ours has may then be
 * that thread's (plk_thread_exited says alive), unless a thread that
 * cached its TID in this process had it (the last 16 such are kept).
 */
PLK_HIDDEN bool plk_fork_survivor_pending(void);

/** plk_pid - getpid(), cached on the page a fork child gets zero-filled
 * (see Identity above), so a child of any kind asks again. */
PLK_HIDDEN pid_t plk_pid(void);

/**
 * plk_thread_self - the caller's record, created and adopted on first
 * use (so its key destructor reclaims it).  NULL only if out of memory
 * (or a TID beyond PID_MAX_LIMIT).
 */
PLK_HIDDEN struct plk_thread *plk_thread_self(void);

/**
 * plk_registry_key_init - create the key that holds each thread's
 * adopted record now rather than at the first slow path: made early, it
 * gets one of glibc's first 32 key slots, whose values sit inside the
 * thread (pthread_setspecific allocates only for later keys).
 */
PLK_HIDDEN void plk_registry_key_init(void);

/** plk_thread_self_cached - the caller's adopted record, or NULL if it
 * has none yet (never creates one). */
PLK_HIDDEN struct plk_thread *plk_thread_self_cached(void);

/**
 * plk_thread_find - the record of @tid, or NULL.  Lock-free.  Unless its
 * thread is pinned, the record may be recycled for another thread at any
 * time: read it with atomics, or check it under its lock.
 */
PLK_HIDDEN struct plk_thread *plk_thread_find(pid_t tid);

/* How plk_thread_lock_tid finds a record. */
enum {
	PLK_RECORD_FIND,      /* only an existing record */
	PLK_RECORD_CREATE,    /* or a new one; no internal lock may be held */
	PLK_RECORD_RESERVED,  /* or one from the free list, under internal
	                         locks (no syscall: see plk_registry_reserve) */
};

/**
 * plk_thread_lock_tid - find (or, per @how, create) @tid's record and
 * return it with its lock held, checked to belong to @tid; NULL if there
 * is none (out of memory, an empty reserve, or none exists).
 */
PLK_HIDDEN struct plk_thread *plk_thread_lock_tid(pid_t tid, int how);

/**
 * plk_registry_reserve - with no internal lock held: make sure a record
 * for @tid (0: any TID whose table page exists) can be made under locks
 * without a syscall: its table page is mapped and the free list is not
 * empty.  False if out of memory.
 */
PLK_HIDDEN bool plk_registry_reserve(pid_t tid);

/**
 * plk_registry_reserve_n - as plk_registry_reserve for each of the @n
 * TIDs in @tids, with at least @n records on the free list (a writer
 * about to lend to @n readers that may have no record yet).
 */
PLK_HIDDEN bool plk_registry_reserve_n(const pid_t *tids, int n);

/**
 * plk_thread_unlock - drop @t's lock, which the caller holds; if @t was
 * created on behalf of a thread that never adopted it and nothing is lent
 * to it any more, recycle it first, so that no record outlives its use
 * and a reused TID never inherits one.
 */
PLK_HIDDEN void plk_thread_unlock(struct plk_thread *t);

/*
 * The apply token (donate.c): t->applier marks the one thread making
 * sched calls for t's thread.  Taken and dropped under t->lock; a record
 * is never retired while it is taken.
 */

/** plk_thread_token_take - take @t's token if free; t->lock held. */
static inline bool plk_thread_token_take(struct plk_thread *t)
{
	if (t->applier)
		return false;
	t->applier = true;
	return true;
}

/**
 * plk_thread_token_wait - take @t's token, sleeping for it (a futex wait
 * with no internal lock held) while another thread has it or a call
 * whose maker lost it is in flight (donate.c, "Overtaking").  Called with
 * t->lock held; returns true with t->lock held and the token taken, or
 * false with t unlocked if the record stopped being @tid's, or if this
 * thread is itself making @t's calls (plk_tls_applying: a signal handler
 * run inside them must not wait for itself; the interrupted maker meets
 * the handler's new generation at its next gate or re-check).
 */
PLK_HIDDEN bool plk_thread_token_wait(struct plk_thread *t, pid_t tid);

/* The record whose token (or call out as an orphan) this thread holds
 * while it has dropped that record's lock: around every call and read
 * made for it (donate.c, holding_unlock), else NULL.  Read only by this
 * thread, from a signal handler: plain TLS suffices. */
PLK_HIDDEN extern __thread const struct plk_thread *plk_tls_applying
	__attribute__((tls_model("initial-exec")));

/**
 * plk_thread_token_drop_unlock - drop @t's token and its lock (as
 * plk_thread_unlock), waking threads waiting for the token.
 */
PLK_HIDDEN void plk_thread_token_drop_unlock(struct plk_thread *t);

/**
 * plk_thread_exited - true if no thread of this process has TID @tid
 * any more (the kernel's answer: tgkill signal 0 fails with ESRCH; for
 * the thread-group leader, which stays a zombie after pthread_exit,
 * /proc's).  A TID reused by a new thread of ours reads as alive, and
 * so does every TID while plk_fork_survivor_pending() but those of the
 * threads that cached theirs in this process.
 */
PLK_HIDDEN bool plk_thread_exited(pid_t tid);

/**
 * plk_thread_exited_hint - plk_thread_exited(@tid), but for the
 * thread-group leader (@tid the PID) the kernel is asked at most once
 * per 50 ms while it is alive, and never again once it has exited: its
 * answer costs an open, a read and a close of /proc/self/stat, and the
 * leader's TID, the PID, is no other thread's while the process lives,
 * so an answer up to 50 ms late only lends a little longer to a leader
 * that has called pthread_exit (a zombie).  For callers that ask on
 * every contended call (rwlock.c's dead-reader check), not for one that
 * must see the exit itself (a robust mutex's dead owner).
 */
PLK_HIDDEN bool plk_thread_exited_hint(pid_t tid);

/** plk_registry_count - records currently linked (tests, stats). */
PLK_HIDDEN unsigned long plk_registry_count(void);

/** plk_registry_fork_init - at load: mark the page a fork child must
 * find zero-filled (see Identity above). */
PLK_HIDDEN void plk_registry_fork_init(void);

/** plk_registry_fork_child - the pthread_atfork child hook (registry.c). */
PLK_HIDDEN void plk_registry_fork_child(void);

/**
 * plk_registry_fork_adopt - fork's prepare, with no internal lock held:
 * adopt the caller's record, making one if there is none.
 * plk_registry_fork_key - the parent: set the key of a record adopted in
 * prepare.
 */
PLK_HIDDEN void plk_registry_fork_adopt(void);
PLK_HIDDEN void plk_registry_fork_key(void);

#endif /* PLK_REGISTRY_H */

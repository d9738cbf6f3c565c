/* SPDX-License-Identifier: MIT */
/*
 * lockstat.c - per-lock statistics, for the PROXYLOCK_STATS report.
 *
 * Off unless enabled (the interposer does so when PROXYLOCK_STATS is 1
 * or all):
 * then every mutex, rwlock and condvar the interposer sees gets a row.  No
 * interposed call and no part of the report takes memory from the
 * program's allocator (an allocator whose locks are pthread mutexes,
 * jemalloc, would come back here inside its own lock, for ever) or takes
 * a lock.  Rows are carved from slabs this file mmaps
 * (a bump index, claimed with one fetch-and-add), never freed or moved,
 * so a destroyed lock's address that comes back as another lock goes on
 * counting in the same row, as in mutrace.  They are found through an
 * index of its own: open addressing, linear probing, insert only, in
 * levels that double in size, each mapped when first needed.  A slot
 * goes once from empty to a row, by CAS, and never changes again, so a
 * lookup needs no read-side section and nothing ever waits for readers
 * (why not liburcu's hash table: docs/design.md, "Dependencies").
 * Counters are relaxed atomics.
 *
 * A fork child reports what it did itself: its rows start at zero and
 * its index empty, as the process-wide counters of stats.c do, so that
 * the reports of a parent and its children add up and none repeats the
 * parent's counts up to the fork.  Every slab and index level is marked
 * MADV_WIPEONFORK (Linux 4.14+): the child gets them zero-filled without
 * writing them, and the parent keeps them writable across the fork (a
 * page shared copy-on-write costs whichever side writes it first a page
 * copy, and the parent goes on counting).  The child keeps the slab and
 * level pointers and rows_claimed: the rows below it are zero, never
 * published, left unused (a row handed out again could be one another
 * atfork child handler, run before ours, has just claimed).  Where a
 * mapping could not be marked, the child zeroes them by hand.
 *
 * The core does not import this
 * file: it belongs to the interposer, and is the core's observer
 * (observe.h), told, with no internal lock held, which kinds a donation
 * through a lock changed in the kernel.
 *
 * What a row counts is said once, in lockstat.h.  Counting happens in
 * the interposer's careful paths, which stats on makes every call take
 * (preload.c): with stats off none of this runs.  Each counted call reads
 * the clock once or twice and looks its row up (a hash and a probe); a
 * lock's first contended acquisition and its initialisation also take a
 * short stack (callsite.c: bounded, no allocation).  A thread's read
 * holds being timed sit in a small per-thread table (PLK_RD_TIMED).
 *
 * The report (report.c) walks the rows, published by their ready flag,
 * and is written where the program may have no memory left (a fork
 * child that set RLIMIT_AS, say) or from a signal handler: it allocates
 * nothing either.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "lockstat.h"
#include "observe.h"
#include "proxylock.h"

#define SLAB_ROWS 512      /* rows per mapping */
#define SLABS 4096         /* at most 2M locks counted */
#define LEVELS 16          /* index level k has LEVEL0_SLOTS << k slots */
#define LEVEL0_SLOTS 4096
#define PROBES 16          /* slots tried per level before the next one */

bool plk_lockstat_on;

/* The index: level k, once mapped, is LEVEL0_SLOTS << k row pointers. */
static struct plk_lockrow **levels[LEVELS];
/* Row i is slabs[i / SLAB_ROWS][i % SLAB_ROWS]; rows_claimed counts the
 * rows handed out, rows_lost the operations not counted for want of a
 * row (no memory, or 2M rows out). */
static struct plk_lockrow *slabs[SLABS];
static unsigned long rows_claimed, rows_lost;
/* The kernel does not do MADV_WIPEONFORK (before Linux 4.14, or no
 * madvise at all: registry.c): a fork child zeroes the rows and the
 * index by hand.  Written once, when
 * counting starts. */
static bool rows_kept_on_fork;
/* A row this thread claimed for a lock another thread added first: never
 * published, so it serves this thread's next new lock. */
static __thread struct plk_lockrow *spare __attribute__((tls_model("initial-exec")));

/* A 64-bit finaliser (MurmurHash3's fmix64): every bit of the address
 * reaches the low bits the index uses, so locks laid out at a fixed
 * stride do not share a probe sequence. */
static unsigned long addr_hash(const void *addr)
{
	uint64_t x = (uintptr_t)addr;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (unsigned long)x;
}

/* A fresh zero mapping of @bytes for rows or index slots, marked
 * MADV_WIPEONFORK (see the top); MAP_FAILED if none.  A kernel that did
 * not do the advice at load (EINVAL, or ENOSYS or EPERM for madvise
 * itself) leaves the reset to the child (rows_kept_on_fork); where it
 * did, any refusal now (ENOMEM, EAGAIN, or a seccomp filter installed
 * since) gives no mapping: the child resets nothing and would find its
 * rows. */
static void *stat_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED && madvise(p, bytes, MADV_WIPEONFORK) != 0 &&
	    (!rows_kept_on_fork || errno == ENOMEM || errno == EAGAIN)) {
		munmap(p, bytes);
		return MAP_FAILED;
	}
	return p;
}

/*
 * A zero row from the slabs, NULL if none can be had (2M rows are out,
 * or mmap fails).  The slab pointer is stored and loaded relaxed: a slab
 * holds only the kernel's zeroes when it is published, and a thread that
 * sees the pointer finds the mapping (the fault handler looks it up under
 * the mm's lock); what is written into a row afterwards is published by
 * the index slot and by the row's ready flag.
 */
static struct plk_lockrow *row_claim(void)
{
	struct plk_lockrow *slab, *fresh, *e = spare;
	unsigned long i;

	if (e) {
		spare = NULL;
		return e;
	}
	i = __atomic_fetch_add(&rows_claimed, 1, __ATOMIC_RELAXED);
	if (i >= (unsigned long)SLABS * SLAB_ROWS)
		return NULL;
	slab = __atomic_load_n(&slabs[i / SLAB_ROWS], __ATOMIC_RELAXED);
	if (!slab) {
		fresh = stat_map(SLAB_ROWS * sizeof(*fresh));
		if (fresh == MAP_FAILED)
			return NULL;  /* row i stays unpublished; a later claim in its slab retries */
		if (__atomic_compare_exchange_n(&slabs[i / SLAB_ROWS], &slab, fresh, 0,
		                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			slab = fresh;
		else
			munmap(fresh, SLAB_ROWS * sizeof(*fresh));
	}
	return &slab[i % SLAB_ROWS];
}

/*
 * Index level @k, mapped now if @map and it is not yet; NULL if it is
 * not there.  Relaxed, as row_claim's slabs: a fresh level is all empty
 * slots, the kernel's zeroes.
 */
static struct plk_lockrow **level(int k, bool map)
{
	size_t bytes = ((size_t)LEVEL0_SLOTS << k) * sizeof(struct plk_lockrow *);
	struct plk_lockrow **l = __atomic_load_n(&levels[k], __ATOMIC_RELAXED), **fresh;

	if (l || !map)
		return l;
	fresh = stat_map(bytes);
	if (fresh == MAP_FAILED)
		return NULL;
	if (__atomic_compare_exchange_n(&levels[k], &l, fresh, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return fresh;
	munmap(fresh, bytes);
	return l;
}

/*
 * Level @l (slot mask @mask) of the search for @addr (hash @h): its row,
 * found or, if @kind >= 0, published in the first empty slot (from
 * *@fresh, claimed here if NULL, and then taken); NULL with *@stop set if
 * the search ends here without one (an empty slot when only finding, no
 * memory for a row); NULL alone if PROBES slots hold other locks.
 *
 * Why an address has one row: slots only ever go from empty to a row,
 * so an insert takes the first slot of the address's sequence (PROBES
 * slots a level, level after level) that was empty, and every other
 * thread inserting that address walks the same sequence: it finds the
 * row there, or meets the slot empty, loses the CAS and finds the row.
 * Acquire on the slot pairs with the CAS's release, which publishes the
 * row's address and kind.
 */
static struct plk_lockrow *probe_level(struct plk_lockrow **l, unsigned long mask, unsigned long h,
                                    const void *addr, int kind, struct plk_lockrow **fresh,
                                    bool *stop)
{
	for (unsigned long j = 0; j < PROBES; j++) {
		struct plk_lockrow **slot = &l[(h + j) & mask];
		struct plk_lockrow *r = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if (!r) {
			if (kind < 0 || (!*fresh && !(*fresh = row_claim()))) {
				*stop = true;
				return NULL;
			}
			(*fresh)->addr = addr;
			(*fresh)->kind = kind;
			if (__atomic_compare_exchange_n(slot, &r, *fresh, 0, __ATOMIC_RELEASE,
			                                __ATOMIC_ACQUIRE)) {
				r = *fresh;
				*fresh = NULL;
				/* Release: the report, which finds rows by this flag
				 * rather than through the index, then reads addr and
				 * kind as written. */
				__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
				return r;
			}
		}
		if (r->addr == addr)
			return r;
	}
	return NULL;
}

/*
 * @addr's row; if it has none and @kind >= 0 (a ROW_*), a new one.  NULL if it has none, or there is no memory for
 * one (the operation is then not counted, and rows_lost says so).
 */
static struct plk_lockrow *row_of(const void *addr, int kind)
{
	unsigned long h = addr_hash(addr);
	struct plk_lockrow *fresh = NULL, *r = NULL;
	bool stop = false;

	for (int k = 0; k < LEVELS && !r && !stop; k++) {
		struct plk_lockrow **l = level(k, kind >= 0);

		if (!l)
			break;
		r = probe_level(l, ((unsigned long)LEVEL0_SLOTS << k) - 1, h, addr, kind, &fresh, &stop);
	}
	if (fresh)
		spare = fresh;  /* claimed, never published: this thread's next new lock's */
	if (!r && kind >= 0)
		__atomic_fetch_add(&rows_lost, 1, __ATOMIC_RELAXED);
	return r;
}

struct plk_lockrow *plk_lockstat_next(unsigned long *i)
{
	unsigned long end = __atomic_load_n(&rows_claimed, __ATOMIC_RELAXED);

	if (end > (unsigned long)SLABS * SLAB_ROWS)
		end = (unsigned long)SLABS * SLAB_ROWS;
	while (*i < end) {
		struct plk_lockrow *slab = __atomic_load_n(&slabs[*i / SLAB_ROWS], __ATOMIC_RELAXED);
		struct plk_lockrow *e;

		if (!slab) {
			*i = (*i / SLAB_ROWS + 1) * SLAB_ROWS;  /* never mapped: none published */
			continue;
		}
		e = &slab[(*i)++ % SLAB_ROWS];
		if (__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE))  /* pairs with probe_level's */
			return e;
	}
	return NULL;
}

unsigned long plk_lockstat_claimed(void)
{
	unsigned long n = __atomic_load_n(&rows_claimed, __ATOMIC_RELAXED);

	return n < (unsigned long)SLABS * SLAB_ROWS ? n : (unsigned long)SLABS * SLAB_ROWS;
}

unsigned long plk_lockstat_lost(void)
{
	return __atomic_load_n(&rows_lost, __ATOMIC_RELAXED);
}

/* --- counting -------------------------------------------------------- */

static void add(uint64_t *field, uint64_t v)
{
	__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

static void raise_max(uint64_t *max, uint64_t v)
{
	uint64_t m = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (v > m && !__atomic_compare_exchange_n(max, &m, v, 1, __ATOMIC_RELAXED,
	                                             __ATOMIC_RELAXED))
		;
}

static void held_add(struct plk_holdtime *h, uint64_t ns)
{
	add(&h->ns, ns);
	add(&h->n, 1);
	raise_max(&h->max_ns, ns);
}

/*
 * This thread's read holds being timed: the rwlock and when it was
 * taken (an rwlock's read holds overlap, so the row cannot keep their
 * start; a thread's nested read holds of one rwlock are told apart by
 * nothing, and timed as if released in any order).  A read hold past PLK_RD_TIMED at once is counted
 * but not timed.
 */
static __thread struct { const void *rw; uint64_t t; } rd_holds[PLK_RD_TIMED]
	__attribute__((tls_model("initial-exec")));
static __thread unsigned rd_nholds __attribute__((tls_model("initial-exec")));

/*
 * One lock call's outcome on row @e (see plk_lockstat_mutex); @write: a
 * write hold (mutexes too), else a read hold.  The clock is read once:
 * the acquisition's time, which ends the wait and starts the hold.
 */
static void count_acquire(struct plk_lockrow *e, bool write, int err, bool contended, uint64_t t0,
                          bool outermost, uintptr_t ra)
{
	uint64_t now;

	if (err == ETIMEDOUT) {
		if (contended)
			add(&e->timeouts, 1);
		return;
	}
	if (err != 0 && err != EOWNERDEAD)
		return;
	now = plk_now_ns();
	add(e->kind == PLK_ROW_RWLOCK && write ? &e->wr_uses : &e->uses, 1);
	if (contended) {
		add(&e->contended, 1);
		if (t0 && now > t0) {
			add(&e->wait_ns, now - t0);
			raise_max(&e->wait_max_ns, now - t0);
		}
		if (!__atomic_load_n(&e->contended_at.claimed, __ATOMIC_RELAXED))
			plk_site_take(&e->contended_at, ra);
	}
	if (!outermost)
		return;
	if (write) {
		/* The holder's own: written now, read back by it (or, for
		 * a NORMAL mutex, by whoever unlocks it) before the unlock. */
		__atomic_store_n(&e->hold_start, now, __ATOMIC_RELAXED);
	} else if (rd_nholds < PLK_RD_TIMED) {
		rd_holds[rd_nholds].rw = e->addr;
		rd_holds[rd_nholds++].t = now;
	}
}

void plk_lockstat_mutex(const void *m, uintptr_t ra, int err, bool contended, uint64_t t0,
                        bool outermost)
{
	struct plk_lockrow *e;

	if ((e = row_of(m, PLK_ROW_MUTEX)))
		count_acquire(e, true, err, contended, t0, outermost, ra);
}

void plk_lockstat_reacquired(const void *m, uintptr_t ra, int err, bool contended, bool outermost)
{
	struct plk_lockrow *e;

	if ((e = row_of(m, PLK_ROW_MUTEX))) {
		count_acquire(e, true, err, contended, 0, outermost, ra);
		if (contended && (err == 0 || err == EOWNERDEAD))
			add(&e->reacquired_contended, 1);
	}
}

void plk_lockstat_rwlock(const void *rw, uintptr_t ra, bool write, int err, bool contended,
                         uint64_t t0)
{
	struct plk_lockrow *e;

	if ((e = row_of(rw, PLK_ROW_RWLOCK)))
		count_acquire(e, write, err, contended, t0, true, ra);
}

void plk_lockstat_mutex_release(const void *m)
{
	struct plk_lockrow *e = row_of(m, -1);
	uint64_t t0;

	if (e && (t0 = __atomic_exchange_n(&e->hold_start, 0, __ATOMIC_RELAXED)) != 0)
		held_add(&e->held, plk_now_ns() - t0);
}

void plk_lockstat_rwlock_release(const void *rw, bool write)
{
	struct plk_lockrow *e;
	uint64_t t0 = 0;

	if (write) {
		plk_lockstat_mutex_release(rw);
		return;
	}
	for (unsigned i = rd_nholds; i-- > 0;)
		if (rd_holds[i].rw == rw) {
			t0 = rd_holds[i].t;
			rd_holds[i] = rd_holds[--rd_nholds];  /* the last fills the gap */
			break;
		}
	if (t0 && (e = row_of(rw, -1)))
		held_add(&e->rd_held, plk_now_ns() - t0);
}

void plk_lockstat_init(const void *lock, uintptr_t ra, bool rw)
{
	struct plk_lockrow *e = row_of(lock, rw ? PLK_ROW_RWLOCK : PLK_ROW_MUTEX);

	if (e && !__atomic_load_n(&e->init_at.claimed, __ATOMIC_RELAXED))
		plk_site_take(&e->init_at, ra);
}

void plk_lockstat_cond(const void *c)
{
	struct plk_lockrow *e;

	if ((e = row_of(c, PLK_ROW_COND)))
		add(&e->uses, 1);
}

static void lockstat_lent(const void *lock, unsigned kinds)
{
	struct plk_lockrow *e;

	if (!plk_lockstat_on)
		return;
	/* An rwlock's waiters are keyed by its address | PLK_RW_TAG
	 * (registry.h); every lock is at least 4-aligned. */
	lock = (const void *)((uintptr_t)lock & ~(uintptr_t)3);
	if ((e = row_of(lock, -1))) {  /* made when the lock was first taken */
		add(&e->donations, 1);
		for (int k = 0; k < 4; k++)
			if (kinds & (1u << k))
				add(&e->lent[k], 1);
	}
}

/* Fork child (see the top): the kernel zeroed the rows and the index, or
 * this does.  Stores only where a word is not 0 already: a store to a
 * page shared with the parent copies it. */
static void lockstat_fork_child(void)
{
	if (rows_kept_on_fork) {
		unsigned long end = rows_claimed;

		if (end > (unsigned long)SLABS * SLAB_ROWS)
			end = (unsigned long)SLABS * SLAB_ROWS;
		for (int k = 0; k < LEVELS; k++)
			if (levels[k])
				memset(levels[k], 0, ((size_t)LEVEL0_SLOTS << k) * sizeof(*levels[k]));
		for (unsigned long i = 0; i < end; i += SLAB_ROWS)
			if (slabs[i / SLAB_ROWS])
				memset(slabs[i / SLAB_ROWS], 0, SLAB_ROWS * sizeof(struct plk_lockrow));
	}
	if (rows_lost)
		rows_lost = 0;
}

static const struct plk_observer_ops lockstat_ops = {
	.lent = lockstat_lent,
	.fork_child = lockstat_fork_child,
};

void plk_lockstat_enable(void)
{
	plk_callsite_init();
	/* The first level and slab now, while memory is there: a program
	 * that caps its address space later still has its first locks
	 * counted. */
	/* Does the kernel do MADV_WIPEONFORK?  A zero-length request
	 * says so (EINVAL, ENOSYS or EPERM if not) and changes nothing. */
	rows_kept_on_fork = madvise(NULL, 0, MADV_WIPEONFORK) != 0;
	(void)level(0, true);
	slabs[0] = stat_map(SLAB_ROWS * sizeof(struct plk_lockrow));
	if (slabs[0] == MAP_FAILED)
		slabs[0] = NULL;
	__atomic_store_n(&plk_lockstat_on, true, __ATOMIC_RELEASE);
	plk_observers_install(&lockstat_ops);
}

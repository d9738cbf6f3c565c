/* SPDX-License-Identifier: MIT */
/*
 * rwlock.c - the proxylock rwlock's protocol: the slow paths of read and
 * write locking, timeouts and unlock; granting; what waiters lend.
 *
 * The word's encoding and the fast paths are rwlockword.h's; reader
 * tracking (read sets) is rdset.h's; attributes, init and destroy are
 * rwlockattr.c's.  What a queue lends its holders is chain.c's
 * (plk_chain_rw_update): every queued waiter, reader or writer, lends to
 * every holder, the writer or each reader.  The public calls describe
 * each hold to ThreadSanitizer and Valgrind's tools (tsan.h, vgclient.h)
 * when they watch, as mutex.c does.
 *
 * Waiters park under plk_rw_key(rw) through the parking lot (park.h),
 * which owns the bucket, the queue order, the park words, the sleep,
 * the leaving on a deadline and the flush; the slow paths here say what
 * to validate (rd_validate, wr_validate) and whom to grant (the
 * grant_unpark hooks).  Whoever makes the lock grantable grants it under
 * the bucket (a writer: the word names it; readers: the count includes
 * them, and each one's reserved slot names the rwlock), and only then
 * are their park words set to HANDED.  Which waiters are granted
 * (grant()):
 *   - free, and PREFER_WRITER_NONRECURSIVE or no reader queued: the
 *     first queued writer; under the prefer-reader kinds, while it has
 *     waited less than PROXYLOCK_HANDOFF_US, it is instead taken off
 *     the queue and woken to compete, as a mutex's waiter (RW8): a
 *     running thread may take the lock first;
 *   - otherwise, not write-held: every queued reader (at most
 *     PLK_UNPARK_BATCH per bucket hold; the granter comes back for the rest),
 *     unless PREFER_WRITER_NONRECURSIVE and a writer is queued.
 * PREFER_WRITER is PREFER_READER, as in glibc (recursive read locks
 * must not deadlock behind a waiting writer).  Under those kinds a new
 * reader joins a read-held lock past a queued writer without the bucket
 * (rdlock_slow's spin), unnamed until the next scan: the queued writer
 * rescans every PLK_RW_RESCAN_NS (rw_rescan).  A scan marks each slot it
 * names PLK_RD_NAMED (rdset.h); a reader whose slot carries no mark
 * leaves without the bucket unless its hold is the last.
 *
 * Invariants, under the bucket lock of rw (stated and argued once, in
 * docs/design.md, "Invariants (rwlock)"; cited here by name):
 *  RW1  queued waiters mean PLK_RW_WAITERS
 *  RW2  PLK_RW_WAITERS is cleared only with nobody queued, withdrawing
 *       from every publisher
 *  RW3  no lost wake-up: grant() would grant nobody when the bucket drops
 *  RW4  a grant shows in the word and slot before HANDED
 *  RW5  no reader missed: a slot names rw across the reader's count
 *  RW6  no lend after leaving (retraction, ABA, marks)
 *  RW7  with PLK_RW_WAITERS set no fast path touches a solo word or moves
 *       the count from or to 0
 *  RW8  a writer woken to compete owes the queue the next release
 *  RW9  SOLO and __solo name a reader only while its one hold is counted
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>

#include "chain.h"
#include "config.h"
#include "donate.h"
#include "invcheck.h"
#include "park.h"
#include "rdset.h"
#include "registry.h"
#include "rwlockword.h"
#include "stats.h"
#include "tsan.h"
#include "vgclient.h"
#include "waitq.h"

/* rdlock_slow's and wrlock_slow's turns before they queue; a reader's
 * spin ends at once on a write-held lock (rdlock_slow), and a writer's
 * backoff (below) ends after 12 reads of a held word. */
#define PLK_RW_SPIN 100
/* A PREFER_WRITER_NONRECURSIVE writer's turns while readers hold, then
 * it queues (and its PLK_RW_WAITERS holds new readers back): the count
 * seldom reaches 0 while it is watched, and turns one pause apart burn
 * CPU the readers need (4 threads on 2 CPUs, 10% writes: 12% of all time
 * was in a writer's spin; docs/results.md, "The writer's spin while
 * readers hold"). */
#define PLK_RW_SPIN_READ_HELD 10
/* The other kinds' writer backs off instead while the lock is held and
 * nobody is queued: it reads the word, pausing 1, 2, 4, ...
 * PLK_RW_WRITER_PAUSE_MAX times between reads (12 reads, 2047 pauses,
 * about 37 us on this project's x86 VM), then queues.  Its queueing sets
 * PLK_RW_WAITERS, which sends every reader off the fast path until it is
 * through, so it costs far more than one sleep; few reads leave the
 * readers' line alone.  Caps of 64 and 256 measured less; 4096 (150 us
 * of spinning) more, but a spinner takes its CPU from everything else
 * (docs/results.md, "The writer's backoff"). */
#define PLK_RW_WRITER_PAUSE_MAX 1024u
/* A queued writer's rescan period (rw_rescan): how long a reader that
 * joined past it may read unnamed, not lent to. */
#define PLK_RW_RESCAN_NS 1000000u

/* wait_parked's answer to a writer woken to compete (not granted): go back
 * to the bucket, take the lock or queue again at the head. */
#define RW_RETRY (-1)

/* --- helpers --------------------------------------------------------- */

static bool rw_unusable(const proxylock_rwlock_t *rw, uint32_t w)
{
	return !plk_rw_flags_valid(rw) || w == PLK_RW_DESTROYED;
}

static bool write_held_by(uint32_t w, uint32_t self)
{
	return (w & PLK_RW_WRITER) && plk_owned_by_self(w & PLK_RW_VALUE, self);
}

/* Word @w is a solo read hold of the caller (@self). */
static bool solo_held_by(uint32_t w, uint32_t self)
{
	return (w & (PLK_RW_WRITER | PLK_RW_SOLO)) == PLK_RW_SOLO &&
	       plk_owned_by_self(w & PLK_RW_COUNT, self);
}

/* The caller (@self) looks like @rw's converted reader (RW9): word @w
 * counts, and __solo (@solo) names us.  The acquire load of @w that a
 * join's release CAS wrote orders its store to __solo before our read.
 * Outside the bucket a hint only: a join whose CAS failed (our solo
 * hold had left) stores __solo and takes it back within its bucket
 * hold, so only a look under the bucket is sure (unlock_slow). */
static bool converted_by(uint32_t w, uint32_t solo, uint32_t self)
{
	uint32_t tid = solo & PLK_RW_COUNT;

	return !(w & (PLK_RW_WRITER | PLK_RW_SOLO)) && tid && plk_owned_by_self(tid, self);
}

/* The caller holds @rw for reading in no slot of its read set: solo, or
 * as its converted reader (a later read hold takes a slot of its own);
 * a hint as converted_by. */
static bool holds_unslotted(const proxylock_rwlock_t *rw)
{
	uint32_t w = plk_rw_word(rw), self = plk_tid();

	return solo_held_by(w, self) || converted_by(w, plk_rw_solo_field(rw), self);
}

/*
 * Add @n read holds to @rw's word @w by CAS, under @rw's bucket; false if
 * the word moved.  A solo word is converted (RW9): its reader goes into
 * __solo before the CAS (whose release publishes it; scanners hold the
 * bucket), and __solo says SHARED from then on.  Its CAS fails only if
 * the solo reader left by its fast CAS meanwhile (PLK_RW_WAITERS clear):
 * __solo gets its old value back, under the bucket, before any scan.
 */
static bool join_locked(proxylock_rwlock_t *rw, uint32_t w, uint32_t n)
{
	uint32_t old;

	if (!(w & PLK_RW_SOLO))
		return plk_rw_cas(rw, w, w + n);
	old = plk_rw_solo_field(rw);
	__atomic_store_n(&rw->__solo, PLK_RW_SHARED | (w & PLK_RW_COUNT), __ATOMIC_RELAXED);
	if (plk_rw_cas(rw, w, (w & PLK_RW_WAITERS) | (1 + n)))
		return true;
	__atomic_store_n(&rw->__solo, old, __ATOMIC_RELAXED);
	return false;
}

/* First queued writer of @rw in locked @b, and (in *@reader) whether a
 * reader is queued. */
static struct plk_thread *first_writer(struct plk_bucket *b, const proxylock_rwlock_t *rw,
                                       bool *reader)
{
	struct plk_thread *t, *wr = NULL;

	*reader = false;
	plk_waitq_for_each(b, plk_rw_key(rw), t) {
		if (t->rw_writer) {
			if (!wr)
				wr = t;
		} else {
			*reader = true;
		}
		if (wr && *reader)
			break;
	}
	return wr;
}

/* May a new reader join @rw, word @w, now?  Bucket @b locked. */
static bool reader_may_join(struct plk_bucket *b, const proxylock_rwlock_t *rw, uint32_t w)
{
	bool reader;

	if (w & PLK_RW_WRITER)
		return false;
	if (plk_rw_kind(rw) != PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE)
		return true;
	return first_writer(b, rw, &reader) == NULL;
}

/*
 * May rdlock_slow's spin join @rw, word @w, by its CAS (no bucket)?  Not
 * write-held, not solo (a solo word is joined in the bucket, which
 * converts it: join_locked), the count not at its limit, and with
 * PLK_RW_WAITERS set only into a hold already counted: a free lock with the bit set is
 * being granted by its releaser under the bucket, whose word_update
 * would overwrite our increment (RW7).  The kind is the caller's.
 */
static bool spin_may_join(uint32_t w)
{
	uint32_t n = w & PLK_RW_COUNT;

	return !(w & (PLK_RW_WRITER | PLK_RW_SOLO)) && n != PLK_RW_READERS_MAX &&
	       (n > 0 || !(w & PLK_RW_WAITERS));
}

/* Change @rw's word under its bucket to @expr, computed from each fresh
 * value @w: only the fast paths can change it meanwhile, and with
 * PLK_RW_WAITERS set only the read count, never to or from 0 (recursive
 * holds and their unlocks, the spin's joins into a held lock, unnamed
 * readers' unlocks that leave a hold: RW7). */
#define word_update(rw, w, expr) do {                                  \
		(w) = plk_rw_word(rw);                                 \
		while (!plk_rw_cas((rw), (w), (expr)))                 \
			(w) = plk_rw_word(rw);                         \
	} while (0)

/*
 * @rw's PLK_RW_WAITERS has just been cleared (bucket held; nobody is
 * queued, so no lend keyed by @rw should be left anywhere).  A slot
 * naming @rw may belong to a thread between its publication and its
 * count increment (rwlockword.h), to which a scan lent while the bit
 * was set; its CAS may still succeed once the word is back to the value
 * it read (ABA: free, or the same count), and it would then read with a
 * lend nobody withdraws and unlock by the fast path.  So every lend to
 * a thread a slot names goes now (applies deferred; for the readers a
 * grant just made, there is none).  While the bit is clear nobody lends
 * through @rw; a publisher that joins once it is set again is lent to
 * then.  The model found this (test/model: BROKEN_RW_ABA, RW6).
 */
static void withdraw_publishers(proxylock_rwlock_t *rw)
{
	/* Every set, not the first PLK_RW_LEND_MAX readers: lends given
	 * at different times may have reached publishers past any cap.  A
	 * thread not lent to defers nothing. */
	uint32_t n = plk_rdset_count();

	for (uint32_t i = 0; i < n; i++) {
		pid_t tid = plk_rdset_reader_at(rw, i, false);

		if (tid)
			plk_donate_withdraw_tid(tid, rw);
	}
}

/* --- granting: the unpark hooks --------------------------------------- */

/* What grant() chose for one bucket hold (struct grant's @to). */
enum grant_to {
	GRANT_NONE,         /* nobody */
	GRANT_WAKE_WRITER,  /* the first writer, woken to compete (RW8) */
	GRANT_WRITER,       /* the first writer, handed L */
	GRANT_READERS,      /* the queued readers, a batch */
};

struct release;
static bool release_locked(struct plk_bucket *b, proxylock_rwlock_t *rw, struct release *rel);

/*
 * One grant of @rw, a batch (PLK_UNPARK_BATCH) per bucket hold: the
 * hooks of grant_unpark share it.  Who unparks is the parking lot's
 * (park.h: the bucket, the queue order, the park words last, the wakes
 * and the flush after the drop); what each is told is grant()'s.
 */
struct grant {
	proxylock_rwlock_t *rw;
	uint64_t now_ns;       /* read before the bucket: no syscall under it */
	struct release *rel;   /* an unlock's release, made in the first hold; NULL: none */
	enum grant_to to;      /* this hold's choice */
	struct plk_thread *wr; /* the first queued writer */
	uint32_t w;            /* the word the choice was made on */
	uint32_t n;            /* taken off in this hold */
#ifdef PLK_DEBUG_INVARIANTS
	struct plk_thread *inv_taken[PLK_UNPARK_BATCH];  /* this hold's readers (RW4) */
	bool inv_chose;        /* grant() ran in this hold: @rw is alive (grant_begin) */
#endif
};

/*
 * Choose whom to grant @rw in locked @b (the rules atop this file): into
 * @g->to, true if anyone.  The woken writer (RW8) is the first writer
 * of a free lock under the prefer-reader kinds with no reader queued
 * while it has waited less than PROXYLOCK_HANDOFF_US; once it has, it is
 * handed L instead.
 */
static bool grant(struct plk_bucket *b, struct grant *g)
{
	proxylock_rwlock_t *rw = g->rw;
	bool prefer_w = plk_rw_kind(rw) == PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE;
	uint32_t w = g->w = plk_rw_word(rw);
	bool reader;

	PLK_INV_ONLY(g->inv_chose = true);

	if ((w & PLK_RW_WRITER) || !(w & PLK_RW_WAITERS))
		return false;
	g->wr = first_writer(b, rw, &reader);
	if (plk_rw_readers(w) == 0 && g->wr && !reader && !prefer_w &&
	    !plk_waited_bound(g->wr, g->now_ns))
		g->to = GRANT_WAKE_WRITER;
	else if (plk_rw_readers(w) == 0 && g->wr && (prefer_w || !reader))
		g->to = GRANT_WRITER;
	else if (reader && !(prefer_w && g->wr))
		g->to = GRANT_READERS;
	return g->to != GRANT_NONE;
}

/*
 * Under @rw's bucket, before each hold's choice: an unlock's release
 * (release_locked), once; else, coming back for more after a full
 * batch, a look at the queue before @rw is read.  Coming back, @rw's
 * memory is not ours to read until we see someone still queued on it:
 * the readers just granted may have unlocked, granted the rest, and the
 * last one destroyed and freed @rw (legal once it is unheld and nobody
 * waits; glibc bug 13690 is the same race).  So the bucket is found by
 * @rw's address alone and its queue looked at (keys compared, nothing
 * dereferenced) before grant() reads the word and flags: a queued
 * waiter is inside a call on @rw, which is alive until it returns.
 * (Memory reused at the same address for a new rwlock with waiters:
 * grant() then grants what that one's state allows, as any bucket hold
 * may.)  No plk_chain_rw_prepare either, which reads the word: a batch
 * adds as holders only queued waiters, which have records, and its lend
 * goes to holders lent to before, at their join or grant.
 */
static bool grant_begin(struct plk_bucket *b, void *ctx)
{
	struct grant *g = ctx;
	struct release *rel = g->rel;

	g->to = GRANT_NONE;
	g->n = 0;
	g->rel = NULL;
	PLK_INV_ONLY(g->inv_chose = false);
	if (rel)
		plk_inv_rw(b, g->rw);  /* an unlock's hold: @rw is ours, alive */
	if (rel ? !release_locked(b, g->rw, rel) : !plk_waitq_first(b, plk_rw_key(g->rw)))
		return false;
	return grant(b, g);
}

/* Whom of @rw's queue this hold takes: the first writer alone, or the
 * readers, as many as the count allows. */
static enum plk_unpark_pick grant_filter(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	struct grant *g = ctx;

	(void)b;
	if (g->to != GRANT_READERS)
		return g->n ? PLK_UNPARK_STOP : t == g->wr ? PLK_UNPARK_TAKE : PLK_UNPARK_SKIP;
	if (t->rw_writer)
		return PLK_UNPARK_SKIP;
	/* From the word grant() read: spin joins may have raised the count
	 * since (RW7), past the limit with what this grant adds; that needs
	 * about 2^29 holds, the count's known limit (docs/design.md, Known
	 * limits). */
	if (plk_rw_readers(g->w) + g->n == PLK_RW_READERS_MAX)
		return PLK_UNPARK_STOP;  /* the rest wait for a reader to leave */
	return PLK_UNPARK_TAKE;
}

/*
 * The woken writer is off @rw's queue (RW8): it comes back to the
 * bucket and takes L or queues again at the head; a running thread may
 * take L first.  L stays free; the bit stays while others are queued (a
 * bucket join or the woken writer's take keeps it for them), else goes
 * as a release's.
 */
static uint32_t writer_woken(struct plk_bucket *b, proxylock_rwlock_t *rw)
{
	uint32_t w;

	if (!plk_waitq_first(b, plk_rw_key(rw))) {
		plk_inv_rw_rw2_clear(b, rw);
		word_update(rw, w, w & ~PLK_RW_WAITERS);
		withdraw_publishers(rw);
	}
	return PLK_PARK_WOKEN;
}

/* The first writer @wr is off @rw's queue: L is its. */
static uint32_t writer_handed(struct plk_bucket *b, proxylock_rwlock_t *rw, struct plk_thread *wr)
{
	bool more = plk_waitq_first(b, plk_rw_key(rw)) != NULL;
	uint32_t w;

	/* RW4: the word names it before its park word says so (the
	 * parking lot sets that last). */
	word_update(rw, w, PLK_RW_WRITER | (uint32_t)wr->tid | (more ? PLK_RW_WAITERS : 0));
	if (!more)
		withdraw_publishers(rw);
	plk_chain_rw_update(b, rw);  /* the queue lends to its new holder */
	plk_stat_inc(handoffs);
	plk_inv_rw_rw4(rw, wr);
	return PLK_PARK_HANDED;
}

/* @t is off the queue: what it is told. */
static uint32_t grant_unparked(struct plk_bucket *b, struct plk_thread *t, void *ctx)
{
	struct grant *g = ctx;

	g->n++;
	if (g->to == GRANT_WAKE_WRITER) {
		plk_inv_woken(b, t, plk_rw_key(g->rw));  /* it owes the queue L's next release */
		return writer_woken(b, g->rw);
	}
	if (g->to == GRANT_WRITER)
		return writer_handed(b, g->rw, t);
	/* Slot first, count after (RW5: grant_finish), both before HANDED
	 * (RW4). */
	if (t->rw_grant_slot)
		__atomic_store_n(t->rw_grant_slot, (uintptr_t)g->rw, __ATOMIC_RELAXED);
	PLK_INV_ONLY(g->inv_taken[g->n - 1] = t);
	return PLK_PARK_HANDED;
}

/*
 * After the readers taken (@n of them) and before their park words:
 * count them into @rw's word (@w as grant() read it), then lend or
 * withdraw.
 */
static void count_readers(struct plk_bucket *b, proxylock_rwlock_t *rw, uint32_t w, uint32_t n)
{
	/* PLK_RW_WAITERS stays while anyone is queued, and also while
	 * readers from before this grant hold: one of them may be inside
	 * its unlock with its slot already cleared, lent to by a scan; the
	 * bit sends it through the bucket and its withdrawal (RW6). */
	bool more = plk_waitq_first(b, plk_rw_key(rw)) != NULL;
	bool keep = more || plk_rw_readers(w) > 0;

	if (w & PLK_RW_SOLO) {
		/* Into a solo hold (so keep): joined by converting it, its
		 * reader into __solo first (RW9).  With the bit set nothing
		 * but the bucket changes a solo word (RW7): the first CAS
		 * takes; the loop is for form. */
		while (!join_locked(rw, w, n))
			w = plk_rw_word(rw);
	} else {
		word_update(rw, w, ((w & PLK_RW_COUNT) + n) | (keep ? PLK_RW_WAITERS : 0));
	}
	if (keep)
		plk_chain_rw_update(b, rw);  /* the new readers are lent to too, or
		                               with nobody queued, nobody is */
	else
		withdraw_publishers(rw);
}

static void grant_finish(struct plk_bucket *b, int n, void *ctx)
{
	struct grant *g = ctx;

	if (g->to == GRANT_READERS)
		count_readers(b, g->rw, g->w, (uint32_t)n);
	PLK_INV_ONLY(if (g->to == GRANT_READERS)
	                     for (int i = 0; i < n; i++)
	                             plk_inv_rw_rw4(g->rw, g->inv_taken[i]));
	/* RW1, RW2, RW9 as the bucket drops, if @rw is alive (grant_begin) */
	PLK_INV_ONLY(if (g->inv_chose) plk_inv_rw(b, g->rw));
}

/*
 * Whoever makes @rw grantable grants it with these (RW3), batch after
 * batch while a batch fills up: plk_unpark_all (unlock_slow), or
 * plk_unpark_held in the hold of a waiter's leaving (rw_timedout).
 */
static const struct plk_unpark_ops grant_unpark = {
	.begin = grant_begin,
	.filter = grant_filter,
	.unparked = grant_unparked,
	.finish = grant_finish,
};

/* --- waiting ---------------------------------------------------------- */

/* How a read lock records itself in the caller's read set. */
struct rd_hold {
	struct plk_rdset *s;  /* NULL: untracked */
	int slot;             /* its slot (or -1: untracked) */
	bool recursive;       /* the slot held @rw already */
	bool retracted;       /* a publication of ours failed its increment */
};

static void rd_not_reader(proxylock_rwlock_t *rw);

/* Find or reserve the caller's slot for @rw (no internal lock held). */
static void rd_hold_prepare(proxylock_rwlock_t *rw, struct rd_hold *h)
{
	uintptr_t other;

	h->s = plk_rdset_self();
	h->recursive = false;
	h->retracted = false;
	h->slot = -1;
	if (!h->s)
		return;
	h->retracted = h->s->retracted;  /* the fast path's */
	other = h->s->retracted_rw;
	h->s->retracted = 0;
	h->s->retracted_rw = 0;
	if (h->retracted && other && other != (uintptr_t)rw) {
		/* Left by a refused handler, on another rwlock: withdrawn
		 * with its own key, after a hold of its bucket (as
		 * rd_fail_unlocked).  That rwlock may be gone, so it is not
		 * read: a lend it gives us as its lone reader (RW9), if we
		 * are one, goes too, until its queue's next update. */
		plk_waitq_unlock(plk_waitq_lock((proxylock_rwlock_t *)other));
		rd_not_reader((proxylock_rwlock_t *)other);
		h->retracted = false;
	}
	if ((h->slot = plk_rdset_find(h->s, (uintptr_t)rw)) >= 0)
		h->recursive = true;
	else
		h->slot = plk_rdset_free_slot(h->s);
}

/* A publication whose increment failed: not a reader after all.  The
 * slot stays reserved.  A writer may have named us meanwhile (no
 * synchronisation orders its scan before our store); that is withdrawn
 * in our next bucket hold if we queue, else by rd_not_reader() after it. */
static void rd_hold_retract(struct rd_hold *h)
{
	if (h->slot >= 0 && !h->recursive) {
		__atomic_store_n(&h->s->lock[h->slot], 0, __ATOMIC_RELAXED);
		h->retracted = true;
	}
}

/*
 * No internal lock held, after a bucket hold of @rw in which we were
 * seen not to read-hold @rw (our slot clear or pending): every later
 * scan sees that, so withdrawing now removes any lend a scan made while
 * a slot of ours was published without a successful increment (the fast
 * path's and the spin's failed CAS), or before our last unlock (RW6).
 */
static void rd_not_reader(proxylock_rwlock_t *rw)
{
	struct plk_thread *me = plk_thread_self_cached();

	if (me || (plk_thread_find((pid_t)plk_tid()) && (me = plk_thread_self()))) {
		plk_donate_withdraw(me, rw);
		plk_chain_flush();
	}
}

/* The read hold was not taken: give back a reserved slot. */
static void rd_hold_abandon(struct rd_hold *h)
{
	if (h->slot >= 0 && !h->recursive)
		plk_rdset_put(h->s, h->slot);
}

/* No read hold after all (the bucket was taken since any retraction,
 * or none happened): give the slot back, withdraw any stale lend. */
static int rd_fail(proxylock_rwlock_t *rw, struct rd_hold *h, int err)
{
	rd_hold_abandon(h);
	/* Still a reader by a hold in no slot (RW9): a lend keyed by @rw
	 * on us is a holder's, named by every scan; it goes with that hold
	 * (unlock_other).  We are inside a call on @rw: it is alive. */
	if (h->retracted && !holds_unslotted(rw))
		rd_not_reader(rw);
	return err;
}

/*
 * rd_fail outside any bucket hold: a retraction's withdrawal must come
 * after one (every later scan then sees our slot clear), so take and
 * drop @rw's bucket first if there is one to withdraw.  Every exit of
 * rdlock_slow after rd_hold_prepare that did not hold the bucket goes
 * through here, so the fast path's retraction (s->retracted) is never
 * left for a later call on another rwlock to consume with the wrong key
 * (a refused handler's is left keyed: rw_refused).
 */
static int rd_fail_unlocked(proxylock_rwlock_t *rw, struct rd_hold *h, int err)
{
	if (h->retracted)
		plk_waitq_unlock(plk_waitq_lock(rw));
	return rd_fail(rw, h, err);
}

/* The read hold was taken (the slot, if any, names the rwlock). */
static void rd_hold_done(struct rd_hold *h)
{
	if (h->slot < 0) {
		plk_tls_rd_untracked++;
		plk_stat_inc(chain_truncated);  /* a reader no writer can lend to */
		return;
	}
	h->s->depth[h->slot]++;
	if (h->retracted && !h->recursive)
		h->s->withdraw[h->slot] = 1;  /* a stale lend may sit beside the real one
		                                 (joined with WAITERS set, or by
		                                 rw_yielding) */
}

/*
 * Joined @rw by a CAS that saw PLK_RW_WAITERS clear (rdlock_slow's spin)
 * after a retraction a scan may have lent to: under the bucket, with
 * the bit still clear, any lend keyed by @rw on us is stale (lends are
 * given only with the bit set, and whoever cleared it withdrew from
 * every slot naming @rw, ours retracted then), so it goes now, not at
 * our last unlock: else we read with a departed writer's lend (the
 * model's BROKEN_RW_STALE).  The apply is deferred to the flush after
 * the drop.  With the bit set again, a writer may since have lent to us
 * for real (our slot names @rw): withdraw[] at the last unlock, as
 * before.
 */
static void rd_joined_clear(proxylock_rwlock_t *rw, struct rd_hold *h)
{
	struct plk_bucket *b;

	if (!h->retracted || h->recursive)
		return;
	b = plk_waitq_lock(rw);
	if (!(plk_rw_word(rw) & PLK_RW_WAITERS)) {
		plk_donate_withdraw_tid((pid_t)plk_tid(), rw);
		h->retracted = false;
	}
	plk_waitq_unlock(b);
	plk_chain_flush();
}

/* Publish slot @h before the increment that makes us a reader (RW5). */
static void rd_hold_publish(proxylock_rwlock_t *rw, struct rd_hold *h, uintptr_t tag)
{
	if (h->slot >= 0 && !h->recursive)
		__atomic_store_n(&h->s->lock[h->slot], (uintptr_t)rw | tag, __ATOMIC_RELAXED);
}

/* A solo word nobody waits on (not a destroyed one: it has bit 29 too). */
#define SOLO_UNWAITED(w) (((w) & (PLK_RW_WRITER | PLK_RW_SOLO | PLK_RW_WAITERS)) == PLK_RW_SOLO)

/*
 * Join @rw's solo hold with nobody queued, in the bucket: the join
 * converts it (join_locked).  False if the word changed meanwhile (its
 * reader left, or a waiter came): our publication is taken back inside
 * the same bucket hold, before any scan could see it.  The bit is clear:
 * nobody lends; a retraction's lend is stale and goes now, applied at
 * the flush (as rdlock_slow's bucket join with the bit clear).
 */
static bool solo_join(proxylock_rwlock_t *rw, struct rd_hold *h)
{
	struct plk_bucket *b = plk_waitq_lock(rw);
	uint32_t w = plk_rw_word(rw);
	bool joined = false;

	if (SOLO_UNWAITED(w)) {
		rd_hold_publish(rw, h, 0);
		joined = join_locked(rw, w, 1);
		if (!joined && h->slot >= 0 && !h->recursive)
			__atomic_store_n(&h->s->lock[h->slot], 0, __ATOMIC_RELAXED);
		if (joined && h->retracted && !h->recursive) {
			plk_donate_withdraw_tid((pid_t)plk_tid(), rw);
			h->retracted = false;
		}
	}
	plk_waitq_unlock(b);
	if (joined)
		plk_chain_flush();
	return joined;
}

/* The lone reader @rw names, raw (a TID, maybe a fork alias): the solo
 * word's, else the converted one in __solo; 0 if none or write-held. */
static uint32_t lone_reader_named(const proxylock_rwlock_t *rw)
{
	uint32_t w = plk_rw_word(rw);

	if (w & PLK_RW_WRITER)
		return 0;
	return (w & PLK_RW_SOLO) ? (w & PLK_RW_COUNT) : (plk_rw_solo_field(rw) & PLK_RW_COUNT);
}

/*
 * A lone read hold (solo, or converted: RW9) is in no read set, so the
 * key destructor that drops an exiting thread's counted holds never
 * sees it: a thread that exits holding one stays named in @rw for good
 * (a program error), and every lend update would lend to its TID, and
 * so to any later thread of ours given that TID.  So whoever is about
 * to make a lend update that may name a lone reader asks the kernel
 * first whether that reader still exists (plk_thread_exited_hint, as a
 * mutex waiter asks of its owner: before the bucket, no syscall under
 * it): a writer about to queue, and again at each of its rescans while
 * queued (wait_slice_over: every PLK_RW_RESCAN_NS, under every kind while a
 * lone reader is named), a reader about to take the bucket, a waiter
 * timing out.  Exited, the TID is marked dead in @rw under the bucket
 * (if still named; plk_rw_dead_reader), so that no lend update lends to
 * it again, and what was lent to it is withdrawn.  What this misses: a
 * TID reused by a new thread of ours between its reader's exit and the
 * next check (at most one rescan period while a writer waits, or before
 * any waiter came) reads as alive and is lent to, as a mutex's dead
 * owner's is (docs/design.md).
 */
static void dead_reader_check(proxylock_rwlock_t *rw)
{
	uint32_t named = lone_reader_named(rw);
	pid_t tid = named ? plk_owner_tid(named) : 0;
	struct plk_bucket *b;
	bool marked = false;

	if (!plk_chain_rw_kinds(rw) || !tid || named == plk_rw_dead_reader(rw) ||
	    tid == (pid_t)plk_tid() || !plk_thread_exited_hint(tid))
		return;
	b = plk_waitq_lock(rw);
	if (lone_reader_named(rw) == named) {
		__atomic_store_n(&rw->__reserved0[0], named, __ATOMIC_RELAXED);  /* bucket-ordered */
		marked = true;
	}
	plk_waitq_unlock(b);
	if (marked) {
		plk_donate_withdraw_tid(tid, rw);
		plk_chain_flush();
	}
}

/*
 * A writer queued on @rw, every PLK_RW_RESCAN_NS of its wait: first the
 * lone reader's check (dead_reader_check), then, under the prefer-reader
 * kinds, the rescan: readers may have joined past it by rdlock_slow's
 * spin, unnamed; the scan under the bucket names them and the queue
 * lends to them (RW5).  Only the first queued writer scans (the lend is
 * the whole queue's), and only a read-held lock (a writer holder is
 * named in the word).  Under PREFER_WRITER_NONRECURSIVE no reader joins
 * past a queued writer, so there is nothing to scan for.  We are inside
 * our own write-lock call on @rw, so it is alive (destroying or freeing
 * it now is the program's error), and its word may be peeked before the
 * bucket; under it, WAITING says we are still queued (a grant or a wake
 * dequeues and marks us there).
 */
static void rw_rescan(proxylock_rwlock_t *rw, struct plk_thread *me)
{
	struct plk_bucket *b;
	bool reader;

	dead_reader_check(rw);
	if ((plk_rw_word(rw) & PLK_RW_WRITER) ||
	    plk_rw_kind(rw) == PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE)
		return;
	plk_chain_rw_prepare(rw);
	b = plk_waitq_lock(rw);
	if (__atomic_load_n(&me->park, __ATOMIC_RELAXED) == PLK_PARK_WAITING &&
	    !(plk_rw_word(rw) & PLK_RW_WRITER) && first_writer(b, rw, &reader) == me)
		plk_chain_rw_update(b, rw);
	plk_waitq_unlock(b);
	plk_chain_flush();
}

/* @ns on CLOCK_MONOTONIC as a timespec. */
static struct timespec mono_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

/* Nanoseconds from now until @abstime on @clock (0: passed), at most
 * 2^60 (36 years: a slice's end, so a farther deadline, up to time_t's
 * largest, is as good as none; nothing here overflows). */
static uint64_t ns_until(clockid_t clock, const struct timespec *abstime)
{
	struct timespec now;
	int64_t d;

	clock_gettime(clock, &now);
	if (abstime->tv_sec < now.tv_sec)
		return 0;
	if (abstime->tv_sec - now.tv_sec > 1000000000)
		return UINT64_C(1) << 60;
	d = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
	return d > 0 ? (uint64_t)d : 0;
}

/* rw_timedout's leave: what its hooks share (ctx). */
struct rw_leave {
	proxylock_rwlock_t *rw;
	struct rd_hold *h;       /* a reader's pending hold; NULL: a writer */
	struct grant g;          /* the grant our leaving may allow */
	struct plk_unparked u;   /* ... its first batch, woken after the drop */
};

static void leave_prepare(struct plk_park *p, void *ctx)
{
	(void)p;
	plk_chain_rw_prepare(((struct rw_leave *)ctx)->rw);
}

/*
 * Under the bucket, in the parking lot's leave: if we were still queued
 * (now off), our pending slot goes, the queue lends anew, and whom our
 * leaving lets have @rw is granted in this same hold (RW3: a writer
 * that blocked readers behind it).  Returns 0 if we were granted
 * meanwhile, RW_RETRY if we (a writer) were woken meanwhile, else
 * ETIMEDOUT.
 */
static int leave_left(struct plk_bucket *b, struct plk_park *p, uint32_t st, bool queued,
                      void *ctx)
{
	struct rw_leave *lv = ctx;

	plk_inv_rw(b, lv->rw);  /* our own leaving (if queued) cannot break them */
	if (!queued)
		return st == PLK_PARK_HANDED ? 0 : RW_RETRY;
	if (lv->h)
		rd_hold_abandon(lv->h);  /* the pending slot: never a reader's */
	plk_chain_rw_update(b, lv->rw);
	plk_unpark_held(b, p->key, PLK_UNPARK_BATCH, &grant_unpark, &lv->g, &lv->u);
	return ETIMEDOUT;
}

static const struct plk_park_ops rw_leave_ops = {
	.prepare = leave_prepare,
	.left = leave_left,
};

/*
 * Our wait on @rw ended without a grant (deadline): leave
 * (leave_left).  Woken, we are off the queue and owe its next waiter
 * the lock's next release (RW8, as a mutex's M5): wrlock_slow takes L if
 * it is free, else queues again, and its wait, past the deadline, comes
 * back here queued.  Our leaving changes what the queue lends (or,
 * emptying it, withdraws every holder's entry; PLK_RW_WAITERS stays:
 * RW2).  The grant it allows goes on, after the drop, batch by batch
 * while they fill up, as an unlock's.
 */
static int rw_timedout(proxylock_rwlock_t *rw, struct plk_thread *me, struct rd_hold *h)
{
	struct rw_leave lv = {
		.rw = rw, .h = h,
		.g = { .rw = rw, .now_ns = plk_now_ns() },  /* before the bucket: no syscall under it */
	};
	struct plk_park p = { .key = plk_rw_key(rw), .me = me };
	int err;

	/* Our lend update may name a lone reader: ask again, unless our
	 * queueing asked less than a rescan period ago. */
	if (lv.g.now_ns - me->enq_ns >= PLK_RW_RESCAN_NS)
		dead_reader_check(rw);
	err = plk_park_leave(&p, &rw_leave_ops, &lv);
	plk_unpark_wake(&lv.u);
	if (lv.u.n == PLK_UNPARK_BATCH)
		plk_unpark_all(p.key, &grant_unpark, &lv.g);
	return err;
}

/*
 * rw_yielding's read join of word @w unless it shows @bar: a count by
 * its CAS, a solo word by converting it under the bucket (join_locked),
 * our slot published first either way (RW5; *@published says so).
 */
static bool yield_rd_join(proxylock_rwlock_t *rw, uint32_t w, uint32_t bar, struct rd_hold *h,
                          bool *published)
{
	struct plk_bucket *b;
	bool joined;

	if ((w & bar) || plk_rw_readers(w) == PLK_RW_READERS_MAX ||
	    ((w & PLK_RW_WAITERS) && plk_rw_readers(w) == 0))
		return false;  /* (never into a free lock with the bit: RW7) */
	rd_hold_publish(rw, h, 0);
	*published = true;
	if (!(w & PLK_RW_SOLO))
		return plk_rw_cas(rw, w, w + 1);
	b = plk_waitq_lock(rw);
	w = plk_rw_word(rw);
	joined = (w & PLK_RW_SOLO) && !(w & bar) && join_locked(rw, w, 1);
	plk_waitq_unlock(b);
	return joined;
}

/*
 * Out of memory for a record: wait without queueing (no donation).  A
 * new reader joins only with PLK_RW_WAITERS clear; a recursive one (it
 * reads already: its slot names @rw, or it holds @rw in none, RW9) also
 * with the bit set, as it would join in the bucket (reader_may_join),
 * unless the kind is PREFER_WRITER_NONRECURSIVE (glibc's semantics):
 * else a queued writer waits for its first hold while it yields for
 * ever.  Its increment leaves the bit and the holder set alone (it is
 * named and lent to already); bucket holders re-read the count in
 * word_update, and a count it raises was above 0, so no grant decision
 * changes.
 */
static int rw_yielding(proxylock_rwlock_t *rw, bool write, clockid_t clock,
                       const struct timespec *abstime, struct rd_hold *h)
{
	uint32_t self = plk_tid(), bar = PLK_RW_WRITER | PLK_RW_WAITERS;

	if (!write && (h->recursive || holds_unslotted(rw)) &&
	    plk_rw_kind(rw) != PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE)
		bar = PLK_RW_WRITER;
	for (;;) {
		uint32_t w = plk_rw_word(rw);
		bool published = false;

		if (write ? w == 0 && plk_rw_cas(rw, 0, PLK_RW_WRITER | self) :
		    yield_rd_join(rw, w, bar, h, &published))
			return 0;
		if (published)
			rd_hold_retract(h);  /* a scan may have named us meanwhile */
		if (!write)
			rd_hold_publish(rw, h, PLK_RD_PENDING);
		if (abstime && plk_deadline_passed(clock, abstime))
			return ETIMEDOUT;
		sched_yield();
	}
}

/*
 * A signal handler inside its own thread's internal critical section
 * (plk_ilock_busy): all it may have of @rw past the fast path needs
 * @rw's bucket (a lone reader's join, a queue, a retraction's
 * withdrawal), which its thread may hold, so it takes none and never
 * waits (docs/design.md, "Signal handlers inside the library"): EBUSY
 * for a try, EDEADLK for a lock.  Its fast path's retraction stays
 * pending (the read fast path refusing meanwhile), marked as @rw's, for
 * the thread's next slow read lock (rd_hold_prepare): with its thread
 * busy, a pending retraction is the handler's own (the slow path takes
 * one over before any internal lock).
 */
static int rw_refused(proxylock_rwlock_t *rw, uint32_t w, bool write, bool try)
{
	struct plk_rdset *s = plk_tls_rdset;

	if (rw_unusable(rw, w))
		return EINVAL;
	if (!write && s && s->retracted && !s->retracted_rw)
		s->retracted_rw = (uintptr_t)rw;
	if (try)
		return EBUSY;
	return plk_ilock_busy_refuse(write ? "a signal handler's contended rwlock write lock"
	                                   : "a signal handler's contended rwlock read lock");
}

/* --- joining the queue: what readers and writers share ---------------- */

/* rw_waiter's answer: no record, or the caller is queued already (a
 * handler's lock inside its thread's wait): wait by yielding. */
#define RW_YIELD (-2)

/*
 * A lock call that will wait (not a try), before its bucket: count the
 * contention, check the deadline, find the caller's record (*@me) and
 * re-read what it lends.  Returns 0, EINVAL (a bad deadline) or RW_YIELD
 * (rw_yielding: no record, or queued already).
 */
static int rw_waiter(proxylock_rwlock_t *rw, const struct timespec *abstime,
                     struct plk_thread **me)
{
	plk_stat_contended();
	if (abstime && !plk_timespec_valid(abstime))
		return EINVAL;
	if (!(*me = plk_thread_self()) || plk_blocked_key(*me))
		return RW_YIELD;
	/* Always re-read (0), unlike a mutex's waiter: its two syscalls
	 * delay the queueing, and without them the read-mostly cells with
	 * writes fell to a third, and still to 0.78-0.90 with the writer's
	 * backoff (docs/results.md, "The rwlock keeps its re-read"). */
	if (plk_chain_rw_kinds(rw))
		plk_donate_waiter_refresh(*me, 0);
	return 0;
}

/* Set PLK_RW_WAITERS in @rw's word @w (bucket held) unless it is set;
 * false if the word moved.  Acquire (plk_rw_cas): we synchronise with
 * every reader's release increment before it, so the scan in
 * plk_chain_rw_update sees their slots (RW5). */
static bool waiters_mark(proxylock_rwlock_t *rw, uint32_t w)
{
	return (w & PLK_RW_WAITERS) || plk_rw_cas(rw, w, w | PLK_RW_WAITERS);
}

/*
 * One wait on @rw, reader's or writer's: what the park hooks share
 * (ctx).  The phases: "join" (the validate hooks, rd_validate and
 * wr_validate: join or take @rw under the bucket, else set
 * PLK_RW_WAITERS and ask to be queued), "queue" (wait_queued: the lend),
 * "park" (wait_before_sleep, and for a writer whose queue may need it,
 * the rescanning slices: wait_sleep_until, wait_slice_over).
 */
struct rw_wait {
	proxylock_rwlock_t *rw;
	struct rd_hold *h;  /* a reader's hold; NULL: a writer */
	uint32_t self;      /* our TID, read before any bucket */
	bool try;           /* EBUSY instead of queueing */
	bool woken;         /* a writer woken to compete: back at the head, enq_ns kept (RW8) */
	bool rescan;        /* sleep in slices to rw_rescan (wait_before_sleep) */
	uint64_t now_ns;    /* read before the bucket (vDSO fallback: a syscall) */
	uint64_t next;      /* when the next rescan is due */
};

/* Phase "join", with no lock held, before each bucket hold: the queue's
 * lend may change under it, so a record for every holder first. */
static void wait_prepare(struct plk_park *p, void *ctx)
{
	(void)p;
	plk_chain_rw_prepare(((struct rw_wait *)ctx)->rw);
}

/* Phase "queue", under the bucket, just queued: the queue lends to us
 * too, and we to every holder. */
static int wait_queued(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	(void)p;
	plk_inv_back(b, p->me, p->key);  /* a woken writer queued again (RW8) */
	plk_chain_rw_update(b, ((struct rw_wait *)ctx)->rw);
	plk_inv_rw(b, ((struct rw_wait *)ctx)->rw);
	return PLK_PARK_SLEEP;
}

/*
 * Phase "park", with no lock held, queued and flushed.  A writer whose
 * queue lends sleeps in slices to rw_rescan every PLK_RW_RESCAN_NS where
 * readers may join past it (not PREFER_WRITER_NONRECURSIVE), or where a
 * lone reader is named when it parks (under PREFER_WRITER_NONRECURSIVE
 * the only time one can be: no reader joins past it, and a grant makes
 * counted readers), to ask whether that reader still exists.
 */
static int wait_before_sleep(struct plk_park *p, void *ctx)
{
	struct rw_wait *wt = ctx;
	proxylock_rwlock_t *rw = wt->rw;

	(void)p;
	wt->rescan = !wt->h && plk_chain_rw_kinds(rw) &&
	             (plk_rw_kind(rw) != PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE ||
	              lone_reader_named(rw) != 0);
	plk_stat_inc(sleeps);
	if (wt->rescan)
		wt->next = plk_now_ns() + PLK_RW_RESCAN_NS;
	return PLK_PARK_SLEEP;
}

/*
 * Phase "park": a rescanning writer's slices are on CLOCK_MONOTONIC (a
 * wall clock set back does not hold the rescans off), each to the next
 * rescan or, sooner, the caller's deadline; the next rescan's time
 * survives early returns (signals, stale wakes), so none starves it.
 * Once the deadline has passed, the last slice is the deadline itself.
 */
static const struct timespec *wait_sleep_until(struct plk_park *p, void *ctx, clockid_t *clock,
                                               struct timespec *slice)
{
	struct rw_wait *wt = ctx;
	uint64_t now, due = wt->next;

	if (!wt->rescan)
		return p->abstime;
	now = plk_now_ns();
	if (p->abstime) {
		uint64_t left = ns_until(p->clock, p->abstime);

		if (left == 0)
			return p->abstime;
		if (now + left < due)
			due = now + left;
	}
	*clock = CLOCK_MONOTONIC;
	*slice = mono_ts(due);
	return slice;
}

/* Phase "park": a slice ended; rescan once one is due (rw_rescan). */
static int wait_slice_over(struct plk_park *p, void *ctx)
{
	struct rw_wait *wt = ctx;

	if (plk_now_ns() >= wt->next) {
		rw_rescan(wt->rw, p->me);
		wt->next = plk_now_ns() + PLK_RW_RESCAN_NS;
	}
	return PLK_PARK_SLEEP;
}

/*
 * What a park that slept ended with (@st, plk_park's): 0 (handed),
 * RW_RETRY (a writer woken to compete: grant, RW8), or, the deadline
 * passed, rw_timedout's answer.
 */
static int wait_parked(proxylock_rwlock_t *rw, struct plk_thread *me, struct rd_hold *h,
                       uint32_t st)
{
	if (st == PLK_PARK_HANDED)
		return 0;
	if (st == PLK_PARK_WOKEN)
		return RW_RETRY;
	return rw_timedout(rw, me, h);
}

/* --- read lock -------------------------------------------------------- */

/*
 * rdlock_slow's spin, before any wait: join @rw by CAS without the
 * bucket while spin_may_join allows.  It joins past PLK_RW_WAITERS,
 * unless the kind is PREFER_WRITER_NONRECURSIVE (only there may a queued
 * writer hold a new reader back): a writer waits for the count to drain,
 * as glibc's does, and the new reader is named by its next scan (the
 * writer's rescan, rw_rescan), not at its join (RW5).  Never into a free
 * lock with the bit set: its releaser is granting it under the bucket,
 * maybe to a writer (RW7).  Returns true having joined (the caller
 * records the hold), false with no publication kept (RW6).
 */
static bool rd_spin(proxylock_rwlock_t *rw, struct rd_hold *h)
{
	bool pass = plk_rw_kind(rw) != PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE;
	bool published = false;
	uint32_t w;

	for (int i = 0; i < PLK_RW_SPIN; i++) {
		w = plk_rw_word(rw);
		if ((w & PLK_RW_WAITERS) && !pass)
			break;  /* others are queued: go and see whether we may join */
		/* Write-held: queue at once, as glibc's readers do.  Turns here
		 * took CPU from the writer (threads outnumbering CPUs), and a
		 * queued reader lends to it (where the lock lends); the
		 * writer's release wakes the readers (docs/results.md, "The
		 * readers' spin while a writer holds").  A solo word is joined in the bucket
		 * only (join_locked).  The model's turn on either word relaxes,
		 * changing nothing: this is a subset of it. */
		if (SOLO_UNWAITED(w)) {
			/* A kept publication is retracted first: solo_join
			 * publishes afresh (a second store would erase a mark). */
			if (published)
				rd_hold_retract(h);
			published = false;
			if (solo_join(rw, h))
				return true;
			continue;
		}
		if (w & (PLK_RW_WRITER | PLK_RW_SOLO))
			break;
		if (spin_may_join(w)) {
			/* Published once: storing again would erase a scan's
			 * PLK_RD_NAMED while its lend stays (rdset.h). */
			if (!published)
				rd_hold_publish(rw, h, 0);
			published = true;
			if (plk_rw_cas(rw, w, w + 1)) {
				rd_joined_clear(rw, h);
				return true;
			}
			/* Published across a change the spin may join past
			 * (the count; PLK_RW_WAITERS unless NONRECURSIVE): keep
			 * it.  A scan's lend meanwhile is ours by its mark, or
			 * was withdrawn by whoever cleared the bit again
			 * (withdraw_publishers).  Else retract. */
			w = plk_rw_word(rw);
			if (spin_may_join(w) && (pass || !(w & PLK_RW_WAITERS)))
				continue;
			rd_hold_retract(h);
			published = false;
		}
		plk_cpu_relax();
	}
	/* The spin ended with a kept publication (WAITERS or WRITER seen in
	 * the next turn, or the turns ran out): a writer that set WAITERS may
	 * have named us.  Retract, so that every way on withdraws it: before
	 * we queue, in rd_fail, or at the last unlock (RW6; the model's
	 * BROKEN_RW_SPIN: a timed-out reader kept the lend). */
	if (published)
		rd_hold_retract(h);
	return false;
}

/*
 * Phase "join", a reader's, under the bucket (@rw's word @w one a reader
 * may join: reader_may_join).  Returns 0 (joined: the caller records the
 * hold once the bucket is dropped), EAGAIN (the count full) or
 * PLK_PARK_AGAIN (the word moved).
 */
static int rd_join_locked(struct plk_bucket *b, proxylock_rwlock_t *rw, uint32_t w,
                          struct rd_hold *h, uint32_t self)
{
	if (plk_rw_readers(w) == PLK_RW_READERS_MAX)
		return EAGAIN;
	rd_hold_publish(rw, h, 0);
	if (!join_locked(rw, w, 1)) {
		rd_hold_retract(h);
		return PLK_PARK_AGAIN;
	}
	if (w & PLK_RW_WAITERS) {
		plk_chain_rw_update(b, rw);  /* the queue lends to us too */
	} else if (h->retracted && !h->recursive) {
		/* Joined with the bit clear: a retraction's lend is stale
		 * (rd_joined_clear); applied at the flush. */
		plk_donate_withdraw_tid((pid_t)self, rw);
		h->retracted = false;
	}
	return 0;
}

/*
 * Phase "join", a reader's, under the bucket: join if a reader may
 * (rd_join_locked), else (not a try) set PLK_RW_WAITERS and be queued,
 * our slot pending.  Answers 0 (joined), EINVAL, EAGAIN or EBUSY; the
 * caller finishes them with no lock held (rd_hold_done, rd_fail).
 */
static int rd_validate(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	struct rw_wait *wt = ctx;
	proxylock_rwlock_t *rw = wt->rw;
	struct rd_hold *h = wt->h;
	uint32_t w = plk_rw_word(rw);

	plk_inv_rw(b, rw);
	if (rw_unusable(rw, w))
		return EINVAL;
	if (reader_may_join(b, rw, w))
		return rd_join_locked(b, rw, w, h, wt->self);
	if (wt->try)
		return EBUSY;
	if (!waiters_mark(rw, w))
		return PLK_PARK_AGAIN;
	rd_hold_publish(rw, h, PLK_RD_PENDING);
	/* A lend a scan gave our retracted publication goes now, under the
	 * bucket, before we queue: after it, a grant may lend to us for
	 * real (RW5), and that lend must stay.  Applied at the flush. */
	if (h->retracted) {
		plk_donate_withdraw_tid((pid_t)wt->self, rw);
		h->retracted = false;
	}
	p->me->rw_writer = false;
	p->me->rw_grant_slot = h->slot >= 0 && !h->recursive ? &h->s->lock[h->slot] : NULL;
	p->me->enq_ns = wt->now_ns;
	return PLK_PARK_SLEEP;
}

static const struct plk_park_ops rd_park = {
	.prepare = wait_prepare,
	.validate = rd_validate,
	.queued = wait_queued,
	.before_sleep = wait_before_sleep,
	.sleep_until = wait_sleep_until,
	.slice_over = wait_slice_over,
};

/*
 * rdlock_slow after its spin: park (rd_park: join, or queue and sleep)
 * until joined or granted, or why not.  @me: our record (NULL for a
 * try, which never queues).
 */
static int rd_join_or_queue(proxylock_rwlock_t *rw, struct rd_hold *h, struct plk_thread *me,
                            uint32_t self, bool try, clockid_t clock,
                            const struct timespec *abstime)
{
	/* The clock is read before the bucket: no syscall under it (vDSO
	 * fallback).  So is the lone reader's check: our join or queueing
	 * updates the queue's lend, which may name it. */
	struct rw_wait wt = { .rw = rw, .h = h, .self = self, .try = try,
	                      .now_ns = try ? 0 : plk_now_ns() };
	struct plk_park p = { .key = plk_rw_key(rw), .me = me, .clock = clock, .abstime = abstime };
	uint32_t st;
	int err;

	if (!try)
		dead_reader_check(rw);
	st = plk_park(&p, &rd_park, &wt);
	if (st == PLK_PARK_ANSWERED) {
		if (p.answer != 0)
			return rd_fail(rw, h, p.answer);
		rd_hold_done(h);
		return 0;
	}
	if ((err = wait_parked(rw, me, h, st)) == 0)
		rd_hold_done(h);
	return err;
}

/*
 * Take a read hold of @rw after a failed fast path.  @try: EBUSY
 * instead of waiting.  Clock and deadline as for mutexes.  Its phases:
 * the checks, a solo join, the spin (rd_spin), the waiter's record
 * (rw_waiter), then the park: join, or queue and sleep
 * (rd_join_or_queue).
 */
static __attribute__((noinline)) int rdlock_slow(proxylock_rwlock_t *rw, bool try,
                                                  clockid_t clock,
                                                  const struct timespec *abstime)
{
	uint32_t self = plk_tid(), w = plk_rw_word(rw);
	struct plk_thread *me = NULL;
	struct rd_hold h;
	int err;

	if (plk_ilock_busy())  /* a handler inside our critical section: no bucket */
		return rw_refused(rw, w, false, try);
	rd_hold_prepare(rw, &h);  /* consumes the fast path's retraction */
	if (rw_unusable(rw, w))
		return rd_fail_unlocked(rw, &h, EINVAL);
	if (write_held_by(w, self)) {
		/* Retracted under our own write hold: no scan named the slot
		 * (a scan lends to the writer), and a withdrawal keyed by @rw
		 * would take the queue's lend to us as the writer. */
		h.retracted = false;
		return rd_fail(rw, &h, try ? EBUSY : EDEADLK);
	}
	if (h.recursive && h.s->depth[h.slot] == UINT32_MAX)
		return rd_fail_unlocked(rw, &h, EAGAIN);
	/* A solo hold, nobody queued: no wait, so no deadline to check, no
	 * contention, no syscall; join it at once (a changed word goes the
	 * usual way, and the spin comes back here on another solo word). */
	if ((SOLO_UNWAITED(w) && solo_join(rw, &h)) || (!try && rd_spin(rw, &h))) {
		rd_hold_done(&h);
		return 0;
	}
	if (!try && (err = rw_waiter(rw, abstime, &me)) != 0) {
		if (err == RW_YIELD && (err = rw_yielding(rw, false, clock, abstime, &h)) == 0) {
			rd_hold_done(&h);
			return 0;
		}
		return rd_fail_unlocked(rw, &h, err);
	}
	return rd_join_or_queue(rw, &h, me, self, try, clock, abstime);
}

/* --- write lock ------------------------------------------------------- */

/*
 * wrlock_slow's spin, before any wait: take @rw by a CAS from 0 (@self's
 * word) while nobody is queued, backing off (the prefer-reader kinds) or
 * turning (PLK_RW_SPIN_READ_HELD while readers hold) as the constants
 * above say.  Only reads and a CAS from 0: the model's one CAS stands
 * for the whole spin, whatever its length.  Returns true having taken it.
 */
static bool wr_spin(proxylock_rwlock_t *rw, uint32_t self)
{
	bool backoff = plk_rw_kind(rw) != PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE;
	unsigned int pauses = 1;
	uint32_t w;

	for (int i = 0, read_held = 0; i < PLK_RW_SPIN; i++) {
		w = plk_rw_word(rw);
		if (w == 0 && plk_rw_cas(rw, 0, PLK_RW_WRITER | self))
			return true;
		if (w & PLK_RW_WAITERS)
			break;
		if (backoff && w) {
			if (pauses > PLK_RW_WRITER_PAUSE_MAX)
				break;
			plk_cpu_relax_times(pauses);
			pauses *= 2;
			continue;
		}
		if (!(w & PLK_RW_WRITER) && w && ++read_held > PLK_RW_SPIN_READ_HELD)
			break;
		plk_cpu_relax();
	}
	return false;
}

/*
 * Phase "join", a writer's, under the bucket: take @rw if it is free,
 * else (not a try) set PLK_RW_WAITERS and be queued, at the head of our
 * rank if woken (RW8).  Free with PLK_RW_WAITERS set only while a
 * writer woken to compete is on its way back (RW8: we may be it, or
 * barge past it); else the bit is clear and nobody is queued (RW2,
 * RW3).  The bit stays while anyone is queued; dropping it (they all
 * left meanwhile) withdraws from every publisher, as every clear does
 * (RW6).  Answers 0 (taken), EINVAL or EBUSY.
 */
static int wr_validate(struct plk_bucket *b, struct plk_park *p, void *ctx)
{
	struct rw_wait *wt = ctx;
	proxylock_rwlock_t *rw = wt->rw;
	uint32_t w = plk_rw_word(rw);

	plk_inv_rw(b, rw);
	if (rw_unusable(rw, w)) {
		plk_inv_back(b, p->me, p->key);  /* a woken writer: nothing owed */
		return EINVAL;
	}
	if ((w & ~PLK_RW_WAITERS) == 0) {
		bool more = plk_waitq_first(b, plk_rw_key(rw)) != NULL;

		if (!plk_rw_cas(rw, w, PLK_RW_WRITER | wt->self | (more ? PLK_RW_WAITERS : 0)))
			return PLK_PARK_AGAIN;
		if (!more && (w & PLK_RW_WAITERS))
			withdraw_publishers(rw);
		if (more)
			plk_chain_rw_update(b, rw);
		plk_inv_back(b, p->me, p->key);  /* a woken writer took L (RW8) */
		plk_inv_rw(b, rw);
		return 0;
	}
	if (wt->try)
		return EBUSY;
	if (!waiters_mark(rw, w))
		return PLK_PARK_AGAIN;
	p->me->rw_writer = true;
	p->me->rw_grant_slot = NULL;
	if (!wt->woken)
		p->me->enq_ns = wt->now_ns;
	p->at_head = wt->woken;
	return PLK_PARK_SLEEP;
}

static const struct plk_park_ops wr_park = {
	.prepare = wait_prepare,
	.validate = wr_validate,
	.queued = wait_queued,
	.before_sleep = wait_before_sleep,
	.sleep_until = wait_sleep_until,
	.slice_over = wait_slice_over,
};

/*
 * wrlock_slow after its spin: park (wr_park: take, or queue and sleep)
 * until @rw is ours, or why not; woken to compete (RW8), park again, at
 * the head.  @me: our record (NULL for a try, which never queues).
 */
static int wr_take_or_queue(proxylock_rwlock_t *rw, struct plk_thread *me, uint32_t self,
                            bool try, clockid_t clock, const struct timespec *abstime)
{
	/* The clock is read before the bucket: no syscall under it (vDSO
	 * fallback). */
	struct rw_wait wt = { .rw = rw, .self = self, .try = try,
	                      .now_ns = try ? 0 : plk_now_ns() };
	struct plk_park p = { .key = plk_rw_key(rw), .me = me, .clock = clock, .abstime = abstime };
	uint32_t st;
	int err;

	if (!try)
		dead_reader_check(rw);
	for (;;) {
		st = plk_park(&p, &wr_park, &wt);
		if (st == PLK_PARK_ANSWERED)
			return p.answer;
		if ((err = wait_parked(rw, me, NULL, st)) != RW_RETRY)
			return err;
		wt.woken = true;  /* RW8: back at the head, enq_ns kept */
	}
}

/*
 * Take a write hold of @rw after a failed fast path (@try, clock and
 * deadline as rdlock_slow's).  Its phases: the checks, the spin
 * (wr_spin), the waiter's record (rw_waiter), then the park: take, or
 * queue and sleep (wr_take_or_queue).
 */
static __attribute__((noinline)) int wrlock_slow(proxylock_rwlock_t *rw, bool try,
                                                  clockid_t clock,
                                                  const struct timespec *abstime)
{
	uint32_t self = plk_tid(), w = plk_rw_word(rw);
	struct plk_thread *me = NULL;
	int err;

	if (rw_unusable(rw, w))
		return EINVAL;
	if (write_held_by(w, self))
		return try ? EBUSY : EDEADLK;
	if (plk_ilock_busy())  /* a handler inside our critical section: no bucket */
		return rw_refused(rw, w, true, try);
	if (!try && wr_spin(rw, self))
		return 0;
	if (!try && (err = rw_waiter(rw, abstime, &me)) != 0)
		return err == RW_YIELD ? rw_yielding(rw, true, clock, abstime, NULL) : err;
	return wr_take_or_queue(rw, me, self, try, clock, abstime);
}

/* --- unlock ----------------------------------------------------------- */

/* What unlock_slow releases, and what its @seen is. */
enum rel {
	REL_COUNTED,    /* a counted read hold (in a slot, or untracked) */
	REL_WRITER,     /* the write hold */
	REL_SOLO,       /* our solo hold; @seen: its word, without the bit */
	REL_CONVERTED,  /* our converted hold (RW9); @seen: __solo naming us */
};

/* The TID __solo names us by, if it does (outside the bucket: our TID
 * may need the kernel's word, plk_owned_by_self), else 0; a hint. */
static uint32_t converted_tid(const proxylock_rwlock_t *rw)
{
	uint32_t w = plk_rw_word(rw), solo = plk_rw_solo_field(rw);

	return converted_by(w, solo, plk_tid()) ? solo & PLK_RW_COUNT : 0;
}

/* unlock_slow's release, made under the bucket in its grant's first
 * hold (grant_begin). */
struct release {
	enum rel how;
	uint32_t seen;   /* as unlock_slow's */
	uint32_t mine;   /* converted_tid before the bucket, for a counted hold */
	bool released;   /* false: REL_CONVERTED, and __solo does not name us */
	bool still;      /* our converted hold stays: so does our lend */
};

/*
 * Under @rw's bucket: release @rel's hold.  A write or solo hold takes
 * the word to free, a counted one the count down; if that freed the
 * lock with nobody queued, clear PLK_RW_WAITERS (RW2).  Returns true if
 * there may be someone to grant (grant() next).  Changes nothing, and
 * leaves @rel->released false, for REL_CONVERTED if __solo does not name
 * us (what we saw was a join's store, taken back: converted_by).
 */
static bool release_locked(struct plk_bucket *b, proxylock_rwlock_t *rw, struct release *rel)
{
	uint32_t w = plk_rw_word(rw), left;

	if (rel->how == REL_CONVERTED &&
	    (plk_rw_solo_field(rw) != rel->seen || (w & (PLK_RW_WRITER | PLK_RW_SOLO))))
		return false;
	rel->released = true;
	/* A solo word changes, the bit aside, only by a bucket join, which
	 * converts it (RW7, RW9): our hold is the converted one now. */
	if (rel->how == REL_SOLO && (w & ~PLK_RW_WAITERS) != rel->seen)
		rel->how = REL_CONVERTED;
	if (rel->how == REL_CONVERTED)  /* __solo stops naming us before the decrement (RW9) */
		__atomic_and_fetch(&rw->__solo, PLK_RW_SHARED, __ATOMIC_RELAXED);
	rel->still = rel->mine && (plk_rw_solo_field(rw) & PLK_RW_COUNT) == rel->mine;
	if (rel->how == REL_WRITER || rel->how == REL_SOLO) {
		word_update(rw, w, w & PLK_RW_WAITERS);
		left = w & PLK_RW_WAITERS;
	} else {
		word_update(rw, w, w - 1);
		left = w - 1;
	}
	/* From what our CAS wrote: with the bit clear nobody is queued (RW1;
	 * only a bucket holder sets it), nothing is to grant or clear, and
	 * from that CAS on the other holders may leave by the fast paths and
	 * the last destroy and free @rw: no read of it any more. */
	if (!(left & PLK_RW_WAITERS))
		return false;
	if (left == PLK_RW_WAITERS && !plk_waitq_first(b, plk_rw_key(rw))) {
		plk_inv_rw_rw2_clear(b, rw);
		word_update(rw, w, w & ~PLK_RW_WAITERS);  /* free, nobody queued */
		withdraw_publishers(rw);
		return false;  /* from the clear on, as above: no read */
	}
	return true;
}

/*
 * Release a hold of @rw (@how, @seen: enum rel) through its bucket:
 * PLK_RW_WAITERS set or seen set, a converted hold, or a slot that must
 * withdraw.  The release (release_locked) and the grant it allows are
 * one unpark (grant_unpark), batch after batch while they fill up (RW3).
 * Then, with no lock held, withdraw what we were lent (RW6).  Returns
 * false, having changed nothing, if release_locked found __solo not
 * naming us.
 */
static __attribute__((noinline)) bool unlock_slow(proxylock_rwlock_t *rw, enum rel how,
                                                  uint32_t seen)
{
	uint64_t now_ns = plk_now_ns();  /* before the bucket: no syscall under it */
	/* A slot's hold while our converted one stays: the lend is that
	 * holder's and stays (rd_fail).  Whether __solo names us is asked
	 * under the bucket, by the TID found now. */
	struct release rel = {
		.how = how, .seen = seen, .mine = how == REL_COUNTED ? converted_tid(rw) : 0,
	};
	struct grant g = { .rw = rw, .now_ns = now_ns, .rel = &rel };

	/* A converted hold with the bit clear: nothing lends now (a writer
	 * that queues meanwhile made its own prepare, and the process's
	 * probe), so the first such unlock in a process makes no syscall. */
	if (how != REL_CONVERTED || (plk_rw_word(rw) & PLK_RW_WAITERS))
		plk_chain_rw_prepare(rw);
	plk_unpark_all(plk_rw_key(rw), &grant_unpark, &g);
	if (!rel.released)
		return false;
	if (!rel.still)
		rd_not_reader(rw);  /* not a holder any more, of any kind */
	return true;
}

void plk_rw_unlock_cleared(proxylock_rwlock_t *rw)
{
	unlock_slow(rw, REL_COUNTED, 0);
}

/* Unlock after plk_rw_rdunlock_fast found no read hold of ours with a
 * slot: a write hold, a solo or converted one, an untracked read hold,
 * or none (EPERM). */
static __attribute__((noinline)) int unlock_other(proxylock_rwlock_t *rw)
{
	uint32_t self = plk_tid(), w, solo;

again:
	w = plk_rw_word(rw);
	if (rw_unusable(rw, w))
		return EINVAL;
	if (write_held_by(w, self)) {
		if (!plk_rw_wrunlock_fast(rw))
			unlock_slow(rw, REL_WRITER, 0);
		return 0;
	}
	if (solo_held_by(w, self)) {
		/* Our solo hold, which the fast path did not drop: the bit set
		 * (a scan named us from the word), or our TID changed in a
		 * fork child.  The bit may come, or a bucket join convert the
		 * hold, under our CAS: look again then. */
		if (w & PLK_RW_WAITERS) {
			unlock_slow(rw, REL_SOLO, w & ~PLK_RW_WAITERS);
			return 0;
		}
		if (plk_rw_cas(rw, w, 0))
			return 0;
		goto again;
	}
	/* Our converted hold (RW9), made sure of under the bucket. */
	solo = plk_rw_solo_field(rw);
	if (converted_by(w, solo, self) && unlock_slow(rw, REL_CONVERTED, solo))
		return 0;
	/* No slot: an untracked read hold (the overflow rule), or none. */
	if (plk_tls_rd_untracked == 0 || (w & (PLK_RW_WRITER | PLK_RW_SOLO)) ||
	    (w & PLK_RW_COUNT) == 0)
		return EPERM;
	plk_tls_rd_untracked--;
	do {
		if (w & PLK_RW_WAITERS) {
			unlock_slow(rw, REL_COUNTED, 0);
			return 0;
		}
	} while (!plk_rw_cas(rw, w, w - 1) && ((w = plk_rw_word(rw)), 1));
	return 0;
}

/*
 * Init makes @rw new, for the caller too: a read hold of the rwlock that
 * lived at @rw before (destroyed while the caller held it: the
 * interposer's destroy returns 0 then, as glibc's) must not stay in the
 * caller's read set, where its next read of the new lock would find it
 * and take itself for a recursive reader (depth 2, count 1: its unlock
 * then says EPERM and the lock stays read-held; the issue 29 review's
 * reinit.c).  So the slot is given back, and a lend a scan made through
 * it is withdrawn (nobody waits on a lock being initialised: no scan
 * can name the slot meanwhile).  Only the caller's: another thread's
 * hold of the old lock, in its own read set, is that program's error.
 */
void plk_rw_forget_own_reads(proxylock_rwlock_t *rw)
{
	struct plk_rdset *s = plk_tls_rdset;
	uintptr_t was;
	bool lent;
	int i;

	if (!s || (i = plk_rdset_find(s, (uintptr_t)rw)) < 0)
		return;
	/* Relaxed: no scan runs on @rw now; the exchange reads the mark. */
	was = __atomic_exchange_n(&s->lock[i], 0, __ATOMIC_RELAXED);
	lent = (was & PLK_RD_NAMED) || s->withdraw[i];
	plk_rdset_put(s, i);
	if (lent)
		rd_not_reader(rw);
}

/* --- the public calls ------------------------------------------------- */

static bool clock_ok(clockid_t clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

/*
 * Take a hold of @rw (@write: for writing): the fast path, then the slow
 * one.  @try: EBUSY instead of waiting; @deadline: a clock call, which
 * needs @abstime once it has to wait.  take, release and enter are forced
 * inline and the slow paths kept out of line, so that each public call's
 * fast path is straight code with no frame to build (left to gcc, the
 * slow paths were inlined into an out-of-line take that saved six
 * registers per call: `bench/rwfast 2000000 21` read rdlock+unlock 1.21x
 * glibc's, now 1.10x).
 */
static inline __attribute__((always_inline)) int take(proxylock_rwlock_t *rw, bool write,
                                                      bool try, bool deadline, clockid_t clock,
                                                      const struct timespec *abstime)
{
	if (write ? plk_rw_wrlock_fast(rw) : plk_rw_rdlock_fast(rw))
		return 0;
	if (deadline && !abstime)
		return EINVAL;
	return write ? wrlock_slow(rw, try, clock, abstime) : rdlock_slow(rw, try, clock, abstime);
}

/* Release a hold of @rw, whichever it is. */
static inline __attribute__((always_inline)) int release(proxylock_rwlock_t *rw)
{
	switch (plk_rw_rdunlock_fast(rw)) {
	case PLK_RD_DONE:
		return 0;
	case PLK_RD_CLEARED:
		unlock_slow(rw, REL_COUNTED, 0);
		return 0;
	}
	return unlock_other(rw);
}

/*
 * Tools watching (PLK_TSAN build, or under Valgrind): take and tell
 * them (tsan.h, vgclient.h), as a mutex does.  A call refused before
 * any attempt (unusable, or write-held by the caller: EDEADLK or EBUSY)
 * is an answer, not a lock, and is not told.  A read take claims the
 * caller's read set first, outside the told region: TSan ignores every
 * synchronisation inside it, and the claim's acquire (rdset.c) is what
 * orders the set's last owner, which may have exited while we ran,
 * before our own uses of the set outside lock calls (release_noted,
 * the thread-exit destructor).
 */
static __attribute__((noinline)) int take_noted(proxylock_rwlock_t *rw, bool write, bool try,
                                                bool deadline, clockid_t clock,
                                                const struct timespec *abstime)
{
	uint32_t w = plk_rw_word(rw);
	bool may_fail = try || deadline;
	int err;

	if (rw_unusable(rw, w) || write_held_by(w, plk_tid()))
		return take(rw, write, try, deadline, clock, abstime);
	/* NULL (the table full): should a set be freed before take() asks
	 * again, that claim is inside the region, where TSan may misreport
	 * as above (1024 threads reading at once). */
	if (!write && !plk_tls_rdset)
		(void)plk_rdset_self();
	plk_tsan_rw_pre_lock(rw, !write, may_fail);
	plk_vg(plk_vg_rw_lock_pre(rw, write, may_fail));
	err = take(rw, write, try, deadline, clock, abstime);
	plk_tsan_rw_post_lock(rw, !write, may_fail, err);
	plk_vg(plk_vg_rw_lock_post(rw, write, err == 0));
	return err;
}

/* Tools watching: release and tell them which hold went, unless the
 * caller holds none (EPERM, EINVAL: an answer, not an unlock). */
static __attribute__((noinline)) int release_noted(proxylock_rwlock_t *rw)
{
	struct plk_rdset *s = plk_tls_rdset;
	uint32_t w = plk_rw_word(rw), self = plk_tid();
	bool write = write_held_by(w, self);
	bool counted = !(w & (PLK_RW_WRITER | PLK_RW_SOLO)) && (w & PLK_RW_COUNT) != 0;
	bool read = !rw_unusable(rw, w) &&
	            (solo_held_by(w, self) ||
	             (counted && ((s && plk_rdset_find(s, (uintptr_t)rw) >= 0) ||
	                          converted_by(w, plk_rw_solo_field(rw), self) ||
	                          plk_tls_rd_untracked > 0)));
	int err;

	if (!write && !read)
		return release(rw);
	plk_tsan_rw_pre_unlock(rw, !write);
	plk_vg(plk_vg_rw_unlock_pre(rw, write));
	err = release(rw);
	plk_tsan_rw_post_unlock(rw, !write);
	plk_vg(plk_vg_rw_unlock_post(rw));
	return err;
}

#define tools_watching() (PLK_TSAN || plk_vg_active())

/* Every public take: told to the tools when they watch, else plain. */
static inline __attribute__((always_inline)) int enter(proxylock_rwlock_t *rw, bool write,
                                                       bool try, bool deadline, clockid_t clock,
                                                       const struct timespec *abstime)
{
	if (tools_watching())
		return take_noted(rw, write, try, deadline, clock, abstime);
	return take(rw, write, try, deadline, clock, abstime);
}

int proxylock_rwlock_rdlock(proxylock_rwlock_t *rw)
{
	if (__builtin_expect(!rw, 0))
		return EINVAL;
	return enter(rw, false, false, false, CLOCK_REALTIME, NULL);
}

int proxylock_rwlock_tryrdlock(proxylock_rwlock_t *rw)
{
	if (!rw)
		return EINVAL;
	return enter(rw, false, true, false, CLOCK_REALTIME, NULL);
}

int proxylock_rwlock_clockrdlock(proxylock_rwlock_t *rw, clockid_t clock,
                                 const struct timespec *abstime)
{
	/* Checked before the fast path publishes anything: an early
	 * return after it would leave its retraction unconsumed. */
	if (!rw || !clock_ok(clock) || !abstime)
		return EINVAL;
	return enter(rw, false, false, true, clock, abstime);
}

int proxylock_rwlock_timedrdlock(proxylock_rwlock_t *rw, const struct timespec *abstime)
{
	return proxylock_rwlock_clockrdlock(rw, CLOCK_REALTIME, abstime);
}

int proxylock_rwlock_wrlock(proxylock_rwlock_t *rw)
{
	if (__builtin_expect(!rw, 0))
		return EINVAL;
	return enter(rw, true, false, false, CLOCK_REALTIME, NULL);
}

int proxylock_rwlock_trywrlock(proxylock_rwlock_t *rw)
{
	if (!rw)
		return EINVAL;
	return enter(rw, true, true, false, CLOCK_REALTIME, NULL);
}

int proxylock_rwlock_clockwrlock(proxylock_rwlock_t *rw, clockid_t clock,
                                 const struct timespec *abstime)
{
	if (!rw || !clock_ok(clock))
		return EINVAL;
	return enter(rw, true, false, true, clock, abstime);
}

int proxylock_rwlock_timedwrlock(proxylock_rwlock_t *rw, const struct timespec *abstime)
{
	return proxylock_rwlock_clockwrlock(rw, CLOCK_REALTIME, abstime);
}

int proxylock_rwlock_unlock(proxylock_rwlock_t *rw)
{
	if (__builtin_expect(!rw, 0))
		return EINVAL;
	if (tools_watching())
		return release_noted(rw);
	return release(rw);
}

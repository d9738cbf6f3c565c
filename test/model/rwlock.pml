/*
 * rwlock.pml - SPIN model of the proxylock rwlock (lib/rwlock.c,
 * lib/rwlockword.h, lib/rdset.h), included by proxylock.pml under
 * -DRWLOCK; the header of proxylock.pml maps each inline to
 * the code.  One rwlock, one bucket; threads 1..RW_WRITERS are writers
 * (RW_WROUNDS locks each), the rest readers (RW_ROUNDS rounds each).
 * Each thread is chosen at its start to make timed calls (a deadline may
 * pass once, at any moment of a wait) or not (it sleeps until granted,
 * so a lost grant shows as a thread asleep at the end): writers always
 * have the choice, readers with -DRW_TIMED_READERS.  Abstracted: the
 * queue's order (FIFO: every thread ranks the same), the caps
 * (READERS_MAX, the 32-reader scan, DEFER_MAX, the spin's 100 turns:
 * two here), thread exit, the overflow rule, the apply step, the
 * window between a conversion's store of __solo and its CAS (one step
 * under the bucket here).  With thread exit goes the dead-reader mark
 * (plk_rw_dead_reader, issue 29): set only for a lone reader that exited
 * holding, it stops lends to that TID and changes no word, queue, park
 * or hold, so no thread here is ever marked and lend_update is the
 * code's for live readers.  So does the check that sets it
 * (dead_reader_check: a waiter before its bucket holds, and a queued
 * writer every rescan period, under PREFER_WRITER_NONRECURSIVE too while
 * a lone reader is named): with every reader alive it takes no bucket,
 * and the NONRECURSIVE writer's periodic wakes re-park, unmodelled, as
 * any timed-out slice of a park does.
 *
 * The word is four variables changed together (one CAS): cnt (read
 * holds, counted or the solo one), wr (the writer's id, 0 none), solo
 * (PLK_RW_SOLO: the id of the thread whose one hold the word names, in
 * no slot; 0 none; cnt is 1 while it is set), wt (PLK_RW_WAITERS).
 * __solo is two more: stid (its TID: the converted reader, whose solo
 * hold a conversion turned into a counted one, still in no slot; 0
 * none) and sh (PLK_RW_SHARED: no new solo holds; init's free choice:
 * set, the model is the protocol before solo holds).  A reader's fast
 * path takes a free word solo while sh is clear, else it is the counted
 * one, which refuses a solo word, as the spin does; a reader joining a
 * solo word in the bucket, or a grant to readers into one, converts it
 * (stid = solo, sh set: RW9).  lend_update names the solo holder from
 * the word and the converted reader from __solo (no mark: both unlock
 * through the bucket once WAITERS is set).  slot[t]
 * is thread t's read-set slot for the rwlock: 0 clear, 1 names it, 2
 * pending (a queued reader's reservation), 3 names it and carries a
 * scan's PLK_RD_NAMED mark (lend_update marks by CAS, with someone
 * queued; the owner's exchange at unlock reads it).  Under PREFER_READER
 * a reader joins a read-held lock past WAITERS by the spin (SPINJOIN,
 * RW7), unnamed (slot 1) until a scan: a queued writer's rescan
 * (rw_sleep's rw_rescan, by the first queued writer, RW_RESCANS times a
 * wait; past[t] marks such a reader, the only holder RW5 excuses, and
 * a rescan must leave no reader unlent), and a writer the rules would grant
 * may instead be woken to compete (grant: a free choice standing for
 * the handoff bound; nwoken counts those on their way back, RW8).  lent[t] is the donation
 * engine's entry keyed by the rwlock on t (ghost: set and cleared where
 * the code's plk_donate_set and withdraw run).  rd[t] (t's read holds:
 * its slot's depth, plus its solo or converted hold) and writing (the
 * writer between its lock's return and its unlock) are ghosts.
 *
 *   -DPREFER_W          PREFER_WRITER_NONRECURSIVE.  Else PREFER_READER,
 *                       which is also PREFER_WRITER: the code tests only
 *                       for NONRECURSIVE (reader_may_join, grant)
 *   -DRW_BATCH=n        grant at most n readers per bucket hold (the
 *                       code's PLK_UNPARK_BATCH), coming back for the rest
 *   -DRW_WRITERS=n      writers (default 1); -DRW_READERS=n readers
 *                       (default 2); at most 4 threads in all
 *   -DRW_WROUNDS=n      lock rounds of each writer (default 1)
 *   -DRW_TIMED_READERS  readers' waits may time out too (rw_timedout)
 *   -DRW_RESCANS=n      rescans of a queued writer per wait (default 1)
 *   -DRW_UNTIMED_WRITERS writers' waits never time out
 *   -DRW_DBLFAST        each read lock is the interposer's: two fast
 *                       paths (preload.c's, then take()'s) before the slow
 *                       path
 *   -DRW_RECURSIVE      the first reader takes a second read hold inside
 *                       each of its holds: recursive in its slot, or,
 *                       inside a solo or converted hold, a new slot hold
 *                       (the code finds no slot for L), released first
 *   -DRW_NORECORD       with -DRW_RECURSIVE: the second read has no
 *                       thread record (rw_yielding: it never queues, it
 *                       yields until its CAS may go; a solo or converted
 *                       hold counts as recursive there, and a solo word
 *                       is joined by conversion); not with -DPREFER_W,
 *                       where it yields for ever behind a queued writer
 *                       as glibc's NONRECURSIVE deadlocks
 *   -DRW_ALLOW_NR_DEADLOCK  with -DPREFER_W -DRW_RECURSIVE: the end state
 *                       glibc's NONRECURSIVE kind also deadlocks in (a
 *                       recursive read queued behind a writer that waits
 *                       for its first hold) is reported, not an error
 *   -DRW_STALE_SHARED   the fast path reads SHARED apart from the word:
 *                       stale (clear after a conversion set it) or a
 *                       conversion's store its failed CAS takes back:
 *                       a free word may go solo after a conversion, or
 *                       counted with sh clear
 *   -DNO_RW9            leave out the RW9 assertions (so a broken variant
 *                       runs on to what its breach leads to)
 * Broken variants, each must fail:
 *   -DBROKEN_RW_PUBLISH a reader publishes its slot after its count
 *                       increment: a writer misses it (violated: RW5)
 *   -DBROKEN_RW_UNLOCK  a reader decrements before clearing its slot: a
 *                       writer lends to it after it left (violated: RW6)
 *   -DBROKEN_RW_GRANT   with -DPREFER_W: a writer that times out does
 *                       not grant: readers queued behind it sleep on a
 *                       read-held lock they may join (violated: RW3)
 *   -DBROKEN_RW_RETRACT a reader whose publication was retracted (its
 *                       CAS failed) does not withdraw, at any point
 *                       (violated: RW6)
 *   -DBROKEN_RW_KEEP    with -DPREFER_W: a grant to readers that empties
 *                       the queue clears PLK_RW_WAITERS although readers
 *                       from before hold: one inside its unlock, lent to
 *                       and with its slot cleared, leaves by the fast
 *                       path (violated: RW6)
 *   -DBROKEN_RW_BATCH   with -DRW_BATCH=1: a grant that fills its batch
 *                       returns before counting and handing it (the old
 *                       code): the batch sleeps on (violated: RW3/hang)
 *   -DBROKEN_RW_WITHDRAW a queued reader withdraws its retracted
 *                       publication's lend after the bucket, by then
 *                       maybe a grant's real lend (violated: RW5)
 *   -DBROKEN_RW_ABA     the release that clears PLK_RW_WAITERS leaves the
 *                       lends of threads still publishing (their CAS may
 *                       succeed on the word come back): violated: RW6
 *   -DBROKEN_RW_MORE    with -DRW_WRITERS=2: a grant to a writer keeps
 *                       PLK_RW_WAITERS only while a reader is queued
 *                       (first_writer's reader flag taken for "anyone
 *                       queued"): the second writer queued without the
 *                       bit (violated: RW1)
 *   -DBROKEN_RW_TIMEDOUT rw_timedout does not look at the park word: a
 *                       waiter granted as its deadline passed leaves
 *                       with the grant (with -DPREFER_W, violated: lost
 *                       wake-up: L held for a thread not in it; else
 *                       first a writer woken as its deadline passed:
 *                       violated: a woken writer never came back)
 *   -DBROKEN_RW_TIMEDOUT_CLEAR a waiter leaving an empty queue clears
 *                       PLK_RW_WAITERS (withdrawing from the publishers):
 *                       a reader inside its unlock, lent to, leaves by
 *                       the fast path (violated: RW6)
 *   -DBROKEN_RW_SPIN    rdlock_slow's spin leaves with a publication it
 *                       kept across a count change, unretracted: a writer
 *                       that queued meanwhile lent to it; under
 *                       NONRECURSIVE it queues without withdrawing and
 *                       times out lent to (the code before the fix;
 *                       with -DPREFER_W -DRW_TIMED_READERS -DRW_WROUNDS=2,
 *                       violated: RW6)
 *   -DBROKEN_RW_DBLFAST with -DRW_DBLFAST: the second fast path runs
 *                       with the first one's retraction pending, and its
 *                       success returns without the slow path that
 *                       consumes it: the reader leaves by the fast path
 *                       with a lend a scan gave its retracted slot
 *                       (violated: RW6)
 *   -DBROKEN_RW_YIELD   with -DRW_RECURSIVE -DRW_NORECORD: rw_yielding
 *                       joins only with WAITERS clear, also recursively:
 *                       the reader yields for ever while the queued
 *                       writer waits for its hold (violated: a recursive
 *                       read yields for ever)
 *   -DBROKEN_RW_STALE   a reader whose retracted publication was lent to
 *                       and which joins by a later CAS with WAITERS clear
 *                       (the spin, or the bucket) keeps that lend through
 *                       its read section, until its withdraw[] unlock
 *                       (violated: RW6: a reader reads with a lend while
 *                       WAITERS is clear)
 *   -DBROKEN_RW_JOIN0   the spin joins past WAITERS into a free lock too,
 *                       whose releaser may be handing it to a writer
 *                       (violated: RW7)
 *   -DBROKEN_RW_NAMED   an unlock that sees WAITERS ignores its slot's
 *                       mark and leaves by its CAS: a scan's lend stays
 *                       (violated: RW6)
 *   -DBROKEN_RW_REPUBLISH the spin stores its publication again each
 *                       turn, erasing a scan's mark whose lend stands
 *                       (violated: RW6)
 *   -DBROKEN_RW_RESCAN  a queued writer's rescan names nobody: a reader
 *                       that joined past it is never lent to
 *                       (violated: RW5 ... after a rescan)
 *   -DBROKEN_RW_WOKEN_TMO with -DRW_WRITERS=2: a writer woken as its
 *                       deadline passed gives up (ETIMEDOUT) instead of
 *                       coming back: the other writer sleeps on behind a
 *                       free lock (violated: RW3)
 *   -DBROKEN_RW_REC_PENDING with -DPREFER_W -DRW_RECURSIVE: a recursive
 *                       read that queues marks its held slot pending (no
 *                       !recursive test in rd_hold_publish); the grant
 *                       leaves it so (no grant_slot): scans miss the
 *                       holder and its unlock finds no slot (violated:
 *                       EPERM)
 *   -DBROKEN_RW_SOLO_CONVERT a conversion does not write __solo (stid
 *                       stays 0): nothing names the converted reader, and
 *                       a writer queued later misses it (violated: RW5;
 *                       its unlock, which finds no hold and would fail
 *                       EPERM first, is let through)
 *   -DBROKEN_RW_SOLO_FAST the solo holder's fast unlock ignores WAITERS:
 *                       lent to by a queued writer, it leaves without the
 *                       bucket (violated: RW6)
 *   -DBROKEN_RW_SOLO_CLEAR the converted reader decrements by CAS while
 *                       WAITERS is clear, and clears __solo's TID after:
 *                       a writer that queues in between names it after
 *                       it left (with -DNO_RW9, violated: RW6; else first
 *                       RW9: __solo names a reader of a word not
 *                       read-held, a writer's)
 *   -DBROKEN_RW_SOLO_STALE the solo holder that saw WAITERS is released
 *                       under the bucket without reading the word again,
 *                       as a writer's hold: a bucket join converted it
 *                       meanwhile, and the release clears the joiner's
 *                       count too (violated: RW9; with -DNO_RW9,
 *                       exclusion)
 *   -DBROKEN_RW_SOLO_WITHDRAW with -DRW_RECURSIVE: the unlock of the
 *                       slot hold inside a converted hold, through the
 *                       bucket, withdraws (rd_not_reader) while the
 *                       converted hold stays: a queued writer no longer
 *                       lends to it (violated: RW5)
 */

#ifndef RW_WRITERS
#define RW_WRITERS 1
#endif
#ifndef RW_READERS
#define RW_READERS 2
#endif
#define NW	RW_WRITERS
#define N	(RW_WRITERS + RW_READERS)
#if RW_WRITERS + RW_READERS > 4 || RW_READERS < 1 || RW_WRITERS < 1
#error "1..3 writers and 1..3 readers, at most 4 threads"
#endif
#ifndef RW_ROUNDS
#define RW_ROUNDS 1
#endif
#ifndef RW_WROUNDS
#define RW_WROUNDS 1
#endif
#define RREC	(NW + 1)	/* the reader that recurses (-DRW_RECURSIVE) */
#define ISW(t)	((t) <= NW)
#define WAITING	0
#define WOKEN	1
#define HANDED	2
#ifndef RW_RESCANS
#define RW_RESCANS 1
#endif
/* A slot naming L: published/held (1), or held and named by a scan (3). */
#define NAMES(t)	(slot[t] == 1 || slot[t] == 3)

#define CHECK(c, msg)	if :: !(c) -> printf(msg); assert(false) :: else -> skip fi

byte cnt, wr;			/* the word: read holds, writer id */
bool wt;			/* PLK_RW_WAITERS */
byte solo;			/* PLK_RW_SOLO: the solo holder's id, 0 none (then cnt == 1) */
byte stid;			/* __solo's TID: the converted reader, 0 none */
bool sh;			/* __solo's PLK_RW_SHARED */
byte bl;			/* the bucket lock's holder */
byte q[N]; byte ql;		/* the queue, in order (FIFO: see enq) */
byte nqw, nqr;			/* writers, readers queued (derived from q) */
byte park[N + 1];
byte slot[N + 1];
bool lent[N + 1];		/* ghost: the engine's entry for the rwlock */
bool past[N + 1];		/* ghost: joined past WAITERS by the spin, not named since */
byte rd[N + 1];			/* ghost: read holds */
byte writing;			/* ghost: the writer in its critical section */
byte done;
bool stuck;			/* -DRW_ALLOW_NR_DEADLOCK: the monitor saw it */
byte yielder;			/* -DRW_NORECORD: the reader in rw_yielding */
byte nwoken;			/* writers woken to compete, on their way back (RW8) */
bool hw;			/* grant's choice, made before its d_step: wake (RW8) */
/* Scratch of the bucket's d_steps (each resets what it used to 0). */
byte sc, fw, gk, gt, c0, g, tk;
byte gm;			/* grant's mode: GM_HAND, GM_WAKE, GM_READERS */

#define QW	(nqw > 0)
#define QR	(nqr > 0)
#ifdef PREFER_W
#define MAYJOIN	(wr == 0 && !QW)
#define YJOIN	(wr == 0 && !wt)	/* rw_yielding, a recursive read */
#define SPINJOIN (wr == 0 && solo == 0 && !wt)	/* rdlock_slow's spin: spin_may_join, no passing */
#else
#define MAYJOIN	(wr == 0)
#define YJOIN	(wr == 0)
/* The spin joins past WAITERS into a held lock, never into a free one
 * (RW7; -DBROKEN_RW_JOIN0: also into a free one), nor into a solo word
 * (the code leaves the spin on it, for the bucket) */
#ifndef BROKEN_RW_JOIN0
#define SPINJOIN (wr == 0 && solo == 0 && (!wt || cnt > 0))
#else
#define SPINJOIN (wr == 0 && solo == 0)
#endif
#endif
/* RW7: with WAITERS set no fast path moves the count from (or to) 0:
 * a bucket holder that read it 0 may be writing a writer's TID over it
 * (the code's word_update; the model's grant is one step, so the
 * assumption is asserted where a spin join changes the count). */
#define RW7CHECK CHECK(!wt || cnt > 0, "violated: RW7: a join past WAITERS into a free lock\n")
/* RW3: a queued waiter the rules would grant now. */
#ifdef PREFER_W
#define GRANTABLE (wr == 0 && ((cnt == 0 && ql > 0) || (QR && !QW)))
#else
#define GRANTABLE (wr == 0 && ((cnt == 0 && ql > 0) || QR))
#endif
/* RW5: every holder is lent to while anyone is queued; under
 * PREFER_READER, but a reader that joined past WAITERS by the spin and
 * that no scan has named since (its slot 1, not 3): the writer's rescan
 * names it (rw_rescan). */
#define HL(t)	(rd[t] == 0 || ql == 0 || lent[t] || past[t])
#define SHL(t)	(rd[t] == 0 || ql == 0 || lent[t])	/* strict: after a rescan */
#if RW_WRITERS + RW_READERS == 4
#define HL4	HL(4)
#else
#define HL4	true
#endif
#define HOLDERS_LENT (HL(1) && HL(2) && HL(3) && HL4 && (writing == 0 || ql == 0 || lent[wr]))
#if RW_WRITERS + RW_READERS == 4
#define SHL4	SHL(4)
#else
#define SHL4	true
#endif
#define READERS_LENT (SHL(1) && SHL(2) && SHL(3) && SHL4)
#if RW_WRITERS + RW_READERS == 4
#define RDSUM	(rd[1] + rd[2] + rd[3] + rd[4])
#define ANYLENT	(lent[1] || lent[2] || lent[3] || lent[4])
#else
#define RDSUM	(rd[1] + rd[2] + rd[3])
#define ANYLENT	(lent[1] || lent[2] || lent[3])
#endif

/* RW9, the word's side: a solo word is one hold, no other reader,
 * nobody in __solo; __solo names a reader of a read-held counted word
 * (that it is the converted reader's: RW5, RW6).  -DNO_RW9 leaves it
 * out, so that a broken variant runs on to what its breach leads to. */
#ifndef NO_RW9
#define RW9CHECK \
	CHECK(solo == 0 || (cnt == 1 && wr == 0 && stid == 0), "violated: RW9: a solo word with other holds\n"); \
	CHECK(stid == 0 || (cnt > 0 && wr == 0 && solo == 0), "violated: RW9: __solo names a reader of a word not read-held\n")
#else
#define RW9CHECK skip
#endif

inline bucket_lock() { atomic { bl == 0 -> bl = me } }
inline bucket_unlock() {
	d_step {
		assert(bl == me);
		CHECK(!(ql > 0 && !wt), "violated: RW1\n");
		CHECK(again || nwoken > 0 || !GRANTABLE, "violated: RW3: a queued waiter could be granted\n");
		CHECK(HOLDERS_LENT, "violated: RW5: a holder is not lent to\n");
		/* RW2's consequence: a release that frees L grants or clears
		 * the bit, so L is never free with it set between bucket holds
		 * (the fast paths never free L while it is set: a recursive
		 * unlock leaves a hold). */
		CHECK(again || nwoken > 0 || !(wt && cnt == 0 && wr == 0), "violated: RW2: L free with WAITERS set\n");
		RW9CHECK;
		bl = 0
	}
}

/* Queue operations and lend_update run under the bucket lock: callers
 * put them in a d_step.  plk_waitq_enqueue puts a waiter in front of
 * the first that ranks below it (its priority); every thread here ranks
 * the same, so the queue is FIFO (grant takes the queue's order, and
 * the model checks no property of the order itself). */
inline enq(t) {
	q[ql] = t; ql++; park[t] = WAITING;
	if :: ISW(t) -> nqw++ :: else -> nqr++ fi
}
/* A woken writer queues again at the head (RW8). */
inline enq_head(t) {
	sc = ql;
	do :: sc > 0 -> q[sc] = q[sc - 1]; sc-- :: else -> break od;
	q[0] = t; ql++; park[t] = WAITING; sc = 0;
	if :: ISW(t) -> nqw++ :: else -> nqr++ fi
}
inline deq(t) {
	sc = 0;
	do :: q[sc] != t -> sc++; assert(sc < ql) :: else -> break od;
	do :: sc + 1 < ql -> q[sc] = q[sc + 1]; sc++ :: else -> break od;
	ql--; q[ql] = 0; sc = 0;
	if :: ISW(t) -> nqw-- :: else -> nqr-- fi
}
/* plk_chain_rw_update: the queue lends to every holder: the writer, the
 * solo holder (both named by the word), or each thread whose slot names
 * the rwlock (a scan of the read sets) and the converted reader __solo
 * names (no mark: it always unlocks through the bucket); an empty queue
 * lends nothing (the entries go). */
inline lend_update() {
	if
	:: !wt -> skip
	:: wt && wr != 0 -> lent[wr] = (ql > 0)
	:: wt && wr == 0 && solo != 0 -> lent[solo] = (ql > 0)
	:: wt && wr == 0 && solo == 0 ->
		if :: stid != 0 -> lent[stid] = (ql > 0) :: else -> skip fi;
		sc = 1;
		do
		:: sc <= N ->
			/* named (marked 3 by CAS) only with someone queued */
			if
			:: NAMES(sc) && ql > 0 -> slot[sc] = 3; lent[sc] = 1; past[sc] = 0
			:: NAMES(sc) && ql == 0 -> lent[sc] = 0
			:: else -> skip
			fi;
			sc++
		:: else -> break
		od;
		sc = 0
	fi
}

/* A conversion (under the bucket: the callers' d_steps): the solo hold
 * becomes a counted one (cnt stays 1, the joiners add theirs), named by
 * __solo; SHARED is set for good.  The code stores __solo, then CASes
 * the word; here the word's read and the CAS are one step, as the bucket
 * join's are (the code's CAS fails only while WAITERS is clear, as the
 * solo holder leaves by its fast CAS: it restores __solo and reads the
 * word again).  -DBROKEN_RW_SOLO_CONVERT: __solo not written. */
inline convert() {
#ifndef BROKEN_RW_SOLO_CONVERT
	stid = solo;
#endif
	solo = 0; sh = 1
}

/* withdraw_publishers: wt was just cleared: no lend through the lock may
 * stay; a slot naming it may be a publisher's, whose CAS can still
 * succeed (ABA), so its lend goes. */
inline unlend_publishers() {
#ifndef BROKEN_RW_ABA
	sc = 1;
	do
	:: sc <= N -> if :: NAMES(sc) -> lent[sc] = 0 :: else -> skip fi; sc++
	:: else -> break
	od;
	sc = 0
#else
	skip
#endif
}

inline withdraw() { lent[me] = 0 }

/* ---- the rwlock's queue in the parking lot (parkinglot.pml) ----------
 * What its bucket covers is one step: the word's read and CAS, the queue
 * and the lend change together (the fast paths' CASes fail meanwhile).
 * The sleep (the park's, park.c): HANDED, or (a writer) WOKEN to compete, back to
 * wrlock's bucket step (RW8); a queued writer may wake to rescan
 * (rw_rescan, RW_RESCANS times: the code's period); a timed call's
 * deadline may pass instead (once per thread: tmo), and then the exit
 * (rw_timedout) leaves under the bucket unless a grant or a wake came
 * first (woken: RW_RETRY, back to the bucket step).  A reader's pending
 * slot is abandoned (a recursive reader's held one is not); the queue's
 * lend is recomputed (an emptied queue withdraws the holders' entries;
 * the bit stays, RW2) and whatever the leaving made grantable is granted. */
#define rw_bucket_lock	bucket_lock
#define rw_bucket_unlock	bucket_unlock
#define rw_UNDER	d_step
#define rw_ONE_STEP	1
/* A woken writer queues again at the head (RW8). */
inline rw_enqueue(t) {
	if :: woken -> enq_head(t) :: else -> enq(t) fi
}
/* (the exit's dequeue: with -DBROKEN_RW_TIMEDOUT maybe granted already) */
inline rw_dequeue(t) {
	sc = 0;
	do :: sc < ql && q[sc] != t -> sc++ :: else -> break od;
	if :: sc < ql -> deq(t) :: else -> sc = 0 fi
}
#define rw_WAKES	1
/* (pl back to PL_NO on every way out) */
#define rw_handed()	got = 1; pl = PL_NO
#define rw_woken()	woken = 1; pl = PL_NO	/* a writer: back to the bucket (RW8) */
#define rw_LEAVES	tmo
#define rw_leaving()	tmo = 0; pl = PL_NO
/* rw_rescan: a queued writer names the readers that joined past it */
inline rw_rescan() {
	rescans++;
	bucket_lock();
	d_step {
		fw = 0; gk = 0;
		do
		:: gk < ql && fw == 0 -> if :: ISW(q[gk]) -> fw = q[gk] :: else -> skip fi; gk++
		:: else -> break
		od;
		gk = 0;
		if
		:: park[me] == WAITING && wr == 0 && fw == me ->
#ifndef BROKEN_RW_RESCAN
			lend_update();
#endif
			CHECK(READERS_LENT, "violated: RW5: a reader is not lent to after a rescan\n")
		:: else -> skip
		fi;
		fw = 0
	};
	bucket_unlock()
}
/* the monitor saw NONRECURSIVE's deadlock: stop; the rescan */
#ifndef PREFER_W
#define rw_ALSO	:: stuck -> goto gone :: ISW(me) && rescans < RW_RESCANS && park[me] == WAITING -> rw_rescan()
#else
#define rw_ALSO	:: stuck -> goto gone
#endif
#ifndef BROKEN_RW_TIMEDOUT
#define rw_STILL_QUEUED	(park[me] == WAITING)
#else
#define rw_STILL_QUEUED	true	/* the park word not looked at */
#endif
inline rw_left() {
	if :: !ISW(me) && !rec -> slot[me] = 0 :: else -> skip fi;	/* rd_hold_abandon */
	lend_update()
}
inline rw_left_wake() {
#ifndef BROKEN_RW_GRANT
	grant_wake();
#else
	skip;
#endif
#ifdef BROKEN_RW_TIMEDOUT_CLEAR
	skip;
	d_step { if :: ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi };
#endif
}
#define rw_after_left()
inline rw_taken_off() {
	if
	:: park[me] == HANDED -> got = 1
#ifndef BROKEN_RW_WOKEN_TMO
	:: park[me] == WOKEN -> woken = 1	/* RW_RETRY */
#else
	:: park[me] == WOKEN -> nwoken--	/* gives up: ETIMEDOUT */
#endif
	fi
}
#define rw_after_taken()
#define PL_Q rw
#include "parkinglot.pml"

/* grant, the wake of every release and of the exit: the first writer,
 * or every queued reader.  Under PREFER_READER a writer is handed the
 * lock, or (its wait under the handoff bound: a free choice here, made
 * before the d_step) L is released and it is woken to compete (RW8). */
#define GM_HAND		1	/* gm: hand the first writer the lock */
#define GM_WAKE		2	/* wake it to compete (RW8) */
#define GM_READERS	3	/* grant every queued reader */
#ifndef PREFER_W
#define PL_PREPARE_WAKE
#define grant_prepare_wake()	if :: hw = 1 :: hw = 0 fi
#endif
inline grant_choose() {
	fw = 0; gk = 0;
	do
	:: gk < ql && fw == 0 -> if :: ISW(q[gk]) -> fw = q[gk] :: else -> skip fi; gk++
	:: else -> break
	od;
	gk = 0;
	if
	:: wr != 0 || !wt -> skip
#ifdef PREFER_W
	:: wr == 0 && wt && cnt == 0 && fw != 0 -> gm = GM_HAND
	:: wr == 0 && wt && fw == 0 && QR ->
#else
	:: wr == 0 && wt && cnt == 0 && fw != 0 && !QR && hw -> gm = GM_WAKE
	:: wr == 0 && wt && cnt == 0 && fw != 0 && !QR && !hw -> gm = GM_HAND
	:: wr == 0 && wt && QR ->
#endif
		gm = GM_READERS; c0 = cnt; g = 0; tk = 0
	:: else -> skip
	fi
}
/* The next reader (gk: the cursor past the writers, who stay); the batch
 * full (-DRW_BATCH): come back for the rest. */
#ifdef RW_BATCH
#define GRANT_FULL	(g == RW_BATCH)
#else
#define GRANT_FULL	false
#endif
#define GRANT_READER	(gm == GM_READERS && gk < ql && !ISW(q[gk]))
#define grant_HAS_NEXT	((gm == GM_HAND || gm == GM_WAKE) || (GRANT_READER && !GRANT_FULL))
#define grant_NEXT	(gm == GM_READERS -> q[gk] : fw)
#define grant_T		gt
#define grant_EVERY	(gm == GM_READERS)
#define grant_PICK_ALSO	:: GRANT_READER && GRANT_FULL -> again = 1; break \
			:: gm == GM_READERS && gk < ql && ISW(q[gk]) -> gk++
inline grant_tell(t) {
	if
	:: gm == GM_WAKE ->
		/* L stays free; the bit stays while others are queued, else
		 * goes (withdrawing, as every clear) */
		park[t] = WOKEN; nwoken++;
		if :: ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi
	:: gm == GM_HAND ->
		wr = t;
#ifndef BROKEN_RW_MORE
		wt = (ql > 0);
#else
		wt = QR;	/* first_writer's reader flag for "more" */
#endif
		if :: !wt -> unlend_publishers() :: else -> skip fi;
		lend_update(); park[t] = HANDED
	:: gm == GM_READERS ->
		/* the slot a queued reader reserved; a recursive one has no
		 * grant_slot (its slot names L); a solo or converted holder's
		 * read reserved one.  Counted and HANDED in finish. */
		if :: rd[t] == 0 || solo == t || stid == t -> slot[t] = 1 :: else -> skip fi;
		g++; tk = tk | (1 << t)
	fi
}
/* Readers: count and HANDED after the loop, as the code does; into a solo
 * word by conversion. */
inline grant_finish() {
	if
	:: gm == GM_READERS ->
#ifndef BROKEN_RW_BATCH
		stop = 0;	/* the batch is counted and handed, then the granter comes back */
#else
		stop = again;	/* returning before the word and HANDED: the batch sleeps on */
#endif
		if :: stop -> skip :: else ->
		if :: solo != 0 && g > 0 -> convert() :: else -> skip fi;
		cnt = cnt + g;
		sc = 1;
		do
		:: sc <= N -> if :: tk & (1 << sc) -> park[sc] = HANDED :: else -> skip fi; sc++
		:: else -> break
		od;
		sc = 0;
#ifndef BROKEN_RW_KEEP
		wt = (ql > 0 || c0 > 0);	/* readers from before may be mid-unlock */
#else
		wt = (ql > 0);
#endif
		lend_update();
		if :: !wt -> unlend_publishers() :: else -> skip fi
		fi
	:: else -> skip
	fi;
	fw = 0; gk = 0; gt = 0; c0 = 0; g = 0; tk = 0; stop = 0; hw = 0; gm = 0
}
/* plk_unpark_all (unlock_slow, rw_timedout): come back while a batch filled up.  The code, back
 * in the bucket, first looks whether anyone is still queued and with
 * nobody leaves without touching the rwlock (the granted readers may
 * have freed it: not expressible here); a wake with an empty queue
 * changes nothing, so the model's plain one is the same. */
#define PL_BATCH
#define PL_CLIENT grant
#include "parkinglot.pml"
#undef PL_CLIENT
#undef PL_BATCH
#undef PL_PREPARE_WAKE

/* The releases, through the bucket: each releases its hold (begin),
 * grants (grant_wake) and withdraws after the bucket. */
#define PL_WAKE_OF grant
/* unlock_slow, a writer's */
#define wrunlock_begin(site)	d_step { wr = 0; if :: ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi }
#define wrunlock_after_wake(site)	withdraw()
#define PL_CLIENT wrunlock
#include "parkinglot.pml"
#undef PL_CLIENT
/* unlock_slow, a slot's last hold; rd_not_reader after, but RREC's slot
 * hold inside its converted one: that hold is lent to still (its own
 * unlock withdraws) */
#define rdunlock_slot_begin(site)	d_step { cnt--; if :: cnt == 0 && ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi }
#ifndef BROKEN_RW_SOLO_WITHDRAW
#define rdunlock_slot_after_wake(site)	if :: stid == me -> skip :: else -> withdraw() fi
#else
#define rdunlock_slot_after_wake(site)	withdraw()
#endif
#define PL_CLIENT rdunlock_slot
#include "parkinglot.pml"
#undef PL_CLIENT
/* the solo or converted hold's (rdunlock_solo): the word read again */
inline rdunlock_solo_begin(site) {
	d_step {
#ifndef BROKEN_RW_SOLO_STALE
		if
		:: solo == me -> solo = 0; cnt = 0	/* word -> WAITERS */
		:: else -> if :: stid == me -> stid = 0 :: else -> skip fi; cnt--	/* converted */
		fi;
#else
		if :: act == 1 -> solo = 0; cnt = 0 :: else -> cnt-- fi;
#endif
		if :: cnt == 0 && ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi
	}
}
#define rdunlock_solo_after_wake(site)	withdraw()
#define PL_CLIENT rdunlock_solo
#include "parkinglot.pml"
#undef PL_CLIENT
#undef PL_WAKE_OF

/* --- read lock: plk_rw_rdlock_fast, rdlock_slow ----------------------- */
/* One publish-then-CAS attempt (the fast path, and each spin of
 * rdlock_slow): the CAS also fails when another reader moved the count. */
inline rd_try() {
#ifndef BROKEN_RW_PUBLISH
	slot[me] = 1;
	atomic {
		if
		:: !wt && wr == 0 && solo == 0 -> cnt++; got = 1
		:: true -> slot[me] = 0; retracted = 1
		fi
	}
#else
	atomic { if :: !wt && wr == 0 && solo == 0 -> cnt++; got = 1 :: true -> retracted = 1 fi };
	if :: got -> slot[me] = 1 :: else -> skip fi
#endif
}

/* One turn of rdlock_slow's spin: read the word; WAITERS under
 * NONRECURSIVE: leave the spin (act 1, for good); not joinable
 * (SPINJOIN: a writer, a solo word, or under PREFER_READER a free lock
 * with WAITERS set): relax (the code leaves the spin on a writer's or a
 * solo word: a relaxing turn changes nothing, so that is a subset of
 * this); else publish,
 * once (a scan's mark stays: 3), and CAS (which the model lets fail at
 * any moment: another reader moved the count), and after a failed CAS
 * read the word again: still joinable: go round still published, else
 * retract. */
inline rd_spin() {
	if
	:: !got && act != 1 ->
#ifdef PREFER_W
		atomic { if :: wt -> act = 1 :: !wt && (wr != 0 || solo != 0) -> act = 0 :: !wt && wr == 0 && solo == 0 -> act = 2 fi };
#else
		atomic { if :: SPINJOIN -> act = 2 :: else -> act = 0 fi };
#endif
		if
		:: act == 2 ->
			act = 0;
#ifndef BROKEN_RW_REPUBLISH
			if :: slot[me] == 0 -> slot[me] = 1 :: else -> skip fi;
#else
			slot[me] = 1;
#endif
			atomic { if :: SPINJOIN -> RW7CHECK; cnt++; got = 1; past[me] = (wt && slot[me] == 1) :: true -> skip fi };
			if
			:: !got -> atomic { if :: SPINJOIN -> skip :: else -> slot[me] = 0; retracted = 1 fi }
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* The fast path's solo hold: word 0 and SHARED clear: CAS 0 -> SOLO|me
 * (a failed CAS changes nothing: the counted path reads the word
 * again). */
#ifndef RW_STALE_SHARED
#define SOLOFREE	(cnt == 0 && wr == 0 && !wt && !sh)
#define COUNTFREE	(cnt > 0 || sh)	/* a free word goes solo */
#else
/* SHARED is read apart from the word: maybe long before (it only goes
 * 0 -> 1 but for a failed conversion's: the value at the call's start
 * is the stalest), or a conversion's store that its failed CAS takes
 * back: a free word may go counted, whatever sh says */
#define SOLOFREE	(cnt == 0 && wr == 0 && !wt && !shr)
#define COUNTFREE	true
#endif
inline solo_take() { solo = me; cnt = 1; got = 1 }

/* ---- the parks of the rwlock (parkinglot.pml), on its queue --------- */

/* rdlock_slow's bucket: the word read and the CAS (the code retries a
 * failed one) are one step here: join (into a solo word by conversion:
 * its CAS fails only as the solo holder leaves, WAITERS clear: the code
 * restores __solo and retries), or park with a pending slot. */
inline rdlock_slow_validate() {
	if
	:: MAYJOIN -> if :: solo != 0 -> convert() :: else -> skip fi;
		slot[me] = 1; cnt++; lend_update(); got = 1;
#if !defined(BROKEN_RW_STALE) && !defined(BROKEN_RW_RETRACT)
		/* joined with WAITERS clear: a retraction's lend is stale */
		if :: !wt && retracted -> withdraw(); retracted = 0 :: else -> skip fi;
#endif
		pl = PL_NO
	:: else -> pl = PL_PARKED
	fi
}
#define rdlock_slow_set_waiters()	if :: pl -> wt = 1 :: else -> skip fi
inline rdlock_slow_queued() {
	slot[me] = 2;	/* rd_hold_publish: pending, a grant fills it */
#if !defined(BROKEN_RW_RETRACT) && !defined(BROKEN_RW_WITHDRAW)
	/* a retracted publication's lend goes before we sleep */
	if :: retracted -> withdraw(); retracted = 0 :: else -> skip fi;
#endif
	lend_update()
}
/* After the bucket: a join with a retraction pending unlocks through the
 * bucket (wflag).  -DBROKEN_RW_WITHDRAW: a queued reader withdraws the
 * retracted publication's lend only now. */
#ifndef BROKEN_RW_RETRACT
#ifdef BROKEN_RW_WITHDRAW
#define rdlock_slow_flush()	if :: pl && retracted -> withdraw(); retracted = 0 :: else -> skip fi; wflag = retracted
#else
#define rdlock_slow_flush()	wflag = retracted
#endif
#else
#define rdlock_slow_flush()
#endif
#define rdlock_slow_before_sleep()
#define PL_Q rw
#define PL_CLIENT rdlock_slow
#include "parkinglot.pml"
#undef PL_CLIENT

/* rdlock_rec's bucket: join, or under NONRECURSIVE queue behind a queued
 * writer (the slot stays ours, held: rd_hold_publish and grant_slot
 * leave a recursive slot alone). */
inline rdlock_rec_validate() {
	assert(wr == 0 && cnt > 0 && NAMES(me));
	if
	:: MAYJOIN -> cnt++; lend_update(); got = 1; pl = PL_NO
	:: else -> pl = PL_PARKED
	fi
}
#define rdlock_rec_set_waiters()	if :: pl -> wt = 1 :: else -> skip fi
#ifdef BROKEN_RW_REC_PENDING
#define rdlock_rec_queued()	slot[me] = 2; lend_update()
#else
#define rdlock_rec_queued()	lend_update()
#endif
#define rdlock_rec_flush()
#define rdlock_rec_before_sleep()
#define PL_CLIENT rdlock_rec
#include "parkinglot.pml"
#undef PL_CLIENT

/* wrlock_slow's bucket: the free branch takes L (WAITERS set only while a
 * woken writer is on its way back (RW8: this one, or a barger past it);
 * kept while anyone is queued, else cleared, withdrawing (RW6)); else
 * park, at the head if woken. */
inline wrlock_slow_validate() {
	if
	:: cnt == 0 && wr == 0 ->
		CHECK(!wt || nwoken > 0, "violated: wrlock_slow found L free with WAITERS set\n");
		wr = me;
		if :: wt && ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi;
		lend_update(); got = 1; pl = PL_NO;
		if :: woken -> nwoken--; woken = 0 :: else -> skip fi
	:: else -> pl = PL_PARKED
	fi
}
#define wrlock_slow_set_waiters()	if :: pl -> wt = 1 :: else -> skip fi
inline wrlock_slow_queued() {
	lend_update();
	if :: woken -> nwoken--; woken = 0 :: else -> skip fi
}
#define wrlock_slow_flush()
#define wrlock_slow_before_sleep()
#define PL_CLIENT wrlock_slow
#include "parkinglot.pml"
#undef PL_CLIENT
#undef PL_Q

/* A new read hold: the first, or RREC's inside a solo or converted hold
 * (no slot for L: a new one).  Every call starts with no retraction
 * pending: the one an earlier call left was consumed by its slow path
 * (the fast path refuses while one is pending, rwlockword.h). */
inline rdlock() {
	retracted = 0; wflag = 0; got = 0; rec = 0;
#ifdef RW_STALE_SHARED
	shr = sh;
#endif
	if	/* fast path: solo, else counted (which refuses a solo word) */
	:: atomic { SOLOFREE -> solo_take() }
	:: !wt && wr == 0 && solo == 0 && COUNTFREE -> rd_try()
	:: else -> skip
	fi;
#ifdef RW_DBLFAST
	/* The interposer's call: its own fast path failed (above), then
	 * proxylock_rwlock_rdlock's take() runs it again.  It refuses while
	 * a retraction is pending: only the slow path consumes that. */
	if
#ifndef BROKEN_RW_DBLFAST
	:: atomic { !got && !retracted && SOLOFREE -> solo_take() }
	:: !got && !retracted && !wt && wr == 0 && solo == 0 && COUNTFREE -> rd_try()
#else
	:: !got && !wt && wr == 0 && solo == 0 ->
		rd_try();
		if :: got -> retracted = 0 :: else -> skip fi	/* returns: never consumed */
#endif
	:: else -> skip
	fi;
#endif
	rd_spin(); rd_spin();	/* two of rdlock_slow's spins */
#ifndef BROKEN_RW_SPIN
	/* the spin ended with a kept publication: retract (a scan may have named us) */
	if :: !got && NAMES(me) -> slot[me] = 0; retracted = 1 :: else -> skip fi;
#endif
	act = 0;
	if
	:: got ->
#if !defined(BROKEN_RW_STALE) && !defined(BROKEN_RW_RETRACT)
		/* rd_joined_clear: joined by a CAS with WAITERS clear after a
		 * retraction: under the bucket, with the bit still clear, any
		 * lend keyed by L on us is stale: it goes now */
		if
		:: retracted ->
			bucket_lock();
			d_step { if :: !wt -> withdraw(); retracted = 0 :: else -> skip fi };
			bucket_unlock()
		:: else -> skip
		fi;
#endif
#ifndef BROKEN_RW_RETRACT
		wflag = retracted
#else
		skip
#endif
#ifdef RW_NORECORD
	:: !got && rd[me] > 0 ->
		/* RREC's read inside its solo or converted hold, no record:
		 * rw_yielding, where that hold counts as recursive (YJOIN);
		 * it publishes and CASes, and joins a solo word by conversion
		 * under the bucket (this atomic step stands for that bucket
		 * hold: it waits for the bucket to be free) */
		yielder = me;
		atomic { YJOIN && (solo == 0 || bl == 0) ->
			if
			:: solo != 0 -> convert(); slot[me] = 1; cnt++; lend_update()
			:: else -> slot[me] = 1; cnt++
			fi;
			got = 1; yielder = 0 };
		wflag = retracted
	:: !got && rd[me] == 0 ->
#else
	:: else ->
#endif
		rdlock_slow_park()
	fi;
	if
	:: got -> d_step { rd[me]++; CHECK(bl != 0 || HOLDERS_LENT, "violated: RW5: a reader is not lent to\n");
		CHECK(wt || !lent[me], "violated: RW6: a reader reads with a lend while WAITERS is clear\n") }
	/* timed out (RREC's read inside its solo or converted hold: lent to
	 * for that hold) */
	:: else -> CHECK(rd[me] > 0 || !lent[me], "violated: RW6: a reader that timed out is lent to\n")
	fi
}

/* A recursive read hold (slot[me] names L, rd[me] > 0): the fast path's
 * recursive branch (one CAS, failing on WRITER|WAITERS or a moved
 * count), rdlock_slow's spin (its CAS fails only on WAITERS: nobody
 * writes while we read; a failed try publishes nothing, so one try
 * stands for all), then the bucket: join, or under NONRECURSIVE queue
 * behind a queued writer (the slot stays ours, held: rd_hold_publish and
 * grant_slot leave a recursive slot alone).  No retraction: nothing is
 * published. */
inline rdlock_rec() {
	got = 0; rec = 1;
	atomic { if :: SPINJOIN -> RW7CHECK; cnt++; got = 1 :: true -> skip fi };
	if
	:: got -> skip
#ifdef RW_NORECORD
	:: else ->
		/* rw_yielding (no record): no queue, yield until its CAS may
		 * go; a recursive read joins with WAITERS set unless
		 * NONRECURSIVE (a blocking guard stands for the loop). */
		yielder = me;
#ifndef BROKEN_RW_YIELD
		atomic { YJOIN -> cnt++; got = 1; yielder = 0 }
#else
		atomic { !wt && wr == 0 -> cnt++; got = 1; yielder = 0 }
#endif
#else
	:: else -> rdlock_rec_park()
#endif
	fi;
	if :: got -> d_step { rd[me]++; CHECK(bl != 0 || HOLDERS_LENT, "violated: RW5: a reader is not lent to\n") } :: else -> skip fi;
	rec = 0
}

/* --- unlock of a read hold: plk_rw_rdunlock_fast, unlock_slow --------- */
/* Not the last hold (depth > 1): a plain decrement, even with WAITERS
 * set; the count stays above 0, so nobody is granted. */
inline rdunlock_rec() {
	d_step {
		CHECK(NAMES(me), "violated: a reader's unlock finds no slot naming L (EPERM)\n");
		rd[me]--; assert(rd[me] > 0 && wr == 0 && cnt >= 2); cnt-- }
}

/* The last hold of a slot.  WAITERS clear (as read): plain clear, then the CAS,
 * slow if the bit appeared.  WAITERS set: exchange the slot (act takes
 * its old value): named (3) -> slow, to withdraw; else decrement here
 * unless ours is the last hold (its release grants). */
inline rdunlock_slot() {
	slow = 0;
	rd[me]--; past[me] = 0;
#ifndef BROKEN_RW_UNLOCK
	if
	:: wflag -> slot[me] = 0; slow = 1
	:: else ->
		atomic { act = wt };
		if
		:: !act -> slot[me] = 0; atomic { if :: !wt -> cnt-- :: else -> slow = 1 fi }
		:: act ->
			atomic { act = slot[me]; slot[me] = 0 };
#ifndef BROKEN_RW_NAMED
			if
			:: act == 3 -> slow = 1
			:: else ->
#endif
				atomic { if :: wt && cnt == 1 -> slow = 1 :: else -> cnt-- fi }
#ifndef BROKEN_RW_NAMED
			fi
#endif
		fi;
		act = 0
	fi;
#else
	atomic { if :: !wt -> cnt-- :: else -> slow = 1 fi };
	slot[me] = 0;
#endif
	if
	:: slow -> rdunlock_slot_unpark(0)
	:: else -> skip
	fi;
	wflag = 0;
	CHECK(rd[me] > 0 || !lent[me], "violated: RW6: a thread that left is lent to\n")
}

/* The hold with no slot: solo (the word names us) or converted (__solo
 * names us).  plk_rw_rdunlock_fast's solo CAS SOLO|me -> 0 needs WAITERS
 * clear; else unlock_other reads the word again (one read here: the
 * failed CAS wrote nothing, and a solo word with WAITERS set changes
 * only by a conversion): SOLO|me: released under the bucket like a
 * writer's hold; counted: __solo names us: clear its TID, then the
 * decrement under the bucket (the code confirms __solo and clears it
 * under the bucket, just before the decrement: here it is cleared
 * before the bucket, which lets more interleave, scans that no longer
 * name us while we still count).  Either way grant or clear as any
 * release, and withdraw after the bucket.  Under the bucket the word is
 * read again: a solo hold seen with WAITERS set may have been converted
 * since (a bucket join or grant), and is then released as converted
 * (-DBROKEN_RW_SOLO_STALE: not read again, the solo release clears the
 * count). */
inline rdunlock_solo() {
	rd[me]--; past[me] = 0;
	atomic {
		if
#ifndef BROKEN_RW_SOLO_FAST
		:: solo == me && !wt -> solo = 0; cnt = 0; act = 0
		:: solo == me && wt -> act = 1
#else
		:: solo == me -> solo = 0; cnt = 0; act = 0
#endif
		:: solo != me -> act = 2
		fi
	};
	if
	:: act == 2 ->
#ifndef BROKEN_RW_SOLO_CONVERT
		CHECK(stid == me, "violated: a reader's unlock finds no slot naming L (EPERM)\n");
#endif
#ifndef BROKEN_RW_SOLO_CLEAR
		stid = 0	/* __solo's TID (atomic and: SHARED stays) */
#else
		/* decrement by CAS while WAITERS is clear, __solo cleared after */
		atomic { if :: !wt -> cnt--; act = 0 :: else -> skip fi };
		stid = 0
#endif
	:: else -> skip
	fi;
	if
	:: act != 0 -> rdunlock_solo_unpark(0)
	:: else -> skip
	fi;
	act = 0;
	CHECK(!lent[me], "violated: RW6: a thread that left is lent to\n")
}

/* The last hold's unlock: the slot first (plk_rw_rdunlock_fast finds it
 * by its value, mark or not), else the solo or converted hold. */
inline rdunlock() {
	if
	:: NAMES(me) -> rdunlock_slot()
	:: else -> rdunlock_solo()
	fi
}

/* --- write lock: wrlock_slow; its deadline may pass (rw_exit) --------- */
/* One CAS 0 -> WRITER|me stands for the fast path and every spin of
 * wrlock_slow (its writer backoff's 12 reads included): a failed one
 * changes nothing. */
inline wrlock() {
	got = 0; woken = 0; rescans = 0;
	atomic { if :: cnt == 0 && wr == 0 && !wt -> wr = me; got = 1 :: else -> skip fi };
	if
	:: got -> skip
	:: else ->
		do
		:: wrlock_slow_park();
			if :: woken -> skip :: else -> break fi	/* RW_RETRY: once more */
		od
	fi;
	rescans = 0;
	if
	:: got -> d_step { writing = me; CHECK(wr == me && cnt == 0 && solo == 0 && RDSUM == 0, "violated: exclusion\n") }
	:: else -> CHECK(!lent[me], "violated: RW6: a writer that timed out is lent to\n")
	fi
}

inline wrunlock() {
	writing = 0;
	atomic { if :: wr == me && !wt -> wr = 0; got = 0 :: else -> skip fi };
	if
	:: got -> wrunlock_unpark(0)
	:: else -> skip
	fi;
	CHECK(!lent[me], "violated: RW6: a thread that left is lent to\n")
}

proctype writer(byte me)
{
	bool got, again, stop, rec, tmo, woken;
	byte pl;	/* the park's validation (parkinglot.pml) */
	byte rescans;
	byte r = 0;

#ifndef RW_UNTIMED_WRITERS
	if :: tmo = 1 :: tmo = 0 fi;	/* a timed call, or not */
#endif
	do
	:: r < RW_WROUNDS ->
		wrlock();
		if :: got -> wrunlock() :: else -> skip fi;
		r++
	:: else -> break
	od;
	done++;
gone:	skip
}

proctype reader(byte me)
{
	bool retracted, wflag, got, slow, again, stop, rec, tmo, woken;
	byte pl;	/* the park's validation (parkinglot.pml) */
#ifdef RW_STALE_SHARED
	bool shr;	/* SHARED as its fast path read it */
#endif
	byte rescans;
	byte r = 0, act = 0;

#ifdef RW_TIMED_READERS
	if :: tmo = 1 :: tmo = 0 fi;
#endif
	do
	:: r < RW_ROUNDS ->
		rdlock();
		if
		:: got ->
			CHECK(wr == 0 && cnt > 0, "violated: exclusion\n");
#ifdef RW_RECURSIVE
			if
			:: me == RREC && NAMES(me) ->
				rdlock_rec();
				if
				:: got -> CHECK(wr == 0 && cnt > 1, "violated: exclusion\n"); rdunlock_rec()
				:: else -> skip
				fi
			:: me == RREC && !NAMES(me) ->
				/* held solo or converted: no slot names L, so the
				 * read reserves one, a new slot hold (the counted
				 * paths, or the bucket: a join by conversion, or
				 * under NONRECURSIVE queued behind a writer); its
				 * unlock comes first (the slot is found first) */
				rdlock();
				if
				:: got -> CHECK(wr == 0 && cnt > 1, "violated: exclusion\n"); rdunlock_slot()
				:: else -> skip
				fi
			:: else -> skip
			fi;
#endif
			rdunlock()
		:: else -> skip
		fi;
		r++
	:: else -> break
	od;
	done++;
gone:	skip
}

active proctype monitor()
{
	timeout;
	/* Nothing can move.  Whoever holds L must be in it (or asleep in a
	 * recursive read): else a grant was dropped and L stays held. */
	CHECK(cnt == RDSUM && wr == writing, "violated: lost wake-up: L held for a thread not in it\n");
	CHECK(yielder == 0, "violated: a recursive read yields for ever behind a writer that waits for it\n");
	/* A reader asleep in the queue while holding L (a recursive read). */
	d_step {
		gt = 0; gk = 0;
		do
		:: gk < ql -> if :: rd[q[gk]] > 0 -> gt = 1 :: else -> skip fi; gk++
		:: else -> break
		od;
		gk = 0
	};
#if defined(PREFER_W) && defined(RW_ALLOW_NR_DEADLOCK)
	if
	:: gt -> printf("NONRECURSIVE: a recursive read waits behind a writer that waits for it (glibc's deadlock)\n");
		stuck = 1
	:: else ->
#else
	CHECK(!gt, "violated: recursive read deadlock: a reader holding L sleeps in its queue\n");
#endif
	CHECK(!(ql > 0 && GRANTABLE), "violated: lost wake-up: a queued waiter could be granted\n");
	CHECK(!ANYLENT, "violated: RW6: lent to after everyone left\n");
	CHECK(nwoken == 0, "violated: a woken writer never came back\n");
	CHECK(done == N, "violated: hang\n")
#if defined(PREFER_W) && defined(RW_ALLOW_NR_DEADLOCK)
	fi
#endif
}

init
{
	byte i = 1;

	atomic {
		/* __solo's SHARED as init left it: set, the protocol without
		 * solo holds; clear, the first reader of a free word holds
		 * solo */
		if :: sh = 1 :: sh = 0 fi;
		do
		:: i <= NW -> run writer(i); i++
		:: i > NW && i <= N -> run reader(i); i++
		:: else -> break
		od;
		i = 0
	}
}

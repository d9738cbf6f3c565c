/*
 * rwlock.pml - SPIN model of the proxylock rwlock (lib/rwlock.c,
 * lib/rwlockword.h, lib/rdset.h), included by proxylock.pml under
 * -DRWLOCK; docs/design.md, "The protocol model", maps each inline to
 * the code.  One rwlock, one bucket; thread 1 a writer whose deadline
 * may pass, threads 2 and 3 readers (RW_ROUNDS rounds each, default 1).
 *
 * The word is three variables changed together (one CAS): cnt (read
 * holds), wr (the writer's id, 0 none), wt (PLK_RW_WAITERS).  slot[t]
 * is thread t's read-set slot for the rwlock: 0 clear, 1 names it, 2
 * pending (a queued reader's reservation).  lent[t] is the donation
 * engine's entry keyed by the rwlock on t (ghost: set and cleared where
 * the code's plk_donate_set and withdraw run).  reading[t] / writing
 * are ghosts: t is between its lock's return and its unlock.
 *
 *   -DPREFER_W          PREFER_WRITER_NONRECURSIVE (else PREFER_READER)
 *   -DRW_BATCH=n        grant at most n readers per bucket hold (the
 *                       code's GRANT_BATCH), coming back for the rest
 * Broken variants, each must fail:
 *   -DBROKEN_RW_PUBLISH a reader publishes its slot after its count
 *                       increment: a writer misses it (violated: RW5)
 *   -DBROKEN_RW_UNLOCK  a reader decrements before clearing its slot: a
 *                       writer lends to it after it left (violated: RW6)
 *   -DBROKEN_RW_GRANT   with -DPREFER_W: a writer that times out does
 *                       not grant: readers queued behind it sleep on a
 *                       read-held lock they may join (violated: RW3)
 *   -DBROKEN_RW_RETRACT a reader whose publication was retracted (its
 *                       CAS failed) does not withdraw (violated: RW6)
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
 */

#define N	3
#ifndef RW_ROUNDS
#define RW_ROUNDS 1
#endif
#define WAITING	0
#define HANDED	2

#define CHECK(c, msg)	if :: !(c) -> printf(msg); assert(false) :: else -> skip fi

byte cnt, wr;			/* the word: read holds, writer id */
bool wt;			/* PLK_RW_WAITERS */
byte bl;			/* the bucket lock's holder */
byte q[N]; byte ql;		/* the queue, in order */
bool isw[N + 1];		/* queued as a writer */
byte park[N + 1];
byte slot[N + 1];
bool lent[N + 1];		/* ghost: the engine's entry for the rwlock */
bool reading[N + 1], writing;	/* ghosts */
byte done;

/* Is a writer queued?  Is a reader queued? */
#define QW	((ql > 0 && isw[q[0]]) || (ql > 1 && isw[q[1]]) || (ql > 2 && isw[q[2]]))
#define QR	((ql > 0 && !isw[q[0]]) || (ql > 1 && !isw[q[1]]) || (ql > 2 && !isw[q[2]]))
#ifdef PREFER_W
#define MAYJOIN	(wr == 0 && !QW)
#else
#define MAYJOIN	(wr == 0)
#endif
/* RW3: a queued waiter the rules would grant now. */
#ifdef PREFER_W
#define GRANTABLE (wr == 0 && ((cnt == 0 && ql > 0) || (QR && !QW)))
#else
#define GRANTABLE (wr == 0 && ((cnt == 0 && ql > 0) || QR))
#endif
/* RW5: every holder is lent to while anyone is queued. */
#define HOLDERS_LENT ((!reading[1] || ql == 0 || lent[1]) && (!reading[2] || ql == 0 || lent[2]) && \
                      (!reading[3] || ql == 0 || lent[3]) && (!writing || ql == 0 || lent[wr]))

inline bucket_lock() { atomic { bl == 0 -> bl = me } }
inline bucket_unlock() {
	d_step {
		assert(bl == me);
		CHECK(!(ql > 0 && !wt), "violated: RW1\n");
		CHECK(again || !GRANTABLE, "violated: RW3: a queued waiter could be granted\n");
		CHECK(HOLDERS_LENT, "violated: RW5: a holder is not lent to\n");
		bl = 0
	}
}

/* Queue operations and lend_update run under the bucket lock: callers
 * put them in a d_step. */
inline enq(t, w) { q[ql] = t; ql++; isw[t] = w; park[t] = WAITING }
inline deq(t) {
	if
	:: q[0] == t -> q[0] = q[1]; q[1] = q[2]
	:: q[1] == t -> q[1] = q[2]
	:: else -> assert(q[2] == t)
	fi;
	ql--; q[ql] = 0
}

/* plk_rw_lend_update: the queue lends to every holder: the writer, or
 * each thread whose slot names the rwlock (a scan of the read sets). */
inline lend_update() {
	if
	:: !wt -> skip
	:: wt && wr != 0 -> lent[wr] = (ql > 0)
	:: wt && wr == 0 ->
		if :: slot[1] == 1 -> lent[1] = (ql > 0) :: else -> skip fi;
		if :: slot[2] == 1 -> lent[2] = (ql > 0) :: else -> skip fi;
		if :: slot[3] == 1 -> lent[3] = (ql > 0) :: else -> skip fi
	fi
}

/* withdraw_publishers: wt was just cleared: no lend through the lock may
 * stay; a slot naming it may be a publisher's, whose CAS can still
 * succeed (ABA), so its lend goes. */
inline unlend_publishers() {
#ifndef BROKEN_RW_ABA
	if :: slot[1] == 1 -> lent[1] = 0 :: else -> skip fi;
	if :: slot[2] == 1 -> lent[2] = 0 :: else -> skip fi;
	if :: slot[3] == 1 -> lent[3] = 0 :: else -> skip fi
#else
	skip
#endif
}

/* grant(): the first writer, or every queued reader. */
inline grant() {
	d_step {
		fw = 0; k = 0;
		if :: ql > 0 && isw[q[0]] -> fw = q[0] :: ql > 1 && !isw[q[0]] && isw[q[1]] -> fw = q[1]
		   :: ql > 2 && !isw[q[0]] && !isw[q[1]] && isw[q[2]] -> fw = q[2] :: else -> skip fi;
		if
		:: wr != 0 || !wt -> skip
#ifdef PREFER_W
		:: wr == 0 && wt && cnt == 0 && fw != 0 ->
#else
		:: wr == 0 && wt && cnt == 0 && fw != 0 && !QR ->
#endif
			deq(fw); wr = fw; wt = (ql > 0); lend_update(); park[fw] = HANDED;
			if :: !wt -> unlend_publishers() :: else -> skip fi
#ifdef PREFER_W
		:: wr == 0 && wt && fw == 0 && QR ->
#else
		:: wr == 0 && wt && QR ->
#endif
			c0 = cnt; g = 0; tk = 0;
			do
			:: k < ql && !isw[q[k]] ->
#ifdef RW_BATCH
				if :: g == RW_BATCH -> again = 1; break :: else -> skip fi;
#endif
				t = q[k]; deq(t); slot[t] = 1; g++; tk = tk | (1 << t)
			:: k < ql && isw[q[k]] -> k++
			:: k >= ql -> break
			od;
#ifndef BROKEN_RW_BATCH
			stop = 0;	/* the batch is counted and handed, then the granter comes back */
#else
			stop = again;	/* returning before the word and HANDED: the batch sleeps on */
#endif
			if :: stop -> skip :: else ->
			/* count and HANDED after the loop, as the code does */
			cnt = cnt + g;
			if :: tk & 2 -> park[1] = HANDED :: else -> skip fi;
			if :: tk & 4 -> park[2] = HANDED :: else -> skip fi;
			if :: tk & 8 -> park[3] = HANDED :: else -> skip fi;
#ifndef BROKEN_RW_KEEP
			wt = (ql > 0 || c0 > 0);	/* readers from before may be mid-unlock */
#else
			wt = (ql > 0);
#endif
			lend_update();
			if :: !wt -> unlend_publishers() :: else -> skip fi
			fi
		:: else -> skip
		fi
	}
}
/* grant_and_unlock: come back while a batch filled up. */
inline grant_loop() {
	again = 0;
	grant();
	do
	:: again -> bucket_unlock(); bucket_lock(); again = 0; grant()
	:: else -> break
	od
}

inline withdraw() { lent[me] = 0 }

/* --- read lock: plk_rw_rdlock_fast, rdlock_slow ----------------------- */
/* One publish-then-CAS attempt (the fast path, and each spin of
 * rdlock_slow): the CAS also fails when another reader moved the count. */
inline rd_try() {
#ifndef BROKEN_RW_PUBLISH
	slot[me] = 1;
	atomic {
		if
		:: !wt && wr == 0 -> cnt++; joined = 1
		:: true -> slot[me] = 0; retracted = 1
		fi
	}
#else
	atomic { if :: !wt && wr == 0 -> cnt++; joined = 1 :: true -> retracted = 1 fi };
	if :: joined -> slot[me] = 1 :: else -> skip fi
#endif
}

inline rdlock() {
	retracted = 0; wflag = 0; joined = 0;
	if :: !wt && wr == 0 -> rd_try() :: else -> skip fi;	/* fast path */
	if :: !joined && !wt && wr == 0 -> rd_try() :: else -> skip fi;	/* one spin */
	if
	:: joined ->
#ifndef BROKEN_RW_RETRACT
		wflag = retracted
#else
		skip
#endif
	:: else ->
		bucket_lock();
		/* The word read and the CAS (the code retries a failed one)
		 * are one step here. */
		d_step {
			if
			:: MAYJOIN -> slot[me] = 1; cnt++; lend_update(); joined = 1
			:: else -> wt = 1; slot[me] = 2;
#if !defined(BROKEN_RW_RETRACT) && !defined(BROKEN_RW_WITHDRAW)
				/* a retracted publication's lend goes before we queue */
				if :: retracted -> withdraw(); retracted = 0 :: else -> skip fi;
#endif
				enq(me, 0); lend_update()
			fi
		};
		if
		:: joined ->
			bucket_unlock();
#ifndef BROKEN_RW_RETRACT
			wflag = retracted
#endif
		:: else ->
			bucket_unlock();
#if !defined(BROKEN_RW_RETRACT) && defined(BROKEN_RW_WITHDRAW)
			if :: retracted -> withdraw() :: else -> skip fi;
#endif
			park[me] == HANDED
		fi
	fi;
	d_step { reading[me] = 1; CHECK(bl != 0 || HOLDERS_LENT, "violated: RW5: a reader is not lent to\n") }
}

/* --- unlock of a read hold: plk_rw_rdunlock_fast, unlock_slow --------- */
inline rdunlock() {
	slow = 0;
	reading[me] = 0;
#ifndef BROKEN_RW_UNLOCK
	slot[me] = 0;
	if
	:: wflag -> slow = 1
	:: else -> atomic { if :: !wt -> cnt-- :: else -> slow = 1 fi }
	fi;
#else
	atomic { if :: !wt -> cnt-- :: else -> slow = 1 fi };
	slot[me] = 0;
#endif
	if
	:: slow ->
		bucket_lock();
		d_step { cnt--; if :: cnt == 0 && ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi };
		grant_loop();
		bucket_unlock();
		withdraw()
	:: else -> skip
	fi;
	wflag = 0;
	CHECK(!lent[me], "violated: RW6: a thread that left is lent to\n")
}

/* --- write lock, with a deadline that may pass: wrlock_slow ----------- */
inline wrlock() {
	got = 0;
	atomic { if :: cnt == 0 && wr == 0 && !wt -> wr = me; got = 1 :: else -> skip fi };
	if
	:: got -> skip
	:: else ->
		bucket_lock();
		d_step {
			if
			:: cnt == 0 && wr == 0 -> wr = me; wt = (ql > 0); lend_update(); got = 1
			:: else -> wt = 1; enq(me, 1); lend_update()
			fi
		};
		if
		:: got -> bucket_unlock()
		:: else ->
			bucket_unlock();
			if
			:: park[me] == HANDED -> got = 1
			:: timeout_ok -> timeout_ok = 0;	/* the deadline passes: rw_timedout */
				bucket_lock();
				if
				:: park[me] == HANDED -> got = 1; bucket_unlock()
				:: else ->
					deq(me); lend_update();
#ifndef BROKEN_RW_GRANT
					grant_loop();
#endif
					bucket_unlock()
				fi
			fi
		fi
	fi;
	if :: got -> d_step { writing = 1; CHECK(wr == me && cnt == 0, "violated: exclusion\n") } :: else -> skip fi
}

inline wrunlock() {
	writing = 0;
	atomic { if :: wr == me && !wt -> wr = 0; got = 0 :: else -> skip fi };
	if
	:: got ->
		bucket_lock();
		d_step { wr = 0; if :: ql == 0 -> wt = 0; unlend_publishers() :: else -> skip fi };
		grant_loop();
		bucket_unlock();
		withdraw()
	:: else -> skip
	fi;
	CHECK(!lent[me], "violated: RW6: a thread that left is lent to\n")
}

bool timeout_ok = 1;

proctype writer(byte me)
{
	bool got, again, stop;
	byte fw, k, t, c0, g, tk;

	wrlock();
	if :: got -> wrunlock() :: else -> skip fi;
	done++
}

proctype reader(byte me)
{
	bool retracted, wflag, joined, slow, again, stop;
	byte fw, k, t, c0, g, tk, r = 0;

	do
	:: r < RW_ROUNDS ->
		rdlock();
		CHECK(wr == 0 && cnt > 0, "violated: exclusion\n");
		rdunlock();
		r++
	:: else -> break
	od;
	done++
}

active proctype monitor()
{
	timeout;
	CHECK(!(ql > 0 && GRANTABLE), "violated: lost wake-up: a queued waiter could be granted\n");
	CHECK(!(lent[1] || lent[2] || lent[3]), "violated: RW6: lent to after everyone left\n");
	CHECK(done == N, "violated: hang\n")
}

init
{
	atomic {
		run writer(1);
		run reader(2);
		run reader(3)
	}
}

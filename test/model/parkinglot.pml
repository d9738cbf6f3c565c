/*
 * parkinglot.pml - the one park and the one unpark of the model, in the
 * shape of lib/waitq.c's parking lot (WebKit's ParkingLot: park if a
 * validation under the bucket holds; unpark one or all, a callback under
 * the bucket deciding what each woken thread is told).  Written once
 * here; the mutex and the condvar (proxylock.pml) and the rwlock
 * (rwlock.pml) instantiate it, each supplying its own pieces.
 *
 * Promela cannot pass an inline to an inline, so this file is a
 * template, included once per queue and once per client:
 *   #define PL_Q q             a queue (one bucket, its queue, the park
 *   #include "parkinglot.pml"  words): makes q_sleep and q_exit
 *   #define PL_CLIENT c        a call site that parks or unparks on q:
 *   #include "parkinglot.pml"  makes c_park, c_unpark and its wake
 * and each instance reads its pieces as q_<piece> and c_<piece> (inlines,
 * or macros; a piece with nothing to do is an empty macro).  A piece's
 * name must not itself be a macro (its name is pasted before it expands).
 *
 * The queue's pieces (PL_Q):
 *   bucket_lock(), bucket_unlock()  the bucket; the unlock checks the
 *                     invariants that hold whenever the bucket is free
 *   UNDER, ONE_STEP   d_step and 1, or empty and 0: is what the bucket
 *                     covers one step (the rwlock: word and queue change
 *                     together) or steps of their own (the mutex: fast
 *                     paths move the word meanwhile)
 *   enqueue(t), dequeue(t)  the queue's order (plk_waitq_enqueue/_dequeue)
 *   WAKES, handed(), woken()  a sleeper whose park word (WAKES) says
 *                     HANDED or WOKEN
 *   LEAVES, leaving() when the sleeper leaves by itself instead
 *                     (deadline, cancellation)
 *   ALSO              further options of the sleep (a periodic wake)
 *   STILL_QUEUED, left(), left_wake(), after_left()  the exit, still
 *                     queued: dequeued, the client's leave step (in
 *                     UNDER), the wakes it makes due; after the bucket
 *   taken_off(), after_taken()  the exit, a wake came first: under the
 *                     bucket, and after it
 * The client's pieces (PL_CLIENT), a park:
 *   validate()        against the word, under the bucket: pl = PL_PARKED
 *                     to park, else PL_NO (and the client did what it
 *                     does instead: took the lock, joined)
 *   set_waiters()     with pl: the word's WAITERS (may fail: pl = PL_NO)
 *   queued()          after the enqueue (the lend to the holders)
 *   flush()           after the bucket, always (the deferred applies)
 *   before_sleep()    after the bucket, parked (the condvar: the unlock)
 * an unpark:
 *   begin(site)       first under the bucket (a release of the word)
 *   choose()          first in the wake's step (T = 0 before it)
 *   PL_PREPARE_WAKE   (defined) prepare_wake() comes before the wake's
 *                     step (a choice a d_step cannot make)
 *   HAS_NEXT, NEXT, T, EVERY  is there a next to take off, who (into
 *                     T), one or all;  PICK_ALSO: more options of the pick
 *   tell(t)           what a woken thread is told (its park word)
 *   finish()          last under the bucket
 *   after_wake(site)  after the bucket
 *   PL_BATCH          (defined) the wake may stop short (again = 1): the
 *                     bucket is dropped and taken again to go on
 *   PL_WAKE_OF w      (defined) wake as client w does (the rwlock's
 *                     releases all grant)
 *
 * Variables every thread has: me, park[], pl (the validation's verdict),
 * and again with PL_BATCH.
 */

#ifndef PL_ONCE
#define PL_ONCE
#define PL_CAT2(a, b)	a##_##b
#define PL_CAT(a, b)	PL_CAT2(a, b)
#define PLQ(x)		PL_CAT(PL_Q, x)
#define PLC(x)		PL_CAT(PL_CLIENT, x)
/* pl: the validation's verdict */
#define PL_NO		0	/* validation failed: not parked */
#define PL_PARKED	1	/* parked (then HANDED, WOKEN or left) */
#endif

#ifndef PL_CLIENT
/* ---- the queue PL_Q: the sleep and the timed-out/cancelled exit ---- */

/* Leave by oneself: under the bucket, dequeued if still queued (the
 * client's leave step, and the wakes it makes due); else a wake came
 * first, and is the client's to take. */
inline PLQ(exit)() {
	PLQ(bucket_lock)();
	if
	:: PLQ(STILL_QUEUED) ->
		PLQ(UNDER) { PLQ(dequeue)(me); PLQ(left)() };
		PLQ(left_wake)();
		PLQ(bucket_unlock)();
		PLQ(after_left)()
	:: else ->
		PLQ(taken_off)();
		PLQ(bucket_unlock)();
		PLQ(after_taken)()
	fi
}

/* plk_park's sleep (plk_park_sleep) on the own park word: a blocked guard while it
 * reads WAITING (a futex wait whose value changed returns at once). */
inline PLQ(sleep)() {
	do
	:: PLQ(WAKES) && park[me] == HANDED -> PLQ(handed)(); break
	:: PLQ(WAKES) && park[me] == WOKEN -> PLQ(woken)(); break
	:: PLQ(LEAVES) -> PLQ(leaving)(); PLQ(exit)(); break
	PLQ(ALSO)
	od
}

#else
/* ---- the client PL_CLIENT of queue PL_Q: its park, its unpark ---- */

/* Park: under the bucket validate against the word, set WAITERS,
 * enqueue, the client's queued step; drop the bucket; flush; sleep.  With
 * ONE_STEP the bucket's section is one step (a d_step in UNDER). */
inline PLC(park)() {
	PLQ(bucket_lock)();
	PLQ(UNDER) {
		PLC(validate)();
		PLC(set_waiters)();
#if PLQ(ONE_STEP)
		if
		:: pl -> PLQ(enqueue)(me); PLC(queued)()
		:: else
		fi
#endif
	};
	if
	:: pl ->
#if !PLQ(ONE_STEP)
		PLQ(enqueue)(me); PLC(queued)();
#endif
		PLQ(bucket_unlock)(); PLC(flush)(); PLC(before_sleep)(); PLQ(sleep)()
	:: else -> PLQ(bucket_unlock)(); PLC(flush)()
	fi
}

#ifndef PL_WAKE_OF
/* Take off the next (HAS_NEXT: NEXT), one or all (EVERY), each told
 * what the client says; PICK_ALSO: further options (a cursor's steps). */
inline PLC(pick)() {
	do
	:: PLC(HAS_NEXT) && !(PLC(EVERY)) ->
		PLC(T) = PLC(NEXT); PLQ(dequeue)(PLC(T)); PLC(tell)(PLC(T)); break
	:: PLC(HAS_NEXT) && (PLC(EVERY)) ->
		PLC(T) = PLC(NEXT); PLQ(dequeue)(PLC(T)); PLC(tell)(PLC(T))
	PLC(PICK_ALSO)
	:: else -> break
	od
}

/* One wake under the bucket: choose, pick, finish. */
inline PLC(wake_locked)() {
#ifdef PL_PREPARE_WAKE
	PLC(prepare_wake)();
#endif
	PLQ(UNDER) { PLC(T) = 0; PLC(choose)(); PLC(pick)(); PLC(finish)() }
}

inline PLC(wake)() {
#ifdef PL_BATCH
	again = 0;
	PLC(wake_locked)();
	do
	:: again -> PLQ(bucket_unlock)(); PLQ(bucket_lock)(); again = 0; PLC(wake_locked)()
	:: else -> break
	od
#else
	PLC(wake_locked)()
#endif
}
#endif

/* Unpark: under the bucket the client's begin, the wake; drop; after. */
inline PLC(unpark)(site) {
	PLQ(bucket_lock)();
	PLC(begin)(site);
#ifdef PL_WAKE_OF
	PL_CAT(PL_WAKE_OF, wake)();
#else
	PLC(wake)();
#endif
	PLQ(bucket_unlock)();
	PLC(after_wake)(site)
}
#endif

/*
 * proxylock.pml - SPIN model of libproxylock's lock protocol: the lock
 * word, the bucket queue, park words, timed lock and condvar wait
 * morphing; test/model/run-model.sh verifies it exhaustively (docs/design.md,
 * "The protocol model": what it proves and leaves out).
 *
 * Which code each part stands for (proxylock.pml and rwlock.pml):
 *   parkinglot.pml: Q_sleep, Q_exit, C_park, C_unpark
 *       plk_park (its sleep; plk_park_leave, the timed-out/cancelled
 *       exit) and plk_unpark_* (park.c), written once; queues mutex_ (L),
 *       cond_ (c), rw_; parks lock_block, cond_wait, rdlock_slow,
 *       rdlock_rec, wrlock_slow; unparks unlock_wake, cond_wake,
 *       cond_pass_on, and wrunlock, rdunlock_slot, rdunlock_solo, which
 *       wake through grant.  Each C_* and Q_* piece is that client's
 *       callback (validate, queued, tell, finish, ...)
 *   mutex_lock, lock_block
 *       plk_mutex_lock_fast (lockword.h); plk_mutex_lock_slow's spin
 *       and lock_block (mutex.c): its park's pieces lock_block_*
 *   acquire_locked, mutex_exit (mutex_left, mutex_taken_off), unlock_wake_*
 *       acquire_locked, lock_timedout, unlock_wake in mutex.c
 *   mutex_unlock
 *       plk_mutex_unlock_fast (lockword.h), plk_mutex_unlock_slow
 *   enq, deq, cenq, cdeq
 *       plk_waitq_enqueue, plk_waitq_dequeue (waitq.c)
 *   cond_wait, cond_wake, cond_pass_on, mutex_take
 *       plk_cond_wait and its timeout and cancellation paths (cond_exit);
 *       plk_cond_wake, move_to_mutex; cond_pass_on; mutex_take,
 *       plk_mutex_lock_requeued
 *   cupdate, cunlock (-DCOND)
 *       plk_wakers_update after every change of a condvar's queue; K1
 *       checked wherever its bucket is dropped (-DBROKEN_WAKERS_LEAVE,
 *       -DBROKEN_WAKERS_WAKE fail with "violated: K1")
 *   bump, donate_apply (-DAPPLY)
 *       the pure part of plk_donate_set/_withdraw (recompute E(T),
 *       T.gen++); plk_donate_apply and apply_locked: token, overtake,
 *       view_reread, call_gate before the call, the call with no
 *       lock, call_back and the re-check; drop_token, call_lost
 *   rd_try, rd_spin
 *       plk_rw_rdlock_fast (with -DRW_DBLFAST twice, as the
 *       interposer); one turn of rdlock_slow's spin (two stand for
 *       100)
 *   rdlock, rdlock_rec, rdunlock, rdunlock_rec, rdunlock_solo
 *       rdlock_slow, recursive holds, plk_rw_rdunlock_fast/_waiting,
 *       unlock_slow, the solo release
 *   wrlock, wrunlock, rw_sleep, rw_rescan, rw_exit
 *       wrlock_slow (one CAS for the spin), unlock_slow; its park's sleep,
 *       rw_rescan, rw_timedout
 *   grant_wake_locked, grant_wake, lend_update, unlend_publishers, convert
 *       grant, unlock_slow's plk_unpark_all (-DRW_BATCH), plk_chain_rw_update,
 *       withdraw_publishers, join_locked
 *
 * Configurations (spin -D...):
 *   (default)         mutex: a barger (ROUNDS + 1 lock rounds), a timed
 *                     waiter and a plain waiter (ROUNDS each)
 *   -DROUNDS=n        default 1
 *   -DCOND            condvar: a producer, a waiter that is cancelled, a consumer
 *                     whose first wait may time out
 *   -DBROADCAST       with -DCOND: the producer broadcasts instead of signalling
 * Broken variants, each must fail:
 *   -DBROKEN_TIMEDOUT the old lock_timedout (one CAS try): lost wake-up
 *   -DBROKEN_CANCEL   with -DCOND: a cancelled waiter does not re-signal
 *   -DBROKEN_M4       unlock_wake stores HANDED before the word names head
 *   -DBROKEN_COND_WAKE with -DCOND -DBROADCAST: the waiter a move wakes
 *                     (L free) is not marked requeued, so it retakes L by
 *                     the fast path: the waiters moved behind it are lost
 *   -DBROKEN_COND_STALE with -DCOND: a move marks L's word without
 *                     checking that a waiter bound to L is still on c's
 *                     queue: L touched after its last waiter left (it
 *                     may have destroyed and freed L by then)
 *   -DBROKEN_WAKERS_LEAVE with -DCOND: a waiter that leaves c by itself
 *                     (deadline, cancellation) does not update what c's
 *                     queue lends its wakers: a lend outlives its
 *                     waiters (K1, lib/wakers.c)
 *   -DBROKEN_WAKERS_WAKE with -DCOND: a signal or broadcast takes waiters
 *                     off without updating the lend (the woken would
 *                     have to, touching c after a broadcast): K1
 *   -DNO_M1           leave out the M1 assertions (so a broken variant
 *                     runs on to the hang itself)
 *   -DAPPLY           mutex scenario with the donation engine's apply
 *                     step (issue 13): per-thread generation, apply token
 *                     and kernel view; the sched_* calls run with no
 *                     lock held.  Not with COND or the BROKEN_ variants
 *                     above.
 *   -DBROKEN_APPLY    with -DAPPLY: no token; whoever bumped applies its
 *                     own snapshot: an older one overtakes (stale apply)
 *   -DBROKEN_RECHECK  with -DAPPLY: the token holder drops the token
 *                     without re-checking gen: a bump made during its
 *                     syscalls is never applied (final agreement)
 *   -DBROKEN_OVERTAKE with -DAPPLY: a lend takes the token over from a
 *                     restore's call in flight, but nobody marks the view
 *                     stale: the orphan lands after the lend's call, and
 *                     T.applied says lent while the kernel has the
 *                     restore (I2)
 *   -DBROKEN_BACK     with -DAPPLY: a holder back from its call does
 *                     not check that the token is still its own: an
 *                     orphan goes on as a second holder
 *   -DRWLOCK          the rwlock instead (rwlock.pml, which lists its
 *                     own options and broken variants)
 *
 * Model conventions.  Thread ids 1..N; the word is owner | W.  One step
 * of a proctype is one atomic memory access of the code, except queue
 * operations, which run under the bucket lock and are d_steps.  A park
 * store is seen by its sleeper at any later point: the futex wake after
 * the bucket is dropped only hurries that along, and a futex wait whose
 * value already changed returns at once.  A sleep is a blocked guard
 * park[me] != WAITING, so a thread nobody wakes blocks for good: once
 * nothing can move, the monitor names the lost wake-up (or signal), or
 * else reports the hang.  coming[] and incs are ghost variables.
 */

#ifdef RWLOCK
#include "rwlock.pml"
#else
#define N	3		/* threads */
#ifndef ROUNDS
#define ROUNDS	1		/* lock rounds of the mutex waiters */
#endif
#define W	8		/* PLK_WAITERS */
#define OWNER(x)	((x) & 7)

#define WAITING	0		/* PLK_PARK_* */
#define WOKEN	1
#define HANDED	2

#ifdef BROADCAST
#define ALL	1
#else
#define ALL	0
#endif

#ifndef SPIN
#define SPIN	1		/* CAS retries in the spin phase: one stands for lock_slow's 9 */
#endif

#if defined(APPLY) && (defined(COND) || defined(BROKEN_TIMEDOUT) || defined(BROKEN_M4))
#error "APPLY models the mutex scenario with the fixed lock protocol"
#endif
#if (defined(BROKEN_APPLY) || defined(BROKEN_RECHECK)) && !defined(APPLY)
#error "BROKEN_APPLY and BROKEN_RECHECK need APPLY"
#endif

byte word;			/* L's lock word */
byte bl;			/* holder of L's bucket lock; 0 = free */
byte q[N];			/* L's queue, FIFO, head at q[0] */
byte ql;
byte park[N + 1];
bit onq[N + 1];			/* blocked_on == L */
bit coming[N + 1];		/* dequeued WOKEN, on its way back to L's bucket */
byte incs;			/* threads in L's critical section */
byte done;			/* threads finished */

#ifdef APPLY
/* Donation state of each thread's record (lib/donate.c, struct
 * plk_thread), as a possible owner of L.  The effective context is
 * abstracted to one bit: boosted (something lent) or at its base.  All
 * fields but kview/kgen are under the record's lock T.lock, whose
 * sections are short and pure: each is one d_step. */
bit eff[N + 1];			/* T.eff: E(T) as last computed */
byte gen[N + 1];		/* T.gen: bumped whenever eff changes */
bit applied[N + 1];		/* T.applied: what T believes the kernel has */
byte applied_gen[N + 1];	/* T.applied_gen */
byte applier[N + 1];		/* T.applier: the token's holder; 0 = free */
bit kview[N + 1];		/* the kernel's view of T: boosted or not */
byte kgen[N + 1];		/* ghost: the generation kview came from */
/* Overtaking (donate.c): a lend takes the token over from a holder
 * making a restore's call; that call, if in flight, is an orphan. */
bit call_lowers[N + 1];		/* T.call_lowers: the holder's generation is a restore */
bit call_out[N + 1];		/* T.call_out: the holder's call is in flight */
byte orphans[N + 1];		/* T.orphans */
bit stale[N + 1];		/* T.view_stale */
#endif

#ifdef COND
byte bc;			/* holder of c's bucket lock */
byte cq[N];			/* c's queue; c.__waiters == cql */
byte cql;
bit oncq[N + 1];		/* blocked_on == c */
bit requeued[N + 1];
byte avail;			/* the predicate: items produced, not consumed */
/* Waits for work (lib/wakers.c): c's waker, learned from a wake that
 * took waiters off (the producer, learned in an earlier round), and
 * lentc[t]: the engine has an entry keyed c for t. */
byte waker = 1;
bit lentc[N + 1];
#endif

/* M1, checked wherever L's bucket is dropped.  Between bucket holds only
 * the fast paths run: CAS 0 -> self (word 0 becomes a barger's) and CAS
 * self -> 0 (only without W), so M1 holds in every state with bl == 0. */
#define M1	(ql == 0 || (word & W) || coming[1] || coming[2] || coming[3])

/* assert, naming the property in the replay */
#define CHECK(c, what)	d_step { if :: !(c) -> printf(what) :: else fi; assert(c) }

inline bucket_lock(b) { atomic { b == 0 -> b = me } }
#ifdef NO_M1
inline unlock_l() { assert(bl == me); bl = 0 }
#else
inline unlock_l() { d_step { assert(bl == me); CHECK(M1, "violated: M1\n"); bl = 0 } }
#endif

/* Every write of the word.  M2: only the bucket holder clears W. */
inline setword(v) {
	CHECK(!(word & W) || (v & W) || bl == me, "violated: M2\n");
	word = v
}

/* plk_waitq_enqueue on L: at the head (athead) or the tail, park WAITING. */
inline enq(t, athead) {
	d_step {
		assert(bl == me && !onq[t] && ql < N);
		if
		:: athead ->
			i = ql;
			do
			:: i > 0 -> q[i] = q[i - 1]; i--
			:: else -> break
			od;
			q[0] = t
		:: else -> q[ql] = t
		fi;
		ql++; onq[t] = 1; park[t] = WAITING; coming[t] = 0; i = 0
	}
}

/* plk_waitq_dequeue on L. */
inline deq(t) {
	d_step {
		assert(bl == me && onq[t]);
		i = 0;
		do
		:: q[i] == t -> break
		:: else -> i++
		od;
		do
		:: i < ql - 1 -> q[i] = q[i + 1]; i++
		:: else -> break
		od;
		ql--; q[ql] = 0; onq[t] = 0; i = 0
	}
}

#ifdef APPLY
/* Under T.lock (a d_step inside, or as, a caller's d_step): store what
 * plk_chain_update / plk_donate_withdraw computed for tg, bumping gen
 * if it changed.  bumped: the caller applies once it holds no lock. */
inline bump(v) {
	if
	:: eff[tg] != v -> eff[tg] = v; gen[tg]++; bumped = 1
	:: else
	fi
}

/* plk_donate_apply(tg), with no internal lock held.  Only a thread that
 * bumped tg's gen calls it (a call that finds applied_gen == gen would
 * return at once).  The sched_* calls are one step, between two holds
 * of tg.lock. */
/* Drop the token (under tg.lock).  I2: with no call of an orphan in
 * flight and the view not marked stale, applied is what the kernel has. */
inline drop_token() {
	applier[tg] = 0; ag = 0;
#ifdef STRICT_DROP
	CHECK(orphans[tg] != 0 || !stale[tg], "violated: dropped stale with no orphan out\n");
#endif
	CHECK(orphans[tg] != 0 || stale[tg] || kview[tg] == applied[tg],
	      "violated: I2: token free, no orphan out, the kernel differs from T.applied\n")
}

/* Back from a call whose token a lend took over (under tg.lock): count
 * the orphan off, mark the view stale; repair if the token is free. */
inline call_lost() {
	if
	:: out ->
		CHECK(orphans[tg] > 0, "violated: orphan count underflow: a call counted off that was never counted\n");
		orphans[tg]--;
#ifndef BROKEN_OVERTAKE
		stale[tg] = 1;
#endif
		out = 0
	:: else
	fi;
	if
	:: applier[tg] == 0 -> applier[tg] = me; rr = 0; ph = 0
	:: else -> ag = 0
	fi
}

inline donate_apply() {
#ifndef BROKEN_APPLY
	d_step {	/* lock tg.lock; take the token, take it over, or leave */
		ag = 0; rr = 0; ph = 0;
		if
		:: applier[tg] == 0 && applied_gen[tg] != gen[tg] -> applier[tg] = me; ag = 1
		:: applier[tg] != 0 && applier[tg] != me && call_lowers[tg] && eff[tg] &&
		   applied_gen[tg] != gen[tg] ->
			/* overtake a restore in flight */
			applier[tg] = me; ag = 1; call_lowers[tg] = 0;
			if
			:: call_out[tg] -> call_out[tg] = 0; orphans[tg]++;
#ifdef ONE_ORPHAN
				CHECK(orphans[tg] <= 1, "violated: two orphans out\n");
#endif
#ifndef BROKEN_OVERTAKE
				stale[tg] = 1
#else
				skip
#endif
			:: else
			fi
		:: else
		fi
	};
	/* ph: 0 decide, 1 re-read the kernel, 2 gate, 3 call, 4 back */
	do
	:: ag && ph == 0 ->
		d_step {	/* tg.lock held */
			if
			:: stale[tg] && (!rr || orphans[tg] == 0) -> clean = (orphans[tg] == 0); ph = 1
			:: else ->
				want = eff[tg]; g = gen[tg];
				if
				:: want == applied[tg] -> applied_gen[tg] = g; drop_token()
				:: else -> call_lowers[tg] = !want; ph = 2
				fi
			fi
		}
	:: ag && ph == 1 ->
		rv = kview[tg];		/* unlocked: sched_getattr, getaffinity */
		d_step {
			applied[tg] = rv; rr = 1; ph = 0;
			if
			:: clean -> stale[tg] = 0
			:: else
			fi;
			clean = 0; rv = 0
		}
	:: ag && ph == 2 ->
		d_step {	/* the gate before the call: relock, re-check */
			if
#ifdef C_GATE
			/* broken: a holder that lost the token clears the new holder's call_out (the bug the review of the overtake found) */
			:: applier[tg] != me -> call_lost(); call_out[tg] = 0
#else
			:: applier[tg] != me -> call_lost()
#endif
			:: applier[tg] == me && gen[tg] != g -> call_lowers[tg] = 0; ph = 0
			:: else -> call_out[tg] = 1; out = 1; ph = 3
			fi
		}
	:: ag && ph == 3 ->
		/* unlocked: the call lands (an orphan's, maybe after a newer one) */
		d_step {
			CHECK(applier[tg] == me || orphans[tg] > 0,
			      "violated: one applier: a syscall without the token\n");
			CHECK(applier[tg] != me || g >= kgen[tg],
			      "violated: stale apply: an older generation overwrites a newer\n");
			kview[tg] = want; kgen[tg] = g; ph = 4
		}
	:: ag && ph == 4 ->
		d_step {	/* lock tg.lock */
			if
#ifndef BROKEN_BACK
			:: applier[tg] != me -> call_lost()
			:: else ->
#else
			:: true ->
#endif
				applied[tg] = want; applied_gen[tg] = g;
				call_out[tg] = 0; out = 0; call_lowers[tg] = 0; ph = 0;
#ifdef BROKEN_RECHECK
				drop_token()
#else
				if
				:: gen[tg] == g && !(stale[tg] && orphans[tg] == 0) -> drop_token()
				:: else		/* a later gen, or the last orphan back: again */
				fi
#endif
			fi
		}
	:: !ag -> break
	od;
#else
	/* BROKEN: no token; apply our own snapshot if not applied yet. */
	d_step {
		ag = 0;
		if
		:: applied_gen[tg] != gen[tg] -> want = eff[tg]; g = gen[tg]; ag = 1
		:: else
		fi
	};
	if
	:: ag ->
		d_step {
			CHECK(g >= kgen[tg], "violated: stale apply: an older generation overwrites a newer\n");
			kview[tg] = want; kgen[tg] = g
		};
		d_step { applied[tg] = want; applied_gen[tg] = g }
	:: else
	fi;
#endif
	ag = 0; want = 0; g = 0; ph = 0; rr = 0
}

/* Apply for tg if this thread bumped it; then forget tg. */
inline apply_bumped() {
	if
	:: bumped -> donate_apply()
	:: else
	fi;
	bumped = 0; tg = 0
}
#endif

/* acquire_locked: L is free; take it, W if others are queued (M1). */
inline acquire_locked() {
	atomic {
		if
		:: word == 0 -> setword(me | (ql > 0 -> W : 0)); coming[me] = 0; got = 1
		:: else -> got = 0
		fi
	}
}

/* Critical section: mutual exclusion, and the word names us. */
inline cs() {
	incs++;
	CHECK(incs == 1 && OWNER(word) == me, "violated: mutual exclusion\n");
	incs--
}

/* ---- L's queue in the parking lot (parkinglot.pml) -------------------
 * Its bucket is bl (the drop checks M1); what the bucket covers is steps
 * of their own: the fast paths move the word meanwhile.  Only the timed
 * waiter's locks (role 1, without COND) may leave by their deadline. */
#ifdef COND
#define MUTEX_TIMED	0
#else
#define MUTEX_TIMED	(role == 1)
#endif
inline mutex_bucket_lock() { bucket_lock(bl) }
#define mutex_bucket_unlock	unlock_l
#define mutex_UNDER
#define mutex_ONE_STEP	0
/* At the tail, or (woken: re-queued) at the head once past the handoff
 * bound (M3: a free choice here, as the handoff). */
inline mutex_enqueue(t) {
	if
	:: enq(t, 0)
	:: woken -> enq(t, 1)
	fi
}
#define mutex_dequeue	deq
#define mutex_WAKES	1
/* HANDED: the word names us (M4); WOKEN: back to the bucket. */
#define mutex_handed()	CHECK(OWNER(word) == me, "violated: M4\n"); got = 1
#define mutex_woken()	woken = 1; pl = PL_NO
#define mutex_LEAVES	(MUTEX_TIMED && park[me] == WAITING)
#define MUTEX_LEFT	2	/* pl: left by the exit */
#define mutex_leaving()	pl = MUTEX_LEFT
#define mutex_ALSO
#define mutex_STILL_QUEUED	onq[me]
/* lock_timedout's leave, off the queue (or WOKEN, on its way back):
 * got = 1 if we own L after all. */
inline mutex_left() {
#ifndef BROKEN_TIMEDOUT
	/* FIXED: until L is ours, or the word agrees with the queue. */
	do
	:: w = word;
		if
		:: w == 0 ->
			acquire_locked();
			if
			:: got -> break
			:: else
			fi
		:: w != 0 && ql == 0 ->
			/* W, if set, stays: the owner's slow unlock
			 * waits for the apply of the withdrawal
			 * (donate.c, I1) and releases. */
			got = 0;
			break
		:: w != 0 && ql > 0 ->
			if
			:: w & W -> got = 0; break
			:: else ->
				atomic {
					if
					:: word == w -> setword(w | W); got = 0; break
					:: else
					fi
				}
			fi
		fi
	od;
#ifdef APPLY
	/* plk_chain_update: acquire_locked's (we took L), or the
	 * owner's lend without us (PLK_WAITERS was set or is now).
	 * (i = 0: a no-op, as a break may not jump into a d_step.) */
	i = 0;
	d_step {
		if
		:: got -> tg = me; bump(ql > 0)
		:: !got && ((w & W) || ql > 0) -> tg = OWNER(w); bump(ql > 0)
		:: else
		fi
	};
#endif
#else
	/* OLD: one try at each. */
	acquire_locked();
	if
	:: !got ->
		w = word;
		if
		:: ql > 0 && !(w & W) && w != 0 ->
			atomic {
				if
				:: word == w -> setword(w | W); w = w | W
				:: else
				fi
			}
		:: else
		fi;
		if
		:: (w & W) && ql == 0 ->
			atomic {
				if
				:: word == w -> setword(w & ~W)
				:: else
				fi
			}
		:: else
		fi
	:: else
	fi;
#endif
	coming[me] = 0
}
#define mutex_left_wake()
/* Taken off: handed L, or WOKEN on its way back (then as left). */
inline mutex_taken_off() {
	if
	:: park[me] == HANDED -> CHECK(OWNER(word) == me, "violated: M4\n"); got = 1
	:: else -> mutex_left()
	fi
}
#ifdef APPLY
#define mutex_after_left	apply_bumped	/* (c) after the bucket is dropped */
#define mutex_after_taken	apply_bumped
#else
#define mutex_after_left()
#define mutex_after_taken()
#endif
#define PL_Q mutex
#include "parkinglot.pml"

/* lock_block's park: the word free, take it here (acquire_locked); else
 * set W by CAS (a failed one: the word moved, validate again).  pl is
 * PL_NO on entry (lock_block's loop). */
inline lock_block_validate() {
	w = word;
	if
	:: w == 0 ->
		acquire_locked();
#ifdef APPLY
		d_step {
			if
			:: got -> tg = me; bump(ql > 0)
			:: else
			fi
		}
#endif
	:: else -> pl = PL_PARKED; got = 0	/* (got: a condvar waiter's, from before its wait) */
	fi
}
inline lock_block_set_waiters() {
	if
	:: pl && !(w & W) ->
		atomic {
			if
			:: word == w -> setword(w | W)
			:: else -> pl = PL_NO
			fi
		}
	:: else
	fi
}
#ifdef APPLY
#define lock_block_queued()	d_step { tg = OWNER(w); bump(1) }	/* plk_chain_update: we lend to the owner */
#define lock_block_flush	apply_bumped	/* (a) then park */
#else
#define lock_block_queued()
#define lock_block_flush()
#endif
#define lock_block_before_sleep()
#define PL_CLIENT lock_block
#include "parkinglot.pml"
#undef PL_CLIENT

/* lock_block: park until L is ours (got = 1), or the deadline passed
 * (left by the exit); a failed validation or a WOKEN: again. */
inline lock_block() {
	do
	:: lock_block_park();
		if
		:: got || pl == MUTEX_LEFT -> break
		:: else
		fi
	od;
	woken = 0; pl = 0
}

/* proxylock_mutex_lock / timedlock: fast CAS, spin phase, lock_block. */
inline mutex_lock() {
	atomic {
		if
		:: word == 0 -> setword(me); coming[me] = 0; got = 1
		:: else -> got = 0
		fi
	};
	n = 0;
	do
	:: got || n == SPIN -> break
	:: else ->
		w = word;
		if
		:: w == 0 ->
			atomic {
				if
				:: word == 0 -> setword(me); coming[me] = 0; got = 1
				:: else
				fi
			}
		:: w & W -> break	/* others queued: no barging by spinning */
		:: else
		fi;
		n++
	od;
	n = 0;
	if
	:: !got -> lock_block()
	:: else
	fi
}

/* unlock_wake's unpark (W was set): the head, handed L, or L released
 * and the head woken; nobody queued: L released. */
#define unlock_wake_begin(site)
#define unlock_wake_choose()
#define unlock_wake_HAS_NEXT	(ql > 0)
#define unlock_wake_NEXT	q[0]
#define unlock_wake_T	t
#define unlock_wake_EVERY	0
#define unlock_wake_PICK_ALSO
inline unlock_wake_tell(t) {
	if
	:: true ->	/* hand off (head waited >= PROXYLOCK_HANDOFF_US) */
#ifndef BROKEN_M4
		setword(t | (ql > 0 -> W : 0));
#ifdef APPLY
		/* plk_chain_update: head waits on nothing now, owns L */
		d_step { tg = t; bump(ql > 0) };
#endif
		park[t] = HANDED
#else
		park[t] = HANDED;
		setword(t | (ql > 0 -> W : 0))
#endif
	:: true -> setword(0); d_step { park[t] = WOKEN; coming[t] = 1 }
	fi
}
inline unlock_wake_finish() {
	if
	:: t == 0 -> setword(0)
	:: else
	fi;
	t = 0
}
#ifdef APPLY
/* the new owner's lend, if handed; (b) plk_donate_withdraw(me): after
 * the wake, under our T.lock */
#define unlock_wake_after_wake(site)	apply_bumped(); d_step { tg = me; bump(0) }; apply_bumped()
#else
#define unlock_wake_after_wake(site)
#endif
#define PL_CLIENT unlock_wake
#include "parkinglot.pml"
#undef PL_CLIENT
#undef PL_Q

/* proxylock_mutex_unlock: CAS self -> 0 unless W is set. */
inline mutex_unlock() {
	assert(OWNER(word) == me);
	if
	:: atomic { word == me -> setword(0) }
	:: word == (me | W) -> unlock_wake_unpark(0)
	fi
}

#ifdef COND
/* Queue operations on c, under bc. */
inline cenq(t) {
	d_step {
		assert(bc == me && !oncq[t] && cql < N);
		cq[cql] = t; cql++; oncq[t] = 1; park[t] = WAITING; requeued[t] = 0
	}
}

inline cdeq(t) {
	d_step {
		assert(bc == me && oncq[t]);
		i = 0;
		do
		:: cq[i] == t -> break
		:: else -> i++
		od;
		do
		:: i < cql - 1 -> cq[i] = cq[i + 1]; i++
		:: else -> break
		od;
		cql--; cq[cql] = 0; oncq[t] = 0; i = 0
	}
}

/* plk_wakers_update, under bc: c's queue lends to its waker while
 * someone is queued, unless the waker waits on c too. */
inline cupdate() {
	d_step {
		assert(bc == me);
		lentc[1] = (waker == 1 && cql > 0 && !oncq[1]);
		lentc[2] = (waker == 2 && cql > 0 && !oncq[2]);
		lentc[3] = (waker == 3 && cql > 0 && !oncq[3])
	}
}

/* K1, checked wherever c's bucket is dropped: exactly the eligible
 * waker is lent to while someone waits, nobody once the queue is empty
 * (so a condvar freed after a broadcast has no lend left). */
#define LENT_OK(t)	(lentc[t] == (waker == t && cql > 0 && !oncq[t]))
#define K1	(LENT_OK(1) && LENT_OK(2) && LENT_OK(3))
inline cunlock() {
	CHECK(K1, "violated: K1: a lend through c does not match its waiters\n");
	bc = 0
}

#ifdef BROKEN_COND_STALE
#define BOUND	1		/* trusts c->__mutex: the old move_to_mutex */
#else
#define BOUND	(cql > 0)
#endif

/* cond_leave's update (BROKEN_WAKERS_LEAVE: none). */
inline cleave_update() {
#ifndef BROKEN_WAKERS_LEAVE
	cupdate()
#else
	skip
#endif
}

/* mutex_take: retake L after a wait that ended in park state st. */
inline mutex_take() {
	if
	:: st == HANDED -> CHECK(OWNER(word) == me, "violated: M4\n")
	:: st == WOKEN && requeued[me] -> woken = 1; lock_block()	/* plk_mutex_lock_requeued */
	:: else -> mutex_lock()
	fi
}

/* ---- c's queue in the parking lot -------------------------------------
 * Role 1's wait is cancelled somewhere (only then does it return, by
 * cond_wait_cancelled); role 2's first wait may pass its deadline. */
#define COND_CANCELLABLE	(role == 1)
#define COND_TIMED		(role == 2 && r)
inline cond_bucket_lock() { bucket_lock(bc) }
#define cond_bucket_unlock	cunlock
#define cond_UNDER
#define cond_ONE_STEP	0
#define cond_enqueue	cenq
#define cond_dequeue	cdeq
#define cond_WAKES	(!COND_CANCELLABLE)
/* (pl back to PL_NO on every way out: L's park comes next) */
#define cond_handed()	st = HANDED; pl = PL_NO
#define cond_woken()	st = WOKEN; pl = PL_NO
#define cond_LEAVES	(COND_CANCELLABLE || (COND_TIMED && park[me] == WAITING))
#define cond_leaving()
#define cond_ALSO
#define cond_STILL_QUEUED	oncq[me]
inline cond_left() { st = WAITING; pl = PL_NO; cleave_update() }
#define cond_left_wake()
#define cond_after_left()
#define cond_taken_off()	pl = PL_NO
/* Taken off c by a signal: cond_timedout waits for its park word; a
 * cancelled wait passes the signal on (sig), abandoning L's queue if
 * the signal moved it there (plk_mutex_abandon_wait: L's exit). */
inline cond_after_taken() {
	if
	:: COND_CANCELLABLE ->
		sig = 1;
		if
		:: onq[me] -> mutex_exit(); st = (got -> HANDED : WAITING)
		:: else -> park[me] != WAITING; st = park[me]
		fi
	:: else -> park[me] != WAITING; st = park[me]
	fi
}
#define PL_Q cond
#include "parkinglot.pml"

/* plk_cond_wait's park on c with L held: always (no word to validate;
 * c.__waiters is the queue's length), L released before the sleep. */
#define cond_wait_validate()	pl = PL_PARKED
#define cond_wait_set_waiters()
#define cond_wait_queued	cupdate
#define cond_wait_flush()
#define cond_wait_before_sleep	mutex_unlock
#define PL_CLIENT cond_wait
#include "parkinglot.pml"
#undef PL_CLIENT

/* plk_cond_wake -> move_to_mutex, both buckets (c's, then L's): the
 * first taken off is woken if L is free, every other moved to L's queue. */
inline cond_wake_begin(site) {
	bucket_lock(bl);
	/* bound_waiter_queued: L is touched only while a waiter bound
	 * to it is on c's queue; else it may be freed (issue 35). */
	if
	:: BOUND ->
		CHECK(cql > 0, "violated: L touched after its last waiter left c\n");
		/* mutex_mark_waiters */
		do
		:: w = word;
			if
			:: w == 0 || (w & W) -> break
			:: else ->
				atomic {
					if
					:: word == w -> setword(w | W); w = w | W; break
					:: else
					fi
				}
			fi
		od
	:: else -> w = 0	/* nobody queued: the wake below does nothing */
	fi;
	n = 0
}
#define cond_wake_choose()
#define cond_wake_HAS_NEXT	(cql > 0)
#define cond_wake_NEXT	cq[0]
#define cond_wake_T	t
#define cond_wake_EVERY	ALL
#define cond_wake_PICK_ALSO
inline cond_wake_tell(t) {
	requeued[t] = 1;
#ifdef BROKEN_COND_WAKE
	requeued[t] = w != 0 || n != 0;
#endif
	if
	:: w == 0 && n == 0 -> d_step { park[t] = WOKEN; coming[t] = 1 }; n = 1
	:: else -> enq(t, 0)
	fi
}
inline cond_wake_finish() {
	n = 0; t = 0;
	waker = me;	/* plk_wakers_note */
#ifndef BROKEN_WAKERS_WAKE
	cupdate()
#else
	skip
#endif
}
#define cond_wake_after_wake(site)	unlock_l()	/* L's bucket, taken in begin */
#define PL_CLIENT cond_wake
#include "parkinglot.pml"
#undef PL_CLIENT

/* cond_pass_on: wake the first waiter still on c. */
#define cond_pass_on_begin(site)
#define cond_pass_on_choose()
#define cond_pass_on_HAS_NEXT	(cql > 0)
#define cond_pass_on_NEXT	cq[0]
#define cond_pass_on_T	t
#define cond_pass_on_EVERY	0
#define cond_pass_on_PICK_ALSO
#define cond_pass_on_tell(t)	park[t] = WOKEN
inline cond_pass_on_finish() {
	if
	:: t != 0 -> t = 0; cupdate()
	:: else
	fi
}
#define cond_pass_on_after_wake(site)
#define PL_CLIENT cond_pass_on
#include "parkinglot.pml"
#undef PL_CLIENT
#undef PL_Q

/* plk_cond_wake: c->__waiters read without the bucket. */
inline cond_wake() {
	if
	:: cql == 0
	:: else -> cond_wake_unpark(0)
	fi
}

/* plk_cond_wait on c with L held (COND_TIMED, COND_CANCELLABLE), then L
 * retaken; a cancelled wait that a signal took off passes it on. */
inline cond_wait() {
	cond_wait_park();
	mutex_take();
	st = 0;
#ifndef BROKEN_CANCEL
	if
	:: sig -> sig = 0; cond_pass_on_unpark(0)
	:: else
	fi
#endif
}
#endif /* COND */

proctype thread(byte me; byte role; byte rounds)
{
	byte w, t, n, st, i, r;
	byte pl;		/* what a park came to (parkinglot.pml) */
	bit got, woken, sig;
#ifdef APPLY
	byte tg, g;		/* the target of an apply; its snapshot's gen */
	bit bumped, want, ag;	/* ag: we hold tg's token (BROKEN: we apply) */
	byte ph;		/* donate_apply's step */
	bit rr, clean, rv, out;	/* re-read once; it began with no orphan out; what it
				   read; our call is in flight (T.call_out) */
#endif

#ifndef COND
	/* role 1: may time out */
	do
	:: r < rounds ->
		mutex_lock();	/* role 1: may time out (MUTEX_TIMED) */
		if
		:: got -> cs(); mutex_unlock()
		:: else
		fi;
		got = 0;
		r++
	:: else -> break
	od;
#else
	if
	:: role == 0 ->
		/* producer: one item, signalled under L or after the unlock */
		mutex_lock();
		cs();
		avail++;
		if
		:: cond_wake(); mutex_unlock()
		:: mutex_unlock(); cond_wake()
		fi
	:: role == 1 ->
		/* waits for something else on c, and is cancelled */
		mutex_lock();
		cs();
		cond_wait();	/* cancelled (COND_CANCELLABLE) */
		cs();
		mutex_unlock()
	:: role == 2 ->
		/* consumer; its deadline may pass once */
		mutex_lock();
		cs();
		r = 1;
		do
		:: avail == 0 -> cond_wait(); r = 0;	/* r: timed (COND_TIMED) */ cs()
		:: else -> break
		od;
		avail--;
		mutex_unlock()
	fi;
#endif
	done++
}

#ifdef APPLY
#define AGREE(t)	(applier[t] != 0 || (orphans[t] == 0 && !stale[t] && applied_gen[t] == gen[t] && \
			 kview[t] == eff[t] && applied[t] == kview[t]))
#endif

/* Everyone asleep or finished: nothing may be left queued behind a free
 * lock (a lost wake-up), nor an item behind a sleeping consumer. */
active proctype monitor()
{
	timeout;
	CHECK(!(word == 0 && ql > 0), "violated: lost wake-up: L is free, a waiter sleeps on its queue\n");
#ifdef COND
	CHECK(!(avail > 0 && cql > 0), "violated: lost signal: an item is ready, a consumer sleeps on c\n");
	CHECK(done != N || !(lentc[1] || lentc[2] || lentc[3]),
	      "violated: K1: a lend through c outlives every wait\n");
#endif
#ifdef APPLY
	/* Final agreement: a thread whose token is free has the latest
	 * generation applied, and the kernel holds its value.  Everyone done
	 * (no one holds L): nobody runs boosted (I1). */
	CHECK(AGREE(1) && AGREE(2) && AGREE(3),
	      "violated: final agreement: token free, the kernel holds an older generation's value\n");
	CHECK(done != N || !(kview[1] || kview[2] || kview[3] || eff[1] || eff[2] || eff[3]),
	      "violated: I1: a thread that holds no lock runs boosted\n");
#endif
	CHECK(done == N, "violated: hang\n")
}

init
{
	atomic {
#ifndef COND
		run thread(1, 0, ROUNDS + 1);	/* barger, owner */
		run thread(2, 1, ROUNDS);	/* timed waiter */
#ifdef TWO_TIMED
		run thread(3, 1, ROUNDS)	/* a second timed waiter */
#else
		run thread(3, 2, ROUNDS)	/* plain waiter */
#endif
#else
		run thread(1, 0, 1);
		run thread(2, 1, 1);
		run thread(3, 2, 1)
#endif
	}
}
#endif /* RWLOCK */

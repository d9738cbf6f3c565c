/* SPDX-License-Identifier: MIT */
/*
 * condactor.h - actors (actor.h) that wait on and wake a proxylock
 * condvar, for the waits-for-work scenarios: test_wakers.c (nice and
 * CPUs, on this machine) and test/vm/test_uclamp.c (uclamp, in the
 * guest).  A waker is learned from a signal that found waiters, so a
 * scenario first teaches it one (teach).  The scenarios both prove are
 * written once, for a struct cv_lending: how to start a high waiter and
 * a low worker, and how to tell from the kernel's view that the worker
 * runs with the waiter's context (lent to) or exactly at its own.
 */
#ifndef PLK_TEST_CONDACTOR_H
#define PLK_TEST_CONDACTOR_H

#include "actor.h"

struct cv {
	proxylock_cond_t c;
	proxylock_mutex_t m;
	long timeout_ns;  /* 0: no deadline */
};

/* ACT_CALL functions, the struct cv in a->arg. */
static inline int cv_wait(struct actor *a)
{
	struct cv *v = a->arg;
	struct timespec dl = abstime_in(CLOCK_REALTIME, v->timeout_ns);
	int rc;

	proxylock_mutex_lock(&v->m);
	rc = v->timeout_ns ? proxylock_cond_timedwait(&v->c, &v->m, &dl)
	                   : proxylock_cond_wait(&v->c, &v->m);
	proxylock_mutex_unlock(&v->m);
	return rc;
}

static inline int cv_signal(struct actor *a)
{
	return proxylock_cond_signal(&((struct cv *)a->arg)->c);
}

static inline int cv_broadcast(struct actor *a)
{
	return proxylock_cond_broadcast(&((struct cv *)a->arg)->c);
}

/* Post a wait on @v for @w and return once it sleeps there, @n waiters
 * in all. */
static inline void wait_on(struct actor *w, struct cv *v, unsigned n)
{
	actor_call(w, cv_wait, v);
	ck_assert_msg(eventually(__atomic_load_n(&v->c.__waiters, __ATOMIC_ACQUIRE) == n &&
	                         thread_sleeping(w->tid), bound_ms(2000)),
	              "actor %d did not sleep on the condvar", w->tid);
}

/* @s signals a sleeping @w once: @s becomes a waker of @v. */
static inline void teach(struct actor *w, struct actor *s, struct cv *v)
{
	wait_on(w, v, 1);
	actor_call(s, cv_signal, v);
	ck_assert_int_eq(actor_wait(s), 0);
	ck_assert_int_eq(actor_wait(w), 0);
}

struct cv_lending {
	void (*start_waiter)(struct actor *a);  /* high: it lends */
	void (*start_worker)(struct actor *a);  /* low: it is lent to */
	bool (*lent)(struct actor *a);          /* @a runs with the waiter's context */
	bool (*at_base)(struct actor *a);       /* @a is exactly at its own */
	/* The kernel's view of @a, in words, into @buf. */
	void (*say)(struct actor *a, char *buf, size_t len);
};

/* The waiter @w and the worker @k, taught: @k is @v's learned waker. */
static inline void cv_lending_scene(const struct cv_lending *l, struct actor *w, struct actor *k,
                                    struct cv *v)
{
	char now[64];

	l->start_waiter(w);
	l->start_worker(k);
	teach(w, k, v);
	l->say(k, now, sizeof(now));
	ck_assert_msg(l->at_base(k), "the taught worker is at %s, not its own", now);
}

/* While @w sleeps on @v, @k is lent to. */
static inline void cv_lent_while_asleep(const struct cv_lending *l, struct actor *w,
                                        struct actor *k, struct cv *v)
{
	char now[64];
	bool lent;

	wait_on(w, v, 1);
	lent = eventually(l->lent(k), bound_ms(2000));
	l->say(k, now, sizeof(now));
	ck_assert_msg(lent, "the worker is at %s while its waiter sleeps", now);
}

/* The waiter lends to its learned waker until the signal: the waker
 * returns from its signal exactly at its own context. */
static inline void cv_waiter_lends_until_the_signal(const struct cv_lending *l)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, k;
	char now[64];

	cv_lending_scene(l, &w, &k, &v);
	cv_lent_while_asleep(l, &w, &k, &v);
	actor_call(&k, cv_signal, &v);
	ck_assert_int_eq(actor_wait(&k), 0);
	l->say(&k, now, sizeof(now));
	ck_assert_msg(kview_equal(&k.after, &k.base) && l->at_base(&k),
	              "the worker is at %s after its signal", now);
	ck_assert_int_eq(actor_wait(&w), 0);
	ck_assert(l->at_base(&k));
	actor_quit(&w);
	actor_quit(&k);
}

/* The waiter times out: its lend is withdrawn before its wait returns. */
static inline void cv_waiter_times_out_and_withdraws(const struct cv_lending *l)
{
	struct cv v = { PROXYLOCK_COND_INITIALIZER, PROXYLOCK_MUTEX_INITIALIZER, 0 };
	struct actor w, k;
	char now[64];

	cv_lending_scene(l, &w, &k, &v);
	v.timeout_ns = 300 * 1000 * 1000;
	cv_lent_while_asleep(l, &w, &k, &v);
	ck_assert_int_eq(actor_wait(&w), ETIMEDOUT);
	l->say(&k, now, sizeof(now));
	ck_assert_msg(l->at_base(&k), "the worker is at %s after the timeout", now);
	actor_quit(&w);
	actor_quit(&k);
}

#endif /* PLK_TEST_CONDACTOR_H */

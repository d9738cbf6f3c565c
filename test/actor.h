/* SPDX-License-Identifier: MIT */
/*
 * actor.h - a test thread driven by commands, so a test can read like a
 * scenario: "holder locks L1; waiter blocks on L1; holder unlocks".
 * Each actor sets its own base context (nice, CPU) when it starts and
 * records the kernel's view of itself right after every command.  It
 * speaks mutexes (ACT_LOCK...) and rwlocks (ACT_RDLOCK...); the command's
 * argument is the lock.  ACT_CALL runs any function of the test on the
 * actor (actor_call), its argument the actor.
 */
#ifndef PLK_TEST_ACTOR_H
#define PLK_TEST_ACTOR_H

#include <stddef.h>

#include "helpers.h"

_Static_assert(offsetof(proxylock_mutex_t, __word) == 0 &&
               offsetof(proxylock_rwlock_t, __word) == 0,
               "actor_wait prints the word at the start of either lock");

enum actor_cmd { ACT_NONE, ACT_LOCK, ACT_TIMEDLOCK, ACT_UNLOCK, ACT_RDLOCK, ACT_WRLOCK,
                 ACT_TIMEDRDLOCK, ACT_TIMEDWRLOCK, ACT_TRYRDLOCK, ACT_RWUNLOCK, ACT_EXIT,
                 ACT_QUIT, ACT_CALL };

struct actor {
	pthread_t th;
	pid_t tid;
	int nice;             /* base nice */
	int cpu;              /* base CPU, -1: not pinned */
	int policy, rt_prio;  /* base policy (0 = SCHED_OTHER) */
	int umin, umax;       /* base uclamp; umax 0: leave the clamps alone */
	struct kview base;    /* kernel view once the base is set */
	struct kview after;   /* kernel view right after the last command */
	int cmd, done, rc, entered;
	void *arg;            /* a proxylock_mutex_t or proxylock_rwlock_t */
	long timeout_ns;      /* for the timed commands */
	int (*fn)(struct actor *);  /* ACT_CALL's function */
};

static void *actor_main(void *p)
{
	struct actor *a = p;

	a->tid = gettid_();
	if (a->cpu >= 0)
		pin_self(a->cpu);
	if (a->policy == SCHED_FIFO || a->policy == SCHED_RR) {
		struct sched_param sp = { .sched_priority = a->rt_prio };

		ck_assert_int_eq(sched_setscheduler(0, a->policy, &sp), 0);
	} else {
		set_nice_self(a->nice);
	}
	if (a->umax > 0) {
		struct plk_sched_attr at = { .sched_policy = SCHED_OTHER,
		                             .sched_flags = PLK_SCHED_FLAG_UTIL_CLAMP,
		                             .sched_nice = a->nice,
		                             .sched_util_min = (uint32_t)a->umin,
		                             .sched_util_max = (uint32_t)a->umax };

		ck_assert_int_eq(plk_sched_setattr(0, &at), 0);
	}
	a->base = kview_of(0);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	for (;;) {
		int cmd;
		struct timespec dl;

		while ((cmd = __atomic_load_n(&a->cmd, __ATOMIC_ACQUIRE)) == ACT_NONE)
			usleep(100);
		__atomic_store_n(&a->entered, 1, __ATOMIC_RELEASE);
		switch (cmd) {
		case ACT_LOCK:
			a->rc = proxylock_mutex_lock(a->arg);
			break;
		case ACT_TIMEDLOCK:
			dl = abstime_in(CLOCK_MONOTONIC, a->timeout_ns);
			a->rc = proxylock_mutex_clocklock(a->arg, CLOCK_MONOTONIC, &dl);
			break;
		case ACT_UNLOCK:
			a->rc = proxylock_mutex_unlock(a->arg);
			break;
		case ACT_RDLOCK:
			a->rc = proxylock_rwlock_rdlock(a->arg);
			break;
		case ACT_WRLOCK:
			a->rc = proxylock_rwlock_wrlock(a->arg);
			break;
		case ACT_TIMEDRDLOCK:
			dl = abstime_in(CLOCK_MONOTONIC, a->timeout_ns);
			a->rc = proxylock_rwlock_clockrdlock(a->arg, CLOCK_MONOTONIC, &dl);
			break;
		case ACT_TIMEDWRLOCK:
			dl = abstime_in(CLOCK_MONOTONIC, a->timeout_ns);
			a->rc = proxylock_rwlock_clockwrlock(a->arg, CLOCK_MONOTONIC, &dl);
			break;
		case ACT_TRYRDLOCK:
			a->rc = proxylock_rwlock_tryrdlock(a->arg);
			break;
		case ACT_RWUNLOCK:
			a->rc = proxylock_rwlock_unlock(a->arg);
			break;
		case ACT_CALL:
			a->rc = a->fn(a);
			break;
		case ACT_EXIT:
			return NULL;  /* leave, whatever we hold */
		case ACT_QUIT:
			return NULL;
		}
		a->after = kview_of(0);
		__atomic_store_n(&a->cmd, ACT_NONE, __ATOMIC_RELAXED);
		__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	}
}

/* Start @a, whose base fields are filled in. */
static inline void actor_launch(struct actor *a)
{
	ck_assert_int_eq(pthread_create(&a->th, NULL, actor_main, a), 0);
	while (!__atomic_load_n(&a->done, __ATOMIC_ACQUIRE))
		usleep(100);
}

/* Start an actor with base nice @nice on CPU @cpu (-1: any). */
static inline void actor_start(struct actor *a, int nice, int cpu)
{
	memset(a, 0, sizeof(*a));
	a->nice = nice;
	a->cpu = cpu;
	actor_launch(a);
}

/* Start an actor at nice 0 on any CPU with base clamps @umin..@umax. */
static inline void actor_start_uclamp(struct actor *a, int umin, int umax)
{
	memset(a, 0, sizeof(*a));
	a->cpu = -1;
	a->umin = umin;
	a->umax = umax;
	actor_launch(a);
}

/* Post a command; returns at once (the command may block). */
static inline void actor_post(struct actor *a, int cmd, void *lock)
{
	a->arg = lock;
	__atomic_store_n(&a->entered, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->cmd, cmd, __ATOMIC_RELEASE);
}

/*
 * Wait up to 5 s for the last command to finish; returns its rc.  Both
 * lock types keep their word first (__word), which a stuck one prints.
 */
static inline int actor_wait(struct actor *a)
{
	ck_assert_msg(eventually(__atomic_load_n(&a->done, __ATOMIC_ACQUIRE), bound_ms(5000)),
	              "actor %d stuck in command %d (entered %d, sleeping %d), lock word %#x",
	              a->tid, __atomic_load_n(&a->cmd, __ATOMIC_RELAXED),
	              __atomic_load_n(&a->entered, __ATOMIC_RELAXED), thread_sleeping(a->tid),
	              a->arg ? __atomic_load_n((uint32_t *)a->arg, __ATOMIC_RELAXED) : 0);
	return a->rc;
}

/* Run a command that must not block, and check its result. */
static inline void actor_do(struct actor *a, int cmd, void *lock, int want)
{
	actor_post(a, cmd, lock);
	ck_assert_int_eq(actor_wait(a), want);
}

static inline uint64_t sleeps_so_far(void)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return st.sleeps;
}

/*
 * Post a lock that will block, and wait until the actor sleeps in it:
 * the library counts a sleep only once the waiter is queued and has
 * lent its context, so "asleep" alone (which a thread also is inside,
 * say, a sanitizer's runtime) is not taken as proof.
 */
static inline void actor_block_on(struct actor *a, int cmd, void *lock)
{
	uint64_t before = sleeps_so_far();

	actor_post(a, cmd, lock);
	ck_assert_msg(eventually(sleeps_so_far() > before && thread_sleeping(a->tid) &&
	                         !__atomic_load_n(&a->done, __ATOMIC_ACQUIRE), bound_ms(2000)),
	              "actor %d did not block", a->tid);
}

/* Post ACT_CALL of @fn(@a), @arg in a->arg; returns at once. */
static inline void actor_call(struct actor *a, int (*fn)(struct actor *), void *arg)
{
	a->fn = fn;
	actor_post(a, ACT_CALL, arg);
}

static inline void actor_quit(struct actor *a)
{
	actor_post(a, ACT_QUIT, NULL);
	pthread_join(a->th, NULL);
}

#endif /* PLK_TEST_ACTOR_H */

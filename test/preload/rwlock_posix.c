/* SPDX-License-Identifier: MIT */
/*
 * rwlock_posix.c - POSIX reader-writer lock behaviour in plain pthread
 * calls, run natively and under the interposer (rwlock-posix.sh), whose
 * outputs must be the same: each case prints "case: result", where the
 * result is what the calls returned, or "ok" for a property checked
 * here; any failure prints "FAIL" and the program exits 1.
 *
 * Where glibc's behaviour is undefined by POSIX and the interposer's
 * differs (unlock by a thread holding nothing: glibc 0 after corrupting
 * its counts, the interposer EPERM), the case checks what both guarantee
 * (the call is one of the two answers) and prints the raw code on an
 * "info:" line, which the comparison leaves out.  Destroy of a held
 * rwlock or mutex answers as glibc does (issue 29: LTP's
 * pthread_rwlock_timed{rd,wr}lock_6-2), so it is compared.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void report(const char *name, const char *result, bool ok)
{
	printf("%s: %s%s\n", name, result, ok ? "" : " FAIL");
	failures += !ok;
}

static const char *err_name(int e)
{
	switch (e) {
	case 0: return "0";
	case EBUSY: return "EBUSY";
	case EINVAL: return "EINVAL";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EDEADLK: return "EDEADLK";
	case EPERM: return "EPERM";
	case EAGAIN: return "EAGAIN";
	default: return strerror(e);
	}
}

/* Results "r1 r2 ..." (each call made in its own statement, in order:
 * C leaves the order of a call's arguments open), as @name, want @want. */
static void expect(const char *name, const char *got, const char *want)
{
	report(name, got, strcmp(got, want) == 0);
}

static struct timespec in_ns(clockid_t clock, long ns)
{
	struct timespec t;

	clock_gettime(clock, &t);
	t.tv_nsec += ns;
	t.tv_sec += t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* --- calls made by another thread ------------------------------------- */

enum op { TRYRD, TRYWR, TIMEDRD20, TIMEDWR20, CLOCKRD20, UNLOCK, RDLOCK_UNLOCK, WRLOCK_UNLOCK };

struct call {
	pthread_rwlock_t *rw;
	enum op op;
	int err;
	long ms;
};

static void *call_thread(void *arg)
{
	struct call *c = arg;
	struct timespec t0, d;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	switch (c->op) {
	case TRYRD:
		if ((c->err = pthread_rwlock_tryrdlock(c->rw)) == 0)
			pthread_rwlock_unlock(c->rw);
		break;
	case TRYWR:
		if ((c->err = pthread_rwlock_trywrlock(c->rw)) == 0)
			pthread_rwlock_unlock(c->rw);
		break;
	case TIMEDRD20:
		d = in_ns(CLOCK_REALTIME, 20 * 1000000);
		if ((c->err = pthread_rwlock_timedrdlock(c->rw, &d)) == 0)
			pthread_rwlock_unlock(c->rw);
		break;
	case TIMEDWR20:
		d = in_ns(CLOCK_REALTIME, 20 * 1000000);
		if ((c->err = pthread_rwlock_timedwrlock(c->rw, &d)) == 0)
			pthread_rwlock_unlock(c->rw);
		break;
	case CLOCKRD20:
		d = in_ns(CLOCK_MONOTONIC, 20 * 1000000);
		if ((c->err = pthread_rwlock_clockrdlock(c->rw, CLOCK_MONOTONIC, &d)) == 0)
			pthread_rwlock_unlock(c->rw);
		break;
	case UNLOCK:
		c->err = pthread_rwlock_unlock(c->rw);
		break;
	case RDLOCK_UNLOCK:
		if ((c->err = pthread_rwlock_rdlock(c->rw)) == 0)
			c->err = pthread_rwlock_unlock(c->rw);
		break;
	case WRLOCK_UNLOCK:
		if ((c->err = pthread_rwlock_wrlock(c->rw)) == 0)
			c->err = pthread_rwlock_unlock(c->rw);
		break;
	}
	c->ms = elapsed_ms(&t0);
	return NULL;
}

/* @op on @rw from a new thread, joined: its result. */
static struct call other(pthread_rwlock_t *rw, enum op op)
{
	struct call c = { rw, op, -1, 0 };
	pthread_t th;

	pthread_create(&th, NULL, call_thread, &c);
	pthread_join(th, NULL);
	return c;
}

/* --- the cases -------------------------------------------------------- */

static void readers_share(void)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	char got[64];

	int e[4];

	pthread_rwlock_rdlock(&rw);
	e[0] = other(&rw, TRYRD).err;
	e[1] = other(&rw, RDLOCK_UNLOCK).err;
	e[2] = other(&rw, TIMEDRD20).err;
	snprintf(got, sizeof(got), "%s %s %s", err_name(e[0]), err_name(e[1]), err_name(e[2]));
	expect("readers-share", got, "0 0 0");
	/* The same thread again (recursive read holds), each unlocked. */
	e[0] = pthread_rwlock_rdlock(&rw);
	e[1] = pthread_rwlock_unlock(&rw);
	e[2] = pthread_rwlock_unlock(&rw);
	e[3] = other(&rw, TRYWR).err;
	snprintf(got, sizeof(got), "%s %s %s %s", err_name(e[0]), err_name(e[1]), err_name(e[2]),
	         err_name(e[3]));
	expect("read-holds-nest", got, "0 0 0 0");
}

static void writers_exclude(void)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	char got[64];

	pthread_rwlock_wrlock(&rw);
	snprintf(got, sizeof(got), "%s %s %s %s", err_name(other(&rw, TRYRD).err),
	         err_name(other(&rw, TRYWR).err), err_name(pthread_rwlock_trywrlock(&rw)),
	         err_name(pthread_rwlock_tryrdlock(&rw)));
	pthread_rwlock_unlock(&rw);
	expect("write-held-trylocks", got, "EBUSY EBUSY EBUSY EBUSY");
	pthread_rwlock_rdlock(&rw);
	snprintf(got, sizeof(got), "%s %s", err_name(other(&rw, TRYWR).err),
	         err_name(pthread_rwlock_trywrlock(&rw)));
	pthread_rwlock_unlock(&rw);
	expect("read-held-trywrlock", got, "EBUSY EBUSY");
	pthread_rwlock_wrlock(&rw);
	snprintf(got, sizeof(got), "%s %s", err_name(pthread_rwlock_wrlock(&rw)),
	         err_name(pthread_rwlock_rdlock(&rw)));
	pthread_rwlock_unlock(&rw);
	expect("relock-by-writer", got, "EDEADLK EDEADLK");
}

/* Writers count a pair of plain ints under the lock; readers check that
 * they never see it half-updated. */
static pthread_rwlock_t pair_lock = PTHREAD_RWLOCK_INITIALIZER;
static volatile long pair_a, pair_b;
static int torn;

static void *pair_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		pthread_rwlock_wrlock(&pair_lock);
		pair_a++;
		pair_b++;
		pthread_rwlock_unlock(&pair_lock);
	}
	return NULL;
}

static void *pair_reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		pthread_rwlock_rdlock(&pair_lock);
		if (pair_a != pair_b)
			__atomic_store_n(&torn, 1, __ATOMIC_RELAXED);
		pthread_rwlock_unlock(&pair_lock);
	}
	return NULL;
}

static void writers_serialise(void)
{
	pthread_t th[6];
	char got[64];

	for (int i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, i < 3 ? pair_writer : pair_reader, NULL);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	snprintf(got, sizeof(got), "%ld %ld torn=%d", pair_a, pair_b, torn);
	expect("writers-serialise", got, "60000 60000 torn=0");
}

/* Four readers meet at a barrier while each holds the lock: only if
 * read holds are shared can all four arrive. */
static pthread_rwlock_t meet_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t meet;

static void *meet_reader(void *arg)
{
	(void)arg;
	pthread_rwlock_rdlock(&meet_lock);
	pthread_barrier_wait(&meet);
	pthread_rwlock_unlock(&meet_lock);
	return NULL;
}

static void readers_meet(void)
{
	pthread_t th[4];

	pthread_barrier_init(&meet, NULL, 4);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, meet_reader, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&meet);
	report("four-readers-hold-at-once", "ok", true);
}

static void timeouts(void)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct call r, w, c;
	struct timespec bad = in_ns(CLOCK_REALTIME, 0), past = { 1, 0 };
	char got[96];

	pthread_rwlock_wrlock(&rw);
	r = other(&rw, TIMEDRD20);
	w = other(&rw, TIMEDWR20);
	c = other(&rw, CLOCKRD20);
	pthread_rwlock_unlock(&rw);
	snprintf(got, sizeof(got), "%s %s %s", err_name(r.err), err_name(w.err), err_name(c.err));
	expect("timedlock-write-held", got, "ETIMEDOUT ETIMEDOUT ETIMEDOUT");
	report("timedlock-waited-20ms", "ok", r.ms >= 19 && w.ms >= 19 && c.ms >= 19);
	pthread_rwlock_rdlock(&rw);
	w = other(&rw, TIMEDWR20);
	pthread_rwlock_unlock(&rw);
	expect("timedwrlock-read-held", err_name(w.err), "ETIMEDOUT");
	/* A deadline already past, on a held lock: ETIMEDOUT at once. */
	pthread_rwlock_wrlock(&rw);
	snprintf(got, sizeof(got), "%s", err_name(pthread_rwlock_timedwrlock(&rw, &past)));
	pthread_rwlock_unlock(&rw);
	expect("timedwrlock-own-past", got, "EDEADLK");
	/* Invalid deadlines and clocks: EINVAL, on a free lock too (glibc
	 * checks before trying; POSIX allows either there). */
	bad.tv_nsec = 1000000000;
	snprintf(got, sizeof(got), "%s %s %s %s", err_name(pthread_rwlock_timedrdlock(&rw, &bad)),
	         err_name(pthread_rwlock_timedwrlock(&rw, &bad)),
	         err_name(pthread_rwlock_clockrdlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &past)),
	         err_name(pthread_rwlock_clockwrlock(&rw, 12345, &past)));
	expect("timedlock-einval-free", got, "EINVAL EINVAL EINVAL EINVAL");
	bad.tv_nsec = -1;
	pthread_rwlock_wrlock(&rw);
	snprintf(got, sizeof(got), "%s", err_name(pthread_rwlock_timedrdlock(&rw, &bad)));
	pthread_rwlock_unlock(&rw);
	expect("timedlock-einval-held", got, "EINVAL");
	/* Free: the timed calls take it. */
	past = in_ns(CLOCK_MONOTONIC, 1000000000);
	r.err = pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &past);
	w.err = pthread_rwlock_unlock(&rw);
	c = other(&rw, TRYWR);
	snprintf(got, sizeof(got), "%s %s %s", err_name(r.err), err_name(w.err), err_name(c.err));
	expect("clockwrlock-free", got, "0 0 0");
}

static void destroy_and_misuse(void)
{
	pthread_rwlock_t rw;
	char info[64];
	int e, u;

	pthread_rwlock_init(&rw, NULL);
	pthread_rwlock_rdlock(&rw);
	e = pthread_rwlock_destroy(&rw);
	u = pthread_rwlock_unlock(&rw);
	snprintf(info, sizeof(info), "%s %s %s", err_name(e), err_name(u),
	         err_name(other(&rw, WRLOCK_UNLOCK).err));
	expect("destroy-held-then-unlock-lock-intact", info, "0 0 0");
	expect("destroy-free", err_name(pthread_rwlock_destroy(&rw)), "0");
	/* Init again after destroy. */
	e = pthread_rwlock_init(&rw, NULL);
	u = other(&rw, WRLOCK_UNLOCK).err;
	snprintf(info, sizeof(info), "%s %s %s", err_name(e), err_name(u),
	         err_name(pthread_rwlock_destroy(&rw)));
	expect("reinit-after-destroy", info, "0 0 0");

	/* Unlock by a thread holding nothing, on a lock another thread holds
	 * for reading (glibc would take one of those holds away): a lock of
	 * its own, never used again: static, so that no later lock takes its
	 * address while this thread still holds it, under the interposer. */
	{
		static pthread_rwlock_t junk = PTHREAD_RWLOCK_INITIALIZER;
		struct call c;

		pthread_rwlock_rdlock(&junk);
		c = other(&junk, UNLOCK);
		snprintf(info, sizeof(info), "info: unlock-by-non-holder %s", err_name(c.err));
		puts(info);
		report("unlock-by-non-holder-0-or-EPERM", "ok", c.err == 0 || c.err == EPERM);
	}
}

/* A thread that takes @arg (a rwlock) for reading or writing and exits
 * holding it (LTP's timed{rd,wr}lock_6-2). */
static void *rd_and_exit(void *arg)
{
	return (void *)(intptr_t)pthread_rwlock_rdlock(arg);
}

static void *wr_and_exit(void *arg)
{
	return (void *)(intptr_t)pthread_rwlock_wrlock(arg);
}

/* Readers of @rw overlap, so that every later read hold is counted
 * (under the interposer: in the reader's read set, not the word). */
static void overlap_readers(pthread_rwlock_t *rw)
{
	pthread_rwlock_rdlock(rw);
	(void)other(rw, RDLOCK_UNLOCK);
	pthread_rwlock_unlock(rw);
}

/* Two other threads' read holds overlap on @arg (a rwlock): the first
 * holds while the second reads and leaves.  Returns the first error. */
static void *overlap_thread(void *arg)
{
	int e = pthread_rwlock_rdlock(arg);

	if (e == 0) {
		e = other(arg, RDLOCK_UNLOCK).err;
		pthread_rwlock_unlock(arg);
	}
	return (void *)(intptr_t)e;
}

/* Readers of @rw other than the caller overlap (so that, under the
 * interposer, the caller's next read hold is a counted one). */
static void others_overlap(pthread_rwlock_t *rw)
{
	pthread_t th;

	pthread_create(&th, NULL, overlap_thread, rw);
	pthread_join(th, NULL);
}

/*
 * Destroy of a rwlock held by the caller (read: a lone hold, and one
 * among overlapping readers; write) or by a thread that exited holding
 * it (read, write) answers as glibc's; init then makes it new: the
 * caller and other threads read and write it as a fresh lock.  In
 * "caller-read-counted-then-reinit-shared", other readers overlap on the new
 * lock before the caller reads it, so that the caller's read is counted
 * again (under the interposer: its read set, where the old lock's hold
 * must not be found); the other writer only tries, so that a hold left
 * behind shows as EBUSY, not a hang.
 */
static void destroy_held_then_reinit(void)
{
	static const char *const how[] = { "caller-read", "caller-read-counted", "caller-write",
	                                   "exited-reader", "exited-writer", "caller-read-counted" };

	for (int i = 0; i < 6; i++) {
		pthread_rwlock_t rw;
		pthread_t th;
		char got[128], name[64];
		int d, e, r[6];

		pthread_rwlock_init(&rw, NULL);
		if (i == 1 || i == 5)
			overlap_readers(&rw);
		if (i <= 1 || i == 5)
			pthread_rwlock_rdlock(&rw);
		else if (i == 2)
			pthread_rwlock_wrlock(&rw);
		else {
			pthread_create(&th, NULL, i == 3 ? rd_and_exit : wr_and_exit, &rw);
			pthread_join(th, NULL);
		}
		d = pthread_rwlock_destroy(&rw);
		e = pthread_rwlock_init(&rw, NULL);
		if (i == 5)
			others_overlap(&rw);
		r[0] = pthread_rwlock_tryrdlock(&rw);
		r[1] = pthread_rwlock_unlock(&rw);
		r[2] = other(&rw, i == 5 ? TRYWR : WRLOCK_UNLOCK).err;
		r[3] = other(&rw, RDLOCK_UNLOCK).err;
		r[4] = pthread_rwlock_trywrlock(&rw);
		r[5] = pthread_rwlock_unlock(&rw);
		snprintf(got, sizeof(got), "%s %s rd %s %s other-wr %s other-rd %s wr %s %s",
		         err_name(d), err_name(e), err_name(r[0]), err_name(r[1]), err_name(r[2]),
		         err_name(r[3]), err_name(r[4]), err_name(r[5]));
		snprintf(name, sizeof(name), "destroy-held-by-%s-then-reinit%s", how[i],
		         i == 5 ? "-shared" : "");
		expect(name, got, "0 0 rd 0 0 other-wr 0 other-rd 0 wr 0 0");
		pthread_rwlock_destroy(&rw);
	}
}

static void *mutex_lock_and_exit(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_lock(arg);
}

/* Destroy of a mutex held by the caller or by a thread that exited
 * holding it: glibc says EBUSY and leaves it as it was; unlocked by the
 * caller it is then destroyed, and init makes it new. */
static void mutex_destroy_held(void)
{
	for (int i = 0; i < 2; i++) {
		pthread_mutex_t m;
		pthread_t th;
		char got[64];
		int d, u = 0, f, e, t;

		pthread_mutex_init(&m, NULL);
		if (i == 0)
			pthread_mutex_lock(&m);
		else {
			pthread_create(&th, NULL, mutex_lock_and_exit, &m);
			pthread_join(th, NULL);
		}
		d = pthread_mutex_destroy(&m);
		if (i == 0)
			u = pthread_mutex_unlock(&m);
		f = i == 0 ? pthread_mutex_destroy(&m) : 0;
		e = pthread_mutex_init(&m, NULL);
		t = pthread_mutex_trylock(&m);
		snprintf(got, sizeof(got), "%s %s %s %s %s", err_name(d), err_name(u), err_name(f),
		         err_name(e), err_name(t));
		pthread_mutex_unlock(&m);
		expect(i == 0 ? "mutex-destroy-held-by-caller" : "mutex-destroy-held-by-exited-thread",
		       got, "EBUSY 0 0 0 0");
		pthread_mutex_destroy(&m);
	}
}

/* A condvar waiter: under the mutex, says it is ready, then waits for go. */
struct cw {
	pthread_mutex_t m;
	pthread_cond_t c;
	int ready, go;
};

static void *cond_waiter(void *arg)
{
	struct cw *w = arg;

	pthread_mutex_lock(&w->m);
	w->ready = 1;
	while (!w->go)
		pthread_cond_wait(&w->c, &w->m);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

/* Destroy of a mutex, free, that a thread waits on a condvar with: glibc
 * says EBUSY (its __nusers counts the waiter) and leaves it as it was;
 * once the waiter has left, destroy says 0. */
static void mutex_destroy_with_cond_waiter(void)
{
	struct cw w = { .ready = 0, .go = 0 };
	pthread_t th;
	char got[64];
	int d, f, ready = 0;

	pthread_mutex_init(&w.m, NULL);
	pthread_cond_init(&w.c, NULL);
	pthread_create(&th, NULL, cond_waiter, &w);
	/* Ready seen under the mutex: the waiter released it in its wait. */
	while (!ready) {
		pthread_mutex_lock(&w.m);
		ready = w.ready;
		pthread_mutex_unlock(&w.m);
		if (!ready)
			usleep(1000);
	}
	d = pthread_mutex_destroy(&w.m);
	pthread_mutex_lock(&w.m);
	w.go = 1;
	pthread_cond_signal(&w.c);
	pthread_mutex_unlock(&w.m);
	pthread_join(th, NULL);
	f = pthread_mutex_destroy(&w.m);
	snprintf(got, sizeof(got), "%s %s", err_name(d), err_name(f));
	expect("mutex-destroy-with-a-condvar-waiter", got, "EBUSY 0");
	pthread_cond_destroy(&w.c);
}

/* PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP and the kind set by
 * pthread_rwlockattr_setkind_np: with a writer waiting on a reader, a
 * new reader is refused (EBUSY) there, let in under the default kind. */
static bool writer_waits(pthread_rwlock_t *rw, const char *name, const char *want)
{
	struct call w = { rw, WRLOCK_UNLOCK, -1, 0 };
	char got[64] = "";
	pthread_t th;

	pthread_rwlock_rdlock(rw);
	pthread_create(&th, NULL, call_thread, &w);
	/* Until the writer is queued: a new reader is refused (the
	 * preferring kind), or give up after 2 s (the default kind never
	 * refuses; its answer is then the one from the last try). */
	for (int i = 0; i < 200; i++) {
		int e = other(rw, TRYRD).err;

		snprintf(got, sizeof(got), "%s", err_name(e));
		if (e == EBUSY)
			break;
		usleep(10000);
	}
	pthread_rwlock_unlock(rw);
	pthread_join(th, NULL);
	expect(name, got, want);
	return w.err == 0;
}

static void kinds(void)
{
	pthread_rwlock_t np = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	pthread_rwlock_t def = PTHREAD_RWLOCK_INITIALIZER, byattr;
	pthread_rwlockattr_t a;
	int kind = -1, pshared = -1;
	char got[64];

	writer_waits(&np, "writer-nonrecursive-initializer-queues-readers", "EBUSY");
	pthread_rwlockattr_init(&a);
	kind = pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pshared = pthread_rwlockattr_setkind_np(&a, 7);
	snprintf(got, sizeof(got), "%s %s", err_name(kind), err_name(pshared));
	pthread_rwlockattr_getkind_np(&a, &kind);
	pthread_rwlockattr_getpshared(&a, &pshared);
	snprintf(got + strlen(got), sizeof(got) - strlen(got), " kind=%d pshared=%d", kind, pshared);
	expect("rwlockattr", got, "0 EINVAL kind=2 pshared=0");
	pthread_rwlock_init(&byattr, &a);
	pthread_rwlockattr_destroy(&a);
	writer_waits(&byattr, "setkind-np-queues-readers", "EBUSY");
	pthread_rwlock_destroy(&byattr);
	writer_waits(&def, "default-kind-lets-readers-in", "0");
}

/* A process-shared rwlock in shared memory, across fork. */
static void process_shared(void)
{
	pthread_rwlock_t *rw = mmap(NULL, sizeof(*rw), PROT_READ | PROT_WRITE,
	                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_rwlockattr_t a;
	char got[64];
	int status = -1;
	pid_t pid;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_rwlock_init(rw, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_rwlock_wrlock(rw);
	pid = fork();
	if (pid == 0)
		_exit(pthread_rwlock_trywrlock(rw) == EBUSY && pthread_rwlock_tryrdlock(rw) == EBUSY ? 0 : 1);
	waitpid(pid, &status, 0);
	pthread_rwlock_unlock(rw);
	pthread_rwlock_rdlock(rw);
	pid = fork();
	if (pid == 0) {
		int r = pthread_rwlock_tryrdlock(rw);

		if (r == 0)
			pthread_rwlock_unlock(rw);
		_exit(r == 0 && pthread_rwlock_trywrlock(rw) == EBUSY ? 0 : 1);
	}
	snprintf(got, sizeof(got), "write-held %s", status == 0 ? "excluded" : "FAIL");
	waitpid(pid, &status, 0);
	pthread_rwlock_unlock(rw);
	snprintf(got + strlen(got), sizeof(got) - strlen(got), ", read-held %s",
	         status == 0 ? "shared" : "FAIL");
	expect("process-shared-across-fork", got, "write-held excluded, read-held shared");
	pthread_rwlock_destroy(rw);
	munmap(rw, sizeof(*rw));
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	readers_share();
	writers_exclude();
	writers_serialise();
	readers_meet();
	timeouts();
	destroy_and_misuse();
	destroy_held_then_reinit();
	mutex_destroy_held();
	mutex_destroy_with_cond_waiter();
	kinds();
	process_shared();
	printf("%s\n", failures ? "rwlock posix FAILED" : "rwlock posix ok");
	return failures != 0;
}

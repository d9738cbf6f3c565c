/* SPDX-License-Identifier: MIT */
/*
 * test_dlopen_loop.c - the library can be dlclose()d after real use and
 * loaded again, with threads that used it still alive: this program is
 * not linked with libproxylock; it loads it (path in argv[1]) for 100
 * rounds (PLK_DLOPEN_ROUNDS overrides), each round two threads hammer one
 * proxylock until the slow path ran (queued waits, thread records), one
 * of them is joined, the library is dlclose()d, and only then does the
 * other thread exit (its pthread key destructor, and the call_rcu worker
 * threads the library started, must not run unmapped code).
 */
#include <dlfcn.h>
#include <signal.h>

#include "helpers.h"

#define HAMMER_ITERS 20000
#define MIN_CONTENDED 2  /* both threads took the slow path (they start blocked) */

struct api {
	int (*lock)(proxylock_mutex_t *);
	int (*unlock)(proxylock_mutex_t *);
	void (*stats)(struct proxylock_stats *);
};

static const char *lib_path;
static proxylock_mutex_t m;
static unsigned long counter;
static volatile sig_atomic_t cur_round = -1;
static const char *volatile cur_step = "start";

/* A crash is the failure this test looks for: say where it happened. */
static void on_crash(int sig)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf),
	                 "\ndlopen-loop: signal %d in round %d, step: %s\n",
	                 sig, (int)cur_round, cur_step);

	if (n > 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n);
	signal(sig, SIG_DFL);
	raise(sig);
}

static struct api load(void **h)
{
	struct api a;

	*h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(*h != NULL, "round %d: dlopen: %s", (int)cur_round, dlerror());
	*(void **)&a.lock = dlsym(*h, "proxylock_mutex_lock");  /* POSIX idiom */
	*(void **)&a.unlock = dlsym(*h, "proxylock_mutex_unlock");
	*(void **)&a.stats = dlsym(*h, "proxylock_stats_get");
	ck_assert(a.lock && a.unlock && a.stats);
	return a;
}

struct hammer {
	const struct api *api;
	int linger;  /* stay alive until released (after dlclose) */
	int done;    /* hammering finished */
	int release;
	int err;
	int *go;     /* both start together, so they really contend */
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;

	while (!__atomic_load_n(h->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int i = 0; i < HAMMER_ITERS && !h->err; i++) {
		if (h->api->lock(&m) != 0) {
			h->err = 1;
			break;
		}
		counter++;
		if ((i & 63) == 0)
			sched_yield();  /* held across a yield: the other one queues */
		if (h->api->unlock(&m) != 0)
			h->err = 2;
	}
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	while (h->linger && !__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
		usleep(100);
	return NULL;  /* thread exit: the library's key destructor runs here */
}

static int rounds(void)
{
	const char *s = getenv("PLK_DLOPEN_ROUNDS");

	return s && atoi(s) > 0 ? atoi(s) : 100;
}

START_TEST(the_library_survives_dlclose_after_contention_with_threads_outliving_it)
{
	int n = rounds();

	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGILL, on_crash);
	for (int r = 0; r < n; r++) {
		struct proxylock_stats st;
		struct hammer a = { 0 }, b = { 0 };
		int go = 0;
		pthread_t ta, tb;
		struct api api;
		void *h;

		cur_round = r;
		cur_step = "dlopen";
		api = load(&h);
		m = (proxylock_mutex_t)PROXYLOCK_MUTEX_INITIALIZER;
		counter = 0;
		a.api = b.api = &api;
		a.go = b.go = &go;
		b.linger = 1;
		cur_step = "contended lock";
		ck_assert_int_eq(pthread_create(&ta, NULL, hammer, &a), 0);
		ck_assert_int_eq(pthread_create(&tb, NULL, hammer, &b), 0);
		/* Held while they start: both must queue and sleep at least once. */
		ck_assert_int_eq(api.lock(&m), 0);
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		usleep(5000);
		ck_assert_int_eq(api.unlock(&m), 0);
		pthread_join(ta, NULL);
		ck_assert(eventually(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE), 30000));
		ck_assert_msg(!a.err && !b.err, "round %d: lock/unlock failed", r);
		ck_assert_uint_eq(counter, 2ul * HAMMER_ITERS);
		api.stats(&st);
		ck_assert_msg(st.contended >= MIN_CONTENDED && st.sleeps >= MIN_CONTENDED,
		              "round %d: not contended enough (contended %llu, sleeps %llu)", r,
		              (unsigned long long)st.contended, (unsigned long long)st.sleeps);
		cur_step = "dlclose";
		ck_assert_int_eq(dlclose(h), 0);
		/* The library may be gone now: threads that used it exit. */
		cur_step = "thread exit after dlclose";
		__atomic_store_n(&b.release, 1, __ATOMIC_RELEASE);
		pthread_join(tb, NULL);
		cur_step = "after the round";
		usleep(2000);  /* let the library's own threads run, or crash, now */
	}
	/* Loaded again after the last dlclose: it works from scratch. */
	{
		struct api api;
		void *h;

		cur_round = n;
		cur_step = "dlopen after dlclose";
		api = load(&h);
		m = (proxylock_mutex_t)PROXYLOCK_MUTEX_INITIALIZER;
		ck_assert_int_eq(api.lock(&m), 0);
		ck_assert_int_eq(api.unlock(&m), 0);
		ck_assert_int_eq(dlclose(h), 0);
		usleep(20000);
	}
}
END_TEST

static Suite *dlopen_loop_suite(void)
{
	Suite *s = suite_create("dlopen-loop");
	TCase *tc = tcase_create("dlopen-loop");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, the_library_survives_dlclose_after_contention_with_threads_outliving_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr = srunner_create(dlopen_loop_suite());
	int failed;

	lib_path = argc > 1 ? argv[1] : "libproxylock.so.0";
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

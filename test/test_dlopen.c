/* SPDX-License-Identifier: MIT */
/*
 * test_dlopen.c - the library loaded at run time: this program is not
 * linked with libproxylock, it dlopen()s it (path in argv[1]).
 *  - threads created before the library was loaded work: it starts a
 *    thread, then loads the library and contends from both;
 *  - the library can be dlclose()d after real use and loaded again, with
 *    threads that used it still alive: 100 rounds (PLK_DLOPEN_ROUNDS
 *    overrides), each round two threads contend on one proxylock until
 *    the slow path ran (queued waits, thread records), one of them is
 *    joined, the library is dlclose()d, and only then does the other
 *    thread exit (its pthread key destructor must not run unmapped code).
 */
#include <dlfcn.h>
#include <signal.h>

#include "helpers.h"

static int (*lock_fn)(proxylock_mutex_t *);
static int (*unlock_fn)(proxylock_mutex_t *);
static proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
static int go;
static unsigned long counter;
static const char *lib_path;

static void *early_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		usleep(100);
	for (int i = 0; i < 20000; i++) {
		ck_assert_int_eq(lock_fn(&m), 0);
		counter++;
		ck_assert_int_eq(unlock_fn(&m), 0);
	}
	return NULL;
}

START_TEST(threads_started_before_dlopen_contend_correctly)
{
	pthread_t th;
	void *h;

	pthread_create(&th, NULL, early_thread, NULL);
	usleep(1000);
	h = dlopen(lib_path, RTLD_NOW);
	ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
	*(void **)&lock_fn = dlsym(h, "proxylock_mutex_lock");  /* POSIX idiom */
	*(void **)&unlock_fn = dlsym(h, "proxylock_mutex_unlock");
	ck_assert(lock_fn && unlock_fn);
	ck_assert_ptr_null(dlsym(h, "plk_thread_get"));  /* internals are hidden */
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 20000; i++) {
		ck_assert_int_eq(lock_fn(&m), 0);
		counter++;
		ck_assert_int_eq(unlock_fn(&m), 0);
	}
	pthread_join(th, NULL);
	ck_assert_uint_eq(counter, 40000);
}
END_TEST

#define HAMMER_ITERS 20000
#define MIN_CONTENDED 2  /* both threads took the slow path (they start blocked) */

struct api {
	int (*lock)(proxylock_mutex_t *);
	int (*unlock)(proxylock_mutex_t *);
	void (*stats)(struct proxylock_stats *);
};

static proxylock_mutex_t loop_m;
static unsigned long loop_counter;
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
		if (h->api->lock(&loop_m) != 0) {
			h->err = 1;
			break;
		}
		loop_counter++;
		if ((i & 63) == 0)
			sched_yield();  /* held across a yield: the other one queues */
		if (h->api->unlock(&loop_m) != 0)
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

	if (s && atoi(s) > 0)
		return atoi(s);
	return under_valgrind() ? 5 : 100;  /* memcheck: threads run one at a time */
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
		loop_m = (proxylock_mutex_t)PROXYLOCK_MUTEX_INITIALIZER;
		loop_counter = 0;
		a.api = b.api = &api;
		a.go = b.go = &go;
		b.linger = 1;
		cur_step = "contended lock";
		ck_assert_int_eq(pthread_create(&ta, NULL, hammer, &a), 0);
		ck_assert_int_eq(pthread_create(&tb, NULL, hammer, &b), 0);
		/* Held while they start: both must queue and sleep at least
		 * once, however long a loaded machine takes to run them. */
		api.stats(&st);
		ck_assert_int_eq(api.lock(&loop_m), 0);
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		{
			uint64_t sleeps0 = st.sleeps;

			for (int w = 0; w < 30000; w++) {
				api.stats(&st);
				if (st.sleeps >= sleeps0 + 2)
					break;
				usleep(1000);
			}
		}
		ck_assert_int_eq(api.unlock(&loop_m), 0);
		pthread_join(ta, NULL);
		ck_assert(eventually(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE), 30000));
		ck_assert_msg(!a.err && !b.err, "round %d: lock/unlock failed", r);
		ck_assert_uint_eq(loop_counter, 2ul * HAMMER_ITERS);
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
		loop_m = (proxylock_mutex_t)PROXYLOCK_MUTEX_INITIALIZER;
		ck_assert_int_eq(api.lock(&loop_m), 0);
		ck_assert_int_eq(api.unlock(&loop_m), 0);
		ck_assert_int_eq(dlclose(h), 0);
		usleep(20000);
	}
}
END_TEST

static Suite *dlopen_suite(void)
{
	Suite *s = suite_create("dlopen");
	TCase *tc = tcase_create("dlopen");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, threads_started_before_dlopen_contend_correctly);
	tcase_add_test(tc, the_library_survives_dlclose_after_contention_with_threads_outliving_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr = srunner_create(dlopen_suite());
	int failed;

	lib_path = argc > 1 ? argv[1] : "libproxylock.so.0";
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

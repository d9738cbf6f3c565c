/* SPDX-License-Identifier: MIT */
/*
 * test_dlopen.c - threads created before the library was loaded work:
 * this program is not linked with libproxylock; it starts a thread, then
 * dlopen()s the library (path in argv[1]) and contends from both.
 */
#include <dlfcn.h>

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

static Suite *dlopen_suite(void)
{
	Suite *s = suite_create("dlopen");
	TCase *tc = tcase_create("dlopen");

	tcase_add_test(tc, threads_started_before_dlopen_contend_correctly);
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

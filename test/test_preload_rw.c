/* SPDX-License-Identifier: MIT */
/*
 * test_preload_rw.c - plain pthread rwlocks under the LD_PRELOAD
 * interposer (meson sets LD_PRELOAD): a writer waiting on readers lends
 * them its CPUs and nice, seen in the kernel's view (sched_getattr,
 * sched_getaffinity as system calls), and the readers get their own
 * back at unlock; a process-shared rwlock stays glibc's.
 */
#include <dlfcn.h>
#include <sys/resource.h>

#include "helpers.h"

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int writer_in;

static void *pinned_writer(void *arg)
{
	(void)arg;
	pin_self(0);
	setpriority(PRIO_PROCESS, 0, 0);  /* created at its creator's nice 10 */
	__atomic_store_n(&writer_in, 1, __ATOMIC_RELEASE);
	pthread_rwlock_wrlock(&rw);
	pthread_rwlock_unlock(&rw);
	return NULL;
}

/* Reader pinned to CPU 1 at nice 10; a writer pinned to CPU 0 at nice 0
 * blocks: while it waits the kernel shows the reader on CPU 0 at nice 0;
 * after the reader's unlock, CPU 1 and nice 10 again. */
START_TEST(a_waiting_writer_lends_its_cpus_and_nice_to_the_reader)
{
	pthread_t th;

	ck_assert_msg(dlsym(RTLD_DEFAULT, "proxylock_caps"), "run me under the interposer");
	ck_assert_msg(sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs 2 CPUs");
	pin_self(1);
	ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 10), 0);
	ck_assert_int_eq(pthread_rwlock_rdlock(&rw), 0);
	pthread_create(&th, NULL, pinned_writer, NULL);
	ck_assert(eventually(__atomic_load_n(&writer_in, __ATOMIC_ACQUIRE) && affinity_is(0, 0, -1), 3000));
	ck_assert_int_eq(kview_of(0).nice, 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&rw), 0);
	ck_assert(affinity_is(0, 1, -1));
	ck_assert_int_eq(kview_of(0).nice, 10);
	pthread_join(th, NULL);
}
END_TEST

/* glibc's __shared is 1 in a process-shared rwlock, and glibc's word
 * counts readers in units of 8; a proxylock's names a lone reader (bit
 * 29 and its TID: rwlockword.h). */
START_TEST(private_rwlocks_are_proxylocks_and_shared_ones_glibcs)
{
	pthread_rwlock_t priv, shared;
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	ck_assert_int_eq(pthread_rwlock_init(&priv, &a), 0);
	pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	ck_assert_int_eq(pthread_rwlock_init(&shared, &a), 0);
	pthread_rwlockattr_destroy(&a);
	ck_assert_int_eq(pthread_rwlock_rdlock(&priv), 0);
	ck_assert_int_eq(pthread_rwlock_rdlock(&shared), 0);
	ck_assert_uint_eq(priv.__data.__readers, 0x20000000u | (unsigned)gettid_());
	ck_assert_uint_ne(shared.__data.__readers, 0x20000000u | (unsigned)gettid_());
	ck_assert_int_eq(shared.__data.__shared, 1);
	ck_assert_int_eq(pthread_rwlock_unlock(&priv), 0);
	ck_assert_int_eq(pthread_rwlock_unlock(&shared), 0);
	ck_assert_uint_eq(priv.__data.__readers, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preload_rw");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_waiting_writer_lends_its_cpus_and_nice_to_the_reader);
	tcase_add_test(tc, private_rwlocks_are_proxylocks_and_shared_ones_glibcs);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

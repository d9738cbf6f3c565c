/* SPDX-License-Identifier: MIT */
/*
 * test_rwrace.c - rwlock races held open by hand: a step of the read
 * fast path (rwlockword.h) done with the internal headers, paused where
 * the race needs it, then the public calls.  Checked against the
 * kernel's view (nice), never the library's bookkeeping.  Needs 2 CPUs
 * and the privilege to lower nice (root).
 */
#include <semaphore.h>
#include <sys/mman.h>

#include "actor.h"
#include "helpers.h"
#include "registry.h"
#include "rwlockword.h"
#include "waitq.h"

static proxylock_rwlock_t L = PROXYLOCK_RWLOCK_INITIALIZER;
static sem_t x_go, x_in, r_step, r_done, w_done;  /* r_step also lets R exit */
static pid_t rtid;
static int r_nice_reading, r_rc;

static void *holder(void *p)
{
	(void)p;
	set_nice_self(19);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&L), 0);
	sem_post(&x_in);
	sem_wait(&x_go);
	ck_assert_int_eq(proxylock_rwlock_unlock(&L), 0);
	return NULL;
}

static void *writer(void *p)
{
	(void)p;
	ck_assert_int_eq(proxylock_rwlock_wrlock(&L), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&L), 0);
	sem_post(&w_done);
	return NULL;
}

/* plk_rw_rdlock_fast_new's failing path by hand: publish, (a writer
 * queues and lends to the slot), the CAS fails on WAITERS, retract;
 * then, as the interposer does after its own failed fast path, the
 * public rdlock, whose fast path runs again. */
static void *retracting_reader(void *p)
{
	(void)p;
	rtid = gettid_();
	set_nice_self(19);
	struct plk_rdset *s = plk_rdset_self();
	ck_assert_ptr_nonnull(s);
	int i = plk_rdset_free_slot(s);
	ck_assert_int_ge(i, 0);
	__atomic_store_n(&s->lock[i], (uintptr_t)&L, __ATOMIC_RELAXED);  /* publish */
	sem_post(&r_done);
	sem_wait(&r_step);
	plk_rdset_put(s, i);  /* the CAS saw WAITERS: retract */
	s->retracted = 1;
	sem_post(&r_done);
	sem_wait(&r_step);
	r_rc = proxylock_rwlock_rdlock(&L);
	r_nice_reading = kview_of(0).nice;
	ck_assert_int_eq(proxylock_rwlock_unlock(&L), 0);
	sem_post(&r_done);
	sem_wait(&r_step);  /* alive until the kernel's view of it is read */
	return NULL;
}

/* The scenario: R's retracted publication lent to by a writer that
 * then came and went; R's nice after its rdlock+unlock goes in *@after. */
static void retraction_scenario(int *after)
{
	pthread_t x, r, w;

	require_nice_lending();
	/* The race is the counted fast path's: make L a shared lock first
	 * (a second hold joins a solo one), whose reads are all counted. */
	ck_assert_int_eq(proxylock_rwlock_rdlock(&L), 0);
	ck_assert_int_eq(proxylock_rwlock_rdlock(&L), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&L), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(&L), 0);
	sem_init(&x_go, 0, 0);
	sem_init(&x_in, 0, 0);
	sem_init(&r_step, 0, 0);
	sem_init(&r_done, 0, 0);
	sem_init(&w_done, 0, 0);
	ck_assert_int_eq(pthread_create(&x, NULL, holder, NULL), 0);
	sem_wait(&x_in);                                      /* X reads */
	ck_assert_int_eq(pthread_create(&r, NULL, retracting_reader, NULL), 0);
	sem_wait(&r_done);                                    /* R published */
	ck_assert_int_eq(pthread_create(&w, NULL, writer, NULL), 0);
	/* W queues behind X and its scan lends to R's published slot. */
	ck_assert_msg(eventually(kview_of(rtid).nice == 0, bound_ms(2000)),
	              "the queued writer never lent to the published reader");
	sem_post(&r_step);
	sem_wait(&r_done);                                    /* R retracted */
	sem_post(&x_go);
	sem_wait(&w_done);                                    /* X left; W came and went */
	sem_post(&r_step);
	sem_wait(&r_done);                                    /* R read and left */
	ck_assert_int_eq(r_rc, 0);
	*after = kview_of(rtid).nice;
	sem_post(&r_step);
	pthread_join(x, NULL);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
}

/* RW6: no lend keyed by L stays on a thread that left L (R's base is
 * nice 19).  Failed before the read fast path refused with a retraction
 * pending: the second fast path took L, the unlock was a fast one. */
START_TEST(a_second_fast_path_after_a_retraction_leaves_no_lend_after_the_unlock)
{
	int after;

	retraction_scenario(&after);
	ck_assert_msg(after == 19, "the reader kept the departed writer's lend after its unlock (nice %d)",
	              after);
}
END_TEST

/* RW6: a lend keyed by L sits on a holder only while WAITERS is set.  R
 * joins by the slow path's CAS with WAITERS clear: the stale lend goes
 * then (failed before: nice 0 through the read section). */
START_TEST(a_retracted_reader_joining_with_waiters_clear_reads_without_the_stale_lend)
{
	int after;

	retraction_scenario(&after);
	ck_assert_msg(r_nice_reading == 19, "the reader read with the departed writer's lend (nice %d)",
	              r_nice_reading);
}
END_TEST

/* --- an unlock that frees the lock reads it no more ------------------- */

static proxylock_rwlock_t *F;       /* on a page of its own, unmapped below */
static sem_t f_in, f_go, p_in, p_go;
static pid_t ptid;

static void *freeing_reader(void *p)
{
	(void)p;
	ck_assert_int_eq(proxylock_rwlock_rdlock(F), 0);
	sem_post(&f_in);
	sem_wait(&f_go);
	ck_assert_int_eq(proxylock_rwlock_unlock(F), 0);  /* slow: WAITERS left set */
	return NULL;
}

/* A reader between its slot store and its CAS (rwlockword.h): the
 * freeing unlock's withdrawal visits its record. */
static void *publisher(void *p)
{
	struct plk_rdset *s;
	int i;

	(void)p;
	ptid = gettid_();
	ck_assert_ptr_nonnull(plk_thread_self());
	s = plk_rdset_self();
	ck_assert_ptr_nonnull(s);
	i = plk_rdset_free_slot(s);
	ck_assert_int_ge(i, 0);
	__atomic_store_n(&s->lock[i], (uintptr_t)F, __ATOMIC_RELAXED);
	sem_post(&p_in);
	sem_wait(&p_go);
	return NULL;
}

/* Once an unlock has cleared WAITERS with the lock free and nobody
 * queued, others may take it, release it, destroy and free it (glibc
 * bug 13690's case): that unlock must not read it again.  The window
 * (its withdrawal of publishers) is held open by holding a publisher's
 * record lock; F's page is unmapped inside it.  Failed before (SIGSEGV
 * in grant(), called after the clear). */
START_TEST(an_unlock_that_frees_the_rwlock_with_nobody_queued_reads_it_no_more)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct plk_thread *t;
	struct timespec ts;
	pthread_t a, p;

	F = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(F, MAP_FAILED);
	ck_assert_int_eq(proxylock_rwlock_init(F, NULL), 0);
	sem_init(&f_in, 0, 0);
	sem_init(&f_go, 0, 0);
	sem_init(&p_in, 0, 0);
	sem_init(&p_go, 0, 0);
	ck_assert_int_eq(pthread_create(&a, NULL, freeing_reader, NULL), 0);
	sem_wait(&f_in);
	/* A writer queues and times out: the queue is empty, WAITERS stays (RW2). */
	ts = abstime_in(CLOCK_MONOTONIC, 20000000);
	ck_assert_int_eq(proxylock_rwlock_clockwrlock(F, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
	ck_assert_int_ne(plk_rw_word(F) & PLK_RW_WAITERS, 0);
	ck_assert_int_eq(pthread_create(&p, NULL, publisher, NULL), 0);
	sem_wait(&p_in);
	t = plk_thread_lock_tid(ptid, PLK_RECORD_FIND);
	ck_assert_ptr_nonnull(t);
	sem_post(&f_go);
	/* The unlock clears the word, then waits for the publisher's record. */
	ck_assert_msg(eventually(plk_rw_word(F) == 0, bound_ms(2000)),
	              "the reader's unlock never freed the rwlock");
	ck_assert_int_eq(proxylock_rwlock_wrlock(F), 0);
	ck_assert_int_eq(proxylock_rwlock_unlock(F), 0);
	ck_assert_int_eq(proxylock_rwlock_destroy(F), 0);
	ck_assert_int_eq(munmap(F, pg), 0);
	plk_thread_unlock(t);
	pthread_join(a, NULL);
	sem_post(&p_go);
	pthread_join(p, NULL);
}
END_TEST

/* --- solo holds and the bucket (RW9) ------------------------------- */

/* Someone sleeps on bucket @b's lock, which the caller holds. */
static bool bucket_has_sleeper(struct plk_bucket *b)
{
	return __atomic_load_n(&b->lock.word, __ATOMIC_RELAXED) == 2;
}

/* A rwlock that lends nothing: no queued writer's rescan takes its bucket. */
static void init_unlent(proxylock_rwlock_t *rw)
{
	proxylock_rwlockattr_t at;

	proxylock_rwlockattr_init(&at);
	ck_assert_int_eq(proxylock_rwlockattr_setdonate(&at, 0), 0);
	ck_assert_int_eq(proxylock_rwlock_init(rw, &at), 0);
}

/* Exclusion, RW9: T reads L solo, a writer queues, and T's unlock,
 * having seen its solo word with WAITERS, waits for the bucket, which we
 * hold; meanwhile a join converts T's hold as join_locked does (by hand:
 * our slot, then __solo, then the count).  T's release must take its own
 * hold only: we still read and the writer still waits.  Failed before
 * the fix (found in review): T freed the word and the writer was handed
 * L while we read. */
START_TEST(a_solo_hold_converted_while_its_reader_unlocks_releases_only_itself)
{
	proxylock_rwlock_t rw;
	struct actor t, w;
	struct plk_bucket *b;
	struct plk_rdset *s;
	uint32_t solo, word;
	int i;

	init_unlent(&rw);
	actor_start(&t, 0, -1);
	actor_start(&w, 0, -1);
	actor_do(&t, ACT_RDLOCK, &rw, 0);
	solo = PLK_RW_SOLO | (uint32_t)t.tid;
	ck_assert_uint_eq(plk_rw_word(&rw), solo);
	actor_block_on(&w, ACT_WRLOCK, &rw);
	ck_assert_uint_eq(plk_rw_word(&rw), PLK_RW_WAITERS | solo);
	s = plk_rdset_self();
	ck_assert_ptr_nonnull(s);
	i = plk_rdset_free_slot(s);
	ck_assert_int_ge(i, 0);
	b = plk_waitq_lock(&rw);
	actor_post(&t, ACT_RWUNLOCK, &rw);
	ck_assert_msg(eventually(bucket_has_sleeper(b), bound_ms(2000)),
	              "the solo reader's unlock never reached the bucket");
	__atomic_store_n(&s->lock[i], (uintptr_t)&rw, __ATOMIC_RELAXED);
	s->depth[i] = 1;
	__atomic_store_n(&rw.__solo, PLK_RW_SHARED | (uint32_t)t.tid, __ATOMIC_RELAXED);
	ck_assert(plk_rw_cas(&rw, PLK_RW_WAITERS | solo, PLK_RW_WAITERS | 2));
	plk_waitq_unlock(b);
	ck_assert_int_eq(actor_wait(&t), 0);
	word = plk_rw_word(&rw);
	ck_assert_msg(word == (PLK_RW_WAITERS | 1), "the unlock left word %#x, not our read hold", word);
	ck_assert_uint_eq(rw.__solo, PLK_RW_SHARED);
	ck_assert(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
	ck_assert_int_eq(proxylock_rwlock_unlock(&rw), 0);  /* our hold: the writer's turn */
	ck_assert_int_eq(actor_wait(&w), 0);
	actor_do(&w, ACT_RWUNLOCK, &rw, 0);
	ck_assert_uint_eq(plk_rw_word(&rw), 0);
	actor_quit(&t);
	actor_quit(&w);
}
END_TEST

/* RW9: __solo is believed under the bucket only.  T read L solo and
 * left; a join that had seen T's solo word stored __solo before its CAS,
 * which fails, and takes the store back within its bucket hold (by hand:
 * we hold the bucket).  T's unlock now (it holds nothing) must be EPERM
 * and change nothing.  Failed before the fix (found in review): T took
 * the converted path and decremented the free word to 0xffffffff. */
START_TEST(an_unlock_seeing_a_failed_joins_store_is_eperm_and_changes_nothing)
{
	proxylock_rwlock_t rw;
	struct plk_bucket *b;
	struct actor t;

	init_unlent(&rw);
	actor_start(&t, 0, -1);
	actor_do(&t, ACT_RDLOCK, &rw, 0);
	actor_do(&t, ACT_RWUNLOCK, &rw, 0);
	b = plk_waitq_lock(&rw);
	__atomic_store_n(&rw.__solo, PLK_RW_SHARED | (uint32_t)t.tid, __ATOMIC_RELAXED);
	actor_post(&t, ACT_RWUNLOCK, &rw);
	ck_assert_msg(eventually(bucket_has_sleeper(b) || __atomic_load_n(&t.done, __ATOMIC_ACQUIRE),
	                         bound_ms(2000)), "the unlock neither answered nor reached the bucket");
	__atomic_store_n(&rw.__solo, 0, __ATOMIC_RELAXED);  /* the join's CAS failed: taken back */
	plk_waitq_unlock(b);
	ck_assert_int_eq(actor_wait(&t), EPERM);
	ck_assert_uint_eq(plk_rw_word(&rw), 0);
	actor_quit(&t);
}
END_TEST

static Suite *rwrace_suite(void)
{
	Suite *s = suite_create("rwrace");
	TCase *tc = tcase_create("races");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_second_fast_path_after_a_retraction_leaves_no_lend_after_the_unlock);
	tcase_add_test(tc, a_retracted_reader_joining_with_waiters_clear_reads_without_the_stale_lend);
	tcase_add_test(tc, an_unlock_that_frees_the_rwlock_with_nobody_queued_reads_it_no_more);
	tcase_add_test(tc, a_solo_hold_converted_while_its_reader_unlocks_releases_only_itself);
	tcase_add_test(tc, an_unlock_seeing_a_failed_joins_store_is_eperm_and_changes_nothing);
	suite_add_tcase(s, tc);
	return s;
}

PLK_TEST_MAIN(rwrace_suite)

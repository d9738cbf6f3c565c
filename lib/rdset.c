/* SPDX-License-Identifier: MIT */
/*
 * rdset.c - the table of read sets (see rdset.h).
 *
 * Claim: a thread's first read lock scans the table for a free set and
 * claims it by CAS of its owner word (acquire: the slots its last owner
 * cleared before releasing it are seen clear), then raises the table's
 * high-water mark, which bounds every scan.  The mark is raised before
 * the thread publishes any slot, and the slot before its count
 * increment (release), so a writer that synchronises with that
 * increment sees both.  Release: a pthread key's destructor at thread
 * exit turns the holds still in the slots into untracked holds (a later
 * key destructor may unlock them; a thread that exits holding read locks
 * leaves them counted in their words, as glibc does), clears the slots
 * and frees the owner word with release.
 *
 * A scanner reads owner, the slot, and owner again, all acquire (arm64:
 * ldar keeps each load after the one before): if both owner reads agree
 * and name a thread, the slot value was that thread's while it owned the
 * set, never a former owner's (each claim changes the upper half).
 */
#include <pthread.h>

#include "cpu.h"
#include "rdset.h"
#include "registry.h"
#include "tsan.h"

__thread struct plk_rdset *plk_tls_rdset __attribute__((tls_model("initial-exec")));
__thread uint32_t plk_tls_rd_untracked __attribute__((tls_model("initial-exec")));

static struct plk_rdset rdsets[PLK_RDSETS];
static uint32_t rdsets_hwm;  /* sets [0, hwm) have been claimed at least once */
static pthread_key_t rd_key;
static bool rd_key_ready;
static pthread_once_t rd_key_once = PTHREAD_ONCE_INIT;

static uint32_t owner_tid(uint64_t o)
{
	return (uint32_t)o;
}

static void set_release(struct plk_rdset *s)
{
	uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);

	for (int i = 0; i < PLK_RD_SLOTS; i++) {
		__atomic_store_n(&s->lock[i], 0, __ATOMIC_RELAXED);
		s->depth[i] = 0;
		s->withdraw[i] = 0;
	}
	s->nused = 0;
	s->retracted = 0;
	s->retracted_rw = 0;
	/* Release: the next claimer (acquire) sees the slots clear. */
	__atomic_store_n(&s->owner, (o & ~0xffffffffull) + (1ull << 32), __ATOMIC_RELEASE);
}

/*
 * Thread exit: give the set back.  Read holds still in it become
 * untracked holds, so that a later pthread key destructor (or an
 * atexit-free TLS teardown) of the same thread may still unlock them
 * (rwlock.c: unlock_other); a lend on us through such a lock stays until
 * that unlock, which goes through the bucket while PLK_RW_WAITERS is set
 * (RW2: it stays set while we hold) and withdraws there.
 */
static void rd_destructor(void *arg)
{
	struct plk_rdset *s = arg;

	if (plk_tls_rdset == s) {
		plk_tls_rdset = NULL;
		for (int i = 0; i < PLK_RD_SLOTS; i++) {
			uintptr_t l = __atomic_load_n(&s->lock[i], __ATOMIC_RELAXED);

			if (l && !(l & PLK_RD_PENDING))
				plk_tls_rd_untracked += s->depth[i];
		}
	}
	set_release(s);
}

static void rd_key_init(void)
{
	rd_key_ready = pthread_key_create(&rd_key, rd_destructor) == 0;
}

void plk_rdset_key_init(void)
{
	pthread_once(&rd_key_once, rd_key_init);
}

static void hwm_raise(uint32_t n)
{
	uint32_t h = __atomic_load_n(&rdsets_hwm, __ATOMIC_RELAXED);

	/* Relaxed: ordered before the owner's first slot store and its
	 * release increment of a lock word (rdset.h). */
	while (h < n && !__atomic_compare_exchange_n(&rdsets_hwm, &h, n, 1, __ATOMIC_RELAXED,
	                                             __ATOMIC_RELAXED))
		;
}

struct plk_rdset *plk_rdset_self(void)
{
	uint32_t tid = plk_tid();

	if (plk_tls_rdset)
		return plk_tls_rdset;
	pthread_once(&rd_key_once, rd_key_init);
	if (!rd_key_ready)
		return NULL;
	for (uint32_t i = 0; i < PLK_RDSETS; i++) {
		struct plk_rdset *s = &rdsets[i];
		uint64_t o = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);

		if (owner_tid(o) != 0)
			continue;
		if (!__atomic_compare_exchange_n(&s->owner, &o, (o & ~0xffffffffull) + (1ull << 32) + tid,
		                                 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		/* Release fence: our slot stores (relaxed) come after the
		 * claim, so a scanner whose acquire load reads one of them sees
		 * the new owner word on its second read (C11 fence-to-acquire
		 * synchronisation; arm64: dmb ish).  TSan does not model
		 * fences (gcc's -Wtsan): what this one orders is between
		 * atomics, on which TSan reports nothing. */
#if PLK_TSAN
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
		__atomic_thread_fence(__ATOMIC_RELEASE);
#if PLK_TSAN
#pragma GCC diagnostic pop
#endif
		hwm_raise(i + 1);
		s->prefetchw = plk_cpu_has_prefetchw();
		if (pthread_setspecific(rd_key, s) != 0) {
			set_release(s);
			return NULL;
		}
		plk_tls_rdset = s;
		return s;
	}
	return NULL;
}

pid_t plk_rdset_reader_at(const void *lock, uint32_t i, bool name)
{
	uintptr_t held = (uintptr_t)lock, named = held | PLK_RD_NAMED;
	struct plk_rdset *s;
	uint64_t o;

	if (i >= PLK_RDSETS)
		return 0;
	s = &rdsets[i];
	o = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
	if (owner_tid(o) == 0)
		return 0;
	for (int j = 0; j < PLK_RD_SLOTS; j++) {
		uintptr_t v = __atomic_load_n(&s->lock[j], __ATOMIC_ACQUIRE);

		if (v != held && v != named)
			continue;
		/* The mark and the owner's exchange at unlock are RMWs of one
		 * word: either the owner sees the mark (and withdraws under
		 * the bucket, after this hold) or the mark fails on its
		 * cleared slot (and nothing is lent).  Acquire, as the loads:
		 * the owner's second read stays after it (arm64). */
		if (name && v == held &&
		    !__atomic_compare_exchange_n(&s->lock[j], &v, named, 0, __ATOMIC_ACQUIRE,
		                                 __ATOMIC_ACQUIRE))
			return 0;  /* cleared (or retracted) meanwhile: not a reader */
		if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != o)
			return 0;  /* released meanwhile: not a reader any more */
		return (pid_t)owner_tid(o);
	}
	return 0;
}

int plk_rdset_readers(const void *lock, pid_t *tids, int max, bool name)
{
	uint32_t n = plk_rdset_count();
	int found = 0;

	for (uint32_t i = 0; i < n; i++) {
		/* Past @max nobody is lent to, so nobody is marked. */
		pid_t tid = plk_rdset_reader_at(lock, i, name && found < max);

		if (tid == 0)
			continue;
		if (found < max)
			tids[found] = tid;
		found++;
	}
	return found;
}

uint32_t plk_rdset_count(void)
{
	return __atomic_load_n(&rdsets_hwm, __ATOMIC_ACQUIRE);
}

/*
 * Child: free every set but the forking thread's.  Only sets ever claimed
 * are read: the walk stops at the first whose owner word is 0, as no set
 * after it was ever claimed (a claimer takes the first set it finds free,
 * in table order, and moves on only when that set was claimed by another;
 * an owner word returns to 0 only when its upper half, to which every
 * claim and release adds, wraps after 2^31 uses of the set, and such a
 * set is below rdsets_hwm, which is walked too).  Not rdsets_hwm alone:
 * a thread may have claimed a set and not yet raised the mark when the
 * fork was taken.  The table is 128 KiB of .bss, mostly never touched,
 * and each of its pages that a child reads is a page fault of its own
 * (issue 18: 31 of the child's 44 extra).
 */
void plk_rdset_fork_child(void)
{
	uint32_t hwm = rdsets_hwm;

	for (uint32_t i = 0; i < PLK_RDSETS && (rdsets[i].owner != 0 || i < hwm); i++)
		if (&rdsets[i] != plk_tls_rdset && owner_tid(rdsets[i].owner) != 0)
			set_release(&rdsets[i]);
	if (plk_tls_rdset) {
		uint64_t o = plk_tls_rdset->owner;

		/* The forking thread's new TID. */
		plk_tls_rdset->owner = (o & ~0xffffffffull) | plk_tid();
	}
}

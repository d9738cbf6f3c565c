/* SPDX-License-Identifier: MIT */
/*
 * registry.c - thread records, found by TID (see registry.h).
 *
 * Table: TIDs are below PID_MAX_LIMIT (2^22), so a two-level array maps
 * them: 1024 page pointers, each page 4096 record pointers, mmap'd on
 * first use and never unmapped.  A lookup is two acquire loads; a slot
 * goes NULL -> record and record -> NULL by CAS.  Nothing here waits for
 * readers, so there is no read-side section to span a wait, no grace
 * period and no helper thread.
 *
 * Records: carved from mmap'd slabs, never returned to the system, so a
 * pointer found once stays dereferenceable.  Lifetime:
 *   created  - by plk_thread_lock_tid() (a waiter naming an owner) or
 *              plk_thread_self(); published by CAS into its slot, so two
 *              threads racing to create one agree on a single record;
 *   adopted  - by its own thread in plk_thread_self(), which stores it
 *              in a pthread key, or in fork's prepare (a record a waiter
 *              made for it: plk_registry_fork_adopt);
 *   retired  - by the key's destructor at thread exit, or by
 *              plk_thread_unlock() once a record created on behalf of a
 *              thread that never adopted it has nothing lent to it:
 *              under its lock, the slot is cleared and tid becomes 0;
 *   recycled - popped off the free list for another TID, under its lock.
 * The record's lock word is never reset while the process runs threads,
 * so a finder holding a stale pointer can always take it and see that
 * tid no longer matches.  A record is never retired while its thread is
 * blocked (a blocked thread has not exited, and has adopted its record).
 *
 * Fork: the table's pages and the record slabs are MADV_WIPEONFORK, so
 * a fork child starts with an empty table and no record: every record
 * describes a parent thread, and the child's threads get theirs from new
 * slabs.  The parent's records stay mapped in the child, zero-filled,
 * unreachable (still type-stable: a zero record is a free one no finder
 * can match).  Neither side copies them, although the parent goes on
 * writing its own, and the child reads none (see plk_registry_fork_child).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "forkalias.h"
#include "registry.h"
#include "wipeonfork.h"

#define TID_BITS 22                    /* PID_MAX_LIMIT on 64-bit Linux */
#define PAGE_BITS 12
#define NPAGES (1u << (TID_BITS - PAGE_BITS))
#define PAGE_SLOTS (1u << PAGE_BITS)
#define SLAB_RECORDS 16

__thread uint64_t plk_tls_id __attribute__((tls_model("initial-exec")));
static __thread struct plk_thread *tls_self __attribute__((tls_model("initial-exec")));
__thread const struct plk_thread *plk_tls_applying __attribute__((tls_model("initial-exec")));

static struct plk_thread **pages[NPAGES];
/* The kernel does not do MADV_WIPEONFORK (before Linux 4.14 it says
 * EINVAL; without CONFIG_ADVISE_SYSCALLS, or under a seccomp filter, madvise
 * says ENOSYS or EPERM): a fork child empties the table and retires the
 * records by hand.  Set before
 * the page or slab the kernel refused is published (the page by its
 * release CAS, the slab under free_lock, which fork's prepare takes). */
static bool kept_on_fork;

/* Mark the fresh mapping @p of @bytes MADV_WIPEONFORK.  False if the
 * kernel knows the advice but could not apply it (ENOMEM, EAGAIN): the
 * caller gives the mapping back, as a child would find what it holds.
 * Any other refusal is a kernel that does not do it (kept_on_fork). */
static bool wipe_on_fork(void *p, size_t bytes)
{
	if (madvise(p, bytes, MADV_WIPEONFORK) == 0)
		return true;
	if (errno == ENOMEM || errno == EAGAIN)
		return false;
	__atomic_store_n(&kept_on_fork, true, __ATOMIC_RELAXED);  /* ordered by the publication */
	return true;
}
/*
 * What a fork child must find empty, on pages the kernel gives it
 * zero-filled (MADV_WIPEONFORK; see Identity in registry.h): the child
 * finds them so before any code runs in it, whichever fork handler runs
 * first or if none does, so no internal lock needs to be held across a
 * fork (issue 35: another library's prepare handler, run after ours, may
 * take an interposed lock).  key is first, on a line of its own that is
 * written once per process; 64 KiB, so that the advice takes whole pages
 * whatever the kernel's page size.
 */
static union {
	struct {
		struct plk_proc id;                    /* plk_proc: the key, read by every plk_tid() */
		_Alignas(128) pid_t pid;               /* getpid(), cached */
		/* Threads that cached their TID in this process, the last
		 * BORN_HERE of them while plk_fork_survivor_pending() (slot
		 * first, count last with release): none is the survivor. */
		uint32_t born_here[16];
		uint32_t nborn;
		plk_ilock_t free_lock;
		struct plk_thread *free_list;          /* under free_lock */
		unsigned free_count;                   /* records on it; under free_lock, read as a hint */
	} p;
	char page[65536];
} proc_page __attribute__((aligned(65536)));
static bool proc_wiped;                       /* the kernel wipes proc_page in a child */
extern struct plk_proc plk_proc __attribute__((alias("proc_page")));
/* The generation this process has, or its parent had while this one has
 * none yet: not wiped, so a child's is one past its parent's. */
static uint32_t proc_gen;
static pthread_key_t self_key;
static bool key_ready;                 /* self_key was created */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* The first thread of a process to ask gives it a generation one past
 * its parent's.  proc_gen is stored before the key: a fork between the
 * two gives its child a generation past this one, never this one. */
static uint32_t proc_renew(void)
{
	uint32_t gen = __atomic_load_n(&proc_gen, __ATOMIC_RELAXED) + 1, zero = 0;

	if (gen == UINT32_MAX)
		gen = 1;  /* ~UINT32_MAX is the key of no generation */
	__atomic_store_n(&proc_gen, gen, __ATOMIC_RELAXED);
	/* Relaxed: the key guards no data, only the caches' validity.  Two
	 * threads of a new child racing here compute the same generation. */
	if (!__atomic_compare_exchange_n(&plk_proc.key, &zero, ~gen, 0, __ATOMIC_RELAXED,
	                                 __ATOMIC_RELAXED))
		return zero;
	return ~gen;
}

/*
 * The caller cached @old in another process: it is the thread that
 * survived a fork, now @tid.  @old becomes its alias; the aliases it
 * had are kept if it was its parent's survivor too (@old is that fork's
 * new TID).  Its record, if it had one, describes the parent's thread
 * (wiped, or left to the fork handler) and its key is cleared.
 */
static void survivor_renew(uint32_t old, uint32_t tid)
{
	if (!plk_fork_alias_add(old, tid))
		return;  /* done already, by a handler that interrupted us */
	if (tls_self) {
		tls_self = NULL;
		if (key_ready)
			pthread_setspecific(self_key, NULL);  /* a key set before: no allocation */
	}
	__atomic_store_n(&plk_proc.survivor, 1, __ATOMIC_RELEASE);
}

/* While the survivor is pending, a thread that caches its TID here says
 * so: it cannot be the survivor, whose TID was cached in the parent. */
static void born_here(uint32_t tid)
{
	uint32_t n = __atomic_load_n(&proc_page.p.nborn, __ATOMIC_RELAXED);

	for (;;) {
		uint32_t *slot = &proc_page.p.born_here[n % 16];

		__atomic_store_n(slot, tid, __ATOMIC_RELAXED);
		/* Release: the slot before the count.  A CAS: threads of the
		 * child may come here together. */
		if (__atomic_compare_exchange_n(&proc_page.p.nborn, &n, n + 1, 0, __ATOMIC_RELEASE,
		                                __ATOMIC_RELAXED))
			return;
	}
}

static bool was_born_here(uint32_t tid)
{
	uint32_t n = __atomic_load_n(&proc_page.p.nborn, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n && i < 16; i++)
		if (__atomic_load_n(&proc_page.p.born_here[i], __ATOMIC_RELAXED) == tid)
			return true;
	return false;
}

uint32_t plk_tid_slow(void)
{
	uint32_t key = __atomic_load_n(&plk_proc.key, __ATOMIC_RELAXED);
	uint32_t old = (uint32_t)plk_tls_id, tid = (uint32_t)gettid();

	if (key == 0)
		key = proc_renew();
	/* The cache first: a handler that interrupts what follows finds it
	 * valid and does not renew again. */
	plk_tls_id = (uint64_t)~key << 32 | tid;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (old != 0 && old != tid)
		survivor_renew(old, tid);
	else if (old == 0 && (pid_t)tid == plk_pid())
		/* The first thread of this process, with nothing cached
		 * before: in a fork child, the survivor, with no alias. */
		__atomic_store_n(&plk_proc.survivor, 1, __ATOMIC_RELEASE);
	else if (old == 0 && plk_fork_survivor_pending())
		born_here(tid);
	return tid;
}

bool plk_fork_survivor_pending(void)
{
	uint32_t key = __atomic_load_n(&plk_proc.key, __ATOMIC_RELAXED);

	/* A generation past 1 is a fork child's. */
	return key != 0 && ~key > 1 && !__atomic_load_n(&plk_proc.survivor, __ATOMIC_ACQUIRE);
}

pid_t plk_pid(void)
{
	pid_t pid = __atomic_load_n(&proc_page.p.pid, __ATOMIC_RELAXED);

	if (pid == 0) {
		pid = getpid();
		__atomic_store_n(&proc_page.p.pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

/*
 * /proc/self/stat's state field (after the last ')') is Z or X.  Raw
 * syscalls: open and read are cancellation points, and a lock call,
 * which asks this while its thread sleeps in a queue, must not be one.
 */
static bool leader_is_zombie(void)
{
	char buf[512], *p;
	long n;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

bool plk_thread_exited(pid_t tid)
{
	int saved = errno;
	bool gone;

	if (tid <= 0)
		return false;
	if (syscall(SYS_tgkill, plk_pid(), tid, 0) != 0)
		gone = errno == ESRCH &&
		       (!plk_fork_survivor_pending() || was_born_here((uint32_t)tid));
	else
		gone = tid == plk_pid() && leader_is_zombie();
	errno = saved;
	return gone;
}

/*
 * The leader's answer, kept (plk_thread_exited_hint): the PID whose
 * leader was found exited (it stays a zombie until the process ends; a
 * fork child has another PID), and when it was last found alive.  Hints,
 * relaxed: each is one word, and a stale one only repeats or delays an
 * answer the kernel gives anyway.
 */
#define LEADER_RECHECK_NS (50 * 1000 * 1000)
static pid_t leader_exited_pid;
static uint64_t leader_alive_ns;

bool plk_thread_exited_hint(pid_t tid)
{
	pid_t pid = plk_pid();
	uint64_t now, seen;
	bool gone;

	if (tid != pid)
		return plk_thread_exited(tid);
	if (__atomic_load_n(&leader_exited_pid, __ATOMIC_RELAXED) == pid)
		return true;
	now = plk_now_ns();
	seen = __atomic_load_n(&leader_alive_ns, __ATOMIC_RELAXED);
	if (seen && now - seen < LEADER_RECHECK_NS)
		return false;
	gone = plk_thread_exited(tid);
	if (gone)
		__atomic_store_n(&leader_exited_pid, pid, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&leader_alive_ns, now, __ATOMIC_RELAXED);
	return gone;
}


/* --- the table ------------------------------------------------------- */

/* @tid's slot; NULL if out of range, or (!@create) its page is not there. */
static struct plk_thread **slot_of(pid_t tid, bool create)
{
	uint32_t t = (uint32_t)tid;
	struct plk_thread **page, **fresh = NULL;

	if (t == 0 || t >= (1u << TID_BITS))
		return NULL;
	/* Acquire: pairs with the release CAS below, so the page's zeroes
	 * (mmap's) are seen before its slots are used. */
	page = __atomic_load_n(&pages[t >> PAGE_BITS], __ATOMIC_ACQUIRE);
	if (page || !create)
		return page ? &page[t & (PAGE_SLOTS - 1)] : NULL;
	fresh = mmap(NULL, PAGE_SLOTS * sizeof(*page), PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		return NULL;
	if (!wipe_on_fork(fresh, PAGE_SLOTS * sizeof(*page))) {
		munmap(fresh, PAGE_SLOTS * sizeof(*page));
		return NULL;
	}
	page = NULL;
	if (!__atomic_compare_exchange_n(&pages[t >> PAGE_BITS], &page, fresh, 0,
	                                 __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		munmap(fresh, PAGE_SLOTS * sizeof(*page));  /* lost the race: use theirs */
	else
		page = fresh;
	return &page[t & (PAGE_SLOTS - 1)];
}

struct plk_thread *plk_thread_find(pid_t tid)
{
	struct plk_thread **slot = slot_of(tid, false);

	/* Acquire: pairs with the release CAS that published the record
	 * (plk_thread_lock_tid), so it is seen initialised. */
	return slot ? __atomic_load_n(slot, __ATOMIC_ACQUIRE) : NULL;
}

/* --- record memory --------------------------------------------------- */

/* Map a slab and put its records on the free list.  No internal lock
 * held: the mmap is a syscall.  False if out of memory. */
static bool slab_add(void)
{
	struct plk_thread *slab = mmap(NULL, SLAB_RECORDS * sizeof(*slab), PROT_READ | PROT_WRITE,
	                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (slab == MAP_FAILED)
		return false;
	if (!wipe_on_fork(slab, SLAB_RECORDS * sizeof(*slab))) {
		munmap(slab, SLAB_RECORDS * sizeof(*slab));
		return false;
	}
	plk_ilock_lock(&proc_page.p.free_lock);
	for (int i = 0; i < SLAB_RECORDS; i++) {
		slab[i].free_next = proc_page.p.free_list;
		__atomic_store_n(&proc_page.p.free_list, &slab[i], __ATOMIC_RELAXED);
	}
	__atomic_store_n(&proc_page.p.free_count, proc_page.p.free_count + SLAB_RECORDS, __ATOMIC_RELAXED);
	plk_ilock_unlock(&proc_page.p.free_lock);
	return true;
}

/* A free record off the free list; NULL if it is empty. */
static struct plk_thread *record_pop(void)
{
	struct plk_thread *t;

	plk_ilock_lock(&proc_page.p.free_lock);
	if ((t = proc_page.p.free_list)) {
		__atomic_store_n(&proc_page.p.free_list, t->free_next, __ATOMIC_RELAXED);
		__atomic_store_n(&proc_page.p.free_count, proc_page.p.free_count - 1, __ATOMIC_RELAXED);
	}
	plk_ilock_unlock(&proc_page.p.free_lock);
	return t;
}

/* A free record; @may_map: no internal lock is held, so a slab may be
 * mapped if the free list is empty.  NULL if none. */
static struct plk_thread *record_alloc(bool may_map)
{
	struct plk_thread *t;

	while (!(t = record_pop()) && may_map && slab_add())
		;
	return t;
}

/*
 * Called on every slow path, so it takes no lock: a thread preempted
 * inside free_lock would stall every contended lock call in the process.
 * The emptiness test is a hint (relaxed: free_list is written under
 * free_lock); if it is wrong, a record made under a lock finds the list
 * empty and that owner goes without a lend this time (chain_truncated).
 */
bool plk_registry_reserve(pid_t tid)
{
	if (tid > 0 && !slot_of(tid, true))
		return false;
	return __atomic_load_n(&proc_page.p.free_list, __ATOMIC_RELAXED) != NULL || slab_add();
}

static void record_free(struct plk_thread *t)
{
	plk_ilock_lock(&proc_page.p.free_lock);
	t->free_next = proc_page.p.free_list;
	__atomic_store_n(&proc_page.p.free_list, t, __ATOMIC_RELAXED);
	__atomic_store_n(&proc_page.p.free_count, proc_page.p.free_count + 1, __ATOMIC_RELAXED);
	plk_ilock_unlock(&proc_page.p.free_lock);
}

bool plk_registry_reserve_n(const pid_t *tids, int n)
{
	for (int i = 0; i < n; i++)
		if (tids[i] > 0 && !slot_of(tids[i], true))
			return false;
	/* A hint, as in plk_registry_reserve: short, and the last readers
	 * go without a lend this time (chain_truncated). */
	while (__atomic_load_n(&proc_page.p.free_count, __ATOMIC_RELAXED) < (unsigned)n)
		if (!slab_add())
			return false;
	return true;
}

/*
 * Make free record @t @tid's and link it; @t's lock held.  Everything
 * after the lock word and the token's waiter count and futex word is
 * reset; the fields read without a lock are
 * written with atomics (a stale finder may be reading them).  wait_seq
 * only grows, so a chain walk's snapshot never matches across a recycle.
 */
static void record_init(struct plk_thread *t, pid_t tid)
{
	memset((char *)t + offsetof(struct plk_thread, adopted), 0,
	       sizeof(*t) - offsetof(struct plk_thread, adopted));  /* applier too */
	/* Its base was never read: no call may be made on it, and it is never
	 * answered to the application, until it is (donate.c, I4). */
	t->base_unverified = true;
	CDS_INIT_LIST_HEAD(&t->wnode);
	__atomic_store_n(&t->blocked_on, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&t->park, PLK_PARK_WAITING, __ATOMIC_RELAXED);
	__atomic_store_n(&t->tid, tid, __ATOMIC_RELAXED);
}

/* Take @t out of the table and mark it free; @t's lock held.  The caller
 * passes it to record_free() once the lock is dropped. */
static void record_retire(struct plk_thread *t)
{
	struct plk_thread **slot = slot_of(t->tid, false), *self = t;

	if (slot)
		__atomic_compare_exchange_n(slot, &self, NULL, 0, __ATOMIC_RELAXED,
		                            __ATOMIC_RELAXED);
	__atomic_store_n(&t->tid, 0, __ATOMIC_RELAXED);
}

/*
 * Find or create @tid's record and lock it.  A record found may have been
 * retired (and even recycled) between the lookup and the lock: then tid
 * no longer matches and we look again.
 */
struct plk_thread *plk_thread_lock_tid(pid_t tid, int how)
{
	bool create = how != PLK_RECORD_FIND;
	struct plk_thread **slot = slot_of(tid, how == PLK_RECORD_CREATE), *t, *fresh = NULL;

	if (!slot)
		return NULL;
	for (;;) {
		if ((t = __atomic_load_n(slot, __ATOMIC_ACQUIRE))) {
			plk_ilock_lock(&t->lock);
			if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) == tid)
				break;
			plk_ilock_unlock(&t->lock);
			continue;
		}
		if (!create)
			break;
		if (!fresh && !(fresh = record_alloc(how == PLK_RECORD_CREATE)))
			break;
		plk_ilock_lock(&fresh->lock);
		record_init(fresh, tid);
		t = NULL;
		/* Release: whoever finds it sees it initialised. */
		if (__atomic_compare_exchange_n(slot, &t, fresh, 0, __ATOMIC_RELEASE,
		                                __ATOMIC_RELAXED)) {
			t = fresh;
			fresh = NULL;
			break;
		}
		__atomic_store_n(&fresh->tid, 0, __ATOMIC_RELAXED);
		plk_ilock_unlock(&fresh->lock);
	}
	if (fresh)
		record_free(fresh);  /* never published */
	return t;
}

void plk_thread_unlock(struct plk_thread *t)
{
	/* Not while a restore is due or being made: its apply needs it. */
	bool idle = t->tid != 0 && !t->adopted && t->nheld == 0 && !t->applier &&
	            t->orphans == 0 && t->gen == t->applied_gen && !__atomic_load_n(&t->blocked_on, __ATOMIC_RELAXED);

	if (idle)
		record_retire(t);
	plk_ilock_unlock(&t->lock);
	if (idle)
		record_free(t);
}

/* --- the apply token ------------------------------------------------- */

bool plk_thread_token_wait(struct plk_thread *t, pid_t tid)
{
	for (;;) {
		/* Not ours to retire: it was retired (and may be free or
		 * recycled) while we slept.  Or a signal handler inside our
		 * own calls for @t: the token or the call in flight is ours. */
		if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) != tid || plk_tls_applying == t) {
			plk_ilock_unlock(&t->lock);
			return false;
		}
		if (t->orphans == 0 && plk_thread_token_take(t))
			return true;
		uint32_t seq = __atomic_load_n(&t->apply_seq, __ATOMIC_RELAXED);

		t->apply_waiters++;
		plk_ilock_unlock(&t->lock);
		plk_futex_wait(&t->apply_seq, seq, CLOCK_MONOTONIC, NULL);
		plk_ilock_lock(&t->lock);
		t->apply_waiters--;
	}
}

/* Drop the token, t->lock held; true if sleepers must be woken (after
 * the lock is dropped: I5). */
static bool token_drop(struct plk_thread *t)
{
	t->applier = false;
	if (t->apply_waiters == 0)
		return false;
	__atomic_store_n(&t->apply_seq, t->apply_seq + 1, __ATOMIC_RELAXED);
	return true;
}

void plk_thread_token_drop_unlock(struct plk_thread *t)
{
	bool wake = token_drop(t);

	plk_thread_unlock(t);
	if (wake)
		plk_futex_wake(&t->apply_seq, INT32_MAX);
}

/* --- a thread's own record ------------------------------------------- */

/*
 * Key destructor: the thread is exiting and cannot be blocked on a lock.
 * Another thread may still hold its apply token (a lender's calls in
 * flight, an application's scheduler call on it): the record is retired
 * only once the token is ours, so nobody writes a recycled record, and
 * those waiting for the token wake to find it is no longer @tid's.
 */
static void self_destructor(void *arg)
{
	struct plk_thread *t = arg;
	pid_t tid = __atomic_load_n(&t->tid, __ATOMIC_RELAXED);
	bool wake;

	tls_self = NULL;
	plk_ilock_lock(&t->lock);
	/* False only if this thread exits inside its own calls for @t
	 * (pthread_exit from a signal handler there): the record is left
	 * with its token, and is not retired. */
	if (!plk_thread_token_wait(t, tid))
		return;
	record_retire(t);
	wake = token_drop(t);
	plk_ilock_unlock(&t->lock);
	if (wake)
		plk_futex_wake(&t->apply_seq, INT32_MAX);
	record_free(t);
}

static void key_init(void)
{
	key_ready = pthread_key_create(&self_key, self_destructor) == 0;
}

void plk_registry_key_init(void)
{
	pthread_once(&key_once, key_init);
}

/* plk_tid() first: in a fork child the survivor's record is the
 * parent's, and renewing its TID forgets it (survivor_renew). */
struct plk_thread *plk_thread_self_cached(void)
{
	(void)plk_tid();
	return tls_self;
}

/* Find (@how) the caller's record and mark it adopted; the caller sets
 * the key.  No internal lock held.  NULL if none. */
static struct plk_thread *adopt(int how)
{
	struct plk_thread *t;

	plk_registry_key_init();
	if (!key_ready || !(t = plk_thread_lock_tid((pid_t)plk_tid(), how)))
		return NULL;
	/* Adopted before the lock is dropped, so nobody retires it; the key
	 * is set after (pthread_setspecific may allocate: I5). */
	t->adopted = true;
	plk_ilock_unlock(&t->lock);
	return t;
}

/* Give up adopting @t: the key could not be set. */
static void unadopt(struct plk_thread *t)
{
	plk_ilock_lock(&t->lock);
	t->adopted = false;
	plk_thread_unlock(t);  /* retired there unless something is lent to it */
}

struct plk_thread *plk_thread_self(void)
{
	struct plk_thread *t = plk_thread_self_cached();

	if (__builtin_expect(t != NULL, 1))
		return t;
	if (!(t = adopt(PLK_RECORD_CREATE)))
		return NULL;
	if (pthread_setspecific(self_key, t) == 0) {
		tls_self = t;
		return t;
	}
	unadopt(t);
	return NULL;
}

unsigned long plk_registry_count(void)
{
	unsigned long n = 0;

	for (unsigned p = 0; p < NPAGES; p++) {
		struct plk_thread **page = __atomic_load_n(&pages[p], __ATOMIC_ACQUIRE);

		for (unsigned i = 0; page && i < PAGE_SLOTS; i++)
			n += __atomic_load_n(&page[i], __ATOMIC_RELAXED) != NULL;
	}
	return n;
}

/* --- fork ------------------------------------------------------------ */

/*
 * A thread lent to while it holds a lock it took by the fast path has
 * only the record a waiter made for its TID.  The forking thread adopts
 * it, or makes one, in prepare, so that the lends that reach it until
 * the fork is taken go through a record whose base prepare copied
 * (docs/design.md, Fork).  Not pthread_setspecific here: it may allocate
 * (keys past glibc's 32nd), and an allocator's own prepare handler may
 * already hold its locks; the thread cannot exit before the parent
 * handler sets it.
 */
void plk_registry_fork_adopt(void)
{
	struct plk_thread *t;

	if (!tls_self && (t = adopt(PLK_RECORD_CREATE)))
		tls_self = t;  /* the key is set by plk_registry_fork_key */
}

/* Parent: set the key of a record adopted in prepare (a plain load if
 * there is none: no TLS of its own, as static TLS is scarce for a
 * dlopen'd library). */
void plk_registry_fork_key(void)
{
	struct plk_thread *t = tls_self;

	if (!t || pthread_getspecific(self_key) == t)
		return;
	if (pthread_setspecific(self_key, t) != 0) {
		tls_self = NULL;
		unadopt(t);
	}
}

void plk_registry_fork_init(void)
{
	proc_wiped = plk_bss_wipe_on_fork(&proc_page, sizeof(proc_page));
}

/*
 * Child: only the forking thread survives, under a new TID.  Every
 * record describes a parent thread: the kernel gave the child the
 * table's pages, the record slabs and the free list zero-filled (see the
 * top), and plk_tid() renews the caller's TID (which the child handlers
 * of libraries registered before us may have done already), taking its
 * aliases.  Walking the table to retire the records cost every child a
 * fault per 4 KiB of a table page the parent never touched (issue 18).
 * Where the kernel cannot wipe them, the child forgets them by hand: the
 * table is emptied and the records left unreachable, unread (a parent
 * thread may have been writing one when the fork was taken: nothing is
 * held across a fork).
 */
void plk_registry_fork_child(void)
{
	if (!proc_wiped) {
		memset(&proc_page.p, 0, sizeof(proc_page.p));
		/* plk_proc is an alias of the page: make the compiler read it
		 * again after the memset of the page's other name. */
		__asm__ __volatile__("" ::: "memory");
	}
	if (kept_on_fork)
		memset(pages, 0, sizeof(pages));
	(void)plk_tid();
	/* Our handler ran: the caller is the survivor, renewed. */
	__atomic_store_n(&plk_proc.survivor, 1, __ATOMIC_RELEASE);
}

/* SPDX-License-Identifier: MIT */
/*
 * lockstat.c - per-lock statistics and the PROXYLOCK_STATS=1 report.
 *
 * Off unless enabled (the interposer does so when PROXYLOCK_STATS=1):
 * then every mutex, rwlock and condvar the interposer sees gets a row.  No
 * interposed call and no part of the report takes memory from the
 * program's allocator (an allocator whose locks are pthread mutexes,
 * jemalloc, would come back here inside its own lock, for ever) or takes
 * a lock.  Rows are carved from slabs this file mmaps
 * (a bump index, claimed with one fetch-and-add), never freed or moved,
 * so a destroyed lock's address that comes back as another lock goes on
 * counting in the same row, as in mutrace.  They are found through an
 * index of its own: open addressing, linear probing, insert only, in
 * levels that double in size, each mapped when first needed.  A slot
 * goes once from empty to a row, by CAS, and never changes again, so a
 * lookup needs no read-side section and nothing ever waits for readers
 * (why not liburcu's hash table: docs/design.md, "Dependencies").
 * Counters are relaxed atomics.
 *
 * A fork child reports what it did itself: its rows start at zero and
 * its index empty, as the process-wide counters of stats.c do, so that
 * the reports of a parent and its children add up and none repeats the
 * parent's counts up to the fork.  Every slab and index level is marked
 * MADV_WIPEONFORK (Linux 4.14+): the child gets them zero-filled without
 * writing them, and the parent keeps them writable across the fork (a
 * page shared copy-on-write costs whichever side writes it first a page
 * copy, and the parent goes on counting).  The child keeps the slab and
 * level pointers and rows_claimed: the rows below it are zero, never
 * published, left unused (a row handed out again could be one another
 * atfork child handler, run before ours, has just claimed).  Where a
 * mapping could not be marked, the child zeroes them by hand.
 *
 * The core does not import this
 * file: it belongs to the interposer, and is the core's observer
 * (observe.h), told, with no internal lock held, which kinds a donation
 * through a lock changed in the kernel.
 *
 * At exit the most contended mutexes are printed to stderr, below a
 * header line that says the interposer was active and how many objects
 * it saw.  They go to a copy of file descriptor 2 taken when counting
 * starts, in the interposer's constructor: programs such as xz and GNU
 * sort close stderr in their own exit handlers, which run before ours.
 * If fd 2 was closed then, nothing is printed (nor the dead-owner lines,
 * observe.h): never fd 2 itself, which may by now be a file the program
 * opened.  With PROXYLOCK_STATS_FILE=path ("%p": the process ID) the
 * report is one JSON object written to that file instead (its fields
 * are documented in proxylock(1)).  The file is created, never opened
 * if it exists (O_EXCL: the report truncates and rewrites no file it did
 * not make; nor follows a symlink, O_NOFOLLOW), mode 0600; if it exists,
 * stderr says so and no report is written.  In secure-execution mode no
 * PROXYLOCK_* variable is read (config.h), so there is no report.  The
 * report runs where the program may have no memory left (a fork child
 * that set RLIMIT_AS, say), so it does not allocate: it walks the slabs'
 * rows, each published by a flag, formats on the stack and write()s.  The JSON
 * report's sorted array is an anonymous mapping; without it the report
 * holds the ten most contended mutexes only, marked truncated.  Nothing
 * it does can kill the program: under pressure it prints less.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "lockstat.h"
#include "observe.h"
#include "proxylock.h"

#define REPORT_ROWS 10
#define SLAB_ROWS 512      /* rows per mapping */
#define SLABS 4096         /* at most 2M locks counted */
#define LEVELS 16          /* index level k has LEVEL0_SLOTS << k slots */
#define LEVEL0_SLOTS 4096
#define PROBES 16          /* slots tried per level before the next one */

/* What a row counts. */
enum { ROW_MUTEX = 0, ROW_COND = 1, ROW_RWLOCK = 2 };

struct lockstat {
	const void *addr;
	int kind;               /* ROW_* */
	int ready;              /* in the index: the report's rows (release/acquire) */
	uint64_t uses;          /* acquisitions (mutex), read acquisitions (rwlock), waits (condvar) */
	uint64_t wr_uses;       /* write acquisitions (rwlock) */
	uint64_t contended;
	uint64_t wait_ns, wait_max_ns;
	uint64_t donations;
	uint64_t lent[4];       /* by kind: uclamp, affinity, nice, rt */
};

bool plk_lockstat_on;

/* The index: level k, once mapped, is LEVEL0_SLOTS << k row pointers. */
static struct lockstat **levels[LEVELS];
/* Row i is slabs[i / SLAB_ROWS][i % SLAB_ROWS]; rows_claimed counts the
 * rows handed out, rows_lost the operations not counted for want of a
 * row (no memory, or 2M rows out). */
static struct lockstat *slabs[SLABS];
static unsigned long rows_claimed, rows_lost;
/* The kernel does not do MADV_WIPEONFORK (before Linux 4.14, or no
 * madvise at all: registry.c): a fork child zeroes the rows and the
 * index by hand.  Written once, when
 * counting starts. */
static bool rows_kept_on_fork;
/* A row this thread claimed for a lock another thread added first: never
 * published, so it serves this thread's next new lock. */
static __thread struct lockstat *spare __attribute__((tls_model("initial-exec")));
static int report_fd = -1;  /* a copy of stderr taken at load, or -1: see the top */
/* PROXYLOCK_STATS_FILE, taken when counting starts (the program may
 * change its environment before it exits); NULL: the table on stderr. */
static char json_file_buf[4096];
static const char *json_file;

/* A 64-bit finaliser (MurmurHash3's fmix64): every bit of the address
 * reaches the low bits the index uses, so locks laid out at a fixed
 * stride do not share a probe sequence. */
static unsigned long addr_hash(const void *addr)
{
	uint64_t x = (uintptr_t)addr;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (unsigned long)x;
}

/* A fresh zero mapping of @bytes for rows or index slots, marked
 * MADV_WIPEONFORK (see the top); MAP_FAILED if none.  A kernel that did
 * not do the advice at load (EINVAL, or ENOSYS or EPERM for madvise
 * itself) leaves the reset to the child (rows_kept_on_fork); where it
 * did, any refusal now (ENOMEM, EAGAIN, or a seccomp filter installed
 * since) gives no mapping: the child resets nothing and would find its
 * rows. */
static void *stat_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED && madvise(p, bytes, MADV_WIPEONFORK) != 0 &&
	    (!rows_kept_on_fork || errno == ENOMEM || errno == EAGAIN)) {
		munmap(p, bytes);
		return MAP_FAILED;
	}
	return p;
}

/*
 * A zero row from the slabs, NULL if none can be had (2M rows are out,
 * or mmap fails).  The slab pointer is stored and loaded relaxed: a slab
 * holds only the kernel's zeroes when it is published, and a thread that
 * sees the pointer finds the mapping (the fault handler looks it up under
 * the mm's lock); what is written into a row afterwards is published by
 * the index slot and by the row's ready flag.
 */
static struct lockstat *row_claim(void)
{
	struct lockstat *slab, *fresh, *e = spare;
	unsigned long i;

	if (e) {
		spare = NULL;
		return e;
	}
	i = __atomic_fetch_add(&rows_claimed, 1, __ATOMIC_RELAXED);
	if (i >= (unsigned long)SLABS * SLAB_ROWS)
		return NULL;
	slab = __atomic_load_n(&slabs[i / SLAB_ROWS], __ATOMIC_RELAXED);
	if (!slab) {
		fresh = stat_map(SLAB_ROWS * sizeof(*fresh));
		if (fresh == MAP_FAILED)
			return NULL;  /* row i stays unpublished; a later claim in its slab retries */
		if (__atomic_compare_exchange_n(&slabs[i / SLAB_ROWS], &slab, fresh, 0,
		                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			slab = fresh;
		else
			munmap(fresh, SLAB_ROWS * sizeof(*fresh));
	}
	return &slab[i % SLAB_ROWS];
}

/*
 * Index level @k, mapped now if @map and it is not yet; NULL if it is
 * not there.  Relaxed, as row_claim's slabs: a fresh level is all empty
 * slots, the kernel's zeroes.
 */
static struct lockstat **level(int k, bool map)
{
	size_t bytes = ((size_t)LEVEL0_SLOTS << k) * sizeof(struct lockstat *);
	struct lockstat **l = __atomic_load_n(&levels[k], __ATOMIC_RELAXED), **fresh;

	if (l || !map)
		return l;
	fresh = stat_map(bytes);
	if (fresh == MAP_FAILED)
		return NULL;
	if (__atomic_compare_exchange_n(&levels[k], &l, fresh, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return fresh;
	munmap(fresh, bytes);
	return l;
}

/*
 * Level @l (slot mask @mask) of the search for @addr (hash @h): its row,
 * found or, if @kind >= 0, published in the first empty slot (from
 * *@fresh, claimed here if NULL, and then taken); NULL with *@stop set if
 * the search ends here without one (an empty slot when only finding, no
 * memory for a row); NULL alone if PROBES slots hold other locks.
 *
 * Why an address has one row: slots only ever go from empty to a row,
 * so an insert takes the first slot of the address's sequence (PROBES
 * slots a level, level after level) that was empty, and every other
 * thread inserting that address walks the same sequence: it finds the
 * row there, or meets the slot empty, loses the CAS and finds the row.
 * Acquire on the slot pairs with the CAS's release, which publishes the
 * row's address and kind.
 */
static struct lockstat *probe_level(struct lockstat **l, unsigned long mask, unsigned long h,
                                    const void *addr, int kind, struct lockstat **fresh,
                                    bool *stop)
{
	for (unsigned long j = 0; j < PROBES; j++) {
		struct lockstat **slot = &l[(h + j) & mask];
		struct lockstat *r = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if (!r) {
			if (kind < 0 || (!*fresh && !(*fresh = row_claim()))) {
				*stop = true;
				return NULL;
			}
			(*fresh)->addr = addr;
			(*fresh)->kind = kind;
			if (__atomic_compare_exchange_n(slot, &r, *fresh, 0, __ATOMIC_RELEASE,
			                                __ATOMIC_ACQUIRE)) {
				r = *fresh;
				*fresh = NULL;
				/* Release: the report, which finds rows by this flag
				 * rather than through the index, then reads addr and
				 * kind as written. */
				__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
				return r;
			}
		}
		if (r->addr == addr)
			return r;
	}
	return NULL;
}

/*
 * @addr's row; if it has none and @kind >= 0 (a ROW_*), a new one.  NULL if it has none, or there is no memory for
 * one (the operation is then not counted, and rows_lost says so).
 */
static struct lockstat *row_of(const void *addr, int kind)
{
	unsigned long h = addr_hash(addr);
	struct lockstat *fresh = NULL, *r = NULL;
	bool stop = false;

	for (int k = 0; k < LEVELS && !r && !stop; k++) {
		struct lockstat **l = level(k, kind >= 0);

		if (!l)
			break;
		r = probe_level(l, ((unsigned long)LEVEL0_SLOTS << k) - 1, h, addr, kind, &fresh, &stop);
	}
	if (fresh)
		spare = fresh;  /* claimed, never published: this thread's next new lock's */
	if (!r && kind >= 0)
		__atomic_fetch_add(&rows_lost, 1, __ATOMIC_RELAXED);
	return r;
}

/*
 * The published row after row *@i, advancing *@i; NULL at the end.  The
 * report's walk, without RCU: rows are never freed or moved.  Rows
 * published meanwhile may be left out.
 */
static struct lockstat *row_next(unsigned long *i)
{
	unsigned long end = __atomic_load_n(&rows_claimed, __ATOMIC_RELAXED);

	if (end > (unsigned long)SLABS * SLAB_ROWS)
		end = (unsigned long)SLABS * SLAB_ROWS;
	while (*i < end) {
		struct lockstat *slab = __atomic_load_n(&slabs[*i / SLAB_ROWS], __ATOMIC_RELAXED);
		struct lockstat *e;

		if (!slab) {
			*i = (*i / SLAB_ROWS + 1) * SLAB_ROWS;  /* never mapped: none published */
			continue;
		}
		e = &slab[(*i)++ % SLAB_ROWS];
		if (__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE))  /* pairs with probe_level's */
			return e;
	}
	return NULL;
}

/* A counter another thread may be adding to. */
static unsigned long long get(const uint64_t *field)
{
	return __atomic_load_n(field, __ATOMIC_RELAXED);
}

static void add(uint64_t *field, uint64_t v)
{
	__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

/* One acquisition of @e's lock: after @wait_ns if @contended. */
static void count_wait(struct lockstat *e, bool contended, uint64_t wait_ns)
{
	uint64_t max;

	if (!contended)
		return;
	max = __atomic_load_n(&e->wait_max_ns, __ATOMIC_RELAXED);
	add(&e->contended, 1);
	add(&e->wait_ns, wait_ns);
	while (wait_ns > max &&
	       !__atomic_compare_exchange_n(&e->wait_max_ns, &max, wait_ns, 1, __ATOMIC_RELAXED,
	                                    __ATOMIC_RELAXED))
		;
}

void plk_lockstat_mutex(const void *m, bool contended, uint64_t wait_ns)
{
	struct lockstat *e;

	if ((e = row_of(m, ROW_MUTEX))) {
		add(&e->uses, 1);
		count_wait(e, contended, wait_ns);
	}
}

void plk_lockstat_rwlock(const void *rw, bool write, bool contended, uint64_t wait_ns)
{
	struct lockstat *e;

	if ((e = row_of(rw, ROW_RWLOCK))) {
		add(write ? &e->wr_uses : &e->uses, 1);
		count_wait(e, contended, wait_ns);
	}
}

void plk_lockstat_cond(const void *c)
{
	struct lockstat *e;

	if ((e = row_of(c, ROW_COND)))
		add(&e->uses, 1);
}

static void lockstat_lent(const void *lock, unsigned kinds)
{
	struct lockstat *e;

	if (!plk_lockstat_on)
		return;
	/* An rwlock's waiters are keyed by its address | PLK_RW_TAG
	 * (registry.h); every lock is at least 4-aligned. */
	lock = (const void *)((uintptr_t)lock & ~(uintptr_t)3);
	if ((e = row_of(lock, -1))) {  /* made when the lock was first taken */
		add(&e->donations, 1);
		for (int k = 0; k < 4; k++)
			if (kinds & (1u << k))
				add(&e->lent[k], 1);
	}
}

/* --- the report ------------------------------------------------------ */

/*
 * printf to @fd through a buffer on the stack and write(): dprintf's
 * FILE takes its buffer from malloc (glibc before 2.37).  A line longer
 * than the buffer is cut; a failed write is dropped.
 */
static __attribute__((format(printf, 2, 3))) void say(int fd, const char *fmt, ...)
{
	char buf[512];  /* the longest line, JSON totals, is < 450 bytes */
	va_list ap;
	size_t n, off = 0;
	int len;

	if (fd < 0)
		return;  /* no stderr verified at load: say nothing */
	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);  /* into @buf: no allocation */
	va_end(ap);
	if (len < 0)
		return;
	n = (size_t)len < sizeof(buf) ? (size_t)len : sizeof(buf) - 1;
	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

/* @ns as milliseconds with three decimals, rounded, in integers (no
 * floating-point formatting, which may allocate for its digits). */
static void ms_str(char *buf, size_t len, unsigned long long ns)
{
	unsigned long long us = (ns + 500) / 1000;

	snprintf(buf, len, "%llu.%03llu", us / 1000, us % 1000);
}

static void print_dead(void)
{
	unsigned n = plk_dead_count();
	const void *lock;
	bool robust;
	pid_t tid;

	if (n)
		say(report_fd, "proxylock: %u waiters found their mutex held by an exited thread:\n", n);
	for (unsigned i = 0; plk_dead_log(i, &lock, &tid, &robust); i++)
		say(report_fd, "proxylock:   mutex %p owner %d %s\n", lock, (int)tid,
		    robust ? "(robust, taken over)" : "(not robust: stuck)");
}

static int by_contention(const struct lockstat *x, const struct lockstat *y)
{
	unsigned long long xc = get(&x->contended), yc = get(&y->contended);
	unsigned long long xu = get(&x->uses), yu = get(&y->uses);

	if (xc != yc)
		return xc < yc ? 1 : -1;
	return xu < yu ? 1 : xu > yu ? -1 : 0;
}

static const char *const kind_names[] = { "uclamp", "affinity", "nice", "rt" };

static void kinds_name(unsigned kinds, char *buf, size_t len)
{
	buf[0] = 0;
	for (int k = 0; k < 4; k++)
		if (kinds & (1u << k))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
			         kind_names[k]);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static void print_rows(struct lockstat *const *rows, size_t n)
{
	say(report_fd, "proxylock: %-6s %-18s %12s %12s %12s %12s %10s %7s %8s %6s %4s\n",
	    "type", "lock", "locked", "contended", "wait-ms", "max-wait-ms", "donations",
	    "uclamp", "affinity", "nice", "rt");
	for (size_t i = 0; i < n && get(&rows[i]->contended) + get(&rows[i]->donations); i++) {
		const struct lockstat *e = rows[i];
		char wait[32], wait_max[32];

		ms_str(wait, sizeof(wait), get(&e->wait_ns));
		ms_str(wait_max, sizeof(wait_max), get(&e->wait_max_ns));
		say(report_fd, "proxylock: %-6s %-18p %12llu %12llu %12s %12s %10llu %7llu %8llu %6llu %4llu\n",
		    e->kind == ROW_RWLOCK ? "rwlock" : "mutex", e->addr,
		    get(&e->uses) + get(&e->wr_uses), get(&e->contended), wait, wait_max, get(&e->donations),
		    get(&e->lent[0]), get(&e->lent[1]), get(&e->lent[2]), get(&e->lent[3]));
	}
}

/* What the report's header counts: rows by kind, contended ones. */
struct seen {
	size_t mutex, cond, rwlock, mutex_contended, rwlock_contended;
};

/*
 * The REPORT_ROWS most contended mutexes and rwlocks into @top, best
 * first (a plain insertion into a fixed array); the counts in *@n.  A
 * walk of the slabs: no RCU, no allocation.
 */
static size_t collect(struct lockstat **top, struct seen *n)
{
	struct lockstat *e;
	unsigned long r = 0;
	size_t ntop = 0;

	*n = (struct seen){ 0 };
	while ((e = row_next(&r))) {
		size_t i;

		if (e->kind == ROW_COND) {
			n->cond++;
			continue;
		}
		if (e->kind == ROW_RWLOCK) {
			n->rwlock++;
			n->rwlock_contended += get(&e->contended) > 0;
		} else {
			n->mutex++;
			n->mutex_contended += get(&e->contended) > 0;
		}
		if (ntop == REPORT_ROWS && by_contention(e, top[ntop - 1]) >= 0)
			continue;
		i = ntop < REPORT_ROWS ? ntop++ : ntop - 1;
		for (; i > 0 && by_contention(e, top[i - 1]) < 0; i--)
			top[i] = top[i - 1];
		top[i] = e;
	}
	return ntop;
}

/* Parts of lends the kernel refused with EPERM (stats.eperm_skipped). */
static unsigned long long stats_eperm_skipped(void)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return st.eperm_skipped;
}

static void report_table(void)
{
	struct proxylock_stats st;
	unsigned long long eperm;
	struct lockstat *top[REPORT_ROWS];
	unsigned long lost = __atomic_load_n(&rows_lost, __ATOMIC_RELAXED);
	struct seen n;
	size_t ntop;
	char kinds[64];

	ntop = collect(top, &n);
	kinds_name(proxylock_donate_kinds(), kinds, sizeof(kinds));
	say(report_fd, "proxylock: interposer active: %zu mutexes, %zu rwlocks and %zu condvars "
	    "seen, %zu mutexes and %zu rwlocks contended; lending %s\n", n.mutex, n.rwlock, n.cond,
	    n.mutex_contended, n.rwlock_contended, kinds);
	if (lost)
		say(report_fd, "proxylock: %lu lock operations not counted: no memory for their locks' rows\n",
		    lost);
	proxylock_stats_get(&st);
	if (st.lent_cond + st.lent_sem)
		say(report_fd, "proxylock: waits for work lent to their wakers: %llu times through "
		    "condvars, %llu through semaphores\n", (unsigned long long)st.lent_cond,
		    (unsigned long long)st.lent_sem);
	if ((eperm = stats_eperm_skipped()) != 0)
		say(report_fd, "proxylock: %llu lends refused by the kernel (EPERM): privileges or "
		    "limits lowered after the probe, or a lend past RLIMIT_NICE or RLIMIT_RTPRIO\n",
		    eperm);
	print_rows(top, ntop);
	print_dead();
}

/* --- the JSON report (PROXYLOCK_STATS_FILE) -------------------------- */

/* @s as a JSON string, quotes included, escaped per RFC 8259. */
static void json_string(int fd, const char *s)
{
	char buf[256];
	size_t n = 0;

	buf[n++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (n > sizeof(buf) - 8) {
			(void)!write(fd, buf, n);
			n = 0;
		}
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			n += (size_t)snprintf(buf + n, 8, "\\u%04x", c);
		} else {
			buf[n++] = (char)c;  /* UTF-8 passes as it is */
		}
	}
	buf[n++] = '"';
	(void)!write(fd, buf, n);
}

static void json_kinds(int fd, unsigned kinds)
{
	const char *sep = "";

	say(fd, "[");
	for (int k = 0; k < 4; k++)
		if (kinds & (1u << k)) {
			say(fd, "%s\"%s\"", sep, kind_names[k]);
			sep = ", ";
		}
	say(fd, "]");
}

static unsigned dead_count(const void *lock)
{
	const void *l;
	bool robust;
	pid_t tid;
	unsigned found = 0;

	for (unsigned i = 0; plk_dead_log(i, &l, &tid, &robust); i++)
		found += l == lock;
	return found;
}

static void json_lock(int fd, const struct lockstat *e, const char *sep)
{
	static const char *const type[] = { "mutex", "condvar", "rwlock" };

	say(fd, "%s\n    {\"address\": \"%p\", \"type\": \"%s\", \"call_sites\": [], ",
	    sep, e->addr, type[e->kind]);
	if (e->kind == ROW_COND) {
		say(fd, "\"waits\": %llu}", get(&e->uses));
		return;
	}
	if (e->kind == ROW_RWLOCK)
		say(fd, "\"rdlock_acquisitions\": %llu, \"wrlock_acquisitions\": %llu, ",
		    get(&e->uses), get(&e->wr_uses));
	say(fd, "\"acquisitions\": %llu, \"contended\": %llu, \"wait_ns\": %llu, "
	    "\"max_wait_ns\": %llu, \"donations\": %llu, \"lent\": {",
	    get(&e->uses) + get(&e->wr_uses), get(&e->contended), get(&e->wait_ns),
	    get(&e->wait_max_ns), get(&e->donations));
	for (int k = 0; k < 4; k++)
		say(fd, "%s\"%s\": %llu", k ? ", " : "", kind_names[k], get(&e->lent[k]));
	say(fd, "}, \"dead_owners\": %u}", dead_count(e->addr));
}

/* Mutexes and rwlocks before condvars, each by contention: a shell
 * sort, in place (qsort may call malloc). */
static int json_order(const struct lockstat *x, const struct lockstat *y)
{
	if ((x->kind == ROW_COND) != (y->kind == ROW_COND))
		return x->kind == ROW_COND ? 1 : -1;
	return by_contention(x, y);
}

static void sort_rows(struct lockstat **rows, size_t n)
{
	for (size_t gap = n / 2; gap > 0; gap = gap == 2 ? 1 : gap * 5 / 11)
		for (size_t i = gap; i < n; i++) {
			struct lockstat *e = rows[i];
			size_t j = i;

			for (; j >= gap && json_order(e, rows[j - gap]) < 0; j -= gap)
				rows[j] = rows[j - gap];
			rows[j] = e;
		}
}

/*
 * Every published row into an array mapped for the purpose (not malloc:
 * see the top), sorted; NULL if the mapping fails.
 */
static struct lockstat **snapshot(size_t *n, size_t *bytes)
{
	unsigned long cap = __atomic_load_n(&rows_claimed, __ATOMIC_RELAXED), r = 0;
	struct lockstat **rows, *e;

	if (cap > (unsigned long)SLABS * SLAB_ROWS)
		cap = (unsigned long)SLABS * SLAB_ROWS;
	*bytes = (cap + 1) * sizeof(*rows);
	rows = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rows == MAP_FAILED)
		return NULL;
	*n = 0;
	while (*n < cap && (e = row_next(&r)))  /* rows claimed meanwhile are left out */
		rows[(*n)++] = e;
	sort_rows(rows, *n);
	return rows;
}

/*
 * One JSON object, documented in proxylock(1): the process, the totals
 * of proxylock_stats_get(), every mutex (most contended first) and
 * condvar the interposer saw, and the dead owners found.  Should the
 * mapping fail, only the REPORT_ROWS most contended mutexes, and
 * "truncated": true (as when some locks had no row).
 */
static void report_json(int fd)
{
	struct lockstat *top[REPORT_ROWS], **rows;
	size_t ntop, nrows = 0, bytes = 0;
	struct seen n;
	unsigned long lost = __atomic_load_n(&rows_lost, __ATOMIC_RELAXED);
	struct proxylock_stats st;
	const void *dlock;
	bool drobust;
	pid_t dtid;
	unsigned nd;

	ntop = collect(top, &n);
	rows = snapshot(&nrows, &bytes);
	proxylock_stats_get(&st);
	say(fd, "{\n  \"version\": 1,\n  \"pid\": %d,\n  \"program\": ", (int)getpid());
	json_string(fd, program_invocation_name);
	say(fd, ",\n  \"lending\": ");
	json_kinds(fd, proxylock_donate_kinds());
	say(fd, ",\n  \"mutexes_seen\": %zu,\n  \"condvars_seen\": %zu,\n"
	    "  \"mutexes_contended\": %zu,\n  \"rwlocks_seen\": %zu,\n"
	    "  \"rwlocks_contended\": %zu,\n  \"truncated\": %s,\n", n.mutex, n.cond,
	    n.mutex_contended, n.rwlock, n.rwlock_contended,
	    rows && !lost ? "false" : "true");
	say(fd, "  \"totals\": {\"contended\": %llu, \"sleeps\": %llu, \"handoffs\": %llu, "
	    "\"donations\": %llu, \"restores\": %llu, \"lent\": {\"uclamp\": %llu, "
	    "\"affinity\": %llu, \"nice\": %llu, \"rt\": %llu}, \"eperm_skipped\": %llu, "
	    "\"dead_owners\": %llu, ",
	    (unsigned long long)st.contended, (unsigned long long)st.sleeps,
	    (unsigned long long)st.handoffs, (unsigned long long)st.donations,
	    (unsigned long long)st.restores, (unsigned long long)st.lent_uclamp,
	    (unsigned long long)st.lent_affinity, (unsigned long long)st.lent_nice,
	    (unsigned long long)st.lent_rt, (unsigned long long)st.eperm_skipped,
	    (unsigned long long)st.owner_dead);
	say(fd, "\"lent_to_wakers\": {\"condvar\": %llu, \"semaphore\": %llu}},\n  \"locks\": [",
	    (unsigned long long)st.lent_cond, (unsigned long long)st.lent_sem);
	if (!rows) {
		rows = top;
		nrows = ntop;
	}
	for (size_t i = 0; i < nrows; i++)
		json_lock(fd, rows[i], i ? "," : "");
	if (rows != top)
		munmap(rows, bytes);
	nd = plk_dead_count();
	say(fd, "%s],\n  \"dead_owners\": [", nrows ? "\n  " : "");
	for (unsigned i = 0; plk_dead_log(i, &dlock, &dtid, &drobust); i++)
		say(fd, "%s\n    {\"address\": \"%p\", \"owner_tid\": %d, \"robust\": %s}",
		    i ? "," : "", dlock, (int)dtid, drobust ? "true" : "false");
	say(fd, "%s],\n  \"dead_owners_found\": %u\n}\n", nd ? "\n  " : "", nd);
}

/*
 * PROXYLOCK_STATS_FILE: the path, "%p" replaced by the process ID and
 * "%%" by "%", into @buf; false if it does not fit.  The pattern was
 * taken when counting started.
 */
static bool stats_path(char *buf, size_t len, const char *pattern)
{
	size_t n = 0;

	for (const char *p = pattern; *p; p++) {
		int w;

		if (p[0] == '%' && (p[1] == 'p' || p[1] == '%')) {
			w = p[1] == 'p' ? snprintf(buf + n, len - n, "%d", (int)getpid())
			                : snprintf(buf + n, len - n, "%%");
			p++;
		} else {
			w = snprintf(buf + n, len - n, "%c", *p);
		}
		if (w < 0 || (size_t)w >= len - n)
			return false;
		n += (size_t)w;
	}
	return n > 0;
}

/* The report's file name: static, not on the stack, because exit() may
 * be called from a thread with PTHREAD_STACK_MIN of stack (the stack
 * budget, docs/design.md); report runs once, from atexit.  See the top
 * for what else it may not do. */
static char report_path[4096];

static void report(void)
{
	const char *pattern = json_file;
	char *path = report_path;
	int fd;

	if (!pattern) {
		report_table();
		return;
	}
	if (!stats_path(path, sizeof(report_path), pattern)) {
		say(report_fd, "proxylock: PROXYLOCK_STATS_FILE is too long; the report follows here\n");
		report_table();
		return;
	}
	/* O_EXCL: a file that exists, whoever made it, is left as it is
	 * (a name, or a %p that a recycled process ID makes again). */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0 && errno == EEXIST) {
		say(report_fd, "proxylock: %.300s exists: not overwritten, no report written\n", path);
		return;
	}
	if (fd < 0) {
		/* errno's number: strerror's text may be translated, which allocates */
		say(report_fd, "proxylock: cannot write %.300s (errno %d); the report follows here\n",
		    path, errno);
		report_table();
		return;
	}
	report_json(fd);
	close(fd);
}

/* Fork child (see the top): the kernel zeroed the rows and the index, or
 * this does.  Stores only where a word is not 0 already: a store to a
 * page shared with the parent copies it. */
static void lockstat_fork_child(void)
{
	if (rows_kept_on_fork) {
		unsigned long end = rows_claimed;

		if (end > (unsigned long)SLABS * SLAB_ROWS)
			end = (unsigned long)SLABS * SLAB_ROWS;
		for (int k = 0; k < LEVELS; k++)
			if (levels[k])
				memset(levels[k], 0, ((size_t)LEVEL0_SLOTS << k) * sizeof(*levels[k]));
		for (unsigned long i = 0; i < end; i += SLAB_ROWS)
			if (slabs[i / SLAB_ROWS])
				memset(slabs[i / SLAB_ROWS], 0, SLAB_ROWS * sizeof(struct lockstat));
	}
	if (rows_lost)
		rows_lost = 0;
}

static const struct plk_observer_ops lockstat_ops = {
	.lent = lockstat_lent,
	.fork_child = lockstat_fork_child,
};

void plk_lockstat_enable(void)
{
	if ((json_file = plk_env("PROXYLOCK_STATS_FILE")) != NULL) {
		size_t len = strlen(json_file);

		if (len > 0 && len < sizeof(json_file_buf))
			json_file = memcpy(json_file_buf, json_file, len + 1);
		else
			json_file = NULL;  /* empty; too long: the table, as without */
	}
	/* The first level and slab now, while memory is there: a program
	 * that caps its address space later still has its first locks
	 * counted. */
	/* Does the kernel do MADV_WIPEONFORK?  A zero-length request
	 * says so (EINVAL, ENOSYS or EPERM if not) and changes nothing. */
	rows_kept_on_fork = madvise(NULL, 0, MADV_WIPEONFORK) != 0;
	(void)level(0, true);
	slabs[0] = stat_map(SLAB_ROWS * sizeof(struct lockstat));
	if (slabs[0] == MAP_FAILED)
		slabs[0] = NULL;
	/* fd 2 as it is at load (the interposer's constructor), verified
	 * open: F_GETFD first, so the rule reads here (a dup of a closed fd
	 * fails too); a failed dup (EMFILE) leaves -1, no text rather than
	 * text in the wrong file.  The dead-owner lines go there too. */
	if (fcntl(2, F_GETFD) >= 0)
		report_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	plk_observe_say_to(report_fd);
	__atomic_store_n(&plk_lockstat_on, true, __ATOMIC_RELEASE);
	plk_observers_install(&lockstat_ops);
	atexit(report);
}

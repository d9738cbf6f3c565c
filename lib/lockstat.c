/* SPDX-License-Identifier: MIT */
/*
 * lockstat.c - per-lock statistics and the PROXYLOCK_STATS=1 report.
 *
 * Off unless enabled (the interposer does so when PROXYLOCK_STATS=1):
 * then every mutex and condvar the interposer sees gets an entry in a
 * cds_lfht keyed by address, found lock-free under urcu-bp and never
 * freed (a destroyed lock's address may come back as another lock; its
 * counts simply go on, as in mutrace).  No read-side section here waits
 * for anything (liburcu's rule: fork's prepare handler holds every
 * bucket lock while it waits for a grace period): entries are allocated
 * outside it, and the donation engine's report only looks entries up.
 * Counters are relaxed atomics.  The core does not import this file: it
 * belongs to the interposer, and is the core's observer (observe.h),
 * told, with no internal lock held, which kinds a donation through a
 * lock changed in the kernel and when the process forks.  At exit the most
 * contended mutexes are printed to stderr, below a header line that
 * says the interposer was active and how many objects it saw.  They go to
 * a copy of file descriptor 2 taken when counting starts: programs such as
 * xz and GNU sort close stderr in their own exit handlers, which run
 * before ours.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include "config.h"
#include "lockstat.h"
#include "observe.h"
#include "proxylock.h"

#define REPORT_ROWS 10

struct lockstat {
	const void *addr;
	int is_cond;
	uint64_t uses;          /* acquisitions (mutex) or waits (condvar) */
	uint64_t contended;
	uint64_t wait_ns, wait_max_ns;
	uint64_t donations;
	uint64_t lent[4];       /* by kind: uclamp, affinity, nice, rt */
	struct cds_lfht_node node;
};

bool plk_lockstat_on;

static struct cds_lfht *table;
static int report_fd = 2;  /* a copy of stderr, see the top */

static int addr_match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct lockstat, node)->addr == key;
}

static unsigned long addr_hash(const void *addr)
{
	return (unsigned long)((uintptr_t)addr >> 3) * 0x9E3779B97F4A7C15ull;
}

/* @addr's entry, or NULL.  Under rcu_read_lock(); entries are never freed. */
static struct lockstat *entry_find(const void *addr)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	cds_lfht_lookup(table, addr_hash(addr), addr_match, addr, &it);
	n = cds_lfht_iter_get_node(&it);
	return n ? caa_container_of(n, struct lockstat, node) : NULL;
}

/*
 * Find or create @addr's entry; NULL if out of memory.  Not under
 * rcu_read_lock(): the allocator may take locks (and with the interposer,
 * proxylocks), which no read-side section may wait for.
 */
static struct lockstat *entry_of(const void *addr, int is_cond)
{
	struct cds_lfht_node *n;
	struct lockstat *e;

	rcu_read_lock();
	e = entry_find(addr);
	rcu_read_unlock();
	if (e)
		return e;
	if (!(e = calloc(1, sizeof(*e))))
		return NULL;
	e->addr = addr;
	e->is_cond = is_cond;
	rcu_read_lock();
	n = cds_lfht_add_unique(table, addr_hash(addr), addr_match, addr, &e->node);
	rcu_read_unlock();
	if (n != &e->node)
		free(e);  /* someone else added it first; never published */
	return caa_container_of(n, struct lockstat, node);
}

static void add(uint64_t *field, uint64_t v)
{
	__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

void plk_lockstat_mutex(const void *m, bool contended, uint64_t wait_ns)
{
	struct lockstat *e;

	if ((e = entry_of(m, 0))) {
		add(&e->uses, 1);
		if (contended) {
			uint64_t max = __atomic_load_n(&e->wait_max_ns, __ATOMIC_RELAXED);

			add(&e->contended, 1);
			add(&e->wait_ns, wait_ns);
			while (wait_ns > max &&
			       !__atomic_compare_exchange_n(&e->wait_max_ns, &max, wait_ns, 1,
			                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
		}
	}
}

void plk_lockstat_cond(const void *c)
{
	struct lockstat *e;

	if ((e = entry_of(c, 1)))
		add(&e->uses, 1);
}

static void lockstat_lent(const void *lock, unsigned kinds)
{
	struct lockstat *e;

	if (!plk_lockstat_on)
		return;
	rcu_read_lock();
	if ((e = entry_find(lock))) {  /* made when the lock was first taken */
		add(&e->donations, 1);
		for (int k = 0; k < 4; k++)
			if (kinds & (1u << k))
				add(&e->lent[k], 1);
	}
	rcu_read_unlock();
}

/* --- the report ------------------------------------------------------ */

static void print_dead(void)
{
	unsigned n = plk_dead_count();
	const void *lock;
	bool robust;
	pid_t tid;

	if (n)
		dprintf(report_fd, "proxylock: %u waiters found their mutex held by an exited thread:\n", n);
	for (unsigned i = 0; plk_dead_log(i, &lock, &tid, &robust); i++)
		dprintf(report_fd, "proxylock:   mutex %p owner %d %s\n", lock, (int)tid,
		        robust ? "(robust, taken over)" : "(not robust: stuck)");
}

static int by_contention(const void *a, const void *b)
{
	const struct lockstat *x = *(struct lockstat *const *)a, *y = *(struct lockstat *const *)b;

	if (x->contended != y->contended)
		return x->contended < y->contended ? 1 : -1;
	return x->uses < y->uses ? 1 : x->uses > y->uses ? -1 : 0;
}

static void kinds_name(unsigned kinds, char *buf, size_t len)
{
	static const char *names[] = { "uclamp", "affinity", "nice", "rt" };

	buf[0] = 0;
	for (int k = 0; k < 4; k++)
		if (kinds & (1u << k))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "", names[k]);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static void print_rows(struct lockstat **rows, size_t n)
{
	dprintf(report_fd, "proxylock: %-18s %12s %12s %12s %12s %10s %7s %8s %6s %4s\n",
	        "mutex", "locked", "contended", "wait-ms", "max-wait-ms", "donations",
	        "uclamp", "affinity", "nice", "rt");
	for (size_t i = 0; i < n && i < REPORT_ROWS && rows[i]->contended + rows[i]->donations; i++) {
		struct lockstat *e = rows[i];

		dprintf(report_fd, "proxylock: %-18p %12llu %12llu %12.3f %12.3f %10llu %7llu %8llu %6llu %4llu\n",
		        e->addr, (unsigned long long)e->uses, (unsigned long long)e->contended,
		        e->wait_ns / 1e6, e->wait_max_ns / 1e6, (unsigned long long)e->donations,
		        (unsigned long long)e->lent[0], (unsigned long long)e->lent[1],
		        (unsigned long long)e->lent[2], (unsigned long long)e->lent[3]);
	}
}

/* Up to @cap mutex entries into @rows (NULL: none); counts in *@nrows,
 * *@ncond, *@ncontended.  The read-side section holds no wait. */
static void collect(struct lockstat **rows, size_t cap, size_t *nrows, size_t *ncond,
                    size_t *ncontended)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	*nrows = *ncond = *ncontended = 0;
	rcu_read_lock();
	for (cds_lfht_first(table, &it); (n = cds_lfht_iter_get_node(&it)); cds_lfht_next(table, &it)) {
		struct lockstat *e = caa_container_of(n, struct lockstat, node);

		if (e->is_cond) {
			++*ncond;
			continue;
		}
		*ncontended += e->contended > 0;
		if (rows && *nrows < cap)
			rows[*nrows] = e;
		++*nrows;
	}
	rcu_read_unlock();
}

static void report(void)
{
	struct lockstat **rows;
	size_t cap, nrows, ncond, ncontended;
	char kinds[64];

	collect(NULL, 0, &cap, &ncond, &ncontended);
	cap += 64;  /* entries added meanwhile are left out */
	rows = calloc(cap, sizeof(*rows));
	collect(rows, cap, &nrows, &ncond, &ncontended);
	kinds_name(proxylock_donate_kinds(), kinds, sizeof(kinds));
	dprintf(report_fd, "proxylock: interposer active: %zu mutexes and %zu condvars seen, "
	        "%zu mutexes contended; lending %s\n", nrows, ncond, ncontended, kinds);
	if (rows) {
		nrows = nrows < cap ? nrows : cap;
		qsort(rows, nrows, sizeof(*rows), by_contention);
		print_rows(rows, nrows);
	}
	print_dead();
	free(rows);
}

/* Fork: urcu-bp and call_rcu need telling, but only once the table (the
 * one user of liburcu) exists; plk_lockstat_on never goes back to false. */
static void lockstat_fork_prepare(void)
{
	if (__atomic_load_n(&plk_lockstat_on, __ATOMIC_ACQUIRE)) {
		call_rcu_before_fork();
		urcu_bp_before_fork();
	}
}

static void lockstat_fork_parent(void)
{
	if (plk_lockstat_on) {
		urcu_bp_after_fork_parent();
		call_rcu_after_fork_parent();
	}
}

static void lockstat_fork_child(void)
{
	if (plk_lockstat_on) {
		urcu_bp_after_fork_child();
		call_rcu_after_fork_child();
	}
}

static const struct plk_observer_ops lockstat_ops = {
	.lent = lockstat_lent,
	.fork_prepare = lockstat_fork_prepare,
	.fork_parent = lockstat_fork_parent,
	.fork_child = lockstat_fork_child,
};

void plk_lockstat_enable(void)
{
	/* A fixed size: liburcu resizes through call_rcu and malloc from
	 * inside a read-side section, and an allocator whose locks are
	 * pthread mutexes would then wait there, on a lock whose unlock may
	 * need a bucket fork's prepare holds.  Chains grow past 4096 locks;
	 * only stats pay for that. */
	table = cds_lfht_new(4096, 4096, 4096, 0, NULL);
	if (!table)
		return;
	report_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	if (report_fd < 0)
		report_fd = 2;
	__atomic_store_n(&plk_lockstat_on, true, __ATOMIC_RELEASE);
	plk_observers_install(&lockstat_ops);
	atexit(report);
}

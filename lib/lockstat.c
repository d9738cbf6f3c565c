/* SPDX-License-Identifier: MIT */
/*
 * lockstat.c - per-lock statistics and the PROXYLOCK_STATS=1 report.
 *
 * Off unless enabled (the interposer does so when PROXYLOCK_STATS=1):
 * then every mutex and condvar the interposer sees gets an entry in a
 * cds_lfht keyed by address, found lock-free under urcu-bp and never
 * freed (a destroyed lock's address may come back as another lock; its
 * counts simply go on, as in mutrace).  Counters are relaxed atomics.
 * The donation engine reports, per lock, which kinds a donation through
 * it changed in the kernel (plk_lockstat_lent).  At exit the most
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
#include "proxylock.h"
#include "registry.h"

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

/* Locks found held by exited owners: rare, so kept whether or not
 * counting is on; the report lists the first DEAD_ROWS. */
#define DEAD_ROWS 16
static struct { const void *lock; pid_t tid; bool robust; } dead[DEAD_ROWS];
static unsigned ndead;
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

/* Find or create @addr's entry.  Under rcu_read_lock().  NULL if out of memory. */
static struct lockstat *entry_of(const void *addr, int is_cond)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	struct lockstat *e;

	cds_lfht_lookup(table, addr_hash(addr), addr_match, addr, &it);
	if ((n = cds_lfht_iter_get_node(&it)))
		return caa_container_of(n, struct lockstat, node);
	if (!(e = calloc(1, sizeof(*e))))
		return NULL;
	e->addr = addr;
	e->is_cond = is_cond;
	n = cds_lfht_add_unique(table, addr_hash(addr), addr_match, addr, &e->node);
	if (n != &e->node)
		free(e);  /* someone else added it first */
	return caa_container_of(n, struct lockstat, node);
}

static void add(uint64_t *field, uint64_t v)
{
	__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

void plk_lockstat_mutex(const void *m, bool contended, uint64_t wait_ns)
{
	struct lockstat *e;

	rcu_read_lock();
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
	plk_rcu_unlock();
}

void plk_lockstat_cond(const void *c)
{
	struct lockstat *e;

	rcu_read_lock();
	if ((e = entry_of(c, 1)))
		add(&e->uses, 1);
	plk_rcu_unlock();
}

void plk_lockstat_lent(const void *lock, unsigned kinds)
{
	struct lockstat *e;

	if (!plk_lockstat_on)
		return;
	rcu_read_lock();  /* nests: the engine's callers hold it already */
	if ((e = entry_of(lock, 0))) {
		add(&e->donations, 1);
		for (int k = 0; k < 4; k++)
			if (kinds & (1u << k))
				add(&e->lent[k], 1);
	}
	plk_rcu_unlock();
}

void plk_lockstat_dead(const void *lock, pid_t tid, bool robust)
{
	unsigned i = __atomic_fetch_add(&ndead, 1, __ATOMIC_RELAXED);

	if (i < DEAD_ROWS) {
		__atomic_store_n(&dead[i].lock, lock, __ATOMIC_RELAXED);
		__atomic_store_n(&dead[i].tid, tid, __ATOMIC_RELAXED);
		__atomic_store_n(&dead[i].robust, robust, __ATOMIC_RELAXED);
	}
	if (plk_config()->stats) {
		int cancel;

		/* Said from inside a lock call, which is no cancellation point. */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
		dprintf(report_fd, "proxylock: mutex %p is held by thread %d, which exited; %s\n",
		        lock, (int)tid, robust ? "robust: its next owner got EOWNERDEAD"
		                           : "not robust: its waiters wait forever");
		pthread_setcancelstate(cancel, NULL);
	}
}

/* --- the report ------------------------------------------------------ */

static void print_dead(void)
{
	unsigned n = __atomic_load_n(&ndead, __ATOMIC_RELAXED);

	if (n)
		dprintf(report_fd, "proxylock: %u waiters found their mutex held by an exited thread:\n", n);
	for (unsigned i = 0; i < n && i < DEAD_ROWS; i++)
		dprintf(report_fd, "proxylock:   mutex %p owner %d %s\n",
		        __atomic_load_n(&dead[i].lock, __ATOMIC_RELAXED),
		        (int)__atomic_load_n(&dead[i].tid, __ATOMIC_RELAXED),
		        __atomic_load_n(&dead[i].robust, __ATOMIC_RELAXED) ? "(robust, taken over)"
		                                                           : "(not robust: stuck)");
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

static void report(void)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	struct lockstat **rows = NULL;
	size_t nrows = 0, cap = 0, ncond = 0, ncontended = 0;
	char kinds[64];

	rcu_read_lock();
	for (cds_lfht_first(table, &it); (n = cds_lfht_iter_get_node(&it)); cds_lfht_next(table, &it)) {
		struct lockstat *e = caa_container_of(n, struct lockstat, node);

		if (e->is_cond) {
			ncond++;
			continue;
		}
		ncontended += e->contended > 0;
		if (nrows == cap) {
			struct lockstat **r = realloc(rows, (cap = cap ? 2 * cap : 64) * sizeof(*rows));

			if (!r)
				break;
			rows = r;
		}
		rows[nrows++] = e;
	}
	kinds_name(proxylock_donate_kinds(), kinds, sizeof(kinds));
	dprintf(report_fd, "proxylock: interposer active: %zu mutexes and %zu condvars seen, "
	        "%zu mutexes contended; lending %s\n", nrows, ncond, ncontended, kinds);
	if (rows) {
		qsort(rows, nrows, sizeof(*rows), by_contention);
		print_rows(rows, nrows);
	}
	print_dead();
	plk_rcu_unlock();
	free(rows);
}

void plk_lockstat_enable(void)
{
	table = cds_lfht_new(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!table)
		return;
	report_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	if (report_fd < 0)
		report_fd = 2;
	__atomic_store_n(&plk_lockstat_on, true, __ATOMIC_RELEASE);
	atexit(report);
}

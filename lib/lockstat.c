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
 * before ours.  With PROXYLOCK_STATS_FILE=path ("%p": the process ID) the
 * report is one JSON object written to that file instead (its fields are
 * documented in proxylock(1)).  At exit nothing is taken from malloc: the
 * table's rows sit in a fixed array, the JSON report's in an anonymous
 * mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
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
/* PROXYLOCK_STATS_FILE, taken when counting starts (the program may
 * change its environment before it exits); NULL: the table on stderr. */
static char json_file_buf[4096];
static const char *json_file;

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

static int by_contention(const struct lockstat *x, const struct lockstat *y)
{
	if (x->contended != y->contended)
		return x->contended < y->contended ? 1 : -1;
	return x->uses < y->uses ? 1 : x->uses > y->uses ? -1 : 0;
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
	dprintf(report_fd, "proxylock: %-18s %12s %12s %12s %12s %10s %7s %8s %6s %4s\n",
	        "mutex", "locked", "contended", "wait-ms", "max-wait-ms", "donations",
	        "uclamp", "affinity", "nice", "rt");
	for (size_t i = 0; i < n && rows[i]->contended + rows[i]->donations; i++) {
		const struct lockstat *e = rows[i];

		dprintf(report_fd, "proxylock: %-18p %12llu %12llu %12.3f %12.3f %10llu %7llu %8llu %6llu %4llu\n",
		        e->addr, (unsigned long long)e->uses, (unsigned long long)e->contended,
		        e->wait_ns / 1e6, e->wait_max_ns / 1e6, (unsigned long long)e->donations,
		        (unsigned long long)e->lent[0], (unsigned long long)e->lent[1],
		        (unsigned long long)e->lent[2], (unsigned long long)e->lent[3]);
	}
}

/*
 * The REPORT_ROWS most contended mutexes into @top, best first (no
 * allocation at exit: a plain insertion into a fixed array); counts in
 * *@nmutex, *@ncond, *@ncontended.  The read-side section holds no wait.
 */
static size_t collect(struct lockstat **top, size_t *nmutex, size_t *ncond, size_t *ncontended)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	size_t ntop = 0;

	*nmutex = *ncond = *ncontended = 0;
	rcu_read_lock();
	for (cds_lfht_first(table, &it); (n = cds_lfht_iter_get_node(&it)); cds_lfht_next(table, &it)) {
		struct lockstat *e = caa_container_of(n, struct lockstat, node);
		size_t i;

		if (e->is_cond) {
			++*ncond;
			continue;
		}
		++*nmutex;
		*ncontended += e->contended > 0;
		if (ntop == REPORT_ROWS && by_contention(e, top[ntop - 1]) >= 0)
			continue;
		i = ntop < REPORT_ROWS ? ntop++ : ntop - 1;
		for (; i > 0 && by_contention(e, top[i - 1]) < 0; i--)
			top[i] = top[i - 1];
		top[i] = e;
	}
	rcu_read_unlock();
	return ntop;
}

static void report_table(void)
{
	struct lockstat *top[REPORT_ROWS];
	size_t ntop, nmutex, ncond, ncontended;
	char kinds[64];

	ntop = collect(top, &nmutex, &ncond, &ncontended);
	kinds_name(proxylock_donate_kinds(), kinds, sizeof(kinds));
	dprintf(report_fd, "proxylock: interposer active: %zu mutexes and %zu condvars seen, "
	        "%zu mutexes contended; lending %s\n", nmutex, ncond, ncontended, kinds);
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

	dprintf(fd, "[");
	for (int k = 0; k < 4; k++)
		if (kinds & (1u << k)) {
			dprintf(fd, "%s\"%s\"", sep, kind_names[k]);
			sep = ", ";
		}
	dprintf(fd, "]");
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
	unsigned long long u = e->uses, c = e->contended, w = e->wait_ns, wm = e->wait_max_ns,
	                   d = e->donations;

	dprintf(fd, "%s\n    {\"address\": \"%p\", \"type\": \"%s\", \"call_sites\": [], ",
	        sep, e->addr, e->is_cond ? "condvar" : "mutex");
	if (e->is_cond) {
		dprintf(fd, "\"waits\": %llu}", u);
		return;
	}
	dprintf(fd, "\"acquisitions\": %llu, \"contended\": %llu, \"wait_ns\": %llu, "
	        "\"max_wait_ns\": %llu, \"donations\": %llu, \"lent\": {", u, c, w, wm, d);
	for (int k = 0; k < 4; k++)
		dprintf(fd, "%s\"%s\": %llu", k ? ", " : "", kind_names[k],
		        (unsigned long long)e->lent[k]);
	dprintf(fd, "}, \"dead_owners\": %u}", dead_count(e->addr));
}

/* Mutexes before condvars, each by contention: a shell sort, in place
 * (qsort may call malloc). */
static int json_order(const struct lockstat *x, const struct lockstat *y)
{
	if (x->is_cond != y->is_cond)
		return x->is_cond ? 1 : -1;
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
 * Every entry into an array mapped for the purpose (not malloc: the
 * allocator may be the program's, and stopped or torn down at exit);
 * NULL if that fails.  The read-side sections only copy pointers: what
 * is written to the file (a FIFO may block) is written outside them.
 */
static struct lockstat **snapshot(size_t *n, size_t *bytes)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	struct lockstat **rows;
	size_t cap = 0;

	rcu_read_lock();
	for (cds_lfht_first(table, &it); cds_lfht_iter_get_node(&it); cds_lfht_next(table, &it))
		cap++;
	rcu_read_unlock();
	cap += 64;  /* entries added meanwhile are left out */
	*bytes = cap * sizeof(*rows);
	rows = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rows == MAP_FAILED)
		return NULL;
	*n = 0;
	rcu_read_lock();
	for (cds_lfht_first(table, &it); (node = cds_lfht_iter_get_node(&it)) && *n < cap;
	     cds_lfht_next(table, &it))
		rows[(*n)++] = caa_container_of(node, struct lockstat, node);
	rcu_read_unlock();
	sort_rows(rows, *n);
	return rows;
}

/*
 * One JSON object, documented in proxylock(1): the process, the totals
 * of proxylock_stats_get(), every mutex (most contended first) and
 * condvar the interposer saw, and the dead owners found.  Should the
 * mapping fail, only the REPORT_ROWS most contended mutexes, and
 * "truncated": true.
 */
static void report_json(int fd)
{
	struct lockstat *top[REPORT_ROWS], **rows;
	size_t ntop, nmutex, ncond, ncontended, nrows = 0, bytes = 0;
	struct proxylock_stats st;
	const void *dlock;
	bool drobust;
	pid_t dtid;
	unsigned nd;

	ntop = collect(top, &nmutex, &ncond, &ncontended);
	rows = snapshot(&nrows, &bytes);
	proxylock_stats_get(&st);
	dprintf(fd, "{\n  \"version\": 1,\n  \"pid\": %d,\n  \"program\": ", (int)getpid());
	json_string(fd, program_invocation_name);
	dprintf(fd, ",\n  \"lending\": ");
	json_kinds(fd, proxylock_donate_kinds());
	dprintf(fd, ",\n  \"mutexes_seen\": %zu,\n  \"condvars_seen\": %zu,\n"
	        "  \"mutexes_contended\": %zu,\n  \"truncated\": %s,\n", nmutex, ncond, ncontended,
	        rows ? "false" : "true");
	dprintf(fd, "  \"totals\": {\"contended\": %llu, \"sleeps\": %llu, \"handoffs\": %llu, "
	        "\"donations\": %llu, \"restores\": %llu, \"lent\": {\"uclamp\": %llu, "
	        "\"affinity\": %llu, \"nice\": %llu, \"rt\": %llu}, \"eperm_skipped\": %llu, "
	        "\"dead_owners\": %llu},\n  \"locks\": [",
	        (unsigned long long)st.contended, (unsigned long long)st.sleeps,
	        (unsigned long long)st.handoffs, (unsigned long long)st.donations,
	        (unsigned long long)st.restores, (unsigned long long)st.lent_uclamp,
	        (unsigned long long)st.lent_affinity, (unsigned long long)st.lent_nice,
	        (unsigned long long)st.lent_rt, (unsigned long long)st.eperm_skipped,
	        (unsigned long long)st.owner_dead);
	if (!rows) {
		rows = top;
		nrows = ntop;
	}
	for (size_t i = 0; i < nrows; i++)
		json_lock(fd, rows[i], i ? "," : "");
	if (rows != top)
		munmap(rows, bytes);
	nd = plk_dead_count();
	dprintf(fd, "%s],\n  \"dead_owners\": [", nrows ? "\n  " : "");
	for (unsigned i = 0; plk_dead_log(i, &dlock, &dtid, &drobust); i++)
		dprintf(fd, "%s\n    {\"address\": \"%p\", \"owner_tid\": %d, \"robust\": %s}",
		        i ? "," : "", dlock, (int)dtid, drobust ? "true" : "false");
	dprintf(fd, "%s],\n  \"dead_owners_found\": %u\n}\n", nd ? "\n  " : "", nd);
}

/*
 * PROXYLOCK_STATS_FILE: the path, "%p" replaced by the process ID and
 * "%%" by "%", into @buf; false if it does not fit.  Read at exit, with
 * the environment as the program left it.
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
 * budget, docs/design.md); report runs once, from atexit. */
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
		dprintf(report_fd, "proxylock: PROXYLOCK_STATS_FILE is too long; the report follows here\n");
		report_table();
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) {
		dprintf(report_fd, "proxylock: cannot write %s: %s; the report follows here\n", path,
		        strerror(errno));
		report_table();
		return;
	}
	report_json(fd);
	close(fd);
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
	if ((json_file = getenv("PROXYLOCK_STATS_FILE")) != NULL) {
		size_t len = strlen(json_file);

		if (len > 0 && len < sizeof(json_file_buf))
			json_file = memcpy(json_file_buf, json_file, len + 1);
		else
			json_file = NULL;  /* empty; too long: the table, as without */
	}
	report_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	if (report_fd < 0)
		report_fd = 2;
	__atomic_store_n(&plk_lockstat_on, true, __ATOMIC_RELEASE);
	plk_observers_install(&lockstat_ops);
	atexit(report);
}

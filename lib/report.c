/* SPDX-License-Identifier: MIT */
/*
 * report.c - the PROXYLOCK_STATS report, from the rows of lockstat.c.
 *
 * When.  At exit (atexit); when the program is ended by SIGINT or
 * SIGTERM; and on request, at PROXYLOCK_STATS_SIGNAL (`proxylock report
 * PID` sends it).  A report at exit or ending says nothing for a process
 * that has nothing to say: no lock contended, timed out or lent through,
 * no wait for work lent to its waker, no dead owner, nothing refused or
 * lost (a shell, a version manager's shim); PROXYLOCK_STATS=all reports
 * every process.  A report on request always says all.  Reports are
 * written one at a time (reporting): exit waits, EXIT_WAIT_MS at most,
 * for one on request that another thread is writing, then writes its
 * own; a request during another report is dropped; a fork child starts
 * with none in progress.
 *
 * Ending signals without changing the program's handlers.  At load, for
 * SIGINT and SIGTERM left at SIG_DFL, and for the request signal if it is
 * at SIG_DFL, our handler goes in; the interposed sigaction() and
 * glibc's other routes to a handler (__sigaction, signal, bsd_signal,
 * ssignal, __sysv_signal, which is signal() under -std=c11, sysv_signal,
 * sigset, sigignore; siginterrupt leaves ours as it is) keep it out of
 * the program's sight: asked, they answer SIG_DFL; told SIG_DFL, they
 * keep ours; told anything else, they put the program's in, and ours is
 * gone for good.  So a program that
 * installs handlers only over SIG_DFL (CPython's KeyboardInterrupt does)
 * still does.  Our ending handler writes the report, puts SIG_DFL back
 * and raises the signal again, which stays pending until the handler
 * returns and then ends the process as it would have: the same status,
 * the same core dump or none.  A signal that interrupts a report already
 * being written ends the process at once.  A system call that bypasses
 * libc (a raw rt_sigaction) sees our handler as the old one, and one that
 * sets a handler ends ours: each route above asks the kernel whether ours
 * is still in before it answers for it.  A one-shot handler (System V's)
 * leaves the kernel's SIG_DFL, not ours, once run.
 *
 * Async-signal safety.  A report may run in a handler, in any thread, at
 * any point of the program: it allocates nothing and takes no lock.  It
 * walks the rows (lockstat.c: published by flags, never freed), formats
 * on the stack with snprintf (integers and strings only: no floating
 * point, no positional arguments, nothing of glibc's that allocates),
 * write()s (poll()ing a requester's full pipe, a bounded time), maps its
 * scratch memory with mmap, and names addresses from /proc/self/maps and
 * the mapped files (callsite.c), not with dladdr, which takes the
 * loader's lock.  From a signal its work is bounded by the rows: it
 * searches symbol tables for SIGNAL_NAMES addresses at most, names the
 * rest by module and offset, and says how many.  Counters being added
 * to meanwhile are read as they are, relaxed: a report taken live is a
 * snapshot, not a total.
 *
 * Where.  The text report goes to a copy of file descriptor 2 taken at
 * load: programs such as xz and GNU sort close stderr in their own exit
 * handlers, which run before ours.  If fd 2 was closed then, nothing is
 * printed (nor the dead-owner lines, observe.h): never fd 2 itself, which
 * may by now be a file the program opened.  With PROXYLOCK_STATS_FILE
 * the report at exit or ending is one JSON object in that file instead
 * (its fields are documented in proxylock(1)); "%p" is the process ID,
 * "%%" a "%".  A regular file is only ever created (O_EXCL, O_NOFOLLOW,
 * mode 0600), never truncated.  A name without "%p" is the report of the
 * process PROXYLOCK_STATS_PID names (`proxylock run` names the program it
 * starts, so a helper that a shell or shim in front of it runs, and that
 * ends first, does not take the program's name); every other process's
 * report takes the name with its PID before the extension (r.json,
 * r.4242.json), and says so if it has anything to say (--stats=all's
 * empty reports of a shim's 40 helpers go quietly).  Without
 * PROXYLOCK_STATS_PID the first process to report takes the name, and a
 * later one the name with its PID, saying so.  If the name to take is
 * taken too, no report is written.
 * A name that is no regular file nor symlink (/dev/null, a FIFO) is
 * written to.
 * A report on request goes to the requester: `proxylock report` queues
 * the signal (sigqueue) with its PID and a pipe's descriptor number, and
 * the report opens /proc/PID/fd/N, which only the requester's user (or
 * root) may; a plain kill gets the text report on the copy of stderr.
 * In secure-execution mode no PROXYLOCK_* variable is read (config.h), so
 * there is no report.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>

#include "callsite.h"
#include "config.h"
#include "lockstat.h"
#include "observe.h"
#include "proxylock.h"
#include "report.h"
#include "schedctl.h"

#define PLK_EXPORT __attribute__((visibility("default")))
#define FALLBACK_ROWS 10   /* rows kept on the stack when no scratch can be mapped */
#define END_MARK "proxylock: -- end of report --\n"
/* Addresses a report from a signal names by symbol at most (callsite.h);
 * the rest by module and offset: bounded work in a handler. */
#define SIGNAL_NAMES 128

static int report_fd = -1;  /* a copy of stderr taken at load, or -1: see the top */
static int reporting;       /* a report is being written (exchange: one at a time) */

/* Why a report is written. */
enum why { AT_EXIT, AT_SIGNAL, ON_REQUEST };

/* --- output ----------------------------------------------------------- */

/* The requester's pipe found full for WRITE_WAIT_MS: the rest of this
 * report is not written there (reports are written one at a time; the
 * request handler clears it). */
#define WRITE_WAIT_MS 2000
static int stalled_fd = -1;

/* @n bytes of @buf to @fd; a failed write drops the rest.  A full
 * pipe (the requester's, non-blocking) is waited on while its reader
 * reads, up to WRITE_WAIT_MS at a time; past that it is stalled_fd. */
static void put(int fd, const char *buf, size_t n)
{
	size_t off = 0;

	if (fd < 0 || fd == stalled_fd)
		return;  /* no stderr verified at load, or a reader that stopped: say nothing */
	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, WRITE_WAIT_MS) == 1 && (p.revents & POLLOUT))
				continue;
			stalled_fd = fd;
			return;
		}
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

/* printf to @fd through a buffer on the stack and put(): dprintf's FILE
 * takes its buffer from malloc (glibc before 2.37).  A line longer than
 * the buffer is cut. */
static __attribute__((format(printf, 2, 3))) void say(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);  /* into @buf: no allocation */
	va_end(ap);
	if (len >= 0)
		put(fd, buf, (size_t)len < sizeof(buf) ? (size_t)len : sizeof(buf) - 1);
}

/* What is lent, as a report made @why may say it: -1 if the probe has
 * not run and the report comes from a signal handler, which never runs
 * it (the signal may have interrupted it on its own thread, whose
 * pthread_once would wait for itself); at exit it is run if need be. */
static long lent_kinds(enum why why)
{
	unsigned caps, want = plk_config()->donate;

	if (!want || why == AT_EXIT)
		return want ? (long)proxylock_donate_kinds() : 0;
	if (!plk_sched_caps_if_probed(&caps))
		return -1;
	return (long)(caps & want);
}

/* The symbol searches a report made @why may make (0: no bound): from a
 * signal handler, SIGNAL_NAMES. */
static unsigned names_bound(enum why why)
{
	return why == AT_EXIT ? 0 : SIGNAL_NAMES;
}

/* @ns as milliseconds with three decimals, rounded, in integers (no
 * floating-point formatting, which may allocate for its digits). */
static void ms_str(char *buf, size_t len, unsigned long long ns)
{
	unsigned long long us = (ns + 500) / 1000;

	snprintf(buf, len, "%llu.%03llu", us / 1000, us % 1000);
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

/* --- the rows, in order ----------------------------------------------- */

#define get plk_stat_get

static unsigned long long held_ns(const struct plk_lockrow *e)
{
	return get(&e->held.ns) + get(&e->rd_held.ns);
}

static unsigned long long sort_key(const struct plk_lockrow *e, int key)
{
	switch (key) {
	case PLK_SORT_WAIT:
		return get(&e->wait_ns);
	case PLK_SORT_HELD:
		return held_ns(e);
	case PLK_SORT_DONATIONS:
		return get(&e->donations);
	default:
		return get(&e->contended);
	}
}

/* Negative if @x goes first: mutexes and rwlocks before condvars, then
 * by the key, then by acquisitions. */
static int order(const struct plk_lockrow *x, const struct plk_lockrow *y, int key)
{
	unsigned long long xk = sort_key(x, key), yk = sort_key(y, key);
	unsigned long long xu = get(&x->uses) + get(&x->wr_uses), yu = get(&y->uses) + get(&y->wr_uses);

	if ((x->kind == PLK_ROW_COND) != (y->kind == PLK_ROW_COND))
		return x->kind == PLK_ROW_COND ? 1 : -1;
	if (xk != yk)
		return xk < yk ? 1 : -1;
	return xu < yu ? 1 : xu > yu ? -1 : 0;
}

/* A shell sort, in place (qsort may call malloc). */
static void sort_rows(struct plk_lockrow **rows, size_t n, int key)
{
	for (size_t gap = n / 2; gap > 0; gap = gap == 2 ? 1 : gap * 5 / 11)
		for (size_t i = gap; i < n; i++) {
			struct plk_lockrow *e = rows[i];
			size_t j = i;

			for (; j >= gap && order(e, rows[j - gap], key) < 0; j -= gap)
				rows[j] = rows[j - gap];
			rows[j] = e;
		}
}

/* What the report counts over all rows: the totals are these sums. */
struct totals {
	size_t mutex, cond, rwlock, mutex_contended, rwlock_contended;
	unsigned long long uses, contended, timeouts, wait_ns, held_ns, donations, lent[4];
};

static void total_add(struct totals *t, const struct plk_lockrow *e)
{
	if (e->kind == PLK_ROW_COND) {
		t->cond++;
		return;
	}
	if (e->kind == PLK_ROW_RWLOCK) {
		t->rwlock++;
		t->rwlock_contended += get(&e->contended) > 0;
	} else {
		t->mutex++;
		t->mutex_contended += get(&e->contended) > 0;
	}
	t->uses += get(&e->uses) + get(&e->wr_uses);
	t->contended += get(&e->contended);
	t->timeouts += get(&e->timeouts);
	t->wait_ns += get(&e->wait_ns);
	t->held_ns += held_ns(e);
	t->donations += get(&e->donations);
	for (int k = 0; k < 4; k++)
		t->lent[k] += get(&e->lent[k]);
}

/*
 * Every published row, sorted by @key, into an array mapped for the
 * purpose (not malloc: see the top), with the totals; if the mapping
 * fails, the FALLBACK_ROWS first into @fallback instead (*@bytes 0).
 */
static struct plk_lockrow **gather(struct plk_lockrow **fallback, size_t *n, size_t *bytes,
                                   struct totals *t, int key)
{
	unsigned long cap = plk_lockstat_claimed(), r = 0;
	struct plk_lockrow **rows, *e;

	memset(t, 0, sizeof(*t));
	*n = 0;
	*bytes = (cap + 1) * sizeof(*rows);
	rows = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rows == MAP_FAILED) {
		*bytes = 0;
		rows = fallback;
		cap = FALLBACK_ROWS;
	}
	while ((e = plk_lockstat_next(&r))) {
		total_add(t, e);
		if (*n < cap) {
			rows[(*n)++] = e;
		} else if (!*bytes && order(e, rows[cap - 1], key) < 0) {
			rows[cap - 1] = e;  /* the fallback keeps the best */
			sort_rows(rows, cap, key);
		}
	}
	sort_rows(rows, *n, key);
	return rows;
}

/* Whether a report at exit or ending has anything to say (see the top). */
static bool worth_saying(const struct totals *t)
{
	struct proxylock_stats st;

	proxylock_stats_get(&st);
	return t->contended || t->timeouts || t->donations || plk_dead_count() ||
	       plk_lockstat_lost() || st.eperm_skipped || st.lent_cond || st.lent_sem;
}

/* --- the text report -------------------------------------------------- */

static const char *const sort_names[] = { "contended", "wait", "held", "donations" };

/* @s's frames as "a < b < c", into @buf. */
static void stack_str(struct plk_symbols *sy, const struct plk_site *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE))
		return;
	for (int i = 0; i < PLK_SITE_FRAMES && s->pc[i] && n + 4 < len; i++) {
		char name[160];

		plk_symbol_name(sy, s->pc[i], name, sizeof(name));
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " < " : "", name);
	}
}

static void why_str(enum why why, int sig, char *buf, size_t len)
{
	char name[16];

	plk_signal_name(sig, name, sizeof(name));
	if (why == AT_EXIT)
		snprintf(buf, len, "at exit");
	else if (why == AT_SIGNAL)
		snprintf(buf, len, "ended by SIG%s", sig == SIGINT ? "INT" : "TERM");
	else
		snprintf(buf, len, "on request (SIG%s)", name);
}

/* Whether row @e is one the table shows, under sort @key. */
static bool shown(const struct plk_lockrow *e, int key)
{
	if (e->kind == PLK_ROW_COND)
		return false;
	if (key == PLK_SORT_CONTENDED)
		return get(&e->contended) + get(&e->donations) + get(&e->timeouts) > 0;
	return sort_key(e, key) > 0;
}

/* The text report's longest lines, not on the stack (the stack budget,
 * docs/design.md): reports are written one at a time (reporting). */
static char stack_buf[480], site_buf[200];

/* The report's opening lines: who, why, the interposer's totals. */
static void text_head(int fd, enum why why, int sig, const struct totals *t)
{
	unsigned long lost = plk_lockstat_lost();
	struct proxylock_stats st;
	char kinds[64], wait[32], when[48];

	proxylock_stats_get(&st);
	why_str(why, sig, when, sizeof(when));
	say(fd, "proxylock: report of %s (pid %d), %s\n", program_invocation_name, (int)getpid(),
	    when);
	if (lent_kinds(why) < 0)
		snprintf(kinds, sizeof(kinds), "(not probed yet)");
	else
		kinds_name((unsigned)lent_kinds(why), kinds, sizeof(kinds));
	say(fd, "proxylock: interposer active: %zu mutexes, %zu rwlocks and %zu condvars "
	    "seen, %zu mutexes and %zu rwlocks contended; lending %s\n", t->mutex, t->rwlock, t->cond,
	    t->mutex_contended, t->rwlock_contended, kinds);
	ms_str(wait, sizeof(wait), t->wait_ns);
	say(fd, "proxylock: totals: %llu acquisitions, %llu contended (%s ms waiting), %llu timed "
	    "out, %llu donations\n", t->uses, t->contended, wait, t->timeouts, t->donations);
	if (lost)
		say(fd, "proxylock: %lu lock operations not counted: no memory for their locks' rows\n",
		    lost);
	if (st.lent_cond + st.lent_sem)
		say(fd, "proxylock: waits for work lent to their wakers: %llu times through "
		    "condvars, %llu through semaphores\n", (unsigned long long)st.lent_cond,
		    (unsigned long long)st.lent_sem);
	if (st.eperm_skipped)
		say(fd, "proxylock: %llu lends refused by the kernel (EPERM): privileges or "
		    "limits lowered after the probe, or a lend past RLIMIT_NICE or RLIMIT_RTPRIO\n",
		    (unsigned long long)st.eperm_skipped);
}

/* The table: a header (even with no row, PROXYLOCK_STATS=all: the
 * columns say what a row would count), then a line per lock shown. */
static void text_table(int fd, struct plk_symbols *sy, struct plk_lockrow **rows, size_t n,
                       const struct plk_config *c)
{
	size_t nshown = 0;

	say(fd, "proxylock: %-6s %-14s %9s %9s %10s %11s %10s %11s %11s %9s %6s %8s %6s %4s  %s\n",
		    "type", "lock", "locked", "contended", "wait-ms", "max-wait-ms", "held-ms",
		    "avg-held-ms", "max-held-ms", "donations", "uclamp", "affinity", "nice", "rt",
		    "first contended at");
	for (size_t i = 0; i < n && nshown < c->stats_top; i++) {
		const struct plk_lockrow *e = rows[i];
		unsigned long long holds = get(&e->held.n) + get(&e->rd_held.n);
		unsigned long long hmax = get(&e->held.max_ns) > get(&e->rd_held.max_ns)
		                          ? get(&e->held.max_ns) : get(&e->rd_held.max_ns);
		char wait[32], wmax[32], held[32], havg[32], hm[32], *site = site_buf;

		if (!shown(e, c->stats_sort))
			continue;
		nshown++;
		ms_str(wait, sizeof(wait), get(&e->wait_ns));
		ms_str(wmax, sizeof(wmax), get(&e->wait_max_ns));
		ms_str(held, sizeof(held), held_ns(e));
		ms_str(havg, sizeof(havg), holds ? held_ns(e) / holds : 0);
		ms_str(hm, sizeof(hm), hmax);
		site[0] = 0;
		if (__atomic_load_n(&e->contended_at.ready, __ATOMIC_ACQUIRE))
			plk_symbol_name(sy, e->contended_at.pc[0], site, sizeof(site_buf));
		say(fd, "proxylock: %-6s #%-13zu %9llu %9llu %10s %11s %10s %11s %11s %9llu %6llu %8llu "
		    "%6llu %4llu  %s\n", e->kind == PLK_ROW_RWLOCK ? "rwlock" : "mutex", nshown,
		    get(&e->uses) + get(&e->wr_uses), get(&e->contended), wait, wmax, held, havg, hm,
		    get(&e->donations), get(&e->lent[0]), get(&e->lent[1]), get(&e->lent[2]),
		    get(&e->lent[3]), site[0] ? site : "-");
	}
}

/* Row @nth's lock @e: its address, stacks, and an rwlock's holds by kind. */
static void text_lock(int fd, struct plk_symbols *sy, const struct plk_lockrow *e, size_t nth)
{
	char *stack = stack_buf, held[32], hm[32];

	say(fd, "proxylock: #%zu %s %p\n", nth, e->kind == PLK_ROW_RWLOCK ? "rwlock" : "mutex",
	    e->addr);
	stack_str(sy, &e->contended_at, stack, sizeof(stack_buf));
	if (stack[0])
		say(fd, "proxylock:     first contended at %s\n", stack);
	stack_str(sy, &e->init_at, stack, sizeof(stack_buf));
	if (stack[0])
		say(fd, "proxylock:     initialised at %s\n", stack);
	if (get(&e->reacquired_contended))
		say(fd, "proxylock:     of its contended acquisitions, %llu were condvar "
		    "re-acquisitions (their wait is the condvar's)\n", get(&e->reacquired_contended));
	if (e->kind == PLK_ROW_RWLOCK) {
		ms_str(held, sizeof(held), get(&e->held.ns));
		ms_str(hm, sizeof(hm), get(&e->held.max_ns));
		say(fd, "proxylock:     held for writing %llu times, %s ms (max %s ms); ",
		    get(&e->held.n), held, hm);
		ms_str(held, sizeof(held), get(&e->rd_held.ns));
		ms_str(hm, sizeof(hm), get(&e->rd_held.max_ns));
		say(fd, "for reading %llu times, %s ms (max %s ms)\n", get(&e->rd_held.n), held, hm);
	}
}

/* The mutexes waiters found held by an exited thread. */
static void text_dead_owners(int fd)
{
	for (unsigned i = 0, nd = plk_dead_count(); i < nd; i++) {
		const void *lock;
		bool robust;
		pid_t tid;

		if (i == 0)
			say(fd, "proxylock: %u waiters found their mutex held by an exited thread:\n", nd);
		if (plk_dead_log(i, &lock, &tid, &robust))
			say(fd, "proxylock:   mutex %p owner %d %s\n", lock, (int)tid,
			    robust ? "(robust, taken over)" : "(not robust: stuck)");
	}
}

static void report_text(int fd, enum why why, int sig, bool all)
{
	const struct plk_config *c = plk_config();
	struct plk_lockrow *fallback[FALLBACK_ROWS], **rows;
	struct plk_symbols *sy;
	struct totals t;
	size_t n, bytes, nshown = 0, nworth = 0;

	rows = gather(fallback, &n, &bytes, &t, c->stats_sort);
	if (!all && !worth_saying(&t))
		goto out;
	text_head(fd, why, sig, &t);
	for (size_t i = 0; i < n; i++)
		nworth += shown(rows[i], c->stats_sort);
	sy = nworth ? plk_symbols_open(names_bound(why)) : NULL;
	text_table(fd, sy, rows, n, c);
	for (size_t i = 0; i < n && nshown < c->stats_top; i++) {
		if (shown(rows[i], c->stats_sort))
			text_lock(fd, sy, rows[i], ++nshown);
	}
	if (nworth)
		say(fd, "proxylock: %zu of %zu locks shown, by %s (proxylock run --top=N "
		    "--sort=wait|contended|held|donations)\n", nshown, nworth, sort_names[c->stats_sort]);
	if (plk_symbols_by_offset(sy))
		say(fd, "proxylock: %lu frames named by module and offset: a report from a signal "
		    "searches symbols for %d addresses at most\n", plk_symbols_by_offset(sy),
		    SIGNAL_NAMES);
	plk_symbols_close(sy);
	text_dead_owners(fd);
out:
	if (bytes)
		munmap(rows, bytes);
}

/* --- the JSON report -------------------------------------------------- */

/* @s as a JSON string, quotes included, escaped per RFC 8259. */
static void json_string(int fd, const char *s)
{
	char buf[256];
	size_t n = 0;

	buf[n++] = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (n > sizeof(buf) - 8) {
			put(fd, buf, n);
			n = 0;
		}
		if (ch == '"' || ch == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			n += (size_t)snprintf(buf + n, 8, "\\u%04x", ch);
		} else {
			buf[n++] = (char)ch;  /* UTF-8 passes as it is */
		}
	}
	buf[n++] = '"';
	put(fd, buf, n);
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

static void json_stack(int fd, struct plk_symbols *sy, const char *event, const struct plk_site *s,
                       const char **sep)
{
	char name[160];

	if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE))
		return;
	say(fd, "%s{\"event\": \"%s\", \"stack\": [", *sep, event);
	for (int i = 0; i < PLK_SITE_FRAMES && s->pc[i]; i++) {
		plk_symbol_name(sy, s->pc[i], name, sizeof(name));
		say(fd, "%s", i ? ", " : "");
		json_string(fd, name);
	}
	say(fd, "]}");
	*sep = ", ";
}

static void json_held(int fd, const char *name, const struct plk_holdtime *h)
{
	say(fd, "\"%s\": {\"ns\": %llu, \"max_ns\": %llu, \"count\": %llu}, ", name, get(&h->ns),
	    get(&h->max_ns), get(&h->n));
}

static void json_lock(int fd, struct plk_symbols *sy, const struct plk_lockrow *e, const char *sep)
{
	static const char *const type[] = { "mutex", "condvar", "rwlock" };
	const char *csep = "";
	unsigned long long hmax = get(&e->held.max_ns) > get(&e->rd_held.max_ns)
	                          ? get(&e->held.max_ns) : get(&e->rd_held.max_ns);

	say(fd, "%s\n    {\"address\": \"%p\", \"type\": \"%s\", \"call_sites\": [", sep, e->addr,
	    type[e->kind]);
	json_stack(fd, sy, "first_contended", &e->contended_at, &csep);
	json_stack(fd, sy, "initialised", &e->init_at, &csep);
	say(fd, "], ");
	if (e->kind == PLK_ROW_COND) {
		say(fd, "\"waits\": %llu}", get(&e->uses));
		return;
	}
	if (e->kind == PLK_ROW_RWLOCK) {
		say(fd, "\"rdlock_acquisitions\": %llu, \"wrlock_acquisitions\": %llu, ",
		    get(&e->uses), get(&e->wr_uses));
		json_held(fd, "held_write", &e->held);
		json_held(fd, "held_read", &e->rd_held);
	}
	if (e->kind == PLK_ROW_MUTEX)
		say(fd, "\"contended_reacquisitions\": %llu, ", get(&e->reacquired_contended));
	say(fd, "\"acquisitions\": %llu, \"contended\": %llu, \"timeouts\": %llu, \"wait_ns\": %llu, "
	    "\"max_wait_ns\": %llu, \"held_ns\": %llu, \"max_held_ns\": %llu, \"holds\": %llu, "
	    "\"donations\": %llu, \"lent\": {",
	    get(&e->uses) + get(&e->wr_uses), get(&e->contended), get(&e->timeouts),
	    get(&e->wait_ns), get(&e->wait_max_ns), held_ns(e), hmax,
	    get(&e->held.n) + get(&e->rd_held.n), get(&e->donations));
	for (int k = 0; k < 4; k++)
		say(fd, "%s\"%s\": %llu", k ? ", " : "", kind_names[k], get(&e->lent[k]));
	say(fd, "}, \"dead_owners\": %u}", dead_count(e->addr));
}

/*
 * One JSON object, documented in proxylock(1): the process, the totals
 * (sums of the rows), the library's own counters (proxylock_stats_get),
 * every lock the interposer saw, and the dead owners found.  Should the
 * scratch mapping fail, only the FALLBACK_ROWS first locks, and
 * "truncated": true (as when some locks had no row).
 */
static void report_json(int fd, enum why why, int sig)
{
	const struct plk_config *c = plk_config();
	struct plk_lockrow *fallback[FALLBACK_ROWS], **rows;
	struct plk_symbols *sy = plk_symbols_open(names_bound(why));
	struct proxylock_stats st;
	unsigned long by_offset;
	struct totals t;
	size_t n, bytes;
	const void *dlock;
	bool drobust;
	pid_t dtid;
	unsigned nd;
	char when[48];

	rows = gather(fallback, &n, &bytes, &t, c->stats_sort);
	proxylock_stats_get(&st);
	why_str(why, sig, when, sizeof(when));
	say(fd, "{\n  \"version\": 2,\n  \"pid\": %d,\n  \"program\": ", (int)getpid());
	json_string(fd, program_invocation_name);
	say(fd, ",\n  \"when\": \"%s\",\n  \"lending\": ", when);
	if (lent_kinds(why) < 0)
		say(fd, "null");
	else
		json_kinds(fd, (unsigned)lent_kinds(why));
	say(fd, ",\n  \"sorted_by\": \"%s\",\n  \"mutexes_seen\": %zu,\n  \"condvars_seen\": %zu,\n"
	    "  \"mutexes_contended\": %zu,\n  \"rwlocks_seen\": %zu,\n"
	    "  \"rwlocks_contended\": %zu,\n  \"truncated\": %s,\n", sort_names[c->stats_sort],
	    t.mutex, t.cond, t.mutex_contended, t.rwlock, t.rwlock_contended,
	    bytes && !plk_lockstat_lost() ? "false" : "true");
	say(fd, "  \"totals\": {\"acquisitions\": %llu, \"contended\": %llu, \"timeouts\": %llu, "
	    "\"wait_ns\": %llu, \"held_ns\": %llu, \"donations\": %llu, \"lent\": {\"uclamp\": %llu, "
	    "\"affinity\": %llu, \"nice\": %llu, \"rt\": %llu}, ", t.uses, t.contended, t.timeouts,
	    t.wait_ns, t.held_ns, t.donations, t.lent[0], t.lent[1], t.lent[2], t.lent[3]);
	say(fd, "\"sleeps\": %llu, \"handoffs\": %llu, \"restores\": %llu, \"eperm_skipped\": %llu, "
	    "\"dead_owners\": %llu, \"lent_to_wakers\": {\"condvar\": %llu, \"semaphore\": %llu}},\n",
	    (unsigned long long)st.sleeps, (unsigned long long)st.handoffs,
	    (unsigned long long)st.restores, (unsigned long long)st.eperm_skipped,
	    (unsigned long long)st.owner_dead, (unsigned long long)st.lent_cond,
	    (unsigned long long)st.lent_sem);
	say(fd, "  \"library\": {\"contended\": %llu, \"sleeps\": %llu, \"handoffs\": %llu, "
	    "\"donations\": %llu, \"restores\": %llu, \"lent\": {\"uclamp\": %llu, "
	    "\"affinity\": %llu, \"nice\": %llu, \"rt\": %llu}, \"setattr_calls\": %llu, "
	    "\"setaff_calls\": %llu, \"chain_steps\": %llu, \"chain_truncated\": %llu},\n"
	    "  \"locks\": [",
	    (unsigned long long)st.contended, (unsigned long long)st.sleeps,
	    (unsigned long long)st.handoffs, (unsigned long long)st.donations,
	    (unsigned long long)st.restores, (unsigned long long)st.lent_uclamp,
	    (unsigned long long)st.lent_affinity, (unsigned long long)st.lent_nice,
	    (unsigned long long)st.lent_rt, (unsigned long long)st.setattr_calls,
	    (unsigned long long)st.setaff_calls, (unsigned long long)st.chain_steps,
	    (unsigned long long)st.chain_truncated);
	for (size_t i = 0; i < n; i++)
		json_lock(fd, sy, rows[i], i ? "," : "");
	by_offset = plk_symbols_by_offset(sy);
	plk_symbols_close(sy);
	if (bytes)
		munmap(rows, bytes);
	nd = plk_dead_count();
	say(fd, "%s],\n  \"dead_owners\": [", n ? "\n  " : "");
	for (unsigned i = 0; plk_dead_log(i, &dlock, &dtid, &drobust); i++)
		say(fd, "%s\n    {\"address\": \"%p\", \"owner_tid\": %d, \"robust\": %s}",
		    i ? "," : "", dlock, (int)dtid, drobust ? "true" : "false");
	say(fd, "%s],\n  \"dead_owners_found\": %u,\n  \"frames_named_by_offset\": %lu\n}\n",
	    nd ? "\n  " : "", nd, by_offset);
}

/* --- the file ----------------------------------------------------------- */

/*
 * PROXYLOCK_STATS_FILE's @pattern into @buf: "%p" the process ID, "%%" a
 * "%"; with @add_pid, ".PID" before the last extension of the file's
 * name (or at its end).  False if it does not fit.
 */
static bool stats_path(char *buf, size_t len, const char *pattern, bool add_pid)
{
	const char *base = strrchr(pattern, '/'), *dot;
	size_t n = 0;

	base = base ? base + 1 : pattern;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	for (const char *p = pattern;; p++) {
		int w = 0;

		if (add_pid && p == dot)
			w = snprintf(buf + n, len - n, ".%d", (int)getpid());
		if (w < 0 || (size_t)w >= len - n)
			return false;
		n += (size_t)w;
		if (!*p)
			break;
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

/* @path, created; or, if it is there and no regular file, opened to be
 * written to; -1 with errno (EEXIST: a regular file is there). */
static int open_new(const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);

	if (fd >= 0 || errno != EEXIST)
		return fd;
	/* Not through a symlink (one planted for root to write a device
	 * through); non-blocking: a FIFO with no reader is no report, not
	 * a hang. */
	if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW)) < 0) {
		if (errno == ELOOP)
			errno = EEXIST;  /* a symlink: taken, as a file is */
		return -1;
	}
	if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode)) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;
}

/* The report's file name: static, not on the stack, because a report may
 * be written from a thread with PTHREAD_STACK_MIN of stack (the stack
 * budget, docs/design.md); reports are written one at a time. */
static char report_path[PLK_STATS_FILE_MAX + 32];

/* The JSON report into PROXYLOCK_STATS_FILE; false if it went nowhere and
 * the text is to follow on stderr.  @notable: it has something to say
 * (worth_saying). */
static bool report_file(const struct plk_config *c, bool notable, enum why why, int sig)
{
	const char *pattern = c->stats_file;
	bool other = c->stats_pid && c->stats_pid != (unsigned)getpid() && !strstr(pattern, "%p");
	int fd;

	if (!stats_path(report_path, sizeof(report_path), pattern, other)) {
		say(report_fd, "proxylock: PROXYLOCK_STATS_FILE is too long; the report follows here\n");
		return false;
	}
	fd = open_new(report_path);
	if (fd >= 0 && other && notable)
		say(report_fd, "proxylock: the report of pid %d is in %.300s\n", (int)getpid(),
		    report_path);
	if (fd < 0 && errno == EEXIST && !other && !strstr(pattern, "%p")) {
		/* Another process of the same run took the name: one file a
		 * process, as if %p had been given. */
		if (stats_path(report_path, sizeof(report_path), pattern, true) &&
		    (fd = open_new(report_path)) >= 0)
			say(report_fd, "proxylock: PROXYLOCK_STATS_FILE exists: the report of pid %d is in "
			    "%.300s\n", (int)getpid(), report_path);
	}
	if (fd < 0 && errno == EEXIST) {
		say(report_fd, "proxylock: %.300s exists: not overwritten, no report written\n",
		    report_path);
		return true;
	}
	if (fd < 0) {
		/* errno's number: strerror's text may be translated, which allocates */
		say(report_fd, "proxylock: cannot write %.300s (errno %d); the report follows here\n",
		    report_path, errno);
		return false;
	}
	report_json(fd, why, sig);
	close(fd);
	return true;
}

/* The report at exit or ending, where the settings send it. */
static void report_final(enum why why, int sig)
{
	const struct plk_config *c = plk_config();
	struct plk_lockrow *fallback[FALLBACK_ROWS], **rows;
	struct totals t;
	size_t n, bytes;
	bool notable;

	if (c->stats_file[0]) {
		/* Nothing to say: no file either, so that a shell's or a
		 * shim's report takes no name from the program's. */
		rows = gather(fallback, &n, &bytes, &t, PLK_SORT_CONTENDED);
		if (bytes)
			munmap(rows, bytes);
		notable = worth_saying(&t);
		if ((!c->stats_all && !notable) || report_file(c, notable, why, sig))
			return;
	}
	report_text(report_fd, why, sig, c->stats_all);
}

/* How long exit waits for a report on request another thread is
 * writing: its bounded work, and one stall on its requester's pipe. */
#define EXIT_WAIT_MS (WRITE_WAIT_MS + 3000)

static void report_at_exit(void)
{
	struct timespec ms = { 0, 1000000 };

	/* Reporting stays set: this is the last.  One on request, being
	 * written in another thread, is waited for; an ending signal's
	 * ends the process itself. */
	for (int i = 0; __atomic_exchange_n(&reporting, 1, __ATOMIC_ACQUIRE); i++) {
		if (i == EXIT_WAIT_MS) {
			say(report_fd, "proxylock: a report was still being written after %d ms at exit: "
			    "no report at exit\n", EXIT_WAIT_MS);
			return;
		}
		nanosleep(&ms, NULL);
	}
	report_final(AT_EXIT, 0);
}

/* A fork child: no report of its parent's in progress (its thread is
 * not in the child); its own come at its exit and on request. */
static void report_fork_child(void)
{
	stalled_fd = -1;
	__atomic_store_n(&reporting, 0, __ATOMIC_RELAXED);
}

/* --- the signals -------------------------------------------------------- */

/* glibc's own signal functions, found at load (report_real_find); by a
 * program's call before that, from another library's constructor, then
 * (dlsym may allocate, which is allowed there: no lock of ours is
 * involved).  dlsym's object pointers copied: POSIX makes them function
 * pointers. */
typedef __sighandler_t handler_fn(int, __sighandler_t);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_siginterrupt)(int, int);
static handler_fn *real_signal, *real_sysv_signal, *real_sigset;
static int (*real_sigignore)(int);

static void real_find(void *fn, const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	memcpy(fn, &p, sizeof(p));
}

static void report_real_find(void)
{
	real_find(&real_siginterrupt, "siginterrupt");
	real_find(&real_signal, "signal");
	real_find(&real_sysv_signal, "__sysv_signal");
	real_find(&real_sigset, "sigset");
	real_find(&real_sigignore, "sigignore");
	/* Last: it says the others are found. */
	real_find(&real_sigaction, "sigaction");
}

/* Signals whose handler is ours while the program believes SIG_DFL. */
static bool ours[65];

static bool is_ours(int sig)
{
	return sig > 0 && sig < (int)(sizeof(ours) / sizeof(ours[0])) &&
	       __atomic_load_n(&ours[sig], __ATOMIC_ACQUIRE);
}

/* SIGINT, SIGTERM: report, then end as SIG_DFL would (see the top). */
static void ending_handler(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int saved = errno;

	if (!__atomic_exchange_n(&reporting, 1, __ATOMIC_ACQUIRE))
		report_final(AT_SIGNAL, sig);
	__atomic_store_n(&ours[sig], false, __ATOMIC_RELEASE);
	real_sigaction(sig, &dfl, NULL);
	raise(sig);  /* pending until we return: blocked in its own handler */
	errno = saved;
}

/* Is a SIGPIPE pending for this thread or the process? */
static bool sigpipe_pending(void)
{
	sigset_t pending;

	return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

/* The request signal: to the requester's pipe, if it queued the signal
 * with its PID and the pipe's descriptor (proxylock report), else the
 * text on the copy of stderr. */
static void request_handler(int sig, siginfo_t *si, void *uc)
{
	unsigned v = (unsigned)si->si_value.sival_int;
	char path[64];
	int saved = errno, fd = -1;
	bool pipe_was_pending;

	(void)uc;
	if (__atomic_exchange_n(&reporting, 1, __ATOMIC_ACQUIRE))
		return;  /* one is being written (or the last, at exit) */
	if (si->si_code == SI_QUEUE && si->si_pid > 0 && (v >> 10) == (unsigned)si->si_pid) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%u", (int)si->si_pid, v & 511);
		/* Non-blocking: a requester that stops reading (| head, ^Z)
		 * costs us the rest of the report (put: WRITE_WAIT_MS), never
		 * a thread stuck here. */
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	pipe_was_pending = sigpipe_pending();
	if (fd >= 0 && (v & 512)) {
		report_json(fd, ON_REQUEST, sig);
	} else {
		report_text(fd >= 0 ? fd : report_fd, ON_REQUEST, sig, true);
	}
	if (fd >= 0) {
		say(fd, END_MARK);
		close(fd);
		stalled_fd = -1;
	}
	/* A requester gone mid-report left a SIGPIPE for this thread
	 * (pending: every signal is blocked here): it is ours, not the
	 * program's, and must not end the program when we return. */
	if (!pipe_was_pending && sigpipe_pending()) {
		sigset_t pipe_only;
		struct timespec now = { 0, 0 };

		sigemptyset(&pipe_only);
		sigaddset(&pipe_only, SIGPIPE);
		(void)sigtimedwait(&pipe_only, NULL, &now);
	}
	__atomic_store_n(&reporting, 0, __ATOMIC_RELEASE);
	errno = saved;
}

/* Our action for @sig: the request handler for the request signal,
 * else the ending one; every signal blocked while it runs. */
static void our_action(int sig, struct sigaction *act)
{
	memset(act, 0, sizeof(*act));
	act->sa_flags = SA_RESTART;
	sigfillset(&act->sa_mask);
	if (sig == plk_config()->stats_signal) {
		act->sa_flags |= SA_SIGINFO;
		act->sa_sigaction = request_handler;
	} else {
		act->sa_handler = ending_handler;
	}
}

/* The signals we report on: SIGINT, SIGTERM and the request signal. */
static bool managed(int sig)
{
	return sig == SIGINT || sig == SIGTERM || (sig > 0 && sig == plk_config()->stats_signal);
}

/* Ours for @sig, if the program left it at SIG_DFL. */
static void take_over(int sig)
{
	struct sigaction old, act;

	if (real_sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
	    (old.sa_flags & SA_SIGINFO))
		return;
	our_action(sig, &act);
	if (real_sigaction(sig, &act, NULL) == 0)
		__atomic_store_n(&ours[sig], true, __ATOMIC_RELEASE);
}

/* Whether our handler is in for @sig, as the kernel says: a handler put
 * in past our sigaction() (a raw rt_sigaction, or glibc calling its own)
 * ends ours, and the program's view is the kernel's again. */
static bool still_ours(int sig)
{
	struct sigaction cur;

	if (!is_ours(sig))
		return false;
	if (real_sigaction(sig, NULL, &cur) == 0 && (cur.sa_handler == ending_handler ||
	                                           cur.sa_sigaction == request_handler))
		return true;
	__atomic_store_n(&ours[sig], false, __ATOMIC_RELEASE);
	return false;
}

/* Whether the interposed routes below take @sig: a signal we report on,
 * with the report on. */
static bool routed(int sig)
{
	if (!real_sigaction)
		report_real_find();
	return plk_lockstat_on && managed(sig);
}

/* The program's view of the signals we report on (see the top): while
 * ours is in, SIG_DFL; SIG_DFL asked for is ours, seen as SIG_DFL;
 * anything else is the program's. */
PLK_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction mine;
	bool was_ours;
	int err;

	if (!routed(sig))
		return real_sigaction(sig, act, old);
	was_ours = still_ours(sig);
	if (act && act->sa_handler == SIG_DFL && !(act->sa_flags & SA_SIGINFO)) {
		our_action(sig, &mine);
		err = real_sigaction(sig, &mine, old);
		if (err == 0 && old && was_ours) {
			memset(old, 0, sizeof(*old));
			old->sa_handler = SIG_DFL;
		}
		if (err == 0)
			__atomic_store_n(&ours[sig], true, __ATOMIC_RELEASE);
		return err;
	}
	if (!was_ours)
		return real_sigaction(sig, act, old);
	if (old) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = SIG_DFL;
	}
	if (!act)
		return 0;
	__atomic_store_n(&ours[sig], false, __ATOMIC_RELEASE);
	return real_sigaction(sig, act, NULL);
}

PLK_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

/*
 * glibc's other routes to a handler, for the signals we report on: the
 * same semantics, through the sigaction above, so that what the program
 * set is what it sees (glibc's own would call its internal sigaction,
 * past ours).  Other signals, or stats off: glibc's own.
 */

/* The signals siginterrupt() made interruptible (no SA_RESTART for
 * signal()) while ours was in: glibc's record of them is its own. */
static bool interrupts[65];

PLK_EXPORT int siginterrupt(int sig, int flag)
{
	if (routed(sig) && sig < (int)(sizeof(interrupts) / sizeof(interrupts[0])))
		__atomic_store_n(&interrupts[sig], flag != 0, __ATOMIC_RELAXED);
	/* Ours keeps its flags: the program believes SIG_DFL. */
	if (routed(sig) && still_ours(sig))
		return 0;
	return real_siginterrupt(sig, flag);
}

/* A handler set with @flags and no mask but @sig's (BSD) or none. */
static __sighandler_t set_handler(int sig, __sighandler_t handler, int flags, bool mask_it)
{
	struct sigaction act = { .sa_handler = handler, .sa_flags = flags }, old;

	if (sig <= 0 || sig >= NSIG || handler == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&act.sa_mask);
	if (mask_it)
		sigaddset(&act.sa_mask, sig);
	return sigaction(sig, &act, &old) == 0 ? old.sa_handler : SIG_ERR;
}

/* signal(), bsd_signal(), ssignal(): BSD semantics. */
PLK_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	if (!routed(sig))
		return real_signal(sig, handler);
	return set_handler(sig, handler,
	                   __atomic_load_n(&interrupts[sig], __ATOMIC_RELAXED) ? 0 : SA_RESTART, true);
}

PLK_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t handler)
{
	return signal(sig, handler);
}

PLK_EXPORT __sighandler_t ssignal(int sig, __sighandler_t handler)
{
	return signal(sig, handler);
}

/* __sysv_signal() (signal() under -std=c11), sysv_signal(): System V's
 * one-shot handler, no mask. */
PLK_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t handler)
{
	if (!routed(sig))
		return real_sysv_signal(sig, handler);
	return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

PLK_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t handler)
{
	return __sysv_signal(sig, handler);
}

/* sigset(): @disp with no flags and no mask, and @sig unblocked; or, for
 * SIG_HOLD, @sig blocked.  Returns SIG_HOLD if it was blocked, else the
 * disposition it had. */
PLK_EXPORT __sighandler_t sigset(int sig, __sighandler_t disp)
{
	struct sigaction old;
	sigset_t one, was;

	if (!routed(sig))
		return real_sigset(sig, disp);
	sigemptyset(&one);
	sigaddset(&one, sig);
	if (disp == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &one, &was) != 0)
			return SIG_ERR;
		if (sigismember(&was, sig))
			return SIG_HOLD;
		return sigaction(sig, NULL, &old) == 0 ? old.sa_handler : SIG_ERR;
	}
	if ((old.sa_handler = set_handler(sig, disp, 0, false)) == SIG_ERR ||
	    sigprocmask(SIG_UNBLOCK, &one, &was) != 0)
		return SIG_ERR;
	return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}

PLK_EXPORT int sigignore(int sig)
{
	if (!routed(sig))
		return real_sigignore(sig);
	return set_handler(sig, SIG_IGN, 0, false) == SIG_ERR ? -1 : 0;
}

int plk_report_install(void)
{
	const struct plk_config *c = plk_config();

	if (!real_sigaction)
		report_real_find();
	/* fd 2 as it is at load (the interposer's constructor), verified
	 * open: F_GETFD first, so the rule reads here (a dup of a closed fd
	 * fails too); a failed dup (EMFILE) leaves -1, no text rather than
	 * text in the wrong file. */
	if (fcntl(2, F_GETFD) >= 0)
		report_fd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	atexit(report_at_exit);
	pthread_atfork(NULL, NULL, report_fork_child);
	if (real_sigaction) {
		take_over(SIGINT);
		take_over(SIGTERM);
		if (c->stats_signal)
			take_over(c->stats_signal);
	}
	return report_fd;
}

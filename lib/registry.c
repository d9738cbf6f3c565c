/* SPDX-License-Identifier: MIT */
/*
 * registry.c - thread records in a cds_lfht keyed by TID (see registry.h).
 *
 * Lifetime of a record:
 *   created  - by plk_thread_get() (a waiter naming an owner) or
 *              plk_thread_self(); published with cds_lfht_add_unique, so
 *              two threads racing to create one agree on a single record;
 *   adopted  - by its own thread in plk_thread_self(), which stores it
 *              in a pthread key;
 *   unlinked - by the key's destructor at thread exit (cds_lfht_del);
 *   freed    - by call_rcu once every reader that could see it is done.
 * A record is never freed while its thread is blocked: a blocked thread
 * has not exited.  Records of threads that never adopted theirs (an owner
 * that exited without entering a slow path) stay until fork or exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "registry.h"

__thread uint32_t plk_tls_tid __attribute__((tls_model("initial-exec")));
static __thread struct plk_thread *tls_self __attribute__((tls_model("initial-exec")));
static uint32_t prefork_tid;         /* set in the fork child only */
static uint32_t forked_tid;
static uint32_t forking_tid;

static struct cds_lfht *table;
int plk_tsan_grace;
static pthread_key_t self_key;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

uint32_t plk_tid_slow(void)
{
	plk_tls_tid = (uint32_t)gettid();
	return plk_tls_tid;
}

static pid_t pid_cache;  /* getpid() is a syscall in glibc; reset in a fork child */

pid_t plk_pid(void)
{
	pid_t pid = __atomic_load_n(&pid_cache, __ATOMIC_RELAXED);

	if (pid == 0) {
		pid = getpid();
		__atomic_store_n(&pid_cache, pid, __ATOMIC_RELAXED);
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
		gone = errno == ESRCH;
	else
		gone = tid == plk_pid() && leader_is_zombie();
	errno = saved;
	return gone;
}

uint32_t plk_prefork_tid(void)
{
	return prefork_tid;
}

uint32_t plk_forked_tid(void)
{
	return forked_tid;
}

/* Fibonacci hashing: TIDs are dense, the multiply spreads them. */
static unsigned long tid_hash(pid_t tid)
{
	return (unsigned long)(uint32_t)tid * 0x9E3779B97F4A7C15ull;
}

static int tid_match(struct cds_lfht_node *node, const void *key)
{
	const struct plk_thread *t = caa_container_of(node, struct plk_thread, hnode);

	plk_tsan_acquire(node);
	return t->tid == *(const pid_t *)key;
}

static void record_free(struct rcu_head *head)
{
	plk_tsan_acquire(&plk_tsan_grace);
	free(caa_container_of(head, struct plk_thread, rcu));
}

static void record_unlink(struct plk_thread *t)
{
	rcu_read_lock();
	if (cds_lfht_del(table, &t->hnode) == 0)
		call_rcu(&t->rcu, record_free);
	plk_rcu_unlock();
}

/* Key destructor: the thread is exiting and cannot be blocked on a lock. */
static void self_destructor(void *arg)
{
	struct plk_thread *t = arg;

	tls_self = NULL;
	record_unlink(t);
}

static void table_init(void)
{
	table = cds_lfht_new(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!table || pthread_key_create(&self_key, self_destructor) != 0)
		abort();
}

struct plk_thread *plk_thread_find(pid_t tid)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	pthread_once(&table_once, table_init);
	cds_lfht_lookup(table, tid_hash(tid), tid_match, &tid, &iter);
	node = cds_lfht_iter_get_node(&iter);
	plk_tsan_acquire(node);
	return node ? caa_container_of(node, struct plk_thread, hnode) : NULL;
}

struct plk_thread *plk_thread_get(pid_t tid)
{
	struct plk_thread *t = plk_thread_find(tid), *fresh;
	struct cds_lfht_node *won;

	if (t)
		return t;
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return NULL;
	fresh->tid = tid;
	cds_lfht_node_init(&fresh->hnode);
	CDS_INIT_LIST_HEAD(&fresh->wnode);
	plk_tsan_release(&fresh->hnode);
	won = cds_lfht_add_unique(table, tid_hash(tid), tid_match, &tid, &fresh->hnode);
	if (won != &fresh->hnode) {
		plk_tsan_acquire(won);
		free(fresh);  /* never published: no grace period needed */
		return caa_container_of(won, struct plk_thread, hnode);
	}
	return fresh;
}

struct plk_thread *plk_thread_self(void)
{
	struct plk_thread *t = tls_self;

	if (__builtin_expect(t != NULL, 1))
		return t;
	t = plk_thread_get((pid_t)plk_tid());
	if (t && pthread_setspecific(self_key, t) == 0)
		tls_self = t;
	return t;
}

unsigned long plk_registry_count(void)
{
	long before, after;
	unsigned long count;

	pthread_once(&table_once, table_init);
	rcu_read_lock();
	cds_lfht_count_nodes(table, &before, &count, &after);
	plk_rcu_unlock();
	return count;
}

void plk_registry_fork_prepare(void)
{
	forking_tid = plk_tid();
	call_rcu_before_fork();
	urcu_bp_before_fork();
}

void plk_registry_fork_parent(void)
{
	urcu_bp_after_fork_parent();
	call_rcu_after_fork_parent();
}

/*
 * Child: only the forking thread survives, under a new TID.  Every
 * record describes a parent thread, so all are dropped; locks the
 * forking thread held still carry its old TID (plk_prefork_tid).
 */
void plk_registry_fork_child(void)
{
	struct plk_thread *me = tls_self, *t;
	struct cds_lfht_node *node;
	struct cds_lfht_iter iter;

	/* The child holds no lock anyone waits for: back to its base. */
	if (me && me->nheld)
		plk_sched_apply(0, &me->applied, &me->base);
	urcu_bp_after_fork_child();
	call_rcu_after_fork_child();
	prefork_tid = forking_tid;
	pid_cache = 0;
	plk_tls_tid = 0;
	forked_tid = plk_tid();
	tls_self = NULL;
	if (!table)
		return;
	pthread_setspecific(self_key, NULL);
	rcu_read_lock();
	/* Node by node: the _entry form computes container_of(NULL) at the end. */
	cds_lfht_for_each(table, &iter, node) {
		t = caa_container_of(node, struct plk_thread, hnode);
		if (cds_lfht_del(table, node) == 0)
			call_rcu(&t->rcu, record_free);
	}
	plk_rcu_unlock();
}

/* SPDX-License-Identifier: MIT */
/*
 * child.h - run a function in a forked child and keep what it wrote to
 * stderr and how it ended: for the tests of checks that abort
 * (test_lockcheck.c, test_invariants.c).
 */
#ifndef PLK_TEST_CHILD_H
#define PLK_TEST_CHILD_H

#include <sys/wait.h>

#include "helpers.h"

/* What a child did: its wait status, and what it wrote to stderr. */
struct outcome {
	int status;
	char err[4096];
};

/* Run @fn in a forked child, its stderr into out->err; _exit(0) after.
 * The lock check aborts there, whatever the suite runs with. */
static inline void run_child(void (*fn)(void), struct outcome *out)
{
	int fds[2];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 2);
		unsetenv("PLK_LOCKCHECK");
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (len < sizeof(out->err) - 1 &&
	       (n = read(fds[0], out->err + len, sizeof(out->err) - 1 - len)) > 0)
		len += (size_t)n;
	out->err[len] = 0;
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &out->status, 0), pid);
}

/* @fn must exit 0 in a child, without @unwanted on stderr. */
static inline void expect_clean_exit(void (*fn)(void), const char *unwanted)
{
	struct outcome o;

	run_child(fn, &o);
	ck_assert_msg(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0,
	              "child failed (status %#x); stderr: %s", o.status, o.err);
	ck_assert_msg(!strstr(o.err, unwanted), "unexpected report: %s", o.err);
}

#endif /* PLK_TEST_CHILD_H */

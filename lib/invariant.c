/* SPDX-License-Identifier: MIT */
/*
 * invariant.c - the report of a failed invariant check (invariant.h).
 *
 * One line on stderr, then abort():
 *   proxylock: invariant M1 violated: <what> (in <func>, <file>:<line>)
 * made of write(2) calls only: no stdio (it allocates and locks), no
 * allocation, no lock, so it is safe under any internal lock and in a
 * signal handler.  In a -Dlockcheck=true build write() is wrapped by the
 * lock check (lockcheck.c), which would abort first with its own
 * message; glibc's write is called directly then.  Built only with
 * -Ddebug_invariants=true (lib/meson.build).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "invariant.h"

#ifdef PLK_LOCKCHECK
ssize_t __real_write(int fd, const void *buf, size_t n);
#define INV_WRITE __real_write
#else
#define INV_WRITE write
#endif

static void say(const char *s)
{
	ssize_t r = INV_WRITE(2, s, strlen(s));

	(void)r;
}

/* @n in decimal into @buf (at least 12 bytes), NUL-terminated. */
static const char *decimal(int n, char *buf)
{
	char *p = buf + 11;
	unsigned v = n < 0 ? 0u : (unsigned)n;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) && p > buf);
	return p;
}

void plk_invariant_failed(const char *name, const char *what, const char *func,
                          const char *file, int line)
{
	char num[12];

	say("proxylock: invariant ");
	say(name);
	say(" violated: ");
	say(what);
	say(" (in ");
	say(func);
	say(", ");
	say(file);
	say(":");
	say(decimal(line, num));
	say("; docs/design.md states it)\n");
	abort();
}

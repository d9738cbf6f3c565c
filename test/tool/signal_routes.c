/* SPDX-License-Identifier: MIT */
/*
 * signal_routes.c - a program that sets its handler for signal SIG by one
 * of glibc's routes other than sigaction(), run under `proxylock run
 * --stats` by signal-routes.sh: what it sees must be what it set, as
 * without the interposer.  For ROUTE:
 *   sysv        __sysv_signal (signal() compiled with -std=c11)
 *   sysv_signal, bsd_signal, ssignal, sigset
 *   sigignore   sigignore(), then the handler by signal()
 *   siginterrupt  siginterrupt(SIG, 1), then the handler by signal(): it
 *               interrupts system calls (no SA_RESTART); and so for
 *               SIGALRM, which the interposer does not report on
 *   raw         syscall(SYS_rt_sigaction), libc bypassed
 * it checks that
 *   - the route returns SIG_DFL (the signal's disposition at start) as
 *     the old one (SIG_IGN for signal() after sigignore()), but for raw
 *     (the kernel's answer: docs/design.md, Known limits);
 *   - sigaction() asked and signal() replacing it answer what it set;
 *   - raise() runs its handler;
 *   - set back to SIG_DFL by the same route, raise() ends the process
 *     with SIG: signal-routes.sh checks the status and the report.
 * Each check passed prints "ok ..."; a failed one "not ok ..." and exit 1.
 *   usage: signal_routes ROUTE INT|TERM
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000  /* <asm/signal.h>'s; clashes with <signal.h> */
#endif

/* bsd_signal is declared only under feature macros that hide the
 * others; sigset and sigignore are deprecated, and still there. */
extern __sighandler_t bsd_signal(int, __sighandler_t);
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static volatile sig_atomic_t caught;
static int failed;

static void handler(int sig)
{
	(void)sig;
	caught++;
}

static void handler2(int sig)
{
	(void)sig;
}

static void check(int ok, const char *route, const char *what)
{
	printf("%s - %s: %s\n", ok ? "ok" : "not ok", route, what);
	fflush(stdout);
	failed |= !ok;
}

/* The kernel's sigaction as the raw system call takes it (x86_64 and
 * arm64 share it): handler, flags, restorer, mask. */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

/* x86_64's kernel returns from a handler through the restorer libc's
 * sigaction() passes: the raw route borrows it from SIGUSR2's. */
static void (*restorer)(void);

static void restorer_borrow(void)
{
	struct sigaction act = { .sa_handler = handler2 };
	struct ksigaction k;

	sigaction(SIGUSR2, &act, NULL);
	syscall(SYS_rt_sigaction, SIGUSR2, NULL, &k, 8);
	restorer = k.restorer;
	signal(SIGUSR2, SIG_DFL);
}

/* Set @h by @route; the old disposition, as the route answers it. */
static __sighandler_t set_by(const char *route, int sig, __sighandler_t h)
{
	if (strcmp(route, "sysv") == 0)
		return __sysv_signal(sig, h);
	if (strcmp(route, "sysv_signal") == 0)
		return sysv_signal(sig, h);
	if (strcmp(route, "bsd_signal") == 0)
		return bsd_signal(sig, h);
	if (strcmp(route, "ssignal") == 0)
		return ssignal(sig, h);
	if (strcmp(route, "sigset") == 0)
		return sigset(sig, h);
	if (strcmp(route, "sigignore") == 0) {
		if (h != SIG_DFL)
			return sigignore(sig) == 0 ? signal(sig, h) : SIG_ERR;
		return signal(sig, h);
	}
	if (strcmp(route, "siginterrupt") == 0) {
		siginterrupt(sig, 1);
		return signal(sig, h);
	}
	if (strcmp(route, "raw") == 0) {
		struct ksigaction act = { .handler = h }, old;

		if (h != SIG_DFL && h != SIG_IGN)
			act = (struct ksigaction){ h, SA_RESTORER, restorer, 0 };
		if (syscall(SYS_rt_sigaction, sig, &act, &old, 8) != 0)
			return SIG_ERR;
		return old.handler;
	}
	fprintf(stderr, "signal_routes: no route %s\n", route);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *route = argc == 3 ? argv[1] : "";
	int sig = argc == 3 && strcmp(argv[2], "INT") == 0 ? SIGINT : SIGTERM;
	struct sigaction q;
	__sighandler_t old;
	bool one_shot = strcmp(route, "sysv") == 0 || strcmp(route, "sysv_signal") == 0;

	if (argc != 3) {
		fprintf(stderr, "usage: signal_routes ROUTE INT|TERM\n");
		return 2;
	}
	restorer_borrow();
	old = set_by(route, sig, handler);
	if (strcmp(route, "sigignore") == 0)
		check(old == SIG_IGN, route, "signal() after sigignore() returns SIG_IGN");
	else if (strcmp(route, "raw") != 0)
		check(old == SIG_DFL, route, "the route returns SIG_DFL, the disposition at start");
	check(sigaction(sig, NULL, &q) == 0 && q.sa_handler == handler, route,
	      "sigaction() asked answers the handler set");
	if (strcmp(route, "siginterrupt") == 0) {
		check(!(q.sa_flags & SA_RESTART), route, "signal() after siginterrupt(1): no SA_RESTART");
		siginterrupt(SIGALRM, 1);
		signal(SIGALRM, handler2);
		check(sigaction(SIGALRM, NULL, &q) == 0 && !(q.sa_flags & SA_RESTART), route,
		      "SIGALRM: signal() after siginterrupt(1): no SA_RESTART");
	}
	raise(sig);
	check(caught == 1, route, "raise() runs the handler set");
	/* A one-shot (System V) handler is SIG_DFL again once run. */
	old = signal(sig, handler2);
	check(old == (one_shot ? SIG_DFL : handler), route,
	      "signal() replacing it returns the handler set (SIG_DFL after a one-shot one)");
	set_by(route, sig, handler);
	old = set_by(route, sig, SIG_DFL);
	if (strcmp(route, "raw") != 0)
		check(old == handler, route, "set back to SIG_DFL, the route returns the handler set");
	check(sigaction(sig, NULL, &q) == 0 && q.sa_handler == SIG_DFL, route,
	      "sigaction() asked answers SIG_DFL once set back");
	if (failed)
		return 1;
	printf("raising\n");
	fflush(stdout);
	raise(sig);
	printf("not ok - %s: raise() at SIG_DFL did not end the process\n", route);
	return 1;
}

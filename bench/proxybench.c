/* SPDX-License-Identifier: MIT */
/*
 * proxybench.c - proxylock against the locks users would otherwise pick,
 * in one binary and one run, repetitions interleaved across contenders.
 *
 * Contenders (struct impl): glibc's pthread_mutex as NORMAL, ADAPTIVE_NP
 * and PRIO_INHERIT, called through pointers taken from libc.so.6 itself;
 * proxylock with donation off and on; plain pthread calls, which are
 * the LD_PRELOAD interposer's when it is loaded (bench/run loads it; the
 * contender is absent otherwise); Abseil's absl::Mutex through a C++
 * adapter (absladapter.cc; absent from builds without libabsl-dev); and
 * futexref.h's spin-then-futex mutex, the simple reference.  Every
 * contender is called through a pointer, so each pays the same indirect
 * call.
 *
 * Each workload prints, per cell, the median, minimum and maximum over
 * its repetitions as CSV rows:
 *   benchmark,impl,threads,cs_ns,metric,median,min,max,unit
 * bench/run turns them into bench-results/ (results.csv, summary, plots).
 * The contended workloads also time lock() calls (wait_p50/p99/p999, see
 * "wait sampling"); verdict repeats the contended grid in rounds and
 * writes every round's values to --rounds-out for bench/report.py's
 * paired ratios; insn brackets N lock+unlock pairs of each contender with
 * callgrind's client requests (instructions per pair under
 * valgrind --tool=callgrind; --only NAME runs one contender, for perf).
 *
 * Reader-writer locks (issue 15) have contenders of their own: glibc's
 * pthread_rwlock (through pointers from libc.so.6), proxylock_rwlock
 * with donation off and on, and plain pthread_rwlock calls (the
 * interposer's).  rw-readmostly is their throughput with 1, 2, 4 and 8
 * threads at 0, 1 and 10% writes (rw-verdict: the same cells in rounds,
 * every round's values to --rounds-out, as verdict); inversion-rw is the
 * inversion with a big writer waiting on two small readers.  inversion-reverse
 * is its reverse (issue 30): a nice-19 background waiter on a busy CPU and
 * a nice-0 holder alone on its own, which donation must leave alone.
 *
 * The files: this one, the options and the command line; proxybench.h,
 * what the others share; proxybench_contenders.c, the contenders; and
 * one a workload: proxybench_uncontended.c (uncontended, insn),
 * proxybench_contended.c (contended, verdict), proxybench_handoff.c,
 * proxybench_inversion.c (inversion, inversion-rw, inversion-reverse),
 * proxybench_donation.c (donation-cost), proxybench_rwlock.c
 * (rw-readmostly, rw-verdict).
 *
 *   usage: proxybench WORKLOAD [--reps N] [--ms N] [--samples FILE]
 *            [--rounds N] [--rounds-out FILE] [--threads LIST] [--cs LIST]
 *            [--pairs N] [--only NAME]
 *   workloads: uncontended contended handoff inversion donation-cost
 *              rw-readmostly inversion-rw inversion-reverse verdict
 *              rw-verdict insn
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxybench.h"

/* --- options -------------------------------------------------------- */

int reps = 5;
int cell_ms = 100;
const char *samples_path;
int rounds = 30;
const char *rounds_path;
int v_threads[8] = { 2, 4, 8, 16 }, v_nthreads = 4;
long v_cs[8] = { 0, 100, 1000, 10000 };
int v_ncs = 4;
const char *only;
long pairs = 100000;

/* @rounds_path opened, its header written (NULL without --rounds-out);
 * exits if it cannot be written. */
FILE *rounds_open(void)
{
	FILE *f = rounds_path ? fopen(rounds_path, "w") : NULL;

	if (rounds_path && !f) {
		fprintf(stderr, "proxybench: cannot write %s\n", rounds_path);
		exit(1);
	}
	if (f)
		fprintf(f, "benchmark,impl,threads,cs_ns,round,metric,value\n");
	return f;
}

/* Parse "2,4,8" into @out (at most 8); returns the count, 0 if malformed. */
static int parse_list(const char *s, long *out)
{
	int n = 0;

	while (*s && n < 8) {
		char *end;

		out[n++] = strtol(s, &end, 10);
		if (end == s || out[n - 1] < 0 || (*end && *end != ','))
			return 0;
		s = *end ? end + 1 : end;
	}
	return *s ? 0 : n;
}

/* --- main ------------------------------------------------------------ */

int main(int argc, char **argv)
{
	const char *w = argc > 1 ? argv[1] : "";

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
			cell_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			samples_path = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds-out") && i + 1 < argc)
			rounds_path = argv[++i];
		else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			pairs = atol(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--cs") && i + 1 < argc) {
			if (!(v_ncs = parse_list(argv[++i], v_cs)))
				goto usage;
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			long t[8];

			if (!(v_nthreads = parse_list(argv[++i], t)))
				goto usage;
			for (int k = 0; k < v_nthreads; k++) {
				if (t[k] < 1 || t[k] > MAX_THREADS)
					goto usage;
				v_threads[k] = (int)t[k];
			}
		} else
			goto usage;
	}
	reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
	rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	pairs = pairs < 1 ? 1 : pairs;
	impls_setup();
	printf("# caps=%u donate_kinds=%u preload=%d\n", proxylock_caps(), proxylock_donate_kinds(),
	       impls[PRELOAD].available);
	if (!strcmp(w, "uncontended"))
		bench_uncontended();
	else if (!strcmp(w, "contended"))
		bench_contended();
	else if (!strcmp(w, "handoff"))
		bench_handoff();
	else if (!strcmp(w, "inversion"))
		bench_inversion();
	else if (!strcmp(w, "donation-cost"))
		bench_donation_cost();
	else if (!strcmp(w, "rw-readmostly"))
		bench_rw_readmostly();
	else if (!strcmp(w, "inversion-rw"))
		bench_inversion_rw();
	else if (!strcmp(w, "inversion-reverse"))
		bench_inversion_reverse();
	else if (!strcmp(w, "verdict"))
		bench_verdict();
	else if (!strcmp(w, "rw-verdict"))
		bench_rw_verdict();
	else if (!strcmp(w, "insn"))
		bench_insn();
	else
		goto usage;
	return 0;
usage:
	fprintf(stderr, "usage: proxybench uncontended|contended|handoff|inversion|donation-cost|"
	                "rw-readmostly|inversion-rw|inversion-reverse|verdict|rw-verdict|insn"
	                " [--reps N] [--ms N] [--samples FILE] [--rounds N] [--rounds-out FILE]"
	                " [--threads LIST] [--cs LIST] [--pairs N] [--only NAME]\n");
	return 2;
}

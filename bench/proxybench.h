/* SPDX-License-Identifier: MIT */
/*
 * proxybench.h - what proxybench's files share: the contenders
 * (proxybench_contenders.c), the options (proxybench.c parses them), the
 * clock, the contended grid's critical section and cells, the inversion
 * scenario, and each workload's entry point (one file a workload:
 * proxybench.c lists them).
 */
#ifndef PLK_BENCH_PROXYBENCH_H
#define PLK_BENCH_PROXYBENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "futexref.h"
#include "proxylock.h"
#include "scenario.h"

#define MAX_REPS 64
#define MAX_ROUNDS 200
#define MAX_THREADS 16

/* --- options (proxybench.c) ------------------------------------------ */

extern int reps;                 /* --reps: repetitions of each cell */
extern int cell_ms;              /* --ms: a cell's length */
extern const char *samples_path; /* --samples: inversion's wait samples */
extern int rounds;               /* --rounds: verdict's and rw-verdict's */
extern const char *rounds_path;  /* --rounds-out: every round's values */
extern int v_threads[8], v_nthreads;  /* --threads: verdict's grid */
extern long v_cs[8];                  /* --cs: verdict's grid */
extern int v_ncs;
extern const char *only;         /* --only: insn's one contender */
extern long pairs;               /* --pairs: insn's lock+unlock pairs */

/* rounds_path opened, its header written (NULL without --rounds-out);
 * exits if it cannot be written. */
FILE *rounds_open(void);

static inline uint64_t now_ns(void)
{
	return scenario_clock(CLOCK_MONOTONIC);
}

/* --- contenders (proxybench_contenders.c) ----------------------------- */

union lock_storage {
	pthread_mutex_t pm;
	proxylock_mutex_t pl;
	pthread_rwlock_t prw;
	proxylock_rwlock_t plrw;
	struct fref fr;
	char pad[64];
} __attribute__((aligned(64)));

struct impl {
	const char *name;
	int (*lock)(void *);
	int (*unlock)(void *);
	void (*init)(const struct impl *, union lock_storage *, unsigned kinds);
	int glibc_kind;  /* for the glibc contenders */
	bool available;
	int (*rdlock)(void *);  /* rwlocks: lock is wrlock */
};

/* The rwlock contenders (RW_*) follow the mutexes' in impls[]; loops
 * over mutex contenders stop at NIMPL. */
enum { GLIBC_NORMAL, GLIBC_ADAPTIVE, GLIBC_PI, PL_NODONATE, PL, PRELOAD, ABSL, FUTEX_REF, NIMPL,
       RW_GLIBC = NIMPL, RW_PL_NODONATE, RW_PL, RW_PRELOAD, NALL };
extern struct impl impls[NALL];

/* The rwlocks' preference kind: PROXYLOCK_RWLOCK_PREFER_*, glibc's numbers. */
extern int rw_kind;

/* impls[] filled in: glibc's functions from libc.so.6 itself, whoever
 * plain calls reach (the interposer, when it is loaded). */
void impls_setup(void);

/* --- the contended grid (proxybench_contended.c) ----------------------- */

extern double ns_per_iter;
extern volatile uint64_t shared_data[64];

/* The critical section: @iters updates of shared data (words 1..63),
 * then one count of the entry in word 0 (contended_once's check). */
static inline void cs_work(long iters)
{
	for (long k = 0; k < iters; k++)
		shared_data[1 + k % 63] += (uint64_t)k;
	shared_data[0]++;
}

void calibrate(void);

/* A contended cell's metrics (c_metric[], c_unit[] name them). */
enum { C_TPUT, C_JAIN, C_MAXMIN, C_P50, C_P99, C_P999, NC };
void contended_once(const struct impl *im, int nthreads, long cs_ns, double out[NC]);

/* --- the inversion scenario (proxybench_inversion.c) ------------------- */

extern struct scenario inv;
void inversion_once(const struct impl *im, unsigned kinds, double out[6], FILE *samples,
                    const char *label);

/* --- the workloads ----------------------------------------------------- */

void bench_uncontended(void);        /* proxybench_uncontended.c */
void bench_insn(void);
void bench_contended(void);          /* proxybench_contended.c */
void bench_verdict(void);
void bench_handoff(void);            /* proxybench_handoff.c */
void bench_inversion(void);          /* proxybench_inversion.c */
void bench_inversion_rw(void);
void bench_inversion_reverse(void);
void bench_donation_cost(void);      /* proxybench_donation.c */
void bench_rw_readmostly(void);      /* proxybench_rwlock.c */
void bench_rw_verdict(void);

#endif /* PLK_BENCH_PROXYBENCH_H */

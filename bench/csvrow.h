/* SPDX-License-Identifier: MIT */
/*
 * csvrow.h - one results.csv cell, as bench/run and bench/report.py read
 * it: benchmark,impl,threads,cs_ns,metric,median,min,max,unit.  Shared by
 * proxybench's workloads and bucketbench.c.
 */
#ifndef PLK_BENCH_CSVROW_H
#define PLK_BENCH_CSVROW_H

#include <stdio.h>
#include <stdlib.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Print one cell: the median, min and max of @n values (sorted here). */
static void row(const char *bench, const char *impl, int threads, long cs_ns,
                const char *metric, double *v, int n, const char *unit)
{
	if (n == 0)
		return;
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	printf("%s,%s,%d,%ld,%s,%.6g,%.6g,%.6g,%s\n", bench, impl, threads, cs_ns, metric,
	       v[n / 2], v[0], v[n - 1], unit);
	fflush(stdout);
}

#endif /* PLK_BENCH_CSVROW_H */

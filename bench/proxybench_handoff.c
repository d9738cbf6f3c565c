/* SPDX-License-Identifier: MIT */
/*
 * proxybench_handoff.c - handoff latency: from one thread's unlock to
 * the acquisition by another that has had time to stop spinning and
 * sleep, the median of many, for every contender.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csvrow.h"
#include "proxybench.h"

struct handoff {
	const struct impl *im;
	union lock_storage lock;
	int go, done;
	uint64_t t_unlock, t_acquired;
};

static void *handoff_waiter(void *p)
{
	struct handoff *h = p;

	for (;;) {
		int go;

		while ((go = __atomic_load_n(&h->go, __ATOMIC_ACQUIRE)) == 0)
			;
		if (go < 0)
			return NULL;
		__atomic_store_n(&h->go, 0, __ATOMIC_RELAXED);
		h->im->lock(&h->lock);
		h->t_acquired = now_ns();
		h->im->unlock(&h->lock);
		__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	}
}

/* Median of @n handoffs: unlock in one thread to acquisition in the
 * other, which has had 300 us to stop spinning and sleep. */
static double handoff_once(const struct impl *im, int n)
{
	static struct handoff h;
	double lat[512];
	pthread_t th;

	memset(&h, 0, sizeof(h));
	h.im = im;
	im->init(im, &h.lock, PROXYLOCK_DONATE_ALL);
	pthread_create(&th, NULL, handoff_waiter, &h);
	for (int i = 0; i < n; i++) {
		im->lock(&h.lock);
		__atomic_store_n(&h.done, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&h.go, 1, __ATOMIC_RELEASE);
		usleep(300);
		h.t_unlock = now_ns();
		im->unlock(&h.lock);
		while (!__atomic_load_n(&h.done, __ATOMIC_ACQUIRE))
			;
		lat[i] = (double)(h.t_acquired - h.t_unlock);
	}
	__atomic_store_n(&h.go, -1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp_d);
	return lat[n / 2];
}

void bench_handoff(void)
{
	double v[NIMPL][MAX_REPS];
	int n = cell_ms * 2 > 512 ? 512 : cell_ms * 2;

	for (int r = 0; r < reps; r++)
		for (int i = 0; i < NIMPL; i++)
			if (impls[i].available)
				v[i][r] = handoff_once(&impls[i], n);
	for (int i = 0; i < NIMPL; i++)
		if (impls[i].available)
			row("handoff", impls[i].name, 2, 0, "latency", v[i], reps, "ns");
}

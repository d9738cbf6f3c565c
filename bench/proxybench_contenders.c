/* SPDX-License-Identifier: MIT */
/*
 * proxybench_contenders.c - who competes in proxybench (proxybench.c's
 * comment lists them): impls[], each contender's lock, unlock (and
 * rdlock) through a pointer, and its init.  glibc's calls are taken from
 * libc.so.6 itself, the "preload" ones from whatever plain calls reach,
 * which is the interposer when bench/run loads it (otherwise those
 * contenders are absent).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxybench.h"
#ifdef PLK_HAVE_ABSL
#include "absladapter.h"
#endif

static int (*glibc_init)(pthread_mutex_t *, const pthread_mutexattr_t *);

static void *sym_in(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	if (!p) {
		fprintf(stderr, "proxybench: no %s\n", name);
		exit(1);
	}
	return p;
}

#define SET_FN(dst, p) memcpy(&(dst), &(p), sizeof(p))

static void init_glibc(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	pthread_mutexattr_t a;

	(void)kinds;
	pthread_mutexattr_init(&a);
	if (im->glibc_kind == 1)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	if (im->glibc_kind == 2)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	memset(s, 0, sizeof(*s));
	glibc_init(&s->pm, &a);
	pthread_mutexattr_destroy(&a);
}

static void init_proxylock(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	proxylock_mutexattr_t a;

	proxylock_mutexattr_init(&a);
	proxylock_mutexattr_setdonate(&a, strcmp(im->name, "proxylock") ? PROXYLOCK_DONATE_NONE
	                                                                   : kinds);
	proxylock_mutex_init(&s->pl, &a);
}

static void init_preload(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	pthread_mutex_init(&s->pm, NULL);  /* the interposer's */
}

static void init_fref(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	s->fr.word = FREF_FREE;
}

#ifdef PLK_HAVE_ABSL
static void init_absl(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	(void)im;
	(void)kinds;
	plk_absl_init(s);
}
#endif

struct impl impls[NALL];

int rw_kind = PROXYLOCK_RWLOCK_PREFER_READER;

/* glibc and the interposer: glibc's static initializer of that kind. */
static void init_rw_static(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	static const pthread_rwlock_t rd = PTHREAD_RWLOCK_INITIALIZER,
		wr = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

	(void)im;
	(void)kinds;
	memset(s, 0, sizeof(*s));
	s->prw = rw_kind == PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE ? wr : rd;
}

static void init_rw_proxylock(const struct impl *im, union lock_storage *s, unsigned kinds)
{
	proxylock_rwlockattr_t a;

	proxylock_rwlockattr_init(&a);
	proxylock_rwlockattr_setkind(&a, rw_kind);
	proxylock_rwlockattr_setdonate(&a, im == &impls[RW_PL] ? kinds : PROXYLOCK_DONATE_NONE);
	proxylock_rwlock_init(&s->plrw, &a);
}

static void rw_setup(void *libc)
{
	static const char *names[] = { "glibc", "proxylock-nodonate", "proxylock", "preload" };
	static const char *fns[3] = { "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
	                              "pthread_rwlock_unlock" };
	int (*prd)(proxylock_rwlock_t *) = proxylock_rwlock_rdlock;
	int (*pwr)(proxylock_rwlock_t *) = proxylock_rwlock_wrlock;
	int (*pun)(proxylock_rwlock_t *) = proxylock_rwlock_unlock;
	void *g[3], *t[3];  /* glibc's, and whoever's plain calls reach */

	for (int k = 0; k < 3; k++) {
		g[k] = sym_in(libc, fns[k]);
		t[k] = dlsym(RTLD_DEFAULT, fns[k]);
	}
	for (int i = RW_GLIBC; i < NALL; i++) {
		struct impl *im = &impls[i];

		im->name = names[i - RW_GLIBC];
		im->available = true;
		im->init = i == RW_GLIBC || i == RW_PRELOAD ? init_rw_static : init_rw_proxylock;
		if (i == RW_PL_NODONATE || i == RW_PL) {
			SET_FN(im->rdlock, prd);
			SET_FN(im->lock, pwr);
			SET_FN(im->unlock, pun);
			continue;
		}
		void **f = i == RW_GLIBC ? g : t;

		SET_FN(im->rdlock, f[0]);
		SET_FN(im->lock, f[1]);
		SET_FN(im->unlock, f[2]);
		im->available = f == g || t[0] != g[0];  /* the interposer is loaded */
	}
}

void impls_setup(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *glock = sym_in(libc, "pthread_mutex_lock"), *gunlock = sym_in(libc, "pthread_mutex_unlock");
	void *ginit = sym_in(libc, "pthread_mutex_init");
	int (*plock)(proxylock_mutex_t *) = proxylock_mutex_lock;
	int (*punlock)(proxylock_mutex_t *) = proxylock_mutex_unlock;
	void *tlock = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
	void *tunlock = dlsym(RTLD_DEFAULT, "pthread_mutex_unlock");
	static const char *names[NIMPL] = { "glibc-normal", "glibc-adaptive", "glibc-pi",
	                                    "proxylock-nodonate", "proxylock", "preload",
	                                    "absl", "futex-ref" };

	SET_FN(glibc_init, ginit);
	for (int i = 0; i < NIMPL; i++) {
		struct impl *im = &impls[i];

		im->name = names[i];
		im->available = true;
		if (i <= GLIBC_PI) {
			SET_FN(im->lock, glock);
			SET_FN(im->unlock, gunlock);
			im->init = init_glibc;
			im->glibc_kind = i;
		} else if (i == PL_NODONATE || i == PL) {
			SET_FN(im->lock, plock);
			SET_FN(im->unlock, punlock);
			im->init = init_proxylock;
		} else if (i == PRELOAD) {
			SET_FN(im->lock, tlock);
			SET_FN(im->unlock, tunlock);
			im->init = init_preload;
			im->available = tlock != glock;  /* the interposer is loaded */
		} else if (i == FUTEX_REF) {
			im->lock = fref_lock;
			im->unlock = fref_unlock;
			im->init = init_fref;
		} else {
#ifdef PLK_HAVE_ABSL
			im->lock = plk_absl_lock;
			im->unlock = plk_absl_unlock;
			im->init = init_absl;
#else
			im->available = false;  /* built without libabsl-dev */
#endif
		}
	}
	rw_setup(libc);
}

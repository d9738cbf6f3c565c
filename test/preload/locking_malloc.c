/* SPDX-License-Identifier: MIT */
/*
 * locking_malloc.c - an allocator that takes a pthread mutex around every
 * call, as jemalloc and tcmalloc do on their slower paths, but on every
 * call: preloaded before the interposer, it makes each allocation that
 * glibc's dlsym() does while the interposer looks up glibc's functions
 * call back into the interposer's pthread_mutex_lock, deterministically.
 */
#include <pthread.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define LOCKED(expr) __extension__({                    \
		pthread_mutex_lock(&lock);              \
		__typeof__(expr) r_ = (expr);           \
		pthread_mutex_unlock(&lock);            \
		r_;                                     \
	})

void *malloc(size_t n)
{
	return LOCKED(__libc_malloc(n));
}

void *calloc(size_t k, size_t n)
{
	return LOCKED(__libc_calloc(k, n));
}

void *realloc(void *p, size_t n)
{
	return LOCKED(__libc_realloc(p, n));
}

void *memalign(size_t align, size_t n)
{
	return LOCKED(__libc_memalign(align, n));
}

void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = memalign(align, n);

	if (!p)
		return 12;  /* ENOMEM */
	*out = p;
	return 0;
}

void free(void *p)
{
	pthread_mutex_lock(&lock);
	__libc_free(p);
	pthread_mutex_unlock(&lock);
}

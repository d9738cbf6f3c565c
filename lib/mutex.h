/* SPDX-License-Identifier: MIT */
/*
 * mutex.h - the lock word's encoding, shared by mutex.c (which owns it
 * and documents it at its top) and the donation engine.
 */
#ifndef PLK_MUTEX_H
#define PLK_MUTEX_H

#include <stdbool.h>
#include <stdint.h>

#include "futex.h"
#include "proxylock.h"
#include "registry.h"

#define PLK_WAITERS 0x80000000u   /* FUTEX_WAITERS */
#define PLK_TID_MASK 0x3fffffffu  /* FUTEX_TID_MASK */

#define PLK_TYPE_MASK 0x3u
#define PLK_NODONATE_SHIFT 8      /* kinds *not* lent, so zero lends all */

static inline uint32_t plk_word(const proxylock_mutex_t *m)
{
	return __atomic_load_n(&m->__word, __ATOMIC_ACQUIRE);
}

static inline int plk_type(const proxylock_mutex_t *m)
{
	return (int)(m->__flags & PLK_TYPE_MASK);
}

/**
 * plk_owner_tid - the live TID owning a word: in a fork child, the
 * forking thread's pre-fork TID names that thread under its new TID.
 */
static inline pid_t plk_owner_tid(uint32_t w)
{
	uint32_t tid = w & PLK_TID_MASK;

	if (__builtin_expect(tid != 0 && tid == plk_prefork_tid(), 0))
		return (pid_t)plk_forked_tid();
	return (pid_t)tid;
}

/** plk_owned_by_self - true if word @w names the caller as owner. */
static inline bool plk_owned_by_self(uint32_t w, uint32_t self)
{
	uint32_t tid = w & PLK_TID_MASK;

	return tid == self || (tid != 0 && tid == plk_prefork_tid() && self == plk_forked_tid());
}

#endif /* PLK_MUTEX_H */

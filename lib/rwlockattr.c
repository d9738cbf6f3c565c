/* SPDX-License-Identifier: MIT */
/*
 * rwlockattr.c - an rwlock's attributes, and the calls that make and
 * unmake an rwlock outside the protocol: init (the only reader of an
 * attribute object; it gives back the caller's read-set slot for the
 * rwlock that lived there before, plk_rw_forget_own_reads) and destroy
 * (one CAS of a free word).  The word and
 * __flags they write are rwlockword.h's.  The layout checks against
 * glibc's pthread_rwlock_t are here too: the interposer (a later phase)
 * keeps a proxylock rwlock inside the caller's pthread_rwlock_t.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "rwlockword.h"
#include "tsan.h"
#include "vgclient.h"

#define PLK_RWATTR_MAGIC 0x504c4b52u  /* "PLKR" */

/* Laid over glibc's pthread_rwlock_t (x86_64 and aarch64 alike): the
 * word on __readers, __flags on __flags (where glibc's static
 * initializers store the kind), the same size, no stricter alignment. */
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
_Static_assert(sizeof(proxylock_rwlock_t) == sizeof(pthread_rwlock_t), "size of pthread_rwlock_t");
_Static_assert(_Alignof(proxylock_rwlock_t) <= _Alignof(pthread_rwlock_t), "alignment");
_Static_assert(offsetof(proxylock_rwlock_t, __word) ==
               offsetof(pthread_rwlock_t, __data.__readers), "__word on __readers");
_Static_assert(offsetof(proxylock_rwlock_t, __flags) ==
               offsetof(pthread_rwlock_t, __data.__flags), "__flags on __flags");
#endif
_Static_assert(sizeof(proxylock_rwlock_t) == 56, "56 bytes");

/* --- attributes ------------------------------------------------------ */

int proxylock_rwlockattr_init(proxylock_rwlockattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__magic = PLK_RWATTR_MAGIC;
	attr->__kind = PROXYLOCK_RWLOCK_DEFAULT;
	attr->__donate = PROXYLOCK_DONATE_ALL;
	return 0;
}

int proxylock_rwlockattr_destroy(proxylock_rwlockattr_t *attr)
{
	if (!attr || attr->__magic != PLK_RWATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int proxylock_rwlockattr_setkind(proxylock_rwlockattr_t *attr, int kind)
{
	if (!attr || attr->__magic != PLK_RWATTR_MAGIC || kind < PROXYLOCK_RWLOCK_PREFER_READER ||
	    kind > PROXYLOCK_RWLOCK_PREFER_WRITER_NONRECURSIVE)
		return EINVAL;
	attr->__kind = (uint32_t)kind;
	return 0;
}

int proxylock_rwlockattr_getkind(const proxylock_rwlockattr_t *attr, int *kind)
{
	if (!attr || attr->__magic != PLK_RWATTR_MAGIC || !kind)
		return EINVAL;
	*kind = (int)attr->__kind;
	return 0;
}

int proxylock_rwlockattr_setdonate(proxylock_rwlockattr_t *attr, unsigned kinds)
{
	if (!attr || attr->__magic != PLK_RWATTR_MAGIC || (kinds & ~PROXYLOCK_DONATE_ALL))
		return EINVAL;
	attr->__donate = kinds;
	return 0;
}

int proxylock_rwlockattr_getdonate(const proxylock_rwlockattr_t *attr, unsigned *kinds)
{
	if (!attr || attr->__magic != PLK_RWATTR_MAGIC || !kinds)
		return EINVAL;
	*kinds = attr->__donate;
	return 0;
}

/* --- init, destroy --------------------------------------------------- */

int proxylock_rwlock_init(proxylock_rwlock_t *rw, const proxylock_rwlockattr_t *attr)
{
	uint32_t kind = PROXYLOCK_RWLOCK_DEFAULT, donate = PROXYLOCK_DONATE_ALL;

	if (!rw)
		return EINVAL;
	if (attr) {
		if (attr->__magic != PLK_RWATTR_MAGIC)
			return EINVAL;
		kind = attr->__kind & PLK_RW_KIND_MASK;
		donate = attr->__donate & PROXYLOCK_DONATE_ALL;
	}
	plk_rw_forget_own_reads(rw);  /* new for the caller too (rwlock.c) */
	*rw = (proxylock_rwlock_t)PROXYLOCK_RWLOCK_INITIALIZER;
	rw->__flags = kind | ((~donate & PROXYLOCK_DONATE_ALL) << PLK_NODONATE_SHIFT);
	plk_tsan_rw_create(rw);
	plk_vg(plk_vg_rw_create(rw));
	return 0;
}

/*
 * Free and nobody queued (a queue sets PLK_RW_WAITERS, RW1): one CAS to
 * the destroyed word, which every fast path refuses.
 */
int proxylock_rwlock_destroy(proxylock_rwlock_t *rw)
{
	uint32_t w;

	if (!rw || !plk_rw_flags_valid(rw) || (w = plk_rw_word(rw)) == PLK_RW_DESTROYED)
		return EINVAL;
	if (w != 0 || !plk_rw_cas(rw, 0, PLK_RW_DESTROYED))
		return EBUSY;
	plk_tsan_rw_destroy(rw);
	plk_vg(plk_vg_rw_destroy(rw));
	return 0;
}

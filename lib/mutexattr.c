/* SPDX-License-Identifier: MIT */
/*
 * mutexattr.c - a mutex's attributes, and the calls that make, unmake
 * and read a mutex outside the lock protocol: init (the only reader of
 * an attribute object, so PLK_ATTR_MAGIC stays here), destroy (init's
 * mirror: one CAS of a free word, no queue, no bucket) and owner (one
 * read of the word).  The word and __flags they write are lockword.h's.
 */
#include <errno.h>
#include <stdint.h>

#include "lockword.h"
#include "tsan.h"
#include "vgclient.h"

#define PLK_ATTR_MAGIC 0x504c4b41u  /* "PLKA" */

/* --- attributes ------------------------------------------------------ */

int proxylock_mutexattr_init(proxylock_mutexattr_t *attr)
{
	if (!attr)
		return EINVAL;
	attr->__magic = PLK_ATTR_MAGIC;
	attr->__type = PROXYLOCK_MUTEX_DEFAULT;
	attr->__donate = PROXYLOCK_DONATE_ALL;
	return 0;
}

int proxylock_mutexattr_destroy(proxylock_mutexattr_t *attr)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC)
		return EINVAL;
	attr->__magic = 0;
	return 0;
}

int proxylock_mutexattr_settype(proxylock_mutexattr_t *attr, int type)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC ||
	    type < PROXYLOCK_MUTEX_NORMAL || type > PROXYLOCK_MUTEX_ADAPTIVE)
		return EINVAL;
	attr->__type = (attr->__type & PLK_ROBUST) | (uint32_t)type;
	return 0;
}

int proxylock_mutexattr_gettype(const proxylock_mutexattr_t *attr, int *type)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || !type)
		return EINVAL;
	*type = (int)(attr->__type & PLK_TYPE_MASK);
	return 0;
}

int proxylock_mutexattr_setrobust(proxylock_mutexattr_t *attr, int robust)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC ||
	    (robust != PROXYLOCK_MUTEX_STALLED && robust != PROXYLOCK_MUTEX_ROBUST))
		return EINVAL;
	attr->__type = (attr->__type & PLK_TYPE_MASK) | (robust ? PLK_ROBUST : 0);
	return 0;
}

int proxylock_mutexattr_getrobust(const proxylock_mutexattr_t *attr, int *robust)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || !robust)
		return EINVAL;
	*robust = (attr->__type & PLK_ROBUST) ? PROXYLOCK_MUTEX_ROBUST : PROXYLOCK_MUTEX_STALLED;
	return 0;
}

int proxylock_mutexattr_setdonate(proxylock_mutexattr_t *attr, unsigned kinds)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || (kinds & ~PROXYLOCK_DONATE_ALL))
		return EINVAL;
	attr->__donate = kinds;
	return 0;
}

int proxylock_mutexattr_getdonate(const proxylock_mutexattr_t *attr, unsigned *kinds)
{
	if (!attr || attr->__magic != PLK_ATTR_MAGIC || !kinds)
		return EINVAL;
	*kinds = attr->__donate;
	return 0;
}

/* --- init, destroy, owner -------------------------------------------- */

int proxylock_mutex_init(proxylock_mutex_t *m, const proxylock_mutexattr_t *attr)
{
	uint32_t type = PROXYLOCK_MUTEX_DEFAULT, donate = PROXYLOCK_DONATE_ALL;

	if (!m)
		return EINVAL;
	if (attr) {
		if (attr->__magic != PLK_ATTR_MAGIC)
			return EINVAL;
		type = attr->__type & (PLK_TYPE_MASK | PLK_ROBUST);
		donate = attr->__donate & PROXYLOCK_DONATE_ALL;
	}
	*m = (proxylock_mutex_t)PROXYLOCK_MUTEX_INITIALIZER;
	m->__flags = type | ((~donate & PROXYLOCK_DONATE_ALL) << PLK_NODONATE_SHIFT);
	plk_tsan_create(m);
	plk_vg(plk_vg_mutex_create(m, plk_type(m) == PROXYLOCK_MUTEX_RECURSIVE));
	return 0;
}

/* A NOTRECOVERABLE mutex is free in POSIX's sense: destroy is all it allows. */
int proxylock_mutex_destroy(proxylock_mutex_t *m)
{
	uint32_t w;

	if (!m || !plk_flags_valid(m) || (w = plk_word(m)) == PLK_TID_DESTROYED)
		return EINVAL;
	if ((w != 0 && w != PLK_TID_NOTRECOVERABLE) || plk_mutex_bound(m) != 0 ||
	    !plk_cas_word(m, w, PLK_TID_DESTROYED))
		return EBUSY;  /* held, or a condvar waiter is bound to it */
	plk_tsan_destroy(m);
	plk_vg(plk_vg_mutex_destroy(m));
	return 0;
}

pid_t proxylock_mutex_owner(const proxylock_mutex_t *m)
{
	return m ? plk_owner_tid(plk_word(m)) : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * vgclient.c - the Valgrind client requests behind vgclient.h.
 * Helgrind has mutex requests; DRD only reader-writer lock annotations,
 * used here as a writer lock, which is what a mutex is to it, and as
 * both kinds of hold for an rwlock (Helgrind's are its pthread_rwlock
 * wrappers' requests).  Each tool
 * also takes the other's rwlock requests (they share numbers), and would
 * then see one lock twice, so the requests are made for the tool found
 * at load: DRD answers its thread-ID request, Helgrind does not.  drd.h
 * is made to be included after helgrind.h (it steps aside for the macros
 * both define); the DRD requests are spelled out for that reason.
 */
#include <valgrind/helgrind.h>
#include <valgrind/drd.h>

#include "vgclient.h"

bool plk_vg_on;
static bool under_drd;

static __attribute__((constructor)) void vg_detect(void)
{
	plk_vg_on = RUNNING_ON_VALGRIND != 0;
	under_drd = plk_vg_on && DRD_GET_VALGRIND_THREADID != 0;
}

#define DRD_REQ(req, a, b) \
	VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__DRD_ANNOTATE_RWLOCK_##req, (a), (b), 0, 0, 0)

void plk_vg_mutex_create(const void *m, bool recursive)
{
	if (under_drd)
		DRD_REQ(CREATE, m, 0);
	else
		VALGRIND_HG_MUTEX_INIT_POST(m, recursive);
}

void plk_vg_mutex_destroy(const void *m)
{
	if (under_drd)
		DRD_REQ(DESTROY, m, 0);
	else
		VALGRIND_HG_MUTEX_DESTROY_PRE(m);
}

void plk_vg_lock_pre(const void *m, bool trylock)
{
	if (!under_drd)
		VALGRIND_HG_MUTEX_LOCK_PRE(m, trylock);
}

void plk_vg_lock_post(const void *m)
{
	if (under_drd)
		DRD_REQ(ACQUIRED, m, 1);
	else
		VALGRIND_HG_MUTEX_LOCK_POST(m);
}

void plk_vg_unlock_pre(const void *m)
{
	if (under_drd)
		DRD_REQ(RELEASED, m, 1);
	else
		VALGRIND_HG_MUTEX_UNLOCK_PRE(m);
}

void plk_vg_unlock_post(const void *m)
{
	if (!under_drd)
		VALGRIND_HG_MUTEX_UNLOCK_POST(m);
}

/* Helgrind's pthread_rwlock requests, as its own wrappers make them. */
void plk_vg_rw_create(const void *rw)
{
	if (under_drd)
		DRD_REQ(CREATE, rw, 0);
	else
		DO_CREQ_v_W(_VG_USERREQ__HG_PTHREAD_RWLOCK_INIT_POST, const void *, rw);
}

void plk_vg_rw_destroy(const void *rw)
{
	if (under_drd)
		DRD_REQ(DESTROY, rw, 0);
	else
		DO_CREQ_v_W(_VG_USERREQ__HG_PTHREAD_RWLOCK_DESTROY_PRE, const void *, rw);
}

void plk_vg_rw_lock_pre(const void *rw, bool write, bool trylock)
{
	if (!under_drd)
		DO_CREQ_v_WWW(_VG_USERREQ__HG_PTHREAD_RWLOCK_LOCK_PRE, const void *, rw,
		              long, write, long, trylock);
}

void plk_vg_rw_lock_post(const void *rw, bool write, bool taken)
{
	if (under_drd) {
		if (taken)
			DRD_REQ(ACQUIRED, rw, write);
	} else {
		DO_CREQ_v_WWW(_VG_USERREQ__HG_PTHREAD_RWLOCK_LOCK_POST, const void *, rw,
		              long, write, long, taken);
	}
}

void plk_vg_rw_unlock_pre(const void *rw, bool write)
{
	if (under_drd)
		DRD_REQ(RELEASED, rw, write);
	else
		DO_CREQ_v_W(_VG_USERREQ__HG_PTHREAD_RWLOCK_UNLOCK_PRE, const void *, rw);
}

void plk_vg_rw_unlock_post(const void *rw)
{
	if (!under_drd)
		DO_CREQ_v_W(_VG_USERREQ__HG_PTHREAD_RWLOCK_UNLOCK_POST, const void *, rw);
}

/* SPDX-License-Identifier: MIT */
/*
 * vgclient.h - Valgrind client requests, so that Helgrind and DRD know a
 * proxylock as a mutex (what they know of pthread mutexes by wrapping
 * them), and a proxylock rwlock as a reader-writer lock.  Built in when
 * <valgrind/helgrind.h> and <valgrind/drd.h> are there (Debian:
 * valgrind) unless -Dvalgrind=disabled; each annotation
 * point then costs the public calls one load and an untaken branch on
 * plk_vg_on, which is false unless the process runs under Valgrind.  The
 * requests themselves are out of line in vgclient.c.
 *
 * The library's own synchronisation (atomics, futexes) is invisible to
 * both tools: lib/proxylock.supp, installed in share/proxylock by meson
 * install, suppresses what they would report inside it.
 */
#ifndef PLK_VGCLIENT_H
#define PLK_VGCLIENT_H

#include <stdbool.h>

#include "futex.h"

#if PLK_HAVE_VALGRIND
/* RUNNING_ON_VALGRIND, read once when the library is loaded. */
PLK_HIDDEN extern bool plk_vg_on;

/** plk_vg_mutex_create - @m was initialised (@recursive: may relock). */
PLK_HIDDEN void plk_vg_mutex_create(const void *m, bool recursive);
/** plk_vg_mutex_destroy - @m is about to be destroyed. */
PLK_HIDDEN void plk_vg_mutex_destroy(const void *m);
/** plk_vg_lock_pre - about to lock @m (@trylock: may return without it). */
PLK_HIDDEN void plk_vg_lock_pre(const void *m, bool trylock);
/** plk_vg_lock_post - @m is the caller's now. */
PLK_HIDDEN void plk_vg_lock_post(const void *m);
/** plk_vg_unlock_pre - about to release @m. */
PLK_HIDDEN void plk_vg_unlock_pre(const void *m);
/** plk_vg_unlock_post - @m was released. */
PLK_HIDDEN void plk_vg_unlock_post(const void *m);

/* The same for an rwlock, @write: a write hold, else a read hold. */
/** plk_vg_rw_create - @rw was initialised. */
PLK_HIDDEN void plk_vg_rw_create(const void *rw);
/** plk_vg_rw_destroy - @rw was destroyed. */
PLK_HIDDEN void plk_vg_rw_destroy(const void *rw);
/** plk_vg_rw_lock_pre - about to lock @rw (@trylock: may return without it). */
PLK_HIDDEN void plk_vg_rw_lock_pre(const void *rw, bool write, bool trylock);
/** plk_vg_rw_lock_post - a hold of @rw is the caller's now (@taken false: it is not). */
PLK_HIDDEN void plk_vg_rw_lock_post(const void *rw, bool write, bool taken);
/** plk_vg_rw_unlock_pre - about to release a hold of @rw. */
PLK_HIDDEN void plk_vg_rw_unlock_pre(const void *rw, bool write);
/** plk_vg_rw_unlock_post - the hold of @rw was released. */
PLK_HIDDEN void plk_vg_rw_unlock_post(const void *rw);

#define plk_vg_active() __builtin_expect(plk_vg_on, 0)
#else
#define plk_vg_active() 0
#define plk_vg_mutex_create(m, recursive) ((void)(m))
#define plk_vg_mutex_destroy(m) ((void)(m))
#define plk_vg_lock_pre(m, trylock) ((void)(m))
#define plk_vg_lock_post(m) ((void)(m))
#define plk_vg_unlock_pre(m) ((void)(m))
#define plk_vg_unlock_post(m) ((void)(m))
#define plk_vg_rw_create(rw) ((void)(rw))
#define plk_vg_rw_destroy(rw) ((void)(rw))
#define plk_vg_rw_lock_pre(rw, write, trylock) ((void)(rw))
#define plk_vg_rw_lock_post(rw, write, taken) ((void)(rw))
#define plk_vg_rw_unlock_pre(rw, write) ((void)(rw))
#define plk_vg_rw_unlock_post(rw) ((void)(rw))
#endif

/* Make @call, one of the above, only under Valgrind. */
#define plk_vg(call) do { if (plk_vg_active()) call; } while (0)

#endif /* PLK_VGCLIENT_H */

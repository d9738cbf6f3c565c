/* SPDX-License-Identifier: MIT */
/*
 * lendto.h - explicit lends (proxylock_lend_begin/end, proxylock.h); the
 * design is at the top of lendto.c.
 */
#ifndef PLK_LENDTO_H
#define PLK_LENDTO_H

#include "futex.h"

/** plk_lendto_fork_child - the fork child: only the forking thread's
 * lends stay begun. */
PLK_HIDDEN void plk_lendto_fork_child(void);

#endif /* PLK_LENDTO_H */

/* SPDX-License-Identifier: MIT */
/*
 * lendto.h - explicit lends (proxylock_lend_begin/end, proxylock.h); the
 * design is at the top of lendto.c.
 */
#ifndef PLK_LENDTO_H
#define PLK_LENDTO_H

#include "futex.h"

/** plk_lendto_fork_init - at load: mark the table of lends begun
 * MADV_WIPEONFORK if the kernel can.  plk_lendto_fork_child - empty it
 * if it could not: a fork child has no lend begun (lendto.c, X3). */
PLK_HIDDEN void plk_lendto_fork_init(void);
PLK_HIDDEN void plk_lendto_fork_child(void);

#endif /* PLK_LENDTO_H */

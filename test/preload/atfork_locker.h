/* SPDX-License-Identifier: MIT */
/* atfork_locker.h - a library whose fork prepare handler takes a mutex
 * its callers contend for (atfork_locker.c). */
#ifndef ATFORK_LOCKER_H
#define ATFORK_LOCKER_H

/** atfork_locker_work - take the library's mutex, touch what it guards,
 * release it. */
void atfork_locker_work(void);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * tsan.h - PLK_TSAN: 1 in a ThreadSanitizer build, whose interface the
 * mutex annotations (mutex.h) and the condvar's (cond.c) use; 0 else.
 * Everything else the library synchronises with is atomics and futexes,
 * which TSan sees or needs no help with.
 */
#ifndef PLK_TSAN_H
#define PLK_TSAN_H

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define PLK_TSAN 1
#else
#define PLK_TSAN 0
#endif

#endif /* PLK_TSAN_H */

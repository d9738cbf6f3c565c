/* SPDX-License-Identifier: MIT */
/*
 * tsan.h - ThreadSanitizer annotations for synchronisation TSan cannot
 * see (the mutex annotations themselves are in mutex.h).  liburcu is not
 * instrumented: publishing a record with
 * cds_lfht_add_unique (rcu_assign_pointer) and freeing it after a grace
 * period (call_rcu) order memory in code TSan never observes.  These
 * release/acquire pairs tell it what that code guarantees; they compile
 * to nothing in other builds.
 */
#ifndef PLK_TSAN_H
#define PLK_TSAN_H

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define PLK_TSAN 1
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define plk_tsan_acquire(p) __tsan_acquire((void *)(p))
#define plk_tsan_release(p) __tsan_release((void *)(p))
#else
#define PLK_TSAN 0
#define plk_tsan_acquire(p) ((void)(p))
#define plk_tsan_release(p) ((void)(p))
#endif

#endif /* PLK_TSAN_H */

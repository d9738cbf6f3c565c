/* SPDX-License-Identifier: MIT */
/*
 * absladapter.h - Abseil's absl::Mutex behind a C interface, for
 * proxybench's "absl" contender (absladapter.cc; built only when meson
 * finds absl_synchronization, Debian libabsl-dev, and a C++ compiler,
 * which defines PLK_HAVE_ABSL).
 */
#ifndef PLK_BENCH_ABSLADAPTER_H
#define PLK_BENCH_ABSLADAPTER_H

#ifdef __cplusplus
extern "C" {
#endif

/* plk_absl_init - construct an absl::Mutex in @storage (64 bytes, 64-byte
 * aligned; any earlier one there is abandoned, never destroyed). */
void plk_absl_init(void *storage);
/* plk_absl_lock - absl::Mutex::Lock on the mutex in @storage; returns 0. */
int plk_absl_lock(void *storage);
/* plk_absl_unlock - absl::Mutex::Unlock on the mutex in @storage; returns 0. */
int plk_absl_unlock(void *storage);

#ifdef __cplusplus
}
#endif

#endif /* PLK_BENCH_ABSLADAPTER_H */

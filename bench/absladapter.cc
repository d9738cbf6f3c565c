// SPDX-License-Identifier: MIT
/*
 * absladapter.cc - absl::Mutex for proxybench (see absladapter.h).
 *
 * The mutex is used as a program would use it, with one setting: the
 * deadlock detector is off (absl::OnDeadlockCycle::kIgnore), as in an
 * NDEBUG build of Abseil, because Debian's library may be built without
 * NDEBUG and the detector's graph bookkeeping on every Lock() is a debug
 * aid, not the mutex.
 */
#include "absladapter.h"

#include <new>

#include <absl/synchronization/mutex.h>

static_assert(sizeof(absl::Mutex) <= 64, "absl::Mutex must fit proxybench's lock storage");

void plk_absl_init(void *storage)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
	new (storage) absl::Mutex();
}

int plk_absl_lock(void *storage)
{
	static_cast<absl::Mutex *>(storage)->Lock();
	return 0;
}

int plk_absl_unlock(void *storage)
{
	static_cast<absl::Mutex *>(storage)->Unlock();
	return 0;
}

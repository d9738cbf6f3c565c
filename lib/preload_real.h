/* SPDX-License-Identifier: MIT */
/*
 * preload_real.h - glibc's own functions, for the LD_PRELOAD interposer's
 * files (preload_real.c finds them: dlsym(RTLD_NEXT), once).
 * mutex_clocklock, cond_clockwait, sem_clockwait and the
 * rwlock_clock*lock pair are NULL before glibc 2.30; the plk_real_*
 * calls below make the clocked calls from the ones such a glibc has.
 */
#ifndef PLK_PRELOAD_REAL_H
#define PLK_PRELOAD_REAL_H

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>

#include "futex.h"

struct plk_real {
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_destroy)(pthread_mutex_t *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*cond_destroy)(pthread_cond_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
	                      const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
	int (*sched_setaffinity)(pid_t, size_t, const cpu_set_t *);
	int (*sched_getaffinity)(pid_t, size_t, cpu_set_t *);
	int (*pthread_setaffinity_np)(pthread_t, size_t, const cpu_set_t *);
	int (*pthread_getaffinity_np)(pthread_t, size_t, cpu_set_t *);
	int (*sched_setscheduler)(pid_t, int, const struct sched_param *);
	int (*sched_setparam)(pid_t, const struct sched_param *);
	int (*pthread_setschedparam)(pthread_t, int, const struct sched_param *);
	int (*pthread_setschedprio)(pthread_t, int);
	int (*setpriority)(int, id_t, int);
	int (*getpriority)(int, id_t);
	/* Reader-writer locks (process-shared ones stay glibc's). */
	int (*rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	int (*rwlock_destroy)(pthread_rwlock_t *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
	/* Semaphores (glibc keeps them; preload_sem.c only lends). */
	int (*sem_wait)(sem_t *);
	int (*sem_trywait)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
	int (*sem_post)(sem_t *);
	int (*sem_init)(sem_t *, int, unsigned);
	int (*sem_destroy)(sem_t *);
};

/** plk_real - glibc's functions, resolved on first use. */
PLK_HIDDEN const struct plk_real *plk_real(void);

/* The clocked calls, on any glibc (before 2.30 made from the timed ones;
 * EINVAL for a clock such a glibc cannot wait on, as glibc says). */
PLK_HIDDEN int plk_real_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock,
                                        const struct timespec *abstime);
PLK_HIDDEN int plk_real_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *pm, clockid_t clock,
                                       const struct timespec *abstime);
/* @write: pthread_rwlock_clockwrlock's, else clockrdlock's. */
PLK_HIDDEN int plk_real_rwlock_clocklock(pthread_rwlock_t *prw, bool write, clockid_t clock,
                                         const struct timespec *abstime);

#endif /* PLK_PRELOAD_REAL_H */

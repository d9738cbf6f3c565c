/* SPDX-License-Identifier: MIT */
/*
 * config.c - environment settings (see config.h), read at first use.
 * Every PROXYLOCK_* variable is read with secure_getenv: none in
 * secure-execution mode.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proxylock.h"

static struct plk_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static unsigned parse_donate(const char *s)
{
	static const struct { const char *name; unsigned kind; } names[] = {
		{ "uclamp", PROXYLOCK_DONATE_UCLAMP }, { "affinity", PROXYLOCK_DONATE_AFFINITY },
		{ "nice", PROXYLOCK_DONATE_NICE },     { "rt", PROXYLOCK_DONATE_RT },
		{ "all", PROXYLOCK_DONATE_ALL },       { "none", PROXYLOCK_DONATE_NONE },
	};
	unsigned kinds = 0;

	while (*s) {
		size_t len = strcspn(s, ",");

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == len && strncmp(s, names[i].name, len) == 0)
				kinds |= names[i].kind;
		s += len + (s[len] == ',');
	}
	return kinds;
}

const char *plk_env(const char *name)
{
	return secure_getenv(name);
}

/*
 * PROXYLOCK_HANDOFF_US: decimal microseconds.  A value whose nanoseconds
 * pass INT64_MAX (about 292 years) is clamped to it: every handoff test
 * (plk_waited_bound) is signed, and the clamped bound, like any bound
 * longer than the wait, means "never handed: woken to compete".  Anything
 * but digits (empty, a sign, trailing text) keeps the default.
 */
static uint64_t parse_handoff_ns(const char *s, uint64_t dflt)
{
	const uint64_t max_us = (uint64_t)INT64_MAX / 1000;
	uint64_t us = 0;

	if (!*s)
		return dflt;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return dflt;
		if (us <= max_us)  /* past it, stays past it: no wrap */
			us = us * 10 + (uint64_t)(*s - '0');
	}
	return us > max_us ? (uint64_t)INT64_MAX : us * 1000;
}

static void config_read(void)
{
	const char *s;

	config.donate = PROXYLOCK_DONATE_ALL;
	config.affinity = PROXYLOCK_AFFINITY_WAITERS;
	config.handoff_ns = 500 * 1000;
	if ((s = plk_env("PROXYLOCK_DONATE")) != NULL)
		config.donate = parse_donate(s);
	if ((s = plk_env("PROXYLOCK_AFFINITY")) != NULL)
		config.affinity = strcmp(s, "union") == 0 ? PROXYLOCK_AFFINITY_UNION
		                : strcmp(s, "node") == 0  ? PROXYLOCK_AFFINITY_NODE
		                                          : PROXYLOCK_AFFINITY_WAITERS;
	if ((s = plk_env("PROXYLOCK_HANDOFF_US")) != NULL)
		config.handoff_ns = parse_handoff_ns(s, config.handoff_ns);
	s = plk_env("PROXYLOCK_STATS");
	config.stats = s && *s && strcmp(s, "0") != 0;
	if ((s = plk_env("PROXYLOCK_PI")) != NULL)
		config.pi = strcmp(s, "proxy") == 0    ? PLK_PI_PROXY
		          : strcmp(s, "kernel") == 0   ? PLK_PI_KERNEL
		                                       : PLK_PI_AUTO;
}

static bool config_ready;  /* set (release) once config_read has run */

static void config_read_once(void)
{
	config_read();
	__atomic_store_n(&config_ready, true, __ATOMIC_RELEASE);
}

/* Read once; afterwards one acquire load (no pthread_once call, so it is
 * cheap under internal locks and makes no futex call there). */
struct plk_config *plk_config(void)
{
	if (!__atomic_load_n(&config_ready, __ATOMIC_ACQUIRE))
		pthread_once(&config_once, config_read_once);
	return &config;
}

int proxylock_affinity_policy_set(int policy)
{
	if (policy < PROXYLOCK_AFFINITY_WAITERS || policy > PROXYLOCK_AFFINITY_NODE)
		return EINVAL;
	__atomic_store_n(&plk_config()->affinity, policy, __ATOMIC_RELAXED);
	return 0;
}

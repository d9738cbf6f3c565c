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
		config.handoff_ns = strtoull(s, NULL, 10) * 1000;
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

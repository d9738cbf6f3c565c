/* SPDX-License-Identifier: MIT */
/*
 * test_settings.c - every PROXYLOCK_* variable is read strictly (issue
 * 34): a value its parser does not take changes nothing (the default is
 * kept) and is said in one line on stderr that names the variable and
 * what it takes; a value it takes is read as meant, silently.  Each case
 * runs in a process of its own (check forks), whose first plk_config()
 * call reads the environment set just before.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proxylock.h"

static char said[2048];  /* what the settings wrote on stderr */

/* The settings as read with @var=@value, stderr caught into said[]. */
static const struct plk_config *read_with(const char *var, const char *value)
{
	char path[] = "/tmp/plk-settings-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	const struct plk_config *c;
	ssize_t n;

	ck_assert(fd >= 0 && saved >= 0);
	unlink(path);
	ck_assert_int_eq(setenv(var, value, 1), 0);
	dup2(fd, 2);
	c = plk_config();
	dup2(saved, 2);
	close(saved);
	n = pread(fd, said, sizeof(said) - 1, 0);
	said[n > 0 ? n : 0] = 0;
	close(fd);
	return c;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Values no parser takes: each keeps every setting at its default. */
static const struct { const char *var, *value, *takes; } refused[] = {
	{ "PROXYLOCK_DONATE", "garbage", "uclamp, affinity, nice, rt; or all; or none" },
	{ "PROXYLOCK_DONATE", "NICE", "uclamp, affinity, nice, rt" },
	{ "PROXYLOCK_DONATE", "", "uclamp, affinity, nice, rt" },
	{ "PROXYLOCK_DONATE", "nice,bogus", "uclamp, affinity, nice, rt" },
	{ "PROXYLOCK_DONATE", "nice,", "uclamp, affinity, nice, rt" },
	{ "PROXYLOCK_DONATE", "none,rt", "uclamp, affinity, nice, rt" },
	{ "PROXYLOCK_AFFINITY", "Union", "waiters, union or node" },
	{ "PROXYLOCK_AFFINITY", "", "waiters, union or node" },
	{ "PROXYLOCK_HANDOFF_US", "abc", "microseconds" },
	{ "PROXYLOCK_HANDOFF_US", "-1", "microseconds" },
	{ "PROXYLOCK_HANDOFF_US", "", "microseconds" },
	{ "PROXYLOCK_HANDOFF_US", "500us", "microseconds" },
	{ "PROXYLOCK_HANDOFF_US", " 5", "microseconds" },
	{ "PROXYLOCK_STATS", "yes", "0 (or empty), 1 or all" },
	{ "PROXYLOCK_STATS", "2", "0 (or empty), 1 or all" },
	{ "PROXYLOCK_PI", "Kernel", "auto, proxy or kernel" },
	{ "PROXYLOCK_PI", "", "auto, proxy or kernel" },
};

/* What the old code left of these: the defaults are all, waiters, 500 us,
 * off, auto. */
static void assert_defaults(const struct plk_config *c, const char *what)
{
	ck_assert_msg(c->donate == PROXYLOCK_DONATE_ALL, "%s: donate 0x%x, not the default (all)",
	              what, c->donate);
	ck_assert_msg(c->affinity == PROXYLOCK_AFFINITY_WAITERS, "%s: affinity %d", what, c->affinity);
	ck_assert_msg(c->handoff_ns == 500000, "%s: handoff %llu ns", what,
	              (unsigned long long)c->handoff_ns);
	ck_assert_msg(!c->stats, "%s: stats on", what);
	ck_assert_msg(c->pi == PLK_PI_AUTO, "%s: pi %d", what, c->pi);
}

START_TEST(a_value_no_parser_takes_keeps_the_default_and_says_so_in_one_line)
{
	const struct plk_config *c = read_with(refused[_i].var, refused[_i].value);
	char what[128], named[160];

	snprintf(what, sizeof(what), "%s=\"%s\"", refused[_i].var, refused[_i].value);
	assert_defaults(c, what);
	snprintf(named, sizeof(named), "proxylock: %s", what);
	ck_assert_msg(strstr(said, named) && strstr(said, refused[_i].takes) &&
	              strstr(said, "default is kept"),
	              "%s: stderr does not name it, what it takes and the default kept: '%s'",
	              what, said);
	ck_assert_msg(lines(said) == 1, "%s: %d lines on stderr, not one: '%s'", what, lines(said),
	              said);
}
END_TEST

/* Values taken: read as meant, nothing said. */
START_TEST(donate_takes_exactly_the_kinds_listed)
{
	const struct plk_config *c = read_with("PROXYLOCK_DONATE", "nice,rt");

	ck_assert_uint_eq(c->donate, PROXYLOCK_DONATE_NICE | PROXYLOCK_DONATE_RT);
	ck_assert_msg(!said[0], "said: %s", said);
}
END_TEST

START_TEST(donate_none_lends_nothing)
{
	const struct plk_config *c = read_with("PROXYLOCK_DONATE", "none");

	ck_assert_uint_eq(c->donate, PROXYLOCK_DONATE_NONE);
	ck_assert_msg(!said[0], "said: %s", said);
}
END_TEST

START_TEST(a_handoff_past_int64_nanoseconds_is_clamped_to_never)
{
	const struct plk_config *c = read_with("PROXYLOCK_HANDOFF_US", "9300000000000000");

	ck_assert_uint_eq(c->handoff_ns, (uint64_t)INT64_MAX);
	ck_assert_msg(!said[0], "said: %s", said);
}
END_TEST

START_TEST(an_empty_stats_is_off_as_unset)
{
	const struct plk_config *c = read_with("PROXYLOCK_STATS", "");

	ck_assert(!c->stats);
	ck_assert_msg(!said[0], "said: %s", said);
}
END_TEST

START_TEST(stats_all_reports_even_an_uncontended_process)
{
	const struct plk_config *c = read_with("PROXYLOCK_STATS", "all");

	ck_assert(c->stats && c->stats_all);
	ck_assert_msg(!said[0], "said: %s", said);
}
END_TEST

/* The report's settings (new in issue 34). */
static const struct { const char *var, *value; } report_refused[] = {
	{ "PROXYLOCK_STATS_SORT", "time" },   { "PROXYLOCK_STATS_SORT", "Wait" },
	{ "PROXYLOCK_STATS_TOP", "0" },       { "PROXYLOCK_STATS_TOP", "ten" },
	{ "PROXYLOCK_STATS_TOP", "-3" },      { "PROXYLOCK_STATS_SIGNAL", "KILL" },
	{ "PROXYLOCK_STATS_SIGNAL", "INT" },  { "PROXYLOCK_STATS_SIGNAL", "SIGSTOP" },
	{ "PROXYLOCK_STATS_SIGNAL", "9" },    { "PROXYLOCK_STATS_SIGNAL", "RTMIN+99" },
	/* Signals a terminal, the C library or a program's common use sends
	 * on its own (the review of issue 34): */
	{ "PROXYLOCK_STATS_SIGNAL", "HUP" },  { "PROXYLOCK_STATS_SIGNAL", "SIGQUIT" },
	{ "PROXYLOCK_STATS_SIGNAL", "WINCH" }, { "PROXYLOCK_STATS_SIGNAL", "URG" },
	{ "PROXYLOCK_STATS_SIGNAL", "1" },    { "PROXYLOCK_STATS_SIGNAL", "28" },
	/* a real-time name past the real-time range: RTMAX-52 is USR2's
	 * number, RTMAX-36 WINCH's, RTMIN+31 past RTMAX */
	{ "PROXYLOCK_STATS_SIGNAL", "RTMAX-52" }, { "PROXYLOCK_STATS_SIGNAL", "RTMAX-36" },
	{ "PROXYLOCK_STATS_SIGNAL", "RTMAX-31" }, { "PROXYLOCK_STATS_SIGNAL", "RTMIN+31" },
	{ "PROXYLOCK_STATS_FILE", "" },       { "PROXYLOCK_STATS_PID", "0" },
	{ "PROXYLOCK_STATS_PID", "-1" },      { "PROXYLOCK_STATS_PID", "12a" },
};

START_TEST(a_report_setting_no_parser_takes_keeps_the_default_and_says_so)
{
	struct plk_config d;
	const struct plk_config *c = read_with(report_refused[_i].var, report_refused[_i].value);

	plk_config_defaults(&d);
	ck_assert_msg(c->stats_sort == d.stats_sort && c->stats_top == d.stats_top &&
	              c->stats_signal == d.stats_signal && !c->stats_file[0] && !c->stats_pid,
	              "%s=%s changed a setting", report_refused[_i].var, report_refused[_i].value);
	ck_assert_msg(strstr(said, report_refused[_i].var) && lines(said) == 1,
	              "%s=%s: '%s'", report_refused[_i].var, report_refused[_i].value, said);
}
END_TEST

START_TEST(report_settings_are_read_as_meant)
{
	struct plk_config c;

	plk_config_defaults(&c);
	ck_assert_int_eq(c.stats_top, 10);
	ck_assert_int_eq(c.stats_sort, PLK_SORT_CONTENDED);
	ck_assert_ptr_null(plk_setting_parse("STATS_SORT", "held", &c));
	ck_assert_int_eq(c.stats_sort, PLK_SORT_HELD);
	ck_assert_ptr_null(plk_setting_parse("STATS_TOP", "25", &c));
	ck_assert_int_eq(c.stats_top, 25);
	ck_assert_ptr_null(plk_setting_parse("STATS_SIGNAL", "SIGUSR2", &c));
	ck_assert_int_eq(c.stats_signal, SIGUSR2);
	ck_assert_ptr_null(plk_setting_parse("STATS_SIGNAL", "RTMIN+3", &c));
	ck_assert_int_eq(c.stats_signal, SIGRTMIN + 3);
	ck_assert_ptr_null(plk_setting_parse("STATS_SIGNAL", "RTMAX-30", &c));
	ck_assert_int_eq(c.stats_signal, SIGRTMIN);
	ck_assert_ptr_null(plk_setting_parse("STATS_SIGNAL", "RTMIN+30", &c));
	ck_assert_int_eq(c.stats_signal, SIGRTMAX);
	ck_assert_ptr_null(plk_setting_parse("STATS_SIGNAL", "10", &c));
	ck_assert_int_eq(c.stats_signal, SIGUSR1);
	ck_assert_ptr_null(plk_setting_parse("STATS_SIGNAL", "none", &c));
	ck_assert_int_eq(c.stats_signal, 0);
	ck_assert_int_eq(c.stats_pid, 0);
	ck_assert_ptr_null(plk_setting_parse("STATS_PID", "4242", &c));
	ck_assert_int_eq(c.stats_pid, 4242);
	ck_assert_ptr_nonnull(plk_setting_parse("NO_SUCH", "1", &c));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("settings");
	TCase *tc = tcase_create("settings");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, a_value_no_parser_takes_keeps_the_default_and_says_so_in_one_line, 0,
	                    (int)(sizeof(refused) / sizeof(refused[0])));
	tcase_add_test(tc, donate_takes_exactly_the_kinds_listed);
	tcase_add_test(tc, donate_none_lends_nothing);
	tcase_add_test(tc, a_handoff_past_int64_nanoseconds_is_clamped_to_never);
	tcase_add_test(tc, an_empty_stats_is_off_as_unset);
	tcase_add_test(tc, stats_all_reports_even_an_uncontended_process);
	tcase_add_loop_test(tc, a_report_setting_no_parser_takes_keeps_the_default_and_says_so, 0,
	                    (int)(sizeof(report_refused) / sizeof(report_refused[0])));
	tcase_add_test(tc, report_settings_are_read_as_meant);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

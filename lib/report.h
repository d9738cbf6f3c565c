/* SPDX-License-Identifier: MIT */
/*
 * report.h - the interposer's stats report (report.c): at exit, when the
 * program is ended by SIGINT or SIGTERM, and on request.
 */
#ifndef PLK_REPORT_H
#define PLK_REPORT_H

#include "futex.h"

/** plk_report_install - with counting on, at load: take the copy of fd
 * 2 reports go to, arrange the report at exit and on the signals
 * (report.c).  Returns that copy (-1: none), for the dead-owner lines. */
PLK_HIDDEN int plk_report_install(void);

#endif /* PLK_REPORT_H */

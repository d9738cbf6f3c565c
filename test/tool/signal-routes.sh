#!/bin/sh
# Issue 34's review, item 1: a program that sets its SIGINT or SIGTERM
# handler by a route other than sigaction() (signal() under -std=c11,
# which is __sysv_signal; sysv_signal, bsd_signal, ssignal, sigset,
# sigignore; a raw rt_sigaction) sees what it set, as without the
# interposer, its handler runs, and, set back to SIG_DFL by the same
# route, the signal ends it, with its report (but for the raw route,
# which the interposer does not see: killed, no report).
# signal_routes.c makes the checks.
#   usage: signal-routes.sh PROXYLOCK SIGNAL-ROUTES-PROGRAM
set -u
tool=$1 prog=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
for sig in TERM INT; do
	[ $sig = TERM ] && want=143 || want=130
	for route in sysv sysv_signal bsd_signal ssignal sigset sigignore siginterrupt raw; do
		"$tool" run --stats=all "$prog" $route $sig >"$d/out" 2>"$d/err"
		rc=$?
		grep '^not ok' "$d/out" && fail=1
		if [ $rc != $want ] || ! grep -q '^raising$' "$d/out"; then
			echo "not ok - $route SIG$sig: status $rc, not $want (killed by SIG$sig): $(cat "$d/out" "$d/err")"
			fail=1
		elif [ $route != raw ] && ! grep -q "ended by SIG$sig" "$d/err"; then
			echo "not ok - $route SIG$sig: killed, but no report: $(cat "$d/err")"
			fail=1
		else
			echo "ok - $route SIG$sig: what it set is what it sees, its handler ran, SIG_DFL ends it$([ $route != raw ] && echo ', with the report')"
		fi
	done
done
exit $fail

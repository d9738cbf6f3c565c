#!/bin/sh
# Issue 35, item 5: a program started with stderr closed opens its data
# file as fd 2; under the interposer with PROXYLOCK_STATS=1 neither the
# dead-owner line nor the exit report may go into that file (the library
# writes only to a copy of fd 2 it verified open at load).  With stderr
# open, the same run does print both, on stderr: the stats were on.
#   usage: closed-stderr.sh PRELOAD.so CLOSED_STDERR
set -u
so=$1 prog=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
want='data before
data after'
LD_PRELOAD=$so PROXYLOCK_STATS=all "$prog" "$d/open.data" >"$d/open.out" 2>"$d/open.err"
if ! grep -q '^closed stderr ok$' "$d/open.out" ||
   ! grep -q 'proxylock: mutex 0x[0-9a-f]* is held by thread [0-9]*, which exited' "$d/open.err" ||
   ! grep -q '^proxylock: interposer active: ' "$d/open.err"; then
	echo "not ok - stderr open: no dead-owner line and report on stderr: $(cat "$d/open.out" "$d/open.err")"
	fail=1
else
	echo "ok - stderr open: the dead-owner line and the report are on stderr"
fi
LD_PRELOAD=$so PROXYLOCK_STATS=all sh -c 'exec "$0" "$1" 2>&-' "$prog" "$d/closed.data" >"$d/closed.out"
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q '^data fd 2$' "$d/closed.out"; then
	echo "not ok - stderr closed: status $rc, the data file not fd 2: $(cat "$d/closed.out")"
	fail=1
elif [ "$(cat "$d/closed.data")" != "$want" ]; then
	echo "not ok - stderr closed: the data file holds more than its data:"
	cat "$d/closed.data"
	fail=1
else
	echo "ok - stderr closed: the data file that became fd 2 holds only the program's lines"
fi
exit $fail

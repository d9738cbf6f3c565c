#!/bin/sh
# POSIX rwlock behaviour, natively and under the interposer (stats off
# and on): rwlock_posix must pass each time and print the same results
# ("info:" lines, the raw codes of calls POSIX leaves undefined, are
# shown but not compared; see rwlock_posix.c).
#   usage: rwlock-posix.sh PRELOAD RWLOCK_POSIX
# PRELOAD is LD_PRELOAD's value: the interposer, or it and jemalloc in
# either order (skips, exit 77, if one of them is not installed).
set -u
so=$1 prog=$2
for f in $so; do
	[ -e "$f" ] || { echo "SKIP: $f is not installed"; exit 77; }
done
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$prog" >"$d/native" 2>&1 || { cat "$d/native"; echo "FAIL: natively" >&2; exit 1; }
for stats in 0 all; do
	LD_PRELOAD=$so PROXYLOCK_STATS=$stats "$prog" >"$d/pre$stats" 2>"$d/err$stats" ||
		{ cat "$d/pre$stats" "$d/err$stats"; echo "FAIL: under the interposer, stats $stats" >&2; exit 1; }
	grep -v '^info:' "$d/native" >"$d/a"
	grep -v '^info:' "$d/pre$stats" >"$d/b"
	diff -u "$d/a" "$d/b" || { echo "FAIL: results differ, stats $stats" >&2; exit 1; }
done
grep -Eq '^proxylock: interposer active: .* [1-9][0-9]* rwlocks and' "$d/errall" ||
	{ cat "$d/errall"; echo "FAIL: the stats report counts no rwlock" >&2; exit 1; }
echo "native:"; grep '^info:' "$d/native"
echo "interposer:"; grep '^info:' "$d/pre0"
cat "$d/preall" "$d/errall"
echo "PASS: same results natively and under the interposer"

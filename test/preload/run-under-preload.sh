#!/bin/sh
# Run a real program under the interposer and check that it behaved:
# exit status 0, its output (stdout or stderr) matching EXPECT (an
# extended regex), and PROXYLOCK_STATS's header on stderr, proof that the
# interposer was in (PROXYLOCK_STATS=all: reported even if nothing was
# contended), having seen at least one mutex -- or, with
# ANY_COUNT=1, for programs whose work is done in children that leave
# with _exit() (no exit-time report there), at least loaded.
#   usage: [ANY_COUNT=1] run-under-preload.sh PRELOAD.so EXPECT PROGRAM [ARG...]
# Exits 77 (skip) if PROGRAM is not installed.
set -u
preload=$1 expect=$2
shift 2
command -v "$1" >/dev/null 2>&1 || { echo "SKIP: $1 is not installed"; exit 77; }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
LD_PRELOAD=$preload PROXYLOCK_STATS=all "$@" >"$out" 2>"$err"
rc=$?
cat "$out"
cat "$err" >&2
[ $rc -eq 0 ] || { echo "FAIL: $* exited $rc" >&2; exit 1; }
cat "$out" "$err" | grep -Eq "$expect" || { echo "FAIL: output does not match /$expect/" >&2; exit 1; }
count='[1-9][0-9]*'
[ "${ANY_COUNT:-0}" = 1 ] && count='[0-9]+'
grep -Eq "^proxylock: interposer active: $count mutexes" "$err" ||
	{ echo "FAIL: no PROXYLOCK_STATS header: the interposer was not active" >&2; exit 1; }
echo "PASS: $*"

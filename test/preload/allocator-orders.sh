#!/bin/sh
# Run a program under the interposer together with another allocator
# preload (jemalloc, or locking_malloc.so), in both orders, or ("-" for
# ALLOCATOR) under the interposer alone, each with PROXYLOCK_STATS off
# and on (all: the report even if nothing was contended): every run must exit 0 within TIMEOUT seconds (default 60, times
# PLK_STRESS_SLACK) and print EXPECT (an extended regex; EXPECT0, if set,
# instead with stats off); with stats on, also the report's header, the
# proof that the interposer was in.
#   usage: [TIMEOUT=s] [EXPECT0=re] allocator-orders.sh ALLOCATOR.so|- PRELOAD.so EXPECT PROGRAM [ARG...]
# Exits 77 (skip) if ALLOCATOR or PROGRAM is not there.
set -u
alloc=$1 preload=$2 expect=$3
shift 3
[ "$alloc" = - ] || [ -e "$alloc" ] || { echo "SKIP: $alloc is not installed"; exit 77; }
command -v "$1" >/dev/null 2>&1 || { echo "SKIP: $1 is not installed"; exit 77; }
limit=$(( ${TIMEOUT:-60} * ${PLK_STRESS_SLACK:-1} ))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if [ "$alloc" = - ]; then
	set -- "$preload" - "$@"
else
	set -- "$alloc $preload" "$preload $alloc" - "$@"
fi
orders=
while [ "$1" != - ]; do
	orders="$orders$1
"
	shift
done
shift
fail=0
while IFS= read -r order; do
	[ -n "$order" ] || continue
	for stats in 0 all; do
		LD_PRELOAD=$order PROXYLOCK_STATS=$stats timeout -s KILL "$limit" "$@" >"$out" 2>&1 </dev/null
		rc=$?
		why=
		want=$expect
		[ "$stats" = all ] || want=${EXPECT0:-$expect}
		[ $rc -eq 0 ] || why="exit $rc"
		grep -Eq "$want" "$out" || why="$why; no /$want/"
		[ "$stats" = 0 ] || grep -Eq '^proxylock: interposer active: [0-9]+ mutexes' "$out" ||
			why="$why; no stats header"
		if [ -n "$why" ]; then
			tail -n 20 "$out" >&2
			echo "FAIL: LD_PRELOAD='$order' PROXYLOCK_STATS=$stats $* (limit ${limit}s): $why" >&2
			fail=1
		else
			echo "ok: LD_PRELOAD='$order' PROXYLOCK_STATS=$stats"
		fi
	done
done <<END
$orders
END
[ $fail -eq 0 ] && echo "PASS: $*"
exit $fail

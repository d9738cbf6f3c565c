#!/bin/sh
# Run a program under the interposer together with another allocator
# preload (jemalloc, or locking_malloc.so), in both orders and with
# PROXYLOCK_STATS off and on (STATS="0 1", the default; "0" alone where
# the stats table's own allocations still recurse into the allocator):
# each run must exit 0 within its time and print EXPECT (an extended
# regex).
#   usage: allocator-orders.sh ALLOCATOR.so PRELOAD.so EXPECT PROGRAM [ARG...]
# Exits 77 (skip) if ALLOCATOR or PROGRAM is not there.
set -u
alloc=$1 preload=$2 expect=$3
shift 3
[ -e "$alloc" ] || { echo "SKIP: $alloc is not installed"; exit 77; }
command -v "$1" >/dev/null 2>&1 || { echo "SKIP: $1 is not installed"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
for order in "$alloc $preload" "$preload $alloc"; do
	for stats in ${STATS:-0 1}; do
		LD_PRELOAD=$order PROXYLOCK_STATS=$stats timeout -s KILL 60 "$@" >"$out" 2>&1
		rc=$?
		if [ $rc -ne 0 ] || ! grep -Eq "$expect" "$out"; then
			tail -n 20 "$out" >&2
			echo "FAIL: LD_PRELOAD='$order' PROXYLOCK_STATS=$stats $*: exit $rc" >&2
			fail=1
		else
			echo "ok: LD_PRELOAD='$order' PROXYLOCK_STATS=$stats"
		fi
	done
done
[ $fail -eq 0 ] && echo "PASS: $*"
exit $fail

#!/bin/sh
# A waiter with no deadline times its liveness slices on CLOCK_MONOTONIC,
# so a step of the wall clock cannot stretch (or shrink) them: none of
# its timed futex waits may carry FUTEX_CLOCK_REALTIME.  strace shows the
# kernel's view of each wait.
#   usage: check-slice-clock.sh SLICE_PROBE
set -eu
probe=$1
command -v strace >/dev/null || { echo "strace missing (Debian: strace)" >&2; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
strace -f -qq -e trace=futex -o "$log" "$probe" | grep -q '^slice probe ok$'
# The waiter's park: FUTEX_WAIT_BITSET_PRIVATE with a timeout (not NULL).
timed=$(grep 'FUTEX_WAIT_BITSET' "$log" | grep -v ', NULL, FUTEX_BITSET_MATCH_ANY' || true)
n=$(printf '%s\n' "$timed" | grep -c . || true)
if [ "$n" -lt 2 ]; then
	echo "expected several timed slices, saw $n:" >&2
	cat "$log" >&2
	exit 1
fi
if printf '%s\n' "$timed" | grep -q 'FUTEX_CLOCK_REALTIME'; then
	echo "liveness slices timed on CLOCK_REALTIME:" >&2
	printf '%s\n' "$timed" >&2
	exit 1
fi
echo "ok: $n liveness slices, all on CLOCK_MONOTONIC"

#!/bin/sh
# The donate probe fires with the values the kernel was given: gdb, as a
# USDT tracer, stops at proxylock:donate in the inversion demo and reads
# its arguments.  The waiter (nice 0, pinned to CPU 0) lends the holder
# (nice 19, CPU 1) nice 0 and exactly one CPU.
#   usage: probes-fire.sh INVERSION-BINARY
set -u
command -v gdb >/dev/null || { echo "SKIP: gdb missing (apt-get install gdb)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs 2 CPUs"; exit 77; }
out=$(timeout 120 gdb -batch -nx -ex 'set pagination off' -ex 'set breakpoint pending on' \
	-ex 'break -probe-stap proxylock:donate' -ex 'run 1' \
	-ex 'printf "DONATE owner=%d by=%d nice=%d cpus=%d\n", $_probe_arg1, $_probe_arg2, $_probe_arg3, $_probe_arg7' \
	-ex 'kill' "$1" 2>&1)
line=$(printf '%s\n' "$out" | grep '^DONATE ')
echo "${line:-no DONATE line}"
case $line in
*"nice=0 cpus=1") ;;
*) printf '%s\n' "$out" | tail -20; echo "FAIL: the donate probe did not fire as expected"; exit 1 ;;
esac
owner=${line#*owner=}; owner=${owner%% *}
by=${line#*by=}; by=${by%% *}
[ "$owner" -gt 0 ] && [ "$by" -gt 0 ] && [ "$owner" != "$by" ] ||
	{ echo "FAIL: owner $owner and waiter $by"; exit 1; }
echo "ok - proxylock:donate fired: $line"

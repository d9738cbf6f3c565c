#!/bin/sh
# ltp-compare.sh - run LTP's open_posix_testsuite conformance cases for
# the interfaces the interposer touches (pthread_mutex_*, _mutexattr_*,
# _cond_*, _condattr_*, prioceiling, cancel, cleanup, once, join) natively
# and under LD_PRELOAD with PROXYLOCK_STATS=0 and =1, and list every case
# whose result differs or whose wall time is over 3x native (issue 18).
# LTP is not part of this project and nothing of it is copied here: give
# the path of a checkout (git clone https://github.com/linux-test-project/ltp).
# Not run by CI (no network there).  Results are exit codes: 0 PASS,
# 1 FAIL, 2 UNRESOLVED, 4 UNSUPPORTED, 5 UNTESTED, 137 killed at the
# timeout, 139 SIGSEGV, 134 SIGABRT.
#   usage: sh test/conformance/ltp-compare.sh LTP-DIR PRELOAD.so [OUT-DIR]
#   env:   ONLY=REGEX (case names, e.g. 'pthread_cond_'), TIMEOUT=60 (s)
set -u
[ $# -ge 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
src=$1/testcases/open_posix_testsuite
so=$(realpath "$2")
out=${3:-$(mktemp -d /tmp/ltp-compare.XXXXXX)}
timeout=${TIMEOUT:-60}
[ -d "$src/conformance/interfaces" ] || { echo "no $src/conformance/interfaces" >&2; exit 2; }
[ -f "$so" ] || { echo "no $so" >&2; exit 2; }
mkdir -p "$out/bin" "$out/log"
cflags="-std=c99 -D_POSIX_C_SOURCE=200809L -D_XOPEN_SOURCE=700 -w -I$src/include"

# Build: each N-M.c is a program; lib/common.c supplies main().
cc $cflags -c "$src/lib/common.c" -o "$out/common.o" || exit 1
for d in "$src"/conformance/interfaces/pthread_*; do
	n=$(basename "$d")
	case $n in
	pthread_mutex_*|pthread_mutexattr_*|pthread_cond_*|pthread_condattr_*|\
	pthread_cancel|pthread_cleanup_*|pthread_once|pthread_join) ;;
	*) continue ;;
	esac
	for c in "$d"/[0-9]*-[0-9]*.c; do
		t=$n.$(basename "$c" .c)
		case $t in *buildonly*) continue ;; esac
		echo "$t" | grep -Eq "${ONLY:-.}" || continue
		cc $cflags -I"$d" -o "$out/bin/$t" "$c" "$out/common.o" \
			$(cat "$d/LDLIBS" 2>/dev/null) -lpthread -lrt 2>"$out/log/$t.build" ||
			echo "build failed: $t" >&2
	done
done

# Run: each case in its own scratch directory, the three ways in turn.
run() {  # MODE CASE -> "rc,seconds"
	wd=$(mktemp -d)
	start=$(date +%s.%N)
	case $1 in
	native) (cd "$wd" && timeout -s KILL "$timeout" "$out/bin/$2") ;;
	*) (cd "$wd" && LD_PRELOAD=$so PROXYLOCK_STATS=${1#stats} \
		timeout -s KILL "$timeout" "$out/bin/$2") ;;
	esac >"$out/log/$2.$1" 2>&1
	rc=$?
	rm -rf "$wd"
	printf '%s,%.2f' "$rc" "$(echo "$(date +%s.%N) - $start" | bc)"
}
echo "case,native_rc,native_s,stats0_rc,stats0_s,stats1_rc,stats1_s" >"$out/results.csv"
for b in "$out"/bin/*; do
	t=$(basename "$b")
	echo "$t,$(run native "$t"),$(run stats0 "$t"),$(run stats1 "$t")" >>"$out/results.csv"
done

# Report: counts per result, then each difference.
echo "results in $out/results.csv (outputs in $out/log)"
for col in 2 4 6; do
	printf '%s: ' "$(head -1 "$out/results.csv" | cut -d, -f$col)"
	tail -n +2 "$out/results.csv" | cut -d, -f$col | sort | uniq -c | tr '\n' ' '
	echo
done
echo "differences (result, or time > 3x native with 0.3 s floor):"
tail -n +2 "$out/results.csv" | awk -F, '{
	m = $3 < 0.3 ? 0.3 : $3
	if ($2 != $4 || $2 != $6 || $5 > 3 * m || $7 > 3 * m) print "  " $0 }'

#!/bin/sh
# Verify the protocol model (proxylock.pml, with rwlock.pml and
# parkinglot.pml) exhaustively with SPIN.
#   usage: run-model.sh [--expect-fail[=TEXT]] [SPIN -D options...]
# Without --expect-fail: pass if pan finds no error.  With it: pass only
# if pan finds an error and writes a trail (and, given TEXT, the replay
# prints TEXT).  The trail is kept, with the model, in $MODEL_OUT (default
# the current directory), and replayed.  Never a bitstate search: a
# search cut short by depth or memory fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
expect_fail=0
text=
case ${1-} in
--expect-fail) expect_fail=1; shift ;;
--expect-fail=*) expect_fail=1; text=${1#--expect-fail=}; shift ;;
esac
name="model${*:+ $*}"
command -v spin >/dev/null || { echo "SKIP: spin missing (Debian: apt-get install spin)"; exit 77; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "SKIP: no C compiler ($cc)"; exit 77; }
out=$(cd "${MODEL_OUT:-.}" && pwd) || exit 1

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
cp "$here"/*.pml "$tmp/" && cd "$tmp" || exit 1

fail() {
	[ -f pan.log ] && cat pan.log
	echo "not ok - $name: $*"
	exit 1
}

# Safety properties only (assertions, invalid end states): -DSAFETY.
# COLLAPSE compresses the state vector losslessly; the search stays exhaustive.
spin -a "$@" proxylock.pml >spin.log 2>&1 || { cat spin.log; fail "spin -a failed"; }
"$cc" -w -O2 -DSAFETY -DCOLLAPSE -DVECTORSZ=512 -DMEMLIM=2048 -o pan pan.c >cc.log 2>&1 ||
	{ cat cc.log; fail "compiling pan failed"; }
./pan -m100000 -w24 >pan.log 2>&1

grep -q "depth too small" pan.log && fail "search depth too small (raise -m)"
grep -Eq "out of memory|MEMLIM" pan.log && fail "out of memory: search incomplete"
errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log)
[ -n "$errors" ] || fail "no verdict from pan"
vec=$(sed -n 's/^State-vector \([0-9]*\) byte.*/\1/p' pan.log)
depth=$(sed -n 's/.*depth reached \([0-9]*\),.*/\1/p' pan.log)
states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' pan.log)
secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' pan.log)
figures="state vector $vec bytes, $states states, depth $depth, ${secs}s"

if [ "$expect_fail" = 0 ]; then
	[ "$errors" = 0 ] || {
		[ -f proxylock.pml.trail ] && spin -t -p "$@" proxylock.pml | tail -40
		fail "$errors error(s): $(grep -m1 '^pan:1:' pan.log)"
	}
	echo "ok - $name: no errors; $figures"
	exit 0
fi

[ "$errors" != 0 ] || fail "expected an error, pan found none ($figures)"
[ -f proxylock.pml.trail ] || fail "pan reported an error but wrote no trail"
tag=$(printf '%s' "$*" | tr -c 'A-Za-z0-9_\n' '-' | tr -s '-')
cp proxylock.pml "$out/proxylock$tag.pml" &&
	cp proxylock.pml.trail "$out/proxylock$tag.pml.trail" &&
	cp rwlock.pml parkinglot.pml "$out/" || fail "cannot write to $out"
spin -t -p "$@" proxylock.pml >replay.log 2>&1
echo "trail: $out/proxylock$tag.pml.trail"
echo "replay: cd $out && spin -t -p $* proxylock$tag.pml"
head -20 replay.log
echo "..."
grep -E "Error|failed assertion|invalid end state|trail ends" replay.log
if [ -n "$text" ] && ! grep -qF -- "$text" replay.log; then
	fail "the trail does not show: $text"
fi
echo "ok - $name: error found as expected: $(grep -m1 '^pan:1:' pan.log); $figures"

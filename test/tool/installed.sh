#!/bin/sh
# The installed tool finds the installed interposer relative to itself
# (no PROXYLOCK_PRELOAD, no hard-coded path): `meson install` into a
# staging root, then the staged proxylock runs a program under the staged
# interposer, wherever the root is.
#   usage: installed.sh BUILD-DIR
set -eu
build=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
unset PROXYLOCK_PRELOAD
meson install -C "$build" --no-rebuild --destdir "$stage" --quiet
tool=$(find "$stage" -path '*/bin/proxylock' -type f)
so=$(find "$stage" -name libproxylock-preload.so)
[ -x "$tool" ] && [ -f "$so" ] || { echo "not ok - tool ($tool) or interposer ($so) not installed"; exit 1; }
man=$(find "$stage" -path '*/man1/proxylock.1*')
[ -n "$man" ] || { echo "not ok - proxylock.1 not installed"; exit 1; }
out=$("$tool" run sh -c 'echo "$LD_PRELOAD"')
[ "$(realpath "$out")" = "$(realpath "$so")" ] || { echo "not ok - LD_PRELOAD=$out, want $so"; exit 1; }
err=$(seq 1 50000 | "$tool" run --stats=all sort --parallel=2 -S 1M -n 2>&1 >/dev/null)
printf '%s\n' "$err" | grep -Eq '^proxylock: interposer active: [1-9]' ||
	{ echo "not ok - no report from the staged interposer: $err"; exit 1; }
echo "ok - the staged proxylock found ${so#$stage} beside it and ran sort under it"

#!/bin/sh
# Installing needs no test tool: with Check hidden from pkg-config, the
# documented install (meson setup with its defaults, ninja, meson
# install) succeeds, its summary says the test suites are skipped, and
# what it installs works (check-install.sh: files in place, an example
# built with pkg-config against the staged install, and run).
#   usage: check-install-notests.sh SOURCE-DIR
# Needs no root.  Check is hidden by a PKG_CONFIG_LIBDIR holding every
# .pc file pkg-config finds here except check.pc.
set -eu
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/pc"
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
	[ -d "$d" ] || continue
	for f in "$d"/*.pc; do
		[ -e "$f" ] || continue
		name=$(basename "$f")
		[ "$name" = check.pc ] && continue
		[ -e "$work/pc/$name" ] || ln -s "$f" "$work/pc/$name"
	done
done
export PKG_CONFIG_LIBDIR="$work/pc"
unset PKG_CONFIG_PATH
pkg-config --exists check && { echo "not ok - check.pc still visible"; exit 1; }

if ! meson setup "$work/build" "$src" >"$work/setup.log" 2>&1; then
	tail -15 "$work/setup.log"
	echo "not ok - meson setup with its defaults fails without Check"
	exit 1
fi
grep -Eq 'all *: skipped: check not found' "$work/setup.log" ||
	{ cat "$work/setup.log"; echo "not ok - the summary does not say the test suites are skipped"; exit 1; }
echo "ok - meson setup without Check: $(grep -E 'all *: skipped' "$work/setup.log" | sed 's/^ *//')"
ninja -C "$work/build" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; echo "not ok - ninja"; exit 1; }
[ ! -e "$work/build/test" ] || { echo "not ok - test/ built without Check"; exit 1; }
sh "$src/test/check-install.sh" "$work/build" "$src"

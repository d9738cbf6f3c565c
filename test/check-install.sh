#!/bin/sh
# Packaging: `meson install` into a staging root puts the header, the
# library with its soname, the interposer, the pkg-config file, the man
# pages and the Valgrind suppression file in place; an example then builds out of the tree against that
# install, with nothing but `pkg-config --cflags --libs proxylock`, and runs.
#   usage: check-install.sh BUILD-DIR SOURCE-DIR
set -eu
build=$1 src=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --no-rebuild --destdir "$stage" --quiet
pc=$(find "$stage" -name proxylock.pc | head -1)
[ -n "$pc" ] || { echo "not ok - no proxylock.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
for f in "$libdir/libproxylock.so.0" "$libdir/proxylock/libproxylock-preload.so"; do
	[ -e "$f" ] || { echo "not ok - $f missing"; exit 1; }
done
find "$stage" -name proxylock.h | grep -q . || { echo "not ok - header missing"; exit 1; }
for page in proxylock proxylock_mutex proxylock_cond proxylock_caps; do
	find "$stage" -name "$page.3*" | grep -q . || { echo "not ok - man page $page.3 missing"; exit 1; }
done
find "$stage" -path '*/share/proxylock/proxylock.supp' | grep -q . ||
	{ echo "not ok - share/proxylock/proxylock.supp (Valgrind suppressions) missing"; exit 1; }
echo "ok - header, libproxylock.so.0, the interposer, proxylock.pc, 4 man pages and the Valgrind suppressions installed"
export PKG_CONFIG_PATH="$(dirname "$pc")"
prefix=$(pkg-config --variable=prefix proxylock)
flags=$(pkg-config --define-variable=prefix="$stage$prefix" --cflags --libs proxylock)
# Plain cc: no -D_GNU_SOURCE, no -I, no -pthread of ours (issue 34).
for ex in inversion biglittle; do
	cc -Werror=implicit-function-declaration -o "$stage/$ex" "$src/examples/$ex.c" $flags
done
LD_LIBRARY_PATH=$libdir "$stage/inversion" 0 >/dev/null
echo "ok - examples/inversion.c and biglittle.c built out of tree with plain cc and pkg-config ($flags); inversion ran"
# man proxylock_mutex_lock: a link a function, to its page.
man3=$(dirname "$(find "$stage" -name proxylock_mutex.3 | head -1)")
for f in proxylock_mutex_lock proxylock_cond_wait proxylock_rwlock_wrlock proxylock_caps \
	proxylock_stats_get proxylock_mutexattr_setdonate; do
	[ -e "$man3/$f.3" ] || { echo "not ok - no man page for $f after meson install"; exit 1; }
done
echo "ok - a man page for each function ($(ls "$man3" | wc -l) in man3)"

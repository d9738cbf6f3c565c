#!/bin/sh
# proxylock as a meson subproject: a consumer's dependency('proxylock')
# with a fallback finds it and builds against it.
#   usage: check-subproject.sh SOURCE-DIR
set -eu
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/subprojects"
ln -s "$src" "$work/subprojects/proxylock"
cat >"$work/meson.build" <<'MESON'
project('consumer', 'c', default_options : ['c_std=gnu11'])
dep = dependency('proxylock', fallback : ['proxylock', 'proxylock_dep'])
executable('use', 'use.c', dependencies : dep)
MESON
cat >"$work/use.c" <<'C'
#include <proxylock.h>
int main(void)
{
	static proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;

	return proxylock_mutex_lock(&m) || proxylock_mutex_unlock(&m);
}
C
meson setup "$work/build" "$work" --force-fallback-for=proxylock >"$work/setup.log" 2>&1 ||
	{ tail -20 "$work/setup.log"; exit 1; }
ninja -C "$work/build" use >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
"$work/build/use"
echo "ok - a consumer built and ran against proxylock as a subproject"

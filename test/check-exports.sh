#!/bin/sh
# Only proxylock_* is exported (plus the version node), with soname .so.0.
set -eu
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -e '^proxylock_' -e '^PROXYLOCK_0$' || true)
[ -z "$bad" ] || { echo "not ok - unexpected exports: $bad"; exit 1; }
n=$(nm -D --defined-only "$lib" | grep -c ' T proxylock_')
[ "$n" -ge 15 ] || { echo "not ok - only $n proxylock_ functions exported"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*libproxylock.so.0' || { echo "not ok - soname"; exit 1; }
echo "ok - $n functions exported, all proxylock_*, soname libproxylock.so.0"

#!/bin/sh
# Build, once, the arm64 guest kernel (Image) from Debian's
# linux-source-6.12 with the aarch64 cross compiler.  Prints the path of
# Image on stdout.  Cached like the x86 kernel (test/vm/build-kernel.sh), in
# /var/cache/proxylock-vm/arm64-KEY, KEY the hash of kernel.config and
# of the source tarball name: a config change rebuilds.  About
# 4-5 minutes on 2 idle cores (253 s measured), up to 20 on a loaded host
# (nice'd, make -j2).
#   usage: build-kernel.sh [--cached-only] [cache-dir]
# --cached-only: print the cached Image or fail at once, never build.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cached_only=0
[ "${1:-}" = --cached-only ] && { cached_only=1; shift; }
src=/usr/src/linux-source-6.12.tar.xz
cache=${1:-${PROXYLOCK_VM_CACHE:-/var/cache/proxylock-vm}}
key=$( (cat "$here/kernel.config"; echo "arm64 $src") | sha256sum | cut -c1-16)
out=$cache/arm64-$key
if [ -s "$out/Image" ]; then echo "$out/Image"; exit 0; fi
[ $cached_only = 1 ] && { echo "build-kernel: no cached arm64 kernel in $out" >&2; exit 1; }
[ -r "$src" ] || { echo "build-kernel: $src missing (apt-get install linux-source-6.12)" >&2; exit 1; }
command -v aarch64-linux-gnu-gcc >/dev/null ||
	{ echo "build-kernel: aarch64-linux-gnu-gcc missing (sh test/arm64/deps.sh)" >&2; exit 1; }
mkdir -p "$cache"
# One build at a time per key: a second caller waits for the first.
exec 9>"$cache/arm64-$key.lock"
flock 9
if [ -s "$out/Image" ]; then echo "$out/Image"; exit 0; fi
mkdir -p "$out"
work=$(mktemp -d "$cache/build-arm64.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-kernel: building the arm64 kernel into $work (about 5 minutes on 2 idle cores)" >&2
start=$(date +%s)
tar -C "$work" -xf "$src"
cd "$work"/linux-source-6.12
km() { nice -n 10 make -s ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- "$@" >&2; }
km tinyconfig
ARCH=arm64 scripts/kconfig/merge_config.sh -m .config "$here/kernel.config" >&2
km olddefconfig
for opt in $(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=y$/\1/p' "$here/kernel.config"); do
	grep -q "^$opt=y" .config || { echo "build-kernel: $opt=y did not survive olddefconfig" >&2; exit 1; }
done
km -j2 Image
cp arch/arm64/boot/Image "$out/Image.tmp"
cp .config "$out/config"
mv "$out/Image.tmp" "$out/Image"
echo "build-kernel: arm64 kernel built in $(( $(date +%s) - start )) s" >&2
echo "$out/Image"

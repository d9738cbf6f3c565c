#!/bin/sh
# Build, once, the uclamp-enabled test kernel from Debian's linux-source-6.12.
# Prints the path of bzImage on stdout.  The result is cached outside the
# source tree, keyed by the hash of kernel.config and of the source tarball
# name, so a second call costs nothing.
#   usage: build-kernel.sh [cache-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/src/linux-source-6.12.tar.xz
cache=${1:-${PROXYLOCK_VM_CACHE:-/var/cache/proxylock-vm}}
[ -r "$src" ] || { echo "build-kernel: $src missing (apt-get install linux-source-6.12)" >&2; exit 1; }
key=$( (cat "$here/kernel.config"; echo "$src") | sha256sum | cut -c1-16)
out=$cache/$key
if [ -s "$out/bzImage" ]; then echo "$out/bzImage"; exit 0; fi
mkdir -p "$out"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-kernel: building into $work (about 4 minutes on 2 cores)" >&2
tar -C "$work" -xf "$src"
cd "$work"/linux-source-6.12
make -s tinyconfig >&2
scripts/kconfig/merge_config.sh -m .config "$here/kernel.config" >&2
make -s olddefconfig >&2
for opt in CONFIG_UCLAMP_TASK CONFIG_SCHED_DEBUG; do
	grep -q "^$opt=y" .config || { echo "build-kernel: $opt=y did not survive olddefconfig" >&2; exit 1; }
done
make -s -j"$(nproc)" bzImage >&2
cp arch/x86/boot/bzImage "$out/bzImage.tmp"
cp .config "$out/config"
mv "$out/bzImage.tmp" "$out/bzImage"
echo "$out/bzImage"

#!/bin/sh
# Install, as root, what the arm64 suites need on Debian 12 (only what is
# missing): the aarch64 cross compiler, the arm64 multiarch libraries the
# library, tests, examples and benchmarks link (statically, for the guest),
# qemu-system-aarch64 (package qemu-system-arm) and dtc for the big.LITTLE
# device tree.  The kernel comes from linux-source-6.12 like the x86 one.
#   usage: sh test/arm64/deps.sh          (sourced by test/run-tests too)
set -eu
plk_arm64_deps="gcc-aarch64-linux-gnu libc6-dev-arm64-cross liburcu-dev:arm64 libnuma-dev:arm64
  check:arm64 libsubunit-dev:arm64 qemu-system-arm device-tree-compiler
  linux-source-6.12 flex bison bc libssl-dev cpio gzip"

plk_arm64_install_deps() {
	missing=""
	for p in $plk_arm64_deps; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "arm64: missing Debian packages:$missing -- run as root to install them" >&2
		return 1
	fi
	echo "arm64: installing:$missing" >&2
	dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# Run directly: install.
case "$0" in
*arm64/deps.sh | deps.sh) plk_arm64_install_deps ;;
esac

# Sourced by examples/run-demo and test/run-tests: install, as root, the
# Debian 12 packages the build, the tests and the VM suite need, or the
# demos only theirs (only those missing), then configure build directory
# $1 with meson options $2.
set -eu
plk_deps="gcc g++ make meson ninja-build pkg-config liburcu-dev libnuma-dev check
  python3 spin sysbench stress-ng libjemalloc2 unbound dnsperf openssl gnuplot-nox strace systemtap-sdt-dev gdb valgrind
  libcap2-bin util-linux
  libabsl-dev
  qemu-system-x86 linux-source-6.12 flex bison bc libelf-dev cpio gzip xz-utils"
# The demos (examples/run-demo, run-preload-demo) need only the library's
# build: no test framework, guests or benchmarks (build-demo, -Dtests=disabled).
plk_demo_deps="gcc meson ninja-build pkg-config liburcu-dev libnuma-dev"
# Only test/check-debian.sh (the Debian packages, from .ci/run) needs these.
plk_pkg_deps="dpkg-dev debhelper fakeroot lintian"

# plk_install_deps [PACKAGES]: default $plk_deps.
plk_install_deps() {
	missing=""
	for p in ${1:-$plk_deps}; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "missing Debian packages:$missing -- run as root to install them" >&2
		exit 1
	fi
	echo "installing:$missing" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

plk_configure() {
	dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@"
	elif [ $# -gt 0 ]; then
		# An existing build takes them too (setup --reconfigure: meson
		# configure refuses an option newer than the build directory).
		meson setup --reconfigure "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir"
}

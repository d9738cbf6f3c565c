#!/bin/sh
# The Debian packages: build them from a copy of the source tree
# (dpkg-buildpackage -us -uc -b), run lintian, install them with apt,
# build examples/inversion.c against the installed package with nothing
# but `pkg-config --cflags --libs proxylock` and run it, run a real
# program under the installed `proxylock run`, then purge the packages
# and check that no file they installed is left.
#   usage: check-debian.sh SOURCE-DIR [OUT-DIR]
# The build runs the quick suite (debian/rules); PLK_DEB_NOCHECK=1 builds
# with the nocheck profile instead.  Either way the nocheck profile's
# Build-Depends must name no test tool.
# OUT-DIR keeps the .deb files and lintian's output (default: a
# temporary directory, removed).  Needs root and Debian's dpkg-dev,
# debhelper, fakeroot and lintian; exits 77 (skip) without them.
set -eu
src=$(cd "$1" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (apt-get install)"; exit 77; }
for t in dpkg-buildpackage dh lintian apt-get; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (apt-get install dpkg-dev debhelper lintian)"; exit 77; }
done
# The nocheck profile needs no test tool: Check and spin drop out of
# Build-Depends (the build then configures -Dtests=disabled).
nocheck_deps=$(cd "$src" && perl -MDpkg::Control::Info -MDpkg::Deps -e '
	my $bd = Dpkg::Control::Info->new("debian/control")->get_source->{"Build-Depends"};
	print deps_parse($bd, build_dep => 1, reduce_arch => 1, reduce_profiles => 1,
		build_profiles => ["nocheck"]), "\n";')
for t in check spin qemu-system-x86; do
	case ", $nocheck_deps," in *", $t,"*|*", $t "*)
		echo "not ok - Build-Depends under nocheck still names $t: $nocheck_deps"; exit 1 ;;
	esac
done
echo "ok - Build-Depends under the nocheck profile: $nocheck_deps"
pkgs="libproxylock0 libproxylock-dev proxylock"
for p in $pkgs; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		echo "not ok - $p is installed already: remove it first (apt-get purge $pkgs)"
		exit 1
	fi
done
work=$(mktemp -d)
cleanup() {
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 purge -y -qq $pkgs >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
out=${2:-$work/out}
mkdir -p "$work/src" "$out"
unset PROXYLOCK_PRELOAD LD_PRELOAD PKG_CONFIG_PATH

# A clean copy: no build directories, no VCS.
(cd "$src" && tar -c --exclude='./build*' --exclude=./.git --exclude=./bench-results .) |
	(cd "$work/src" && tar -x)
# PLK_DEB_NOCHECK=1 builds with the nocheck profile (no test suite);
# by default the build runs the quick suite (debian/rules).
start=$(date +%s)
if [ "${PLK_DEB_NOCHECK:-0}" = 1 ]; then
	export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck"
	profile=-Pnocheck
else
	profile=
fi
(cd "$work/src" && dpkg-buildpackage -us -uc -b $profile) >"$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log"; echo "not ok - dpkg-buildpackage failed"; exit 1; }
if [ -n "$profile" ]; then
	grep -q -- '-Dtests=disabled' "$out/build.log" || { echo "not ok - nocheck build configured tests"; exit 1; }
else
	grep -Eq '^Ok: +[1-9]' "$out/build.log" || { tail -40 "$out/build.log"; echo "not ok - the build ran no quick suite"; exit 1; }
fi
echo "ok - dpkg-buildpackage -us -uc -b $profile: $(( $(date +%s) - start )) s"
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/"
debs=""
for p in $pkgs; do
	deb=$(ls "$out/${p}_"*.deb) || { echo "not ok - no $p package"; exit 1; }
	debs="$debs $deb"
	echo "# $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
	dpkg-deb -c "$deb" | awk '$6 !~ /\/$/ {print "#   " $6}'
done

# Lintian: no error, no warning that is not overridden (with its reason)
# in debian/*.lintian-overrides.
lintian --fail-on error,warning --display-info "$out"/*.changes >"$out/lintian.txt" 2>&1 && lrc=0 || lrc=$?
sed 's/^/# lintian: /' "$out/lintian.txt"
[ $lrc -eq 0 ] || { echo "not ok - lintian: errors or warnings"; exit 1; }
echo "ok - lintian: no error, no warning"

DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $debs >"$out/install.log" 2>&1 ||
	{ cat "$out/install.log"; echo "not ok - apt-get install"; exit 1; }
for p in $pkgs; do
	dpkg -L "$p" >>"$work/files"
done
echo "ok - installed: $pkgs ($(wc -l <"$work/files") paths)"

# The API, through pkg-config only, against the installed package.
pc=$(pkg-config --variable=pcfiledir proxylock)
case $pc in /usr/lib/*) ;; *) echo "not ok - pkg-config finds proxylock.pc in $pc, not the package's"; exit 1 ;; esac
flags=$(pkg-config --cflags --libs proxylock)
cc -std=gnu11 -D_GNU_SOURCE -o "$work/inversion" "$src/examples/inversion.c" \
	-I"$src/examples" $flags -pthread
ldd "$work/inversion" | grep -Eq "libproxylock.so.0 => /(usr/)?lib/" ||
	{ ldd "$work/inversion"; echo "not ok - not linked to the packaged library"; exit 1; }
"$work/inversion" 1 >"$work/inv.out"
grep -q '^donation=on ' "$work/inv.out" || { cat "$work/inv.out"; echo "not ok - inversion"; exit 1; }
echo "ok - examples/inversion.c built with pkg-config ($flags) against the package and ran"

# The tool finds the packaged interposer by itself.
command -v proxylock | grep -qx /usr/bin/proxylock || { echo "not ok - proxylock not in /usr/bin"; exit 1; }
seq 1 100000 | awk 'BEGIN { srand(3) } { print int(rand() * 1e9) }' >"$work/in"
sort -n "$work/in" >"$work/plain"
proxylock run --stats=all sort --parallel=2 -S 1M -n "$work/in" >"$work/under" 2>"$work/err"
cmp "$work/plain" "$work/under" || { echo "not ok - sort's output differs under proxylock run"; exit 1; }
grep -Eq '^proxylock: interposer active: [1-9]' "$work/err" ||
	{ cat "$work/err"; echo "not ok - no report from the packaged interposer"; exit 1; }
proxylock caps >"$work/caps" || true
grep -Eq '^uclamp: +(yes|no) ' "$work/caps" || { cat "$work/caps"; echo "not ok - proxylock caps"; exit 1; }
man -w proxylock >/dev/null 2>&1 || [ -f /usr/share/man/man1/proxylock.1.gz ] ||
	{ echo "not ok - proxylock(1) not installed"; exit 1; }
echo "ok - proxylock run sort under the packaged interposer: same output, and its report"

DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 purge -y -qq $pkgs >"$out/purge.log" 2>&1 ||
	{ cat "$out/purge.log"; echo "not ok - apt-get purge"; exit 1; }
left=""
while read -r f; do
	# Shared directories (/usr/bin, ...) stay; our own must go.
	case $f in
	*proxylock*) ;;
	*) [ -d "$f" ] && continue ;;
	esac
	if [ -e "$f" ] || [ -L "$f" ]; then left="$left $f"; fi
done <"$work/files"
[ -z "$left" ] || { echo "not ok - left behind after purge:$left"; exit 1; }
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" &&
		{ echo "not ok - $p still installed"; exit 1; }
done
echo "ok - purged: no file left behind"

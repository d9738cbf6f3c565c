#!/bin/sh
# Issue 35, item 2: in secure-execution mode the interposer honours no
# PROXYLOCK_* variable, and its JSON report never overwrites a file.
# In a private mount namespace (unshare -m), the interposer goes into an
# /etc/ld.so.preload of that namespace only (the loader ignores
# LD_PRELOAD for a secure program, not /etc/ld.so.preload); a helper on
# a fresh tmpfs (which honours set-user-ID bits) is made set-user-ID
# root and run as nobody with PROXYLOCK_STATS=1 and PROXYLOCK_STATS_FILE
# naming a root-owned 0600 file: that file keeps its content and mode,
# no report appears, and PROXYLOCK_DONATE=none changes nothing it lends.
# Then, not secure: the same program as nobody honours PROXYLOCK_DONATE
# and writes its report (so the variables were there to ignore), to a
# new file of mode 0600; a file that exists is left as it is and stderr says
# so; a symlink to the root-owned file, as root, is not followed.
# Skipped (77) only without root, unshare or setpriv, or where no mount
# namespace can be made.
#   usage: secure-mode.sh PRELOAD.so HELPER
set -u
if [ "${1:-}" = --inner ]; then
	so=$2 helper=$3 fs=$4
	fail=0
	no() { echo "not ok - $*"; fail=1; }
	mount -t tmpfs -o mode=0755 plk-secure "$fs" || { echo "not ok - cannot mount a tmpfs on $fs"; exit 1; }
	cp "$helper" "$fs/helper" && chown 0:0 "$fs/helper" && chmod 4755 "$fs/helper" &&
	cp "$helper" "$fs/plain" && chmod 755 "$fs/plain" &&
	cp "$so" "$fs/preload.so" && chmod 644 "$fs/preload.so" &&
	printf 'root only\n' >"$fs/target" && chmod 600 "$fs/target" && cp -p "$fs/target" "$fs/target.orig" &&
	mkdir "$fs/user" "$fs/up" "$fs/work" && printf 'mine\n' >"$fs/user/kept" &&
	ln -s "$fs/target" "$fs/user/link" && chown -h 65534:65534 "$fs/user" "$fs/user/kept" "$fs/user/link" ||
		{ echo "not ok - setting up $fs"; exit 1; }
	# /etc/ld.so.preload in this namespace only: an overlay on /etc, or
	# a copy of /etc bound over it.
	if ! mount -t overlay plk-etc -o "lowerdir=/etc,upperdir=$fs/up,workdir=$fs/work" /etc 2>/dev/null; then
		mkdir "$fs/etc" && cp -a /etc/. "$fs/etc/" && mount --bind "$fs/etc" /etc ||
			{ echo "not ok - cannot give this namespace its own /etc"; exit 1; }
	fi
	echo "$fs/preload.so" >/etc/ld.so.preload
	unchanged() {  # unchanged FILE ORIGINAL-CONTENT-FILE MODE-OWNER
		cmp -s "$1" "$2" && [ "$(stat -c '%a %u' "$1")" = "$3" ]
	}

	# Secure: set-user-ID root, run as nobody; what it lends with no
	# variable set, then with PROXYLOCK_DONATE=none and the stats file.
	env -i PATH=/usr/bin:/bin setpriv --reuid=65534 --regid=65534 --clear-groups "$fs/helper" \
		>"$fs/default.out" 2>&1
	env -i PATH=/usr/bin:/bin PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE="$fs/target" PROXYLOCK_DONATE=none \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$fs/helper" >"$fs/out" 2>"$fs/err"
	rc=$?
	if [ "$rc" -ne 0 ] || ! grep -q '^secure=1 interposer=1 count=200000 ' "$fs/out"; then
		no "the set-user-ID helper did not run secure with the interposer: status $rc, $(cat "$fs/out" "$fs/err")"
	elif ! unchanged "$fs/target" "$fs/target.orig" "600 0"; then
		no "secure mode: the root-owned 0600 file changed: $(stat -c '%a %u' "$fs/target"): $(head -c 200 "$fs/target")"
	elif grep -q 'proxylock' "$fs/err"; then
		no "secure mode: PROXYLOCK_STATS honoured: $(cat "$fs/err")"
	elif ! cmp -s "$fs/out" "$fs/default.out"; then
		no "secure mode: PROXYLOCK_DONATE=none honoured: $(cat "$fs/out") against $(cat "$fs/default.out")"
	else
		echo "ok - set-user-ID root as nobody (AT_SECURE, interposer in): PROXYLOCK_STATS_FILE's root-owned file untouched, no report, PROXYLOCK_DONATE ignored"
	fi

	# Not secure, as nobody: the report is written, to a new 0600 file.
	env -i PATH=/usr/bin:/bin PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE="$fs/user/r.%p.json" PROXYLOCK_DONATE=none \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$fs/plain" >"$fs/out" 2>"$fs/err"
	rc=$?
	set -- "$fs"/user/r.*.json
	if [ "$rc" -ne 0 ] || ! grep -q '^secure=0 interposer=1 count=200000 donate=0$' "$fs/out"; then
		no "the plain helper: status $rc, $(cat "$fs/out" "$fs/err")"
	elif [ $# -ne 1 ] || [ ! -f "$1" ] || ! grep -q '"version": 2' "$1"; then
		no "not secure: no JSON report in $fs/user: $(ls "$fs/user")"
	elif [ "$(stat -c '%a %u' "$1")" != "600 65534" ]; then
		no "the report's mode and owner: $(stat -c '%a %u' "$1"), want 600 65534"
	else
		echo "ok - not secure, as nobody: PROXYLOCK_DONATE=none honoured, the report written to a new file of mode 0600"
	fi

	# Not secure: a file that exists is not overwritten, and stderr says
	# where the report went instead (the name with the PID, as for %p).
	printf 'mine\n' >"$fs/kept.orig"
	env -i PATH=/usr/bin:/bin PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE="$fs/user/kept" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$fs/plain" >"$fs/out" 2>"$fs/err"
	if ! unchanged "$fs/user/kept" "$fs/kept.orig" "644 65534"; then
		no "an existing file was overwritten: $(head -c 200 "$fs/user/kept")"
	elif ! grep -q "proxylock: PROXYLOCK_STATS_FILE exists: the report of pid [0-9]* is in $fs/user/kept\.[0-9]*\$" "$fs/err"; then
		no "an existing file: stderr does not say so: $(cat "$fs/err")"
	else
		echo "ok - a report file that exists is left as it is, and stderr says so"
	fi

	# Root, not secure: a symlink another user planted is not followed.
	env -i PATH=/usr/bin:/bin PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE="$fs/user/link" \
		"$fs/plain" >"$fs/out" 2>"$fs/err"
	if ! unchanged "$fs/target" "$fs/target.orig" "600 0"; then
		no "root followed a symlink to the root-owned file: $(head -c 200 "$fs/target")"
	else
		echo "ok - as root, a report path that is a symlink to a root-owned file leaves that file untouched"
	fi
	exit $fail
fi

so=$1 helper=$2
skip() { echo "SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (a set-user-ID root helper, a mount namespace)"
command -v unshare >/dev/null && command -v setpriv >/dev/null || skip "needs unshare and setpriv (util-linux)"
unshare -m true 2>/dev/null || skip "cannot make a mount namespace here (unshare -m)"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
unshare -m --propagation private sh "$0" --inner "$so" "$helper" "$d"

#!/bin/sh
# A program with file capabilities (the security.capability attribute)
# runs in secure-execution mode, like a set-user-ID one: the loader
# ignores LD_PRELOAD, so `proxylock run` refuses it with exit status 126
# and a message, and it is not run; the same copy without the attribute
# runs.  Needs root (setcap) and setcap (libcap2-bin); else skipped (77).
#   usage: file-caps.sh PROXYLOCK
set -u
tool=$1
if [ "$(id -u)" != 0 ] || ! command -v setcap >/dev/null; then
	echo "SKIP: needs root and setcap (libcap2-bin) to give a file capabilities" >&2
	exit 77
fi
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
# A copy of touch: it leaves a mark if it runs.
cp "$(command -v touch)" "$d/prog" && chmod 755 "$d/prog"
"$tool" run "$d/prog" "$d/plain-ran" 2>"$d/err"
rc=$?
if [ "$rc" -eq 0 ] && [ -e "$d/plain-ran" ]; then
	echo "ok - without file capabilities, the program runs under proxylock run"
else
	echo "not ok - the plain copy: status $rc, stderr: $(cat "$d/err")"; fail=1
fi
setcap cap_net_raw+ep "$d/prog" || { echo "not ok - setcap failed on $d"; exit 1; }
getcap "$d/prog" | grep -q cap_net_raw || { echo "not ok - no capability seen by getcap"; exit 1; }
"$tool" run "$d/prog" "$d/caps-ran" 2>"$d/err"
rc=$?
if [ "$rc" -ne 126 ] || ! grep -Eq "prog has file capabilities.*LD_PRELOAD.*not run" "$d/err"; then
	echo "not ok - with file capabilities: status $rc (want 126), stderr: $(cat "$d/err")"; fail=1
elif [ -e "$d/caps-ran" ]; then
	echo "not ok - with file capabilities: the program ran"; fail=1
else
	echo "ok - a program with file capabilities is refused (126): $(cat "$d/err")"
fi
exit $fail

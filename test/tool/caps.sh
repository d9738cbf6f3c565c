#!/bin/sh
# `proxylock caps`: every kind with a verdict and, where not, the reason;
# uclamp as this kernel's configuration says (CONFIG_UCLAMP_TASK in
# /boot/config-* or /proc/config.gz, or PLK_EXPECT_UCLAMP=yes|no); the
# CPU capacity lines; and, unprivileged (setpriv to nobody, no
# capabilities, RLIMIT_NICE and RLIMIT_RTPRIO 0), nice and rt refused
# with the limit named; in a user namespace of its own, nice and rt
# refused with the namespace named.  The tool itself fails (1) if a fresh
# probe and the library's cached one disagree.
#   usage: caps.sh PROXYLOCK
set -u
tool=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
no() { echo "not ok - $*"; fail=1; }

"$tool" caps >"$d/out" 2>"$d/err"
rc=$?
cat "$d/out" "$d/err"
[ -s "$d/err" ] && no "caps wrote to stderr"
for k in uclamp affinity nice rt; do
	grep -Eq "^$k: +(yes|no) +[a-zA-Z]" "$d/out" || no "no verdict with a reason for $k"
done
grep -q '^cpu capacity: ' "$d/out" || no "no cpu capacity line"
grep -Eq '^lendable: [a-z,]+$' "$d/out" || no "no lendable line"
if grep -q '^lendable: none$' "$d/out"; then want=1; else want=0; fi
[ "$rc" -eq "$want" ] || no "exit status $rc, want $want"

expect=${PLK_EXPECT_UCLAMP:-}
if [ -z "$expect" ]; then
	conf=""
	[ -r "/boot/config-$(uname -r)" ] && conf=$(cat "/boot/config-$(uname -r)")
	[ -z "$conf" ] && [ -r /proc/config.gz ] && conf=$(zcat /proc/config.gz)
	if [ -n "$conf" ]; then
		if printf '%s\n' "$conf" | grep -q '^CONFIG_UCLAMP_TASK=y'; then expect=yes; else expect=no; fi
	fi
fi
case $expect in
yes)	grep -Eq '^uclamp: +yes ' "$d/out" && echo "ok - uclamp: yes, as the kernel config says" ||
		no "uclamp not reported available" ;;
no)	grep -Eq '^uclamp: +no +.*(CONFIG_UCLAMP_TASK|older than).*returned E[A-Z0-9]+' "$d/out" &&
		echo "ok - uclamp: no, with the reason and the errno" || no "uclamp not reported missing with its reason" ;;
*)	grep -Eq '^uclamp: +(yes|no .*returned E[A-Z0-9]+)' "$d/out" &&
		echo "ok - uclamp: a verdict (no kernel config readable here to check it against)" ||
		no "uclamp verdict without reason" ;;
esac

# In a user namespace of its own, CAP_SYS_NICE is in the effective set
# but the kernel does not honour it: the tool says so, as the library's
# probe does (one probe: they cannot disagree).
if command -v unshare >/dev/null && command -v prlimit >/dev/null &&
	prlimit --nice=0 --rtprio=0 unshare -U -r true 2>/dev/null; then
	prlimit --nice=0 --rtprio=0 unshare -U -r "$tool" caps >"$d/userns" 2>"$d/userns.err"
	rc=$?
	cat "$d/userns" "$d/userns.err"
	grep -Eq '^nice: +no +.*outside the initial user namespace' "$d/userns" &&
		grep -Eq '^rt: +no +.*outside the initial user namespace' "$d/userns" &&
		[ ! -s "$d/userns.err" ] && [ "$rc" -le 1 ] &&
		echo "ok - in a user namespace: nice and rt refused, the namespace named; the probes agree" ||
		no "in a user namespace: status $rc, $(grep ^nice "$d/userns") $(cat "$d/userns.err")"
else
	echo "# no unprivileged user namespace here: that check is left out"
fi

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && command -v prlimit >/dev/null; then
	cp "$tool" "$d/proxylock" && chmod 755 "$d" "$d/proxylock"
	prlimit --nice=0 --rtprio=0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$d/proxylock" caps >"$d/nobody" 2>&1
	rc=$?
	cat "$d/nobody"
	grep -Eq '^nice: +no +.*CAP_SYS_NICE.*RLIMIT_NICE is 0.*ulimit -e' "$d/nobody" &&
		grep -Eq '^rt: +no +.*RLIMIT_RTPRIO is 0.*ulimit -r' "$d/nobody" &&
		echo "ok - unprivileged: nice and rt refused, the limits named with how to raise them" ||
		no "unprivileged: nice/rt not refused with the reason"
	[ "$rc" -le 1 ] || no "unprivileged: exit status $rc"
	if ! prlimit --nice=30 true 2>/dev/null; then
		echo "# RLIMIT_NICE cannot be raised here (no CAP_SYS_RESOURCE): that check is left out"
		exit $fail
	fi
	prlimit --nice=30 --rtprio=0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$d/proxylock" caps >"$d/nice30" 2>&1
	grep -Eq '^nice: +yes +RLIMIT_NICE 30; a trial nice - 1 on a thread succeeded' "$d/nice30" &&
		echo "ok - RLIMIT_NICE 30: nice lendable, the trial succeeded" || no "RLIMIT_NICE 30: $(grep ^nice "$d/nice30")"
fi
exit $fail

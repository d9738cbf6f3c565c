#!/bin/sh
# Bad input: a usage message and exit status 2, and the program is never
# run; programs the interposer cannot enter are refused (126); the
# options reach the program as the documented variables; LD_PRELOAD
# already set is said and kept.
#   usage: usage.sh PROXYLOCK STATIC-BINARY
set -u
tool=$1 static=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
expect() {  # expect STATUS MESSAGE-REGEX ARG...
	want=$1 msg=$2
	shift 2
	"$tool" "$@" >"$d/out" 2>"$d/err"
	rc=$?
	if [ "$rc" -ne "$want" ] || ! grep -Eq "$msg" "$d/err"; then
		echo "not ok - proxylock $*: status $rc (want $want), stderr: $(cat "$d/err")"
		fail=1
	elif [ -e "$d/ran" ]; then
		echo "not ok - proxylock $*: the program ran"
		fail=1
	else
		echo "ok - proxylock $*: $want"
	fi
}
run="touch $d/ran"
expect 2 'command is missing'
expect 2 'unknown command' frobnicate
expect 2 'unknown option' run --bogus $run
expect 2 'unknown option' run -x $run
expect 2 '^usage:' run --bogus=1 $run
expect 2 'donate=rt,bogus' run --donate=rt,bogus $run
expect 2 'donate=' run --donate= $run
expect 2 'donate=nice,' run --donate=nice, $run
expect 2 'affinity=all' run --affinity=all $run
expect 2 'handoff-us=-1' run --handoff-us=-1 $run
expect 2 'handoff-us=10x' run --handoff-us=10x $run
expect 2 'handoff-us' run --handoff-us $run
expect 2 'file name is missing' run --stats= $run
expect 2 'sort=time: it takes contended, wait, held or donations' run --sort=time $run
expect 2 'top=0: it takes' run --top=0 $run
expect 2 'report-signal=KILL: it takes' run --report-signal=KILL $run
expect 2 'report-signal=HUP: it takes' run --report-signal=HUP $run
expect 2 'report-signal=SIGWINCH: it takes' run --report-signal=SIGWINCH $run
expect 2 'report-signal=RTMAX-52: it takes' run --report-signal=RTMAX-52 $run
expect 2 'report-signal=RTMIN\+31: it takes' run --report-signal=RTMIN+31 $run
touch "$d/taken.json"
expect 2 'taken.json exists; remove it, or put %p' run --stats="$d/taken.json" $run
expect 2 'no program' run --stats
expect 2 'no program' run --
expect 2 'no arguments' caps extra
cp /bin/true "$d/suid" && chmod 4755 "$d/suid"
expect 126 'set-user-ID.*not run' run "$d/suid"
cp /bin/true "$d/sgid" && chmod 2755 "$d/sgid"
expect 126 'set-group-ID.*not run' run "$d/sgid"
expect 126 'statically linked.*not run' run "$static" caps
printf '#!%s\n' "$static" >"$d/script" && chmod 755 "$d/script"
expect 126 'interpreter of .* is statically linked' run "$d/script"
expect 127 'No such file' run "$d/nonexistent"
expect 127 'No such file' run proxylock-no-such-program
PROXYLOCK_PRELOAD=$d/missing.so expect 125 'interposer is not at' run true
# Options reach the program as variables; after PROGRAM, nothing is ours.
"$tool" run --donate=nice,rt --affinity=union --handoff-us=250 --stats="$d/r.json" \
	sh -c 'echo "$PROXYLOCK_DONATE $PROXYLOCK_AFFINITY $PROXYLOCK_HANDOFF_US $PROXYLOCK_STATS $PROXYLOCK_STATS_FILE $LD_PRELOAD" "$@"' \
	sh --donate=all >"$d/env"
want="nice,rt union 250 1 $d/r.json $PROXYLOCK_PRELOAD --donate=all"
[ "$(cat "$d/env")" = "$want" ] && echo "ok - options reach the program as variables" ||
	{ echo "not ok - environment: '$(cat "$d/env")', want '$want'"; fail=1; }
other=$(find /lib /usr/lib -name 'libm.so.6' | head -1)
LD_PRELOAD=$other "$tool" run sh -c 'echo "$LD_PRELOAD"' >"$d/out" 2>"$d/err"
[ "$(cat "$d/out")" = "$PROXYLOCK_PRELOAD:$other" ] && grep -q 'LD_PRELOAD already holds' "$d/err" &&
	echo "ok - an LD_PRELOAD already set is said and kept after the interposer" ||
	{ echo "not ok - LD_PRELOAD=$other: '$(cat "$d/out")' / '$(cat "$d/err")'"; fail=1; }
# The tool and the library take the same values (one parser, config.c):
# an option the tool takes is a variable the library reads silently, and
# one it refuses the library refuses with a line naming the variable.
agree() {  # agree OPTION VARIABLE VALUE...
	opt=$1 var=$2 bad=0
	shift 2
	for v in "$@"; do
		"$tool" run "--$opt=$v" true >/dev/null 2>&1
		rc=$?
		env "$var=$v" "$tool" run true 2>"$d/lib.err"
		if grep -q "^proxylock: $var=.* not understood" "$d/lib.err"; then by_lib=refuses; else by_lib=takes; fi
		if [ $rc -eq 0 ]; then by_tool=takes; else by_tool=refuses; fi
		if [ $by_tool != $by_lib ]; then
			echo "not ok - --$opt=$v: the tool $by_tool it, the library $by_lib it ($(cat "$d/lib.err"))"
			bad=1 fail=1
		fi
	done
	[ $bad = 1 ] || echo "ok - --$opt and $var take the same values: $*"
}
agree donate PROXYLOCK_DONATE nice NICE nice,rt nice, none none,rt all garbage
agree affinity PROXYLOCK_AFFINITY union Union node waiters x
agree handoff-us PROXYLOCK_HANDOFF_US 0 250 99999999999999999999 -1 10x abc
agree sort PROXYLOCK_STATS_SORT wait held contended donations time
agree top PROXYLOCK_STATS_TOP 1 25 0 x
agree report-signal PROXYLOCK_STATS_SIGNAL USR1 SIGUSR2 RTMIN+2 RTMAX-30 none KILL INT HUP QUIT RTMAX-52 1
exit $fail

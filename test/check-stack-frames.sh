#!/bin/sh
# The stack budget's static half (docs/design.md, "Stack budget"): no
# function of the library or the interposer has a frame over LIMIT bytes,
# and none an unbounded one (alloca, a variable-length array).
#   usage: check-stack-frames.sh BUILDLIB LIMIT [KNOWN...]
#   BUILDLIB: the build's lib/ directory, where GCC's -fstack-usage wrote
#   a .su file beside each object.  KNOWN: a function allowed over the
#   limit, still to shrink: reported, not failed; one no longer over it
#   fails, so that the list cannot outlive the frames.
# The runtime half, the deepest use of whole calls (libc's part
# included), is test_minstack.c's.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILDLIB LIMIT [KNOWN...]"; exit 2; }
dir=$1
limit=$2
shift 2
known=" $* "
sus=$(find "$dir" -name '*.su')
[ -n "$sus" ] || { echo "not ok - no .su files under $dir (built without -fstack-usage?)"; exit 1; }
# One line a frame: "file:line:col:function<TAB>bytes<TAB>qualifiers".
# Inline copies from headers appear once per object: sort -u.
frames=$(cat $sus | sort -u)
echo "$frames" | sort -t "$(printf '\t')" -k2,2nr | head -5 | sed 's/^/# largest: /'
status=0
over=$(echo "$frames" | awk -F '\t' -v lim="$limit" '$2 > lim || ($3 ~ /dynamic/ && $3 !~ /bounded/)')
for fn in $(echo "$over" | awk -F '\t' '{ n = split($1, a, ":"); print a[n] }' | sort -u); do
	case "$known" in
	*" $fn "*) echo "# known: $fn over $limit bytes" ;;
	*) echo "not ok - $fn:"; echo "$over" | grep ":$fn	" | sed 's/^/#   /'; status=1 ;;
	esac
done
for fn in $known; do
	echo "$over" | grep -q ":$fn	" || { echo "not ok - $fn is listed but within $limit bytes"; status=1; }
done
[ $status -eq 0 ] && echo "ok - every frame within $limit bytes, none unbounded ($(echo "$sus" | wc -l) objects)"
exit $status

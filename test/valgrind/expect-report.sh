#!/bin/sh
# Run a program under a Valgrind tool and pass only if the tool reported
# what we expect (not merely if something failed).
#   usage: expect-report.sh PATTERN VALGRIND ARG...
# PATTERN is an extended regular expression the tool's output must match;
# the tool must also have exited with --error-exitcode=66.
set -u
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -40
if [ "$rc" -ne 66 ]; then
	echo "not ok - expected the tool's error exit 66, got $rc"
	exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq "$pattern"; then
	echo "not ok - no report matching /$pattern/"
	exit 1
fi
echo "ok - reported: $(printf '%s\n' "$out" | grep -E "$pattern" | head -1)"

#!/bin/sh
# The man pages format without a single groff warning.
#   usage: check-man.sh PAGE...
set -u
command -v groff >/dev/null || { echo "SKIP: groff missing"; exit 77; }
status=0
for page in "$@"; do
	warnings=$(groff -mdoc -ww -z -K utf8 "$page" 2>&1)
	if [ -n "$warnings" ]; then
		echo "not ok - $page"
		printf '%s\n' "$warnings"
		status=1
	else
		echo "ok - $page"
	fi
done
exit $status

#!/bin/sh
# GNU sort merges with several threads (a pthread mutex and condvar per
# merge node); the output must equal the sorted input.
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
seq 1 300000 | awk 'BEGIN { srand(1) } { print int(rand() * 1e9) " " $0 }' >"$d/in"
sort --parallel=2 -S 4M -n -k1,1 -k2,2 "$d/in" >"$d/out"
LC_ALL=C sort -c -n -k1,1 -k2,2 "$d/out"
[ "$(wc -l <"$d/out")" -eq 300000 ]
echo "sort ok: $(wc -l <"$d/out") lines"
